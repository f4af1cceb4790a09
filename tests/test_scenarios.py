"""The evaluation scenarios of the seeds as synthetic programs.

* seed 001 section IV-A: the synthetic load-imbalance benchmark (32 ranks,
  320 iterations of work() + barrier; balanced, static, dynamic, mixed);
* seed 000 section V-A: a Sweep3D-like wavefront on a 2D process grid
  (short- versus long-term delay costs and where they come from);
* seed 001 section IV-D: an MPMD program in the style of ddcMD (particle
  and mesh partitions; where the critical path runs and the
  inter-partition imbalance costs while work moves between them).

The programs come from waitscope.examples (the notebooks use them too).
Each test states the numbers it expects and how they follow from the
timing model of waitscope/synth.py.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import waitscope
from waitscope import examples

MODELS = ("proportional", "wait-first")


# ---- seed 001 IV-A: synthetic load-imbalance benchmark ---------------------------
#
# 32 ranks run 320 iterations of work() followed by MPI_Barrier (latency 0,
# so the barrier ends at the last enter and MPI_Init/Finalize take no time).
# The balanced scenario works 50 ms per iteration everywhere: 16 s.  The
# imbalanced ones keep the allocation time of work() (32 * 320 * 50 ms =
# 512 s) but the slowest rank of every iteration needs 62.5 ms, so they
# run 320 * 62.5 ms = 20 s, 25 % (4 s) longer (figure 5 of the seed):
#   static:  rank p always works 50 + 12.5 (2p/31 - 1) ms (-12.5 .. +12.5 ms)
#   dynamic: in iteration i rank i mod 32 works 62.5 ms, the others
#            (1600 - 62.5)/31 ms; every rank is overloaded 10 times
#   mixed:   rank 0 is overloaded in the first 160 iterations, rank 1 in
#            the last 160 (the others as in dynamic)
# The path runs through the slowest rank of every iteration, so it holds
# 20 s of work() against an average activity of 16 s: a critical-path
# imbalance of 4 s in all three.  The per-process profile (max - average of
# work() per process) sees 320 * 12.5 ms = 4 s (static), 0 (dynamic) and
# 160 * (62.5 - 50) ms + 160 * (other - 50) ms = 1.935 s (mixed, 48 %).

P, ITERATIONS = 32, 320
BASE, PEAK = 50e-3, 62.5e-3
OTHER = (P * BASE - PEAK) / (P - 1)
ADDED = ITERATIONS * (PEAK - BASE)  # 4 s


@functools.lru_cache(maxsize=None)
def benchmark(scenario: str) -> waitscope.AnalysisResult:
    prog = examples.imbalance_benchmark(scenario, P, ITERATIONS, BASE, PEAK)
    return prog.run(latency=0.0).analyze(critical_path=True)


PROFILE_IMBALANCE = {
    "balanced": 0.0,
    "static": ADDED,
    "dynamic": 0.0,
    "mixed": ITERATIONS // 2 * (PEAK - BASE) + ITERATIONS // 2 * (OTHER - BASE),
}


@pytest.mark.parametrize("scenario", ["balanced", "static", "dynamic", "mixed"])
def test_load_imbalance_benchmark(scenario):
    r = benchmark(scenario)
    work = r.callpath_index("main/work")
    cp = r.critical_path
    balanced = benchmark("balanced").critical_path
    # run times: 16 s balanced, 25 % more otherwise
    assert balanced.length == pytest.approx(16.0, abs=1e-6)
    expected_runtime = 16.0 if scenario == "balanced" else 20.0
    assert cp.length == pytest.approx(expected_runtime, abs=1e-6)
    assert cp.end - cp.start == pytest.approx(cp.length, rel=1e-9)
    added = cp.length - balanced.length
    # the same allocation time of work() in all four scenarios
    per_process = r.get("time")[work]
    np.testing.assert_allclose(r.get("comp")[work], per_process, rtol=0, atol=0)
    assert per_process.sum() == pytest.approx(P * ITERATIONS * BASE, abs=1e-5)
    # the critical path holds the slowest rank's work() in every iteration
    assert cp.by_callpath[work] == pytest.approx(expected_runtime, abs=1e-6)
    # critical-path imbalance of work() = the added run time (within 1 %)
    iota = cp.imbalance[work]
    if scenario == "balanced":
        assert iota == pytest.approx(0.0, abs=1e-9)
    else:
        assert iota == pytest.approx(added, rel=0.01)
        assert iota == pytest.approx(ADDED, abs=1e-6)
    # the per-process profile: static finds it all, dynamic nothing, mixed about half
    profile = per_process.max() - per_process.mean()
    assert profile == pytest.approx(PROFILE_IMBALANCE[scenario], abs=1e-6)
    if scenario == "static":
        assert profile == pytest.approx(iota, rel=0.01)
    elif scenario == "dynamic":
        assert profile < 1e-6 * iota
    elif scenario == "mixed":
        assert 0.45 < profile / iota < 0.55
    # work() is the only call path with imbalance (with latency 0 the
    # barriers, MPI_Init and MPI_Finalize take no time outside their waits)
    assert r.total("critical_path_imbalance") == pytest.approx(iota, abs=1e-9)
    assert r.total("performance_impact") == pytest.approx(P * cp.length, rel=1e-9)


# ---- seed 000 V-A: Sweep3D-like wavefront ------------------------------------------
#
# A py x px process grid (coordinates (row, column), column fastest; the
# trace carries the topology).  Each sweep starts at a corner and runs
# towards the opposite one, pipelined over K blocks of k-planes; per block
# every rank (Listing 1 of the seed) receives from its upstream east/west
# neighbour, then from its upstream north/south neighbour (blocking), computes,
# then sends downstream east/west and north/south (eager, blocking).  The
# sweeps come from the four corners in turn (NW, SE, NE, SW), twice.  The
# ranks on the border of the grid (the outer ring) compute 30 % longer.
#
# Because the receive from east/west comes first, a delay of an inner rank
# only holds up its own row, while the left and right border ranks (no
# upstream east/west neighbour) pass theirs on vertically, and from every
# rank of their column it spreads along the rows: the long-term costs
# originate on the vertical borders, and they grow with the grid.

SWEEP_BASE, SWEEP_EXTRA = 1e-3, 0.3e-3


def sweep3d(px: int, py: int):
    return examples.sweep3d(px, py, repeats=2, blocks=4, work=SWEEP_BASE, border_extra=SWEEP_EXTRA)


@functools.lru_cache(maxsize=None)
def sweep_results(n: int) -> tuple:
    trace = sweep3d(n, n).run(latency=1e-6)
    return trace, {model: trace.analyze(delay_model=model) for model in MODELS}


GRIDS = (4, 8, 12)


@pytest.mark.parametrize("n", GRIDS)
@pytest.mark.parametrize("model", MODELS)
def test_sweep3d_delay_costs(n, model):
    trace, results = sweep_results(n)
    r = results[model]
    topo = trace.cart_topology
    assert topo is not None and tuple(topo.dims) == (n, n)
    coords = topo.location_coords(trace.n_locations)
    col, row = coords[:, 1], coords[:, 0]
    vertical = (col == 0) | (col == n - 1)
    horizontal = (row == 0) | (row == n - 1)

    # conservation: every handled wait state is charged, and they are all Late Senders
    assert r.undistributed == 0.0
    assert r.total("delay") == pytest.approx(r.handled_waiting(), rel=1e-9)
    assert r.handled_waiting() == pytest.approx(r.total("mpi_latesender"), rel=1e-12)
    short, long_ = r.delay_vectors()
    assert short.sum() + long_.sum() == pytest.approx(r.handled_waiting(), rel=1e-9)
    assert r.total("delay_latesender") == pytest.approx(short.sum(), rel=1e-12)
    assert r.total("delay_latesender_longterm") == pytest.approx(long_.sum(), rel=1e-12)

    # long-term costs dominate (observed, proportional / wait-first:
    # 4x4 74 / 75 %, 8x8 89 / 90 %, 12x12 94 / 94 %; seed: 89 .. 98 %)
    share = long_.sum() / (short.sum() + long_.sum())
    assert share > 0.7

    # the largest long-term costs originate on a vertical border
    per_rank = long_.sum(axis=0)
    top = int(np.argmax(per_rank))
    assert col[top] in (0, n - 1), coords[top]
    # the vertical borders cause far more than their share of ranks (observed
    # 89 / 74 / 70 % of the long-term costs for 50 / 25 / 17 % of the ranks) ...
    vertical_share = per_rank[vertical].sum() / per_rank.sum()
    assert vertical_share > 1.4 * vertical.mean()
    # ... and per rank far more than the horizontal borders (corners excluded;
    # observed ratio 7.3 / 4.9 / 4.8)
    v_only, h_only = vertical & ~horizontal, horizontal & ~vertical
    assert per_rank[v_only].mean() > 3 * per_rank[h_only].mean()
    # the border ring causes more than its share of the short-term costs too
    border = vertical | horizontal
    assert short.sum(axis=0)[border].sum() / short.sum() > border.mean()


@pytest.mark.parametrize("model", MODELS)
def test_sweep3d_long_term_share_grows_with_the_grid(model):
    shares, waiting = [], []
    for n in GRIDS:
        trace, results = sweep_results(n)
        r = results[model]
        short, long_ = r.delay_vectors()
        shares.append(long_.sum() / (short.sum() + long_.sum()))
        waiting.append(r.total("mpi_latesender") / r.total("time"))
    # 4x4 < 8x8 < 12x12, as 256 < ... < 16384 processes in Table I of the seed
    assert shares[0] < shares[1] < shares[2], shares
    assert shares[2] - shares[0] > 0.1, shares
    # so does the share of Late Sender time in the run time (53 / 71 / 78 %)
    assert waiting[0] < waiting[1] < waiting[2], waiting


# ---- seed 001 IV-D: MPMD partitions (ddcMD) ----------------------------------------
#
# 12 "particle" ranks and 4 "mesh" ranks, 20 steps.  Per step every mesh
# rank computes `mesh` for m and sends its result to its 3 particle ranks;
# every particle rank computes `particle` for p, receives from its mesh
# rank, and all 16 meet in an MPI_Allreduce.  The split keeps the total
# 12 p + 4 m = 48 ms per step, so p = m = 3 ms is the balanced one.
# With p > m the mesh ranks wait in the allreduce: the path stays on the
# particle ranks and the mesh ranks' wait, 4 (p - m) per step, becomes
# inter-partition imbalance cost of `particle` (no mesh rank runs it).
# With m > p the particle ranks wait for the mesh message (Late Sender):
# the path moves to the mesh ranks and the inter-partition cost is
# 12 (m - p) per step, charged to `mesh`.

N_PARTICLE, N_MESH, STEPS = 12, 4, 20
TOTAL_WORK = 48e-3
MESH_WORK = (1e-3, 2e-3, 2.5e-3, 3e-3, 3.5e-3, 4e-3, 5e-3)
BALANCED = MESH_WORK.index(3e-3)
MPMD_LATENCY = 1e-6


def mpmd(mesh_work: float) -> tuple:
    prog = examples.mpmd(mesh_work, N_PARTICLE, N_MESH, STEPS, TOTAL_WORK)
    return prog.run(latency=MPMD_LATENCY), examples.mpmd_particle_work(mesh_work, N_PARTICLE, N_MESH, TOTAL_WORK)


@functools.lru_cache(maxsize=None)
def mpmd_sweep() -> list:
    return [mpmd(m) for m in MESH_WORK]


@pytest.mark.parametrize("partition", ["derived", "given"])
def test_mpmd_partitions(partition):
    part = None if partition == "derived" else [0] * N_PARTICLE + [1] * N_MESH
    inter_total, on_particle, on_mesh = [], [], []
    for mesh_work, (trace, particle_work) in zip(MESH_WORK, mpmd_sweep()):
        r = trace.analyze(critical_path=True, partition=part)
        cp = r.critical_path
        ip, im = r.callpath_index("main/particle"), r.callpath_index("main/mesh")
        parts = cp.partitions
        # two partitions: the particle ranks and the mesh ranks
        assert len(set(parts[:N_PARTICLE])) == 1 and len(set(parts[N_PARTICLE:])) == 1
        assert parts[0] != parts[N_PARTICLE]
        if part is not None:
            assert list(parts) == part
        # activity plus headroom: each location filled up to the path's length,
        # unless its activity (with MPI_Finalize's own time, after the path's
        # end) exceeds it
        act = (r.get("critical_path_activities") + r.get("non_critical_path_activities")).sum(axis=0)
        assert r.total("performance_impact") == pytest.approx(np.maximum(act, cp.length).sum(), rel=1e-9)
        prof = cp.by_callpath
        seg = cp.segments
        compute = seg[(seg["callpath"] == ip) | (seg["callpath"] == im)]
        inter = r.by_callpath("inter_partition_imbalance")
        on_particle.append(prof[ip])
        on_mesh.append(prof[im])
        inter_total.append(r.total("inter_partition_imbalance"))
        # the partitions are balanced inside: no intra-partition costs
        assert r.total("intra_partition_imbalance") == pytest.approx(0.0, abs=1e-9)
        slack = STEPS * (N_PARTICLE + N_MESH) * 3 * MPMD_LATENCY  # latencies on the way
        if particle_work > mesh_work:
            # the path computes on the particle ranks only
            assert prof[ip] == pytest.approx(STEPS * particle_work, abs=STEPS * 1e-9)  # whole ns ticks
            assert prof[im] == 0.0
            assert np.all(compute["location"] < N_PARTICLE)
            assert inter[ip] == pytest.approx(STEPS * N_MESH * (particle_work - mesh_work), abs=slack)
            assert inter[im] == 0.0
        elif mesh_work > particle_work:
            # ... on the mesh ranks only
            assert prof[im] == pytest.approx(STEPS * mesh_work, abs=STEPS * 1e-9)
            assert prof[ip] == 0.0
            assert np.all(compute["location"] >= N_PARTICLE)
            assert inter[im] == pytest.approx(STEPS * N_PARTICLE * (mesh_work - particle_work), abs=slack)
            assert inter[ip] == 0.0
        else:
            assert inter_total[-1] < slack
    # the path moves from one partition to the other across the sweep
    assert on_mesh[0] == 0.0 and on_particle[-1] == 0.0
    assert on_particle[0] > 0.0 and on_mesh[-1] > 0.0
    # the inter-partition imbalance costs are smallest at the balanced split,
    # falling towards it and rising after it
    assert int(np.argmin(inter_total)) == BALANCED, inter_total
    assert all(np.diff(inter_total[: BALANCED + 1]) < 0), inter_total
    assert all(np.diff(inter_total[BALANCED:]) > 0), inter_total
    # mesh-heavy splits waste more: 12 waiting particle ranks per unit of imbalance
    assert inter_total[BALANCED + 1] > inter_total[BALANCED - 1]


def test_mpmd_given_partitions_match_derived():
    trace, _ = mpmd_sweep()[0]
    derived = trace.analyze(critical_path=True)
    given = trace.analyze(critical_path=True, partition=[0] * N_PARTICLE + [1] * N_MESH)
    for m in ("intra_partition_imbalance", "inter_partition_imbalance", "performance_impact",
              "critical_imbalance_impact", "critical_path", "critical_path_imbalance"):
        np.testing.assert_array_equal(given.get(m), derived.get(m), err_msg=m)
    # one partition for everybody: the mesh wait is intra-partition now
    single = trace.analyze(critical_path=True, partition=[0] * (N_PARTICLE + N_MESH))
    assert single.total("inter_partition_imbalance") == 0.0
    assert single.total("intra_partition_imbalance") == pytest.approx(derived.total("inter_partition_imbalance"),
                                                                      rel=1e-9)
