"""Comparing two analyses: what changed, where, and which delays changed with it.

:func:`compare` takes two :class:`~waitscope.AnalysisResult` objects (two
runs of one program, two scales, a run and its simulation with
:meth:`waitscope.Trace.simulate`) and returns a table of metric, call
path, (rank,) before, after and change, sorted by the size of the change.
Call paths are aligned by their names (``main/hsmoc/comm2/MPI_Waitall``):
a call path that only one result has counts 0 in the other.  With
``locations=True`` the rows are also split by MPI rank, which needs both
results to have the same ranks; runs with threads (hybrid MPI+OpenMP) are
split by location, aligned by (rank, thread), which needs both results to
have the same threads.

For a wait-state metric that changed, the ``explanation`` column says
which delay costs changed with it, when both results have delay costs
(``analyze(delay_model=...)``): the delay costs of the same pattern
(short- plus long-term, e.g. ``delay_latesender`` +
``delay_latesender_longterm`` for ``mpi_latesender``) per call path of
the delaying activity, and the ranks where they changed most, e.g.
``Late Sender in main/comm1/MPI_Waitall shrank 2.3 s; delay costs in
main/lorentz on ranks 21-22, 25-26 shrank 2.1 s``.

:func:`compare_rows` gives the same rows as plain tuples (no pandas
needed; ``waitscope diff`` prints them); :func:`compare` needs pandas
(the ``pandas`` extra: ``pip install waitscope[pandas]``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .report import OMP_WAIT_PATTERNS, WAIT_PATTERNS

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from .result import AnalysisResult

__all__ = ["compare", "compare_rows", "Row", "DEFAULT_METRICS", "PATTERN_DELAYS", "rank_ranges", "RUN_TIME", "format_rows",
           "side_by_side", "merge_repeats", "program_difference", "percent_change", "NEGLIGIBLE"]

RUN_TIME = "run_time"
"""Pseudo metric of the first row: the run length of each result (call path "")."""

PATTERN_DELAYS = {
    "mpi_latesender": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_latesender_wo": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_lswo_different": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_lswo_same": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_latereceiver": ("delay_latereceiver", "delay_latereceiver_longterm"),
    "mpi_barrier_wait": ("delay_barrier", "delay_barrier_longterm"),
    "mpi_wait_nxn": ("delay_n2n", "delay_n2n_longterm"),
    "mpi_latebroadcast": ("delay_12n", "delay_12n_longterm"),
    "mpi_earlyreduce": ("delay_n21", "delay_n21_longterm"),
    "omp_ibarrier_wait": ("delay_ompbarrier", "delay_ompbarrier_longterm"),
    "omp_ebarrier_wait": ("delay_ompbarrier", "delay_ompbarrier_longterm"),
    "omp_idle_threads": ("delay_ompidle", "delay_ompidle_longterm"),
}
"""The delay-cost metrics (short-term, long-term) that account for each wait-state metric."""

DEFAULT_METRICS = (
    ("comp", "mpi", "omp_time", "omp_idle_threads") + tuple(WAIT_PATTERNS) + tuple(OMP_WAIT_PATTERNS)
    + ("mpi_wait_direct", "mpi_wait_indirect", "delay")
    + tuple(f"delay_{k}_aggregate" for k in ("latesender", "latereceiver", "barrier", "n2n", "12n", "n21",
                                               "ompbarrier", "ompidle"))
)
"""The metrics :func:`compare` lists unless told otherwise (those both results have: the
OpenMP ones only results of traces with threads)."""


@dataclass(frozen=True)
class Row:
    """One line of a comparison (``rank`` is None unless split by rank; ``thread`` is None
    unless split by location in runs with threads)."""

    metric: str
    callpath: str
    rank: int | None
    before: float
    after: float
    explanation: str = ""
    thread: int | None = None

    @property
    def place(self) -> str:
        """Where the row is: ``""``, ``"rank 3"`` or ``"rank 1 thread 1"``."""
        if self.rank is None:
            return ""
        return f"rank {self.rank}" + ("" if self.thread is None else f" thread {self.thread}")

    @property
    def change(self) -> float:
        """after - before"""
        return self.after - self.before


def rank_ranges(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 7, 9, 10]`` -> ``"0-3, 7, 9-10"``."""
    values = sorted({int(r) for r in ranks})
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts)


def _threaded(result: "AnalysisResult") -> bool:
    return bool(getattr(result, "has_threads", False))


def _place_keys(result: "AnalysisResult", threads: bool) -> list[tuple[int, ...]]:
    """The place of every location: (rank,), or (rank, thread) when aligning threads."""
    ranks = [int(r) for r in result.location_ranks]
    if not threads:
        return [(r,) for r in ranks]
    return [(r, int(t)) for r, t in zip(ranks, getattr(result, "location_threads", [0] * len(ranks)))]


def _places(a: "AnalysisResult", b: "AnalysisResult") -> list[tuple[int, ...]] | None:
    """The places both results share, sorted: ranks, or (rank, thread) pairs when either has
    threads; None when the two differ."""
    threads = _threaded(a) or _threaded(b)
    ka, kb = _place_keys(a, threads), _place_keys(b, threads)
    if len(ka) != len(kb) or sorted(ka) != sorted(kb):
        return None
    return sorted(set(ka))


def _aligned_ranks(a: "AnalysisResult", b: "AnalysisResult") -> bool:
    return _places(a, b) is not None


def _per_rank(result: "AnalysisResult", matrix: np.ndarray, ranks: Sequence[Any]) -> np.ndarray:
    """[call path, location] -> [call path, place] in the order of `ranks` (ranks, or the
    (rank,) / (rank, thread) keys of :func:`_places`)."""
    out = np.zeros((matrix.shape[0], len(ranks)))
    keys = [k if isinstance(k, tuple) else (int(k),) for k in ranks]
    where = {k: i for i, k in enumerate(keys)}
    for loc, key in enumerate(_place_keys(result, len(keys[0]) == 2 if keys else False)):
        out[:, where[key]] += matrix[:, loc]
    return out


def _places_text(places: Sequence[tuple[int, ...]]) -> str:
    """``ranks 0-3, 7`` for rank keys, ``locations 0.1, 1.1`` (rank.thread) for (rank, thread) keys."""
    if places and len(places[0]) == 2:
        labels = [f"{r}.{t}" for r, t in places]
        shown = ", ".join(labels[:6]) + (f", ... ({len(labels)} locations)" if len(labels) > 6 else "")
        return f"location{'s' if len(labels) > 1 else ''} {shown}"
    ranges = rank_ranges([p[0] for p in places]).split(", ")
    shown = ", ".join(ranges[:6]) + (f", ... ({len(places)} ranks)" if len(ranges) > 6 else "")
    return f"rank{'s' if len(places) > 1 else ''} {shown}"


def _by_name(result: "AnalysisResult", matrix: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Rows of `matrix` (one per call path of `result`) moved to the positions of `names`."""
    out = np.zeros((len(names),) + matrix.shape[1:])
    index = {n: i for i, n in enumerate(names)}
    for cp, name in enumerate(result.callpath_names):
        out[index[name]] += matrix[cp]
    return out


def _verb(change: float) -> str:
    return "grew" if change > 0 else "shrank"


def _pattern_name(result: "AnalysisResult", metric: str) -> str:
    return result.metric(metric).name


def _delay_matrix(result: "AnalysisResult", pattern: str) -> np.ndarray | None:
    ids = PATTERN_DELAYS.get(pattern)
    if ids is None or any(m not in result.metric_ids for m in ids):
        return None
    return sum(np.asarray(result.get(m), dtype=np.float64) for m in ids)  # type: ignore[return-value]


def _explain_pattern(a: "AnalysisResult", b: "AnalysisResult", pattern: str, names: Sequence[str],
                     ranks: Sequence[tuple[int, ...]] | None, top: int, eps: float) -> str:
    """Which delay costs of `pattern` changed, per call path of the delaying activity (and ranks)."""
    da, db = _delay_matrix(a, pattern), _delay_matrix(b, pattern)
    if da is None or db is None:
        return ""
    if ranks is not None:
        ca, cb = _by_name(a, _per_rank(a, da, ranks), names), _by_name(b, _per_rank(b, db, ranks), names)
    else:
        ca, cb = _by_name(a, da.sum(axis=1, keepdims=True), names), _by_name(b, db.sum(axis=1, keepdims=True), names)
    diff = cb - ca
    per_cp = diff.sum(axis=1)
    parts = []
    for cp in np.argsort(-np.abs(per_cp), kind="stable")[:top]:
        if abs(per_cp[cp]) <= eps:
            break
        text = f"delay costs in {names[cp]}"
        if ranks is not None:
            row = diff[cp] * np.sign(per_cp[cp])
            # the ranks that make up most (90 %) of the change, largest first
            order = np.argsort(-row, kind="stable")
            cum = np.cumsum(row[order])
            n = int(np.searchsorted(cum, 0.9 * cum[-1] - eps)) + 1 if cum[-1] > 0 else 0
            chosen = [ranks[i] for i in order[:max(n, 1)] if row[i] > eps]
            if chosen:
                text += f" on {_places_text(chosen)}"
        parts.append(f"{text} {_verb(per_cp[cp])} {abs(per_cp[cp]):.3g} s")
    return "; ".join(parts)


def compare_rows(a: "AnalysisResult", b: "AnalysisResult", metrics: Sequence[str] | None = None,
                 locations: bool = False, explain: bool = True, tolerance: float | None = None,
                 top: int = 2) -> list[Row]:
    """The rows of :func:`compare` as :class:`Row` objects, sorted by |change| (largest first).

    The first row is always :data:`RUN_TIME` (the two run lengths).  Rows
    whose before and after are both within `tolerance` of 0 are left out
    (default: 1e-9 of the larger summed ``time``).  `top` limits the call
    paths an explanation names.  With `locations`, rows of runs with threads
    are per location, aligned by (rank, thread) (:attr:`Row.thread`).
    """
    names = list(dict.fromkeys(list(a.callpath_names) + list(b.callpath_names)))
    ids = [m for m in (DEFAULT_METRICS if metrics is None else metrics)]
    missing = [m for m in ids if m not in a.metric_ids or m not in b.metric_ids]
    if metrics is not None and missing:
        raise ValueError(f"metrics {missing} are not in both results (before has {len(a.metric_ids)} metrics, "
                         f"after {len(b.metric_ids)}; delay metrics need analyze(delay_model=...) on both)")
    ids = [m for m in ids if m not in missing]
    ranks = _places(a, b)
    if locations and ranks is None:
        what = "ranks and threads (rank, thread)" if _threaded(a) or _threaded(b) else "MPI ranks"
        raise ValueError(f"locations=True needs the same {what} in both results; before has "
                         f"{len(a.location_ranks)} locations, after {len(b.location_ranks)}")
    scale = max(abs(a.total("time")) if "time" in a.metric_ids else 0.0,
                abs(b.total("time")) if "time" in b.metric_ids else 0.0, 1.0)
    eps = 1e-9 * scale if tolerance is None else float(tolerance)

    rows: list[Row] = []
    explanations: dict[str, str] = {}
    for mid in ids:
        ma, mb = np.asarray(a.get(mid), dtype=np.float64), np.asarray(b.get(mid), dtype=np.float64)
        if locations and ranks is not None:
            va, vb = _by_name(a, _per_rank(a, ma, ranks), names), _by_name(b, _per_rank(b, mb, ranks), names)
        else:
            va, vb = _by_name(a, ma.sum(axis=1), names), _by_name(b, mb.sum(axis=1), names)
        changed = explain and mid in PATTERN_DELAYS and abs(vb.sum() - va.sum()) > eps
        if changed and mid not in explanations:
            explanations[mid] = _explain_pattern(a, b, mid, names, ranks, top, eps)
        for cp, name in enumerate(names):
            cols = range(va.shape[1]) if va.ndim == 2 else [None]
            for col in cols:
                before = float(va[cp] if col is None else va[cp, col])
                after = float(vb[cp] if col is None else vb[cp, col])
                if abs(before) <= eps and abs(after) <= eps:
                    continue
                note = ""
                if changed and abs(after - before) > eps and explanations.get(mid):
                    note = f"{_pattern_name(a, mid)} in {name} {_verb(after - before)} {abs(after - before):.3g} s; " \
                           f"{explanations[mid]}"
                key = None if col is None else ranks[col]  # type: ignore[index]
                rows.append(Row(mid, name, None if key is None else key[0], before, after, note,
                                None if key is None or len(key) < 2 else key[1]))
    rows.sort(key=lambda r: -abs(r.change))
    return [Row(RUN_TIME, "", None, a.run_length, b.run_length)] + rows


def compare(a: "AnalysisResult", b: "AnalysisResult", metrics: Sequence[str] | None = None,
            locations: bool = False, explain: bool = True, tolerance: float | None = None,
            top: int = 2) -> "pandas.DataFrame":
    """Compares two analysis results: a pandas DataFrame sorted by |change|.

    Columns: ``metric``, ``callpath``, (``rank`` with ``locations=True``),
    ``before``, ``after``, ``change`` (after - before), ``relative``
    (change / before; NaN where before is 0) and ``explanation`` (for
    wait-state metrics that changed: which delay costs changed with them).
    The first row is the run time (metric :data:`RUN_TIME`).  With
    ``locations=True`` runs with threads get a ``thread`` column after
    ``rank``: their rows are per location, aligned by (rank, thread).

    `metrics` defaults to :data:`DEFAULT_METRICS` (those both results
    have); metrics named explicitly must be in both.  Call paths are aligned
    by name; ``locations=True`` splits the rows by MPI rank (both results
    need the same ranks).  Needs pandas (``pip install waitscope[pandas]``).
    """
    from . import _optional

    pd = _optional.require("pandas", "waitscope.compare")
    different = program_difference(a, b)
    if different is not None:
        warnings.warn(different, UserWarning, stacklevel=2)
    rows = compare_rows(a, b, metrics=metrics, locations=locations, explain=explain, tolerance=tolerance, top=top)
    data = {
        "metric": [r.metric for r in rows],
        "callpath": [r.callpath for r in rows],
        "before": np.array([r.before for r in rows]),
        "after": np.array([r.after for r in rows]),
    }
    if locations:
        placed = {"metric": data["metric"], "callpath": data["callpath"],
                  "rank": pd.array([r.rank for r in rows], dtype="Int64")}
        if _threaded(a) or _threaded(b):
            placed["thread"] = pd.array([r.thread for r in rows], dtype="Int64")
        data = {**placed, "before": data["before"], "after": data["after"]}
    frame = pd.DataFrame(data)
    frame["change"] = frame["after"] - frame["before"]
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["relative"] = np.where(frame["before"] != 0, frame["change"] / frame["before"].where(frame["before"] != 0, 1), np.nan)
    frame["explanation"] = [r.explanation for r in rows]
    return frame


NEGLIGIBLE = 1e-3
"""A change is given as a percentage only of a base of at least this share of the run
time (of the first run): +12213 % of 0.3 ms says nothing about a 1 s run."""


def percent_change(before: float, after: float, run: float) -> str:
    """The relative change in percent (9 characters), ``"new"`` from 0, ``"-"`` on a negligible base
    (below :data:`NEGLIGIBLE` of `run`, the run time in seconds)."""
    change = after - before
    if abs(change) <= 1e-12 * max(abs(before), abs(after)):
        change = 0.0  # rounding of sums
    if before == 0.0:
        return f"{'new' if change else '-':>9}"
    if abs(before) < NEGLIGIBLE * abs(run):
        return f"{'-':>9}"
    return f"{100 * change / before:+7.2f} %"


def merge_repeats(rows: Sequence[Row], tolerance: float = 0.0) -> list[tuple[list[str], Row]]:
    """Rows that repeat each other, merged: (metric ids, first row) per group, in order.

    Rows repeat each other when they have the same call path and rank and the
    same before and after values (within `tolerance`): a metric equal to its
    only non-zero sub-metric (``delay`` and ``delay_barrier_aggregate``) or to
    a classification of the same waiting (``mpi_latesender`` and
    ``mpi_wait_direct`` when all of it is direct).  The group's row is the
    first one, with the first explanation of the group."""
    groups: list[tuple[list[str], Row]] = []
    for r in rows:
        for k, (metrics, first) in enumerate(groups):
            if (first.callpath == r.callpath and first.rank == r.rank and first.thread == r.thread
                    and first.metric != RUN_TIME
                    and r.metric != RUN_TIME and abs(first.before - r.before) <= tolerance
                    and abs(first.after - r.after) <= tolerance):
                metrics.append(r.metric)
                if r.explanation and not first.explanation:
                    groups[k] = (metrics, replace(first, explanation=r.explanation))
                break
        else:
            groups.append(([r.metric], r))
    return groups


def program_difference(a: "AnalysisResult", b: "AnalysisResult") -> str | None:
    """Why `a` and `b` look like runs of different programs, or None when they look alike.

    Compared are the regions the two runs enter (their names) and their call
    paths (names; a differing program region at the root, e.g. ``bt.S.x``
    against ``bt.W.x``, is left out): when fewer than half of the smaller
    run's call paths or regions are in the other, the call paths :func:`compare`
    aligns by name mostly count 0 on one side."""
    def paths(r: "AnalysisResult") -> set[str]:
        return set(r.callpath_names)

    pa, pb = paths(a), paths(b)
    roots_a = {n for i, n in enumerate(a.callpath_names) if int(a.callpath_parent[i]) < 0}
    roots_b = {n for i, n in enumerate(b.callpath_names) if int(b.callpath_parent[i]) < 0}
    if len(roots_a) == 1 and len(roots_b) == 1 and roots_a != roots_b:
        pa = {n.split("/", 1)[1] for n in pa if "/" in n}
        pb = {n.split("/", 1)[1] for n in pb if "/" in n}
    ra = {n.rsplit("/", 1)[-1] for n in a.callpath_names}
    rb = {n.rsplit("/", 1)[-1] for n in b.callpath_names}
    shared_paths, shared_regions = len(pa & pb), len(ra & rb)
    few_paths = shared_paths < 0.5 * min(len(pa), len(pb))
    few_regions = shared_regions < 0.5 * min(len(ra), len(rb))
    if not (few_paths or few_regions):
        return None
    only_a = sorted(ra - rb)[:3]
    only_b = sorted(rb - ra)[:3]
    return (f"the two runs look like different programs: they share {shared_paths} of {len(pa)} and {len(pb)} "
            f"call paths and {shared_regions} of {len(ra)} and {len(rb)} regions (only in the first: "
            f"{', '.join(only_a) or '-'}; only in the second: {', '.join(only_b) or '-'}); call paths are "
            "aligned by name, so most rows compare something with nothing")


def _label(metrics: Sequence[str]) -> str:
    return metrics[0] if len(metrics) == 1 else f"{metrics[0]} = {' = '.join(metrics[1:])}"


def format_rows(rows: Sequence[Row], top: int = 20, label_before: str = "before", label_after: str = "after",
                run: float | None = None) -> str:
    """A text table of the first `top` rows (the run time and the largest changes).

    Rows that repeat each other are one line (:func:`merge_repeats`, the
    metrics joined by ``=``); the last column is the change in percent of
    `before`, left out (``-``) where `before` is below :data:`NEGLIGIBLE` of
    `run` (default: the first row's run time, the first run's length)."""
    run = rows[0].before if run is None and rows else (run or 0.0)
    # the run time, then the changes that are more than rounding
    shown = rows[:1] + [r for r in rows[1:] if abs(r.change) > 1e-9 * max(abs(r.before), abs(r.after))]
    scale = max([abs(r.before) for r in rows] + [abs(r.after) for r in rows] + [1.0])
    groups = merge_repeats(shown, 1e-9 * scale)[:top + 1]
    width = max([28] + [len(_label(m)) for m, _ in groups])
    lines = [f"{'metric':<{width}} {label_before:>12} {label_after:>12} {'change':>12} {'%':>9}  call path"]
    if len(shown) == 1:
        r = rows[0]
        lines.append(f"{r.metric:<{width}} {r.before:12.6f} {r.after:12.6f} {r.change:+12.6f} "
                     f"{percent_change(r.before, r.after, run)}")
        lines.append("no metric changed")
        return "\n".join(lines)
    for metrics, r in groups:
        lines.append(f"{_label(metrics):<{width}} {r.before:12.6f} {r.after:12.6f} {r.change:+12.6f} "
                     f"{percent_change(r.before, r.after, run)}  "
                     f"{r.callpath}{f' ({r.place})' if r.place else ''}")
        if r.explanation:
            lines.append(f"{'':<{width}}   {r.explanation}")
    return "\n".join(lines)


def _line(label: str, before: float, after: float, run: float) -> str:
    change = after - before
    if abs(change) <= 1e-12 * max(abs(before), abs(after)):
        change = 0.0  # rounding of sums
    if len(label) > 44:
        label = label[:43] + "…"
    return f"  {label:<44} {before:12.6f} {after:12.6f} {change:+12.6f} {percent_change(before, after, run)}"


def side_by_side(a: "AnalysisResult", b: "AnalysisResult", top: int = 5, label_before: str = "before",
                 label_after: str = "after") -> str:
    """Before and after, side by side (``waitscope whatif``): run time, waiting per
    pattern, delay costs per call path (when both have them), and where the
    saving comes from (the explanations of the wait-state changes)."""
    header = f"  {'':<44} {label_before:>12} {label_after:>12} {'change':>12} {'%':>9}"
    run = a.run_length
    lines = [header, _line("run time (s)", a.run_length, b.run_length, run)]
    eps = 1e-9 * max(a.total("time"), b.total("time"), 1.0)
    patterns = [m for m in WAIT_PATTERNS + OMP_WAIT_PATTERNS if m in a.metric_ids and m in b.metric_ids
                and max(abs(a.total(m)), abs(b.total(m))) > eps]
    lines.append("waiting time per pattern (s, summed over locations):")
    if not patterns:
        lines.append("  none")
    # a pattern equal to its only non-zero sub-pattern (all Late Sender in wrong order) once
    values = [(m, a.total(m), b.total(m)) for m in patterns]
    for m, va, vb in values:
        parent = a.metric(m).parent
        if any(p == parent and abs(pa - va) <= eps and abs(pb - vb) <= eps for p, pa, pb in values):
            continue
        same = [c for c, ca, cb in values if a.metric(c).parent == m and abs(ca - va) <= eps and abs(cb - vb) <= eps]
        label = f"{m} ({a.metric(m).name})" + "".join(f" = {c}" for c in same)
        lines.append(_line(label, va, vb, run))
    has_delay = "delay" in a.metric_ids and "delay" in b.metric_ids
    if has_delay:
        names = list(dict.fromkeys(list(a.callpath_names) + list(b.callpath_names)))
        da = _by_name(a, (a.delay_short + a.delay_long).sum(axis=1), names)
        db = _by_name(b, (b.delay_short + b.delay_long).sum(axis=1), names)
        lines.append("delay costs per call path of the delaying activity (short + long term, s):")
        order = [int(i) for i in np.argsort(-np.maximum(np.abs(da), np.abs(db)), kind="stable")[:top]
                 if max(abs(da[i]), abs(db[i])) > eps]
        if not order:
            lines.append("  none")
        for cp in order:
            name = names[cp] if len(names[cp]) <= 44 else "…" + names[cp][-43:]
            lines.append(_line(name, float(da[cp]), float(db[cp]), run))
    lines.append("where the saving comes from:")
    rows = [r for r in compare_rows(a, b, metrics=patterns, explain=has_delay)[1:] if r.metric in PATTERN_DELAYS]
    shown = 0
    for r in rows:
        if shown >= top or abs(r.change) <= eps:
            break
        text = r.explanation or f"{a.metric(r.metric).name} in {r.callpath} {_verb(r.change)} {abs(r.change):.3g} s"
        lines.append(f"  {text}")
        shown += 1
    if not shown:
        lines.append("  no wait state changed")
    return "\n".join(lines)
