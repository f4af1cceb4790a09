"""A metric per visit of a repeating region (:meth:`AnalysisResult.timeseries`).

Computed exactly from per-instance data, so that summed over the visits
the values are the region's inclusive metric:

* the time hierarchy (``time``, ``comp``, ``mpi``, ``mpi_point2point``, ...):
  the location's events, each stretch of time between two events given to
  the call path active in it, kept when the metric holds that call path's
  time (as the cube says);
* ``visits``: the Enter events inside the visit (the region's own included);
* the wait-state metrics charged per instance (``mpi_latesender``,
  ``mpi_barrier_wait``, ..., and the wrong-order parts of Late Sender):
  the wait-state records whose event lies inside the visit (the analysis
  needs ``wait_records=True``);
* ``critical_path``: the critical path's segments on the location, cut to
  the visit.

A windowed result (``analyze(window=...)``) keeps its window: times and
the path are clipped to it, visits counted in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult

ENTER, LEAVE = 1, 2

TIME_METRICS = ("time", "execution", "comp", "mpi", "mpi_management", "mpi_init_exit", "mpi_mgmt_comm",
                "mpi_mgmt_file", "mpi_mgmt_win", "mpi_synchronization", "mpi_sync_collective",
                "mpi_communication", "mpi_point2point", "mpi_collective", "mpi_io", "mpi_io_individual",
                "mpi_io_collective", "overhead")
"""Metrics of the time hierarchy: each call path's time belongs to them entirely or not at all."""

WAIT_METRICS = ("mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_barrier_completion", "mpi_wait_nxn",
                "mpi_nxn_completion", "mpi_latebroadcast", "mpi_earlyreduce", "mpi_earlyscan", "mpi_finalize_wait",
                "mpi_init_completion")
"""Metrics charged per wait-state instance (one record each)."""

WRONG_ORDER_METRICS = {"mpi_latesender_wo": ("same", "different"), "mpi_lswo_same": ("same",),
                       "mpi_lswo_different": ("different",)}

SUPPORTED = TIME_METRICS + ("visits",) + WAIT_METRICS + tuple(WRONG_ORDER_METRICS) + ("critical_path",)

RegionKey = Union[int, str]


def region_callpaths(result: "AnalysisResult", region: RegionKey) -> np.ndarray:
    """Call paths of `region`: every call path of a region of that name, else the call path it names."""
    trace = result.trace
    if isinstance(region, str) and region in trace.region_names:
        names = np.asarray(trace.region_names, dtype=object)
        return np.nonzero(names[np.asarray(trace.callpath_region, dtype=np.int64)] == region)[0]
    if not isinstance(region, (str, int, np.integer)) or isinstance(region, bool):
        raise TypeError(f"region must be a region name or a call path (name or index), got {region!r}")
    return np.array([result.callpath_index(region)], dtype=np.int64)


def _visits(kind: np.ndarray, ref: np.ndarray, callpaths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Enter and matching Leave event indices of the outermost visits of `callpaths`, in time order."""
    is_enter, is_leave = kind == ENTER, kind == LEAVE
    depth = np.cumsum(is_enter.astype(np.int64) - is_leave.astype(np.int64))  # after each event
    starts = np.nonzero(is_enter & np.isin(ref, callpaths))[0]
    ends = np.full(len(starts), len(kind) - 1, dtype=np.int64)  # cut short: open until the last event
    # the matching Leave: the first Leave after the Enter that returns to the depth before it
    leaves = np.nonzero(is_leave)[0]
    by_depth = np.lexsort((leaves, depth[leaves]))
    leave_depth, leave_index = depth[leaves][by_depth], leaves[by_depth]
    for level in np.unique(depth[starts]):
        mine = np.nonzero(depth[starts] == level)[0]
        lo, hi = np.searchsorted(leave_depth, [level - 1, level])
        candidates = leave_index[lo:hi]
        pos = np.searchsorted(candidates, starts[mine])
        found = pos < len(candidates)
        ends[mine[found]] = candidates[pos[found]]
    # visits nested in an earlier one (recursion) count in the outer one
    keep = np.ones(len(starts), dtype=bool)
    reach = -1
    for k in range(len(starts)):
        if starts[k] <= reach:
            keep[k] = False
        else:
            reach = ends[k]
    return starts[keep], ends[keep]


def _path_time(segments: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Time on the critical path up to each time `t`, from one location's (disjoint, sorted) segments."""
    if len(segments) == 0:
        return np.zeros(len(t))
    order = np.argsort(segments["start"], kind="stable")
    start, end = segments["start"][order], segments["end"][order]
    before = np.concatenate(([0.0], np.cumsum(end - start)))
    k = np.searchsorted(start, t, side="right")  # segments starting at or before t
    last = np.maximum(k - 1, 0)
    inside = np.where(k > 0, np.clip(t - start[last], 0.0, end[last] - start[last]), 0.0)
    return before[np.maximum(k - 1, 0)] * (k > 0) + inside


def _active_callpath(kind: np.ndarray, ref: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Call path active after each event (-1 outside any region)."""
    marks = np.full(len(kind), -2, dtype=np.int64)
    enter, leave = kind == ENTER, kind == LEAVE
    marks[enter] = ref[enter]
    marks[leave] = parent[ref[leave]]
    idx = np.where(marks != -2, np.arange(len(kind)), -1)
    np.maximum.accumulate(idx, out=idx)
    return np.where(idx >= 0, marks[np.maximum(idx, 0)], -1)


def timeseries(result: "AnalysisResult", metric: str, region: RegionKey) -> np.ndarray:
    """[visit, location] values of `metric` in each visit of `region` (NaN past a location's last visit)."""
    if metric not in SUPPORTED:
        raise ValueError(f"timeseries cannot split {metric!r} by visit; it supports: {', '.join(SUPPORTED)}")
    m = result.metric_index(metric)  # KeyError naming the result's metrics
    cps = region_callpaths(result, region)
    trace = result.trace
    if len(trace.loaded_locations) != result.n_locations:
        raise ValueError("timeseries needs the events of every location: open the trace in one process "
                         "(the parallel mode loads each process's share only)")
    parent = np.asarray(trace.callpath_parent, dtype=np.int64)
    window = result.window
    lo, hi = (-np.inf, np.inf) if window is None else window
    member = None
    if metric in TIME_METRICS:
        time = result.cube[result.metric_index("time")]
        cube = result.cube[m]
        member = np.any((time > 0) & (cube == time), axis=1)
    waits = None
    if metric in WAIT_METRICS or metric in WRONG_ORDER_METRICS:
        waits = result.wait_states  # ValueError without wait_records=True
        if metric in WRONG_ORDER_METRICS:
            waits = waits[(waits["metric"] == "mpi_latesender") & np.isin(waits["wrong_order"],
                                                                           WRONG_ORDER_METRICS[metric])]
        else:
            waits = waits[waits["metric"] == metric]
    segments = result.critical_path.segments if metric == "critical_path" else None
    columns = []
    for loc in range(result.n_locations):
        ev = trace.events(loc)
        kind, ref, t = np.asarray(ev.kind), np.asarray(ev.ref, dtype=np.int64), np.asarray(ev.time)
        first, last = _visits(kind, ref, cps)
        values = np.zeros(len(first))
        if member is not None and len(t) > 1:
            active = _active_callpath(kind, ref, parent)[:-1]
            start, end = np.clip(t[:-1], lo, hi), np.clip(t[1:], lo, hi)
            # an interval inside the window keeps its own length (as the cube)
            inside = (t[:-1] >= lo) & (t[1:] <= hi)
            dur = np.where(inside, t[1:] - t[:-1], np.maximum(end - start, 0.0))
            dur = np.where((active >= 0) & member[np.maximum(active, 0)], dur, 0.0)
            prefix = np.concatenate(([0.0], np.cumsum(dur)))  # time before each event
            values = prefix[last] - prefix[first]
        elif metric == "visits":
            counted = (kind == ENTER) & (t >= lo) & (t <= hi)
            prefix = np.concatenate(([0], np.cumsum(counted)))
            values = (prefix[last + 1] - prefix[first]).astype(np.float64)
        elif waits is not None and len(first):
            mine = waits[waits["location"] == loc]
            k = np.searchsorted(first, mine["event"], side="right") - 1
            hit = (k >= 0) & (mine["event"] <= last[np.maximum(k, 0)])
            values = np.bincount(k[hit], weights=mine["wait"][hit], minlength=len(first))
        elif segments is not None and len(first):
            on_path = _path_time(segments[segments["location"] == loc], t)
            values = on_path[last] - on_path[first]
        columns.append(values)
    rows = max((len(c) for c in columns), default=0)
    out = np.full((rows, result.n_locations), np.nan)
    for loc, values in enumerate(columns):
        out[:len(values), loc] = values
    return out
