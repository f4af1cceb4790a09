"""Agreement with Scalasca 2.6 on hybrid MPI+OpenMP programs.

../shared/data/hybrid/ holds the Score-P 7.1 traces of six small C programs
(2 ranks x 2 OpenMP threads: imbalanced parallel regions, explicit
barriers, critical sections, locks, idle worker threads, user functions
and MPI inside parallel regions), each with the report of the real
Scalasca 2.6 ``scout.hyb``.  Every metric, call path and location is
compared with waitscope's ``analyze(delay_model="proportional",
critical_path=True)`` with the tolerances of test_scalasca_refs.py.

The differences allowed, each asserted for what it is (docs/metrics.md):

* Time: waitscope's Time includes the idle time of worker threads outside
  parallel regions (``omp_idle_threads``), as Scalasca's own definition of
  Time says; Scalasca 2.6 leaves that metric at 0 on Score-P traces.  Time
  minus omp_idle_threads must equal Scalasca's Time everywhere.
* the imbalance split (as on the MPI programs): waitscope's is Böhme et
  al.'s rule, Scalasca's its own, both recomputed from the critical path;
* long-term costs through OpenMP barriers: where an MPI collective wait
  state or idle worker threads leave long-term costs on an OpenMP barrier's
  waiting, Scalasca 2.6 passes them on to the thread that delayed the
  barrier in some parallel regions and charges them to nothing in others.
  waitscope passes them on in every region: its values are never below
  Scalasca's there, and what it charges more is exactly what Scalasca
  loses (Scalasca's delay costs fall short of the waiting it reports by
  that amount; waitscope's add up to it).
"""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import waitscope

from conftest import SHARED_DATA
from test_scalasca_refs import (COMPARED, differences, ours, reference, scalasca_imbalance, seed_imbalance,
                                tolerance)

HYBRID = SHARED_DATA / "hybrid"
TRACES = ["omp_imbalance", "omp_explicit_barrier", "omp_critical", "omp_locks", "omp_idle", "omp_nested_calls"]
OMP_METRICS = ["omp_fork", "omp_management", "omp_ibarrier_wait", "omp_ebarrier_wait", "omp_lock_contention_critical",
               "omp_lock_contention_api", "delay_ompbarrier", "delay_ompbarrier_longterm", "delay_ompidle",
               "delay_ompidle_longterm"]
# where Scalasca 2.6 loses long-term costs at OpenMP barriers: trace -> the
# metrics that differ (all of them, and nothing else)
LOST_AT_OMP_BARRIERS = {
    "omp_explicit_barrier": {"delay_n2n_longterm", "delay_ompidle_longterm"},
    "omp_critical": {"delay_12n_longterm", "delay_ompidle_longterm"},
    "omp_locks": {"delay_n21_longterm", "delay_ompidle_longterm"},
    "omp_nested_calls": {"delay_barrier_longterm", "delay_ompidle_longterm"},
}
IMBALANCE = ("critical_imbalance_impact", "inter_partition_imbalance", "intra_partition_imbalance")


@functools.lru_cache(maxsize=None)
def analysed(name: str) -> tuple[dict, waitscope.AnalysisResult]:
    d = HYBRID / name
    if not d.is_dir():
        pytest.skip(f"{d} is not available")
    ref = json.loads((d / "scalasca.json").read_text())
    r = waitscope.open(str(d)).analyze(delay_model="proportional", critical_path=True)
    return ref, r


@pytest.fixture(scope="module", params=TRACES)
def case(request):
    ref, r = analysed(request.param)
    return request.param, ref, r


def ours_as_scalasca(r: waitscope.AnalysisResult, metric: str) -> dict:
    """waitscope's values of a metric as Scalasca 2.6 reports them (Time
    without the idle threads)."""
    if metric != "time":
        return ours(r, metric) if metric in r.metric_ids else {}
    cube = r.get("time") - r.get("omp_idle_threads")
    return {name: cube[i] for i, name in enumerate(r.callpath_names) if np.any(cube[i] != 0)}


def metric_differences(ref: dict, r: waitscope.AnalysisResult) -> dict:
    n = ref["locations"]
    assert r.n_locations == n
    metrics = COMPARED + OMP_METRICS + sorted(m for m in ref["metrics"] if m not in COMPARED + OMP_METRICS)
    report = {}
    for m in metrics:
        if m in IMBALANCE:
            continue  # test_imbalance_is_the_papers_and_scalascas_its_own
        diff = differences(reference(ref, m, n), ours_as_scalasca(r, m), m, n)
        if diff:
            report[m] = diff
    return report


def test_every_metric_agrees(case):
    """Every metric, call path and location agrees with Scalasca 2.6,
    except the long-term costs it loses at OpenMP barriers (exactly those
    metrics differ)."""
    name, ref, r = case
    report = metric_differences(ref, r)
    expected = LOST_AT_OMP_BARRIERS.get(name, set())
    assert set(report) == expected, {m: v for m, v in report.items() if m not in expected}


def test_the_difference_is_what_scalasca_loses(case):
    """Where Scalasca passes long-term costs through an OpenMP barrier,
    waitscope charges the same; where it does not, waitscope charges more,
    never less, and the surplus is exactly the waiting Scalasca's delay
    costs leave uncharged.  waitscope's delay costs and undistributed
    waiting add up to the handled waiting."""
    name, ref, r = case
    n = ref["locations"]
    waited = r.handled_waiting()
    assert r.total("delay") + r.undistributed == pytest.approx(waited, rel=1e-9)
    theirs = sum(float(np.sum(v)) for m, e in ref["metrics"].items() if m.startswith("delay_")
                 for v in e["paths"].values())
    surplus = 0.0
    for m in LOST_AT_OMP_BARRIERS.get(name, ()):
        a, b = reference(ref, m, n), ours(r, m)
        rtol, atol = tolerance(m)
        for path in set(a) | set(b):
            x, y = a.get(path, np.zeros(n)), b.get(path, np.zeros(n))
            assert np.all(y >= x - atol - rtol * np.abs(x)), (m, path, x, y)
            surplus += float(np.sum(y - x))
    assert surplus == pytest.approx(waited - r.undistributed - theirs, abs=2e-6)
    if name not in LOST_AT_OMP_BARRIERS:
        assert theirs == pytest.approx(waited - r.undistributed, abs=2e-6)
    else:
        assert surplus > 0.005


def test_time_includes_the_idle_threads(case):
    """Time is Scalasca's plus the idle time of the worker threads: on a
    worker, the master's time outside parallel regions at the master's call
    paths, so that every thread's Time is its process's run time; none of
    it is Execution."""
    name, ref, r = case
    time, idle = r.get("time"), r.get("omp_idle_threads")
    np.testing.assert_allclose(r.get("execution"), time - idle - r.get("overhead"), atol=1e-12)
    locations = r.trace.locations
    for loc in locations:
        master = next(m for m in locations if m.rank == loc.rank and m.thread == 0)
        assert time[:, loc.index].sum() == pytest.approx(time[:, master.index].sum(), rel=1e-12)
        if loc.thread:
            assert idle[:, loc.index].sum() > 0
        else:
            assert not idle[:, loc.index].any()


def test_imbalance_is_the_papers_and_scalascas_its_own(case):
    """The imbalance split is the paper's rule (Böhme et al. 2012) in
    waitscope and Scalasca's own rule in its report, on every call path
    and thread (test_scalasca_refs.py: the same on the MPI programs)."""
    name, ref, r = case
    impact, inter = seed_imbalance(r)
    np.testing.assert_allclose(r.get("critical_imbalance_impact"), impact, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r.get("inter_partition_imbalance"), inter, rtol=1e-9, atol=1e-12)
    si, sn = scalasca_imbalance(r)
    n = r.n_locations
    for m, v in (("critical_imbalance_impact", si), ("inter_partition_imbalance", sn)):
        got = {p: v[i] for i, p in enumerate(r.callpath_names) if np.any(v[i] != 0)}
        assert not differences(reference(ref, m, n), got, m, n), m


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
@pytest.mark.parametrize("name", TRACES)
def test_conservation_in_both_models(name, model):
    """Delay costs (MPI and OpenMP, short and long term) plus the
    undistributed waiting equal the handled waiting, which includes the
    OpenMP barrier waiting and the idle time of worker threads outside
    parallel regions; the undistributed part is the workers' idle time
    while their master waits at MPI_Finalize."""
    d = HYBRID / name
    if not d.is_dir():
        pytest.skip(f"{d} is not available")
    r = waitscope.open(str(d)).analyze(delay_model=model)
    waited = r.handled_waiting()
    assert r.total("delay") + r.undistributed == pytest.approx(waited, rel=1e-12)
    locations = r.trace.locations
    fin = r.by_location("mpi_finalize_wait")
    expected = sum(fin[m.index] * sum(1 for w in locations if w.rank == m.rank and w.thread)
                   for m in locations if m.thread == 0)
    assert r.undistributed == pytest.approx(expected, rel=1e-9)
    assert r.total("delay_omp") > 0
    for m in r.metric_ids:
        if m.startswith("delay"):
            assert (r.get(m) >= -1e-12).all(), m


def test_the_critical_path_crosses_threads_and_spans_the_run(case):
    """The path runs from MPI_Init's Enter to the last Enter of MPI_Finalize
    (its length the run's) and, where a worker thread arrives last at an
    implicit barrier, through that thread's parallel work."""
    name, ref, r = case
    cp = r.critical_path
    assert r.total("critical_path") == pytest.approx(cp.end - cp.start, rel=1e-9)
    workers = [loc.index for loc in r.trace.locations if loc.thread]
    on_workers = r.get("critical_path")[:, workers].sum()
    theirs = reference(ref, "critical_path", ref["locations"])
    assert on_workers == pytest.approx(sum(float(v[workers].sum()) for v in theirs.values()), abs=1e-9)
