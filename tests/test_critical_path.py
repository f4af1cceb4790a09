"""Critical path (seed 001, sections II-A to II-D): hand-worked small
programs and invariants on hundreds of random programs.

Part 1 works out the critical path of small synthetic programs by hand
from the timing model in the docstring of waitscope/synth.py.  The path
is followed backwards from the latest Enter of MPI_Finalize (ties: the
lowest location; MPI_Finalize itself is never on the path, as in Scalasca
2.6: the program's end is where the last rank is done with its work) and
jumps, at every wait state of its current owner, to the location that
caused the wait, at the moment the waiting ended (Late Sender: the send's
enter; Late Receiver: the receive's post; barrier, N-to-N and N-to-1: the
last enter; 1-to-N: the root's enter).  Scans never move the path (their
whole time stays with the owner, as in Scalasca 2.6), nor does MPI_Init,
where the path begins (at its Enter).  Each test states which location
owns which interval.  Unless said otherwise latency L = 0.25 s,
mpi_overhead 0 and 1000 ticks/s, so that every time is a multiple of 1/4 s
(exact in binary); MPI_Init then takes [0, L] on every rank.

Critical-path imbalance (section II-C): iota(i) = max(dcp(i) - avg(i), 0)
with avg(i) the activity (time minus the wait states) in i averaged over
all processes.

Part 2 checks invariants of the path on random deadlock-free programs
against wait intervals rebuilt from the trace alone.
"""
from __future__ import annotations

import collections
import functools
import random

import numpy as np
import pytest

import waitscope
from waitscope import synth
from conftest import relative_names

RES = 1000
L = 0.25
TOL = 1e-12


# ---- helpers -----------------------------------------------------------------


def analyze(trace: waitscope.Trace, **kw) -> waitscope.AnalysisResult:
    r = trace.analyze(critical_path=True, **kw)
    assert list(r.location_ranks) == list(range(r.n_locations))
    return r


def path(r: waitscope.AnalysisResult) -> list:
    """The segments as (location, call path name, start, end)."""
    names = relative_names(r)
    return [(int(s["location"]), names[int(s["callpath"])] if s["callpath"] >= 0 else None,
             float(s["start"]), float(s["end"])) for s in r.critical_path.segments]


def expect_path(r: waitscope.AnalysisResult, expected: list) -> None:
    got = path(r)
    assert [g[:2] for g in got] == [e[:2] for e in expected], got
    np.testing.assert_allclose([g[2:] for g in got], [e[2:] for e in expected], rtol=0, atol=TOL, err_msg=str(got))
    cp = r.critical_path
    assert cp.start == pytest.approx(expected[0][2], abs=TOL)
    assert cp.end == pytest.approx(expected[-1][3], abs=TOL)
    assert cp.length == pytest.approx(cp.end - cp.start, abs=TOL)
    # the profile is the path per (call path, location); nothing runs outside main here
    assert r.total("critical_path") == pytest.approx(cp.length, abs=TOL)
    # conservation of the performance impact (derived.c: every location's
    # activity plus its headroom, the rest of the path's length)
    assert r.total("performance_impact") == pytest.approx(impact_bound(r), abs=1e-9)


def impact_bound(r: waitscope.AnalysisResult) -> float:
    """Sum over locations of max(path length, activity): the headroom
    fills each location's activity up to the path's length; a location
    whose activity exceeds it (MPI_Finalize's own time lies after the
    path's end) has no headroom."""
    act = (r.get("critical_path_activities") + r.get("non_critical_path_activities")).sum(axis=0)
    return float(np.maximum(act, r.critical_path.length).sum())


def expect_cells(r: waitscope.AnalysisResult, metric: str, cells: dict) -> None:
    """`metric` is {(call path, location): value} and 0 everywhere else."""
    want = np.zeros_like(r.get(metric))
    for (cp, loc), v in cells.items():
        want[r.callpath_index(cp), loc] = v
    got = r.get(metric)
    bad = np.argwhere(np.abs(got - want) > 1e-9)
    assert len(bad) == 0, {(r.callpath_names[c], int(l)): (float(got[c, l]), float(want[c, l])) for c, l in bad}


def expect_imbalance(r: waitscope.AnalysisResult, per_callpath: dict) -> None:
    """Critical-path imbalance per call path (0 for the call paths not named)."""
    want = np.zeros(len(r.callpath_names))
    for cp, v in per_callpath.items():
        want[r.callpath_index(cp)] = v
    np.testing.assert_allclose(r.critical_path.imbalance, want, rtol=0, atol=1e-9,
                               err_msg=str(dict(zip(r.callpath_names, r.critical_path.imbalance))))
    np.testing.assert_allclose(r.by_callpath("critical_path_imbalance"), want, rtol=0, atol=1e-9)


# ---- part 1: hand-worked programs -----------------------------------------------


def test_late_sender_chain():
    # L = 0 (MPI_Init and MPI_Finalize take no time), eager messages.
    #   rank 0: f [0,3], g [3,5], MPI_Send to 1 at 5, MPI_Finalize from 5
    #   rank 1: f [0,2], x [2,3], MPI_Recv [3,5] (Late Sender: waits [3,5]),
    #           f [5,6], MPI_Send to 2 at 6, MPI_Finalize from 6
    #   rank 2: f [0,2], x [2,3], MPI_Recv [3,6] (Late Sender: waits [3,6]),
    #           h [6,6.5], MPI_Finalize [6.5,6.5]
    # Backwards: the path ends on location 0, which waited in MPI_Finalize
    # [5,6.5] for rank 2 (the last to enter) -> rank 2 owns [6,6.5] (h); its
    # receive waited for the send at 6 -> rank 1 owns [5,6] (f); its receive
    # waited for the send at 5 -> rank 0 owns [0,5] (f, g).
    prog = synth.Program(3)
    prog.rank(0).compute("f", 3).compute("g", 2).send(1, tag=1, size=8)
    prog.rank(1).compute("f", 2).compute("x", 1).recv(0, tag=1).compute("f", 1).send(2, tag=2, size=8)
    prog.rank(2).compute("f", 2).compute("x", 1).recv(1, tag=2).compute("h", 0.5)
    r = analyze(prog.run(latency=0.0, resolution=RES))
    expect_path(r, [(0, "main/f", 0, 3), (0, "main/g", 3, 5), (1, "main/f", 5, 6), (2, "main/h", 6, 6.5)])
    expect_cells(r, "critical_path", {("main/f", 0): 3, ("main/g", 0): 2, ("main/f", 1): 1, ("main/h", 2): 0.5})
    # f: 4 on the path, activity 3+3+2 -> avg 8/3; g: 2 vs 2/3; h: 0.5 vs 1/6;
    # x is not on the path
    expect_imbalance(r, {"main/f": 4 / 3, "main/g": 4 / 3, "main/h": 1 / 3})
    # split over the path's locations in proportion to their share of the path
    expect_cells(r, "critical_path_imbalance",
                 {("main/f", 0): 1, ("main/f", 1): 1 / 3, ("main/g", 0): 4 / 3, ("main/h", 2): 1 / 3})


def test_barrier_with_a_late_arrival():
    #   MPI_Init [0,0.25] everywhere; work: ranks 0,1,3 [0.25,1.25], rank 2 [0.25,3.25]
    #   MPI_Barrier: everybody leaves at 3.25 + L = 3.5 (ranks 0,1,3 wait [1.25,3.25])
    #   post: ranks 0-2 [3.5,4], rank 3 [3.5,4.5]; MPI_Finalize: rank 3 enters last (4.5)
    # Backwards from 4.5 on rank 3: rank 3 owns post [3.5,4.5] and the barrier after its wait
    # [3.25,3.5] -> rank 2 (the last to enter the barrier) owns work
    # [0.25,3.25] and MPI_Init [0,0.25] (nobody waited there).
    prog = synth.Program(4)
    for rank, (work, post) in enumerate([(1, 0.5), (1, 0.5), (3, 0.5), (1, 1.0)]):
        prog.rank(rank).compute("work", work).barrier().compute("post", post)
    r = analyze(prog.run(latency=L, resolution=RES))
    expect_path(r, [(2, "main/MPI_Init", 0, 0.25), (2, "main/work", 0.25, 3.25), (3, "main/MPI_Barrier", 3.25, 3.5),
                    (3, "main/post", 3.5, 4.5)])
    expect_cells(r, "critical_path", {("main/MPI_Init", 2): 0.25, ("main/work", 2): 3, ("main/MPI_Barrier", 3): 0.25,
                                      ("main/post", 3): 1})
    # work: 3 vs avg 6/4; post: 1 vs 2.5/4; barrier, Init: every
    # rank spends L outside its wait state, as much as on the path
    expect_imbalance(r, {"main/work": 1.5, "main/post": 0.375})


def test_bcast_with_a_late_root():
    #   MPI_Init [0,0.25]; work: rank 0 [0.25,1.25], root 1 [0.25,4.25], rank 2 [0.25,2.25]
    #   MPI_Bcast (root 1): the root leaves at 4.25, the others at 4.25 + L = 4.5
    #   (Late Broadcast: rank 0 waits [1.25,4.25], rank 2 [2.25,4.25])
    #   post 1 s: rank 0 [4.5,5.5], rank 1 [4.25,5.25], rank 2 [4.5,5.5]
    #   MPI_Finalize: ranks 0 and 2 enter last (5.5): the path ends on location 0
    # Backwards: location 0 owns post [4.5,5.5] and its MPI_Bcast after the wait [4.25,4.5] -> the root
    # owns work [0.25,4.25] and MPI_Init.
    prog = synth.Program(3)
    for rank, work in enumerate([1, 4, 2]):
        prog.rank(rank).compute("work", work).bcast(root=1, size=8).compute("post", 1)
    r = analyze(prog.run(latency=L, resolution=RES))
    expect_path(r, [(1, "main/MPI_Init", 0, 0.25), (1, "main/work", 0.25, 4.25), (0, "main/MPI_Bcast", 4.25, 4.5),
                    (0, "main/post", 4.5, 5.5)])
    expect_cells(r, "critical_path", {("main/MPI_Init", 1): 0.25, ("main/work", 1): 4, ("main/MPI_Bcast", 0): 0.25,
                                      ("main/post", 0): 1})
    # work: 4 vs 7/3; MPI_Bcast: 0.25 vs (0.25 + 0 + 0.25)/3
    expect_imbalance(r, {"main/work": 5 / 3, "main/MPI_Bcast": 1 / 12})


def test_reduce_whose_root_waits():
    #   MPI_Init [0,0.25]; work: root 0 [0.25,1.25], rank 1 [0.25,2.25], rank 2 [0.25,4.25]
    #   MPI_Reduce (root 0): the root leaves at 4.25 + L = 4.5 (Early Reduce:
    #   waits [1.25,4.25]); ranks 1 and 2 leave at once (2.25, 4.25)
    #   post on the root [4.5,6.5]; MPI_Finalize: the root enters last (6.5)
    # Backwards: location 0 owns post and MPI_Reduce [4.25,4.5] ->
    # rank 2, the last to enter, owns work [0.25,4.25] and MPI_Init.
    prog = synth.Program(3)
    for rank, work in enumerate([1, 2, 4]):
        prog.rank(rank).compute("work", work).reduce(root=0, size=8)
    prog.rank(0).compute("post", 2)
    r = analyze(prog.run(latency=L, resolution=RES))
    expect_path(r, [(2, "main/MPI_Init", 0, 0.25), (2, "main/work", 0.25, 4.25), (0, "main/MPI_Reduce", 4.25, 4.5),
                    (0, "main/post", 4.5, 6.5)])
    expect_cells(r, "critical_path", {("main/MPI_Init", 2): 0.25, ("main/work", 2): 4, ("main/MPI_Reduce", 0): 0.25,
                                      ("main/post", 0): 2})
    # work: 4 vs 7/3; MPI_Reduce: 0.25 vs 0.25/3; post: 2 vs 2/3
    expect_imbalance(r, {"main/work": 5 / 3, "main/MPI_Reduce": 1 / 6, "main/post": 4 / 3})
    # Imbalance costs (section II-D.3).  Derived partitions: rank 0 (it runs
    # post) and ranks {1, 2}.  Path length 6.5; activities (time - waiting):
    #   rank 0: Init .25, work 1, Reduce .25, post 2, Finalize .25 = 3.75,
    #           headroom 2.75; excess: work 3 -> work +2.75 (intra)
    #   rank 1: Init .25, work 2, Finalize .25 = 2.5, headroom 4; excess:
    #           work 2, Reduce .25, post 2 (sum 4.25), scaled by 4/4.25 ->
    #           work, Reduce (intra), post (inter: no rank of the partition runs post)
    #   rank 2: Init .25, work 4, Finalize .25 = 4.5, headroom 2; excess:
    #           Reduce .25 (intra), post 2 (inter), scaled by 2/2.25
    cp = r.critical_path
    assert cp.partitions[1] == cp.partitions[2] != cp.partitions[0]
    work = 2.75 + 2 * 4 / 4.25
    reduce = 0.25 * 4 / 4.25 + 0.25 * 2 / 2.25
    post = 2 * 4 / 4.25 + 2 * 2 / 2.25
    expect_cells(r, "intra_partition_imbalance", {("main/work", 2): work, ("main/MPI_Reduce", 0): reduce})
    expect_cells(r, "inter_partition_imbalance", {("main/post", 0): post})
    assert r.total("critical_imbalance_impact") == pytest.approx(8.75)
    # 3.75 + 2.5 + 4.5 of activity + 8.75 of imbalance costs = 3 * 6.5
    assert r.total("performance_impact") == pytest.approx(19.5)



def test_partitions_of_many_ranks():
    # Derived partitions group the processes that run the same set of call
    # paths, each named by its first process: of 3,000 ranks, every third
    # (0, 3, 6, ...) also runs "post", so the partitions are 0 for those
    # and 1 for all others.  Every rank runs "work" for 1 s, so the ranks
    # that run post for 1 s more are the path's: their post time is 1 s
    # above the average activity (1/3 s), an imbalance of 2/3 s.
    n = 3000
    prog = synth.Program(n)
    for rank in range(n):
        prog.rank(rank).compute("work", 1).barrier()
        if rank % 3 == 0:
            prog.rank(rank).compute("post", 1)
    r = analyze(prog.run(latency=L, resolution=RES))
    want = np.where(np.arange(n) % 3 == 0, 0, 1)
    assert np.array_equal(np.asarray(r.critical_path.partitions), want)
    expect_imbalance(r, {"main/post": 2 / 3})


def test_scan():
    #   MPI_Init [0,0.25]; work: rank 0 [0.25,3.25], rank 1 [0.25,1.25], rank 2 [0.25,2.25]
    #   MPI_Scan: member i leaves at max(enters of 0..i) + L = 3.5 for all
    #   (Early Scan: rank 1 waits [1.25,3.25], rank 2 [2.25,3.25], both for rank 0)
    #   post on rank 2 [3.5,4.5]; MPI_Finalize: rank 2 enters last (4.5)
    # Backwards from 4.5 on rank 2: post [3.5,4.5], then all of MPI_Scan
    # [2.25,3.5] (scans never move the path, as in Scalasca 2.6: the Early
    # Scan [2.25,3.25] is on it), work [0.25,2.25] and MPI_Init.
    prog = synth.Program(3)
    for rank, work in enumerate([3, 1, 2]):
        prog.rank(rank).compute("work", work).scan(size=8)
    prog.rank(2).compute("post", 1)
    r = analyze(prog.run(latency=L, resolution=RES))
    expect_path(r, [(2, "main/MPI_Init", 0, 0.25), (2, "main/work", 0.25, 2.25), (2, "main/MPI_Scan", 2.25, 3.5),
                    (2, "main/post", 3.5, 4.5)])
    expect_cells(r, "critical_path", {("main/MPI_Init", 2): 0.25, ("main/work", 2): 2, ("main/MPI_Scan", 2): 1.25,
                                      ("main/post", 2): 1})
    # work: 2 vs 6/3; post 1 vs 1/3; MPI_Scan (waiting at a scan is activity
    # here): 1.25 vs (0.25 + 2.25 + 1.25)/3
    expect_imbalance(r, {"main/post": 2 / 3})


def test_isend_irecv_ring_with_waitall():
    #   MPI_Init [0,0.25]; work: rank 0 [0.25,1.25], rank 1 [0.25,3.25], rank 2 [0.25,2.25]
    #   then MPI_Isend to r+1 and MPI_Irecv from r-1 (no time), MPI_Waitall:
    #     rank 0: message of rank 2 (sent 2.25) arrives 2.5: Waitall [1.25,2.5],
    #             Late Sender [1.25,2.25]
    #     rank 1: message of rank 0 arrived at 1.5: Waitall [3.25,3.25]
    #     rank 2: message of rank 1 (sent 3.25) arrives 3.5: Waitall [2.25,3.5],
    #             Late Sender [2.25,3.25]
    #   post 1 s: rank 0 [2.5,3.5], rank 1 [3.25,4.25], rank 2 [3.5,4.5]
    # Backwards from rank 2's MPI_Finalize at 4.5 (post [3.5,4.5], Waitall
    # [3.25,3.5]) -> rank 1 at 3.25 (its send) owns work and MPI_Init.
    prog = synth.Program(3)
    for rank, work in enumerate([1, 3, 2]):
        b = prog.rank(rank)
        b.compute("work", work)
        q1 = b.isend((rank + 1) % 3, tag=5, size=8)
        q2 = b.irecv((rank - 1) % 3, tag=5)
        b.waitall([q1, q2])
        b.compute("post", 1)
    r = analyze(prog.run(latency=L, resolution=RES))
    expect_path(r, [(1, "main/MPI_Init", 0, 0.25), (1, "main/work", 0.25, 3.25), (2, "main/MPI_Waitall", 3.25, 3.5),
                    (2, "main/post", 3.5, 4.5)])
    expect_cells(r, "critical_path", {("main/MPI_Init", 1): 0.25, ("main/work", 1): 3, ("main/MPI_Waitall", 2): 0.25,
                                      ("main/post", 2): 1})
    # work: 3 vs 2; MPI_Waitall: 0.25 vs (0.25 + 0 + 0.25)/3
    expect_imbalance(r, {"main/work": 1, "main/MPI_Waitall": 1 / 12})


def test_ssend_late_receiver_moves_the_path_to_the_receiver():
    #   MPI_Init [0,0.25]; rank 0: work [0.25,1.25], MPI_Ssend to 1 from 1.25;
    #   rank 1: work [0.25,3.25], MPI_Recv posted at 3.25.  The rendezvous
    #   completes at 3.25 + L: MPI_Ssend [1.25,3.5] (Late Receiver: waits
    #   [1.25,3.25]), MPI_Recv [3.25,3.5].  post [3.5,4.5] on both; both enter
    #   MPI_Finalize at 4.5: the path ends on location 0
    # Backwards: location 0 owns post and MPI_Ssend after its wait
    # [3.25,3.5]; then the path moves from the sender to the receiver at the
    # receive's post: rank 1 owns work [0.25,3.25] and MPI_Init.
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1).ssend(1, tag=0, size=8).compute("post", 1)
    prog.rank(1).compute("work", 3).recv(0, tag=0).compute("post", 1)
    r = analyze(prog.run(latency=L, resolution=RES))
    expect_path(r, [(1, "main/MPI_Init", 0, 0.25), (1, "main/work", 0.25, 3.25), (0, "main/MPI_Ssend", 3.25, 3.5),
                    (0, "main/post", 3.5, 4.5)])
    expect_cells(r, "critical_path", {("main/MPI_Init", 1): 0.25, ("main/work", 1): 3, ("main/MPI_Ssend", 0): 0.25,
                                      ("main/post", 0): 1})
    expect_imbalance(r, {"main/work": 1, "main/MPI_Ssend": 0.125})
    # the receive [3.25,3.5] is activity off the path, and so is MPI_Finalize
    # (never on the path): min(path time, activity) is critical, the rest not
    expect_cells(r, "non_critical_path_activities", {("main/MPI_Recv", 1): 0.25, ("main/MPI_Finalize", 0): 0.25,
                                                     ("main/MPI_Finalize", 1): 0.25})


def test_ssend_late_receiver_without_latency():
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1).ssend(1, tag=0, size=8)
    prog.rank(1).compute("work", 3).recv(0, tag=0)
    r = analyze(prog.run(latency=0.0, resolution=RES))
    assert r.total("mpi_latereceiver") == pytest.approx(2.0)
    expect_path(r, [(1, "main/work", 0, 3)])


@pytest.mark.parametrize("latency", [0.0, L])
def test_path_ends_on_the_last_rank(latency):
    # Rank 3 computes longest (5 s; the others 1, 2, 1): everybody else waits
    # for it in MPI_Finalize.  The path ends where rank 3 enters MPI_Finalize
    # (the latest Enter), at 5 + L; MPI_Finalize is not on it.
    prog = synth.Program(4)
    for rank, work in enumerate([1, 2, 1, 5]):
        prog.rank(rank).compute("work", work)
    r = analyze(prog.run(latency=latency, resolution=RES))
    if latency == 0:
        expect_path(r, [(3, "main/work", 0, 5)])
        expect_cells(r, "critical_path", {("main/work", 3): 5})
    else:
        expect_path(r, [(3, "main/MPI_Init", 0, L), (3, "main/work", L, 5 + L)])
        expect_cells(r, "critical_path", {("main/MPI_Init", 3): L, ("main/work", 3): 5})
    # work: 5 vs (1+2+1+5)/4
    expect_imbalance(r, {"main/work": 2.75})


@pytest.mark.parametrize("nranks", [4, 8])
def test_serialized_function(nranks):
    """Seed 001 section II-C: a function run by each process in turn.

    Every rank computes `init` 1 s, receives a token from rank r-1 (r > 0),
    runs `serial` for d = 2 s, passes the token to r+1 and computes
    `final` 1 s (L = 0).  Rank r runs `serial` in [1 + d r, 1 + d (r+1)]
    and waits for the token before (Late Sender [1, 1 + d r]).  Backwards
    from the end 1 + d P + 1, the path is `final` and `serial` on rank
    P-1, then `serial` on every rank down to 0, then rank 0's `init`.

    Every rank spends exactly d in `serial`: a per-process profile shows
    max - avg = 0, but the path contains P d of `serial`, so its
    critical-path imbalance is P d - d = (P - 1) d (6 s for P = 4, 14 s for
    P = 8).
    """
    P, d = nranks, 2.0
    prog = synth.Program(P)
    for rank in range(P):
        b = prog.rank(rank)
        b.compute("init", 1.0)
        if rank > 0:
            b.recv(rank - 1, tag=0)
        b.compute("serial", d)
        if rank < P - 1:
            b.send(rank + 1, tag=0, size=8)
        b.compute("final", 1.0)
    r = analyze(prog.run(latency=0.0, resolution=RES))
    expected = [(0, "main/init", 0, 1)] + [(k, "main/serial", 1 + d * k, 1 + d * (k + 1)) for k in range(P)]
    expected.append((P - 1, "main/final", 1 + d * P, 2 + d * P))
    expect_path(r, expected)
    cells = {("main/init", 0): 1.0, ("main/final", P - 1): 1.0}
    cells.update({("main/serial", k): d for k in range(P)})
    expect_cells(r, "critical_path", cells)
    serial = r.get("time")[r.callpath_index("main/serial")]
    np.testing.assert_allclose(serial, d)
    assert serial.max() - serial.mean() == 0.0  # the profile sees no imbalance
    expect_imbalance(r, {"main/serial": (P - 1) * d})
    assert r.critical_path.imbalance[r.callpath_index("main/serial")] == pytest.approx(6.0 if P == 4 else 14.0)


# ---- part 2: invariants on random programs -------------------------------------------

EAGER = (64, 1024)


def random_program(rng: random.Random, eager: int) -> synth.Program:
    """A random deadlock-free program: rounds of computation on every rank
    followed by one communication step.

    Steps: disjoint pairs exchanging one message with MPI_Send or MPI_Ssend
    (sizes around the eager limit), a ring of MPI_Isend/MPI_Irecv to the
    neighbours completed by one MPI_Waitall, a collective on the world or
    on a sub-communicator (random root), or a scan.  Every message is
    received inside its round and only one rank of a pair sends, so no
    step can deadlock whatever the protocol.
    """
    n = rng.randint(2, 7)
    prog = synth.Program(n)
    comms = [None] + [prog.comm(sorted(rng.sample(range(n), rng.randint(2, n)))) for _ in range(rng.randint(0, 2))]

    def size() -> int:
        return rng.choice([0, 8, eager - 1, eager, eager + 1, 4 * eager + 3])

    for tag in range(rng.randint(2, 9)):
        for r in range(n):
            if rng.random() < 0.8:
                d = rng.choice([0.0, rng.uniform(0, 1e-3), rng.uniform(0, 3e-3)])
                prog.rank(r).compute(rng.choice(["a", "b", "c"]), d)
        kind = rng.choice(["pairs", "pairs", "ring", "collective", "collective", "scan"])
        if kind == "pairs":
            ranks = list(range(n))
            rng.shuffle(ranks)
            for a, b in zip(ranks[0::2], ranks[1::2]):
                getattr(prog.rank(a), rng.choice(["send", "ssend"]))(b, tag=tag, size=size())
                prog.rank(b).recv(a, tag=tag)
        elif kind == "ring":
            for r in range(n):
                rp = prog.rank(r)
                ops = [("isend", (r + 1) % n), ("irecv", (r - 1) % n)]
                rng.shuffle(ops)
                requests = [rp.isend(peer, tag=tag, size=size()) if op == "isend" else rp.irecv(peer, tag=tag)
                            for op, peer in ops]
                rng.shuffle(requests)
                if rng.random() < 0.3:
                    rp.compute("c", rng.uniform(0, 1e-3))
                rp.waitall(requests)
        else:
            comm = rng.choice(comms)
            members = comm.ranks if comm is not None else range(n)
            op = "scan" if kind == "scan" else rng.choice(
                ["barrier", "bcast", "scatter", "reduce", "gather", "allreduce", "alltoall", "allgather"])
            root = rng.randrange(len(members))
            for w in members:
                rp = prog.rank(w)
                if op == "barrier":
                    rp.barrier(comm=comm)
                elif op in ("bcast", "scatter", "reduce", "gather"):
                    getattr(rp, op)(root=root, size=8, comm=comm)
                else:
                    getattr(rp, op)(size=8, comm=comm)
    return prog


def _calls(trace: waitscope.Trace, loc: int):
    """Region instances [name, enter, leave] of a location and, per event,
    the instance it happens in (-1 outside any region)."""
    ev = trace.events(loc)
    names, region = trace.region_names, trace.callpath_region
    calls, stack = [], []
    owner = np.full(len(ev), -1)
    for i, (t, k, ref) in enumerate(zip(ev.time.tolist(), ev.kind.tolist(), ev.ref.tolist())):
        if k == 1:  # enter
            calls.append([names[region[ref]], t, None])
            stack.append(len(calls) - 1)
        elif k == 2:  # leave
            calls[stack.pop()][2] = t
        elif stack:
            owner[i] = stack[-1]
    return calls, owner


def wait_intervals(trace: waitscope.Trace, eager: int) -> list:
    """Per location, the intervals (start, end, what) in which it waited,
    rebuilt from the trace alone with the definitions of the wait states:

    * Late Sender at the receiver: [enter of the call completing the
      receive, min(send's enter, that call's leave)]
    * Late Receiver at the sender of a rendezvous message (MPI_Ssend or
      size > eager limit): [enter of the call completing the send,
      min(receive's post, that call's leave)]; what = ("LR", call, [calls
      of that call's Late Senders]); none where an MPI_Waitall or
      MPI_Waitsome also completes a receive that waited (Scalasca 2.6: the
      Late Sender is the call's wait state)
    * collectives (and MPI_Init / MPI_Finalize): [enter, min(reference,
      leave)] with reference the last enter (barrier, N-to-N, the root of
      an N-to-1), the root's enter (the others of a 1-to-N), the last enter
      among the members up to the waiting one (scan).
    """
    n = trace.n_locations
    comms = trace.communicators
    waits = [[] for _ in range(n)]
    sends, recvs = collections.defaultdict(list), collections.defaultdict(list)
    colls = collections.defaultdict(list)
    for loc in range(n):
        calls, owner = _calls(trace, loc)
        ev = trace.events(loc)
        kind = ev.kind
        req_of = dict(zip(ev.req_event.tolist(), ev.req_id.tolist()))
        req_events = collections.defaultdict(list)
        for e, q in zip(ev.req_event.tolist(), ev.req_id.tolist()):
            req_events[q].append(e)
        m = trace.messages(loc)
        for j, e in enumerate(m["event"].tolist()):
            call = calls[owner[e]]
            key = int(m["partner"][j]), int(m["comm"][j]), int(m["tag"][j])
            t = float(ev.time[e])
            if m["kind"][j] in ("send", "isend"):
                if m["kind"][j] == "send":
                    done = call
                else:  # the call holding the request's completion
                    done = calls[owner[next(x for x in req_events[req_of[e]] if x > e and kind[x] == 5)]]
                rendezvous = call[0] == "MPI_Ssend" or int(m["bytes"][j]) > eager
                sends[(loc,) + key].append((t, done, rendezvous))
            else:
                if m["kind"][j] == "recv":
                    post = call[1]
                else:  # posted at the MpiIrecvRequest of the same request
                    post = float(ev.time[[x for x in req_events[req_of[e]] if x < e and kind[x] == 6][-1]])
                recvs[(key[0], loc) + key[1:]].append((post, call))
        c = trace.collectives(loc)
        for j, e in enumerate(c["event"].tolist()):
            colls[int(c["comm"][j])].append((loc, c["op"][j], int(c["root"][j]), calls[owner[e]]))
        for call in calls:
            if call[0] in ("MPI_Init", "MPI_Finalize"):
                colls[call[0]].append((loc, call[0], -1, call))

    late_senders = collections.defaultdict(list)  # id(call) -> the call's Late Sender intervals
    for key, ss in sends.items():
        rr = recvs[key]
        assert len(rr) == len(ss)
        for (t_send, _, _), (_, rcall) in zip(ss, rr):
            if min(t_send, rcall[2]) > rcall[1]:
                waits[key[1]].append((rcall[1], min(t_send, rcall[2]), ("LS",)))
                late_senders[id(rcall)].append(min(t_send, rcall[2]))
    for key, ss in sends.items():
        for (_, done, rendezvous), (post, _) in zip(ss, recvs[key]):
            multi_with_ls = done[0] in ("MPI_Waitall", "MPI_Waitsome") and late_senders.get(id(done))
            if rendezvous and min(post, done[2]) > done[1] and not multi_with_ls:
                waits[key[0]].append((done[1], min(post, done[2]), ("LR", late_senders.get(id(done), []))))
    for ckey, items in colls.items():
        if isinstance(ckey, str):
            groups = [items]
        else:
            members = [int(x) for x in comms[ckey].locations]
            per = collections.defaultdict(list)
            for it in items:
                per[it[0]].append(it)
            groups = [[per[m][i] for m in members] for i in range(len(per[members[0]]))]
        for g in groups:
            enters = [it[3][1] for it in g]
            for idx, (loc, op, root, call) in enumerate(g):
                if op in ("bcast", "scatter"):
                    if idx == root:
                        continue
                    ref = enters[root]
                elif op in ("reduce", "gather"):
                    if idx != root:
                        continue
                    ref = max(enters)
                elif op == "scan":
                    ref = max(enters[: idx + 1])
                else:  # barrier, N-to-N, MPI_Init, MPI_Finalize
                    ref = max(enters)
                if min(ref, call[2]) > call[1]:
                    waits[loc].append((call[1], min(ref, call[2]), (op,)))
    return waits


def finalize_enters(trace: waitscope.Trace) -> list:
    """Per location, the time it enters MPI_Finalize."""
    out = []
    for loc in range(trace.n_locations):
        calls, _ = _calls(trace, loc)
        out.append(next(c[1] for c in calls if c[0] == "MPI_Finalize"))
    return out


def callpath_steps(trace: waitscope.Trace, loc: int):
    """Event times and the call path active after each event (-1: none)."""
    ev = trace.events(loc)
    parent = trace.callpath_parent
    cur, after = -1, np.empty(len(ev), dtype=np.int64)
    for i, (k, ref) in enumerate(zip(ev.kind.tolist(), ev.ref.tolist())):
        if k == 1:
            cur = ref
        elif k == 2:
            cur = int(parent[ref])
        after[i] = cur
    return np.asarray(ev.time), after


N_RANDOM = 400


@functools.lru_cache(maxsize=1)
def random_cases():
    """(program index, params, trace, result, overlaps) for N_RANDOM random programs.

    overlaps: every (segment, wait interval) whose interiors intersect by
    more than 1e-12 s.
    """
    rng = random.Random(4242)
    cases = []
    for i in range(N_RANDOM):
        eager = rng.choice(EAGER)
        prog = random_program(rng, eager)
        # latency > 0: with latency, transfer time and overhead all 0 a
        # rendezvous send leaves exactly at the receive's post and its wait is
        # no Late Receiver (see test_ssend_late_receiver_without_latency)
        params = dict(latency=rng.choice([1e-6, 1e-5, 3e-4]), mpi_overhead=rng.choice([0.0, 2e-6]),
                      bandwidth=rng.choice([None, 1e7]), eager_limit=eager)
        trace = prog.run(**params)
        r = trace.analyze(critical_path=True)
        waits = wait_intervals(trace, eager)
        overlaps = []
        for s in r.critical_path.segments:
            for a, b, what in waits[int(s["location"])]:
                if what[0] == "scan":
                    continue  # scans never move the path: their waiting stays on it
                if min(b, s["end"]) - max(a, s["start"]) > 1e-12:
                    overlaps.append((s, (a, b, what)))
        cases.append((i, params, trace, r, overlaps))
    return cases


def test_random_programs_path_invariants():
    n_jumps = 0
    for i, params, trace, r, overlaps in random_cases():
        cp = r.critical_path
        seg = cp.segments
        where = f"random program {i} ({params})"
        assert len(seg) > 0, where
        # contiguous in time, from the start of the program to its end
        assert seg["start"][0] == pytest.approx(cp.start, abs=1e-12), where
        assert seg["end"][-1] == pytest.approx(cp.end, abs=1e-12), where
        gaps = np.abs(seg["start"][1:] - seg["end"][:-1])
        assert not np.any(gaps > 1e-12), (where, seg[np.argmax(gaps):np.argmax(gaps) + 2])
        assert np.all(seg["end"] > seg["start"]), where
        # the path runs from MPI_Init's Enter (0 for every synthetic rank) to
        # the latest Enter of MPI_Finalize (was: to the end of the trace; the
        # path now ends where Scalasca 2.6 ends it, MPI_Finalize is not on it)
        assert cp.start == 0.0, where
        assert cp.end == pytest.approx(max(finalize_enters(trace)), rel=0, abs=1e-12), where
        assert cp.length == pytest.approx(cp.end - cp.start, rel=1e-9), where
        # all of it inside main, so the profile holds the whole path
        assert np.all(seg["callpath"] >= 0), where
        assert r.total("critical_path") == pytest.approx(cp.length, rel=1e-9), where
        # conservation of the performance impact
        assert r.total("performance_impact") == pytest.approx(impact_bound(r), rel=1e-9), where
        # critical-path imbalance: 0 <= iota(i) <= dcp(i)
        imb, dcp = cp.imbalance, cp.by_callpath
        assert np.all(imb >= 0) and np.all(r.get("critical_path_imbalance") >= 0), where
        assert np.all(imb <= dcp + 1e-12), where
        # every segment lies on one call path of its location
        for loc in np.unique(seg["location"]):
            times, after = callpath_steps(trace, int(loc))
            for s in seg[seg["location"] == loc]:
                inside = times[(times > s["start"]) & (times < s["end"])]
                cuts = np.concatenate(([s["start"]], inside, [s["end"]]))
                for lo, hi in zip(cuts[:-1], cuts[1:]):
                    if hi > lo:
                        active = after[np.searchsorted(times, (lo + hi) / 2, side="right") - 1]
                        assert active == s["callpath"], (where, s, r.callpath_names[active])
        # no wait state on the path
        assert not overlaps, (where, overlaps[:3])
        n_jumps += int(np.sum(seg["location"][1:] != seg["location"][:-1]))
    assert n_jumps > N_RANDOM  # the paths do move between locations


def test_random_programs_path_avoids_every_wait_state():
    hits = [(i, params, o) for i, params, trace, r, overlaps in random_cases() for o in overlaps]
    assert not hits, (len({h[0] for h in hits}), hits[:2])


def test_waitall_with_a_later_late_receiver():
    #   MPI_Init [0,0.25]; rank 0: work [0.25,1.25], MPI_Isend to 1 (rendezvous),
    #   MPI_Irecv from 2, MPI_Waitall from 1.25.  Rank 2: work [0.25,3.25],
    #   MPI_Send to 0 at 3.25 (eager, arrives 3.5).  Rank 1: work [0.25,5.25],
    #   MPI_Irecv from 0 posted at 5.25, MPI_Wait: the rendezvous completes
    #   at 5.5.  Rank 0's Waitall [1.25,5.5] waits for rank 2 until 3.25 (a
    #   Late Sender) and for rank 1 until 5.25; as in Scalasca 2.6 the Late
    #   Sender is the Waitall's wait state (no Late Receiver where a receive of
    #   the same call waited): the path comes from rank 2 and keeps the rest
    #   of the Waitall.
    prog = synth.Program(3)
    b = prog.rank(0)
    b.compute("work", 1)
    q1 = b.isend(1, tag=1, size=1000)
    q2 = b.irecv(2, tag=2)
    b.waitall([q1, q2])
    b = prog.rank(1)
    b.compute("work", 5)
    b.wait(b.irecv(0, tag=1))
    prog.rank(2).compute("work", 3).send(0, tag=2, size=8)
    r = analyze(prog.run(latency=L, eager_limit=100, resolution=RES))
    expect_path(r, [(2, "main/MPI_Init", 0, 0.25), (2, "main/work", 0.25, 3.25), (0, "main/MPI_Waitall", 3.25, 5.5)])
    assert r.get("mpi_latesender", "MPI_Waitall") == pytest.approx([2.0, 0.0, 0.0])
    assert r.total("mpi_latereceiver") == 0.0


def test_random_programs_path_independent_of_schedule():
    for i, params, trace, r, overlaps in random_cases()[:40]:
        other = trace.analyze(critical_path=True, schedule_seed=977)
        assert other.critical_path.segments.tobytes() == r.critical_path.segments.tobytes(), i
        assert other.cube.tobytes() == r.cube.tobytes(), i
