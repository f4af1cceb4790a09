"""Broken clocks: clock-condition violations (point to point and
collective), timestamp correction with the controlled logical clock, and a
critical path that never covers a stretch of time twice."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import waitscope
from waitscope import _core, synth
from waitscope.cli import main as cli_main

from programs import random_collective  # tests/ is on sys.path


def times_of(trace) -> list[np.ndarray]:
    return [trace.events(i).time.copy() for i in range(trace.n_locations)]


def set_times(trace, times) -> None:
    _core.set_times(trace._core, [np.ascontiguousarray(t, dtype=np.float64) for t in times])


def shifted(trace, location: int, offset: float, drift: float = 0.0):
    """The trace with `location`'s clock off by offset + drift * t."""
    times = times_of(trace)
    t = times[location]
    times[location] = t + offset + drift * t
    set_times(trace, times)
    return trace


# ---- violations of collectives ---------------------------------------------------

def two_ranks(op: str, late: int):
    """Rank `late` computes 2 s, the other 1 s, then both call `op` (root 0)."""
    prog = synth.Program(2)
    for r in range(2):
        b = prog.rank(r).compute("work", 2.0 if r == late else 1.0)
        if op in ("bcast", "reduce"):
            getattr(b, op)(0, 8)
        elif op == "barrier":
            b.barrier()
        else:
            getattr(b, op)(8)
    return prog.run()


def shift_call(trace, location: int, region: str, offset: float):
    """Moves the events of `location`'s call of `region` (Enter to Leave)
    and the Leave just before it by `offset` (< 0), as if its clock were
    behind during the call."""
    names = trace.callpath_names
    cps = trace.events(location).callpath
    (inside,) = np.nonzero([cp >= 0 and names[cp].endswith("/" + region) for cp in cps])
    times = times_of(trace)
    times[location][inside[0] - 1:inside[-1] + 1] += offset
    set_times(trace, times)
    return trace


# (operation, the rank that enters late, expected violations per rank when
# the other (early) rank's clock runs 0.5 s behind during the operation).
# Without drift the early rank enters at 1 and leaves at 2 (when the late
# one enters) if it needs the late one, else at 1.  With its clock 0.5 s
# behind, that leave is at 1.5 (or 0.5): before the late rank's entry at 2,
# a violation where the early rank needs the late one.
COLLECTIVE_CASES = [
    ("barrier", 1, [1, 0]),
    ("allreduce", 1, [1, 0]),
    ("alltoall", 0, [0, 1]),
    ("bcast", 0, [0, 1]),   # 1-to-N: the non-root needs the root
    ("bcast", 1, [0, 0]),   # ... the root needs nobody
    ("reduce", 1, [1, 0]),  # N-to-1: the root needs every member
    ("reduce", 0, [0, 0]),  # ... a non-root needs nobody
    ("scan", 0, [0, 1]),    # rank 1 needs rank 0
    ("scan", 1, [0, 0]),    # rank 0 needs nobody
]


@pytest.mark.parametrize("op,late,expected", COLLECTIVE_CASES)
def test_collective_violations(op, late, expected):
    trace = two_ranks(op, late)
    assert list(trace.analyze().clock_violations) == [0, 0]
    region = "MPI_" + op.capitalize()
    r = shift_call(trace, 1 - late, region, -0.5).analyze()
    assert list(r.clock_violations) == expected


def test_init_and_finalize_count_as_n_x_n():
    # the analysis treats MPI_Init and MPI_Finalize as synchronizing all
    # ranks: a rank whose clock is 5 s behind leaves both before the other
    # rank enters them (two violations); 5 s ahead, the other rank does
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0)
    prog.rank(1).compute("work", 1.0)
    assert list(prog.run().analyze().clock_violations) == [0, 0]
    assert list(shifted(prog.run(), 1, -5.0).analyze().clock_violations) == [0, 2]
    assert list(shifted(prog.run(), 1, +5.0).analyze().clock_violations) == [2, 0]


# ---- the controlled logical clock ------------------------------------------------

def exchange_program():
    """Point to point and every collective form, with waiting everywhere."""
    prog = synth.Program(3)
    r0, r1, r2 = prog.rank(0), prog.rank(1), prog.rank(2)
    r0.compute("a", 1.0).send(1, tag=1, size=0)
    r1.compute("a", 0.5).recv(0, tag=1).compute("b", 1.0).send(2, tag=2)
    r2.compute("a", 0.2).recv(1, tag=2)
    for r in (r0, r1, r2):
        r.compute("c", 0.3)
    for r in (r0, r1, r2):
        r.barrier()
    r0.compute("d", 0.5), r1.compute("d", 0.1), r2.compute("d", 0.2)
    for r in (r0, r1, r2):
        r.allreduce(8)
    r2.compute("e", 0.7)
    for r in (r0, r1, r2):
        r.bcast(2, 8)
    r1.compute("f", 0.4)
    for r in (r0, r1, r2):
        r.reduce(0, 8)
    r0.compute("g", 0.6)
    q = r0.irecv(2, tag=3)
    r2.compute("g", 0.9).send(0, tag=3, size=8)
    r0.wait(q)
    return prog.run()


WAITS = ("mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_wait_nxn", "mpi_latebroadcast",
         "mpi_earlyreduce")


RUN = 4.5  # seconds from the first to the last event of exchange_program()


@pytest.mark.parametrize("location,offset,drift", [
    (1, -0.8, 0.0), (0, -0.5, 0.0), (2, -0.6, 0.0),      # a clock behind
    (1, 0.0, -0.02), (1, -0.3, -0.02), (1, 0.0, -0.1),  # ... slow
    (0, 0.0, 0.05), (1, 0.0, 0.05),                     # ... fast
])
def test_correction_restores_the_undrifted_waits(location, offset, drift):
    reference = exchange_program().analyze()
    assert not reference.clock_violations.any()
    assert max(float(t.max()) for t in times_of(exchange_program())) == pytest.approx(RUN)
    trace = shifted(exchange_program(), location, offset, drift)
    drifted = trace.analyze()
    assert drifted.clock_violations.sum() > 0
    before = times_of(trace)
    r = trace.analyze(clock_correction="clc")
    # analyze(clock_correction=...) leaves the trace's timestamps alone
    assert all(np.array_equal(a, b) for a, b in zip(times_of(trace), before))
    assert not r.clock_violations.any()
    # The clock condition cannot tell how far a clock was off; the
    # correction moves a location only as far forward as the condition
    # needs, and the shift it carries decays by 1 - gamma = 1 % per second
    # of the run, so local distances change by at most 1 % of RUN.  A drift
    # changes local distances by up to |drift| * RUN, which no correction
    # based on the clock condition can see.  Within that, the waits are
    # those of the undrifted trace, and closer to them than uncorrected.
    tolerance = 0.01 * RUN + abs(drift) * RUN
    off_corrected = off_drifted = 0.0
    for m in WAITS:
        np.testing.assert_allclose(r.by_location(m), reference.by_location(m), rtol=0, atol=tolerance, err_msg=m)
        off_corrected = max(off_corrected, float(np.abs(r.by_location(m) - reference.by_location(m)).max()))
        off_drifted = max(off_drifted, float(np.abs(drifted.by_location(m) - reference.by_location(m)).max()))
    assert off_corrected < off_drifted
    if drift == 0.0:
        # a clock that is only behind: uncorrected, waits are off by the
        # offset; corrected, by far less than the tolerance
        assert off_drifted == pytest.approx(abs(offset))
        assert off_corrected <= 0.01 * abs(offset) + 1e-9


def test_correction_in_place_keeps_order_and_moves_forward_only():
    trace = shifted(exchange_program(), 1, -0.8)
    before = times_of(trace)
    stats = trace.correct_clocks("clc")
    after = times_of(trace)
    assert stats["n_jumps"] > 0 and stats["n_moved"] > 0
    assert stats["max_shift"] == pytest.approx(max(float((a - b).max()) for a, b in zip(after, before)))
    for a, b in zip(after, before):
        assert (a >= b).all()
        assert (np.diff(a) >= 0).all()
    # the only location that was off moved by (close to) its offset, the
    # others stay where they were
    assert np.array_equal(after[0], before[0]) and np.array_equal(after[2], before[2])
    assert np.abs(after[1] - before[1] - 0.8).max() < 0.8 * 0.01 + 1e-12
    assert not trace.analyze().clock_violations.any()
    # a corrected trace is left alone by a second correction
    assert trace.correct_clocks("clc")["n_moved"] == 0


def random_program(rng: random.Random) -> synth.Program:
    n = rng.randint(2, 5)
    prog = synth.Program(n)
    sub = prog.comm(sorted(rng.sample(range(n), k=rng.randint(2, n))))
    for rnd in range(rng.randint(3, 9)):
        for r in range(n):
            prog.rank(r).compute(rng.choice("abc"), rng.random() * 2)
        kind = rng.choice(["pair", "ssend", "nonblocking", "collective", "collective"])
        if kind in ("pair", "ssend"):
            a, b = rng.sample(range(n), 2)
            (prog.rank(a).ssend if kind == "ssend" else prog.rank(a).send)(b, tag=rnd, size=rng.choice([8, 10**5]))
            prog.rank(b).recv(a, tag=rnd)
        elif kind == "nonblocking":
            for r in range(n):
                q1 = prog.rank(r).isend((r + 1) % n, tag=100 + rnd, size=8)
                q2 = prog.rank(r).irecv((r - 1) % n, tag=100 + rnd)
                prog.rank(r).waitall([q1, q2])
        else:
            random_collective(prog, rng, n, rng.choice([None, sub]),
                              ["barrier", "bcast", "reduce", "allreduce", "alltoall", "gather", "scatter", "scan"])
    return prog


def test_random_programs_without_violations_are_unchanged_exactly():
    rng = random.Random(11)
    for _ in range(60):
        trace = random_program(rng).run(latency=rng.choice([0.0, 1e-4]), bandwidth=rng.choice([None, 1e7]))
        assert not trace.analyze().clock_violations.any()
        before = times_of(trace)
        stats = trace.correct_clocks()
        assert stats == {"n_jumps": 0, "n_moved": 0, "max_shift": 0.0}
        assert all(np.array_equal(a, b) for a, b in zip(times_of(trace), before))


def test_random_drift_is_corrected():
    rng = random.Random(12)
    violated = 0
    for _ in range(60):
        trace = random_program(rng).run(latency=rng.choice([0.0, 1e-4]), bandwidth=rng.choice([None, 1e7]))
        times = times_of(trace)
        for i in range(len(times)):
            times[i] = times[i] + rng.uniform(-1, 1) + rng.uniform(-0.05, 0.05) * times[i]
        set_times(trace, times)
        uncorrected = trace.analyze(critical_path=True)
        violated += int(uncorrected.clock_violations.sum() > 0)
        # uncorrected, the path still never covers a stretch of time twice
        path = uncorrected.critical_path
        seg = np.sort(path.segments, order="start")
        assert (seg["start"][1:] >= seg["end"][:-1] - 1e-12).all()
        assert path.length == pytest.approx(path.end - path.start, abs=1e-9)
        before = times_of(trace)
        trace.correct_clocks()
        after = times_of(trace)
        for a, b in zip(after, before):
            assert (a >= b).all() and (np.diff(a) >= 0).all()
        r = trace.analyze(critical_path=True)
        assert not r.clock_violations.any()
        path = r.critical_path
        assert path.length == pytest.approx(path.end - path.start, abs=1e-9)
    assert violated > 40


def test_open_and_cli_correct(tmp_path, capsys):
    # OTF2 timestamps cannot lie before the clock's offset: rank 1 behind by
    # 0.8 s, everything 1 s later
    trace = shifted(exchange_program(), 1, -0.8)
    set_times(trace, [t + 1.0 for t in times_of(trace)])
    anchor = trace.write(tmp_path / "drifted")
    assert waitscope.open(anchor).analyze().clock_violations.sum() > 0
    corrected = waitscope.open(anchor, clock_correction="clc")
    assert not corrected.analyze().clock_violations.any()
    assert cli_main(["analyze", anchor, "--json", "--quiet"]) == 0
    assert sum(json.loads(capsys.readouterr().out)["clock_violations"]) > 0  # per location
    assert cli_main(["analyze", anchor, "--json", "--quiet", "--clock-correction", "clc"]) == 0
    assert sum(json.loads(capsys.readouterr().out)["clock_violations"]) == 0


def test_bad_arguments():
    trace = exchange_program()
    with pytest.raises(ValueError, match="unknown method 'lamport'"):
        trace.analyze(clock_correction="lamport")
    with pytest.raises(ValueError, match="unknown method"):
        trace.correct_clocks("ntp")
    with pytest.raises(ValueError, match="every location"):
        waitscope.open("nowhere/traces.otf2", locations=[0], clock_correction="clc")
    with pytest.raises(ValueError, match="not finite and non-decreasing"):
        times = times_of(trace)
        times[0] = times[0][::-1].copy()
        set_times(trace, times)
    with pytest.raises(ValueError, match="one array per location"):
        _core.set_times(trace._core, [])


def test_unloaded_location(tmp_path):
    anchor = exchange_program().write(tmp_path / "t")
    trace = waitscope.open(anchor, locations=[0])
    with pytest.raises(ValueError, match="not loaded"):
        trace.correct_clocks()


# ---- the critical path on broken clocks, uncorrected -------------------------

def test_critical_path_never_overlaps_itself():
    # rank 1 runs 0.8 s behind: its receive from rank 0 ends before the send
    # began.  The path goes back from rank 1's computation b (after the
    # receive) to rank 0, where the send started later than rank 1's receive
    # ended; handed over at the send, both ranks would hold [0.2, 1.0] on
    # the path: 5.3 s of path for a run of 4.5 s (as Scalasca 2.6 counts
    # it: test_scalasca_rules.test_defect_critical_path_longer_than_the_run).
    trace = shifted(exchange_program(), 1, -0.8)
    r = trace.analyze(critical_path=True)
    assert r.clock_violations.sum() > 0
    path = r.critical_path
    seg = np.sort(path.segments, order="start")
    assert (seg["start"][1:] >= seg["end"][:-1] - 1e-12).all()
    assert path.length == pytest.approx(path.end - path.start, abs=1e-9)
    # and after the correction the path is as long as the undrifted one
    reference = exchange_program().analyze(critical_path=True).critical_path
    corrected = trace.analyze(critical_path=True, clock_correction="clc").critical_path
    assert corrected.length == pytest.approx(reference.length, abs=1e-2)
