"""Wait-state records: one per instance, made by the C core where it adds
the waiting time to the cube (``analyze(wait_records=True)``,
``AnalysisResult.wait_states``).

Part 1 lists every record of small programs, worked out by hand from the
timing model in the docstring of waitscope/synth.py (the same programs
and rules as tests/test_waitstates.py: Late Sender [enter of the
receiving call, min(send enter, its leave)], Late Receiver [enter of the
call completing the send, post of the receive], collectives [own enter,
min(reference enter, own leave)], completions [max(first leave, min(last
enter, own leave)), own leave]).  Times are multiples of 1/4 s at 1000
ticks/s, exact in binary.  Every pattern appears at least once.

Part 2 analyzes random programs (the generator of tests/random_programs.py)
and checks that the records add up to the cube, per metric, call path and
location, and that their numbers are the count metrics.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import waitscope
from waitscope import synth
from random_programs import _Builder, _sync_program, random_run_params, random_spliced, spliced
from conftest import relative_names

RES = 1000
L = 0.5

WAIT_METRICS = (
    "mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_barrier_completion", "mpi_wait_nxn",
    "mpi_nxn_completion", "mpi_latebroadcast", "mpi_earlyreduce", "mpi_earlyscan", "mpi_finalize_wait",
    "mpi_init_completion",
)
COLLECTIVE_METRICS = {"mpi_barrier_wait", "mpi_barrier_completion", "mpi_wait_nxn", "mpi_nxn_completion",
                      "mpi_latebroadcast", "mpi_earlyreduce", "mpi_earlyscan"}
COUNTS = {  # record selection -> count metrics
    "mpi_latesender": ("mpi_sls_count", "mpi_cls_count"),
    "mpi_latereceiver": ("mpi_slr_count", "mpi_clr_count"),
    "wrong order": ("mpi_slswo_count", "mpi_clswo_count"),
}
EV_LEAVE, EV_SEND, EV_ISEND_COMPLETE, EV_RECV, EV_IRECV, EV_COLL_END = 2, 3, 5, 7, 8, 12


def run(prog: synth.Program, **params) -> waitscope.Trace:
    params.setdefault("latency", L)
    params.setdefault("resolution", RES)
    return prog.run(**params)


def check_fields(trace: waitscope.Trace, r: waitscope.AnalysisResult) -> np.ndarray:
    """The records, after checking what follows from the trace for every one of them."""
    w = r.wait_states
    assert w.dtype.names == ("location", "rank", "callpath", "metric", "wrong_order", "start", "end", "wait",
                             "event", "partner", "partner_rank")
    assert np.all(w["wait"] > 0)
    assert np.array_equal(w["end"] - w["start"], w["wait"])  # exactly
    assert set(w["metric"]) <= set(WAIT_METRICS)
    assert np.all(w["wrong_order"][w["metric"] != "mpi_latesender"] == "")
    ranks = r.location_ranks
    assert np.array_equal(w["rank"], ranks[w["location"]])
    has_partner = w["partner"] >= 0
    assert np.array_equal(has_partner, ~np.isin(w["metric"], ["mpi_barrier_completion", "mpi_nxn_completion",
                                                              "mpi_init_completion"]))
    assert np.array_equal(w["partner_rank"][has_partner], ranks[w["partner"][has_partner]])
    assert np.all(w["partner_rank"][~has_partner] == -1)
    # ordered by location, event, metric (in the order of WAIT_METRICS)
    code = np.array([WAIT_METRICS.index(m) for m in w["metric"]])
    keys = list(zip(w["location"].tolist(), w["event"].tolist(), code.tolist()))
    assert all(a < b for a, b in zip(keys, keys[1:]))
    for loc in np.unique(w["location"]):
        mine = w[w["location"] == loc]
        ev = trace.events(int(loc))
        kind = ev.kind[mine["event"]]
        # the event lies in the waiting call (the call path the metric is charged to)
        assert np.array_equal(ev.callpath[mine["event"]], mine["callpath"])
        for x, k in zip(mine, kind):
            m = str(x["metric"])
            if m == "mpi_latesender":
                assert k in (EV_RECV, EV_IRECV), x
            elif m == "mpi_latereceiver":
                assert k in (EV_SEND, EV_ISEND_COMPLETE), x
            elif m in COLLECTIVE_METRICS:
                assert k == EV_COLL_END, x
            else:  # MPI_Init / MPI_Finalize: their Leave
                assert k == EV_LEAVE and ev.ref[x["event"]] == x["callpath"], x
        # a point-to-point record's partner is that of its message
        msg = trace.messages(int(loc))
        partner_of = dict(zip(msg["event"].tolist(), msg["partner"].tolist()))
        for x in mine[mine["metric"] == "mpi_latesender"]:
            assert partner_of[int(x["event"])] == x["partner"]
        for x in mine[(mine["metric"] == "mpi_latereceiver") & (kind == EV_SEND)]:
            assert partner_of[int(x["event"])] == x["partner"]
    return w


def records(trace: waitscope.Trace, **options) -> list[tuple]:
    """(location, call path, metric, wrong_order, start, end, wait, partner) of every record, in order."""
    r = trace.analyze(wait_records=True, **options)
    w = check_fields(trace, r)
    names = relative_names(r)
    return [(int(x["location"]), names[int(x["callpath"])], str(x["metric"]), str(x["wrong_order"]),
             float(x["start"]), float(x["end"]), float(x["wait"]), int(x["partner"])) for x in w]


def event_of(r: waitscope.AnalysisResult, metric: str, location: int) -> list[int]:
    w = r.wait_states
    return w["event"][(w["metric"] == metric) & (w["location"] == location)].tolist()


# ---- point to point ---------------------------------------------------------------------


def test_late_sender_blocking_receive():
    prog = synth.Program(2)
    prog.rank(0).compute("work", 3.0).send(1, tag=0, size=8)
    prog.rank(1).compute("work", 1.0).recv(0, tag=0)
    trace = run(prog, mpi_overhead=0.25)
    # L = 0.5, o = 0.25.  MPI_Init: both enter 0, leave 0.75.
    # rank 0: work 0.75-3.75, MPI_Send 3.75-4.0 (eager), MPI_Finalize enter 4.0.
    # rank 1: work 0.75-1.75, MPI_Recv enter 1.75, arrival 4.25, leave 4.5,
    #         MPI_Finalize enter 4.5; both leave Finalize at 5.25.
    # Late Sender at rank 1: [1.75, min(3.75, 4.5)] = 2.0, waiting for rank 0.
    # Wait at Finalize at rank 0: [4.0, min(4.5, 5.25)] = 0.5, for rank 1.
    assert records(trace) == [
        (0, "main/MPI_Finalize", "mpi_finalize_wait", "", 4.0, 4.5, 0.5, 1),
        (1, "main/MPI_Recv", "mpi_latesender", "", 1.75, 3.75, 2.0, 0),
    ]
    r = trace.analyze(wait_records=True)
    # the event of the Late Sender is rank 1's MpiRecv record, that of the
    # Finalize wait rank 0's Leave of MPI_Finalize
    assert event_of(r, "mpi_latesender", 1) == trace.messages(1)["event"].tolist()
    ev = trace.events(0)
    finalize = r.callpath_index("main/MPI_Finalize")
    assert event_of(r, "mpi_finalize_wait", 0) == np.flatnonzero((ev.kind == EV_LEAVE) & (ev.ref == finalize)).tolist()


def test_late_sender_in_waitall_counts_once():
    prog = synth.Program(3)
    prog.rank(0).compute("work", 2.0).send(2, tag=0, size=8)
    prog.rank(1).compute("work", 4.0).send(2, tag=0, size=8)
    r2 = prog.rank(2)
    a = r2.irecv(0, tag=0)
    b = r2.irecv(1, tag=0)
    r2.waitall([a, b])
    trace = run(prog)
    # L = 0.5, o = 0: MPI_Init leaves at 0.5.  Rank 0 sends at 2.5 and enters
    # Finalize at 2.5, rank 1 sends at 4.5 and enters Finalize at 4.5.  Rank 2
    # enters MPI_Waitall at 0.5 and leaves at 5.0 (arrival of rank 1's message).
    # Of the Late Senders [0.5, 2.5] and [0.5, 4.5] only the larger counts:
    # one record, for rank 1's message.  Finalize: last enter 5.0 (rank 2):
    # rank 0 waits [2.5, 5.0], rank 1 [4.5, 5.0].
    assert records(trace) == [
        (0, "main/MPI_Finalize", "mpi_finalize_wait", "", 2.5, 5.0, 2.5, 2),
        (1, "main/MPI_Finalize", "mpi_finalize_wait", "", 4.5, 5.0, 0.5, 2),
        (2, "main/MPI_Waitall", "mpi_latesender", "", 0.5, 4.5, 4.0, 1),
    ]
    # its event is the MpiIrecv record of rank 1's message (inside the Waitall)
    r = trace.analyze(wait_records=True)
    m = trace.messages(2)
    assert event_of(r, "mpi_latesender", 2) == m["event"][(m["kind"] == "irecv") & (m["partner"] == 1)].tolist()


@pytest.mark.parametrize("source", ["same", "different"])
def test_late_sender_in_wrong_order(source):
    if source == "same":
        prog = synth.Program(2)
        prog.rank(0).send(1, tag=1, size=8).compute("work", 2.0).send(1, tag=2, size=8)
        prog.rank(1).recv(0, tag=2).recv(0, tag=1)
        # L = 0.5, o = 0.  Rank 0 sends tag 1 at 0.5, tag 2 at 2.5, enters
        # Finalize at 2.5.  Rank 1 receives tag 2 first: [0.5, 3.0], Late
        # Sender [0.5, 2.5]; the message of tag 1 received next was sent
        # earlier (0.5) by the same rank: wrong order, same source.  Rank 1
        # enters Finalize at 3.0: rank 0 waits [2.5, 3.0].
        expected = [(0, "main/MPI_Finalize", "mpi_finalize_wait", "", 2.5, 3.0, 0.5, 1),
                    (1, "main/MPI_Recv", "mpi_latesender", "same", 0.5, 2.5, 2.0, 0)]
    else:
        prog = synth.Program(3)
        prog.rank(0).send(2, tag=0, size=8)
        prog.rank(1).compute("work", 2.0).send(2, tag=0, size=0)
        prog.rank(2).recv(1, tag=0).recv(0, tag=0)
        # Rank 0 sends at 0.5, rank 1 at 2.5; they enter Finalize at 0.5 and
        # 2.5.  Rank 2 receives from rank 1 first: [0.5, 3.0], Late Sender
        # [0.5, 2.5]; the message received next was sent earlier (0.5) by
        # rank 0: wrong order, different source.  Finalize: rank 2 enters
        # last (3.0): rank 0 waits [0.5, 3.0], rank 1 [2.5, 3.0].
        expected = [(0, "main/MPI_Finalize", "mpi_finalize_wait", "", 0.5, 3.0, 2.5, 2),
                    (1, "main/MPI_Finalize", "mpi_finalize_wait", "", 2.5, 3.0, 0.5, 2),
                    (2, "main/MPI_Recv", "mpi_latesender", "different", 0.5, 2.5, 2.0, 1)]
    trace = run(prog)
    assert records(trace) == expected
    r = trace.analyze(wait_records=True)
    late = len(expected) - 1  # the Late Sender's location; its first receive waited
    assert event_of(r, "mpi_latesender", late) == trace.messages(late)["event"][:1].tolist()


def test_late_receiver_blocking_ssend():
    prog = synth.Program(2)
    prog.rank(0).ssend(1, tag=0, size=100)
    prog.rank(1).compute("work", 2.0).recv(0, tag=0)
    trace = run(prog, bandwidth=100.0, eager_limit=64)
    # L = 0.5, o = 0, x = 100 B / 100 B/s = 1.0.  Rank 0 enters MPI_Ssend at
    # 0.5; rank 1 posts its MPI_Recv at 2.5; both calls leave at
    # max(0.5, 2.5) + L + x = 4.0.  Late Receiver [0.5, 2.5] at the Ssend,
    # waiting for rank 1; the receive is not late (0.5 < 2.5); both enter
    # Finalize at 4.0.
    assert records(trace) == [(0, "main/MPI_Ssend", "mpi_latereceiver", "", 0.5, 2.5, 2.0, 1)]
    r = trace.analyze(wait_records=True)
    assert event_of(r, "mpi_latereceiver", 0) == trace.messages(0)["event"].tolist()  # the MpiSend record


def test_late_receiver_of_isend_at_its_wait():
    prog = synth.Program(2)
    r0 = prog.rank(0)
    q = r0.isend(1, tag=0, size=100)
    r0.compute("work", 1.0).wait(q)
    prog.rank(1).compute("work", 2.0).recv(0, tag=0)
    trace = run(prog, eager_limit=64)
    # L = 0.5, o = 0.  Rank 0: MPI_Isend at 0.5, work 0.5-1.5, MPI_Wait enter
    # 1.5.  Rank 1 posts MPI_Recv at 2.5; the rendezvous completes at
    # max(0.5, 2.5) + L = 3.0, when the Wait and the Recv leave and both enter
    # Finalize.  Late Receiver at the Wait: [1.5, 2.5], waiting for rank 1.
    assert records(trace) == [(0, "main/MPI_Wait", "mpi_latereceiver", "", 1.5, 2.5, 1.0, 1)]
    r = trace.analyze(wait_records=True)
    ev = trace.events(0)
    assert event_of(r, "mpi_latereceiver", 0) == np.flatnonzero(ev.kind == EV_ISEND_COMPLETE).tolist()


def test_waitall_with_late_sender_and_late_receiver_waits_once():
    prog = synth.Program(2)
    r0 = prog.rank(0)
    qs = r0.isend(1, tag=0, size=100)
    qr = r0.irecv(1, tag=1)
    r0.waitall([qs, qr])
    prog.rank(1).compute("work", 2.0).recv(0, tag=0).compute("work", 1.0).send(0, tag=1, size=8)
    trace = run(prog, eager_limit=64)
    # L = 0.5, o = 0.  Rank 0: Isend and Irecv at 0.5, MPI_Waitall 0.5-4.5.
    # Rank 1: work 0.5-2.5, MPI_Recv 2.5-3.0, work 3.0-4.0, MPI_Send 4.0
    # (eager), Finalize enter 4.0.  The Waitall's Late Sender [0.5, 4.0] (3.5)
    # is larger than its Late Receiver [0.5, 2.5] (2.0): only the Late Sender
    # is a record.  Finalize: rank 0 enters last (4.5): rank 1 waits [4.0, 4.5].
    assert records(trace) == [
        (0, "main/MPI_Waitall", "mpi_latesender", "", 0.5, 4.0, 3.5, 1),
        (1, "main/MPI_Finalize", "mpi_finalize_wait", "", 4.0, 4.5, 0.5, 0),
    ]


# ---- collectives --------------------------------------------------------------------------


def test_wait_at_barrier_and_nxn():
    for op, metric, cp in (("barrier", "mpi_barrier_wait", "main/MPI_Barrier"),
                           ("allreduce", "mpi_wait_nxn", "main/MPI_Allreduce")):
        prog = synth.Program(3)
        for rank, d in enumerate((1.0, 3.0, 2.0)):
            rp = prog.rank(rank).compute("work", d)
            rp.barrier() if op == "barrier" else rp.allreduce(size=8)
        trace = run(prog, mpi_overhead=0.25)
        # L = 0.5, o = 0.25: MPI_Init leaves at 0.75; enters 1.75, 3.75, 2.75;
        # all leave at 4.5 and enter Finalize together.  Rank 0 waits
        # [1.75, 3.75], rank 2 [2.75, 3.75], both for rank 1 (the last).
        assert records(trace) == [(0, cp, metric, "", 1.75, 3.75, 2.0, 1), (2, cp, metric, "", 2.75, 3.75, 1.0, 1)]
        r = trace.analyze(wait_records=True)
        assert event_of(r, metric, 2) == trace.collectives(2)["event"].tolist()  # the MpiCollectiveEnd


def test_late_broadcast():
    prog = synth.Program(3)
    for rank, d in enumerate((1.0, 4.0, 2.0)):
        prog.rank(rank).compute("work", d).bcast(root=2, size=8)
    trace = run(prog)
    # L = 0.5, o = 0: enters 1.5, 4.5, root 2.5.  The root leaves at 2.5,
    # rank 0 at max(1.5, 3.0) = 3.0, rank 1 at 4.5.  Rank 0 waits for the root:
    # [1.5, 2.5].  Finalize: enters 3.0, 4.5, 2.5: ranks 0 and 2 wait for rank 1.
    assert records(trace) == [
        (0, "main/MPI_Bcast", "mpi_latebroadcast", "", 1.5, 2.5, 1.0, 2),
        (0, "main/MPI_Finalize", "mpi_finalize_wait", "", 3.0, 4.5, 1.5, 1),
        (2, "main/MPI_Finalize", "mpi_finalize_wait", "", 2.5, 4.5, 2.0, 1),
    ]


def test_early_reduce():
    prog = synth.Program(3)
    for rank, d in enumerate((3.0, 1.0, 2.0)):
        prog.rank(rank).compute("work", d).reduce(root=1, size=4)
    trace = run(prog)
    # L = 0.5, o = 0: enters 3.5, root 1.5, 2.5.  The root leaves at
    # 3.5 + L = 4.0, the others at their enter.  The root waits for the last
    # member, rank 0: [1.5, 3.5].  Finalize: enters 3.5, 4.0, 2.5: ranks 0
    # and 2 wait for rank 1.
    assert records(trace) == [
        (0, "main/MPI_Finalize", "mpi_finalize_wait", "", 3.5, 4.0, 0.5, 1),
        (1, "main/MPI_Reduce", "mpi_earlyreduce", "", 1.5, 3.5, 2.0, 0),
        (2, "main/MPI_Finalize", "mpi_finalize_wait", "", 2.5, 4.0, 1.5, 1),
    ]


def test_early_scan():
    prog = synth.Program(4)
    for rank, d in enumerate((2.0, 1.0, 4.0, 3.0)):
        prog.rank(rank).compute("work", d).scan(size=2)
    trace = run(prog)
    # L = 0.5, o = 0: enters 2.5, 1.5, 4.5, 3.5; member i leaves at
    # max(enters 0..i) + L: 3.0, 3.0, 5.0, 5.0.  Rank 1 waits for rank 0
    # [1.5, 2.5], rank 3 for rank 2 [3.5, 4.5].  Finalize: enters 3.0, 3.0,
    # 5.0, 5.0; ranks 0 and 1 wait [3.0, 5.0] for the last to enter (ranks 2
    # and 3 tie; the first of them, rank 2, is named).
    assert records(trace) == [
        (0, "main/MPI_Finalize", "mpi_finalize_wait", "", 3.0, 5.0, 2.0, 2),
        (1, "main/MPI_Scan", "mpi_earlyscan", "", 1.5, 2.5, 1.0, 0),
        (1, "main/MPI_Finalize", "mpi_finalize_wait", "", 3.0, 5.0, 2.0, 2),
        (3, "main/MPI_Scan", "mpi_earlyscan", "", 3.5, 4.5, 1.0, 2),
    ]


@pytest.mark.parametrize("op, wait_metric, completion_metric",
                         [("barrier", "mpi_barrier_wait", "mpi_barrier_completion"),
                          ("allreduce", "mpi_wait_nxn", "mpi_nxn_completion")])
def test_completions_with_distinct_leave_times(tmp_path, op, wait_metric, completion_metric):
    cp = "main/MPI_" + op.capitalize()
    runs = [(_sync_program(op, (1.0, 2.0, 3.0)), dict(latency=latency)) for latency in (0.5, 1.0, 0.25)]
    # Location i from run [1, 0, 2][i] (L = 1.0, 0.5, 0.25; o = 0):
    #   rank 0: Init [0, 1.0], work 1.0-2.0, op [2.0, 5.0], Finalize [5.0, 6.0]
    #   rank 1: Init [0, 0.5], work 0.5-2.5, op [2.5, 4.0], Finalize [4.0, 4.5]
    #   rank 2: Init [0, 0.25], work 0.25-3.25, op [3.25, 3.5], Finalize [3.5, 3.75]
    # op: last enter 3.25 (rank 2), first leave 3.5.  Waits [enter, 3.25]
    #   for rank 2: rank 0 1.25, rank 1 0.75.  Completions [max(3.5, 3.25),
    #   leave]: rank 0 [3.5, 5.0], rank 1 [3.5, 4.0] (rank 2: empty).
    # MPI_Init: all enter at 0, first leave 0.25: completions [0.25, leave]:
    #   rank 0 [0.25, 1.0], rank 1 [0.25, 0.5] (rank 2: empty).
    # MPI_Finalize: last enter 5.0 (rank 0): rank 1 waits [4.0, min(5.0, 4.5)],
    #   rank 2 [3.5, min(5.0, 3.75)], both for rank 0.
    trace = spliced(tmp_path, op, runs, [1, 0, 2])
    assert records(trace) == [
        (0, "main/MPI_Init", "mpi_init_completion", "", 0.25, 1.0, 0.75, -1),
        (0, cp, wait_metric, "", 2.0, 3.25, 1.25, 2),
        (0, cp, completion_metric, "", 3.5, 5.0, 1.5, -1),
        (1, "main/MPI_Init", "mpi_init_completion", "", 0.25, 0.5, 0.25, -1),
        (1, cp, wait_metric, "", 2.5, 3.25, 0.75, 2),
        (1, cp, completion_metric, "", 3.5, 4.0, 0.5, -1),
        (1, "main/MPI_Finalize", "mpi_finalize_wait", "", 4.0, 4.5, 0.5, 0),
        (2, "main/MPI_Finalize", "mpi_finalize_wait", "", 3.5, 3.75, 0.25, 0),
    ]


# ---- options and errors -----------------------------------------------------------------


def test_without_the_option_there_are_no_records():
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).send(1, tag=0)
    prog.rank(1).recv(0, tag=0)
    trace = run(prog)
    r = trace.analyze()
    assert not r.has_wait_states
    assert r._raw["wait_records"] is None
    with pytest.raises(ValueError, match="wait_records=True"):
        r.wait_states
    with pytest.raises(ValueError, match="wait_records=True"):
        trace.analyze(delay_model="proportional", critical_path=True, delay_records=True).wait_states
    # with it: the same cube, and the records with every other analysis
    full = trace.analyze(delay_model="wait-first", critical_path=True, wait_records=True)
    assert full.has_wait_states
    assert np.array_equal(full.wait_states, trace.analyze(wait_records=True).wait_states)
    assert full.cube.tobytes() == trace.analyze(delay_model="wait-first", critical_path=True).cube.tobytes()
    # a program without waiting (L = 0: the message arrives at 0, when the
    # receive is entered; both enter Finalize at 0): an empty array
    quiet = synth.Program(2)
    quiet.rank(0).send(1, tag=0)
    quiet.rank(1).recv(0, tag=0)
    w = run(quiet, latency=0.0).analyze(wait_records=True).wait_states
    assert len(w) == 0 and "partner_rank" in w.dtype.names


def test_records_convert_to_pandas():
    pd = pytest.importorskip("pandas")
    prog = synth.Program(2)
    prog.rank(0).compute("work", 3.0).send(1, tag=0, size=8)
    prog.rank(1).compute("work", 1.0).recv(0, tag=0)
    r = run(prog).analyze(wait_records=True)
    df = pd.DataFrame(r.wait_states)
    assert df.groupby("metric")["wait"].sum().to_dict() == {"mpi_finalize_wait": 0.5, "mpi_latesender": 2.0}


# ---- random programs ----------------------------------------------------------------------


def assert_records_add_up(trace: waitscope.Trace, r: waitscope.AnalysisResult, what: str) -> np.ndarray:
    """The records summed per (metric, call path, location) are the cube; their numbers the counts."""
    w = check_fields(trace, r)
    shape = (len(r.callpath_names), r.n_locations)

    def per_cell(sel: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
        out = np.zeros(shape)
        np.add.at(out, (w["callpath"][sel], w["location"][sel]), 1.0 if weights is None else weights[sel])
        return out

    for metric in WAIT_METRICS:
        sel = w["metric"] == metric
        np.testing.assert_allclose(per_cell(sel, w["wait"]), r.get(metric), rtol=1e-12, atol=0,
                                   err_msg=f"{what}: {metric}")
    ls = w["metric"] == "mpi_latesender"
    wo = ls & (w["wrong_order"] != "")
    for metric, sel in (("mpi_latesender_wo", wo), ("mpi_lswo_same", ls & (w["wrong_order"] == "same")),
                        ("mpi_lswo_different", ls & (w["wrong_order"] == "different"))):
        np.testing.assert_allclose(per_cell(sel, w["wait"]), r.get(metric), rtol=1e-12, atol=0,
                                   err_msg=f"{what}: {metric}")
    for key, sel in (("mpi_latesender", ls), ("mpi_latereceiver", w["metric"] == "mpi_latereceiver"),
                     ("wrong order", wo)):
        synchronizations, communications = COUNTS[key]
        assert np.array_equal(per_cell(sel, None), r.get(synchronizations) + r.get(communications)), \
            f"{what}: number of {key} records"
    return w


def test_records_add_up_to_the_cube_on_random_programs():
    rng = random.Random(31337)
    seen: set[str] = set()
    n_records = 0
    for i in range(200):
        builder = _Builder(rng)
        prog = builder.build()
        params = random_run_params(rng, builder.eager)
        trace = prog.run(**params)
        r = trace.analyze(wait_records=True)
        what = f"random program {i} ({prog!r}, {params})"
        w = assert_records_add_up(trace, r, what)
        seen.update(str(m) for m in w["metric"])
        seen.update("wrong order " + str(s) for s in w["wrong_order"] if s)
        n_records += len(w)
        if i % 10 == 0:  # the option changes nothing else; the records do not depend on the schedule
            assert r.cube.tobytes() == trace.analyze().cube.tobytes(), what
            for seed in (1, 977):
                assert np.array_equal(trace.analyze(wait_records=True, schedule_seed=seed).wait_states, w), what
    # every pattern but the completions (the executor lets all members leave together)
    assert seen == set(WAIT_METRICS) - {"mpi_barrier_completion", "mpi_nxn_completion", "mpi_init_completion"} | \
        {"wrong order same", "wrong order different"}
    assert n_records > 1000


def test_records_add_up_to_the_cube_on_random_spliced_archives(tmp_path):
    """Distinct leave times (completions) and broken clocks, from locations of different runs."""
    rng = random.Random(4711)
    seen: set[str] = set()
    for i in range(25):
        prog, runs, pick, trace = random_spliced(tmp_path, rng, f"s{i}")
        r = trace.analyze(wait_records=True)
        w = assert_records_add_up(trace, r, f"spliced program {i} ({prog!r}, {runs[0][1]}, {runs[1][1]}, {pick})")
        seen.update(str(m) for m in w["metric"])
    assert {"mpi_barrier_completion", "mpi_nxn_completion", "mpi_init_completion"} <= seen
