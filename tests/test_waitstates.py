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

import numpy as np
import pytest

import waitscope
from waitscope import synth

from random_programs import _Builder, _sync_program, random_run_params, random_spliced, spliced
from reference_oracle import PATTERNS, check_invariants, compare_with_reference

RES = 1000  # ticks per second in the hand-worked tests
L = 0.5  # latency used by most hand-worked tests


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


@pytest.mark.parametrize("n", [3, 12])
def test_irecvs_completed_in_reverse_order(run, n):
    """Requests completed in the reverse order of their posts: the receives'
    channel-1 points (their posts) are met last to first and put in event
    order (n = 12 by the ordering's fallback past 4n moves, n = 3 by
    insertion alone; the sanitizer run checks both for memory errors)."""
    prog = synth.Program(2)
    r0 = prog.rank(0).compute("work", 3.0)
    for tag in range(n):
        r0.send(1, tag=tag, size=8)
    r1 = prog.rank(1)
    reqs = [r1.irecv(0, tag=tag) for tag in range(n)]
    for req in reversed(reqs):
        r1.wait(req)
    r = analyze(run(prog))
    # L = 0.5, o = 0: rank 1 posts every receive at 0.5 and enters its
    # first MPI_Wait (the last tag) at 0.5; rank 0 enters every MPI_Send at
    # 3.5, all arrive at 4.0.  Only the first MPI_Wait waits: min(3.5, 4.0)
    # - 0.5 = 3.0; the others are entered at 4.0, after their sends.
    expect(r, "mpi_latesender", {("main/MPI_Wait", 1): 3.0})
    expect(r, "mpi_cls_count", {("main/MPI_Wait", 1): 1})
    expect(r, "comms_recv", {("main/MPI_Wait", 1): n})
    expect_zero(r, "mpi_latereceiver")
    trace = run(prog)
    full = trace.analyze(delay_model="proportional", critical_path=True)
    assert np.allclose(full.get("mpi_latesender"), r.get("mpi_latesender"), rtol=0, atol=1e-9)
    # the simulation's replay visits every event and meets the posts in
    # order: without a hypothesis every event keeps its time
    sim = trace.simulate(progress=False)
    for loc in range(trace.n_locations):
        np.testing.assert_allclose(sim.events(loc).time, trace.events(loc).time, rtol=0, atol=1e-12)


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
    # the program, main, Init, Finalize + ops + computes
    per_location(r, "visits", [4, 4 + 4 + 2, 4, 4 + 4 + 3, 4 + 4 + 4])


@pytest.mark.parametrize("threads", [1, 2])
def test_roots_and_members_of_several_communicators(run, threads):
    # every location is a member of two sub-communicators in different
    # orders and of the world: its index among the members, and the root,
    # differ per communicator
    prog = synth.Program(3)
    a = prog.comm([2, 0, 1])  # a's rank 0 = world 2, 1 = world 0, 2 = world 1
    b = prog.comm([1, 2, 0])  # b's rank 0 = world 1, 1 = world 2, 2 = world 0
    w0, w1, w2 = prog.rank(0), prog.rank(1), prog.rank(2)
    # round 1: bcast on a from a's rank 0 = world 2
    w0.bcast(root=0, size=8, comm=a)
    w1.bcast(root=0, size=8, comm=a)
    w2.compute("work", 2.0).bcast(root=0, size=8, comm=a)
    # round 2: bcast on b from b's rank 2 = world 0
    w0.compute("work", 2.0).bcast(root=2, size=8, comm=b)
    w1.bcast(root=2, size=8, comm=b)
    w2.bcast(root=2, size=8, comm=b)
    # round 3: reduce on the world to world 1
    w0.compute("work", 1.0).reduce(root=1, size=8)
    w1.reduce(root=1, size=8)
    w2.compute("work", 2.0).reduce(root=1, size=8)
    r = run(prog).analyze(threads=threads)
    # L = 0.5, o = 0.  MPI_Init leaves at 0.5 everywhere.
    # round 1: enters w0 0.5, w1 0.5, root w2 2.5; the root leaves at 2.5,
    #   the others at 2.5 + L = 3.0.  Late Broadcast: w0 and w1 2.5 - 0.5 = 2.0.
    # round 2: enters root w0 3.0 + 2.0 = 5.0, w1 3.0, w2 2.5; the root leaves
    #   at 5.0, the others at 5.5.  Late Broadcast: w1 2.0, w2 2.5.
    # round 3: enters w0 6.0, root w1 5.5, w2 7.5; the root leaves at
    #   7.5 + L = 8.0.  Early Reduce at w1: min(7.5, 8.0) - 5.5 = 2.0.
    expect(r, "mpi_latebroadcast", {("main/MPI_Bcast", 0): 2.0, ("main/MPI_Bcast", 1): 2.0 + 2.0,
                                    ("main/MPI_Bcast", 2): 2.5})
    expect(r, "mpi_earlyreduce", {("main/MPI_Reduce", 1): 2.0})
    # bcast bytes: the root (3*8, 8), the others (0, 8)
    expect(r, "comms_cdst", {("main/MPI_Bcast", 0): 1, ("main/MPI_Bcast", 1): 2, ("main/MPI_Bcast", 2): 1})
    expect(r, "comms_csrc", {("main/MPI_Reduce", 0): 1, ("main/MPI_Reduce", 2): 1})


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
    # visits: the program, main, MPI_Init, work, one MPI call per operation, MPI_Finalize
    expect(r, "visits", {(cp, loc): 1 for loc, cps in (
        (0, ("synthetic", "main", "main/MPI_Init", "main/work", "main/MPI_Send", "main/MPI_Barrier", "main/MPI_Allreduce",
             "main/MPI_Finalize")),
        (1, ("synthetic", "main", "main/MPI_Init", "main/MPI_Recv", "main/work", "main/MPI_Barrier", "main/MPI_Allreduce",
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
# (spliced() and the programs it runs are in tests/random_programs.py)


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


def test_barrier_chain_longer_than_the_instance_ring():
    """300 barriers in a row on 3 ranks: a location produces its
    contributions to up to 64 of them ahead (256 between threads), more
    than the in-process transport's ring of live instances starts with
    (64 slots; it grows when two live instances would share one).  In each
    iteration one rank computes 3 ms, the others 1 ms, and all leave the
    barrier together, so each of the others waits 2 ms: rank 0 is late in
    104 iterations (blocks of 7, the last one of 6), ranks 1 and 2 in 98."""
    p = synth.Program(3)
    for it in range(300):
        late = (it // 7) % 3
        for r in range(3):
            p.rank(r).compute("work", 0.001 * (3 if r == late else 1)).barrier()
    trace = p.run()
    full = {"delay_model": "proportional", "critical_path": True}
    r = trace.analyze(**full)
    expected = 0.002 * np.array([300 - 104, 300 - 98, 300 - 98])
    assert np.allclose(r.get("mpi_barrier_wait").sum(axis=0), expected, rtol=0, atol=1e-9)
    compare_with_reference(trace.analyze(), trace)
    for threads in (2, 3):
        assert trace.analyze(threads=threads, **full).cube.tobytes() == r.cube.tobytes(), threads


# ---- random programs against the reference (tests/reference_oracle.py) -------


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
