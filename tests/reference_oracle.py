"""The reference implementation of the wait-state rules, written directly
on the event columns of a trace without any replay, and the invariants
every analysis result satisfies.

tests/test_waitstates.py checks the reference against its hand-worked
values, then uses it as an oracle on random programs
(tests/random_programs.py); tests/test_wait_records.py uses the same
programs.
"""
from __future__ import annotations

import numpy as np

import waitscope

# the wait-state patterns (seconds)
PATTERNS = (
    "mpi_latesender",
    "mpi_latesender_wo",
    "mpi_lswo_same",
    "mpi_lswo_different",
    "mpi_latereceiver",
    "mpi_barrier_wait",
    "mpi_barrier_completion",
    "mpi_wait_nxn",
    "mpi_nxn_completion",
    "mpi_latebroadcast",
    "mpi_earlyreduce",
    "mpi_earlyscan",
    "mpi_finalize_wait",
    "mpi_init_completion",
)


# ---- a reference implementation on the events ----------------------------------
#
# The rules again (those of the module docstring, plus: Late Sender and
# Late Receiver count once per MPI_Waitall, with the largest value, and a
# Waitall that waited for a Late Sender counts no Late Receiver (Scalasca
# 2.6); collectives as Scalasca 2.6 times them, between their begin and
# end records, without wait states on a one-process communicator, for
# MPI_Alltoallv/w or without data; a Late
# Sender is in wrong order when a later receive of the location (in another
# MPI call) got a message sent earlier, the nearest such receive deciding between same and
# different source; Init/Finalize are collectives over all locations),
# written directly on the event columns of the trace without any replay.
# Checked against the hand values above, then used as an oracle.

_ENTER, _LEAVE, _SEND, _ISEND, _ISEND_COMPLETE, _IRECV_REQUEST, _RECV, _IRECV = 1, 2, 3, 4, 5, 6, 7, 8
_COLL_END = 12
_NXN_OPS = {"allgather", "allgatherv", "alltoall", "allreduce", "reduce_scatter", "reduce_scatter_block"}


def reference(trace: waitscope.Trace) -> dict:
    names = trace.callpath_names
    region = [n.rsplit("/", 1)[-1] for n in names]
    C, N = len(names), trace.n_locations
    comms = trace.communicators
    out = {m: np.zeros((C, N)) for m in PATTERNS + (
        "time", "visits", "syncs_send", "comms_send", "syncs_recv", "comms_recv", "bytes_sent", "bytes_rcvd",
        "mpi_sls_count", "mpi_cls_count", "mpi_slswo_count", "mpi_clswo_count", "mpi_slr_count", "mpi_clr_count",
        "syncs_coll", "comms_cxch", "comms_csrc", "comms_cdst", "bytes_cout", "bytes_cin")}

    class Call:  # one MPI (or user) call: call path, enter, leave
        def __init__(self, cp, enter, ident):
            self.cp, self.enter, self.leave, self.id = cp, enter, None, ident

    sends, recvs = {}, {}  # (src, dst, comm, tag) -> [message]
    recv_order = {loc: [] for loc in range(N)}  # receives of a location in record order
    sites = {}  # (communicator or "MPI_Init"/"MPI_Finalize", k-th) -> [member dict]
    for loc in range(N):
        ev = trace.events(loc)
        msgs = trace.messages(loc)
        colls = trace.collectives(loc)
        msg_at = {int(e): i for i, e in enumerate(msgs["event"])}
        coll_at = {int(e): i for i, e in enumerate(colls["event"])}
        req_at = {int(e): int(q) for e, q in zip(ev.req_event, ev.req_id)}
        stack, posts, isends, ncoll = [], {}, {}, {}
        last = None
        for i, (kind, t, ref) in enumerate(zip(ev.kind.tolist(), ev.time.tolist(), ev.ref.tolist())):
            if stack and last is not None:
                out["time"][stack[-1].cp, loc] += t - last
            last = t
            top = stack[-1] if stack else None
            if kind == _ENTER:
                stack.append(Call(ref, t, (loc, i)))
                out["visits"][ref, loc] += 1
            elif kind == _LEAVE:
                call = stack.pop()
                call.leave = t
                if region[call.cp] in ("MPI_Init", "MPI_Finalize"):
                    key = region[call.cp]
                    ncoll[key] = ncoll.get(key, 0) + 1
                    sites.setdefault((key, ncoll[key]), []).append(
                        dict(member=loc, loc=loc, call=call, op=None, root=None, sent=0, received=0))
            elif kind in (_SEND, _ISEND, _RECV, _IRECV):
                k = msg_at[i]
                m = dict(loc=loc, partner=int(msgs["partner"][k]), comm=int(msgs["comm"][k]),
                         tag=int(msgs["tag"][k]), bytes=int(msgs["bytes"][k]), call=top)
                if kind in (_SEND, _ISEND):
                    m["done"] = top  # completed by its own call unless an MpiIsendComplete says otherwise
                    if kind == _ISEND:
                        isends[req_at[i]] = m
                    sends.setdefault((loc, m["partner"], m["comm"], m["tag"]), []).append(m)
                    out["syncs_send" if m["bytes"] == 0 else "comms_send"][top.cp, loc] += 1
                    out["bytes_sent"][top.cp, loc] += m["bytes"]
                else:
                    # posted when MPI_Irecv or MPI_Recv was entered
                    m["post"] = (posts.pop(req_at[i]) if kind == _IRECV else top).enter
                    recvs.setdefault((m["partner"], loc, m["comm"], m["tag"]), []).append(m)
                    recv_order[loc].append(m)
            elif kind == _IRECV_REQUEST:
                posts[req_at[i]] = top
            elif kind == _ISEND_COMPLETE:
                isends.pop(req_at[i])["done"] = top
            elif kind == _COLL_END:
                k = coll_at[i]
                c = int(colls["comm"][k])
                ncoll[c] = ncoll.get(c, 0) + 1
                member = [int(x) for x in comms[c].locations].index(loc)
                sites.setdefault((c, ncoll[c]), []).append(
                    dict(member=member, loc=loc, call=top, op=colls["op"][k], root=int(colls["root"][k]),
                         sent=int(colls["sent"][k]), received=int(colls["received"][k])))
    # messages: match the n-th send with the n-th receive of a channel
    for key, rs in recvs.items():
        for s, r in zip(sends[key], rs):
            r["send"], s["recv"] = s, r
            out["syncs_recv" if s["bytes"] == 0 else "comms_recv"][r["call"].cp, r["loc"]] += 1
            out["bytes_rcvd"][r["call"].cp, r["loc"]] += s["bytes"]

    # Late Sender: per blocking receive, and once (the largest) per Waitall
    late = {}  # Waitall call id or (call id, message) -> (idle, receive message)
    for loc in range(N):
        for r in recv_order[loc]:
            call = r["call"]
            if region[call.cp] not in ("MPI_Recv", "MPI_Wait", "MPI_Waitall"):
                continue
            idle = min(r["send"]["call"].enter, call.leave) - call.enter
            if region[call.cp] != "MPI_Waitall" and idle > 0:
                late[(call.id, id(r))] = (idle, r)
            elif region[call.cp] == "MPI_Waitall" and idle > 0:
                if call.id not in late or idle > late[call.id][0]:
                    late[call.id] = (idle, r)
    late_ls = late

    # Late Receiver: the call completing the send leaves when or after the
    # receive was posted; once (the largest) per Waitall
    late_lr = {}
    for s in [s for ss in sends.values() for s in ss]:
        done = s["done"]
        if region[done.cp] not in ("MPI_Send", "MPI_Ssend", "MPI_Wait", "MPI_Waitall"):
            continue
        post = s["recv"]["post"]
        idle = post - done.enter
        if done.leave >= post and idle > 0:
            if region[done.cp] != "MPI_Waitall":
                late_lr[(done.id, id(s))] = (idle, s)
            elif done.id not in late_lr or idle > late_lr[done.id][0]:
                late_lr[done.id] = (idle, s)
    # a Waitall that waited for a late sender counts no late receiver
    for call_id in [k for k in late_ls if k in late_lr]:
        del late_lr[call_id]

    for idle, r in late_ls.values():
        out["mpi_latesender"][r["call"].cp, r["loc"]] += idle
        out["mpi_sls_count" if r["send"]["bytes"] == 0 else "mpi_cls_count"][r["call"].cp, r["loc"]] += 1
        r["ls"] = idle
    # in wrong order: a later receive of the location got a message whose
    # send started earlier; the nearest such receive decides the source
    for loc in range(N):
        order = recv_order[loc]
        for i, r in enumerate(order):
            if not r.get("ls"):
                continue
            ts = r["send"]["call"].enter
            # receives completed by one MPI_Waitall/Waitsome are never in
            # wrong order among themselves (Scalasca 2.6 records the call's
            # Late Sender at its Leave)
            j = next((q for q in order[i + 1:] if q["send"]["call"].enter < ts and q["call"] is not r["call"]), None)
            if j is not None:
                cp = r["call"].cp
                out["mpi_latesender_wo"][cp, loc] += r["ls"]
                out["mpi_lswo_same" if j["partner"] == r["partner"] else "mpi_lswo_different"][cp, loc] += r["ls"]
                out["mpi_slswo_count" if r["send"]["bytes"] == 0 else "mpi_clswo_count"][cp, loc] += 1

    for idle, s in late_lr.values():
        out["mpi_latereceiver"][s["done"].cp, s["loc"]] += idle
        out["mpi_slr_count" if s["bytes"] == 0 else "mpi_clr_count"][s["done"].cp, s["loc"]] += 1

    # collectives (synthetic traces: the begin and end records lie at the
    # call's Enter and Leave)
    for (c, _), members in sites.items():
        members.sort(key=lambda x: x["member"])
        op = members[0]["op"]
        begin = [x["call"].enter for x in members]
        end = [x["call"].leave for x in members]
        root = members[0]["root"] if op is not None else None
        n = len(members)
        ignored = n < 2 or op in ("alltoallv", "alltoallw") or (
            op in ("bcast", "scatter", "scatterv") and members[root]["sent"] == 0) or (
            op in ("reduce", "gather", "gatherv") and members[root]["received"] == 0) or (
            (op in _NXN_OPS or op in ("scan", "exscan")) and not any(x["sent"] or x["received"] for x in members))
        if c in ("MPI_Init", "MPI_Finalize"):
            ignored = False
        # who synchronizes, and the begin they wait for
        syncs, ref = [False] * n, -np.inf
        if ignored or op in ("scan", "exscan"):
            pass
        elif c in ("MPI_Init", "MPI_Finalize") or op == "barrier" or (op in _NXN_OPS and min(end) > max(begin)):
            syncs, ref = [True] * n, max(begin)
        elif op in _NXN_OPS:
            senders = [i for i in range(n) if members[i]["sent"]]
            last = max(senders, key=lambda i: (begin[i], -i))
            ref = begin[last]
            syncs = [(members[i]["received"] > 0 and begin[i] < ref) or i == last for i in range(n)]
        elif op in ("bcast", "scatter", "scatterv"):
            ref = begin[root]
            syncs = [i != root and members[i]["received"] > 0 and begin[i] < ref for i in range(n)]
            syncs[root] = any(syncs)
        elif op in ("reduce", "gather", "gatherv"):
            senders = [i for i in range(n) if members[i]["sent"]]
            last = max(senders, key=lambda i: (begin[i], -i))
            ref = begin[last]
            if begin[root] < ref:
                syncs[root] = syncs[last] = True
        first_end = min((end[i] for i in range(n) if syncs[i]), default=np.inf)
        prefix = -np.inf
        for i, x in enumerate(members):
            b, e, cp, loc = begin[i], end[i], x["call"].cp, x["loc"]
            if x["sent"] and not ignored:
                prefix = max(prefix, b)
            wait = max(0.0, min(ref, e) - b) if syncs[i] else 0.0
            completion = max(0.0, e - max(first_end, min(ref, e))) if syncs[i] else 0.0
            if c == "MPI_Init":
                out["mpi_init_completion"][cp, loc] += completion
            elif c == "MPI_Finalize":
                out["mpi_finalize_wait"][cp, loc] += wait
            elif op == "barrier":
                out["mpi_barrier_wait"][cp, loc] += wait
                out["mpi_barrier_completion"][cp, loc] += completion
            elif op in _NXN_OPS:
                out["mpi_wait_nxn"][cp, loc] += wait
                out["mpi_nxn_completion"][cp, loc] += completion
            elif op in ("bcast", "scatter", "scatterv"):
                out["mpi_latebroadcast"][cp, loc] += wait
            elif op in ("reduce", "gather", "gatherv"):
                if i == root:
                    out["mpi_earlyreduce"][cp, loc] += wait
            elif op in ("scan", "exscan") and not ignored:
                out["mpi_earlyscan"][cp, loc] += max(0.0, min(prefix, e) - b)
            if op is not None:
                sent, received = x["sent"], x["received"]
                kind = ("syncs_coll" if not sent and not received else "comms_cxch" if sent and received
                        else "comms_csrc" if sent else "comms_cdst")
                out[kind][cp, loc] += 1
                out["bytes_cout"][cp, loc] += sent
                out["bytes_cin"][cp, loc] += received
    return out


def compare_with_reference(r: waitscope.AnalysisResult, trace: waitscope.Trace) -> None:
    ref = reference(trace)
    tol = 1e-9 * max(1.0, float(ref["time"].max()))
    for m, want in ref.items():
        got = r.get(m)
        bad = np.argwhere(~np.isclose(got, want, rtol=0, atol=tol))
        assert len(bad) == 0, f"{m}: " + ", ".join(
            f"{r.callpath_names[c]} @ {l}: got {got[c, l]!r}, reference {want[c, l]!r}" for c, l in bad[:5])


# ---- invariants on random programs -------------------------------------------

# call paths (by their last region) on which a pattern may be nonzero
PATTERN_REGIONS = {
    "mpi_latesender": {"MPI_Recv", "MPI_Wait", "MPI_Waitall"},
    "mpi_latesender_wo": {"MPI_Recv", "MPI_Wait", "MPI_Waitall"},
    "mpi_lswo_same": {"MPI_Recv", "MPI_Wait", "MPI_Waitall"},
    "mpi_lswo_different": {"MPI_Recv", "MPI_Wait", "MPI_Waitall"},
    "mpi_latereceiver": {"MPI_Send", "MPI_Ssend", "MPI_Wait", "MPI_Waitall"},
    "mpi_barrier_wait": {"MPI_Barrier"},
    "mpi_barrier_completion": {"MPI_Barrier"},
    "mpi_wait_nxn": {"MPI_Allreduce", "MPI_Alltoall", "MPI_Allgather"},
    "mpi_nxn_completion": {"MPI_Allreduce", "MPI_Alltoall", "MPI_Allgather"},
    "mpi_latebroadcast": {"MPI_Bcast", "MPI_Scatter"},
    "mpi_earlyreduce": {"MPI_Reduce", "MPI_Gather"},
    "mpi_earlyscan": {"MPI_Scan"},
    "mpi_finalize_wait": {"MPI_Finalize"},
    "mpi_init_completion": {"MPI_Init"},
}

# (parent, children): parent == sum of children (counts and bytes)
COUNT_SUMS = [
    ("syncs", ["syncs_p2p", "syncs_coll"]),
    ("syncs_p2p", ["syncs_send", "syncs_recv"]),
    ("comms", ["comms_p2p", "comms_coll"]),
    ("comms_p2p", ["comms_send", "comms_recv"]),
    ("comms_coll", ["comms_cxch", "comms_csrc", "comms_cdst"]),
    ("bytes", ["bytes_p2p", "bytes_coll"]),
    ("bytes_p2p", ["bytes_sent", "bytes_rcvd"]),
    ("bytes_coll", ["bytes_cout", "bytes_cin"]),
]

# (parent, children): parent >= sum of children, per call path and location
TIME_BOUNDS = [
    ("mpi", ["mpi_management", "mpi_synchronization", "mpi_communication", "mpi_io"]),
    ("mpi_management", ["mpi_init_exit", "mpi_mgmt_comm", "mpi_mgmt_file", "mpi_mgmt_win"]),
    ("mpi_init_exit", ["mpi_init_completion", "mpi_finalize_wait"]),
    ("mpi_synchronization", ["mpi_sync_collective"]),
    ("mpi_sync_collective", ["mpi_barrier_wait", "mpi_barrier_completion"]),
    ("mpi_communication", ["mpi_point2point", "mpi_collective"]),
    ("mpi_point2point", ["mpi_latesender", "mpi_latereceiver"]),
    ("mpi_latesender", ["mpi_latesender_wo"]),
    ("mpi_collective", ["mpi_earlyreduce", "mpi_earlyscan", "mpi_latebroadcast", "mpi_wait_nxn",
                        "mpi_nxn_completion"]),
    ("mpi_io", ["mpi_io_individual", "mpi_io_collective"]),
    # occurrence counts below their receives / sends
    ("syncs_recv", ["mpi_sls_count"]),
    ("comms_recv", ["mpi_cls_count"]),
    ("mpi_sls_count", ["mpi_slswo_count"]),
    ("mpi_cls_count", ["mpi_clswo_count"]),
]


def check_invariants(r: waitscope.AnalysisResult) -> None:
    cube = r.cube
    assert np.all(np.isfinite(cube))
    neg = np.argwhere(cube < 0)
    assert len(neg) == 0, [(r.metric_ids[m], r.callpath_names[c], l, cube[m, c, l]) for m, c, l in neg[:5]]
    time = r.get("time")
    tol = 1e-9 * max(1.0, float(time.max()))
    for m in PATTERNS:
        v = r.get(m)
        over = np.argwhere(v > time + tol)
        assert len(over) == 0, (m, [(r.callpath_names[c], l, v[c, l], time[c, l]) for c, l in over[:5]])
        allowed = PATTERN_REGIONS[m]
        for c in np.flatnonzero(v.any(axis=1)):
            assert r.callpath_names[c].rsplit("/", 1)[-1] in allowed, (m, r.callpath_names[c])
    # one call's waiting and completion are disjoint parts of it
    for a, b in (("mpi_barrier_wait", "mpi_barrier_completion"), ("mpi_wait_nxn", "mpi_nxn_completion")):
        assert np.all(r.get(a) + r.get(b) <= time + tol), (a, b)

    def close(x, y, what):
        np.testing.assert_allclose(x, y, rtol=0, atol=tol, err_msg=what)

    close(time, r.get("execution") + r.get("overhead"), "time = execution + overhead")
    close(r.get("execution"), r.get("comp") + r.get("mpi"), "execution = comp + mpi")
    for parent, children in TIME_BOUNDS:
        total = sum(r.get(c) for c in children)
        assert np.all(r.get(parent) >= total - tol), f"{parent} < {' + '.join(children)}"
    # Late Receivers are counted at the call completing the send (MPI_Wait*),
    # sends at the call starting it (MPI_Isend): compare per location
    for parent, child in (("syncs_send", "mpi_slr_count"), ("comms_send", "mpi_clr_count")):
        assert np.all(r.by_location(parent) >= r.by_location(child)), (parent, child)
    close(r.get("mpi_latesender_wo"), r.get("mpi_lswo_same") + r.get("mpi_lswo_different"), "wo = same + different")
    for parent, children in COUNT_SUMS:
        np.testing.assert_array_equal(r.get(parent), sum(r.get(c) for c in children), err_msg=parent)
    # an occurrence count where (and only where) there is waiting
    for wait, counts in (("mpi_latesender", ("mpi_sls_count", "mpi_cls_count")),
                         ("mpi_latesender_wo", ("mpi_slswo_count", "mpi_clswo_count")),
                         ("mpi_latereceiver", ("mpi_slr_count", "mpi_clr_count"))):
        n = sum(r.get(c) for c in counts)
        np.testing.assert_array_equal(r.get(wait) > 0, n > 0, err_msg=wait)
    # every message is sent once and received once
    assert r.total("syncs_send") == r.total("syncs_recv")
    assert r.total("comms_send") == r.total("comms_recv")
    assert r.total("bytes_sent") == r.total("bytes_rcvd")
    # every location enters its root call path (main) once
    root = r.callpath_index(r.callpath_names[0])
    assert r.callpath_parent[root] < 0
    np.testing.assert_array_equal(r.get("visits")[root], 1)
