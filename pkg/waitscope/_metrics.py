"""Finding a metric by what a user types: its id, its display name or a unique prefix.

Metrics have an id (Scalasca's unique name, ``mpi_latesender``) and a
display name (Cube's, ``Late Sender``).  A key is resolved in steps; the
first step with a match wins:

1. the id, exactly;
2. the display name, ignoring case, spaces, ``_`` and ``-`` (``"late
   sender"``, ``"late_sender"``, ``"LateSender"``), or the id written that
   way or without its ``mpi_`` prefix (``"latesender"``);
3. a prefix of the ids or display names written that way (``"mpi_latesend"``,
   ``"late s"``).

Display names repeat across the metric trees (``Late Sender`` is a wait
state, a delay cost and a direct wait state); a step that finds several
metrics takes the one in the time hierarchy (``Time > ... > Late Sender``)
when exactly one of them is there, or a metric whose sub-metrics are all
the others (``mpi_latesender`` for the prefix ``mpi_latesend``, which also
matches ``mpi_latesender_wo``).  Otherwise the key is ambiguous
(ValueError naming the candidates).  An unknown key raises KeyError naming
the closest metrics (:func:`difflib.get_close_matches` on ids and names).
"""

from __future__ import annotations

import difflib
import re
from typing import Protocol, Sequence


class _Metric(Protocol):
    id: str
    name: str
    parent: str | None


def normalise(text: str) -> str:
    """Lower case without spaces, ``_``, ``-``, ``.`` and ``/``: ``"Late Sender"`` -> ``"latesender"``."""
    return re.sub(r"[\s_\-./]+", "", text.lower())


def _spellings(metric: _Metric) -> set[str]:
    own = {normalise(metric.id), normalise(metric.name)}
    if metric.id.startswith("mpi_"):
        own.add(normalise(metric.id[4:]))
    return own


def _in_time_tree(metrics: Sequence[_Metric], index: int, by_id: dict[str, int]) -> bool:
    seen = set()
    m = metrics[index]
    while m.parent is not None and m.parent in by_id and m.id not in seen:
        seen.add(m.id)
        m = metrics[by_id[m.parent]]
    return m.id == "time"


def _descends(metrics: Sequence[_Metric], index: int, ancestor: str, by_id: dict[str, int]) -> bool:
    m = metrics[index]
    for _ in range(len(metrics)):
        if m.parent is None or m.parent not in by_id:
            return False
        if m.parent == ancestor:
            return True
        m = metrics[by_id[m.parent]]
    return False


def _choose(metrics: Sequence[_Metric], found: list[int], key: str, by_id: dict[str, int]) -> int:
    if len(found) == 1:
        return found[0]
    timed = [i for i in found if _in_time_tree(metrics, i, by_id)]
    if len(timed) == 1:
        return timed[0]
    for i in found:  # one metric and its own sub-metrics
        if all(j == i or _descends(metrics, j, metrics[i].id, by_id) for j in found):
            return i
    shown = ", ".join(f"{metrics[i].id!r} ({metrics[i].name})" for i in found[:8])
    more = f" and {len(found) - 8} more" if len(found) > 8 else ""
    raise ValueError(f"metric {key!r} is ambiguous: it matches {shown}{more}; give the id")


def resolve(metrics: Sequence[_Metric], key: str, listing: str = "metric_ids lists") -> int:
    """Index of the metric `key` names (see the module docstring).

    `listing` ends the KeyError's message: ``"<listing> all N"`` says where
    the user finds every metric (``metric_ids lists`` in Python; the
    command line passes its own words)."""
    if not isinstance(key, str):
        raise TypeError(f"a metric is given by its id or name (str), not {type(key).__name__}")
    by_id = {m.id: i for i, m in enumerate(metrics)}
    if key in by_id:
        return by_id[key]
    wanted = normalise(key)
    if wanted:
        equal = [i for i, m in enumerate(metrics) if wanted in _spellings(m)]
        if equal:
            return _choose(metrics, equal, key, by_id)
        prefix = [i for i, m in enumerate(metrics) if any(s.startswith(wanted) for s in _spellings(m))]
        if prefix:
            return _choose(metrics, prefix, key, by_id)
    raise KeyError(unknown_message(metrics, key, listing))


def closest(metrics: Sequence[_Metric], key: str, n: int = 4) -> list[int]:
    """The `n` metrics whose ids or display names are most like `key`."""
    spellings: dict[str, int] = {}
    for i, m in enumerate(metrics):
        for s in (normalise(m.id), normalise(m.name)) + ((normalise(m.id[4:]),) if m.id.startswith("mpi_") else ()):
            spellings.setdefault(s, i)
    out: list[int] = []
    for match in difflib.get_close_matches(normalise(key), list(spellings), n=4 * n, cutoff=0.5):
        if spellings[match] not in out:
            out.append(spellings[match])
    return out[:n]


def unknown_message(metrics: Sequence[_Metric], key: str, listing: str = "metric_ids lists") -> str:
    near = closest(metrics, key)
    hint = f"; closest: {', '.join(f'{metrics[i].id!r} ({metrics[i].name})' for i in near)}" if near else ""
    return f"unknown metric {key!r}{hint} ({listing} all {len(metrics)})"
