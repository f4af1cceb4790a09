"""Point-to-point messages of a trace as (send, receive) pairs, for drawing them.

Messages match like in MPI: the n-th send from s to d with tag T on a
communicator matches the n-th receive by d from s with T on it.  The
kernel's one matcher (csrc/common/match.c, also used by the analysis and
the synthesizer) pairs them; this module collects the message records of
the event columns with NumPy (the Python loops run over locations only).  Wait states are not derived here: they come from the
analysis (:attr:`waitscope.AnalysisResult.wait_states`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from . import _core

if TYPE_CHECKING:  # pragma: no cover
    from .trace import Trace

_SEND, _ISEND = _core.EV_SEND, _core.EV_ISEND

MESSAGE_DTYPE = np.dtype([
    ("send_location", np.int64), ("send_event", np.int64), ("send_time", np.float64),
    ("recv_location", np.int64), ("recv_event", np.int64), ("recv_time", np.float64),
])
"""Fields of a matched message: location, event index and time of its send and of its receive record."""


def _records(trace: "Trace", loc: int) -> dict[str, np.ndarray]:
    """Message records of one location: event, time, partner location, comm, tag, is_send."""
    c = trace.events(loc).columns
    event = c["msg_event"].astype(np.int64)
    peer = c["msg_peer"].astype(np.int64)
    comm = c["msg_comm"].astype(np.int64)
    partner = np.full(len(peer), -1, dtype=np.int64)
    comms = trace.communicators
    for k in np.unique(comm):
        sel = comm == k
        info = comms[int(k)]
        partner[sel] = loc if info.is_self else info.locations[peer[sel]]
    kind = c["kind"][event]
    return {"event": event, "time": c["time"][event], "partner": partner, "comm": comm,
            "tag": c["msg_tag"].astype(np.int64), "is_send": (kind == _SEND) | (kind == _ISEND)}


def matched_messages(trace: "Trace", locations: Sequence[int] | None = None) -> np.ndarray:
    """Messages (:data:`MESSAGE_DTYPE`) with both ends in `locations` (default: all loaded).

    The partners of `locations` are read too, where loaded, to count the
    messages per channel; a message whose other end is not in `locations`
    is left out.
    """
    loaded = set(int(x) for x in trace.loaded_locations)
    locs = sorted(loaded) if locations is None else sorted(set(int(x) for x in locations) & loaded)
    per_loc = {loc: _records(trace, loc) for loc in locs}
    needed = set()
    for m in per_loc.values():
        needed.update(int(p) for p in np.unique(m["partner"]))
    for loc in sorted((needed & loaded) - set(locs)):
        per_loc[loc] = _records(trace, loc)
    order = sorted(per_loc)
    if not order:
        return np.zeros(0, dtype=MESSAGE_DTYPE)

    def column(key: str) -> np.ndarray:
        return np.concatenate([per_loc[x][key] for x in order])

    loc_col = np.concatenate([np.full(len(per_loc[x]["event"]), x, dtype=np.int64) for x in order])
    event, time, partner, comm, tag = column("event"), column("time"), column("partner"), column("comm"), column("tag")
    is_send = column("is_send").astype(bool)
    src = np.where(is_send, loc_col, partner)
    dst = np.where(is_send, partner, loc_col)
    # rows are in (location, row) order: program order per channel, and
    # the row number identifies the record
    known = partner >= 0
    channels = np.stack([src, dst, comm, tag], axis=1).astype(np.uint32)
    s_idx = np.flatnonzero(is_send & known)
    r_idx = np.flatnonzero(~is_send & known)
    s, r = _core.match_messages(channels[s_idx], s_idx, channels[r_idx], r_idx)
    inside = np.isin(loc_col, locs)
    keep = inside[s] & inside[r]
    s, r = s[keep], r[keep]
    out = np.zeros(len(s), dtype=MESSAGE_DTYPE)
    out["send_location"], out["send_event"], out["send_time"] = loc_col[s], event[s], time[s]
    out["recv_location"], out["recv_event"], out["recv_time"] = loc_col[r], event[r], time[r]
    return out
