"""The rules of Scalasca 2.6 that the traces of real programs showed, each on
a small generated trace that isolates it, and the four defects of Scalasca
2.6 that docs/metrics.md documents, each as its worked example (with
``reproduce_scalasca=True`` giving Scalasca's value).

All values are worked out by hand from the programs (no latency and no MPI
overhead unless said; times in seconds).
"""

from __future__ import annotations

import numpy as np
import pytest

import waitscope
from waitscope import _core, synth

from conftest import BUNDLED

MODELS = ("proportional", "wait-first")


def times_of(trace: waitscope.Trace) -> list[np.ndarray]:
    return [trace.events(i).time.copy() for i in range(trace.n_locations)]


def set_times(trace: waitscope.Trace, times: list[np.ndarray]) -> waitscope.Trace:
    _core.set_times(trace._core, [np.ascontiguousarray(t, dtype=np.float64) for t in times])
    return trace


def run(prog: synth.Program, **params) -> waitscope.Trace:
    params.setdefault("latency", 0.0)
    params.setdefault("mpi_overhead", 0.0)
    return prog.run(resolution=1000, **params)


# ---- the program region ---------------------------------------------------------------


def test_program_region_holds_the_time_outside_main():
    """Score-P's ProgramBegin starts each location's events: the time until
    main is entered and after it is left is the program region's, and it is
    visited once per location (Scalasca's report of the real programs)."""
    trace = waitscope.open(BUNDLED)
    r = trace.analyze()
    root = trace.program_region
    assert root == "ping-pong.otf2"
    for loc in range(trace.n_locations):
        ev = trace.events(loc)
        kind, time, cp = np.asarray(ev.kind), np.asarray(ev.time), np.asarray(ev.callpath)
        main = [i for i in range(len(kind)) if cp[i] == trace.callpath_index("main")]
        outside = (time[main[0]] - time[0]) + (time[-1] - time[main[-1]])
        assert outside > 0
        assert r.get("time", root, loc) == pytest.approx(outside, abs=1e-12)
        assert r.get("visits", root, loc) == 1.0
        assert r.by_location("time")[loc] == pytest.approx(time[-1] - time[0], abs=1e-12)


# ---- MPI_Waitall: the Late Sender is its wait state ---------------------------------------


def test_waitall_late_sender_wins_over_a_larger_late_receiver():
    """Rank 0 posts an MPI_Isend to rank 1 (rendezvous) and an MPI_Irecv from
    rank 2 and waits for both from 1.0.  Rank 2 sends at 3.0 (a Late Sender
    of 2.0); rank 1 posts its receive at 5.0 (a Late Receiver of 4.0 had it
    been alone).  Scalasca 2.6 counts the Late Sender and no Late Receiver
    for the call, as on the NPB SP halo exchange."""
    prog = synth.Program(3)
    b = prog.rank(0).compute("work", 1.0)
    b.waitall([b.isend(1, tag=1, size=1000), b.irecv(2, tag=2)])
    b = prog.rank(1).compute("work", 5.0)
    b.wait(b.irecv(0, tag=1))
    prog.rank(2).compute("work", 3.0).send(0, tag=2, size=8)
    r = run(prog, latency=1e-3, eager_limit=100).analyze(delay_model="proportional")
    assert r.get("mpi_latesender", "MPI_Waitall") == pytest.approx([2.0, 0.0, 0.0])
    assert r.total("mpi_latereceiver") == 0.0 and r.total("mpi_clr_count") == 0.0
    assert r.get("mpi_cls_count", "MPI_Waitall").tolist() == [1.0, 0.0, 0.0]
    # the delay: rank 2's excess work over rank 0's since MPI_Init
    assert r.get("delay_latesender", "work") == pytest.approx([0.0, 0.0, 2.0])


def test_waitall_without_late_sender_keeps_its_largest_late_receiver():
    """The same Waitall with the receive's data on time: its wait state is
    the Late Receiver of 4.0 (the largest of its sends)."""
    prog = synth.Program(3)
    b = prog.rank(0).compute("work", 1.0)
    b.waitall([b.isend(1, tag=1, size=1000), b.irecv(2, tag=2)])
    b = prog.rank(1).compute("work", 5.0)
    b.wait(b.irecv(0, tag=1))
    prog.rank(2).send(0, tag=2, size=8)
    r = run(prog, latency=1e-3, eager_limit=100).analyze()
    assert r.total("mpi_latesender") == 0.0
    assert r.get("mpi_latereceiver", "MPI_Waitall") == pytest.approx([4.0, 0.0, 0.0])


# ---- collectives: their begin and end records, Scalasca's synchronization rules -------------


def barrier_program() -> waitscope.Trace:
    """MPI overhead 0.25: MPI_Init [0, 0.25]; rank 0 works 1.0, rank 1 2.0,
    then a barrier, entered at 1.25 and 2.25, both leave at 2.5."""
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).barrier()
    prog.rank(1).compute("work", 2.0).barrier()
    return run(prog, mpi_overhead=0.25)


def test_collectives_are_timed_by_their_begin_and_end_records():
    """Score-P writes MpiCollectiveBegin after the Enter and MpiCollectiveEnd
    before the Leave.  Moved 0.1 into the call on rank 1 (begin at 2.35)
    and 0.05 into it on rank 0 (end at 2.45): rank 0 waits from its begin
    (1.25) to the latest begin (2.35), not to rank 1's Enter (2.25), and
    the completion is measured from the earliest end (2.45) to each end, not
    to the Leaves (both 2.5: no completion)."""
    trace = barrier_program()
    times = times_of(trace)
    for loc, field, shift in ((1, _core.EV_COLL_BEGIN, 0.1), (0, _core.EV_COLL_END, -0.05)):
        kinds = np.asarray(trace.events(loc).kind)
        (i,) = np.nonzero(kinds == field)
        times[loc][i[0]] += shift
    set_times(trace, times)
    r = trace.analyze()
    assert r.get("mpi_barrier_wait", "MPI_Barrier") == pytest.approx([1.1, 0.0])
    assert list(r.clock_violations) == [0, 0]
    # completion: from max(earliest end 2.45, min(latest begin, own end)) to the own end
    assert r.get("mpi_barrier_completion", "MPI_Barrier") == pytest.approx([0.0, 0.05])


@pytest.mark.parametrize("op", ["bcast", "allreduce", "alltoall"])
def test_collectives_without_data_have_no_wait_states(op):
    """Rank 1 works 2.0 (and is the root), rank 0 enters at 1.0: with 8
    bytes rank 0 waits 1.0; without data (Scalasca: "no payload, no
    synchronization point") nothing waits.  Barriers synchronize without
    data."""
    for size, wait in ((8, 1.0), (0, 0.0)):
        prog = synth.Program(2)
        for rank, work in ((0, 1.0), (1, 2.0)):
            b = prog.rank(rank).compute("work", work)
            if op == "bcast":
                b.bcast(root=1, size=size)
            else:
                getattr(b, op)(size)
        r = run(prog).analyze(delay_model="proportional")
        metric = "mpi_latebroadcast" if op == "bcast" else "mpi_wait_nxn"
        assert r.by_location(metric) == pytest.approx([wait, 0.0]), size
        assert r.get("delay_12n" if op == "bcast" else "delay_n2n", "work") == pytest.approx([0.0, wait]), size


def test_a_collective_that_opens_the_interval_counts_its_completion():
    """MPI overhead 0.25.  Both ranks meet in MPI_Allreduce at 1.25 and end
    it at 1.5; rank 1 ends it 0.3 later (moved: its completion), works 0.5
    and enters a barrier at 2.3; rank 0 works 0.4 and waits there 0.4.  As the start of the barrier's
    interval the MPI_Allreduce counts its completion (Scalasca 2.6): rank 1's
    excess over rank 0 is {MPI_Allreduce: 0.3, work: 0.1}, and the barrier's
    0.4 s (collectives: no cap) go 0.3 to the MPI_Allreduce, 0.1 to work."""
    prog = synth.Program(2)
    for rank, work in ((0, 0.4), (1, 0.5)):
        prog.rank(rank).compute("pre", 1.0).allreduce(8).compute("work", work).barrier()
    trace = run(prog, mpi_overhead=0.25)
    times = times_of(trace)
    ev = trace.events(1)
    kinds = np.asarray(ev.kind)
    (end,) = np.nonzero(kinds == _core.EV_COLL_END)
    times[1][end[0]:] += 0.3  # rank 1's MPI_Allreduce ends (and everything after) 0.3 later
    (end,) = np.nonzero(np.asarray(trace.events(0).kind) == _core.EV_COLL_END)
    times[0][end[1]:] += 0.3  # so does rank 0's barrier, which needs rank 1
    set_times(trace, times)
    r = trace.analyze(delay_model="proportional")
    assert r.get("mpi_nxn_completion", "MPI_Allreduce") == pytest.approx([0.0, 0.3])
    assert r.get("mpi_barrier_wait", "MPI_Barrier") == pytest.approx([0.4, 0.0])
    assert r.get("delay_barrier", "MPI_Allreduce") == pytest.approx([0.0, 0.3])
    assert r.get("delay_barrier", "work") == pytest.approx([0.0, 0.1])
    assert r.undistributed == 0.0


def test_mpi_init_counts_as_activity():
    """Rank 1 enters MPI_Init 0.5 after rank 0: rank 0's MPI_Init lasts 0.5
    longer.  No wait state is charged in MPI_Init, and the critical-path
    indicators count all of it as activity (Scalasca 2.6): rank 0's
    activity in MPI_Init is its whole call, of which the path's time in it
    is critical and the rest non-critical."""
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0)
    prog.rank(1).compute("work", 1.0)
    trace = run(prog, latency=0.75)  # MPI_Init [0, 0.75] on both
    times = times_of(trace)
    kinds = np.asarray(trace.events(1).kind)
    enters = np.nonzero(kinds == _core.EV_ENTER)[0]
    times[1][: enters[2] + 1] = 0.5  # the program, main and MPI_Init begin at 0.5 on rank 1
    set_times(trace, times)
    r = trace.analyze(critical_path=True)
    init = r.callpath_index("MPI_Init")
    # rank 0 in MPI_Init 0.75 (0 to the common leave at 0.75), rank 1 0.25
    assert r.get("time")[init] == pytest.approx([0.75, 0.25])
    assert r.total("mpi_init_completion") == 0.0
    act = r.get("critical_path_activities")[init] + r.get("non_critical_path_activities")[init]
    assert act == pytest.approx([0.75, 0.25])
    path = r.get("critical_path")[init].sum()
    assert r.get("critical_path_activities")[init] == pytest.approx(np.minimum([0.75, 0.25], path))


# ---- the four defects of Scalasca 2.6 (docs/metrics.md), reproduced on request -------------


def test_defect_critical_path_longer_than_the_run():
    """Rank 1's clock runs 0.8 behind: its receive from rank 0 ends before the
    send began (test_clock.test_critical_path_never_overlaps_itself).
    waitscope's path is as long as the run from MPI_Init to the last
    MPI_Finalize; Scalasca 2.6's continues on rank 0 from the send's start
    and counts 0.8 s twice: 5.3 s of path for 4.5 s."""
    from test_clock import exchange_program, shifted

    trace = shifted(exchange_program(), 1, -0.8)
    ours = trace.analyze(critical_path=True)
    theirs = trace.analyze(critical_path=True, reproduce_scalasca=True)
    assert ours.critical_path.length == pytest.approx(ours.critical_path.end - ours.critical_path.start)
    assert ours.total("critical_path") == pytest.approx(4.5)
    assert theirs.total("critical_path") == pytest.approx(5.3)


def wrong_order_program() -> waitscope.Trace:
    """Rank 0 receives in region a from rank 1 (sent at 2.0: waits 2.0), in
    region b from rank 2 (sent at 3.0: waits 1.0), then from rank 1 a message
    sent at 0.0: both Late Senders were in wrong order, revealed by that one
    receive, a from the same source, b from a different one."""
    prog = synth.Program(3)
    r0 = prog.rank(0)
    with r0.region("a"):
        r0.recv(1, tag=1)
    with r0.region("b"):
        r0.recv(2, tag=2)
    r0.recv(1, tag=9)
    prog.rank(1).send(0, tag=9, size=8).compute("w", 2.0).send(0, tag=1, size=8)
    prog.rank(2).compute("w", 3.0).send(0, tag=2, size=8)
    return run(prog)


def test_defect_wrong_order_charged_as_the_first_late_sender():
    trace = wrong_order_program()
    ours = trace.analyze()
    theirs = trace.analyze(reproduce_scalasca=True)
    for r in (ours, theirs):
        assert r.get("mpi_latesender_wo", "a/MPI_Recv")[0] == pytest.approx(2.0)
        assert r.get("mpi_latesender_wo", "b/MPI_Recv")[0] == pytest.approx(1.0)
    # waitscope: each wrong-order instance in its own call path and class
    assert ours.get("mpi_lswo_same", "a/MPI_Recv")[0] == pytest.approx(2.0)
    assert ours.get("mpi_lswo_different", "b/MPI_Recv")[0] == pytest.approx(1.0)
    assert ours.get("mpi_clswo_count", "a/MPI_Recv")[0] == ours.get("mpi_clswo_count", "b/MPI_Recv")[0] == 1.0
    # Scalasca 2.6: both as the first (a, same source): a's child exceeds its parent
    assert theirs.get("mpi_lswo_same", "a/MPI_Recv")[0] == pytest.approx(3.0)
    assert theirs.total("mpi_lswo_different") == 0.0
    assert theirs.get("mpi_clswo_count", "a/MPI_Recv")[0] == 2.0
    assert theirs.get("mpi_clswo_count", "b/MPI_Recv")[0] == 0.0


def collective_longterm_program() -> waitscope.Trace:
    """Ranks 0, 1, 2 meet in a barrier of their own communicator at 3.5,
    where rank 0 is last (rank 1 waits 1.5, rank 2 2.5).  Before it rank 0
    received from rank 1 at 1.0 (waiting 1.0: rank 1's interval with rank 0
    starts there), waited 2.0 for a message of rank 3 (not in the barrier)
    and worked d 0.5."""
    prog = synth.Program(4)
    c = prog.comm([0, 1, 2])
    prog.rank(1).compute("w1", 1.0).send(0, tag=1, size=8).compute("a", 1.0).barrier(c)
    prog.rank(0).recv(1, tag=1).recv(3, tag=3).compute("d", 0.5).barrier(c)
    prog.rank(3).compute("x", 3.0).send(0, tag=3, size=8)
    prog.rank(2).compute("a", 1.0).barrier(c)
    return run(prog)


def test_defect_collective_long_term_costs_lost():
    """Proportional model.  Rank 2's 2.5 s against rank 0's interval since
    MPI_Init (excess d 0.5, waits 1.0 + 2.0): s = 2.5 / 3.5, d gets 5/14,
    the wait for rank 3 passes on 2.0 * 5/7 = 10/7.  Rank 1's 1.5 s against
    rank 0's interval since their message (d 0.5, the wait of 2.0):
    s = 1.5 / 2.5, d gets 3/10, the wait for rank 3 passes on 2.0 * 3/5 = 6/5.
    Rank 3's x (its 3.0 against rank 0's nothing) then carries 10/7 + 6/5 =
    92/35 of barrier long-term costs.  Scalasca 2.6 applies rank 1's share
    only from a later point of another member on, of which there is none:
    x carries 10/7 and 6/5 is lost (undistributed)."""
    trace = collective_longterm_program()
    ours = trace.analyze(delay_model="proportional")
    theirs = trace.analyze(delay_model="proportional", reproduce_scalasca=True)
    for r in (ours, theirs):
        assert r.get("mpi_barrier_wait", "MPI_Barrier") == pytest.approx([0.0, 1.5, 2.5, 0.0])
        assert r.get("delay_barrier", "d")[0] == pytest.approx(5 / 14 + 3 / 10)
        assert r.get("delay_barrier_longterm", "w1")[1] == pytest.approx(2.5 / 3.5)
    assert ours.get("delay_barrier_longterm", "x")[3] == pytest.approx(92 / 35)
    assert ours.undistributed == 0.0
    assert theirs.get("delay_barrier_longterm", "x")[3] == pytest.approx(10 / 7)
    assert theirs.undistributed == pytest.approx(6 / 5)
    for r in (ours, theirs):
        assert r.total("delay") + r.undistributed == pytest.approx(r.handled_waiting())


def late_receiver_program() -> waitscope.Trace:
    """Latency 0.1.  Rank 0's MPI_Ssend to rank 1 from 0.1 waits for its
    receive, posted at 1.1 (a Late Receiver of 1.0), and leaves at 1.2;
    rank 1's MPI_Recv leaves 0.05 later (moved).  Rank 0 then sends to
    rank 2 with MPI_Ssend (1.2 to 1.3, rank 2 waiting since 0.1), works s
    0.5 and sends to rank 1 at 1.8, for which rank 1 waits from 1.25: a
    Late Sender of 0.55."""
    prog = synth.Program(3)
    prog.rank(0).ssend(1, tag=1, size=8).ssend(2, tag=5, size=8).compute("s", 0.5).send(1, tag=2, size=8)
    prog.rank(1).compute("r", 1.0).recv(0, tag=1).recv(0, tag=2)
    prog.rank(2).recv(0, tag=5)
    trace = run(prog, latency=0.1)
    times = times_of(trace)
    kinds = np.asarray(trace.events(1).kind)
    first = int(np.nonzero(kinds == _core.EV_RECV)[0][0])
    times[1][first:] += 0.05
    return set_times(trace, times)


def test_defect_negative_completion_after_a_late_receiver():
    """The Late Sender's interval on rank 0 runs from its MPI_Ssend to rank 1
    (which waited for a Late Receiver: its call counts nothing) to the send
    at 1.8: MPI_Ssend 0.1 (to rank 2) and s 0.5; rank 1 spent 0.05 in its
    MPI_Recv after the send left.  Excess {MPI_Ssend: 0.1, s: 0.5}: 0.55 of
    0.6 charged, 0.0917 to MPI_Ssend, 0.4583 to s.  Scalasca 2.6 counts the
    first MPI_Ssend's completion as 1.2 - 1.25 = -0.05, which takes 0.05 off
    the other MPI_Ssend: {MPI_Ssend: 0.05, s: 0.5}, both charged whole."""
    trace = late_receiver_program()
    ours = trace.analyze(delay_model="proportional")
    theirs = trace.analyze(delay_model="proportional", reproduce_scalasca=True)
    for r in (ours, theirs):
        assert r.get("mpi_latereceiver", "MPI_Ssend") == pytest.approx([1.0, 0.0, 0.0])
        assert r.get("mpi_latesender", "MPI_Recv") == pytest.approx([0.0, 0.55, 1.1])
    # rank 2's 1.1 s go to rank 0's MPI_Ssend to rank 1 (its 0.1 of work beyond the waiting) ... hand-worked below
    late = 0.55
    assert ours.get("delay_latesender", "s")[0] == pytest.approx(late * 0.5 / 0.6)
    assert theirs.get("delay_latesender", "s")[0] == pytest.approx(0.5)
    ssend_others = 0.1  # rank 2's Late Sender, the same in both
    assert ours.get("delay_latesender", "MPI_Ssend")[0] == pytest.approx(ssend_others + late * 0.1 / 0.6)
    assert theirs.get("delay_latesender", "MPI_Ssend")[0] == pytest.approx(ssend_others + 0.05)
