"""The analysed trace as Chrome/Perfetto trace-event JSON.

:func:`to_perfetto` (also :meth:`waitscope.AnalysisResult.to_perfetto` and
``waitscope analyze TRACE --perfetto out.json``) writes the JSON object
form of the trace-event format, ``{"traceEvents": [...]}``, that
https://ui.perfetto.dev and ``chrome://tracing`` open.  Timestamps are
microseconds since the trace's global offset.

* one process per MPI rank (``pid`` = rank + 1), one thread per location
  (``tid`` = location index + 1; Perfetto keeps pid and tid 0 for the idle
  process, and takes a tid as unique over all processes); metadata events
  (``ph: "M"``) name them ("rank N", the location's name) and fix their
  order.  In a hybrid MPI+OpenMP trace the threads of a rank ("Master
  thread", "OMP thread 1", ...) are the threads of its process: one pid,
  a tid each;
* the regions as nested duration slices (``B``/``E``) named by region, in the order of the
  location's events, so that equal timestamps keep their nesting; with a
  window, slices open at its edges are cut at the edges;
* the wait states (``wait_records=True``; MPI's and OpenMP's: barrier
  waiting, critical-section and lock contention) on a track of their own per
  location ("<location> wait states"), as complete slices (``X``) named by
  the metric, with the waiting time, partner, call path and, when the
  result has delay records, the delay costs the wait caused in ``args``;
  wait states of one location that overlap (e.g. several Late Senders of
  one ``MPI_Waitall``) go to further tracks, so that every track nests;
* every point-to-point message as a flow arrow: ``s`` at the send record,
  bound to the enclosing slice (the send call), ``f`` with ``"bp": "e"`` at
  the receive record, bound to the enclosing slice (the receive or the
  wait call); one id per message, category ``message``;
* the critical path (``critical_path=True``) as a process of its own
  ("critical path") with one track of complete slices, one per segment
  (the whole path, also when only some locations are shown);
* counter tracks (``ph: "C"``) in that process: the number of locations
  waiting at each moment, and the number of messages in flight (sent,
  not yet received) among the shown locations.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from ._messages import matched_messages

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult

US = 1e6
"""Microseconds per second: trace-event timestamps are in microseconds."""

WAIT_TID_BASE = 1 << 30
"""Thread ids of the wait-state tracks: WAIT_TID_BASE + lane * (1 << 20) + location."""
LANE_STRIDE = 1 << 20
NO_RANK_PID_BASE = 1 << 24
"""Process ids of locations without an MPI rank: NO_RANK_PID_BASE + location."""
SUMMARY_PID = 1 << 25
"""Process id of the critical path and the counters."""
SUMMARY_TID = 1 << 29
SUMMARY_NAME = "critical path"

_ENTER, _LEAVE = 1, 2
_SENDS = (3, 4)  # MpiSend, MpiIsend
_RECVS = (7, 8)  # MpiRecv, MpiIrecv


def _check_window(window: Any) -> tuple[float, float] | None:
    if window is None:
        return None
    try:
        t0, t1 = (float(x) for x in window)
    except (TypeError, ValueError):
        raise ValueError(f"window must be a pair (start, end) of seconds, got {window!r}") from None
    if not (np.isfinite(t0) and np.isfinite(t1)) or t1 <= t0:
        raise ValueError(f"window must have start < end (seconds, finite), got {window!r}")
    return t0, t1


def _check_locations(result: "AnalysisResult", locations: Iterable[int] | None) -> list[int]:
    trace = result.trace
    loaded = [int(x) for x in trace.loaded_locations]
    if locations is None:
        return loaded
    out = []
    for x in locations:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"locations must be location indices (integers), got {x!r}")
        if not 0 <= int(x) < trace.n_locations:
            raise ValueError(f"location {int(x)} out of range (the trace has {trace.n_locations} locations)")
        if int(x) not in loaded:
            raise ValueError(f"location {int(x)} has no loaded events (load it with Trace.load)")
        out.append(int(x))
    return sorted(set(out))


def pid_of(rank: int, loc: int) -> int:
    """Process id of a location's rank (locations without a rank get one process each past the ranks)."""
    return rank + 1 if rank >= 0 else NO_RANK_PID_BASE + loc


def tid_of(loc: int) -> int:
    """Thread id of a location's region track."""
    return loc + 1


def _us(t: float) -> float:
    return round(float(t) * US, 6)


def _region_events(result: "AnalysisResult", loc: int, window: tuple[float, float] | None,
                   flows: dict[int, list[dict[str, Any]]], pid: int, names: Sequence[str],
                   parent: np.ndarray) -> list[dict[str, Any]]:
    """B/E events of one location (and its flow events, placed at their records), in event order.

    `names` are the slice names per call path (the region's name: the
    nesting of the slices shows the call path)."""
    ev = result.trace.events(loc)
    tid = tid_of(loc)
    time = np.asarray(ev.time)
    kind = np.asarray(ev.kind)
    cps = np.asarray(ev.callpath)
    t0, t1 = window if window is not None else (-np.inf, np.inf)
    out: list[dict[str, Any]] = []
    stack: list[int] = []  # open call paths
    opened_at_start = False
    first = 0
    if window is not None:
        # skip to the window: the regions open there are the innermost open call path and its
        # ancestors, as many of them as this location entered (an OpenMP worker thread enters
        # only the parallel region, not the master's call path above it)
        first = int(np.searchsorted(time, t0, side="left"))
        if first > 0:
            cp = int(cps[first - 1])
            if int(kind[first - 1]) == _LEAVE and cp >= 0:
                cp = int(parent[cp])
            while cp >= 0:
                stack.append(cp)
                cp = int(parent[cp])
            stack.reverse()
            before = kind[:first]
            depth = int(np.count_nonzero(before == _ENTER)) - int(np.count_nonzero(before == _LEAVE))
            stack = stack[len(stack) - max(depth, 0):] if depth < len(stack) else stack
    for i in range(first, len(time)):
        t = float(time[i])
        if window is not None and not opened_at_start and t >= t0:
            # slices open at the window's start begin there, outermost first
            for cp in stack:
                out.append({"ph": "B", "name": names[cp], "cat": "region", "ts": _us(t0), "pid": pid, "tid": tid})
            opened_at_start = True
        if t > t1:
            break
        k = int(kind[i])
        inside = t >= t0
        if k == _ENTER:
            cp = int(cps[i])
            stack.append(cp)
            if inside:
                out.append({"ph": "B", "name": names[cp], "cat": "region", "ts": _us(t), "pid": pid, "tid": tid})
        elif k == _LEAVE:
            if stack:
                stack.pop()
                if inside:
                    out.append({"ph": "E", "ts": _us(t), "pid": pid, "tid": tid})
        if inside and i in flows:
            out.extend(flows[i])
    if window is not None and not opened_at_start:
        return out  # the location's events all end before the window
    # slices still open: at the window's end, or at the location's last event
    end = t1 if window is not None and len(time) and float(time[-1]) > t1 else (float(time[-1]) if len(time) else 0.0)
    for _ in stack:
        out.append({"ph": "E", "ts": _us(end), "pid": pid, "tid": tid})
    return out


def _lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """A lane per interval (in start order) such that the intervals of a lane do not overlap."""
    lane_end: list[float] = []
    out = np.zeros(len(start), dtype=np.int64)
    for j in np.argsort(start, kind="stable"):
        for lane, last in enumerate(lane_end):
            if last <= start[j]:
                out[j] = lane
                lane_end[lane] = float(end[j])
                break
        else:
            out[j] = len(lane_end)
            lane_end.append(float(end[j]))
    return out


def _caused_costs(result: "AnalysisResult", waits: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Short- and long-term delay costs charged for each wait state (None without delay records).

    A delay record belongs to the wait state of its waiter with the same
    waiting time (the same number: both are the C core's) whose interval
    ends closest to the record's synchronization time.  `waits` must hold
    all wait states of the waiters concerned (not a window of them), so
    that no record is matched to a wrong instance.
    """
    if "records" not in result._raw or "delay_latesender" not in result.metric_ids:
        return None
    try:
        recs = result.delay_records
    except (KeyError, TypeError):
        return None
    short = np.zeros(len(waits))
    long_ = np.zeros(len(waits))
    by_key: dict[tuple[int, float], list[int]] = {}
    for j, (loc, wait) in enumerate(zip(waits["location"].tolist(), waits["wait"].tolist())):
        by_key.setdefault((loc, wait), []).append(j)
    ends = waits["end"]
    for waiter, wait, sync, s_cost, l_cost in zip(recs["waiter"].tolist(), recs["wait"].tolist(),
                                                  recs["sync_time"].tolist(), recs["short_cost"].tolist(),
                                                  recs["long_cost"].tolist()):
        same = by_key.get((waiter, wait))
        if not same:
            continue
        j = same[0] if len(same) == 1 else min(same, key=lambda k: abs(float(ends[k]) - sync))
        short[j] += s_cost
        long_[j] += l_cost
    return short, long_


def _wait_events(result: "AnalysisResult", locs: list[int], window: tuple[float, float] | None,
                 names: Sequence[str], pids: dict[int, int],
                 loc_names: Sequence[str]) -> tuple[list[dict[str, Any]], list[tuple[float, int]]]:
    """Wait-state slices and their tracks' metadata, and the waiting-locations counter."""
    waits = result._wait_states(locations=locs)
    costs = _caused_costs(result, waits)
    if window is not None:  # the costs were matched on all instances; now keep those in the window
        inside = (waits["end"] > window[0]) & (waits["start"] < window[1])
        waits = waits[inside]
        costs = None if costs is None else (costs[0][inside], costs[1][inside])
    out: list[dict[str, Any]] = []
    tracks: set[tuple[int, int]] = set()
    for loc in locs:
        sel = np.flatnonzero(waits["location"] == loc)
        if not len(sel):
            continue
        start = waits["start"][sel].copy()
        end = waits["end"][sel].copy()
        if window is not None:
            start = np.maximum(start, window[0])
            end = np.minimum(end, window[1])
        lanes = _lanes(start, end)
        for j, s, e, lane in zip(sel, start, end, lanes):
            w = waits[j]
            tid = WAIT_TID_BASE + int(lane) * LANE_STRIDE + loc
            tracks.add((loc, int(lane)))
            args: dict[str, Any] = {
                "metric": str(w["metric"]), "wait_s": float(w["wait"]), "callpath": names[int(w["callpath"])],
                "partner_location": int(w["partner"]), "partner_rank": int(w["partner_rank"]),
            }
            if w["wrong_order"]:
                args["wrong_order"] = str(w["wrong_order"])
            if costs is not None:
                args["delay_short_s"] = float(costs[0][j])
                args["delay_long_s"] = float(costs[1][j])
            out.append({"ph": "X", "name": str(w["metric"]), "cat": "wait", "ts": _us(s),
                        "dur": max(_us(e) - _us(s), 0.0), "pid": pids[loc], "tid": tid, "args": args})
    for loc, lane in sorted(tracks):
        tid = WAIT_TID_BASE + lane * LANE_STRIDE + loc
        label = f"{loc_names[loc]} wait states" + (f" ({lane + 1})" if lane else "")
        out.append({"ph": "M", "name": "thread_name", "pid": pids[loc], "tid": tid, "args": {"name": label}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pids[loc], "tid": tid,
                    "args": {"sort_index": 2 * loc + 1}})
    return out, _waiting_counter(waits, window)


def _waiting_counter(waits: np.ndarray, window: tuple[float, float] | None) -> list[tuple[float, int]]:
    """(time, number of locations waiting) at every change, from the wait-state intervals."""
    deltas: dict[float, int] = {}
    for loc in np.unique(waits["location"]):
        sel = waits["location"] == loc
        s = waits["start"][sel]
        e = waits["end"][sel]
        if window is not None:
            s, e = np.maximum(s, window[0]), np.minimum(e, window[1])
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        # union of the location's intervals
        cur_s = cur_e = None
        for a, b in zip(s, e):
            if b <= a:
                continue
            if cur_s is None or a > cur_e:
                if cur_s is not None:
                    deltas[cur_s] = deltas.get(cur_s, 0) + 1
                    deltas[cur_e] = deltas.get(cur_e, 0) - 1
                cur_s, cur_e = float(a), float(b)
            else:
                cur_e = max(cur_e, float(b))
        if cur_s is not None:
            deltas[cur_s] = deltas.get(cur_s, 0) + 1
            deltas[cur_e] = deltas.get(cur_e, 0) - 1
    out = []
    level = 0
    for t in sorted(deltas):
        if deltas[t] == 0:
            continue
        level += deltas[t]
        out.append((t, level))
    return out


def _in_flight(msgs: np.ndarray) -> list[tuple[float, int]]:
    """(time, messages sent and not yet received) at every change (a receive recorded before its send,
    a broken clock, counts from the send)."""
    start = msgs["send_time"]
    end = np.maximum(msgs["recv_time"], start)
    times = np.concatenate([start, end])
    steps = np.concatenate([np.ones(len(start), dtype=np.int64), -np.ones(len(end), dtype=np.int64)])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(steps[order])
    last = np.ones(len(times), dtype=bool)
    last[:-1] = times[1:] != times[:-1]  # one value per distinct time: the level after all its steps
    out: list[tuple[float, int]] = []
    for t, v in zip(times[last], level[last]):
        if not out or out[-1][1] != int(v):
            out.append((float(t), int(v)))
    return out


def _flows(result: "AnalysisResult", locs: list[int], window: tuple[float, float] | None,
           pids: dict[int, int]) -> tuple[dict[int, dict[int, list[dict[str, Any]]]], list[tuple[float, int]]]:
    """Flow events per location and event index (one s/f pair per message with both ends shown) and
    the messages-in-flight counter of those messages."""
    msgs = matched_messages(result.trace, locs)
    if window is not None:
        inside = (msgs["send_time"] >= window[0]) & (msgs["send_time"] <= window[1]) & \
                 (msgs["recv_time"] >= window[0]) & (msgs["recv_time"] <= window[1])
        msgs = msgs[inside]
    order = np.lexsort((msgs["send_event"], msgs["send_location"]))
    out: dict[int, dict[int, list[dict[str, Any]]]] = {loc: {} for loc in locs}
    for flow_id, m in enumerate(msgs[order], start=1):
        s_loc, r_loc = int(m["send_location"]), int(m["recv_location"])
        args = {"to_location": r_loc}
        out[s_loc].setdefault(int(m["send_event"]), []).append(
            {"ph": "s", "name": "message", "cat": "message", "id": flow_id, "ts": _us(m["send_time"]),
             "pid": pids[s_loc], "tid": tid_of(s_loc), "args": args})
        out[r_loc].setdefault(int(m["recv_event"]), []).append(
            {"ph": "f", "bp": "e", "name": "message", "cat": "message", "id": flow_id,
             "ts": _us(m["recv_time"]), "pid": pids[r_loc], "tid": tid_of(r_loc)})
    return out, _in_flight(msgs)


def _critical_path_events(result: "AnalysisResult", window: tuple[float, float] | None, pid: int,
                          names: Sequence[str], leaf: Sequence[str]) -> list[dict[str, Any]]:
    """Complete slices of the critical path's segments (all of the path, whatever locations are shown)."""
    path = result.critical_path
    seg = path.segments
    threads = np.asarray(result.location_threads, dtype=np.int64)
    out: list[dict[str, Any]] = []
    for s in seg:
        a, b = float(s["start"]), float(s["end"])
        if window is not None:
            a, b = max(a, window[0]), min(b, window[1])
            if b <= a:
                continue
        cp = int(s["callpath"])
        name = leaf[cp] if cp >= 0 else "(outside regions)"
        out.append({"ph": "X", "name": name, "cat": "critical_path", "ts": _us(a), "dur": max(_us(b) - _us(a), 0.0),
                    "pid": pid, "tid": SUMMARY_TID,
                    "args": {"location": int(s["location"]), "rank": int(s["rank"]),
                             "thread": int(threads[int(s["location"])]),
                             "callpath": names[cp] if cp >= 0 else ""}})
    out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": SUMMARY_TID, "args": {"name": "critical path"}})
    return out


def trace_events(result: "AnalysisResult", window: Sequence[float] | None = None,
                 locations: Iterable[int] | None = None) -> dict[str, Any]:
    """The trace-event document (a dict with ``traceEvents``) that :func:`to_perfetto` writes."""
    win = _check_window(window)
    locs = _check_locations(result, locations)
    trace = result.trace
    names = trace.callpath_names
    region_names = trace.region_names
    leaf = [region_names[int(r)] if 0 <= int(r) < len(region_names) else names[cp]
            for cp, r in enumerate(trace.callpath_region)]
    loc_names = [x.name or f"location {x.index}" for x in trace.locations]
    parent = np.asarray(trace.callpath_parent, dtype=np.int64)
    ranks = result.location_ranks
    pids = {loc: pid_of(int(ranks[loc]), loc) for loc in locs}
    events: list[dict[str, Any]] = []
    first_tid: dict[int, int] = {}  # a process's metadata goes with one of its threads
    for loc in locs:
        first_tid.setdefault(pids[loc], tid_of(loc))
    for pid in sorted(first_tid):
        label = f"rank {pid - 1}" if pid < NO_RANK_PID_BASE else f"location {pid - NO_RANK_PID_BASE}"
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": first_tid[pid], "args": {"name": label}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": first_tid[pid],
                       "args": {"sort_index": pid}})
    for loc in locs:
        events.append({"ph": "M", "name": "thread_name", "pid": pids[loc], "tid": tid_of(loc),
                       "args": {"name": loc_names[loc]}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pids[loc], "tid": tid_of(loc),
                       "args": {"sort_index": 2 * loc}})
    flows, in_flight = _flows(result, locs, win, pids)
    for loc in locs:
        events.extend(_region_events(result, loc, win, flows[loc], pids[loc], leaf, parent))
    summary_pid = SUMMARY_PID
    for t, level in in_flight:
        events.append({"ph": "C", "name": "messages in flight", "ts": _us(t), "pid": summary_pid,
                       "tid": SUMMARY_TID, "args": {"messages": level}})
    summary_used = bool(in_flight)
    if result.has_wait_states:
        waits, counter = _wait_events(result, locs, win, names, pids, loc_names)
        events.extend(waits)
        for t, level in counter:
            events.append({"ph": "C", "name": "waiting locations", "ts": _us(t), "pid": summary_pid, "tid": SUMMARY_TID,
                           "args": {"waiting": level}})
        summary_used = summary_used or bool(counter)
    if "critical_path" in result.metric_ids:
        events.extend(_critical_path_events(result, win, summary_pid, names, leaf))
        summary_used = True
    if summary_used:
        events.append({"ph": "M", "name": "process_name", "pid": summary_pid, "tid": SUMMARY_TID,
                       "args": {"name": SUMMARY_NAME}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": summary_pid, "tid": SUMMARY_TID,
                       "args": {"sort_index": -1}})
    meta = {"source": str(trace.path), "generator": "waitscope", "time_unit": "us"}
    if win is not None:
        meta["window_s"] = list(win)  # type: ignore[assignment]
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


def to_perfetto(result: "AnalysisResult", path: str | os.PathLike[str], window: Sequence[float] | None = None,
                locations: Iterable[int] | None = None) -> str:
    """Writes the trace-event JSON of `result` to `path`; returns the path.

    `window` = (start, end) in seconds (the trace's time axis, as
    :attr:`AnalysisResult.wait_states` uses) keeps only what lies inside
    it, cutting slices at its edges; `locations` (indices) keeps only
    those locations' tracks and the messages between them.  The result
    needs its wait-state records (``analyze(wait_records=True)``) for the
    wait-state tracks and the counter, and ``critical_path=True`` for the
    critical-path track; without them those tracks are left out.
    """
    doc = trace_events(result, window=window, locations=locations)
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot write {target}: directory {directory} does not exist")
    encode = json.JSONEncoder(separators=(",", ":")).encode  # the C encoder (json.dump to a file is not)
    with open(target, "w", encoding="utf-8") as f:
        # one event per line: greppable, and written in pieces
        f.write('{"traceEvents":[\n')
        events = doc["traceEvents"]
        for k in range(0, len(events), 4096):
            chunk = ",\n".join(encode(e) for e in events[k:k + 4096])
            f.write(chunk if k == 0 else ",\n" + chunk)
        f.write("\n]")
        for key, value in doc.items():
            if key != "traceEvents":
                f.write(f",{encode(key)}:{encode(value)}")
        f.write("}\n")
    return target
