"""Traces and results as JSON documents (``waitscope info --json``, ``analyze --json``).

The schema is documented in docs/json.md; tests/test_json.py checks the
output against it.  Both documents share the keys that describe the trace
(``path``, ``clock``, ``run_length``, ``events``, ``locations``,
``topologies``, ``regions``, ``callpaths``); the analysis document adds
``metrics``, ``delay``, ``critical_path`` and ``clock_violations``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult
    from .trace import Trace

UNDEFINED_TIMESTAMP = 2**64 - 1
"""OTF2's undefined timestamp (a clock without a realtime timestamp)."""

SCHEMA_VERSION = 1
"""Raised when a key changes meaning or disappears (adding keys does not change it)."""


def _floats(values: Any) -> list[float]:
    return [float(x) for x in np.asarray(values, dtype=np.float64).ravel()]


def trace_document(trace: "Trace", event_counts: Sequence[int] | None = None) -> dict[str, Any]:
    """The trace's definitions as a JSON-ready dict.

    `event_counts` (events per location) defaults to the loaded ones; in the
    parallel mode pass the counts summed over the processes.
    """
    from . import __version__

    counts = trace.event_counts() if event_counts is None else np.asarray(event_counts)
    clock = trace.clock
    resolution = int(clock["resolution"])
    return {
        "waitscope_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "path": trace.path,
        "clock": {"resolution": resolution, "offset": int(clock["offset"]), "length": int(clock["length"]),
                  "realtime": None if int(clock["realtime"]) == UNDEFINED_TIMESTAMP else int(clock["realtime"])},
        "run_length": trace.run_length,
        "events": int(np.sum(counts)),
        "locations": [
            {"index": loc.index, "rank": loc.rank, "process": loc.process, "thread": loc.thread,
             "mpi_rank": loc.mpi_rank, "name": loc.name, "events": int(counts[loc.index])}
            for loc in trace.locations
        ],
        "topologies": [
            {"name": t.name, "dim_names": list(t.dim_names), "dims": list(t.dims), "periodic": list(t.periodic),
             "locations": [int(x) for x in t.locations],
             "coords": [[int(c) for c in row] for row in np.asarray(t.coords)]}
            for t in trace.cart_topologies
        ],
        "regions": trace.region_names,
        "callpaths": [
            {"index": i, "name": name, "parent": int(trace.callpath_parent[i]),
             "region": trace.region_names[int(trace.callpath_region[i])]}
            for i, name in enumerate(trace.callpath_names)
        ],
    }


def _metric(result: "AnalysisResult", index: int) -> dict[str, Any]:
    m = result.metrics[index]
    values = np.asarray(result.cube[index], dtype=np.float64)
    rows = np.flatnonzero(np.any(values != 0, axis=1))
    return {
        "name": m.name,
        "unit": m.unit,
        "parent": m.parent,
        "description": m.description,
        "total": float(values.sum()),
        "by_location": _floats(values.sum(axis=0)),
        "by_callpath": _floats(values.sum(axis=1)),
        "values": [{"callpath": int(cp), "by_location": _floats(values[cp])} for cp in rows],
    }


def _critical_path(result: "AnalysisResult") -> dict[str, Any] | None:
    if "critical_path" not in result.metric_ids:
        return None
    path = result.critical_path
    seg = path.segments
    return {
        "length": path.length,
        "start": path.start,
        "end": path.end,
        "segments": [{"location": int(s["location"]), "rank": int(s["rank"]), "callpath": int(s["callpath"]),
                      "start": float(s["start"]), "end": float(s["end"])} for s in seg],
        "imbalance": _floats(path.imbalance),
        "partitions": [int(x) for x in np.asarray(path.partitions)],
    }


def _delay(result: "AnalysisResult") -> dict[str, Any] | None:
    if result.delay_model is None or "delay" not in result.metric_ids:
        return None
    return {
        "model": result.delay_model,
        "short_term": float(np.sum(result.delay_short)),
        "long_term": float(np.sum(result.delay_long)),
        "handled_waiting": float(result.handled_waiting()),
        "undistributed": float(result.undistributed),
    }


def _pop(result: "AnalysisResult") -> dict[str, Any] | None:
    """POP efficiencies that need no simulation (docs/json.md, "pop"; with threads also
    "pop hybrid"); None without useful time."""
    try:
        pop = result.pop_metrics(ideal=None)
    except ValueError:
        return None
    doc: dict[str, Any] = {k: float(v) for k, v in pop.as_dict().items()
                           if v is not None and k not in ("window", "hybrid")}
    hybrid = None
    if pop.hybrid is not None:
        hybrid = {k: (v if isinstance(v, int) else float(v)) for k, v in asdict(pop.hybrid).items()
                  if v is not None}
    doc["hybrid"] = hybrid
    return doc


def analysis_document(result: "AnalysisResult", event_counts: Sequence[int] | None = None) -> dict[str, Any]:
    """A result (and its trace's definitions) as a JSON-ready dict (docs/json.md)."""
    doc = trace_document(result.trace, event_counts)
    doc["metrics"] = {mid: _metric(result, i) for i, mid in enumerate(result.metric_ids)}
    doc["delay"] = _delay(result)
    doc["critical_path"] = _critical_path(result)
    doc["clock_violations"] = [int(x) for x in np.asarray(result.clock_violations)]
    doc["window"] = None if result.window is None else [float(result.window[0]), float(result.window[1])]
    doc["pop"] = _pop(result)
    return doc
