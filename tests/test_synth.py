"""Tests of the synthetic-program executor (waitscope.synth).

Expected times are worked out by hand from the timing model documented in
waitscope/synth.py; they are compared in integer clock ticks.
"""
import time

import numpy as np
import pytest

from waitscope import _core, synth
from waitscope.synth import TraceError

RES = 10**9
L = 0.5  # latency used by most tests
O = 0.25  # MPI overhead used by most tests

ENTER, LEAVE, SEND, ISEND, ISEND_COMPLETE, IRECV_REQUEST, RECV, IRECV = 1, 2, 3, 4, 5, 6, 7, 8
COLL_BEGIN, COLL_END = 11, 12


def T(seconds):
    """Seconds -> ticks at RES."""
    return round(seconds * RES)


class View:
    """Readable access to a trace for assertions."""

    def __init__(self, trace):
        self.trace = trace
        self.defs = trace.definitions()
        strings = self.defs["strings"]
        self.region_names = [strings[i] for i in self.defs["regions"]["name"]]
        self.parent, self.region = trace.callpaths()

    def path(self, cp):
        """The call path below the program region (the root of every call
        path: "" for the program region itself)."""
        names = []
        while cp >= 0:
            names.append(self.region_names[self.region[cp]])
            cp = self.parent[cp]
        return "/".join(reversed(names[:-1]))

    def ticks(self, loc):
        return np.rint(self.trace.events(loc)["time"] * RES).astype(np.int64)

    def records(self, loc):
        """[(kind, ticks, call path or None)]"""
        e = self.trace.events(loc)
        ticks = self.ticks(loc)
        return [
            (int(k), int(t), self.path(int(r)) if k in (ENTER, LEAVE) else None)
            for k, t, r in zip(e["kind"], ticks, e["ref"])
        ]

    def kinds(self, loc):
        return [int(k) for k in self.trace.events(loc)["kind"]]

    def spans(self, loc, name):
        """(enter, leave) ticks of every instance of the region called `name`."""
        out, stack = [], []
        for kind, t, path in self.records(loc):
            if kind == ENTER:
                stack.append((path, t))
            elif kind == LEAVE:
                p, t0 = stack.pop()
                assert p == path
                if p.rsplit("/", 1)[-1] == name:
                    out.append((t0, t))
        return out

    def span(self, loc, name):
        (s,) = self.spans(loc, name)
        return s


def run(prog, **params):
    params.setdefault("latency", L)
    params.setdefault("mpi_overhead", O)
    return View(prog.run(**params)._core)


# ---- wrapping and definitions ---------------------------------------------


def test_empty_program_is_wrapped_like_scorep():
    v = run(synth.Program(2))
    # the program region (Score-P's ProgramBegin and ProgramEnd) encloses main
    assert v.region_names[v.region[0]] == "synthetic" and v.parent[0] == -1
    for loc in range(2):
        assert v.records(loc) == [
            (ENTER, 0, ""),
            (ENTER, 0, "main"),
            (ENTER, 0, "main/MPI_Init"),
            (LEAVE, T(L + O), "main/MPI_Init"),
            (ENTER, T(L + O), "main/MPI_Finalize"),
            (LEAVE, T(2 * (L + O)), "main/MPI_Finalize"),
            (LEAVE, T(2 * (L + O)), "main"),
            (LEAVE, T(2 * (L + O)), ""),
        ]


def test_definitions_look_like_scorep():
    prog = synth.Program(3)
    sub = prog.comm([2, 0], name="pair")
    prog.rank(0).compute("work", 1.0).send(1, size=4).barrier().bcast(root=1).recv(0, comm=sub)
    prog.rank(1).recv(0).barrier().bcast(root=1)
    prog.rank(2).barrier().bcast(root=1).send(1, comm=sub)
    v = run(prog)
    d = v.defs
    strings = d["strings"]
    regions = d["regions"]
    byname = {v.region_names[i]: i for i in range(len(v.region_names))}
    assert set(byname) == {"main", "work", "MPI_Init", "MPI_Finalize", "MPI_Send", "MPI_Recv", "MPI_Barrier",
                           "MPI_Bcast", "synthetic"}
    roles = {"MPI_Init": 1, "MPI_Finalize": 1, "MPI_Send": 28, "MPI_Recv": 28, "MPI_Barrier": 15, "MPI_Bcast": 23,
             "main": 1, "work": 1, "synthetic": 31}
    for name, role in roles.items():
        i = byname[name]
        assert regions["role"][i] == role, name
        if name == "synthetic":
            # Score-P's program region: OTF2_REGION_ROLE_ARTIFICIAL (31),
            # OTF2_PARADIGM_MEASUREMENT_SYSTEM (6)
            assert regions["paradigm"][i] == 6
            assert strings[regions["canonical_name"][i]] == "/synthetic/synthetic"
        elif name.startswith("MPI_"):
            assert regions["paradigm"][i] == 4  # OTF2_PARADIGM_MPI
            assert strings[regions["source_file"][i]] == "MPI"
        else:
            assert regions["paradigm"][i] == 1  # OTF2_PARADIGM_USER
    # processes and threads
    assert [g["name"] for g in d["location_groups"]] == ["MPI Rank 0", "MPI Rank 1", "MPI Rank 2"]
    assert all(g["type"] == 1 for g in d["location_groups"])  # PROCESS
    assert [strings[i] for i in d["locations"]["name"]] == ["Master thread"] * 3
    assert list(d["locations"]["type"]) == [1, 1, 1]  # CPU_THREAD
    assert list(d["locations"]["rank"]) == [0, 1, 2]
    assert [(n["class"], n["name"]) for n in d["system_tree"]] == [("machine", "synthetic"), ("node", "node0")]
    # groups and communicators
    types = [(g["type"], list(g["members"])) for g in d["groups"]]
    assert types == [(4, [0, 1, 2]), (5, [0, 1, 2]), (6, []), (5, [2, 0])]
    comms = d["comms"]
    assert [c["name"] for c in comms] == ["MPI_COMM_WORLD", "MPI_COMM_SELF", "pair"]
    assert comms[0]["parent"] == -1 and comms[2]["parent"] == 0
    assert comms[1]["is_self"]
    assert list(comms[2]["locations"]) == [2, 0]
    assert d["world_comm"] == 0 and d["world_size"] == 3
    # record counts
    for loc in range(3):
        assert d["locations"]["n_records"][loc] == len(v.kinds(loc))
        assert d["locations"]["loaded"][loc]
    assert v.trace.n_events == sum(len(v.kinds(loc)) for loc in range(3))


def test_cartesian_topology():
    prog = synth.Program(6)
    prog.cart((2, 3), periods=(False, True), name="grid")
    (topo,) = run(prog).defs["cart_topologies"]
    assert topo["name"] == "grid"
    assert topo["comm"] == 0
    assert list(topo["dims"]) == [2, 3]
    assert list(topo["periodic"]) == [False, True]
    assert topo["coords"].tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]


def test_cartesian_topology_on_subcommunicator_with_spare_ranks():
    prog = synth.Program(5)
    sub = prog.comm([4, 3, 2])
    prog.cart((2,), comm=sub)
    (topo,) = run(prog).defs["cart_topologies"]
    assert topo["comm"] == 2
    assert topo["coords"].tolist() == [[0], [1], [-1]]


# ---- computation and regions ------------------------------------------------


def test_compute_and_nested_regions_give_call_paths():
    prog = synth.Program(1)
    r = prog.rank(0)
    r.compute("f", 2.0)
    with r.region("solver"):
        r.compute("g", 1.0)
        with r.region("inner"):
            r.compute("h", 0.5)
            r.compute("g", 0.25)
    r.compute("g", 1.0)
    v = run(prog, latency=0.0, mpi_overhead=0.0)
    enters = [(t, p) for k, t, p in v.records(0) if k == ENTER]
    assert enters == [
        (0, ""),
        (0, "main"),
        (0, "main/MPI_Init"),
        (0, "main/f"),
        (T(2.0), "main/solver"),
        (T(2.0), "main/solver/g"),
        (T(3.0), "main/solver/inner"),
        (T(3.0), "main/solver/inner/h"),
        (T(3.5), "main/solver/inner/g"),
        (T(3.75), "main/g"),
        (T(4.75), "main/MPI_Finalize"),
    ]
    assert v.spans(0, "solver") == [(T(2.0), T(3.75))]
    assert v.spans(0, "g") == [(T(2.0), T(3.0)), (T(3.5), T(3.75)), (T(3.75), T(4.75))]
    # call paths are created in event order, like the OTF2 reader does
    paths = [v.path(cp) for cp in range(len(v.parent))]
    assert paths == ["", "main", "main/MPI_Init", "main/f", "main/solver", "main/solver/g", "main/solver/inner",
                     "main/solver/inner/h", "main/solver/inner/g", "main/g", "main/MPI_Finalize"]


def test_region_block_returns_the_builder():
    prog = synth.Program(1)
    with prog.rank(0).region("outer") as r:
        assert r is prog.rank(0)
        r.compute("x", 1.0).compute("y", 1.0)
    assert len(prog.rank(0)) == 4


# ---- point-to-point ---------------------------------------------------------


def test_blocking_recv_waits_for_late_sender():
    # the brief's example: rank 0 computes 2 s then sends, rank 1 receives at once
    prog = synth.Program(2)
    prog.rank(0).compute("work", 2.0).send(1, tag=0, size=8)
    prog.rank(1).recv(0, tag=0)
    v = run(prog, latency=L, mpi_overhead=0.0)
    init = T(L)
    assert v.span(0, "work") == (init, init + T(2.0))
    assert v.span(0, "MPI_Send") == (init + T(2.0), init + T(2.0))
    assert v.span(1, "MPI_Recv") == (init, init + T(2.0) + T(L))
    # with overhead
    v = run(prog)
    init = T(L + O)
    t_s = init + T(2.0)
    assert v.span(0, "MPI_Send") == (t_s, t_s + T(O))
    assert v.span(1, "MPI_Recv") == (init, t_s + T(L) + T(O))
    # record sequence and message columns
    assert v.kinds(0) == [ENTER, ENTER, ENTER, LEAVE, ENTER, LEAVE, ENTER, SEND, LEAVE, ENTER, LEAVE, LEAVE,
                          LEAVE]
    assert v.kinds(1) == [ENTER, ENTER, ENTER, LEAVE, ENTER, RECV, LEAVE, ENTER, LEAVE, LEAVE, LEAVE]
    e0, e1 = v.trace.events(0), v.trace.events(1)
    assert v.ticks(0)[7] == t_s and v.ticks(1)[5] == t_s + T(L) + T(O)
    assert list(e0["msg_event"]) == [7] and list(e1["msg_event"]) == [5]
    assert list(e0["msg_peer"]) == [1] and list(e1["msg_peer"]) == [0]
    assert list(e0["msg_bytes"]) == [8] and list(e1["msg_bytes"]) == [8]
    assert list(e0["msg_comm"]) == [0] and list(e1["msg_tag"]) == [0]
    # Finalize: everyone leaves at the latest enter + L + o
    fin = t_s + T(L) + T(O) + T(L + O)
    assert v.span(0, "MPI_Finalize")[1] == fin and v.span(1, "MPI_Finalize")[1] == fin


def test_eager_send_does_not_wait_for_late_receiver_and_bandwidth_adds_time():
    prog = synth.Program(2)
    prog.rank(0).send(1, size=10)
    prog.rank(1).compute("work", 3.0).recv(0)
    v = run(prog, bandwidth=1000.0)  # x = 10 / 1000 s
    init = T(L + O)
    assert v.span(0, "MPI_Send") == (init, init + T(O))
    assert v.span(1, "MPI_Recv") == (init + T(3.0), init + T(3.0) + T(O))
    # receiver early: arrival t_s + L + x
    prog = synth.Program(2)
    prog.rank(0).compute("work", 3.0).send(1, size=10)
    prog.rank(1).recv(0)
    v = run(prog, bandwidth=1000.0)
    assert v.span(1, "MPI_Recv") == (init, init + T(3.0) + T(L) + T(0.01) + T(O))


def test_rendezvous_send_waits_for_receiver():
    prog = synth.Program(2)
    prog.rank(0).send(1, size=1000)
    prog.rank(1).compute("work", 2.0).recv(0)
    v = run(prog, bandwidth=1000.0, eager_limit=100)  # x = 1 s
    init = T(L + O)
    t_r = init + T(2.0)
    done = t_r + T(L) + T(1.0) + T(O)
    assert v.span(0, "MPI_Send") == (init, done)
    assert v.span(1, "MPI_Recv") == (t_r, done)
    # the same message below the eager limit: the sender leaves at once
    v = run(prog, bandwidth=1000.0, eager_limit=1000)
    assert v.span(0, "MPI_Send") == (init, init + T(O))
    assert v.span(1, "MPI_Recv") == (t_r, t_r + T(O))  # arrived at init + L + x < t_r


def test_ssend_is_always_rendezvous():
    prog = synth.Program(2)
    prog.rank(0).ssend(1, size=8)
    prog.rank(1).compute("work", 2.0).recv(0)
    v = run(prog)
    init = T(L + O)
    t_r = init + T(2.0)
    assert v.span(0, "MPI_Ssend") == (init, t_r + T(L) + T(O))
    assert v.span(1, "MPI_Recv") == (t_r, t_r + T(L) + T(O))


def test_messages_match_in_order_per_tag():
    prog = synth.Program(2)
    # tag 1 is sent before tag 2 but received after it: eager, so no deadlock
    prog.rank(0).send(1, tag=1, size=1).send(1, tag=2, size=2).send(1, tag=1, size=3)
    prog.rank(1).recv(0, tag=2).recv(0, tag=1).recv(0, tag=1)
    v = run(prog)
    e = v.trace.events(1)
    assert list(e["msg_tag"]) == [2, 1, 1]
    assert list(e["msg_bytes"]) == [2, 1, 3]


def test_isend_irecv_waitall():
    prog = synth.Program(2)
    r0 = prog.rank(0)
    q1 = r0.isend(1, tag=1, size=8)
    q2 = r0.irecv(1, tag=2)
    r0.compute("w", 1.0).waitall([q1, q2])
    prog.rank(1).compute("x", 2.0).recv(0, tag=1).send(0, tag=2, size=16)
    v = run(prog)
    init = T(L + O)
    assert (q1.id, q2.id) == (1, 2)
    assert v.span(0, "MPI_Isend") == (init, init + T(O))
    assert v.span(0, "MPI_Irecv") == (init + T(O), init + T(2 * O))
    # rank 1 receives at init + 2 (message arrived at init + L), then sends at init + 2 + o
    t_s = init + T(2.0) + T(O)
    assert v.span(1, "MPI_Recv") == (init + T(2.0), t_s)
    # waitall: isend done at init + o (eager); irecv arrival t_s + L
    t_w = init + T(2 * O) + T(1.0)
    leave = t_s + T(L) + T(O)
    assert v.span(0, "MPI_Waitall") == (t_w, leave)
    recs = v.records(0)
    assert [k for k, _, _ in recs] == [
        ENTER, ENTER, ENTER, LEAVE,
        ENTER, ISEND, LEAVE,
        ENTER, IRECV_REQUEST, LEAVE,
        ENTER, LEAVE,
        ENTER, ISEND_COMPLETE, IRECV, LEAVE,
        ENTER, LEAVE, LEAVE, LEAVE,
    ]
    assert recs[13][1] == leave and recs[14][1] == leave
    e = v.trace.events(0)
    # request table: isend, irecv request, isend complete, irecv
    assert list(e["req_id"]) == [1, 2, 1, 2]
    assert list(e["req_event"]) == [5, 8, 13, 14]
    # message table: isend and the completed irecv (size from the send)
    assert list(e["msg_event"]) == [5, 14]
    assert list(e["msg_tag"]) == [1, 2]
    assert list(e["msg_bytes"]) == [8, 16]
    assert list(e["msg_peer"]) == [1, 1]
    assert [e["ref"][i] for i in (5, 8, 13, 14)] == [0, 1, 2, 1]


def test_rendezvous_isend_completes_when_receiver_posts():
    prog = synth.Program(2)
    q = prog.rank(0).isend(1, size=500)
    prog.rank(0).wait(q)
    prog.rank(1).compute("work", 2.0).recv(0)
    v = run(prog, eager_limit=100, bandwidth=1000.0)  # x = 0.5
    init = T(L + O)
    t_r = init + T(2.0)
    assert v.span(0, "MPI_Isend") == (init, init + T(O))
    assert v.span(0, "MPI_Wait") == (init + T(O), t_r + T(L) + T(0.5) + T(O))
    assert v.span(1, "MPI_Recv") == (t_r, t_r + T(L) + T(0.5) + T(O))


def test_irecv_rendezvous_arrival_uses_post_time():
    prog = synth.Program(2)
    q = prog.rank(1).irecv(0)
    prog.rank(1).compute("work", 3.0).wait(q)
    prog.rank(0).compute("late", 1.0).ssend(1)
    v = run(prog)
    init = T(L + O)
    t_s = init + T(1.0)
    # ssend: max(t_s, post) + L + o; the irecv completes at max(t_s, post) + L
    assert v.span(0, "MPI_Ssend") == (t_s, t_s + T(L) + T(O))
    t_w = init + T(O) + T(3.0)
    assert v.span(1, "MPI_Wait") == (t_w, t_w + T(O))


# ---- collectives ------------------------------------------------------------

# enter times of ranks 0..3 are init + D[i]
D = [3.0, 1.0, 2.0, 0.5]


def _collective_leaves(name, root=None):
    prog = synth.Program(4)
    for i in range(4):
        r = prog.rank(i).compute("work", D[i])
        if root is None:
            getattr(r, name)(size=8) if name != "barrier" else r.barrier()
        else:
            getattr(r, name)(root=root, size=8)
    v = run(prog)
    region = "MPI_" + name.capitalize()
    init = T(L + O)
    spans = [v.span(i, region) for i in range(4)]
    assert [s[0] for s in spans] == [init + T(d) for d in D]
    return v, [s[1] - init for s in spans]


@pytest.mark.parametrize("name", ["barrier", "allreduce", "alltoall", "allgather"])
def test_synchronizing_collectives(name):
    v, leaves = _collective_leaves(name)
    assert leaves == [T(3.0) + T(L) + T(O)] * 4
    e = v.trace.events(2)
    op = {"barrier": 0, "allreduce": 11, "alltoall": 8, "allgather": 6}[name]
    assert list(e["coll_op"]) == [op]
    assert list(e["coll_root"]) == [2**32 - 1]
    n = 0 if name == "barrier" else 4 * 8
    assert list(e["coll_sent"]) == [n] and list(e["coll_received"]) == [n]


@pytest.mark.parametrize("name", ["bcast", "scatter"])
def test_one_to_all_collectives(name):
    v, leaves = _collective_leaves(name, root=2)
    t_root = T(2.0)
    assert leaves == [
        max(T(3.0), t_root + T(L)) + T(O),
        max(T(1.0), t_root + T(L)) + T(O),
        t_root + T(O),
        max(T(0.5), t_root + T(L)) + T(O),
    ]
    assert leaves == [T(3.25), T(2.75), T(2.25), T(2.75)]
    for i in range(4):
        e = v.trace.events(i)
        assert list(e["coll_root"]) == [2]
        assert list(e["coll_op"]) == [1 if name == "bcast" else 4]
        assert list(e["coll_sent"]) == [32 if i == 2 else 0]
        assert list(e["coll_received"]) == [8]


@pytest.mark.parametrize("name", ["reduce", "gather"])
def test_all_to_one_collectives(name):
    v, leaves = _collective_leaves(name, root=1)
    assert leaves == [T(3.0) + T(O), T(3.0) + T(L) + T(O), T(2.0) + T(O), T(0.5) + T(O)]
    for i in range(4):
        e = v.trace.events(i)
        assert list(e["coll_root"]) == [1]
        assert list(e["coll_op"]) == [12 if name == "reduce" else 2]
        assert list(e["coll_sent"]) == [8]
        assert list(e["coll_received"]) == [32 if i == 1 else 0]


def test_scan():
    v, leaves = _collective_leaves("scan")
    # prefix maxima of D = [3, 1, 2, 0.5] are all 3
    assert leaves == [T(3.0) + T(L) + T(O)] * 4
    prog = synth.Program(4)
    for i, d in enumerate([2.0, 0.5, 3.0, 1.0]):
        prog.rank(i).compute("work", d).scan(size=4)
    v = run(prog)
    init = T(L + O)
    assert [v.span(i, "MPI_Scan")[1] - init for i in range(4)] == [
        T(2.0) + T(L) + T(O), T(2.0) + T(L) + T(O), T(3.0) + T(L) + T(O), T(3.0) + T(L) + T(O)]
    e = v.trace.events(1)
    assert list(e["coll_op"]) == [14]
    assert list(e["coll_sent"]) == [3 * 4] and list(e["coll_received"]) == [2 * 4]


def test_collective_record_sequence():
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).bcast(root=1, size=4)
    prog.rank(1).bcast(root=1, size=4)
    v = run(prog)
    recs = v.records(0)
    i = [p for _, _, p in recs].index("main/MPI_Bcast")
    init = T(L + O)
    t0 = init + T(1.0)
    assert recs[i:i + 4] == [(ENTER, t0, "main/MPI_Bcast"), (COLL_BEGIN, t0, None), (COLL_END, t0 + T(O), None),
                             (LEAVE, t0 + T(O), "main/MPI_Bcast")]
    e = v.trace.events(0)
    assert list(e["coll_event"]) == [i + 2]
    assert list(e["coll_comm"]) == [0]


def test_subcommunicator():
    prog = synth.Program(4)
    sub = prog.comm([3, 1, 2])  # comm ranks 0, 1, 2 are world ranks 3, 1, 2
    assert sub.size == 3 and sub.rank_of(3) == 0 and sub.rank_of(0) is None
    delays = {3: 1.0, 1: 3.0, 2: 2.0}
    for w, d in delays.items():
        prog.rank(w).compute("work", d).bcast(root=1, size=8, comm=sub).scan(size=1, comm=sub)
    prog.rank(3).send(2, tag=7, size=5, comm=sub)  # to comm rank 2 = world rank 2
    prog.rank(2).recv(0, tag=7, comm=sub)
    prog.rank(0).compute("alone", 0.5)
    v = run(prog)
    init = T(L + O)
    t = {w: init + T(d) for w, d in delays.items()}
    # bcast rooted at comm rank 1 = world rank 1
    t_root = t[1]
    bcast = {w: v.span(w, "MPI_Bcast") for w in delays}
    assert bcast[1] == (t_root, t_root + T(O))
    assert bcast[3] == (t[3], max(t[3], t_root + T(L)) + T(O))
    assert bcast[2] == (t[2], max(t[2], t_root + T(L)) + T(O))
    # scan in communicator order 3, 1, 2
    enter = {w: bcast[w][1] for w in delays}
    scan = {w: v.span(w, "MPI_Scan")[1] for w in delays}
    assert scan[3] == enter[3] + T(L) + T(O)
    assert scan[1] == max(enter[3], enter[1]) + T(L) + T(O)
    assert scan[2] == max(enter.values()) + T(L) + T(O)
    # rank 0 does not take part
    assert v.spans(0, "MPI_Bcast") == []
    # records refer to the sub-communicator (trace communicator 2) and comm ranks
    e3, e2 = v.trace.events(3), v.trace.events(2)
    assert list(e3["coll_comm"]) == [2, 2] and list(e3["coll_root"]) == [1, 2**32 - 1]
    assert list(e3["msg_comm"]) == [2] and list(e3["msg_peer"]) == [2]
    assert list(e2["msg_comm"]) == [2] and list(e2["msg_peer"]) == [0] and list(e2["msg_bytes"]) == [5]
    assert list(e3["coll_sent"]) == [0, 3] and list(e3["coll_received"]) == [8, 1]


def test_init_and_finalize_synchronize():
    prog = synth.Program(3)
    prog.rank(1).compute("work", 5.0)
    v = run(prog)
    for i in range(3):
        assert v.span(i, "MPI_Init") == (0, T(L + O))
        t_fin = T(L + O) + (T(5.0) if i == 1 else 0)
        assert v.span(i, "MPI_Finalize") == (t_fin, T(L + O) + T(5.0) + T(L + O))


# ---- errors -----------------------------------------------------------------


def test_unmatched_receive():
    prog = synth.Program(2)
    prog.rank(1).compute("x", 1.0).recv(0, tag=5)
    with pytest.raises(TraceError, match=r"rank 1, operation 1 \(MPI_Recv.*no matching send"):
        prog.run()


def test_unmatched_send():
    prog = synth.Program(2)
    prog.rank(0).send(1, tag=3)
    prog.rank(1).recv(0, tag=4)
    with pytest.raises(TraceError, match=r"rank 0, operation 0 \(MPI_Send.*no matching receive"):
        prog.run()


def test_collective_missing_a_member():
    prog = synth.Program(3)
    prog.rank(0).barrier()
    prog.rank(1).compute("x", 1.0).barrier()
    with pytest.raises(TraceError, match=r"rank 0, operation 0 \(MPI_Barrier.*no counterpart on rank 2"):
        prog.run()


def test_collectives_in_different_orders():
    prog = synth.Program(2)
    prog.rank(0).bcast(root=0).reduce(root=0)
    prog.rank(1).reduce(root=0).bcast(root=0)
    with pytest.raises(TraceError, match=r"rank 1, operation 0 \(MPI_Reduce.*rank 0, operation 0 \(MPI_Bcast"):
        prog.run()


def test_collective_with_different_roots():
    prog = synth.Program(2)
    prog.rank(0).bcast(root=0)
    prog.rank(1).bcast(root=1)
    with pytest.raises(TraceError, match=r"rank 1, operation 0 .*root 1"):
        prog.run()


def test_wait_on_unknown_request():
    prog = synth.Program(2)
    prog.rank(0).compute("x", 1.0).wait(7)
    with pytest.raises(TraceError, match=r"rank 0, operation 1 \(MPI_Wait.*request 7 is unknown"):
        prog.run()


def test_wait_twice_and_foreign_request():
    prog = synth.Program(2)
    q = prog.rank(0).isend(1)
    prog.rank(0).wait(q).wait(q)
    prog.rank(1).recv(0)
    with pytest.raises(TraceError, match=r"rank 0, operation 2 .*already completed"):
        prog.run()
    prog = synth.Program(2)
    q = prog.rank(0).isend(1)
    prog.rank(0).wait(q)
    prog.rank(1).recv(0).wait(q)
    with pytest.raises(TraceError, match=r"rank 1, operation 1 .*started by rank 0"):
        prog.run()



def test_request_left_open_at_finalize():
    # MPI requires all requests completed before MPI_Finalize; an isend
    # never waited for would leave its message without a completion
    prog = synth.Program(2)
    prog.rank(0).compute("x", 1.0)
    prog.rank(0).isend(1, tag=3)
    prog.rank(1).recv(0, tag=3)
    with pytest.raises(TraceError, match=r"rank 0, MPI_Finalize: request 1 of rank 0, operation 1 "
                       r"\(MPI_Isend to rank 1, tag 3.*never completed"):
        prog.run()
    prog = synth.Program(2)
    q = prog.rank(1).irecv(0)
    prog.rank(1).irecv(0, tag=1)
    prog.rank(1).wait(q)
    prog.rank(0).send(1).send(1, tag=1)
    with pytest.raises(TraceError, match=r"rank 1, MPI_Finalize: request 2 of rank 1, operation 1 "
                       r"\(MPI_Irecv from rank 0, tag 1"):
        prog.run()

def test_deadlock_is_reported_not_hung():
    prog = synth.Program(2)
    prog.rank(0).ssend(1).recv(1)
    prog.rank(1).ssend(0).recv(0)
    with pytest.raises(TraceError, match=r"deadlock.*rank 0, operation 0 \(MPI_Ssend"):
        prog.run()
    # eager sends do not deadlock
    prog = synth.Program(2)
    prog.rank(0).send(1).recv(1)
    prog.rank(1).send(0).recv(0)
    prog.run()
    # a cycle of receives
    prog = synth.Program(3)
    for i in range(3):
        prog.rank(i).recv((i + 1) % 3).send((i + 2) % 3)
    with pytest.raises(TraceError, match="deadlock: 3 rank"):
        prog.run()
    # collectives on two communicators in crossed order
    prog = synth.Program(2)
    pair = prog.comm([0, 1])
    prog.rank(0).barrier().barrier(comm=pair)
    prog.rank(1).barrier(comm=pair).barrier()
    with pytest.raises(TraceError, match="deadlock"):
        prog.run()


def test_bad_arguments_raise_value_error():
    prog = synth.Program(2)
    other = synth.Program(2)
    with pytest.raises(ValueError):
        prog.rank(2)
    with pytest.raises(ValueError):
        prog.rank(-1)
    with pytest.raises(ValueError):
        prog.rank(0).send(2)
    with pytest.raises(ValueError):
        prog.rank(0).compute("x", -1.0)
    with pytest.raises(ValueError):
        prog.rank(0).compute("x", float("nan"))
    with pytest.raises(ValueError):
        prog.rank(0).barrier(comm=other.world)
    with pytest.raises(ValueError):
        prog.rank(0).send(1, size=-1)
    with pytest.raises(ValueError):
        prog.rank(0).send(1, tag=-1)
    with pytest.raises(ValueError):
        prog.rank(0).bcast(root=5)
    with pytest.raises(ValueError):
        prog.rank(0).barrier(comm=prog.comm([1]))  # not a member
    with pytest.raises(ValueError):
        prog.comm([0, 0])
    with pytest.raises(ValueError):
        prog.comm([3])
    with pytest.raises(ValueError):
        prog.cart((3, 3))
    with pytest.raises(ValueError):
        prog.rank(0).compute("MPI_Send", 1.0)
    with pytest.raises(ValueError):
        synth.Program(0)
    with pytest.raises(ValueError):
        prog.run(latency=-1.0)
    with pytest.raises(ValueError):
        prog.run(bandwidth=0)
    # nothing half-added by the failed calls
    assert len(prog.rank(0)) == 0


def test_core_rejects_malformed_packed_programs():
    prog = synth.Program(2)
    prog.rank(0).send(1)
    prog.rank(1).recv(0)
    packed = prog.pack()
    params = dict(latency=0.0, bandwidth=0.0, eager_limit=10, overhead=0.0, resolution=RES)
    bad = dict(packed)
    bad["ops"] = packed["ops"].copy()
    bad["ops"][0, 1] = 9  # peer outside the world
    with pytest.raises(ValueError, match="peer rank 9"):
        _core.synth_run(**bad, **params)
    bad = dict(packed)
    bad["rank_ptr"] = np.array([0, 5, 2])
    with pytest.raises(ValueError):
        _core.synth_run(**bad, **params)
    bad = dict(packed)
    bad["ops"] = packed["ops"].copy()
    bad["ops"][0, 0] = 99
    with pytest.raises(ValueError, match="unknown operation kind"):
        _core.synth_run(**bad, **params)
    _core.synth_run(**packed, **params)


# ---- scale ------------------------------------------------------------------


def test_scale_smoke():
    n = 2000
    prog = synth.Program(n)
    for i in range(n):
        r = prog.rank(i)
        r.compute("work", 0.001 * (i % 7))
        q = [r.isend((i + 1) % n, size=64), r.irecv((i - 1) % n)]
        r.waitall(q)
        r.allreduce(size=8)
        if i % 2 == 0:
            r.send(i + 1, tag=1, size=100_000)  # rendezvous
        else:
            r.recv(i - 1, tag=1)
    start = time.perf_counter()
    trace = prog.run(latency=1e-6, bandwidth=1e9, mpi_overhead=1e-7)
    elapsed = time.perf_counter() - start
    assert trace.n_locations == n
    assert trace.n_events == n * (8 + 2 + 3 + 3 + 4 + 4 + 3)
    assert elapsed < 10.0
    # everybody leaves the allreduce at the same time: the slowest enter + L + o
    v = View(trace._core)
    leaves = {v.span(i, "MPI_Allreduce")[1] for i in (0, 1, n // 2, n - 1)}
    assert len(leaves) == 1


def test_progress_callback_and_events_match_definitions():
    prog = synth.Program(4)
    for i in range(4):
        for _ in range(100_000):
            prog.rank(i).compute("w", 1e-6)
    seen = []
    trace = prog.run(progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert trace.n_events == 4 * (200_000 + 8)
    assert seen and all(stage == "synth" for stage, _, _ in seen)
    assert seen[-1][1] == seen[-1][2] == trace.n_events


def test_progress_callback_can_interrupt():
    prog = synth.Program(2)
    for _ in range(600_000):
        prog.rank(0).compute("w", 1e-6)

    def stop(stage, done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prog.run(progress=stop)
