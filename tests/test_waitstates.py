"""Tests of the wait-state analysis (time hierarchy, counts, MPI patterns).

Part 1 checks every pattern on small synthetic programs.  The expected
values are worked out by hand from the timing model in the docstring of
waitscope/synth.py and the rules of Scalasca (Late Sender: min(send enter,
receive leave) - receive enter; Late Receiver: receive post - enter of the
call completing the send, when that call leaves after the post; collectives:
min(reference enter, own leave) - own enter; completion: own leave -
max(first leave, min(last enter, own leave))); each test states the
timeline in comments.  Times are chosen so that every value is a multiple
of 1/4 s at a resolution of 1000 ticks/s (exact in binary).

Archives assembled from the event files of several runs of one program
give distinct leave times of collectives and broken clocks (receives that
end before their send starts): the completion metrics and the clock
condition are checked on them.  The Late Sender and Late Receiver values
of the real Score-P ping-pong trace are checked against values computed
from otf2-print's tick numbers.

Finally, hundreds of random deadlock-free programs (and random assembled
archives) are analyzed and checked for invariants (no negative values,
patterns within their call's time, the metric hierarchy, independence of
the replay schedule) and against a reference implementation of the rules
written directly on the event columns.
"""
from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import synth

RES = 1000  # ticks per second in the hand-worked tests
L = 0.5  # latency used by most hand-worked tests

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


# ---- helpers ---------------------------------------------------------------


@pytest.fixture(params=["memory", "file"])
def run(request, tmp_path):
    """run(prog, **params) -> Trace, in memory or through a written OTF2 archive."""
    counter = iter(range(1000))

    def _run(prog: synth.Program, **params) -> waitscope.Trace:
        params.setdefault("latency", L)
        params.setdefault("resolution", RES)
        if request.param == "memory":
            return prog.run(**params)
        return waitscope.open(prog.write(tmp_path / f"t{next(counter)}", **params))

    return _run


def analyze(trace: waitscope.Trace) -> waitscope.AnalysisResult:
    r = trace.analyze()
    # synthetic traces: location index == rank
    assert list(r.location_ranks) == list(range(r.n_locations))
    # the general checks of the random programs hold here too, and the
    # reference implementation (see below) agrees with the hand values
    check_invariants(r)
    compare_with_reference(r, trace)
    return r


def expect(r: waitscope.AnalysisResult, metric: str, cells: dict) -> None:
    """The metric is `cells` {(call path, location): value} and 0 everywhere else."""
    got = r.get(metric)
    want = np.zeros_like(got)
    for (cp, loc), value in cells.items():
        want[r.callpath_index(cp), loc] = value
    if not np.allclose(got, want, rtol=0, atol=1e-9):
        diff = [
            f"  {r.callpath_names[c]} @ {l}: got {got[c, l]!r}, want {want[c, l]!r}"
            for c, l in zip(*np.nonzero(~np.isclose(got, want, rtol=0, atol=1e-9)))
        ]
        pytest.fail(f"{metric} differs:\n" + "\n".join(diff))


def per_location(r: waitscope.AnalysisResult, metric: str, values) -> None:
    np.testing.assert_allclose(r.by_location(metric), values, rtol=0, atol=1e-9, err_msg=metric)


def expect_zero(r: waitscope.AnalysisResult, *metrics: str) -> None:
    for m in metrics:
        assert not np.any(r.get(m)), f"{m} should be 0 everywhere: {r.get(m)}"


# ---- Late Sender -------------------------------------------------------------


def test_late_sender_blocking_receive(run):
    prog = synth.Program(2)
    prog.rank(0).compute("work", 3.0).send(1, tag=0, size=8)
    prog.rank(1).compute("work", 1.0).recv(0, tag=0)
    r = analyze(run(prog, mpi_overhead=0.25))
    # L = 0.5, o = 0.25.  MPI_Init: both enter 0, leave 0 + L + o = 0.75.
    # rank 0: work 0.75-3.75, MPI_Send enter 3.75 (eager: leave 4.0).
    # rank 1: work 0.75-1.75, MPI_Recv enter 1.75, arrival 3.75 + L = 4.25,
    #         leave 4.25 + o = 4.5.
    # Late Sender = min(3.75, 4.5) - 1.75 = 2.0 at rank 1's main/MPI_Recv.
    expect(r, "mpi_latesender", {("main/MPI_Recv", 1): 2.0})
    expect(r, "mpi_cls_count", {("main/MPI_Recv", 1): 1})
    # one message in order: nothing in wrong order; eager: no Late Receiver
    expect_zero(r, "mpi_latesender_wo", "mpi_lswo_same", "mpi_lswo_different", "mpi_clswo_count",
                "mpi_latereceiver", "mpi_clr_count", "mpi_sls_count")
    # MPI_Finalize: rank 0 enters 4.0, rank 1 4.5 -> rank 0 waits 0.5
    expect(r, "mpi_finalize_wait", {("main/MPI_Finalize", 0): 0.5})


def test_late_sender_irecv_completed_by_wait(run):
    prog = synth.Program(2)
    prog.rank(0).compute("work", 3.0).send(1, tag=0, size=8)
    r1 = prog.rank(1)
    req = r1.irecv(0, tag=0)
    r1.compute("work", 1.0).wait(req)
    r = analyze(run(prog))
    # L = 0.5, o = 0: MPI_Init leaves at 0.5.
    # rank 1: MPI_Irecv 0.5-0.5 (post 0.5), work 0.5-1.5, MPI_Wait enter 1.5.
    # rank 0: work 0.5-3.5, MPI_Send enter 3.5; arrival 4.0, Wait leaves 4.0.
    # The receive record is in MPI_Wait: Late Sender = min(3.5, 4.0) - 1.5
    # = 2.0 at main/MPI_Wait (not 3.0 from the Irecv, nothing at MPI_Irecv).
    expect(r, "mpi_latesender", {("main/MPI_Wait", 1): 2.0})
    expect(r, "mpi_cls_count", {("main/MPI_Wait", 1): 1})
    expect(r, "comms_recv", {("main/MPI_Wait", 1): 1})
    expect_zero(r, "mpi_latereceiver", "mpi_latesender_wo")


def test_late_sender_waitall_counts_only_the_largest(run):
    prog = synth.Program(3)
    prog.rank(0).compute("work", 2.0).send(2, tag=0, size=8)
    prog.rank(1).compute("work", 4.0).send(2, tag=0, size=8)
    r2 = prog.rank(2)
    a = r2.irecv(0, tag=0)
    b = r2.irecv(1, tag=0)
    r2.waitall([a, b])
    r = analyze(run(prog))
    # L = 0.5, o = 0: MPI_Init leaves at 0.5.
    # rank 2: both Irecvs at 0.5, MPI_Waitall enter 0.5.
    # rank 0 sends at 2.5 (arrival 3.0), rank 1 at 4.5 (arrival 5.0):
    # Waitall leaves at 5.0.  Candidates: min(2.5, 5.0) - 0.5 = 2.0 and
    # min(4.5, 5.0) - 0.5 = 4.0; only the largest counts, once: 4.0 (not 6.0).
    expect(r, "mpi_latesender", {("main/MPI_Waitall", 2): 4.0})
    expect(r, "mpi_cls_count", {("main/MPI_Waitall", 2): 1})
    expect(r, "comms_recv", {("main/MPI_Waitall", 2): 2})
    expect(r, "bytes_rcvd", {("main/MPI_Waitall", 2): 16})
    # received in the order of their sends: not in wrong order
    expect_zero(r, "mpi_latesender_wo", "mpi_latereceiver")


def test_receive_that_is_not_late(run):
    prog = synth.Program(3)
    prog.rank(0).send(1, tag=0, size=8).send(2, tag=0, size=8)
    prog.rank(1).compute("work", 2.0).recv(0, tag=0)
    r2 = prog.rank(2)
    q = r2.irecv(0, tag=0)
    r2.compute("work", 2.0).wait(q)
    r = analyze(run(prog))
    # L = 0.5, o = 0: rank 0 sends at 0.5 and 0.5 (eager, no overhead).
    # rank 1 enters MPI_Recv at 2.5 > 0.5; rank 2 enters MPI_Wait at 2.5:
    # min(0.5, leave) - 2.5 < 0 -> no Late Sender.  The eager sends left at
    # 0.5, before the receives were posted (2.5, 0.5 <= 0.5: leave not after
    # post) -> no Late Receiver.
    expect_zero(r, "mpi_latesender", "mpi_cls_count", "mpi_latereceiver", "mpi_clr_count")
    expect(r, "comms_recv", {("main/MPI_Recv", 1): 1, ("main/MPI_Wait", 2): 1})


def test_late_sender_wrong_order_same_source(run):
    prog = synth.Program(2)
    prog.rank(0).send(1, tag=1, size=8).compute("work", 2.0).send(1, tag=2, size=8)
    prog.rank(1).recv(0, tag=2).recv(0, tag=1)
    r = analyze(run(prog))
    # L = 0.5, o = 0: MPI_Init leaves at 0.5.
    # rank 0: send tag 1 at 0.5 (eager), work 0.5-2.5, send tag 2 at 2.5.
    # rank 1: recv tag 2 enter 0.5, arrival 3.0, leave 3.0: LS = 2.0;
    #         recv tag 1 enter 3.0, arrival 1.0, leave 3.0: LS = 0.
    # The message received later (tag 1) was sent earlier (0.5 < 2.5) by the
    # same rank: the 2.0 s are in wrong order, from the same source.
    expect(r, "mpi_latesender", {("main/MPI_Recv", 1): 2.0})
    expect(r, "mpi_latesender_wo", {("main/MPI_Recv", 1): 2.0})
    expect(r, "mpi_lswo_same", {("main/MPI_Recv", 1): 2.0})
    expect_zero(r, "mpi_lswo_different")
    expect(r, "mpi_cls_count", {("main/MPI_Recv", 1): 1})
    expect(r, "mpi_clswo_count", {("main/MPI_Recv", 1): 1})


def test_late_sender_wrong_order_different_source(run):
    prog = synth.Program(3)
    prog.rank(0).send(2, tag=0, size=8)
    prog.rank(1).compute("work", 2.0).send(2, tag=0, size=0)
    prog.rank(2).recv(1, tag=0).recv(0, tag=0)
    r = analyze(run(prog))
    # L = 0.5, o = 0: rank 0 sends at 0.5, rank 1 at 2.5 (0 bytes).
    # rank 2: recv from 1 enter 0.5, arrival 3.0, leave 3.0: LS = 2.0;
    #         recv from 0 enter 3.0, arrival 1.0: LS = 0.
    # The later receive's message was sent earlier (0.5 < 2.5) by another
    # rank: wrong order from a different source.  The late message has 0
    # bytes: the counts go to the synchronization side.
    expect(r, "mpi_latesender", {("main/MPI_Recv", 2): 2.0})
    expect(r, "mpi_latesender_wo", {("main/MPI_Recv", 2): 2.0})
    expect(r, "mpi_lswo_different", {("main/MPI_Recv", 2): 2.0})
    expect_zero(r, "mpi_lswo_same", "mpi_cls_count", "mpi_clswo_count")
    expect(r, "mpi_sls_count", {("main/MPI_Recv", 2): 1})
    expect(r, "mpi_slswo_count", {("main/MPI_Recv", 2): 1})


def test_late_sender_wrong_order_nearest_later_receive_decides(run):
    prog = synth.Program(3)
    prog.rank(0).send(2, tag=1, size=8).compute("work", 4.0).send(2, tag=2, size=8)
    prog.rank(1).compute("work", 1.0).send(2, tag=0, size=8)
    prog.rank(2).recv(0, tag=2).recv(1, tag=0).recv(0, tag=1)
    r = analyze(run(prog))
    # L = 0.5, o = 0.  rank 0 sends tag 1 at 0.5 and tag 2 at 4.5; rank 1
    # sends at 1.5.  rank 2: recv (0, tag 2) 0.5-5.0: LS = min(4.5, 5.0) - 0.5
    # = 4.0; recv from 1 and recv (0, tag 1) enter 5.0, their messages are
    # there: LS 0.  Both later receives got messages sent before 4.5; the
    # nearest one (from rank 1) decides: different source, although a later
    # one comes from the same source.
    expect(r, "mpi_latesender", {("main/MPI_Recv", 2): 4.0})
    expect(r, "mpi_lswo_different", {("main/MPI_Recv", 2): 4.0})
    expect_zero(r, "mpi_lswo_same")


def test_point_to_point_on_subcommunicator(run):
    prog = synth.Program(3)
    sub = prog.comm([2, 0, 1])  # communicator rank 0 = world 2, 1 = world 0, 2 = world 1
    prog.rank(2).send(1, tag=0, size=16).compute("work", 2.0).send(2, tag=0, size=8, comm=sub)
    prog.rank(1).recv(0, tag=0, comm=sub).recv(2, tag=0)
    r = analyze(run(prog))
    # L = 0.5, o = 0.  world 2 sends on the world (tag 0) at 0.5, then on sub
    # to communicator rank 2 (= world 1) at 2.5.  world 1 first receives from
    # sub rank 0 (= world 2): 0.5-3.0, LS = min(2.5, 3.0) - 0.5 = 2.0; then the
    # world message (same tag, other communicator): there since 1.0, LS 0.
    # That message was sent earlier (0.5 < 2.5) by the same process (world 2,
    # though its ranks differ, 0 in sub, 2 in the world): wrong order, same source.
    expect(r, "mpi_latesender", {("main/MPI_Recv", 1): 2.0})
    expect(r, "mpi_lswo_same", {("main/MPI_Recv", 1): 2.0})
    expect_zero(r, "mpi_lswo_different", "mpi_latereceiver")
    expect(r, "bytes_rcvd", {("main/MPI_Recv", 1): 24})
    expect(r, "bytes_sent", {("main/MPI_Send", 2): 24})


# ---- Late Receiver -----------------------------------------------------------


@pytest.mark.parametrize(
    "kind, size, lr, callpath",
    [
        ("ssend", 100, 2.0, "main/MPI_Ssend"),  # synchronous: always rendezvous
        ("send", 100, 2.0, "main/MPI_Send"),  # standard, 100 > eager_limit 64: rendezvous
        ("send", 8, 0.0, "main/MPI_Send"),  # standard, 8 <= 64: eager
    ],
)
def test_late_receiver_blocking_send(run, kind, size, lr, callpath):
    prog = synth.Program(2)
    getattr(prog.rank(0), kind)(1, tag=0, size=size)
    prog.rank(1).compute("work", 2.0).recv(0, tag=0)
    r = analyze(run(prog, bandwidth=100.0, eager_limit=64))
    # L = 0.5, o = 0, x = size / 100 B/s.  MPI_Init leaves at 0.5.
    # rank 1 posts its MPI_Recv at 2.5.
    # rendezvous: the send enters 0.5 and leaves at max(0.5, 2.5) + L + x
    #   = 3.0 + 1.0 = 4.0 > 2.5: Late Receiver = 2.5 - 0.5 = 2.0 at the
    #   sender's send call path.
    # eager: the send leaves at 0.5 <= 2.5: no Late Receiver.
    # Either way the receive is not late (the send entered at 0.5 < 2.5).
    cells = {(callpath, 0): lr} if lr else {}
    expect(r, "mpi_latereceiver", cells)
    expect(r, "mpi_clr_count", {(callpath, 0): 1} if lr else {})
    expect_zero(r, "mpi_latesender", "mpi_slr_count")
    expect(r, "bytes_sent", {(callpath, 0): size})
    expect(r, "bytes_rcvd", {("main/MPI_Recv", 1): size})
    # time of the send call: 4.0 - 0.5 = 3.5 (rendezvous) or 0 (eager)
    expect(r, "time", {("main/MPI_Init", 0): 0.5, ("main/MPI_Init", 1): 0.5,
                       (callpath, 0): 3.5 if lr else 0.0,
                       ("main/work", 1): 2.0,
                       # recv 2.5 - arrival max(0.5, 2.5) + L + x (rendezvous) or 0.5 + L + x (eager)
                       ("main/MPI_Recv", 1): 1.5 if lr else 0.0,
                       # Finalize: rank 0 enters at 4.0 (0.5 eager), rank 1 at 4.0 (2.5);
                       # both leave at 4.5 (3.0)
                       ("main/MPI_Finalize", 0): 0.5 if lr else 2.5,
                       ("main/MPI_Finalize", 1): 0.5})


def test_late_receiver_isend_completed_by_wait(run):
    prog = synth.Program(2)
    r0 = prog.rank(0)
    q = r0.isend(1, tag=0, size=100)
    r0.compute("work", 1.0).wait(q)
    prog.rank(1).compute("work", 2.0).recv(0, tag=0)
    r = analyze(run(prog, eager_limit=64))
    # L = 0.5, o = 0, no bandwidth.  MPI_Init leaves at 0.5.
    # rank 0: MPI_Isend 0.5-0.5, work 0.5-1.5, MPI_Wait enter 1.5.
    # rank 1: work 0.5-2.5, MPI_Recv posted at 2.5.
    # rendezvous (100 > 64): the request completes at max(0.5, 2.5) + L = 3.0,
    # the Wait leaves at 3.0 > 2.5: Late Receiver = 2.5 - 1.5 = 1.0 at
    # rank 0's main/MPI_Wait (measured from the Wait, not the Isend).
    expect(r, "mpi_latereceiver", {("main/MPI_Wait", 0): 1.0})
    expect(r, "mpi_clr_count", {("main/MPI_Wait", 0): 1})
    expect(r, "comms_send", {("main/MPI_Isend", 0): 1})
    expect_zero(r, "mpi_latesender")


def test_late_receiver_waitall_counts_only_the_largest(run):
    prog = synth.Program(3)
    r0 = prog.rank(0)
    qs = [r0.isend(1, tag=0, size=100), r0.isend(2, tag=0, size=100)]
    r0.waitall(qs)
    prog.rank(1).compute("work", 1.0).recv(0, tag=0)
    prog.rank(2).compute("work", 3.0).recv(0, tag=0)
    r = analyze(run(prog, eager_limit=64))
    # L = 0.5, o = 0.  rank 0: both Isends at 0.5, Waitall enter 0.5.
    # receives posted at 1.5 (rank 1) and 3.5 (rank 2); requests complete at
    # 2.0 and 4.0, Waitall leaves at 4.0.  Candidates 1.5 - 0.5 = 1.0 and
    # 3.5 - 0.5 = 3.0: only the largest counts: 3.0, once.
    expect(r, "mpi_latereceiver", {("main/MPI_Waitall", 0): 3.0})
    expect(r, "mpi_clr_count", {("main/MPI_Waitall", 0): 1})


def test_late_receiver_of_irecv_is_measured_from_its_post(run):
    prog = synth.Program(2)
    r0 = prog.rank(0)
    q = r0.isend(1, tag=0, size=100)
    r0.wait(q)
    r1 = prog.rank(1).compute("work", 2.0)
    rq = r1.irecv(0, tag=0)
    r1.compute("work", 1.0).wait(rq)
    r = analyze(run(prog, eager_limit=64))
    # L = 0.5, o = 0.  rank 0: MPI_Isend at 0.5, MPI_Wait enter 0.5.
    # rank 1: work 0.5-2.5, MPI_Irecv at 2.5 (the post), work 2.5-3.5,
    #         MPI_Wait enter 3.5.
    # rendezvous: the send completes at max(0.5, 2.5) + L = 3.0; rank 0's Wait
    # leaves at 3.0 > 2.5: Late Receiver = 2.5 - 0.5 = 2.0 (from the Irecv's
    # enter, not from rank 1's Wait at 3.5, which would give 3.0).
    # The message arrives at 3.0 < 3.5: no Late Sender.
    expect(r, "mpi_latereceiver", {("main/MPI_Wait", 0): 2.0})
    expect_zero(r, "mpi_latesender")


def test_late_receiver_in_waitall_that_is_a_late_sender(run):
    prog = synth.Program(2)
    r0 = prog.rank(0)
    qs = r0.isend(1, tag=0, size=100)
    qr = r0.irecv(1, tag=1)
    r0.waitall([qs, qr])
    prog.rank(1).compute("work", 2.0).recv(0, tag=0).compute("work", 1.0).send(0, tag=1, size=8)
    r = analyze(run(prog, eager_limit=64))
    # L = 0.5, o = 0.  rank 0: Isend and Irecv at 0.5, MPI_Waitall enter 0.5.
    # rank 1: work 0.5-2.5, MPI_Recv 2.5-3.0 (rendezvous: max(0.5, 2.5) + L),
    #         work 3.0-4.0, MPI_Send at 4.0 (eager, arrival 4.5).
    # rank 0's Waitall leaves at 4.5 (4.0 s long).  As a receive it waited
    # for a Late Sender: min(4.0, 4.5) - 0.5 = 3.5.  Its send completed
    # after the receive was posted (2.5 - 0.5 = 2.0 of Late Receiver).  The
    # call waited once: the larger of the two, the Late Sender, counts.
    expect(r, "mpi_latesender", {("main/MPI_Waitall", 0): 3.5})
    expect_zero(r, "mpi_latereceiver", "mpi_clr_count")
    expect(r, "mpi_point2point", {("main/MPI_Waitall", 0): 4.0, ("main/MPI_Recv", 1): 0.5})


# ---- collectives -------------------------------------------------------------


def test_wait_at_barrier(run):
    prog = synth.Program(3)
    for rank, d in enumerate((1.0, 2.0, 4.0)):
        prog.rank(rank).compute("work", d).barrier()
    r = analyze(run(prog, mpi_overhead=0.25))
    # L = 0.5, o = 0.25: MPI_Init leaves at 0.75.
    # MPI_Barrier enters 1.75, 2.75, 4.75; all leave at 4.75 + L + o = 5.5.
    # wait: min(4.75, 5.5) - enter = 3.0, 2.0, 0.
    # completion: own leave - max(first leave 5.5, min(4.75, 5.5)) = 0 for all
    # (every member leaves at the same time; not L + o = 0.75).
    expect(r, "mpi_barrier_wait", {("main/MPI_Barrier", 0): 3.0, ("main/MPI_Barrier", 1): 2.0})
    expect_zero(r, "mpi_barrier_completion")
    expect(r, "mpi_sync_collective", {("main/MPI_Barrier", 0): 3.75, ("main/MPI_Barrier", 1): 2.75,
                                      ("main/MPI_Barrier", 2): 0.75})
    expect(r, "syncs_coll", {("main/MPI_Barrier", loc): 1 for loc in range(3)})


@pytest.mark.parametrize("op", ["allreduce", "alltoall", "allgather"])
def test_wait_at_nxn(run, op):
    prog = synth.Program(3)
    for rank, d in enumerate((1.0, 3.0, 2.0)):
        getattr(prog.rank(rank).compute("work", d), op)(size=8)
    r = analyze(run(prog, mpi_overhead=0.25))
    cp = "main/MPI_" + op.capitalize()
    # L = 0.5, o = 0.25: MPI_Init leaves at 0.75.
    # enters 1.75, 3.75, 2.75; all leave at 3.75 + 0.75 = 4.5.
    # wait: min(3.75, 4.5) - enter = 2.0, 0, 1.0; completion 0 (same leaves).
    expect(r, "mpi_wait_nxn", {(cp, 0): 2.0, (cp, 2): 1.0})
    expect_zero(r, "mpi_nxn_completion", "mpi_barrier_wait")
    # bytes: (n*size, n*size) = (24, 24) on every member -> exchange
    expect(r, "comms_cxch", {(cp, loc): 1 for loc in range(3)})
    expect(r, "bytes_cout", {(cp, loc): 24 for loc in range(3)})
    expect(r, "bytes_cin", {(cp, loc): 24 for loc in range(3)})
    expect(r, "mpi_collective", {(cp, 0): 2.75, (cp, 1): 0.75, (cp, 2): 1.75})


@pytest.mark.parametrize("op", ["bcast", "scatter"])
def test_late_broadcast(run, op):
    prog = synth.Program(3)
    for rank, d in enumerate((1.0, 4.0, 2.0)):
        getattr(prog.rank(rank).compute("work", d), op)(root=2, size=8)
    r = analyze(run(prog))
    cp = "main/MPI_" + op.capitalize()
    # L = 0.5, o = 0: MPI_Init leaves at 0.5.  Enters: 1.5, 4.5, root (2) 2.5.
    # root leaves at 2.5; others at max(enter, 2.5 + L): rank 0 3.0, rank 1 4.5.
    # Late Broadcast = min(root enter 2.5, own leave) - own enter:
    # rank 0: 2.5 - 1.5 = 1.0; rank 1 entered after the root: 0; root: 0.
    expect(r, "mpi_latebroadcast", {(cp, 0): 1.0})
    expect_zero(r, "mpi_earlyreduce", "mpi_wait_nxn")
    # bytes: root (3*8, 8) -> exchange; others (0, 8) -> destination
    expect(r, "comms_cxch", {(cp, 2): 1})
    expect(r, "comms_cdst", {(cp, 0): 1, (cp, 1): 1})
    expect(r, "bytes_cout", {(cp, 2): 24})
    expect(r, "bytes_cin", {(cp, loc): 8 for loc in range(3)})


@pytest.mark.parametrize("op", ["reduce", "gather"])
def test_early_reduce(run, op):
    prog = synth.Program(3)
    for rank, d in enumerate((3.0, 1.0, 2.0)):
        getattr(prog.rank(rank).compute("work", d), op)(root=1, size=4)
    r = analyze(run(prog))
    cp = "main/MPI_" + op.capitalize()
    # L = 0.5, o = 0: MPI_Init leaves at 0.5.  Enters: 3.5, root (1) 1.5, 2.5.
    # root leaves at max(enters) + L = 4.0; the others at their enter.
    # Early Reduce (root only) = min(latest enter 3.5, 4.0) - 1.5 = 2.0
    # (the latest member counts, not the earliest non-root 2.5 -> 1.0).
    expect(r, "mpi_earlyreduce", {(cp, 1): 2.0})
    expect_zero(r, "mpi_latebroadcast", "mpi_wait_nxn")
    # bytes: root (4, 12) -> exchange; others (4, 0) -> source
    expect(r, "comms_cxch", {(cp, 1): 1})
    expect(r, "comms_csrc", {(cp, 0): 1, (cp, 2): 1})
    expect(r, "bytes_cout", {(cp, loc): 4 for loc in range(3)})
    expect(r, "bytes_cin", {(cp, 1): 12})


def test_early_reduce_root_entering_last_waits_nothing(run):
    prog = synth.Program(3)
    for rank, d in enumerate((1.0, 3.0, 2.0)):
        prog.rank(rank).compute("work", d).reduce(root=1, size=4)
    r = analyze(run(prog))
    # enters 1.5, root 3.5, 2.5: min(3.5, 4.0) - 3.5 = 0 at the root, and the
    # other members never wait in an N-to-1 operation.
    expect_zero(r, "mpi_earlyreduce")


def test_early_scan(run):
    prog = synth.Program(4)
    for rank, d in enumerate((2.0, 1.0, 4.0, 3.0)):
        prog.rank(rank).compute("work", d).scan(size=2)
    r = analyze(run(prog))
    # L = 0.5, o = 0: MPI_Init leaves at 0.5.  Enters 2.5, 1.5, 4.5, 3.5.
    # member i leaves at max(enters 0..i) + L: 3.0, 3.0, 5.0, 5.0.
    # Early Scan = min(max enters 0..i, own leave) - own enter:
    # 0; 2.5 - 1.5 = 1.0; 0; 4.5 - 3.5 = 1.0.
    expect(r, "mpi_earlyscan", {("main/MPI_Scan", 1): 1.0, ("main/MPI_Scan", 3): 1.0})
    # bytes ((4-i)*2, (i+1)*2): all members send and receive
    expect(r, "comms_cxch", {("main/MPI_Scan", loc): 1 for loc in range(4)})
    per_location(r, "bytes_cout", [8, 6, 4, 2])
    per_location(r, "bytes_cin", [2, 4, 6, 8])


def test_wait_at_finalize_and_init_completion(run):
    prog = synth.Program(3)
    prog.rank(0).compute("work", 1.0)
    prog.rank(1).compute("work", 3.0)
    prog.rank(2)  # nothing between MPI_Init and MPI_Finalize
    r = analyze(run(prog, mpi_overhead=0.25))
    # L = 0.5, o = 0.25.  MPI_Init: every rank enters at 0 and leaves at 0.75.
    # MPI_Finalize enters 1.75, 3.75, 0.75; all leave at 3.75 + 0.75 = 4.5.
    # Wait at Finalize = min(3.75, 4.5) - enter = 2.0, 0, 3.0.
    expect(r, "mpi_finalize_wait", {("main/MPI_Finalize", 0): 2.0, ("main/MPI_Finalize", 2): 3.0})
    # Initialization Completion = own leave - max(first leave, min(last
    # enter, own leave)) = 0.75 - max(0.75, min(0, 0.75)) = 0 (not L + o):
    # all ranks start at 0 and leave together.
    expect_zero(r, "mpi_init_completion")
    # Init/Exit time: 0.75 + (4.5 - Finalize enter) = 3.5, 1.5, 4.5
    per_location(r, "mpi_init_exit", [3.5, 1.5, 4.5])
    per_location(r, "time", [4.5, 4.5, 4.5])


def test_collectives_on_subcommunicator(run):
    prog = synth.Program(5)
    sub = prog.comm([3, 1, 4])  # communicator rank 0 = world 3, 1 = world 1, 2 = world 4
    w3, w1, w4 = prog.rank(3), prog.rank(1), prog.rank(4)
    # round 1: barrier
    w3.compute("work", 1.0).barrier(sub)
    w1.compute("work", 3.0).barrier(sub)
    w4.compute("work", 2.0).barrier(sub)
    # round 2: scan (in communicator order w3, w1, w4)
    w3.compute("work", 2.0).scan(size=1, comm=sub)
    w1.scan(size=1, comm=sub)
    w4.compute("work", 1.0).scan(size=1, comm=sub)
    # round 3: bcast from communicator rank 2 = world 4
    w3.bcast(root=2, size=8, comm=sub)
    w1.compute("work", 1.0).bcast(root=2, size=8, comm=sub)
    w4.compute("work", 2.0).bcast(root=2, size=8, comm=sub)
    # round 4: reduce to communicator rank 1 = world 1
    w3.compute("work", 1.0).reduce(root=1, size=8, comm=sub)
    w1.reduce(root=1, size=8, comm=sub)
    w4.compute("work", 3.0).reduce(root=1, size=8, comm=sub)
    r = analyze(run(prog))
    # L = 0.5, o = 0.  MPI_Init leaves at 0.5 everywhere; worlds 0 and 2 go
    # straight to MPI_Finalize (enter 0.5).
    # round 1: barrier enters w3 1.5, w1 3.5, w4 2.5, all leave 4.0;
    #   wait: w3 2.0, w1 0, w4 1.0.
    # round 2: scan enters w3 6.0, w1 4.0, w4 5.0 (member order w3, w1, w4);
    #   leaves: 6.5 for all (prefix maxima 6.0, 6.0, 6.0, + L);
    #   Early Scan: w3 0; w1 min(6.0, 6.5) - 4.0 = 2.0; w4 6.0 - 5.0 = 1.0.
    #   (in world order w1 would be first and wait nothing)
    # round 3: bcast enters w3 6.5, w1 7.5, root w4 8.5; root leaves 8.5,
    #   others max(enter, 9.0) = 9.0; Late Broadcast: w3 8.5 - 6.5 = 2.0,
    #   w1 8.5 - 7.5 = 1.0, root 0.
    # round 4: reduce enters w3 10.0, root w1 9.0, w4 11.5; root leaves 12.0,
    #   others at their enter; Early Reduce at w1: min(11.5, 12.0) - 9.0 = 2.5.
    # MPI_Finalize enters w0 0.5, w1 12.0, w2 0.5, w3 10.0, w4 11.5; leave
    #   12.5; Wait at Finalize: w0 11.5, w2 11.5, w3 2.0, w1 0, w4 0.5.
    expect(r, "mpi_barrier_wait", {("main/MPI_Barrier", 3): 2.0, ("main/MPI_Barrier", 4): 1.0})
    expect_zero(r, "mpi_barrier_completion")
    expect(r, "mpi_earlyscan", {("main/MPI_Scan", 1): 2.0, ("main/MPI_Scan", 4): 1.0})
    expect(r, "mpi_latebroadcast", {("main/MPI_Bcast", 3): 2.0, ("main/MPI_Bcast", 1): 1.0})
    expect(r, "mpi_earlyreduce", {("main/MPI_Reduce", 1): 2.5})
    expect(r, "mpi_finalize_wait", {("main/MPI_Finalize", 0): 11.5, ("main/MPI_Finalize", 2): 11.5,
                                    ("main/MPI_Finalize", 3): 2.0, ("main/MPI_Finalize", 4): 0.5})
    # counts only on the members
    expect(r, "syncs_coll", {("main/MPI_Barrier", w): 1 for w in (1, 3, 4)})
    # bcast bytes: root (3*8, 8), others (0, 8); reduce root (8, 24), others (8, 0)
    expect(r, "comms_cdst", {("main/MPI_Bcast", 3): 1, ("main/MPI_Bcast", 1): 1})
    expect(r, "comms_csrc", {("main/MPI_Reduce", 3): 1, ("main/MPI_Reduce", 4): 1})
    per_location(r, "bytes_cin", [0, 8 + 24 + 2, 0, 8 + 0 + 1, 8 + 0 + 3])  # bcast + reduce + scan (i+1)*1
    per_location(r, "visits", [3, 3 + 4 + 2, 3, 3 + 4 + 3, 3 + 4 + 4])  # main, Init, Finalize + ops + computes


def test_collectives_on_single_member_communicator(run):
    prog = synth.Program(2)
    solo = prog.comm([1])
    prog.rank(1).compute("work", 1.0).barrier(solo).allreduce(size=8, comm=solo).bcast(root=0, size=4, comm=solo)
    r = analyze(run(prog))
    # Nobody to wait for: every pattern is 0 (own enter is the last enter,
    # own leave the first leave).  The operations are still counted, as on
    # any collective record: barrier (0, 0) -> synchronization; allreduce
    # with n = 1: (8, 8), bcast root: (4, 4) -> exchanges.
    expect_zero(r, *PATTERNS[5:12])
    # L = 0.5, o = 0: rank 1 works 0.5-1.5, barrier 1.5-2.0 (+ L), allreduce
    # 2.0-2.5, bcast root 2.5-2.5; rank 0 waits in MPI_Finalize from 0.5 to 2.5.
    expect(r, "mpi_finalize_wait", {("main/MPI_Finalize", 0): 2.0})
    expect(r, "syncs_coll", {("main/MPI_Barrier", 1): 1})
    expect(r, "comms_cxch", {("main/MPI_Allreduce", 1): 1, ("main/MPI_Bcast", 1): 1})
    expect(r, "bytes_cout", {("main/MPI_Allreduce", 1): 8, ("main/MPI_Bcast", 1): 4})
    expect(r, "bytes_cin", {("main/MPI_Allreduce", 1): 8, ("main/MPI_Bcast", 1): 4})


def test_nested_regions(run):
    prog = synth.Program(2)
    r0, r1 = prog.rank(0), prog.rank(1)
    with r0.region("solver"):
        with r0.region("step"):
            r0.compute("calc", 3.0).send(1, tag=0, size=8)
        r0.barrier()
    with r1.region("solver"):
        with r1.region("step"):
            r1.compute("calc", 1.0).recv(0, tag=0)
        r1.compute("calc", 2.0).barrier()
    r = analyze(run(prog))
    # L = 0.5, o = 0.  MPI_Init leaves at 0.5.
    # rank 0: calc 0.5-3.5, MPI_Send 3.5-3.5, MPI_Barrier enter 3.5.
    # rank 1: calc 0.5-1.5, MPI_Recv 1.5-4.0 (arrival 3.5 + L), calc 4.0-6.0,
    #         MPI_Barrier enter 6.0; barrier leaves 6.5.
    # Late Sender = min(3.5, 4.0) - 1.5 = 2.0 at main/solver/step/MPI_Recv;
    # Wait at Barrier = 6.0 - 3.5 = 2.5 at main/solver/MPI_Barrier.
    expect(r, "mpi_latesender", {("main/solver/step/MPI_Recv", 1): 2.0})
    expect(r, "mpi_barrier_wait", {("main/solver/MPI_Barrier", 0): 2.5})
    expect(r, "comp", {("main/solver/step/calc", 0): 3.0, ("main/solver/step/calc", 1): 1.0,
                       ("main/solver/calc", 1): 2.0})
    # the enclosing user regions hold no time of their own, inclusively all
    incl = r.inclusive("time")
    np.testing.assert_allclose(incl[r.callpath_index("main/solver")], [6.5 - 0.5, 6.5 - 0.5])
    np.testing.assert_allclose(incl[r.callpath_index("main/solver/step")], [3.0, 3.5])
    expect_zero(r, "mpi_latereceiver", "mpi_finalize_wait")


# ---- time hierarchy and counts -------------------------------------------------


def test_time_hierarchy_by_hand(run):
    prog = synth.Program(2)
    prog.rank(0).compute("work", 2.0).send(1, tag=0, size=16).barrier().allreduce(size=8)
    prog.rank(1).recv(0, tag=0).compute("work", 1.0).barrier().allreduce(size=8)
    r = analyze(run(prog, mpi_overhead=0.25))
    # L = 0.5, o = 0.25.  MPI_Init 0-0.75 on both.
    # rank 0: work 0.75-2.75, MPI_Send 2.75-3.0 (eager), MPI_Barrier 3.0-5.25,
    #         MPI_Allreduce 5.25-6.0, MPI_Finalize 6.0-6.75.
    # rank 1: MPI_Recv 0.75-3.5 (arrival 2.75 + L = 3.25, + o), work 3.5-4.5,
    #         MPI_Barrier 4.5-5.25 (leave 4.5 + L + o), MPI_Allreduce 5.25-6.0,
    #         MPI_Finalize 6.0-6.75.
    expect(r, "time", {
        ("main/MPI_Init", 0): 0.75, ("main/work", 0): 2.0, ("main/MPI_Send", 0): 0.25,
        ("main/MPI_Barrier", 0): 2.25, ("main/MPI_Allreduce", 0): 0.75, ("main/MPI_Finalize", 0): 0.75,
        ("main/MPI_Init", 1): 0.75, ("main/MPI_Recv", 1): 2.75, ("main/work", 1): 1.0,
        ("main/MPI_Barrier", 1): 0.75, ("main/MPI_Allreduce", 1): 0.75, ("main/MPI_Finalize", 1): 0.75,
    })
    per_location(r, "time", [6.75, 6.75])
    per_location(r, "execution", [6.75, 6.75])
    per_location(r, "overhead", [0, 0])
    per_location(r, "comp", [2.0, 1.0])
    per_location(r, "mpi", [4.75, 5.75])
    per_location(r, "mpi_management", [1.5, 1.5])
    per_location(r, "mpi_init_exit", [1.5, 1.5])
    per_location(r, "mpi_synchronization", [2.25, 0.75])
    per_location(r, "mpi_sync_collective", [2.25, 0.75])
    per_location(r, "mpi_communication", [1.0, 3.5])
    per_location(r, "mpi_point2point", [0.25, 2.75])
    per_location(r, "mpi_collective", [0.75, 0.75])
    # visits: main, MPI_Init, work, one MPI call per operation, MPI_Finalize
    expect(r, "visits", {(cp, loc): 1 for loc, cps in (
        (0, ("main", "main/MPI_Init", "main/work", "main/MPI_Send", "main/MPI_Barrier", "main/MPI_Allreduce",
             "main/MPI_Finalize")),
        (1, ("main", "main/MPI_Init", "main/MPI_Recv", "main/work", "main/MPI_Barrier", "main/MPI_Allreduce",
             "main/MPI_Finalize"))) for cp in cps})
    # the waiting: Late Sender min(2.75, 3.5) - 0.75 = 2.0; barrier 4.5 - 3.0 = 1.5
    expect(r, "mpi_latesender", {("main/MPI_Recv", 1): 2.0})
    expect(r, "mpi_barrier_wait", {("main/MPI_Barrier", 0): 1.5})
    expect_zero(r, "mpi_wait_nxn", "mpi_nxn_completion", "mpi_barrier_completion", "mpi_finalize_wait",
                "mpi_init_completion")
    # inclusive time of main = the run's length on each rank
    np.testing.assert_allclose(r.inclusive("time")[r.callpath_index("main")], [6.75, 6.75])
    assert r.total("time") == pytest.approx(13.5)


def test_message_and_collective_counts(run):
    prog = synth.Program(3)
    prog.rank(0).compute("work", 2.0).send(1, tag=0, size=0).send(2, tag=0, size=100)
    prog.rank(1).recv(0, tag=0)
    prog.rank(2).recv(0, tag=0)
    for rank in prog.ranks():
        rank.bcast(root=1, size=10).reduce(root=2, size=4).barrier().scan(size=2)
    r = analyze(run(prog))
    # L = 0.5, o = 0.  rank 0 sends 0 bytes to 1 and 100 bytes to 2, both at
    # 2.5 (eager); both receives enter at 0.5: Late Sender 2.0 each, rank 1's
    # on a 0-byte message (synchronization), rank 2's on data.
    expect(r, "syncs_send", {("main/MPI_Send", 0): 1})
    expect(r, "comms_send", {("main/MPI_Send", 0): 1})
    expect(r, "syncs_recv", {("main/MPI_Recv", 1): 1})
    expect(r, "comms_recv", {("main/MPI_Recv", 2): 1})
    expect(r, "bytes_sent", {("main/MPI_Send", 0): 100})
    expect(r, "bytes_rcvd", {("main/MPI_Recv", 2): 100})
    expect(r, "mpi_sls_count", {("main/MPI_Recv", 1): 1})
    expect(r, "mpi_cls_count", {("main/MPI_Recv", 2): 1})
    expect(r, "mpi_latesender", {("main/MPI_Recv", 1): 2.0, ("main/MPI_Recv", 2): 2.0})
    expect(r, "syncs_p2p", {("main/MPI_Send", 0): 1, ("main/MPI_Recv", 1): 1})
    expect(r, "comms_p2p", {("main/MPI_Send", 0): 1, ("main/MPI_Recv", 2): 1})
    expect(r, "bytes_p2p", {("main/MPI_Send", 0): 100, ("main/MPI_Recv", 2): 100})
    # collectives (n = 3):
    #   bcast root 1, size 10: root (30, 10) exchange; 0 and 2 (0, 10) destination
    #   reduce root 2, size 4: root (4, 12) exchange; 0 and 1 (4, 0) source
    #   barrier: (0, 0) synchronization
    #   scan size 2: member i ((3-i)*2, (i+1)*2): (6, 2), (4, 4), (2, 6) exchange
    expect(r, "syncs_coll", {("main/MPI_Barrier", loc): 1 for loc in range(3)})
    expect(r, "comms_cxch", {("main/MPI_Bcast", 1): 1, ("main/MPI_Reduce", 2): 1,
                             **{("main/MPI_Scan", loc): 1 for loc in range(3)}})
    expect(r, "comms_csrc", {("main/MPI_Reduce", 0): 1, ("main/MPI_Reduce", 1): 1})
    expect(r, "comms_cdst", {("main/MPI_Bcast", 0): 1, ("main/MPI_Bcast", 2): 1})
    per_location(r, "comms_coll", [3, 3, 3])
    per_location(r, "bytes_cout", [0 + 4 + 6, 30 + 4 + 4, 0 + 4 + 2])
    per_location(r, "bytes_cin", [10 + 0 + 2, 10 + 0 + 4, 10 + 12 + 6])
    per_location(r, "bytes_coll", [22, 52, 34])
    per_location(r, "syncs", [1 + 1, 1 + 1, 0 + 1])
    per_location(r, "comms", [1 + 3, 0 + 3, 1 + 3])
    per_location(r, "bytes", [100 + 22, 0 + 52, 100 + 34])


# ---- archives assembled from several runs ------------------------------------
#
# The executor synchronizes every collective exactly (all members leave
# together) and never lets a receive end before its send starts.  Traces
# with distinct leave times or broken clocks are built from whole, valid
# OTF2 files: the same program (same records per location, same
# definitions) is run with different durations or latencies, and location
# i's event file is taken from run pick[i].  Nothing is edited byte-wise.


def spliced(tmp_path: Path, name: str, runs, pick) -> waitscope.Trace:
    """runs: [(program, run parameters)]; location i comes from runs[pick[i]]."""
    dirs = []
    for k, (prog, params) in enumerate(runs):
        params = dict(params)
        params.setdefault("resolution", RES)
        dirs.append(Path(prog.write(tmp_path / f"{name}-src{k}", **params)).parent)
    heads = [waitscope.open(d, load=False) for d in dirs]
    for h in heads[1:]:  # same definitions, same record counts
        assert h.region_names == heads[0].region_names
        assert [l.n_records for l in h.locations] == [l.n_records for l in heads[0].locations]
    # the global definitions of the longest run (its clock length covers all)
    longest = max(range(len(dirs)), key=lambda k: heads[k].clock["length"])
    out = tmp_path / name
    shutil.copytree(dirs[longest], out)
    for loc, k in enumerate(pick):
        for ext in ("evt", "def"):
            shutil.copyfile(dirs[k] / "traces" / f"{loc}.{ext}", out / "traces" / f"{loc}.{ext}")
    return waitscope.open(out)


def _sync_program(op: str, durations) -> synth.Program:
    prog = synth.Program(len(durations))
    for rank, d in enumerate(durations):
        rp = prog.rank(rank).compute("work", d)
        if op == "barrier":
            rp.barrier()
        else:
            getattr(rp, op)(size=8)
    return prog


@pytest.mark.parametrize(
    "op, wait_metric, completion_metric",
    [("barrier", "mpi_barrier_wait", "mpi_barrier_completion"),
     ("allreduce", "mpi_wait_nxn", "mpi_nxn_completion"),
     ("alltoall", "mpi_wait_nxn", "mpi_nxn_completion"),
     ("allgather", "mpi_wait_nxn", "mpi_nxn_completion")],
)
def test_completion_with_distinct_leave_times(tmp_path, op, wait_metric, completion_metric):
    cp = "main/MPI_" + op.capitalize()
    runs = [
        (_sync_program(op, (1.0, 2.0, 3.0)), dict(latency=0.5)),  # A
        (_sync_program(op, (1.0, 2.0, 3.0)), dict(latency=1.0)),  # B
        (_sync_program(op, (1.0, 2.0, 3.0)), dict(latency=0.25)),  # C
        (_sync_program(op, (0.5, 0.5, 0.5)), dict(latency=0.25)),  # E
    ]
    # Run A: MPI_Init leaves 0.5, the operation is entered at 1.5, 2.5, 3.5 and
    #   left at 3.5 + L = 4.0 by all.
    # Run B: Init leaves 1.0, enters 2.0, 3.0, 4.0, leave 5.0.
    # Run C: Init leaves 0.25, enters 1.25, 2.25, 3.25, leave 3.5.
    # Run E: Init leaves 0.25, enters 0.75 (all), leave 1.0.
    #
    # rank 0 from B [2.0, 5.0], rank 1 from A [2.5, 4.0], rank 2 from C [3.25, 3.5]:
    #   last enter 3.25, first leave 3.5.
    #   wait = min(3.25, e) - b: 1.25, 0.75, 0
    #   completion = e - max(3.5, min(3.25, e)): 1.5, 0.5, 0
    r = analyze(spliced(tmp_path, "bac", runs, [1, 0, 2]))
    expect(r, wait_metric, {(cp, 0): 1.25, (cp, 1): 0.75})
    expect(r, completion_metric, {(cp, 0): 1.5, (cp, 1): 0.5})
    # rank 0 from A [1.5, 4.0], rank 1 from E [0.75, 1.0], rank 2 from A [3.5, 4.0]:
    #   rank 1 leaves before rank 2 enters: last enter 3.5, first leave 1.0.
    #   wait = min(3.5, e) - b: 2.0, min(3.5, 1.0) - 0.75 = 0.25, 0
    #   completion = e - max(1.0, min(3.5, e)): 4.0 - 3.5 = 0.5,
    #     1.0 - max(1.0, 1.0) = 0, 4.0 - 3.5 = 0.5
    r = analyze(spliced(tmp_path, "aea", runs, [0, 3, 0]))
    expect(r, wait_metric, {(cp, 0): 2.0, (cp, 1): 0.25})
    expect(r, completion_metric, {(cp, 0): 0.5, (cp, 2): 0.5})
    assert r.cube.min() >= 0


def test_init_completion_with_distinct_leave_times(tmp_path):
    def prog():
        p = synth.Program(2)
        for rank in p.ranks():
            rank.compute("work", 1.0)
        return p

    runs = [(prog(), dict(latency=0.5)), (prog(), dict(latency=1.0))]
    # rank 0 from the run with L = 1.0: Init [0, 1.0], work 1.0-2.0, Finalize [2.0, 3.0];
    # rank 1 from the run with L = 0.5: Init [0, 0.5], work 0.5-1.5, Finalize [1.5, 2.0].
    # Init: last enter 0, first leave 0.5.  Completion = e - max(0.5, min(0, e)):
    #   rank 0: 1.0 - 0.5 = 0.5; rank 1: 0.5 - 0.5 = 0.
    # Finalize: last enter 2.0.  Wait = min(2.0, e) - b: rank 0 0, rank 1 2.0 - 1.5 = 0.5.
    r = analyze(spliced(tmp_path, "init", runs, [1, 0]))
    expect(r, "mpi_init_completion", {("main/MPI_Init", 0): 0.5})
    expect(r, "mpi_finalize_wait", {("main/MPI_Finalize", 1): 0.5})
    assert not np.any(r.clock_violations)


@pytest.mark.parametrize("mode", ["send", "ssend", "irecv"])
def test_clock_condition_violation(tmp_path, mode):
    def prog(d0):
        p = synth.Program(2)
        getattr(p.rank(0).compute("work", d0), "ssend" if mode == "ssend" else "send")(1, tag=0, size=8)
        r1 = p.rank(1).compute("work", 0.0)
        if mode == "irecv":
            r1.wait(r1.irecv(0, tag=0))
        else:
            r1.recv(0, tag=0)
        return p

    runs = [(prog(0.0), dict(latency=0.5)), (prog(3.0), dict(latency=0.5))]
    # L = 0.5, o = 0.  Run 0 (no work): rank 1 enters its receive (MPI_Recv,
    #   or MPI_Wait after MPI_Irecv) at 0.5 and leaves at 1.0 (eager:
    #   0.5 + L; ssend: max(0.5, 0.5) + L), then Finalize [1.0, 1.5].
    # Run 1 (rank 0 works 3 s): rank 0 enters its send at 3.5 and leaves at
    #   3.5 (eager) or max(3.5, post 0.5) + L = 4.0 (ssend), Finalize [3.5|4.0, ...].
    # Rank 0 from run 1 with rank 1 from run 0: the receive [0.5, 1.0] ends
    # before its send starts (3.5): one clock-condition violation at rank 1.
    # Late Sender is capped by the receive: min(3.5, 1.0) - 0.5 = 0.5.
    # Late Receiver: the send call leaves after the post (0.5), but the post
    # comes before the send's enter: 0.5 - 3.5 < 0 -> none.
    # Finalize: rank 1 enters at 1.0 and leaves at 1.5, before rank 0 enters
    # (3.5 or 4.0): Wait at Finalize = min(3.5|4.0, 1.5) - 1.0 = 0.5.  That
    # leave before the last entry is the second violation at rank 1 (the
    # analysis treats MPI_Finalize as N x N over all ranks).
    r = analyze(spliced(tmp_path, "violation", runs, [1, 0]))
    assert list(r.clock_violations) == [0, 2]
    cp = "main/MPI_Wait" if mode == "irecv" else "main/MPI_Recv"
    expect(r, "mpi_latesender", {(cp, 1): 0.5})
    expect_zero(r, "mpi_latereceiver", "mpi_latesender_wo")
    expect(r, "mpi_finalize_wait", {("main/MPI_Finalize", 1): 0.5})
    # the same runs combined the other way round are consistent point to
    # point; only rank 0 (from run 0) leaves MPI_Finalize (by 1.5) before
    # rank 1 (from run 1, receiving until 4.0) enters it
    r = analyze(spliced(tmp_path, "consistent", runs, [0, 1]))
    assert list(r.clock_violations) == [1, 0]


# ---- the real Score-P trace ----------------------------------------------------

# Late Sender receives of scorep-ping-pong, from `otf2-print` (ticks; clock
# resolution 2095197216 ticks/s).  Late Sender = min(send enter, receive
# leave) - receive enter, where the receive was entered before its send:
#   rank 1, tag 10, 32768 B: MPI_Recv enter 7397467382871185, leave ...382953885;
#           MPI_Send (rank 0) enter 7397467382909410 -> 38225 ticks
#   rank 1, tag 10, 65536 B: MPI_Recv enter 7397467383049071, leave ...383135253;
#           MPI_Send enter 7397467383080590 -> 31519 ticks
#   rank 0, tag 20, 16384 B: MPI_Recv enter 7397467382791058, leave ...382857008;
#           MPI_Send (rank 1) enter 7397467382814755 -> 23697 ticks
#   rank 0, tag 20, 32768 B: MPI_Recv enter 7397467382953366, leave ...382994574;
#           MPI_Send enter 7397467382954467 -> 1101 ticks
# All other 12 receives are entered after their send.
PINGPONG_RESOLUTION = 2095197216
PINGPONG_LATE_SENDER_TICKS = {0: 23697 + 1101, 1: 38225 + 31519}

_EVENT_LINE = re.compile(r"^(ENTER|LEAVE|MPI_SEND|MPI_RECV)\s+(\d+)\s+(\d+)\s+(.*)$")


def _otf2_print_messages(anchor: str):
    """Sends and receives as (enter, leave) ticks of their MPI call, matched in order."""
    out = subprocess.run(["otf2-print", anchor], capture_output=True, text=True, check=True).stdout
    stack = {}  # location -> [(region, enter)]
    pending = {}  # location -> message records waiting for their call's leave
    sends, recvs = {}, {}  # (src, dst, tag) -> [(enter, leave)]
    for line in out.splitlines():
        m = _EVENT_LINE.match(line)
        if not m:
            continue
        kind, loc, ticks, attrs = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if kind == "ENTER":
            stack.setdefault(loc, []).append((re.search(r'Region: "([^"]*)"', attrs).group(1), ticks))
        elif kind == "LEAVE":
            _, enter = stack[loc].pop()
            for table, key in pending.pop(loc, []):
                table.setdefault(key, []).append((enter, ticks))
        else:
            peer = int(re.search(r"(?:Receiver|Sender): (\d+)", attrs).group(1))
            tag = int(re.search(r"Tag: (\d+)", attrs).group(1))
            if kind == "MPI_SEND":
                pending.setdefault(loc, []).append((sends, (loc, peer, tag)))
            else:
                pending.setdefault(loc, []).append((recvs, (peer, loc, tag)))
    pairs = []
    for key, rs in recvs.items():
        assert len(sends[key]) == len(rs)
        pairs += [(key, s, r) for s, r in zip(sends[key], rs)]
    return pairs


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print is not installed")
def test_scorep_pingpong_late_sender_and_receiver(pingpong_dir):
    anchor = str(pingpong_dir / "traces.otf2")
    defs = subprocess.run(["otf2-print", "-G", anchor], capture_output=True, text=True, check=True).stdout
    resolution = int(re.search(r"Ticks per Seconds: (\d+)", defs).group(1))
    assert resolution == PINGPONG_RESOLUTION
    pairs = _otf2_print_messages(anchor)
    assert len(pairs) == 16
    ls_ticks = {0: 0, 1: 0}
    lr_ticks = {0: 0, 1: 0}
    n_late = 0
    for (src, dst, tag), (s_enter, s_leave), (r_enter, r_leave) in pairs:
        # Late Sender, at the receiver
        wait = min(s_enter, r_leave) - r_enter
        if wait > 0:
            ls_ticks[dst] += wait
            n_late += 1
        # Late Receiver, at the sender (MPI_Send): the send returns after the
        # receive was posted, which was after the send started
        if s_leave > r_enter and r_enter - s_enter > 0:
            lr_ticks[src] += r_enter - s_enter
    assert ls_ticks == PINGPONG_LATE_SENDER_TICKS
    assert n_late == 4

    trace = waitscope.open(pingpong_dir)
    assert [loc.id for loc in trace.locations] == [0, 1]  # otf2-print's location = our index
    r = analyze(trace)
    recv_cp = "int main(int, char**)/MPI_Recv"
    send_cp = "int main(int, char**)/MPI_Send"
    # the offset cancels in the differences: seconds = ticks / resolution
    np.testing.assert_allclose(r.get("mpi_latesender", recv_cp),
                               [ls_ticks[0] / resolution, ls_ticks[1] / resolution], rtol=1e-9)
    np.testing.assert_allclose(r.by_location("mpi_latesender"), r.get("mpi_latesender", recv_cp))
    np.testing.assert_allclose(r.get("mpi_cls_count", recv_cp), [2, 2])
    np.testing.assert_allclose(r.get("mpi_latereceiver", send_cp),
                               [lr_ticks[0] / resolution, lr_ticks[1] / resolution], rtol=1e-9)
    np.testing.assert_allclose(r.by_location("mpi_latereceiver"), r.get("mpi_latereceiver", send_cp))
    # tags 10 and 20 alternate in send order: nothing in wrong order
    expect_zero(r, "mpi_latesender_wo")
    assert not np.any(r.clock_violations)


# ---- a reference implementation on the events ----------------------------------
#
# The rules again (those of the module docstring, plus: Late Sender and
# Late Receiver count once per MPI_Waitall, with the largest value, and a
# Waitall that waited for a Late Sender counts no Late Receiver; a Late
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
    # a Waitall that waited for both a late sender and a late receiver
    # waited once: the larger of the two counts
    for call_id in [k for k in late_ls if k in late_lr]:
        if late_lr[call_id][0] > late_ls[call_id][0]:
            del late_ls[call_id]
        else:
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

    # collectives
    for (c, _), members in sites.items():
        members.sort(key=lambda x: x["member"])
        latest = max(x["call"].enter for x in members)
        first_leave = min(x["call"].leave for x in members)
        prefix = -np.inf
        for x in members:
            b, e, cp, loc, op = x["call"].enter, x["call"].leave, x["call"].cp, x["loc"], x["op"]
            prefix = max(prefix, b)
            wait = max(0.0, min(latest, e) - b)
            completion = max(0.0, e - max(first_leave, min(latest, e)))
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
                root_enter = next(y["call"].enter for y in members if y["member"] == x["root"])
                if x["member"] != x["root"]:
                    out["mpi_latebroadcast"][cp, loc] += max(0.0, min(root_enter, e) - b)
            elif op in ("reduce", "gather", "gatherv"):
                if x["member"] == x["root"]:
                    out["mpi_earlyreduce"][cp, loc] += wait
            elif op in ("scan", "exscan"):
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


class _Builder:
    """A random deadlock-free program, built in rounds.

    Every round gives each rank some computation and then one communication
    step whose messages are all sent and received (and requests completed)
    inside the round, in an order that cannot deadlock whatever the sizes
    (where a blocking order needs a send not to wait, its size is eager).
    """

    SIZES = (0, 8, 100, 4096, 100_000)

    def __init__(self, rng: random.Random, max_ranks: int = 6, max_rounds: int = 8):
        self.rng = rng
        self.n = n = rng.randint(2, max_ranks)
        self.max_rounds = max_rounds
        self.eager = rng.choice([0, 64, 65536])
        self.prog = synth.Program(n)
        self.comms = [self.prog.world]
        for _ in range(rng.randint(0, 2)):
            self.comms.append(self.prog.comm(rng.sample(range(n), rng.randint(1, n))))
        self.tag = 0

    def size(self, eager_only: bool = False) -> int:
        sizes = [s for s in self.SIZES if s <= self.eager] if eager_only else self.SIZES
        return self.rng.choice(sizes)

    def new_tag(self) -> int:
        self.tag += 1
        return self.tag

    # ---- steps: each returns {rank: [operation, ...]} ----------------------
    # operations: ("send"|"ssend", peer, tag, size), ("recv", peer, tag),
    # ("isend", key, peer, tag, size), ("irecv", key, peer, tag),
    # ("wait", key), ("waitall", [keys]), ("coll", name, root, size, comm),
    # ("compute", region, d)

    def step_pairs(self):
        rng, ops = self.rng, {}
        ranks = list(range(self.n))
        rng.shuffle(ranks)
        for a, b in zip(ranks[0::2], ranks[1::2]):
            t1, t2 = self.new_tag(), self.new_tag()
            variant = rng.choice(["blocking", "nonblocking", "isend-recv", "waitall-both"])
            if variant == "blocking":
                ops[a] = [(rng.choice(["send", "ssend"]), b, t1, self.size()), ("recv", b, t2)]
                ops[b] = [("recv", a, t1), (rng.choice(["send", "ssend"]), a, t2, self.size())]
            elif variant == "nonblocking":
                for me, peer, out_tag, in_tag in ((a, b, t1, t2), (b, a, t2, t1)):
                    first = [("irecv", "r", peer, in_tag), ("isend", "s", peer, out_tag, self.size())]
                    rng.shuffle(first)
                    keys = ["r", "s"]
                    rng.shuffle(keys)
                    done = [("waitall", keys)] if rng.random() < 0.5 else [("wait", k) for k in keys]
                    ops[me] = first + [("compute", "work", rng.uniform(0, 1e-3))] + done
            elif variant == "isend-recv":
                ops[a] = [("isend", "s", b, t1, self.size()), ("compute", "work", rng.uniform(0, 1e-3)),
                          ("wait", "s")]
                ops[b] = [("recv", a, t1)]
            else:  # one Waitall completes a send and a receive of a late partner
                ops[a] = [("isend", "s", b, t1, self.size()), ("irecv", "r", b, t2), ("waitall", ["s", "r"])]
                ops[b] = [("recv", a, t1), ("compute", "work", rng.uniform(0, 1e-3)),
                          ("send", a, t2, self.size())]
        return ops

    def step_fan_in(self):
        """Several senders to one receiver, received in a random order."""
        rng = self.rng
        dst = rng.randrange(self.n)
        others = [r for r in range(self.n) if r != dst]
        senders = rng.sample(others, rng.randint(1, len(others)))
        msgs = []  # (sender, index, tag)
        for s in senders:
            for i in range(rng.randint(1, 2)):
                msgs.append((s, i, self.new_tag()))
        order = msgs[:]
        rng.shuffle(order)
        ops = {dst: []}
        nonblocking = rng.random() < 0.4
        for s in senders:
            mine = [m for m in msgs if m[0] == s]
            ops[s] = []
            for (_, i, tag) in mine:
                # with blocking receives, a message received after a later
                # message of the same sender must not wait for its receive
                later_first = any(o[0] == s and o[1] > i and order.index(o) < order.index((s, i, tag))
                                  for o in msgs)
                eager_only = later_first and not nonblocking
                kind = "send" if eager_only else rng.choice(["send", "ssend", "isend"])
                if kind == "isend":
                    key = f"s{i}"
                    ops[s] += [("isend", key, dst, tag, self.size()), ("wait", key)]
                else:
                    ops[s].append((kind, dst, tag, self.size(eager_only)))
        if nonblocking:
            keys = []
            for (s, i, tag) in order:
                keys.append(f"r{s}_{i}")
                ops[dst].append(("irecv", keys[-1], s, tag))
            ops[dst].append(("compute", "work", rng.uniform(0, 1e-3)))
            ops[dst].append(("waitall", keys))
        else:
            ops[dst] += [("recv", s, tag) for (s, i, tag) in order]
        return ops

    def step_chain(self):
        perm = list(range(self.n))
        self.rng.shuffle(perm)
        tag = self.new_tag()
        ops = {r: [] for r in perm}
        for prev, cur in zip(perm, perm[1:]):
            ops[prev].append((self.rng.choice(["send", "ssend"]), cur, tag, self.size()))
            ops[cur].append(("recv", prev, tag))
        # each rank receives (from prev) before it sends (to next)
        for r in perm:
            ops[r].sort(key=lambda op: op[0] != "recv")
        return ops

    def step_ring(self):
        n, ops = self.n, {}
        right_tag, left_tag = self.new_tag(), self.new_tag()
        for r in range(n):
            right, left = (r + 1) % n, (r - 1) % n
            first = [("irecv", "a", left, right_tag), ("irecv", "b", right, left_tag),
                     ("isend", "c", right, right_tag, self.size()), ("isend", "d", left, left_tag, self.size())]
            self.rng.shuffle(first)
            keys = ["a", "b", "c", "d"]
            self.rng.shuffle(keys)
            ops[r] = first + [("waitall", keys)]
        return ops

    def step_collective(self):
        rng = self.rng
        comm = rng.choice(self.comms)
        name = rng.choice(["barrier", "bcast", "scatter", "reduce", "gather", "allreduce", "alltoall",
                           "allgather", "scan"])
        root = rng.randrange(comm.size) if name in ("bcast", "scatter", "reduce", "gather") else None
        size = rng.choice([0, 8, 1000])
        return {w: [("coll", name, root, size, comm)] for w in comm.ranks}

    def emit(self, rp: synth.RankProgram, ops) -> None:
        reqs = {}
        for op in ops:
            kind = op[0]
            if kind in ("send", "ssend"):
                getattr(rp, kind)(op[1], tag=op[2], size=op[3])
            elif kind == "recv":
                rp.recv(op[1], tag=op[2])
            elif kind == "isend":
                reqs[op[1]] = rp.isend(op[2], tag=op[3], size=op[4])
            elif kind == "irecv":
                reqs[op[1]] = rp.irecv(op[2], tag=op[3])
            elif kind == "wait":
                rp.wait(reqs.pop(op[1]))
            elif kind == "waitall":
                rp.waitall([reqs.pop(k) for k in op[1]])
            elif kind == "compute":
                rp.compute(op[1], op[2])
            else:
                _, name, root, size, comm = op
                kw = dict(size=size, comm=comm) if name != "barrier" else dict(comm=comm)
                if root is not None:
                    kw["root"] = root
                getattr(rp, name)(**kw)
        assert not reqs

    def build(self) -> synth.Program:
        rng = self.rng
        steps = [self.step_pairs, self.step_fan_in, self.step_chain, self.step_ring, self.step_collective]
        for _ in range(rng.randint(1, self.max_rounds)):
            for r in range(self.n):
                if rng.random() < 0.7:
                    d = 0.0 if rng.random() < 0.3 else rng.uniform(0, 2e-3)
                    self.prog.rank(r).compute(rng.choice(["work", "calc"]), d)
            ops = rng.choice(steps)()
            nested = rng.random() < 0.3
            for r, rank_ops in ops.items():
                rp = self.prog.rank(r)
                if nested:
                    with rp.region("solver"):
                        self.emit(rp, rank_ops)
                else:
                    self.emit(rp, rank_ops)
        return self.prog


def random_run_params(rng: random.Random, eager: int) -> dict:
    return dict(
        latency=rng.choice([0.0, 1e-6, 5e-5, 3e-4]),
        mpi_overhead=rng.choice([0.0, 0.0, 1e-6, 2e-5]),
        bandwidth=rng.choice([None, 1e8, 1e9]),
        eager_limit=eager,
        # coarse clocks make many times equal (ties are edge cases)
        resolution=rng.choice([10**9, 10**6, 10**5]),
    )


N_RANDOM = 600


def test_invariants_on_random_programs(tmp_path):
    rng = random.Random(20260101)
    n_patterns = dict.fromkeys(PATTERNS, 0)
    for i in range(N_RANDOM):
        builder = _Builder(rng)
        prog = builder.build()
        params = random_run_params(rng, builder.eager)
        if i % 10 == 0:
            trace = waitscope.open(prog.write(tmp_path / f"p{i}", **params))
        else:
            trace = prog.run(**params)
        r = trace.analyze()
        try:
            check_invariants(r)
            compare_with_reference(r, trace)
            assert not np.any(r.clock_violations)
            for seed in (1, 2, 977):
                other = trace.analyze(schedule_seed=seed)
                assert other.cube.tobytes() == r.cube.tobytes(), f"schedule_seed={seed} changes the result"
                assert np.array_equal(other.clock_violations, r.clock_violations)
        except AssertionError as exc:
            raise AssertionError(f"random program {i} ({prog!r}, {params}): {exc}") from None
        for m in PATTERNS:
            n_patterns[m] += bool(r.get(m).any())
    # the generator reaches every pattern but the completions: the executor
    # lets all members of a collective (and of MPI_Init) leave together
    never = {"mpi_init_completion", "mpi_barrier_completion", "mpi_nxn_completion"}
    assert {m for m, k in n_patterns.items() if k == 0} == never


def random_spliced(tmp_path, rng: random.Random, name: str):
    """A random program run twice with different costs, its locations picked from either run.

    Returns (program, runs, pick, trace); the trace has distinct leave
    times in collectives and broken clocks."""
    builder = _Builder(rng)
    prog = builder.build()
    resolution = rng.choice([10**9, 10**6])
    runs = []
    for _ in range(2):
        params = random_run_params(rng, builder.eager)
        params["resolution"] = resolution
        runs.append((prog, params))
    pick = [rng.randrange(2) for _ in range(builder.n)]
    return prog, runs, pick, spliced(tmp_path, name, runs, pick)


def test_invariants_on_random_spliced_archives(tmp_path):
    """Locations from runs of one program with different costs: broken clocks."""
    rng = random.Random(77)
    n_violations = 0
    n_patterns = dict.fromkeys(PATTERNS, 0)
    for i in range(40):
        prog, runs, pick, trace = random_spliced(tmp_path, rng, f"s{i}")
        r = trace.analyze()
        try:
            check_invariants(r)
            compare_with_reference(r, trace)
            for seed in (1, 977):
                assert trace.analyze(schedule_seed=seed).cube.tobytes() == r.cube.tobytes()
        except AssertionError as exc:
            raise AssertionError(f"spliced program {i} ({prog!r}, {runs[0][1]}, {runs[1][1]}, {pick}): {exc}") from None
        n_violations += int(np.sum(r.clock_violations))
        for m in PATTERNS:
            n_patterns[m] += bool(r.get(m).any())
    assert n_violations > 0
    assert n_patterns["mpi_barrier_completion"] and n_patterns["mpi_nxn_completion"]


def test_larger_random_programs_do_not_depend_on_the_schedule():
    rng = random.Random(4242)
    for i in range(12):
        builder = _Builder(rng, max_ranks=16, max_rounds=40)
        prog = builder.build()
        params = random_run_params(rng, builder.eager)
        trace = prog.run(**params)
        r = trace.analyze()
        try:
            check_invariants(r)
            compare_with_reference(r, trace)
            for seed in range(1, 6):
                assert trace.analyze(schedule_seed=seed).cube.tobytes() == r.cube.tobytes(), seed
        except AssertionError as exc:
            raise AssertionError(f"random program {i} ({prog!r}, {params}): {exc}") from None


def test_wide_collectives_agree_with_the_reference():
    """Collective instances of hundreds of members (processed once per
    instance, shared by the members) give the reference's wait states, and
    delay costs and the critical path keep their conservation laws."""
    rng = random.Random(31337)
    done = 0
    while done < 3:
        builder = _Builder(rng, max_ranks=500, max_rounds=10)
        if builder.n < 200:
            continue
        prog = builder.build()
        params = random_run_params(rng, builder.eager)
        trace = prog.run(**params)
        r = trace.analyze()
        full = trace.analyze(delay_model="proportional", critical_path=True)
        try:
            check_invariants(r)
            compare_with_reference(r, trace)
            for m in PATTERNS:
                assert full.get(m).tobytes() == r.get(m).tobytes(), m
            handled = full.handled_waiting()
            assert abs(full.total("delay") - handled) <= 1e-9 * max(1.0, handled)
            cp = full.critical_path
            assert cp.length == pytest.approx(cp.end - cp.start, rel=1e-9, abs=1e-12)
            assert trace.analyze(delay_model="proportional", critical_path=True,
                                 schedule_seed=5).cube.tobytes() == full.cube.tobytes()
        except AssertionError as exc:
            raise AssertionError(f"wide program ({prog!r}, {params}): {exc}") from None
        done += 1
