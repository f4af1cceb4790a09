"""compare, POP efficiencies, the diff/whatif commands and the Zeus-MP/2 study (seed 000, V-B and VI).

Expected values are worked out from the programs' structure:

* seed 001's benchmark (static imbalance, R ranks, I iterations, work()
  then a barrier): rank p works ``w_p = work + (peak - work)(2p/(R-1) - 1)``
  and waits ``peak - w_p`` per iteration at the barrier, summed over the
  ranks ``R (peak - work)`` per iteration; the barrier's delayer is the
  last rank (it works `peak`), which gets every delay cost;
* the Zeus-MP/2-like program: a process next to the central block touches
  exactly one central process across a face (a block of width >= 2 has
  no edges in common with an outer process's other faces); after the
  exchanges of phase 4 they start lorentz together, so it waits
  ``overload * work`` in phase 1 for each of `steps` steps, directly.
"""

from __future__ import annotations

import numpy as np
import pytest

import waitscope
from waitscope import cli, examples, synth
from waitscope.compare import RUN_TIME, compare_rows, rank_ranges

R, ITERS, WORK, PEAK = 4, 8, 50e-3, 62.5e-3


def _bench(scenario: str) -> waitscope.AnalysisResult:
    prog = examples.imbalance_benchmark(scenario, ranks=R, iterations=ITERS, work=WORK, peak=PEAK)
    return prog.run(latency=0.0).analyze(delay_model="proportional")


@pytest.fixture(scope="module")
def static_and_balanced() -> tuple[waitscope.AnalysisResult, waitscope.AnalysisResult]:
    return _bench("static"), _bench("balanced")


# ---- compare ---------------------------------------------------------------------------------


def test_rank_ranges() -> None:
    assert rank_ranges([7, 0, 1, 2, 3, 9, 10]) == "0-3, 7, 9-10"
    assert rank_ranges([5]) == "5"
    assert rank_ranges([]) == ""


def test_compare_static_and_balanced(static_and_balanced) -> None:
    static, balanced = static_and_balanced
    table = waitscope.compare(static, balanced)
    assert list(table.columns) == ["metric", "callpath", "before", "after", "change", "relative", "explanation"]
    first = table.iloc[0]
    assert first["metric"] == RUN_TIME
    assert first["before"] == pytest.approx(ITERS * PEAK, abs=1e-6)
    assert first["after"] == pytest.approx(ITERS * WORK, abs=1e-6)
    # sorted by the size of the change (after the run-time row)
    changes = np.abs(table["change"].to_numpy()[1:])
    assert np.all(changes[:-1] >= changes[1:])
    barrier = table[(table["metric"] == "mpi_barrier_wait") & (table["callpath"] == "synthetic/main/MPI_Barrier")].iloc[0]
    removed = R * (PEAK - WORK) * ITERS  # 0.4 s
    assert barrier["before"] == pytest.approx(removed, rel=1e-9)
    assert barrier["after"] == pytest.approx(0.0, abs=1e-9)
    assert barrier["change"] == pytest.approx(-removed, rel=1e-9)
    # the delay costs that went with it: all on the last rank, in work()
    assert "Wait at Barrier in synthetic/main/MPI_Barrier shrank 0.4 s" in barrier["explanation"]
    assert f"delay costs in synthetic/main/work on rank {R - 1} shrank 0.4 s" in barrier["explanation"]
    delay = table[(table["metric"] == "delay_barrier_aggregate") & (table["callpath"] == "synthetic/main/work")].iloc[0]
    assert delay["change"] == pytest.approx(-removed, rel=1e-9)


def test_compare_by_rank(static_and_balanced) -> None:
    static, balanced = static_and_balanced
    table = waitscope.compare(static, balanced, metrics=["mpi_barrier_wait", "delay_barrier"], locations=True)
    assert "rank" in table.columns
    waits = table[table["metric"] == "mpi_barrier_wait"].set_index("rank")["before"]
    for p in range(R):
        w_p = examples.imbalance_work_time("static", 0, p, R, ITERS, WORK, PEAK)
        assert waits.get(p, 0.0) == pytest.approx((PEAK - w_p) * ITERS, abs=ITERS * 1e-9)  # clock ticks of 1 ns
    delays = table[table["metric"] == "delay_barrier"].set_index("rank")["before"]
    assert list(delays.index) == [R - 1]
    assert delays[R - 1] == pytest.approx(R * (PEAK - WORK) * ITERS, rel=1e-9)


def test_compare_aligns_call_paths_by_name() -> None:
    a = synth.Program(2)
    a.rank(0).compute("x", 1.0).send(1, size=8)
    a.rank(1).recv(0)
    b = synth.Program(2)
    b.rank(0).compute("y", 0.5).compute("x", 0.5).send(1, size=8)
    b.rank(1).recv(0)
    ra, rb = a.run(latency=0.0).analyze(), b.run(latency=0.0).analyze()
    rows = {(r.metric, r.callpath): r for r in compare_rows(ra, rb, metrics=["comp"])}
    assert rows[("comp", "synthetic/main/x")].before == pytest.approx(1.0)
    assert rows[("comp", "synthetic/main/x")].after == pytest.approx(0.5)
    assert rows[("comp", "synthetic/main/y")].before == 0.0
    assert rows[("comp", "synthetic/main/y")].after == pytest.approx(0.5)


def test_compare_refuses_what_it_cannot_align(static_and_balanced) -> None:
    static, _ = static_and_balanced
    other = examples.imbalance_benchmark("static", ranks=3, iterations=2).run(latency=0.0).analyze()
    with pytest.raises(ValueError, match="same MPI ranks"):
        waitscope.compare(static, other, locations=True)
    with pytest.raises(ValueError, match="delay_barrier"):
        waitscope.compare(static, other, metrics=["delay_barrier"])
    # without locations the call paths still align
    assert waitscope.compare(static, other).iloc[0]["metric"] == RUN_TIME


# ---- POP efficiencies -----------------------------------------------------------------------


def test_pop_metrics_of_an_imbalance() -> None:
    # work 1 s and 3 s, then a barrier: LB = 2/3, CommE = 3/3, PE = 2/3
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).barrier()
    prog.rank(1).compute("work", 3.0).barrier()
    pop = prog.run(latency=0.0).analyze().pop_metrics(ideal=None)
    assert pop.load_balance == pytest.approx(2 / 3)
    assert pop.communication_efficiency == pytest.approx(1.0)
    assert pop.parallel_efficiency == pytest.approx(2 / 3)
    assert pop.serialisation_efficiency is None and pop.transfer_efficiency is None


def _pipeline(steps: int = 3) -> synth.Program:
    """Two ranks taking turns: each works 1 s per step while the other waits for its message."""
    prog = synth.Program(2)
    a, b = prog.rank(0), prog.rank(1)
    for s in range(steps):
        a.compute("work", 1.0).send(1, tag=s, size=10**6)
        b.recv(0, tag=s).compute("work", 1.0).send(0, tag=s, size=10**6)
        a.recv(1, tag=s)
    return prog


def test_pop_metrics_of_a_serialisation() -> None:
    # balanced (3 s each) but serialised: 6 s + 6 transfers of 1 MB at 1e7 B/s plus latencies
    prog = _pipeline()
    latency, bandwidth = 1e-3, 1e7
    recorded = prog.run(latency=latency, bandwidth=bandwidth)
    ideal = prog.run(latency=0.0)  # the same program on an ideal network
    transfer = latency + 10**6 / bandwidth
    barriers = 2 * latency  # MPI_Init and MPI_Finalize synchronise like barriers
    assert ideal.run_length == pytest.approx(6.0)
    result = recorded.analyze()
    pop = result.pop_metrics(ideal=ideal)
    assert pop.runtime == pytest.approx(6.0 + 6 * transfer + barriers, rel=1e-9)
    assert pop.load_balance == pytest.approx(1.0)
    assert pop.serialisation_efficiency == pytest.approx(3.0 / 6.0)
    assert pop.transfer_efficiency == pytest.approx(6.0 / (6.0 + 6 * transfer + barriers), rel=1e-9)
    # conservation: PE = LB * CommE = LB * SerE * TE
    assert pop.parallel_efficiency == pytest.approx(pop.load_balance * pop.communication_efficiency, rel=1e-12)
    assert pop.parallel_efficiency == pytest.approx(
        pop.load_balance * pop.serialisation_efficiency * pop.transfer_efficiency, rel=1e-12)
    # the ideal run time given as seconds or as the analysis of the ideal run: the same
    assert result.pop_metrics(ideal=6.0).transfer_efficiency == pytest.approx(pop.transfer_efficiency)
    assert result.pop_metrics(ideal=ideal.analyze()).serialisation_efficiency == pytest.approx(0.5)


@pytest.mark.skipif(not hasattr(waitscope.Trace, "simulate"), reason="Trace.simulate is not in this build")
def test_pop_metrics_simulates_the_ideal_network() -> None:
    # on an ideal network the pipeline runs as with latency 0 and no transfer time: 6 s
    prog = _pipeline()
    pop = prog.run(latency=1e-3, bandwidth=1e7).analyze().pop_metrics()
    assert pop.runtime_ideal == pytest.approx(6.0, rel=1e-6)
    assert pop.serialisation_efficiency == pytest.approx(0.5, rel=1e-6)
    assert pop.parallel_efficiency == pytest.approx(
        pop.load_balance * pop.serialisation_efficiency * pop.transfer_efficiency, rel=1e-12)


def test_pop_metrics_conservation_on_the_zeusmp_example() -> None:
    prog = examples.zeusmp(grid=(3, 3, 3), central=1, steps=2)
    result = prog.run(latency=1e-4, bandwidth=1e8).analyze()
    pop = result.pop_metrics(ideal=prog.run(latency=0.0))
    assert pop.parallel_efficiency == pytest.approx(
        pop.load_balance * pop.serialisation_efficiency * pop.transfer_efficiency, rel=1e-12)
    useful = result.by_location("comp")
    assert pop.load_balance == pytest.approx(useful.mean() / useful.max())
    assert 0 < pop.transfer_efficiency < 1 and 0 < pop.serialisation_efficiency <= 1 + 1e-12


def test_pop_metrics_bad_ideal(static_and_balanced) -> None:
    static, _ = static_and_balanced
    with pytest.raises(ValueError, match="positive"):
        static.pop_metrics(ideal=-1.0)
    with pytest.raises(TypeError, match="ideal must be"):
        static.pop_metrics(ideal=[1.0])
    with pytest.raises(ValueError, match="ideal must be"):
        static.pop_metrics(ideal="fast")


# ---- the Zeus-MP/2 study ----------------------------------------------------------------------

GRID, CENTRAL, STEPS, ZWORK = (6, 6, 6), 4, 4, 10e-3
N = int(np.prod(GRID))


def _zeus(balanced: tuple[str, ...] = ()) -> waitscope.AnalysisResult:
    prog = examples.zeusmp(grid=GRID, central=CENTRAL, steps=STEPS, work=ZWORK, balanced=balanced)
    return prog.run(latency=1e-6, bandwidth=1e9).analyze(delay_model="proportional")


@pytest.fixture(scope="module")
def zeus() -> waitscope.AnalysisResult:
    return _zeus()


def _layers() -> np.ndarray:
    return np.array([examples.zeusmp_layer(GRID, CENTRAL, r) for r in range(N)])


def _inside_block() -> np.ndarray:
    """Central processes all of whose neighbours are central too (not on the block's border)."""
    box = examples.zeusmp_central(GRID, CENTRAL)
    strides = (GRID[1] * GRID[2], GRID[2], 1)
    out = []
    for r in range(N):
        c = (r // strides[0], (r // strides[1]) % GRID[1], r % GRID[2])
        out.append(all(lo < x < hi - 1 for x, (lo, hi) in zip(c, box)))
    return np.array(out)


def _phase(result: waitscope.AnalysisResult, k: int, metric: str) -> np.ndarray:
    cp = result.callpath_index(f"comm{k}/MPI_Waitall")
    return np.asarray(result.get(metric, cp))


def test_zeusmp_structure() -> None:
    layers = _layers()
    assert np.bincount(layers).tolist() == [64, 96, 48, 8]
    assert int(_inside_block().sum()) == 8
    trace = examples.zeusmp(grid=GRID, central=CENTRAL, steps=1).run()
    assert tuple(trace.cart_topology.dims) == GRID
    with pytest.raises(ValueError, match="unknown regions"):
        examples.zeusmp(balanced=("nonsense",))


def test_zeusmp_delay_costs_on_the_border_of_the_overloaded_block(zeus) -> None:
    costs = (zeus.delay_short + zeus.delay_long).sum(axis=0)
    layers, inside = _layers(), _inside_block()
    total = costs.sum()
    assert total == pytest.approx(zeus.handled_waiting(), rel=1e-6)  # every wait is charged
    assert costs[inside].sum() == pytest.approx(0.0, abs=1e-9 * total)
    assert costs[layers > 0].sum() == pytest.approx(0.0, abs=1e-9 * total)
    assert costs[(layers == 0) & ~inside].sum() == pytest.approx(total, rel=1e-9)
    # and in the four overloaded regions, lorentz (the largest overload) first
    per_cp = (zeus.delay_short + zeus.delay_long).sum(axis=1)
    order = [zeus.callpath_names[int(cp)].rsplit("/", 1)[-1] for cp in np.argsort(-per_cp)[:4]]
    assert order[0] == "lorentz" and set(order) == set(examples.ZEUSMP_REGIONS)


def test_zeusmp_direct_waits_next_layer_indirect_further_out(zeus) -> None:
    layers = _layers()
    direct, indirect = _phase(zeus, 1, "mpi_wait_direct"), _phase(zeus, 1, "mpi_wait_indirect")
    expected = examples.ZEUSMP_OVERLOAD["lorentz"] * ZWORK * STEPS
    # every process of the next layer waits overload * work per step, directly
    np.testing.assert_allclose(direct[layers == 1], expected, rtol=1e-3)
    assert direct[layers != 1].sum() == pytest.approx(0.0, abs=1e-9)
    assert indirect[layers <= 1].sum() == pytest.approx(0.0, abs=1e-9)
    assert indirect[layers == 2].sum() > 0 and indirect[layers == 3].sum() > 0
    # the later phases: their direct waits are again in the next layer only
    for k in (2, 3, 4):
        assert _phase(zeus, k, "mpi_wait_direct")[layers != 1].sum() == pytest.approx(0.0, abs=1e-9)


def test_zeusmp_whatif_balancing_lorentz_then_all(zeus) -> None:
    layers = _layers()
    lorentz = _zeus(("lorentz",))
    everything = _zeus(examples.ZEUSMP_REGIONS)
    before = _phase(zeus, 1, "mpi_wait_direct")[layers == 1].sum()
    after = _phase(lorentz, 1, "mpi_wait_direct")[layers == 1].sum()
    # balanced lorentz takes the same time everywhere: phase 1 has no direct waits left
    assert after < 0.01 * before
    # it removes lorentz's delay costs, not those of the three loops
    assert lorentz.by_callpath("delay").sum() < zeus.by_callpath("delay").sum()
    assert lorentz.run_length < zeus.run_length
    # balancing all four leaves only the transfers (1e-6 s latency per message): < 1 % of the waiting
    assert everything.handled_waiting() < 0.01 * lorentz.handled_waiting()
    assert everything.run_length < lorentz.run_length
    # the saving of balancing everything: each step loses the central block's excess
    excess = sum(examples.ZEUSMP_OVERLOAD[r] for r in examples.ZEUSMP_REGIONS) * ZWORK * STEPS
    mean_extra = excess * 64 / N  # the balanced work is the mean: the central block's excess spread out
    assert zeus.run_length - everything.run_length == pytest.approx(excess - mean_extra, rel=1e-3)


@pytest.mark.skipif(not hasattr(waitscope.Trace, "simulate"), reason="Trace.simulate is not in this build")
def test_zeusmp_simulated_balance_predicts_the_balanced_program(zeus) -> None:
    prog = examples.zeusmp(grid=GRID, central=CENTRAL, steps=STEPS, work=ZWORK)
    simulated = prog.run(latency=1e-6, bandwidth=1e9).simulate(balance="lorentz").analyze(delay_model="proportional")
    truth = _zeus(("lorentz",))
    assert simulated.run_length == pytest.approx(truth.run_length, rel=1e-3)
    assert simulated.handled_waiting() == pytest.approx(truth.handled_waiting(), rel=1e-2, abs=1e-6)


# ---- the commands ------------------------------------------------------------------------


def test_diff_command(tmp_path, capsys) -> None:
    paths = []
    for scenario in ("static", "balanced"):
        prog = examples.imbalance_benchmark(scenario, ranks=R, iterations=ITERS, work=WORK, peak=PEAK)
        paths.append(prog.write(str(tmp_path / scenario), latency=0.0))
    assert cli.main(["diff", *paths]) == 0
    out = capsys.readouterr().out
    assert f"before: {paths[0]}" in out
    # with latency 0 all MPI time is barrier waiting, all of it direct: one row for the three metrics
    line = next(x for x in out.splitlines() if "mpi_barrier_wait" in x and "synthetic/main/MPI_Barrier" in x)
    assert line.split()[:5] == ["mpi", "=", "mpi_barrier_wait", "=", "mpi_wait_direct"]
    assert line.split()[5:9] == ["0.400000", "0.000000", "-0.400000", "-100.00"]
    assert f"delay costs in synthetic/main/work on rank {R - 1} shrank 0.4 s" in out
    assert cli.main(["diff", "--ranks", "--top", "60", *paths]) == 0
    out = capsys.readouterr().out
    w_0 = examples.imbalance_work_time("static", 0, 0, R, ITERS, WORK, PEAK)
    assert f"{(PEAK - w_0) * ITERS:.6f}" in next(x for x in out.splitlines() if x.endswith("synthetic/main/MPI_Barrier (rank 0)")
                                                 and "mpi_barrier_wait" in x)
    other = examples.imbalance_benchmark("static", ranks=3, iterations=2).write(str(tmp_path / "three"))
    assert cli.main(["diff", "--ranks", paths[0], other]) == 2
    assert "same MPI ranks" in capsys.readouterr().err
    assert cli.main(["diff", paths[0], paths[0]]) == 0
    assert "no metric changed" in capsys.readouterr().out
    assert cli.main(["diff", paths[0], str(tmp_path / "missing")]) == 2
    assert "missing" in capsys.readouterr().err


def test_analyze_prints_pop_metrics(tmp_path, capsys) -> None:
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).barrier()
    prog.rank(1).compute("work", 3.0).barrier()
    path = prog.write(str(tmp_path / "t"), latency=0.0)
    assert cli.main(["analyze", "--quiet", path]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "load balance" in x)
    assert "66.67 %" in line
    assert "parallel efficiency" in out


def test_whatif_command(tmp_path, capsys) -> None:
    prog = examples.imbalance_benchmark("static", ranks=R, iterations=ITERS, work=WORK, peak=PEAK)
    path = prog.write(str(tmp_path / "static"), latency=0.0)
    code = cli.main(["whatif", path, "--balance", "work", "-o", str(tmp_path / "sim")])
    out, err = capsys.readouterr()
    if not hasattr(waitscope.Trace, "simulate"):
        assert code == 2 and "no Trace.simulate" in err
        return
    assert code == 0, err
    run = next(x for x in out.splitlines() if "run time" in x)
    assert f"{ITERS * PEAK:.6f}" in run and f"{ITERS * WORK:.6f}" in run
    assert "Wait at Barrier" in out
    written = waitscope.open(str(tmp_path / "sim" / "traces.otf2"))
    assert written.run_length == pytest.approx(ITERS * WORK, rel=1e-3)


def test_whatif_arguments(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["whatif", "x.otf2", "--scale", "work=-2"])
    assert "REGION=FACTOR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["whatif", "x.otf2", "--network", "fast"])
    assert "LATENCY,BANDWIDTH" in capsys.readouterr().err


# ---- the plot -----------------------------------------------------------------------------


def test_plot_whatif(zeus) -> None:
    plot = pytest.importorskip("waitscope.plot")
    lorentz = _zeus(("lorentz",))
    cps = ["comm1/MPI_Waitall", "comm2/MPI_Waitall", "comm3/MPI_Waitall"]
    fig = plot.whatif(zeus, lorentz, "mpi_latesender", cps, plane=2)
    axes = [a for a in fig.axes if a.images]
    assert len(axes) == 6
    # top row: the recorded waiting of plane 2; bottom row: after balancing lorentz
    for col, cp in enumerate(cps):
        before = plot.topology_grid(zeus, "mpi_latesender", cp)[2]
        after = plot.topology_grid(lorentz, "mpi_latesender", cp)[2]
        np.testing.assert_allclose(np.asarray(axes[col].images[0].get_array()), before)
        np.testing.assert_allclose(np.asarray(axes[3 + col].images[0].get_array()), after)
    with pytest.raises(ValueError, match="plane"):
        plot.whatif(zeus, lorentz, "mpi_latesender", cps, plane=9)


def test_whatif_command_report(tmp_path, capsys, monkeypatch) -> None:
    """The report of ``waitscope whatif``, with the simulation standing in by the program it must
    predict (the balanced benchmark), so that what the command passes and prints is checked on its own."""
    static = examples.imbalance_benchmark("static", ranks=R, iterations=ITERS, work=WORK, peak=PEAK)
    balanced = examples.imbalance_benchmark("balanced", ranks=R, iterations=ITERS, work=WORK, peak=PEAK)
    path = static.write(str(tmp_path / "static"), latency=0.0)
    calls = []

    def simulate(self, balance=None, scale=None, network="recorded", progress="auto"):
        calls.append((balance, scale, network))
        return balanced.run(latency=0.0)

    monkeypatch.setattr(waitscope.Trace, "simulate", simulate, raising=False)
    assert cli.main(["whatif", path, "--balance", "work", "--scale", "work=0.5", "--network", "1e-6,1e9",
                     "-o", str(tmp_path / "sim")]) == 0
    out = capsys.readouterr().out
    assert calls[0] == (["work"], {"work": 0.5}, (1e-6, 1e9))
    assert "balance work; speed up work x 0.5; network (1e-06, 1000000000.0)" in out
    run = next(x for x in out.splitlines() if "run time" in x)
    assert f"{ITERS * PEAK:.6f}" in run and f"{ITERS * WORK:.6f}" in run and "-20.00 %" in run
    barrier = next(x for x in out.splitlines() if x.strip().startswith("mpi_barrier_wait"))
    assert "0.400000" in barrier and "-0.400000" in barrier and "-100.00 %" in barrier
    delay = next(x for x in out.splitlines() if x.strip().startswith("synthetic/main/work"))
    assert "0.400000" in delay
    assert f"delay costs in synthetic/main/work on rank {R - 1} shrank 0.4 s" in out
    # POP of the recorded run: LB = mean / max work = 50 / 62.5
    assert "80.00 %" in next(x for x in out.splitlines() if "load balance" in x)
    assert waitscope.open(str(tmp_path / "sim" / "traces.otf2")).run_length == pytest.approx(ITERS * WORK)


def test_compare_of_a_result_with_itself(static_and_balanced) -> None:
    static, _ = static_and_balanced
    rows = compare_rows(static, static)
    assert all(r.change == 0.0 and not r.explanation for r in rows)
    assert any(r.metric == "mpi_barrier_wait" for r in rows)


@pytest.mark.parametrize("region", examples.ZEUSMP_REGIONS)
def test_zeusmp_saving_of_balancing_equals_the_critical_path_imbalance(region) -> None:
    """Balancing one region saves its critical-path imbalance (Böhme et al., IPDPS 2012).

    The critical path runs through the central block in every phase, where
    each visit of the region takes ``work (1 + f)``; balanced, every visit
    takes the mean ``work (1 + f n_c / n)``, and the path shortens by the
    difference per visit, ``steps * work * f * (1 - n_c / n)``, which is
    the region's time on the path minus its mean per process: its
    critical-path imbalance.  Both sides carry the same message latencies,
    which cancel, so they agree to clock ticks.
    """
    prog = dict(grid=GRID, central=CENTRAL, steps=STEPS, work=ZWORK)
    run = dict(latency=1e-6, bandwidth=1e9)
    recorded = examples.zeusmp(**prog).run(**run)
    result = recorded.analyze(critical_path=True)
    imbalance = result.critical_path.imbalance[result.callpath_index(region)]
    f = examples.ZEUSMP_OVERLOAD[region]
    assert imbalance == pytest.approx(STEPS * ZWORK * f * (1 - CENTRAL**3 / N), rel=1e-6)
    balanced = examples.zeusmp(**prog, balanced=(region,)).run(**run)
    assert result.run_length - balanced.run_length == pytest.approx(imbalance, abs=1e-8)
    if hasattr(recorded, "simulate"):
        predicted = recorded.simulate(balance=region)
        assert result.run_length - predicted.run_length == pytest.approx(imbalance, rel=1e-3)


def test_plot_whatif_defaults(zeus) -> None:
    plot = pytest.importorskip("waitscope.plot")
    lorentz = _zeus(("lorentz",))
    fig = plot.whatif(zeus, lorentz)
    axes = [a for a in fig.axes if a.images]
    # the three call paths with the most Late Sender waiting, in call-path order; the middle plane
    per_cp = zeus.by_callpath("mpi_latesender")
    top = sorted(int(i) for i in np.argsort(-per_cp)[:3])
    assert [a.get_title().split("\n")[0] for a in axes[:3]] == [zeus.callpath_names[i] for i in top]
    assert axes[0].get_title().endswith("recorded, dim 2 = 3") and axes[3].get_title().endswith("simulated, dim 2 = 3")
    other = examples.zeusmp(grid=(2, 2, 2), central=1, steps=1).run().analyze()
    with pytest.raises(ValueError, match="same locations"):
        plot.whatif(zeus, other)


def _late(wait: float, tmp_path, name: str) -> str:
    """Rank 0 works 1 s + `wait` and sends; rank 1 works 1 s and receives: Late Sender `wait`."""
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0 + wait).send(1)
    prog.rank(1).compute("work", 1.0).recv(0)
    return prog.write(str(tmp_path / name), latency=0.0)


def test_diff_percentages_and_negligible_bases(tmp_path, capsys) -> None:
    small, large = _late(0.0003, tmp_path, "small"), _late(0.04, tmp_path, "large")
    assert cli.main(["diff", small, large]) == 0
    out, err = capsys.readouterr()
    assert err == ""  # the same program: no warning
    lines = out.splitlines()
    assert lines[2].split() == ["metric", "before", "after", "change", "%", "call", "path"]
    # run time 1.0003 s -> 1.04 s: +3.97 %
    assert lines[3].split() == ["run_time", "1.000300", "1.040000", "+0.039700", "+3.97", "%"]
    # Late Sender 0.3 ms -> 40 ms (all of rank 1's MPI time, all of it direct: one row); the base is
    # below 1e-3 of the run: no percentage (not +13233 %)
    late = lines[4].split()
    assert late[:5] == ["mpi", "=", "mpi_latesender", "=", "mpi_wait_direct"]
    assert late[5:9] == ["0.000300", "0.040000", "+0.039700", "-"] and late[9].endswith("main/MPI_Recv")
    assert "delay costs in" in lines[5] and "on rank 0 grew 0.0397 s" in lines[5]  # the merged row's explanation
    delay = lines[6].split()
    assert delay[:3] == ["delay", "=", "delay_latesender_aggregate"] and delay[3:7] == ["0.000300", "0.040000",
                                                                                      "+0.039700", "-"]
    # the other way round the base is 40 ms, worth a percentage
    assert cli.main(["diff", large, small]) == 0
    late = capsys.readouterr().out.splitlines()[4]
    assert "-0.039700  -99.25 %" in late


def test_diff_warns_about_different_programs(tmp_path, capsys, pingpong_dir) -> None:
    static = examples.imbalance_benchmark("static", ranks=2, iterations=2).write(str(tmp_path / "static"))
    assert cli.main(["diff", static, str(pingpong_dir)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("waitscope: warning: the two runs look like different programs: they share ")
    assert "only in the second: MPI_Comm_rank, MPI_Comm_size, MPI_Recv" in err
    a = waitscope.open(static).analyze()
    b = waitscope.open(pingpong_dir).analyze()
    with pytest.warns(UserWarning, match="look like different programs"):
        waitscope.compare(a, b)
    from waitscope.compare import program_difference

    assert program_difference(a, a) is None
    assert program_difference(b, a).startswith("the two runs look like different programs")
