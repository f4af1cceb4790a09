"""Wait-state instances as time intervals, derived from the event columns.

The C core accumulates waiting time per [metric, call path, location] but
does not hand out single instances.  For drawing them on a timeline this
module finds them again on the events with the rules of the core
(csrc/analysis/waitstates.c, see docs/metrics.md):

* Late Sender: a receive completed by MPI_Recv/MPI_Sendrecv or by a
  MPI_Wait* call waits from the call's enter until min(enter of the
  matching send call, the call's leave);
* Late Receiver: a send completed by MPI_Send/MPI_Ssend or a MPI_Wait*
  call that leaves after the receive was posted waits from the call's
  enter until the post;
* one MPI_Waitall/Waitsome waits once: only its largest Late Sender and its
  largest Late Receiver count, and of the two only the larger;
* collectives (and MPI_Init/MPI_Finalize as collectives over all
  locations): a member waits from its enter until min(reference, its
  leave), the reference being the latest enter (barrier, N x N, the root
  of N-to-1, Init, Finalize), the root's enter (1-to-N, non-roots only) or
  the latest enter of the members up to itself (scan).

Messages match like in MPI: the n-th send from s to d with tag T on a
communicator matches the n-th receive by d from s with T on it.  All of it
is vectorized with NumPy per location; the Python loops run over
locations, collective instances of scans and Waitall calls only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .trace import Trace

_ENTER, _LEAVE, _SEND, _ISEND, _ISEND_COMPLETE, _IRECV_REQUEST, _RECV, _IRECV = 1, 2, 3, 4, 5, 6, 7, 8
_COLL_END = 12

WAIT_DTYPE = np.dtype([
    ("location", np.int64), ("callpath", np.int64), ("pattern", "U12"),
    ("start", np.float64), ("end", np.float64), ("event", np.int64),
])
"""Fields of a wait interval: the waiting location, the call path of the
waiting MPI call, the pattern (see :data:`PATTERN_METRICS`), start and end
(seconds) and the event index (on the waiting location) of the record that
waited: the message record, the MpiIsendComplete record, the collective
end record, or the Leave of MPI_Init/MPI_Finalize."""

PATTERN_METRICS: dict[str, str | None] = {
    "latesender": "mpi_latesender",
    "latereceiver": "mpi_latereceiver",
    "barrier": "mpi_barrier_wait",
    "n2n": "mpi_wait_nxn",
    "12n": "mpi_latebroadcast",
    "n21": "mpi_earlyreduce",
    "scan": "mpi_earlyscan",
    "finalize": "mpi_finalize_wait",
    "init": None,  # waiting in MPI_Init is no metric of the core
}
"""The metric each pattern's waiting time is counted in (None: none)."""

MESSAGE_DTYPE = np.dtype([
    ("send_location", np.int64), ("send_event", np.int64), ("send_time", np.float64),
    ("recv_location", np.int64), ("recv_event", np.int64), ("recv_time", np.float64),
])

# MPI functions by how they complete messages (as csrc/replay/sync.c)
_FN_NONE, _FN_SEND, _FN_RECV, _FN_WAIT, _FN_WAIT_MULTI, _FN_INIT, _FN_FINALIZE = range(7)
_FUNCTIONS = {
    "MPI_Send": _FN_SEND, "MPI_Ssend": _FN_SEND,
    "MPI_Recv": _FN_RECV, "MPI_Sendrecv": _FN_RECV, "MPI_Sendrecv_replace": _FN_RECV,
    "MPI_Wait": _FN_WAIT, "MPI_Waitany": _FN_WAIT,
    "MPI_Waitall": _FN_WAIT_MULTI, "MPI_Waitsome": _FN_WAIT_MULTI,
    "MPI_Init": _FN_INIT, "MPI_Init_thread": _FN_INIT, "MPI_Finalize": _FN_FINALIZE,
}
_NXN = {"allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw", "allreduce", "reduce_scatter",
        "reduce_scatter_block"}
_ONE_TO_N = {"bcast", "scatter", "scatterv"}
_N_TO_ONE = {"reduce", "gather", "gatherv"}
_SCAN = {"scan", "exscan"}


class _Location:
    """Event columns of one location and lookups of the call around an event."""

    def __init__(self, trace: "Trace", loc: int):
        ev = trace.events(loc)
        c = ev.columns
        self.loc = loc
        self.time: np.ndarray = c["time"]
        self.kind: np.ndarray = c["kind"]
        self.n = len(self.time)
        self.callpath: np.ndarray = ev.callpath.astype(np.int64)
        self.msg_event = c["msg_event"].astype(np.int64)
        self.msg_peer = c["msg_peer"].astype(np.int64)
        self.msg_comm = c["msg_comm"].astype(np.int64)
        self.msg_tag = c["msg_tag"].astype(np.int64)
        self.req_event = c["req_event"].astype(np.int64)
        self.req_id = c["req_id"].astype(np.int64)
        self.coll_event = c["coll_event"].astype(np.int64)
        self.coll_comm = c["coll_comm"].astype(np.int64)
        self.coll_op = c["coll_op"].astype(np.int64)
        root = c["coll_root"].astype(np.int64)
        root[root == 0xFFFFFFFF] = -1
        self.coll_root = root
        self._enter_keys: np.ndarray | None = None
        self._leave_keys: np.ndarray | None = None

    def _keys(self, kind: int) -> np.ndarray:
        pos = np.flatnonzero(self.kind == kind)
        return np.sort(self.callpath[pos] * (self.n + 1) + pos)

    def calls(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The innermost open call at events `idx`: (call path, enter event, enter time, leave time).

        The Enter of that call is the last Enter of the same call path before
        the event (a call path cannot be entered again inside itself), its
        Leave the first Leave of it after.  Events outside any region are
        their own call (enter = leave = their time, call path -1).
        """
        idx = np.asarray(idx, dtype=np.int64)
        cp = self.callpath[idx] if self.n else np.zeros(0, dtype=np.int64)
        if self._enter_keys is None:
            self._enter_keys = self._keys(_ENTER)
            self._leave_keys = self._keys(_LEAVE)
        ek, lk = self._enter_keys, self._leave_keys
        assert lk is not None
        key = cp * (self.n + 1) + idx
        enter_ev = idx.copy()
        j = np.searchsorted(ek, key, side="right") - 1
        ok = (cp >= 0) & (j >= 0)
        ok[ok] &= ek[j[ok]] // (self.n + 1) == cp[ok]
        enter_ev[ok] = ek[j[ok]] % (self.n + 1)
        leave_ev = idx.copy()
        j = np.searchsorted(lk, key, side="left")
        ok2 = (cp >= 0) & (j < len(lk))
        ok2[ok2] &= lk[j[ok2]] // (self.n + 1) == cp[ok2]
        leave_ev[ok2] = lk[j[ok2]] % (self.n + 1)
        return cp, enter_ev, self.time[enter_ev], self.time[leave_ev]

    def request_of(self, idx: np.ndarray) -> np.ndarray:
        """Request id of events `idx` (-1 where none)."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.full(len(idx), -1, dtype=np.int64)
        j = np.searchsorted(self.req_event, idx)
        ok = j < len(self.req_event)
        ok[ok] &= self.req_event[j[ok]] == idx[ok]
        out[ok] = self.req_id[j[ok]]
        return out


def _previous_with_id(ev_a: np.ndarray, id_a: np.ndarray, ev_b: np.ndarray, id_b: np.ndarray,
                      after: bool) -> np.ndarray:
    """For each b, the position in a of the nearest a with the same id before b (after b if `after`); -1 if none."""
    out = np.full(len(ev_b), -1, dtype=np.int64)
    if not len(ev_a) or not len(ev_b):
        return out
    scale = int(max(ev_a.max(), ev_b.max())) + 2
    keys = id_a * scale + ev_a
    order = np.argsort(keys, kind="stable")
    skeys = keys[order]
    qkey = id_b * scale + ev_b
    if after:
        j = np.searchsorted(skeys, qkey, side="right")
        ok = j < len(skeys)
    else:
        j = np.searchsorted(skeys, qkey, side="left") - 1
        ok = j >= 0
    ok[ok] &= skeys[j[ok]] // scale == id_b[ok]
    out[ok] = order[j[ok]]
    return out


def _group_rank(keys: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... within each group of equal rows of `keys` (n x k), in row order."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(tuple(keys[:, c] for c in range(keys.shape[1] - 1, -1, -1)))
    sk = keys[order]
    new = np.ones(n, dtype=bool)
    new[1:] = np.any(sk[1:] != sk[:-1], axis=1)
    first = np.maximum.accumulate(np.where(new, np.arange(n), 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - first
    return rank


class WaitFinder:
    """Finds messages and wait-state intervals of a trace (all loaded locations by default).

    Event columns are read once per location and kept for the finder's life.
    """

    def __init__(self, trace: "Trace"):
        self.trace = trace
        self._locs: dict[int, _Location] = {}
        comms = trace.communicators
        self._comm_locations = [c.locations.astype(np.int64) for c in comms]
        self._comm_self = np.array([c.is_self for c in comms], dtype=bool)
        names = trace.region_names
        fn_region = np.array([_FUNCTIONS.get(n, _FN_NONE) for n in names], dtype=np.int64)
        region = np.asarray(trace.callpath_region, dtype=np.int64)
        self._fn = fn_region[region] if len(region) else np.zeros(0, dtype=np.int64)
        self._loaded = set(int(x) for x in trace.loaded_locations)
        self._ops = None

    # ---- per location --------------------------------------------------

    def _loc(self, loc: int) -> _Location:
        d = self._locs.get(loc)
        if d is None:
            d = self._locs[loc] = _Location(self.trace, loc)
        return d

    def _fn_of(self, cp: np.ndarray) -> np.ndarray:
        out = np.full(len(cp), _FN_NONE, dtype=np.int64)
        ok = cp >= 0
        out[ok] = self._fn[cp[ok]]
        return out

    def _partners(self, d: _Location) -> np.ndarray:
        partner = np.full(len(d.msg_peer), -1, dtype=np.int64)
        for c in np.unique(d.msg_comm):
            sel = d.msg_comm == c
            if self._comm_self[c]:
                partner[sel] = d.loc
            else:
                partner[sel] = self._comm_locations[c][d.msg_peer[sel]]
        return partner

    # ---- messages ------------------------------------------------------

    def _message_table(self, locations: Iterable[int]) -> dict[str, np.ndarray]:
        """All message records of `locations`, sends matched to receives where both are present."""
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("loc", "row", "event", "partner", "comm", "tag", "kind")}
        for loc in sorted(set(int(x) for x in locations)):
            d = self._loc(loc)
            m = len(d.msg_event)
            parts["loc"].append(np.full(m, loc, dtype=np.int64))
            parts["row"].append(np.arange(m, dtype=np.int64))
            parts["event"].append(d.msg_event)
            parts["partner"].append(self._partners(d))
            parts["comm"].append(d.msg_comm)
            parts["tag"].append(d.msg_tag)
            parts["kind"].append(d.kind[d.msg_event].astype(np.int64))
        t = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)) for k, v in parts.items()}
        is_send = (t["kind"] == _SEND) | (t["kind"] == _ISEND)
        src = np.where(is_send, t["loc"], t["partner"])
        dst = np.where(is_send, t["partner"], t["loc"])
        keys = np.stack([src, dst, t["comm"], t["tag"], is_send.astype(np.int64)], axis=1)
        seq = _group_rank(keys)  # rows are in (location, row) order: program order per channel
        t["is_send"] = is_send
        t["seq"] = seq
        # match: the same (src, dst, comm, tag, seq) with the other direction
        match = np.full(len(seq), -1, dtype=np.int64)
        if len(seq):
            full = np.stack([src, dst, t["comm"], t["tag"], seq], axis=1)
            _, inverse = np.unique(full, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            send_of = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
            recv_of = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
            send_of[inverse[is_send]] = np.flatnonzero(is_send)
            recv_of[inverse[~is_send]] = np.flatnonzero(~is_send)
            match[is_send] = recv_of[inverse[is_send]]
            match[~is_send] = send_of[inverse[~is_send]]
        t["match"] = match
        return t

    def _needed(self, locations: Iterable[int]) -> set[int]:
        locs = set(int(x) for x in locations)
        out = set(locs)
        for loc in locs:
            out.update(int(p) for p in np.unique(self._partners(self._loc(loc))))
        return out & self._loaded if self._loaded else out

    def messages(self, locations: Sequence[int] | None = None) -> np.ndarray:
        """Matched point-to-point messages with both ends in `locations` (default: all loaded)."""
        locs = sorted(self._loaded) if locations is None else [int(x) for x in locations]
        t = self._message_table(self._needed(locs))
        inside = np.zeros(int(max(t["loc"].max(initial=-1), max(locs, default=-1))) + 1, dtype=bool)
        inside[locs] = True
        s = np.flatnonzero(t["is_send"] & (t["match"] >= 0))
        r = t["match"][s]
        keep = inside[t["loc"][s]] & inside[t["loc"][r]]
        s, r = s[keep], r[keep]
        out = np.zeros(len(s), dtype=MESSAGE_DTYPE)
        out["send_location"] = t["loc"][s]
        out["send_event"] = t["event"][s]
        out["recv_location"] = t["loc"][r]
        out["recv_event"] = t["event"][r]
        for loc in np.unique(out["send_location"]):
            sel = out["send_location"] == loc
            out["send_time"][sel] = self._loc(int(loc)).time[out["send_event"][sel]]
        for loc in np.unique(out["recv_location"]):
            sel = out["recv_location"] == loc
            out["recv_time"][sel] = self._loc(int(loc)).time[out["recv_event"][sel]]
        return out

    # ---- point-to-point waits ---------------------------------------------

    def _p2p(self, locations: list[int]) -> list[np.ndarray]:
        t = self._message_table(self._needed(locations))
        n = len(t["loc"])
        # per message record: call around it, its function, post and completion
        call_cp = np.full(n, -1, dtype=np.int64)
        call_ev = np.zeros(n, dtype=np.int64)
        enter = np.zeros(n)
        leave = np.zeros(n)
        post = np.zeros(n)  # receives: when posted
        done_cp = np.full(n, -1, dtype=np.int64)  # sends: the call completing them
        done_ev = np.zeros(n, dtype=np.int64)
        done_event = np.zeros(n, dtype=np.int64)  # sends: the record that completes them
        done_enter = np.zeros(n)
        done_leave = np.zeros(n)
        for loc in np.unique(t["loc"]):
            sel = np.flatnonzero(t["loc"] == loc)
            d = self._loc(int(loc))
            ev = t["event"][sel]
            cp, cev, ent, lea = d.calls(ev)
            call_cp[sel], call_ev[sel], enter[sel], leave[sel] = cp, cev, ent, lea
            post[sel] = ent
            done_cp[sel], done_ev[sel], done_enter[sel], done_leave[sel] = cp, cev, ent, lea
            done_event[sel] = ev
            kind = t["kind"][sel]
            req = d.request_of(ev)
            # an Irecv is posted when the MPI_Irecv holding its request record was entered
            irecv = np.flatnonzero(kind == _IRECV)
            if len(irecv):
                rq = np.flatnonzero(d.kind == _IRECV_REQUEST)
                k = _previous_with_id(rq, d.request_of(rq), ev[irecv], req[irecv], after=False)
                ok = k >= 0
                _, _, pent, _ = d.calls(rq[k[ok]])
                post[sel[irecv[ok]]] = pent
            # an Isend is completed by the call holding its MpiIsendComplete
            isend = np.flatnonzero(kind == _ISEND)
            if len(isend):
                cq = np.flatnonzero(d.kind == _ISEND_COMPLETE)
                k = _previous_with_id(cq, d.request_of(cq), ev[isend], req[isend], after=True)
                ok = k >= 0
                ce = cq[k[ok]]
                cp2, cev2, ent2, lea2 = d.calls(ce)
                rows = sel[isend[ok]]
                done_cp[rows], done_ev[rows], done_enter[rows], done_leave[rows] = cp2, cev2, ent2, lea2
                done_event[rows] = ce
        fn = self._fn_of(call_cp)
        done_fn = self._fn_of(done_cp)
        is_send, kind, match = t["is_send"], t["kind"], t["match"]
        recv_blocks = (((kind == _RECV) & (fn == _FN_RECV)) |
                       ((kind == _IRECV) & ((fn == _FN_WAIT) | (fn == _FN_WAIT_MULTI))))
        send_blocks = (((kind == _SEND) & (done_fn == _FN_SEND)) |
                       ((kind == _ISEND) & ((done_fn == _FN_WAIT) | (done_fn == _FN_WAIT_MULTI))))
        wanted = np.zeros(int(t["loc"].max(initial=-1)) + 1, dtype=bool)
        wanted[[x for x in locations if x < len(wanted)]] = True

        # Late Sender at the receivers
        r = np.flatnonzero(~is_send & recv_blocks & (match >= 0) & wanted[t["loc"]])
        ls = np.minimum(enter[match[r]], leave[r]) - enter[r]
        # Late Receiver at the senders
        s = np.flatnonzero(is_send & send_blocks & (match >= 0) & wanted[t["loc"]])
        rp = post[match[s]]
        lr = np.where(done_leave[s] >= rp, rp - done_enter[s], 0.0)
        r, ls = r[ls > 0], ls[ls > 0]
        s, lr = s[lr > 0], lr[lr > 0]

        # one wait per MPI_Waitall / Waitsome
        ls_multi = fn[r] == _FN_WAIT_MULTI
        lr_multi = done_fn[s] == _FN_WAIT_MULTI
        best_ls: dict[tuple[int, int], int] = {}
        for i in np.flatnonzero(ls_multi):
            key = (int(t["loc"][r[i]]), int(call_ev[r[i]]))
            j = best_ls.get(key)
            if j is None or ls[i] > ls[j]:
                best_ls[key] = int(i)
        best_lr: dict[tuple[int, int], int] = {}
        for i in np.flatnonzero(lr_multi):
            key = (int(t["loc"][s[i]]), int(done_ev[s[i]]))
            j = best_lr.get(key)
            if j is None or lr[i] > lr[j]:
                best_lr[key] = int(i)
        for key in set(best_ls) & set(best_lr):
            if lr[best_lr[key]] > ls[best_ls[key]]:
                del best_ls[key]
            else:
                del best_lr[key]
        keep_ls = ~ls_multi
        keep_ls[list(best_ls.values())] = True
        keep_lr = ~lr_multi
        keep_lr[list(best_lr.values())] = True
        r, ls = r[keep_ls], ls[keep_ls]
        s, lr = s[keep_lr], lr[keep_lr]

        out_ls = np.zeros(len(r), dtype=WAIT_DTYPE)
        out_ls["location"] = t["loc"][r]
        out_ls["callpath"] = call_cp[r]
        out_ls["pattern"] = "latesender"
        out_ls["start"] = enter[r]
        out_ls["end"] = enter[r] + ls
        out_ls["event"] = t["event"][r]
        out_lr = np.zeros(len(s), dtype=WAIT_DTYPE)
        out_lr["location"] = t["loc"][s]
        out_lr["callpath"] = done_cp[s]
        out_lr["pattern"] = "latereceiver"
        out_lr["start"] = done_enter[s]
        out_lr["end"] = done_enter[s] + lr
        out_lr["event"] = done_event[s]
        return [out_ls, out_lr]

    # ---- collective waits --------------------------------------------------

    def _op_names(self) -> list[str]:
        from ._names import COLLECTIVE_OPS

        return list(COLLECTIVE_OPS)

    def _collectives(self, locations: list[int]) -> list[np.ndarray]:
        wanted = set(locations)
        comms: set[int] = set()
        for loc in locations:
            comms.update(int(c) for c in np.unique(self._loc(loc).coll_comm))
        comms = {c for c in comms if not self._comm_self[c]}
        if not comms:
            return []
        members: set[int] = set()
        for c in comms:
            members.update(int(x) for x in self._comm_locations[c] if x >= 0)
        members &= self._loaded
        ops = self._op_names()
        cls = {}
        for i, name in enumerate(ops):
            cls[i] = ("barrier" if name == "barrier" else "n2n" if name in _NXN else "12n" if name in _ONE_TO_N
                      else "n21" if name in _N_TO_ONE else "scan" if name in _SCAN else "")
        rows: dict[str, list[np.ndarray]] = {k: [] for k in ("loc", "comm", "seq", "enter", "leave", "cp", "event",
                                                             "op", "root", "member", "size")}
        for loc in sorted(members):
            d = self._loc(loc)
            sel = np.flatnonzero(np.isin(d.coll_comm, list(comms)))
            if not len(sel):
                continue
            comm = d.coll_comm[sel]
            seq = _group_rank(comm[:, None])
            ev = d.coll_event[sel]
            cp, _, ent, lea = d.calls(ev)
            member = np.full(len(sel), -1, dtype=np.int64)
            for c in np.unique(comm):
                pos = np.flatnonzero(self._comm_locations[c] == loc)
                member[comm == c] = pos[0] if len(pos) else -1
            for k, v in (("loc", np.full(len(sel), loc)), ("comm", comm), ("seq", seq), ("enter", ent),
                         ("leave", lea), ("cp", cp), ("event", ev), ("op", d.coll_op[sel]),
                         ("root", d.coll_root[sel]), ("member", member),
                         ("size", np.array([len(self._comm_locations[c]) for c in comm]))):
                rows[k].append(np.asarray(v))
        if not rows["loc"]:
            return []
        t = {k: np.concatenate(v) for k, v in rows.items()}
        return [self._site_waits(t, np.array([cls.get(int(o), "") for o in t["op"]], dtype="U12"), wanted)]

    def _init_finalize(self, locations: list[int]) -> list[np.ndarray]:
        n = self.trace.n_locations
        if len(self._loaded) != n:
            return []  # Init/Finalize span all locations: only with all of them
        rows: dict[str, list[np.ndarray]] = {k: [] for k in ("loc", "comm", "seq", "enter", "leave", "cp", "event",
                                                             "member", "root", "size")}
        for loc in range(n):
            d = self._loc(loc)
            leaves = np.flatnonzero(d.kind == _LEAVE)
            fn = self._fn_of(d.callpath[leaves])
            sel = leaves[(fn == _FN_INIT) | (fn == _FN_FINALIZE)]
            if not len(sel):
                continue
            which = (self._fn_of(d.callpath[sel]) == _FN_FINALIZE).astype(np.int64)
            cp, _, ent, lea = d.calls(sel)
            for k, v in (("loc", np.full(len(sel), loc)), ("comm", which), ("seq", _group_rank(which[:, None])),
                         ("enter", ent), ("leave", lea), ("cp", cp), ("event", sel),
                         ("member", np.full(len(sel), loc)), ("root", np.full(len(sel), -1)),
                         ("size", np.full(len(sel), n))):
                rows[k].append(np.asarray(v))
        if not rows["loc"]:
            return []
        t = {k: np.concatenate(v) for k, v in rows.items()}
        pattern = np.where(t["comm"] == 1, "finalize", "init").astype("U12")
        return [self._site_waits(t, pattern, set(locations))]

    @staticmethod
    def _site_waits(t: dict[str, np.ndarray], pattern: np.ndarray, wanted: set[int]) -> np.ndarray:
        """Waits of the members of collective instances, an instance being a (comm, seq) pair.

        Instances some of whose members are missing (not loaded) are left out.
        """
        _, inst = np.unique(np.stack([t["comm"], t["seq"]], axis=1), axis=0, return_inverse=True)
        inst = inst.reshape(-1)
        n_inst = int(inst.max()) + 1
        complete = (np.bincount(inst, minlength=n_inst) == t["size"][np.unique(inst, return_index=True)[1]])[inst]
        latest = np.full(n_inst, -np.inf)
        np.maximum.at(latest, inst, t["enter"])
        root_enter = np.full(n_inst, np.nan)
        is_root = (t["root"] >= 0) & (t["member"] == t["root"])
        root_enter[inst[is_root]] = t["enter"][is_root]
        ref = latest[inst].copy()
        one_to_n = pattern == "12n"
        ref[one_to_n] = root_enter[inst[one_to_n]]
        waits = np.zeros(len(inst), dtype=bool)
        waits[np.isin(pattern, ["barrier", "n2n", "finalize", "init", "scan"])] = True
        waits[one_to_n & ~is_root] = True
        waits[(pattern == "n21") & is_root] = True
        scan = np.flatnonzero(pattern == "scan")
        if len(scan):  # the latest enter of the members up to and including me
            order = scan[np.lexsort((t["member"][scan], inst[scan]))]
            for i in np.unique(inst[order]):
                grp = order[inst[order] == i]
                ref[grp] = np.maximum.accumulate(t["enter"][grp])
        until = np.minimum(ref, t["leave"])
        wait = until - t["enter"]
        keep = waits & complete & (wait > 0) & np.isin(t["loc"], list(wanted))
        out = np.zeros(int(keep.sum()), dtype=WAIT_DTYPE)
        out["location"] = t["loc"][keep]
        out["callpath"] = t["cp"][keep]
        out["pattern"] = pattern[keep]
        out["start"] = t["enter"][keep]
        out["end"] = until[keep]
        out["event"] = t["event"][keep]
        return out

    # ---- all ---------------------------------------------------------------

    def waits(self, locations: Sequence[int] | None = None, window: tuple[float, float] | None = None) -> np.ndarray:
        """Wait intervals of `locations` (default: all loaded), ordered by location and start.

        With `window` = (t0, t1) only the intervals overlapping it (not clipped).
        """
        locs = sorted(self._loaded) if locations is None else sorted(set(int(x) for x in locations))
        locs = [x for x in locs if x in self._loaded]
        parts = self._p2p(locs) + self._collectives(locs) + self._init_finalize(locs)
        out = np.concatenate(parts) if parts else np.zeros(0, dtype=WAIT_DTYPE)
        if window is not None:
            t0, t1 = window
            out = out[(out["end"] > t0) & (out["start"] < t1)]
        return out[np.lexsort((out["start"], out["location"]))]


def wait_intervals(trace: "Trace", locations: Sequence[int] | None = None,
                   window: tuple[float, float] | None = None) -> np.ndarray:
    """Every wait-state instance of `locations` as an interval (structured array, :data:`WAIT_DTYPE`).

    Summed per pattern, call path and location the waits equal the core's
    metrics named in :data:`PATTERN_METRICS` (see the module docstring for
    the rules).  The partners of the locations are read too (the senders of
    their messages, the members of their collectives); a wait whose partner
    is not loaded is left out, and so are MPI_Init and MPI_Finalize waits
    unless all locations are loaded.
    """
    return WaitFinder(trace).waits(locations, window)
