"""Time windows (analyze(window=...)) and metrics per visit (AnalysisResult.timeseries).

Expected values are worked out by hand from the synthetic programs'
timing model (waitscope/synth.py; latency 0: a message arrives when it is
sent, a barrier ends at the last enter, MPI_Init and MPI_Finalize take no
time) and from seed 001's benchmark (tests/test_scenarios.py).
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import examples, synth

FULL = {"critical_path": True, "wait_records": True, "delay_records": True}


def span(trace: waitscope.Trace) -> tuple[float, float]:
    """First and last event time of the trace."""
    times = [trace.events(loc).time for loc in range(trace.n_locations)]
    return min(float(t[0]) for t in times), max(float(t[-1]) for t in times)


def mixed_program() -> synth.Program:
    """Late Senders, Late Receivers, barriers and an allreduce over 3 ranks."""
    prog = synth.Program(3)
    r0, r1, r2 = prog.rank(0), prog.rank(1), prog.rank(2)
    for it in range(4):
        r0.compute("work", 0.3 + 0.1 * it).send(1, size=8).ssend(2, size=100000).barrier()
        r1.compute("work", 0.1).recv(0).compute("post", 0.2).barrier()
        r2.compute("work", 0.6).recv(0).barrier()
    for r in (r0, r1, r2):
        r.allreduce(size=8)
    return prog


def assert_results_identical(a: waitscope.AnalysisResult, b: waitscope.AnalysisResult) -> None:
    assert a.metric_ids == b.metric_ids
    for m, metric in enumerate(a.metric_ids):
        assert np.array_equal(a.cube[m], b.cube[m]), metric
    assert np.array_equal(a.wait_states, b.wait_states)
    assert np.array_equal(a.delay_records, b.delay_records)
    assert np.array_equal(a.critical_path.segments, b.critical_path.segments)
    assert (a.critical_path.start, a.critical_path.end) == (b.critical_path.start, b.critical_path.end)
    assert a.undistributed == b.undistributed


# ---- a window over the whole run changes nothing ----------------------------------


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
def test_window_over_the_whole_run_equals_the_analysis(model):
    for trace in (mixed_program().run(latency=0.0), mixed_program().run(latency=1e-3),
                  examples.imbalance_benchmark("mixed", 6, 12).run(latency=0.0)):
        whole = trace.analyze(delay_model=model, **FULL)
        windowed = trace.analyze(delay_model=model, window=span(trace), **FULL)
        assert windowed.window == span(trace) and whole.window is None
        assert_results_identical(whole, windowed)
        # a larger window too
        t0, t1 = span(trace)
        assert_results_identical(whole, trace.analyze(delay_model=model, window=(t0 - 5.0, t1 + 5.0), **FULL))


def recorded_traces() -> list[Path]:
    """The bundled Score-P trace and Scalasca's reference traces (when the shared data is there)."""
    from conftest import SHARED_DATA

    refs = SHARED_DATA / "scalasca-refs"
    found = sorted(refs.glob("*/traces.otf2")) if refs.is_dir() else []
    return [Path(examples.PING_PONG)] + found


def test_window_over_the_whole_run_of_recorded_traces():
    for path in recorded_traces():
        trace = waitscope.open(path)
        t0, t1 = span(trace)
        for model in ("proportional", "wait-first"):
            whole = trace.analyze(delay_model=model, **FULL)
            assert_results_identical(whole, trace.analyze(delay_model=model, window=(t0, t1), **FULL))
            # and two halves split it
            mid = (t0 + t1) / 2
            parts = [trace.analyze(delay_model=model, critical_path=True, window=w) for w in ((t0, mid), (mid, t1))]
            for metric in SPLIT + ("delay",):
                assert parts[0].get(metric) + parts[1].get(metric) == pytest.approx(
                    whole.get(metric), abs=1e-9), f"{path}: {metric}"


# ---- seed 001's benchmark: the first half of the iterations ------------------------
#
# 32 ranks, 320 iterations of work() + barrier, latency 0: every iteration
# takes the slowest rank's 62.5 ms, so iteration k spans [k, k + 1] x 62.5 ms
# and the first 160 iterations end at exactly 10 s.  In every iteration the
# ranks wait at the barrier for the slowest one: 32 x 62.5 ms minus the
# iteration's work (32 x 50 ms) = 400 ms, 128 s over the run, 64 s in the
# first half; the critical path runs 10 s of it, and every second of those
# 10 s passes on all 32 ranks (320 s of time).  With the delay analysis the
# 64 s of waiting are charged as delay costs (conservation), in the static
# scenario all to rank 31 (always the slowest), in the mixed one rank 0 is
# the slowest in the first half.

P, ITERATIONS, BASE, PEAK = 32, 320, 50e-3, 62.5e-3
HALF = ITERATIONS // 2 * PEAK  # 10 s
TICKS = 1e-5
"""Tolerance: timestamps are whole nanoseconds, some durations of the mixed scenario are not."""


@functools.lru_cache(maxsize=None)
def benchmark_trace(scenario: str) -> waitscope.Trace:
    return examples.imbalance_benchmark(scenario, P, ITERATIONS, BASE, PEAK).run(latency=0.0)


@pytest.mark.parametrize("scenario", ["static", "mixed"])
def test_first_half_of_the_benchmark_holds_half_the_barrier_waiting(scenario):
    trace = benchmark_trace(scenario)
    whole = trace.analyze(delay_model="proportional", critical_path=True)
    half = trace.analyze(delay_model="proportional", critical_path=True, window=(0.0, HALF))
    per_iteration = P * PEAK - P * BASE
    assert whole.total("mpi_barrier_wait") == pytest.approx(ITERATIONS * per_iteration, abs=TICKS)
    assert half.total("mpi_barrier_wait") == pytest.approx(ITERATIONS // 2 * per_iteration, abs=TICKS)
    assert half.total("mpi_barrier_wait") == pytest.approx(whole.total("mpi_barrier_wait") / 2, abs=TICKS)
    assert half.total("time") == pytest.approx(P * HALF, abs=TICKS)
    assert half.critical_path.length == pytest.approx(HALF, abs=TICKS)
    assert (half.critical_path.start, half.critical_path.end) == pytest.approx((0.0, HALF))
    assert half.total("critical_path") == pytest.approx(HALF, abs=TICKS)
    # delay costs of the waiting inside the window, all of it explained
    assert half.total("delay") == pytest.approx(half.handled_waiting(), abs=TICKS)
    work = half.callpath_index("main/work")
    slowest = 31 if scenario == "static" else 0
    assert half.get("delay", work)[slowest] == pytest.approx(half.total("delay"), abs=TICKS)
    # the second half holds the other half
    rest = trace.analyze(delay_model="proportional", window=(HALF, 2 * HALF))
    assert rest.total("mpi_barrier_wait") + half.total("mpi_barrier_wait") == pytest.approx(
        whole.total("mpi_barrier_wait"), abs=TICKS)
    assert rest.total("delay") + half.total("delay") == pytest.approx(whole.total("delay"), abs=TICKS)


# ---- wait states straddling the window's edges (2 ranks, by hand) ---------------------


def late_sender_trace() -> waitscope.Trace:
    """Rank 0 works 3 s and sends; rank 1 works 1 s and receives: a Late Sender on
    rank 1 over [1, 3] s, caused by rank 0's 2 s of excess work()."""
    prog = synth.Program(2)
    prog.rank(0).compute("work", 3.0).send(1, size=8)
    prog.rank(1).compute("work", 1.0).recv(0)
    return prog.run(latency=0.0)


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
def test_late_sender_across_the_window_start(model):
    trace = late_sender_trace()
    r = trace.analyze(delay_model=model, window=(2.0, 10.0), **FULL)
    recv, work = r.callpath_index("main/MPI_Recv"), r.callpath_index("main/work")
    # 1 s of the 2 s of waiting lies after t = 2
    assert r.get("mpi_latesender", recv).tolist() == pytest.approx([0.0, 1.0])
    assert r.total("mpi_latesender") == pytest.approx(1.0)
    # its waiting started at t = 1, outside: no Late Sender counted, nor the
    # message (its receive record is at t = 3, inside)
    assert r.total("mpi_cls_count") == 0.0
    assert r.get("comms_recv", recv).tolist() == [0.0, 1.0]
    # the record is cut to the window
    ws = r.wait_states
    assert len(ws) == 1 and (ws["start"][0], ws["end"][0], ws["wait"][0]) == pytest.approx((2.0, 3.0, 1.0))
    # time: each rank's time from t = 2 on; rank 0 still works 1 s of it
    assert r.get("time", work).tolist() == pytest.approx([1.0, 0.0])
    assert r.by_location("time").tolist() == pytest.approx([1.0, 1.0])
    # the delay cost of the 1 s is charged to rank 0's work(), short term
    assert r.get("delay_latesender", work).tolist() == pytest.approx([1.0, 0.0])
    assert r.total("delay") == pytest.approx(r.handled_waiting()) and r.handled_waiting() == pytest.approx(1.0)
    rec = r.delay_records
    assert len(rec) == 1 and rec["wait"][0] == pytest.approx(1.0) and rec["short_cost"][0] == pytest.approx(1.0)
    assert r.total("mpi_wait_direct") == pytest.approx(1.0) and r.total("mpi_wait_indirect") == 0.0
    assert r.total("mpi_wait_terminal") == pytest.approx(1.0)
    # the critical path: rank 0's work() from 2 to 3 s
    cp = r.critical_path
    assert (cp.start, cp.end, cp.length) == pytest.approx((2.0, 3.0, 1.0))
    assert r.get("critical_path", work).tolist() == pytest.approx([1.0, 0.0])


def test_late_sender_inside_a_short_window():
    trace = late_sender_trace()
    r = trace.analyze(delay_model="proportional", window=(0.5, 1.5), **FULL)
    recv, work = r.callpath_index("main/MPI_Recv"), r.callpath_index("main/work")
    # waiting [1, 3] cut to [1, 1.5]; it starts inside, so it is counted
    assert r.get("mpi_latesender", recv).tolist() == pytest.approx([0.0, 0.5])
    assert r.total("mpi_cls_count") == 1.0
    assert r.total("comms_recv") == 0.0 and r.total("comms_send") == 0.0  # both records at t = 3
    assert r.get("time", work).tolist() == pytest.approx([1.0, 0.5])
    # the 0.5 s are explained by rank 0's work() (outside and inside the window alike)
    assert r.get("delay", work).tolist() == pytest.approx([0.5, 0.0])
    assert r.critical_path.length == pytest.approx(1.0)
    # visits: the Enters inside the window (none: all at t = 0, 1 and 3)
    assert r.total("visits") == 1.0  # rank 1's MPI_Recv at t = 1


def test_barrier_wait_across_the_window_end():
    """Rank 0 works 1 s, rank 1 3 s, then both enter a barrier: rank 0 waits over [1, 3]."""
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).barrier()
    prog.rank(1).compute("work", 3.0).barrier()
    trace = prog.run(latency=0.0)
    r = trace.analyze(delay_model="wait-first", window=(0.0, 2.5), **FULL)
    barrier, work = r.callpath_index("main/MPI_Barrier"), r.callpath_index("main/work")
    assert r.get("mpi_barrier_wait", barrier).tolist() == pytest.approx([1.5, 0.0])
    assert r.get("syncs_coll", barrier).tolist() == [0.0, 0.0]  # the records are at t = 3
    assert r.get("delay_barrier", work).tolist() == pytest.approx([0.0, 1.5])
    assert r.total("delay") == pytest.approx(1.5)
    assert r.by_location("time").tolist() == pytest.approx([2.5, 2.5])
    assert r.critical_path.length == pytest.approx(2.5)
    # a window after the run is empty
    empty = trace.analyze(critical_path=True, window=(10.0, 11.0))
    assert not empty.cube.any() and empty.critical_path.length == 0.0


def test_long_term_costs_of_waiting_inside_the_window():
    """A chain: rank 0 works 3 s and sends to rank 1 (which waits [1, 3]); rank 1 then
    sends to rank 2, which has waited since t = 1 too: [1, 3] on rank 2 is caused by
    rank 1's waiting (long term) and so by rank 0's work()."""
    prog = synth.Program(3)
    prog.rank(0).compute("work", 3.0).send(1)
    prog.rank(1).compute("work", 1.0).recv(0).send(2)
    prog.rank(2).compute("work", 1.0).recv(1)
    trace = prog.run(latency=0.0)
    for model in ("proportional", "wait-first"):
        r = trace.analyze(delay_model=model, window=(2.5, 10.0), **FULL)
        work = r.callpath_index("main/work")
        # 0.5 s of each of the two wait states lies inside the window; all 1 s is
        # charged to rank 0's work(): 0.5 short term, 0.5 long term
        assert r.handled_waiting() == pytest.approx(1.0)
        assert r.get("delay_latesender", work).tolist() == pytest.approx([0.5, 0.0, 0.0])
        assert r.get("delay_latesender_longterm", work).tolist() == pytest.approx([0.5, 0.0, 0.0])
        assert r.total("mpi_wait_indirect") == pytest.approx(0.5)
        # rank 1's waiting propagates (on the whole run), so its 0.5 s inside are propagating
        assert r.total("mpi_wait_propagating") == pytest.approx(0.5)
        assert r.total("mpi_wait_terminal") == pytest.approx(0.5)


# ---- random programs: windows split the run ------------------------------------------------
#
# Two adjacent windows [t0, m] and [m, t1] split every time-like metric of the
# whole run between them (an interval straddling m is cut in two); the
# delay costs of a wait state are those of the whole run scaled by its share
# inside the window, so they split too, in both models.  Each window
# conserves: delay costs = handled waiting inside.

SPLIT = ("time", "comp", "mpi", "mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_wait_nxn",
         "mpi_latebroadcast", "mpi_earlyreduce", "mpi_earlyscan", "mpi_latesender_wo", "critical_path",
         "mpi_wait_direct", "mpi_wait_indirect", "mpi_wait_propagating", "mpi_wait_terminal")


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
def test_adjacent_windows_split_random_programs(model):
    import random

    from test_delay import random_program

    rng = random.Random(515 if model == "proportional" else 516)
    for _ in range(40):
        trace = random_program(rng).run(latency=rng.choice([0.0, 1e-3]), bandwidth=rng.choice([None, 1e6]))
        t0, t1 = span(trace)
        mid = rng.uniform(t0, t1)
        whole = trace.analyze(delay_model=model, critical_path=True)
        parts = [trace.analyze(delay_model=model, critical_path=True, window=w) for w in ((t0, mid), (mid, t1))]
        for metric in SPLIT + ("delay", "delay_latesender_longterm", "delay_barrier_longterm"):
            assert parts[0].get(metric) + parts[1].get(metric) == pytest.approx(whole.get(metric), abs=1e-9), metric
        for part in parts:
            assert part.total("delay") + part.undistributed == pytest.approx(part.handled_waiting(), abs=1e-9)
            assert part.total("mpi_wait_direct") + part.total("mpi_wait_indirect") == pytest.approx(
                part.handled_waiting(), abs=1e-9)
            assert part.total("mpi_wait_propagating") + part.total("mpi_wait_terminal") == pytest.approx(
                part.handled_waiting(), abs=1e-9)
            assert part.critical_path.length == pytest.approx(part.critical_path.end - part.critical_path.start,
                                                              abs=1e-9)
        assert sum(p.critical_path.length for p in parts) == pytest.approx(whole.critical_path.length, abs=1e-9)


# ---- arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("window, error, text", [
    ((2.0, 1.0), ValueError, "before its end"),
    ((1.0, 1.0), ValueError, "before its end"),
    ((0.0, float("nan")), ValueError, "end must be finite"),
    (("0", 1.0), TypeError, "start must be a number"),
    ((True, 1.0), TypeError, "start must be a number"),
    ((1.0,), TypeError, "window must be None or"),
    ("0:1", TypeError, "window must be None or"),
    (5.0, TypeError, "window must be None or"),
])
def test_window_arguments(window, error, text):
    with pytest.raises(error, match=text):
        late_sender_trace().analyze(window=window)


# ---- metrics per visit -----------------------------------------------------------


def iteration_program(n_iter: int = 5) -> synth.Program:
    """2 ranks, each iteration in a region "iteration": rank 0 works 0.1 s, rank 1
    0.1 (k + 1) s, then a barrier: in iteration k rank 0 waits 0.1 k s."""
    prog = synth.Program(2)
    for k in range(n_iter):
        for rank, work in ((0, 0.1), (1, 0.1 * (k + 1))):
            b = prog.rank(rank)
            with b.region("iteration"):
                b.compute("work", work).barrier()
    return prog


def test_timeseries_by_hand():
    r = iteration_program().run(latency=0.0).analyze(critical_path=True, wait_records=True)
    k = np.arange(5)
    wait = r.timeseries("mpi_barrier_wait", "iteration")
    assert wait.shape == (5, 2)
    assert wait[:, 0] == pytest.approx(0.1 * k) and not wait[:, 1].any()
    assert r.timeseries("time", "iteration") == pytest.approx(np.repeat(0.1 * (k + 1), 2).reshape(5, 2))
    assert r.timeseries("comp", "iteration")[:, 0] == pytest.approx(np.full(5, 0.1))
    assert r.timeseries("visits", "iteration") == pytest.approx(np.full((5, 2), 3.0))  # iteration, work, barrier
    # the critical path runs through rank 1's work() in every iteration
    cp = r.timeseries("critical_path", "iteration")
    assert cp[:, 1] == pytest.approx(0.1 * (k + 1)) and not cp[:, 0].any()
    # the same call path by name
    assert np.array_equal(r.timeseries("mpi_barrier_wait", "main/iteration"), wait)


@pytest.mark.parametrize("metric", ["time", "execution", "comp", "mpi", "mpi_point2point", "mpi_collective",
                                    "mpi_sync_collective", "visits", "mpi_latesender", "mpi_latereceiver",
                                    "mpi_barrier_wait", "mpi_wait_nxn", "mpi_latesender_wo", "critical_path"])
def test_timeseries_sums_to_the_region_metric(metric):
    prog = synth.Program(3)
    for it in range(4):
        for rank in range(3):
            b = prog.rank(rank)
            with b.region("step"):
                b.compute("work", 0.1 + 0.05 * ((rank + it) % 3))
                req = b.isend((rank + 1) % 3, size=100000 * (rank == 0))
                b.recv((rank + 2) % 3).wait(req)
            with b.region("step"):
                b.allreduce(size=8)
    trace = prog.run(latency=1e-3)
    for window in (None, (0.2, 0.7)):
        r = trace.analyze(critical_path=True, wait_records=True, window=window)
        ts = r.timeseries(metric, "step")
        assert ts.shape == (8, 3)
        cps = [i for i, name in enumerate(r.callpath_names) if name.endswith("step")]
        expected = sum(r.inclusive(metric)[cp] for cp in cps)
        assert np.nansum(ts, axis=0) == pytest.approx(expected, abs=1e-12)


def test_timeseries_pads_missing_visits_and_checks_its_arguments():
    prog = synth.Program(2)
    for rank, n in ((0, 3), (1, 1)):
        for _ in range(n):
            with prog.rank(rank).region("step"):
                prog.rank(rank).compute("work", 0.1)
    r = prog.run(latency=0.0).analyze()
    ts = r.timeseries("time", "step")
    assert ts[:, 0] == pytest.approx([0.1, 0.1, 0.1])
    assert ts[0, 1] == pytest.approx(0.1) and np.isnan(ts[1:, 1]).all()
    with pytest.raises(ValueError, match="cannot split 'syncs'"):
        r.timeseries("syncs", "step")
    with pytest.raises(ValueError, match="wait_records=True"):
        r.timeseries("mpi_latesender", "step")
    with pytest.raises(KeyError, match="critical_path"):
        r.timeseries("critical_path", "step")
    with pytest.raises(KeyError):
        r.timeseries("time", "nosuchregion")
    with pytest.raises(TypeError, match="region must be"):
        r.timeseries("time", 1.5)


# ---- the parallel mode ------------------------------------------------------------------------

WORKER = """
import sys
import numpy as np
from mpi4py import MPI
import waitscope
sys.path.insert(0, {tests!r})
from mpi_worker import result_arrays
trace = waitscope.open({path!r}, comm=MPI.COMM_WORLD)
for i, (model, window) in enumerate({configs!r}):
    r = trace.analyze(delay_model=model, critical_path=True, delay_records=True, wait_records=True,
                      window=window)
    if MPI.COMM_WORLD.Get_rank() == 0:
        np.savez({out!r} + f"/{{i}}.npz", **result_arrays(r))
        try:
            r.timeseries("time", "work")
        except ValueError as exc:
            open({out!r} + "/timeseries.txt", "w").write(str(exc))
"""


def test_parallel_mode_equals_the_embedded_mode(tmp_path):
    import test_mpi  # skips without mpi4py and its mpiexec

    path = mixed_program().run(latency=1e-3).write(tmp_path / "trace")
    t0, t1 = span(waitscope.open(path))
    configs = [("proportional", (t0 + 0.3 * (t1 - t0), t0 + 0.7 * (t1 - t0))), ("wait-first", (t0 + 0.5, t1))]
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(tests=str(Path(__file__).parent), path=path, configs=configs,
                                    out=str(tmp_path)))
    run = test_mpi.mpiexec(2, sys.executable, str(script))
    assert run.returncode == 0, run.stderr
    from mpi_worker import result_arrays

    for i, (model, window) in enumerate(configs):
        expected = result_arrays(waitscope.open(path).analyze(delay_model=model, critical_path=True,
                                                              delay_records=True, wait_records=True,
                                                              window=window))
        test_mpi.assert_same_result(expected, dict(np.load(tmp_path / f"{i}.npz")), f"{model}, window {window}")
    # rank 0 holds the events of its own locations only
    assert "needs the events of every location" in (tmp_path / "timeseries.txt").read_text()


# ---- the command line -------------------------------------------------------------------


def test_command_line_window(tmp_path, capsys):
    import json

    from waitscope import cli

    path = late_sender_trace().write(tmp_path / "trace")
    assert cli.main(["analyze", path, "--window", "2:10", "--delay", "proportional", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"] == [2.0, 10.0]
    assert doc["metrics"]["mpi_latesender"]["total"] == pytest.approx(1.0)
    assert doc["metrics"]["delay"]["total"] == pytest.approx(1.0)
    assert cli.main(["analyze", path, "--window", "0.5:1.5"]) == 0
    out = capsys.readouterr().out
    assert "window 0.500000 s to 1.500000 s: the metrics of this part of the run only" in out
    for bad in ("3:1", "1", "a:b", "1:2:3", "0:inf"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["analyze", path, "--window", bad])
        assert exc.value.code == 2
        assert "--window" in capsys.readouterr().err


# ---- plot.timeseries ---------------------------------------------------------------------


def test_plot_timeseries(tmp_path):
    plot = pytest.importorskip("waitscope.plot")
    r = iteration_program().run(latency=0.0).analyze(wait_records=True)
    fig = plot.timeseries(r, "mpi_barrier_wait", "iteration")
    lines = {line.get_gid(): line for line in fig.axes[0].get_lines()}
    assert list(lines["location:0"].get_ydata()) == pytest.approx(0.1 * np.arange(5))
    assert list(lines["mean"].get_ydata()) == pytest.approx(0.05 * np.arange(5))
    fig.savefig(tmp_path / "lines.png")
    fig = plot.timeseries(r, "time", "iteration", style="heatmap", locations=[1])
    image = [im for im in fig.axes[0].get_images() if im.get_gid() == "timeseries"][0]
    assert np.asarray(image.get_array()) == pytest.approx(0.1 * np.arange(1, 6).reshape(1, 5))
    fig.savefig(tmp_path / "heatmap.png")
    with pytest.raises(ValueError, match="style"):
        plot.timeseries(r, "time", "iteration", style="bars")
    with pytest.raises(ValueError, match="locations"):
        plot.timeseries(r, "time", "iteration", locations=[5])


def test_timeseries_counts_nested_visits_in_the_outer_one():
    prog = synth.Program(1)
    b = prog.rank(0)
    for k in range(3):
        with b.region("step"):
            b.compute("work", 0.1)
            with b.region("step"):  # recursion: main/step/step
                b.compute("work", 0.2 * (k + 1))
    r = prog.run(latency=0.0).analyze()
    assert r.timeseries("time", "step")[:, 0] == pytest.approx([0.3, 0.5, 0.7])
    assert r.timeseries("visits", "step")[:, 0] == pytest.approx([4.0, 4.0, 4.0])
    # the inner call path alone
    assert r.timeseries("time", "main/step/step")[:, 0] == pytest.approx([0.2, 0.4, 0.6])
