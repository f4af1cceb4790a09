"""Wait-state profiles: reading profile.json, seed 003's estimates and the
comparison with a trace analysis, on hand-made files whose values are worked
out by hand in the comments."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import TraceError, synth
from waitscope.profile import ESTIMATED_METRICS, ProfileEstimates, open_profile

N = None  # null in JSON

# Two ranks.  Durations in seconds.  The estimates (worked out by hand):
#  Recv, size class 10, rank 1: call paths main/solve/MPI_Recv (4 calls, 10 ms, min 1 ms) and
#    main/other/MPI_Recv (2 calls, 0.6 ms, min 0.2 ms): local minimum 0.2 ms for both
#    -> Late Sender 10 - 4 * 0.2 = 9.2 ms and 0.6 - 2 * 0.2 = 0.2 ms.
#  Recv, size class 3, rank 0 (own category): 3 calls, 3 ms, min 0.5 ms -> 3 - 1.5 = 1.5 ms.
#  Waitall, size class 10: rank 0 5 calls 20 ms min 1 ms -> 15 ms; rank 1 5 calls 5 ms min 0.9 ms
#    -> 0.5 ms.  Unreliable.
#  Allreduce, size class 3: 10 calls per rank, 50 ms and 2 ms, global minimum 0.1 ms
#    -> Wait at N x N 50 - 1 = 49 ms and 2 - 1 = 1 ms (rank 0's local minimum 0.2 ms is not used).
#  Bcast size class 5: root rank 0 (2 calls, 1 ms) has no waiting; non-root rank 1 2 calls 8 ms,
#    global minimum of non-roots 1 ms -> Late Broadcast 8 - 2 = 6 ms.
#  Reduce size class 5: root rank 0 2 calls 10 ms, global minimum of roots 2 ms -> Early Reduce
#    10 - 4 = 6 ms; the non-root rank 1 (2 calls, 0.2 ms) has none.
#  Ssend size class 20: rank 1 3 calls 3.5 ms min 0.5 ms -> Late Receiver 3.5 - 1.5 = 2 ms.
#  Barrier: 1 call per rank, 4 ms and 0.5 ms, global minimum 0.5 ms -> 3.5 ms and 0.
#  Init, Finalize: management, no estimate.
# MPI time: rank 0 = 100 + 3 + 20 + 50 + 1 + 10 + 4 + 5 = 193 ms,
#           rank 1 = 100 + 10 + 0.6 + 5 + 2 + 8 + 0.2 + 3.5 + 0.5 + 5 = 134.8 ms.
# Execution time 1 s per rank: computation 807 ms and 865.2 ms on the root call path main.
PROFILE = {
    "format": "waitscope-profile",
    "version": 1,
    "mpi": "MPICH Version: 4.1",
    "command": "./app -x 4",
    "ranks": 2,
    "callpaths": ["main", "main/MPI_Init", "main/solve/MPI_Recv", "main/other/MPI_Recv", "main/solve/MPI_Waitall",
                  "main/step/MPI_Allreduce", "main/io/MPI_Bcast", "main/io/MPI_Reduce", "main/solve/MPI_Ssend",
                  "main/MPI_Barrier", "main/MPI_Finalize"],
    "execution_time": [1.0, 1.0],
    "mpi_time": [0.193, 0.1348],
    "entries": [
        {"callpath": 1, "function": "MPI_Init", "size_class": -1, "root": False, "collective": False,
         "count": [1, 1], "sum": [0.1, 0.1], "min": [0.1, 0.1], "global_min": N},
        {"callpath": 2, "function": "MPI_Recv", "size_class": 10, "root": False, "collective": False,
         "count": [0, 4], "sum": [0.0, 0.010], "min": [N, 0.001], "global_min": N},
        {"callpath": 3, "function": "MPI_Recv", "size_class": 10, "root": False, "collective": False,
         "count": [0, 2], "sum": [0.0, 0.0006], "min": [N, 0.0002], "global_min": N},
        {"callpath": 2, "function": "MPI_Recv", "size_class": 3, "root": False, "collective": False,
         "count": [3, 0], "sum": [0.003, 0.0], "min": [0.0005, N], "global_min": N},
        {"callpath": 4, "function": "MPI_Waitall", "size_class": 10, "root": False, "collective": False,
         "count": [5, 5], "sum": [0.020, 0.005], "min": [0.001, 0.0009], "global_min": N},
        {"callpath": 5, "function": "MPI_Allreduce", "size_class": 3, "root": False, "collective": True,
         "count": [10, 10], "sum": [0.050, 0.002], "min": [0.0002, 0.0001], "global_min": 0.0001},
        {"callpath": 6, "function": "MPI_Bcast", "size_class": 5, "root": True, "collective": True,
         "count": [2, 0], "sum": [0.001, 0.0], "min": [0.0004, N], "global_min": 0.0004},
        {"callpath": 6, "function": "MPI_Bcast", "size_class": 5, "root": False, "collective": True,
         "count": [0, 2], "sum": [0.0, 0.008], "min": [N, 0.001], "global_min": 0.001},
        {"callpath": 7, "function": "MPI_Reduce", "size_class": 5, "root": True, "collective": True,
         "count": [2, 0], "sum": [0.010, 0.0], "min": [0.002, N], "global_min": 0.002},
        {"callpath": 7, "function": "MPI_Reduce", "size_class": 5, "root": False, "collective": True,
         "count": [0, 2], "sum": [0.0, 0.0002], "min": [N, 0.0001], "global_min": 0.0001},
        {"callpath": 8, "function": "MPI_Ssend", "size_class": 20, "root": False, "collective": False,
         "count": [0, 3], "sum": [0.0, 0.0035], "min": [N, 0.0005], "global_min": N},
        {"callpath": 9, "function": "MPI_Barrier", "size_class": -1, "root": False, "collective": True,
         "count": [1, 1], "sum": [0.004, 0.0005], "min": [0.004, 0.0005], "global_min": 0.0005},
        {"callpath": 10, "function": "MPI_Finalize", "size_class": -1, "root": False, "collective": False,
         "count": [1, 1], "sum": [0.005, 0.005], "min": [0.005, 0.005], "global_min": N},
    ],
}


def write(tmp_path: Path, doc: object, name: str = "profile.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def profile(tmp_path: Path) -> waitscope.Profile:
    write(tmp_path, PROFILE)
    return waitscope.open_profile(tmp_path)


@pytest.fixture
def est(profile) -> ProfileEstimates:
    return profile.estimates()


# ---- reading ---------------------------------------------------------------------


def test_reads_directory_or_file(tmp_path):
    path = write(tmp_path, PROFILE)
    a, b = open_profile(tmp_path), open_profile(path)
    assert a.path == b.path == str(path)
    assert a.ranks == 2 and a.command == "./app -x 4" and a.mpi.startswith("MPICH")
    assert len(a.entries) == len(PROFILE["entries"])
    assert a.n_calls == 2 + 4 + 2 + 3 + 10 + 20 + 2 + 2 + 2 + 2 + 3 + 2 + 2
    assert "2 ranks" in a.summary() or "ranks: 2" in a.summary()


def test_missing_ancestors_are_added_parents_first(profile):
    names = profile.callpath_names
    for added in ("main/solve", "main/other", "main/step", "main/io"):
        assert added in names
    for i, n in enumerate(names):
        if "/" in n:
            assert names.index(n.rsplit("/", 1)[0]) < i
    # entries point at the right names after the insertion
    recv = [e for e in profile.entries if e.function == "MPI_Recv"]
    assert {names[e.callpath] for e in recv} == {"main/solve/MPI_Recv", "main/other/MPI_Recv"}


# ---- the estimates (values worked out in the comment above PROFILE) ---------------


def test_late_sender_uses_the_rank_local_minimum_per_size_class(est):
    assert est.get("mpi_latesender", "main/solve/MPI_Recv", 1) == pytest.approx(0.0092)
    assert est.get("mpi_latesender", "main/other/MPI_Recv", 1) == pytest.approx(0.0002)
    assert est.get("mpi_latesender", "main/solve/MPI_Recv", 0) == pytest.approx(0.0015)
    assert est.get("mpi_latesender", "main/solve/MPI_Waitall", 0) == pytest.approx(0.015)
    assert est.get("mpi_latesender", "main/solve/MPI_Waitall", 1) == pytest.approx(0.0005)
    assert est.total("mpi_latesender") == pytest.approx(0.0092 + 0.0002 + 0.0015 + 0.015 + 0.0005)


def test_waitall_is_flagged_unreliable(est):
    assert est.unreliable == frozenset({"main/solve/MPI_Waitall"})
    assert "MPI_Waitall" in est.summary()


# ---- the calibrated estimates --------------------------------------------------------
# PROFILE with the no-wait durations measured at MPI_Finalize: rank 1's MPI_Recv of
# size class 10 (16 samples, median 20 us, from 10 to 50 us) and its MPI_Ssend of size
# class 20 (8 samples, median 0.2 ms, from 0.1 to 0.4 ms).  By hand, method "calibrated":
#  Recv size class 10, rank 1: main/solve 10 ms - 4 x 20 us = 9.92 ms (seed 9.2 ms),
#    main/other 0.6 ms - 2 x 20 us = 0.56 ms (seed 0.2 ms);
#  Recv size class 3, rank 0 (not calibrated): the fastest call, 1.5 ms as with seed;
#  Waitall (not calibrated): 15 ms and 0.5 ms as with seed;
#  Ssend, rank 1: 3.5 ms - 3 x 0.2 ms = 2.9 ms (seed 2 ms); the collectives as with seed.
CALIBRATION = [
    {"function": "MPI_Recv", "size_class": 10, "samples": [0, 16], "min": [N, 1e-5], "median": [N, 2e-5],
     "max": [N, 5e-5]},
    {"function": "MPI_Ssend", "size_class": 20, "samples": [0, 8], "min": [N, 1e-4], "median": [N, 2e-4],
     "max": [N, 4e-4]},
]


@pytest.fixture
def calibrated(tmp_path: Path) -> waitscope.Profile:
    write(tmp_path, dict(PROFILE, calibration=CALIBRATION))
    return waitscope.open_profile(tmp_path)


def test_calibrated_estimates_use_the_measured_no_wait_durations(calibrated):
    seed, cal = calibrated.estimates("seed"), calibrated.estimates(method="calibrated")
    assert cal.method == "calibrated" and seed.method == "seed"
    assert cal.get("mpi_latesender", "main/solve/MPI_Recv", 1) == pytest.approx(0.00992)
    assert cal.get("mpi_latesender", "main/other/MPI_Recv", 1) == pytest.approx(0.00056)
    assert cal.get("mpi_latesender", "main/solve/MPI_Recv", 0) == pytest.approx(0.0015)
    assert cal.get("mpi_latesender", "main/solve/MPI_Waitall", 0) == pytest.approx(0.015)
    assert cal.get("mpi_latereceiver", "main/solve/MPI_Ssend", 1) == pytest.approx(0.0029)
    assert seed.get("mpi_latereceiver", "main/solve/MPI_Ssend", 1) == pytest.approx(0.002)
    for metric in ("mpi_wait_nxn", "mpi_barrier_wait", "mpi_latebroadcast", "mpi_earlyreduce", "mpi", "comp"):
        assert np.array_equal(cal.get(metric), seed.get(metric)), metric
    # the seed estimates are the same with or without a calibration in the file
    assert seed.total("mpi_latesender") == pytest.approx(0.0092 + 0.0002 + 0.0015 + 0.015 + 0.0005)


def test_reliability_says_what_each_estimate_rests_on(calibrated):
    rows = {(r["metric"], r["callpath"]): r for r in calibrated.estimates("calibrated").reliability}
    solve = rows[("mpi_latesender", "main/solve/MPI_Recv")]
    # 4 calls of rank 1 against the calibration, 3 of rank 0 against its fastest call
    assert solve["source"] == "mixed" and solve["calls"] == 7 and solve["samples"] == 16
    assert solve["baseline"] == pytest.approx((4 * 2e-5 + 3 * 0.0005) / 7)
    assert solve["spread"] == pytest.approx(4e-5) and solve["bound"] == pytest.approx(4 * 4e-5)
    other = rows[("mpi_latesender", "main/other/MPI_Recv")]
    assert other["source"] == "calibration" and other["calls"] == 2 and other["baseline"] == pytest.approx(2e-5)
    assert other["estimate"] == pytest.approx(0.00056) and other["bound"] == pytest.approx(8e-5)
    ssend = rows[("mpi_latereceiver", "main/solve/MPI_Ssend")]
    assert ssend["samples"] == 8 and ssend["bound"] == pytest.approx(3 * 3e-4)
    seed_rows = {(r["metric"], r["callpath"]): r for r in calibrated.estimates().reliability}
    s = seed_rows[("mpi_latesender", "main/solve/MPI_Recv")]
    # the fastest of rank 1's 6 calls of size class 10 and of rank 0's 3 of size class 3
    assert s["source"] == "calls" and s["samples"] == 9 and math.isnan(s["bound"])
    assert s["measured_baseline"] == pytest.approx(2e-5)
    nxn = seed_rows[("mpi_wait_nxn", "main/step/MPI_Allreduce")]
    assert nxn["source"] == "calls" and nxn["calls"] == 20 and nxn["samples"] == 20
    text = calibrated.estimates("calibrated").summary()
    assert "how reliable the estimates are (method 'calibrated'" in text
    assert "the median of 16 no-wait samples measured at MPI_Finalize" in text
    seed_text = calibrated.estimates().summary()
    assert "right only if one of them did not wait" in seed_text and "method='calibrated' estimates" in seed_text


def test_estimated_waiting_names_a_calibrated_difference(tmp_path):
    # rank 1 waits 15 ms in each of its 6 receives of size class 10 (a static imbalance):
    # the fastest takes 15 ms, the no-wait one 20 us.  Late Sender, seed: rank 0's 1.5 ms
    # and the Waitall's 15.5 ms, 0.85 % of the 2 s; calibrated: 60 ms - 4 x 20 us and
    # 30 ms - 2 x 20 us more, 5.3 %
    doc = dict(PROFILE, calibration=CALIBRATION)
    doc["entries"] = [dict(e) for e in PROFILE["entries"]]
    doc["entries"][1].update(sum=[0.0, 0.060], min=[N, 0.015])
    doc["entries"][2].update(sum=[0.0, 0.030], min=[N, 0.015])
    doc["mpi_time"] = [0.193, 0.1348 + 0.050 + 0.0294]
    profile = waitscope.open_profile(write(tmp_path, doc))
    assert profile.estimates().get("mpi_latesender", "main/solve/MPI_Recv", 1) == pytest.approx(0.0)
    assert profile.estimates("calibrated").get("mpi_latesender", "main/solve/MPI_Recv", 1) == \
        pytest.approx(0.060 - 4 * 2e-5)
    assert "Late Sender 0.9 % (calibrated 5.3 %)" in profile.estimated_waiting()


def test_calibrated_late_receiver_of_standard_sends(tmp_path):
    """MPI_Send: Late Receiver only against a measured no-wait duration.  Rank 0's
    3 sends take 3 ms, the no-wait one 0.1 ms: 2.7 ms; rank 1 measured none: no estimate."""
    doc = dict(PROFILE, calibration=[{"function": "MPI_Send", "size_class": 12, "samples": [8, 0],
                                      "min": [5e-5, N], "median": [1e-4, N], "max": [2e-4, N]}])
    doc["callpaths"] = PROFILE["callpaths"] + ["main/solve/MPI_Send"]
    doc["entries"] = PROFILE["entries"] + [
        {"callpath": len(PROFILE["callpaths"]), "function": "MPI_Send", "size_class": 12, "root": False,
         "collective": False, "count": [3, 2], "sum": [0.003, 0.0001], "min": [0.0005, 5e-5], "global_min": N}]
    doc["mpi_time"] = [0.196, 0.1349]
    profile = open_profile(write(tmp_path, doc))
    assert profile.estimates("calibrated").get("mpi_latereceiver", "main/solve/MPI_Send").tolist() == \
        pytest.approx([0.0027, 0.0])
    assert profile.estimates().get("mpi_latereceiver", "main/solve/MPI_Send").tolist() == [0.0, 0.0]
    row = next(r for r in profile.estimates("calibrated").reliability if r["callpath"] == "main/solve/MPI_Send")
    assert row["calls"] == 3 and row["source"] == "calibration" and row["baseline"] == pytest.approx(1e-4)


def test_method_errors_name_the_argument(profile, calibrated):
    with pytest.raises(ValueError, match=r"method: 'best' is not one of 'seed', 'calibrated'"):
        calibrated.estimates("best")
    with pytest.raises(ValueError, match=r"method='calibrated'.*has no calibration"):
        profile.estimates("calibrated")
    assert profile.analyze(method="seed").total("mpi_latesender") > 0


@pytest.mark.parametrize("change, message", [
    (lambda c: c[0].update(median=[N, None]), r"calibration\[0\]\.median\[1\] must be null exactly where samples is 0"),
    (lambda c: c[0].update(min=[N, 3e-5]), r"calibration\[0\] rank 1: min <= median <= max"),
    (lambda c: c[1].update(samples=[0]), r"calibration\[1\]\.samples has 1 values for 2 ranks"),
    (lambda c: c.append(dict(c[0])), r"calibration\[2\] repeats MPI_Recv, size class 10"),
])
def test_a_bad_calibration_names_the_field(tmp_path, change, message):
    cal = [dict(c) for c in CALIBRATION]
    change(cal)
    with pytest.raises(TraceError, match=message):
        open_profile(write(tmp_path, dict(PROFILE, calibration=cal)))


def test_collectives_use_the_global_minimum(est):
    assert list(est.get("mpi_wait_nxn", "main/step/MPI_Allreduce")) == pytest.approx([0.049, 0.001])
    assert list(est.get("mpi_barrier_wait", "main/MPI_Barrier")) == pytest.approx([0.0035, 0.0])
    assert list(est.get("mpi_latebroadcast", "main/io/MPI_Bcast")) == pytest.approx([0.0, 0.006])
    assert list(est.get("mpi_earlyreduce", "main/io/MPI_Reduce")) == pytest.approx([0.006, 0.0])
    assert list(est.get("mpi_latereceiver", "main/solve/MPI_Ssend")) == pytest.approx([0.0, 0.002])


def test_no_estimate_elsewhere(est):
    for metric in ESTIMATED_METRICS:
        values = est.by_callpath(metric)
        for name in ("main", "main/MPI_Init", "main/MPI_Finalize", "main/solve"):
            assert values[est.callpath_index(name)] == 0.0, (metric, name)


def test_time_metrics_add_up(est):
    assert est.total("time") == pytest.approx(2.0)
    assert list(est.by_location("mpi")) == pytest.approx([0.193, 0.1348])
    assert list(est.get("comp", "main")) == pytest.approx([0.807, 0.8652])
    assert est.get("time", "main/io/MPI_Reduce", 0) == pytest.approx(0.010)
    assert est.total("mpi_point2point") == pytest.approx(0.003 + 0.0106 + 0.025 + 0.0035)
    assert est.total("mpi_collective") == pytest.approx(0.052 + 0.009 + 0.0102)
    assert est.total("mpi_sync_collective") == pytest.approx(0.0045)
    assert est.total("mpi_management") == pytest.approx(0.21)
    assert est.get("visits", "main/step/MPI_Allreduce", 1) == 10
    # a metric includes its sub-metrics, as in the trace analysis
    for metric in ESTIMATED_METRICS:
        parent = est.metric(metric).parent
        assert np.all(est.get(metric) <= est.get(parent) + 1e-15), metric
    assert est.fraction("mpi_wait_nxn") == pytest.approx(0.050 / 2.0)


def test_layout_is_that_of_an_analysis_result(est, tmp_path):
    assert isinstance(est, waitscope.AnalysisResult)
    assert est.cube.shape == (len(est.metric_ids), len(est.callpath_names), 2)
    assert list(est.location_ranks) == [0, 1]
    inclusive = est.inclusive("mpi_latesender")
    assert inclusive[est.callpath_index("main/solve"), 1] == pytest.approx(0.0092 + 0.0005)
    assert inclusive[est.callpath_index("main"), 1] == pytest.approx(0.0092 + 0.0002 + 0.0005)
    pd = pytest.importorskip("pandas")
    table = est.to_pandas(["mpi_latesender"])
    assert isinstance(table, pd.DataFrame)
    assert table["value"].sum() == pytest.approx(est.total("mpi_latesender"))
    assert set(table["callpath"]) == {"main/solve/MPI_Recv", "main/other/MPI_Recv", "main/solve/MPI_Waitall"}


def test_cube_report_round_trip(est, tmp_path):
    pycubexr = pytest.importorskip("pycubexr")
    path = est.to_cube(tmp_path / "estimates")
    assert path.endswith(".cubex")
    with pycubexr.CubexParser(path) as cube:
        metrics = {m.name: m for m in cube.all_metrics()}
        assert set(metrics) == set(est.metric_ids)
        values = cube.get_metric_values(metrics["mpi_latesender"])
        total = sum(float(np.sum(values.cnode_values(cnode))) for cnode in cube.all_cnodes())
        assert total == pytest.approx(est.total("mpi_latesender"))
        assert len(cube.all_cnodes()) == len(est.callpath_names)


def test_sendrecv_counts_as_late_sender(tmp_path):
    # 3 calls, 6 ms, min 1 ms on rank 0 -> 3 ms; rank 1 (1 call) is its own minimum -> 0
    doc = copy.deepcopy(PROFILE)
    doc["callpaths"].append("main/shift/MPI_Sendrecv")
    doc["entries"] = [{"callpath": len(doc["callpaths"]) - 1, "function": "MPI_Sendrecv", "size_class": 4,
                       "root": False, "collective": False, "count": [3, 1], "sum": [0.006, 0.002],
                       "min": [0.001, 0.002], "global_min": None}]
    est = open_profile(write(tmp_path, doc)).estimates()
    assert list(est.get("mpi_latesender", "main/shift/MPI_Sendrecv")) == pytest.approx([0.003, 0.0])
    assert not est.unreliable


def test_a_rank_without_calls_gets_nothing(tmp_path):
    doc = copy.deepcopy(PROFILE)
    doc["entries"] = [e for e in doc["entries"] if e["function"] == "MPI_Recv" and e["size_class"] == 10]
    est = open_profile(write(tmp_path, doc)).estimates()
    assert list(est.by_location("mpi_latesender")) == pytest.approx([0.0, 0.0094])


# ---- bad files ---------------------------------------------------------------------


def _error(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "profile.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(TraceError) as info:
        open_profile(tmp_path)
    message = str(info.value)
    assert str(path) in message
    return message


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        open_profile(tmp_path)
    (tmp_path / "traces.otf2").write_text("")
    with pytest.raises(TraceError, match="--profile"):
        open_profile(tmp_path)


def test_empty_truncated_and_binary_files(tmp_path):
    assert "empty" in _error(tmp_path, "")
    text = json.dumps(PROFILE)
    assert "truncated" in _error(tmp_path, text[: len(text) // 2])
    assert "not valid JSON" in _error(tmp_path, "{]" + text)
    assert "not UTF-8" in _error(tmp_path, b"\xff\xfe\x00garbage")


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.update(format="otf2"), "not a waitscope profile"),
    (lambda d: d.update(version=2), "unsupported profile version 2"),
    (lambda d: d.pop("ranks"), "missing field 'ranks'"),
    (lambda d: d.update(ranks=0), "ranks must be at least 1"),
    (lambda d: d.update(execution_time=[1.0]), "execution_time has 1 values for 2 ranks"),
    (lambda d: d.update(mpi_time=[1.0, "x"]), r"mpi_time\[1\] must be a non-negative number"),
    (lambda d: d.update(callpaths=["main", "main//MPI_Recv"]), "is not a call path"),
    (lambda d: d.update(callpaths=d["callpaths"] + ["main"]), "listed twice"),
    (lambda d: d["entries"][1].update(callpath=99), r"entries\[1\].callpath 99 is out of range"),
    (lambda d: d["entries"][1].update(min=[0.001, 0.001]), r"entries\[1\].min\[0\] must be null exactly where"),
    (lambda d: d["entries"][1].update(count=[0, -1]), r"entries\[1\].count\[1\] must be at least 0"),
    (lambda d: d["entries"][1].update(sum=[0.0, 0.001]), "count x min exceeds sum"),
    (lambda d: d["entries"][1].pop("function"), r"entries\[1\]: missing field 'function'"),
    (lambda d: d["entries"].append(copy.deepcopy(d["entries"][1])), "repeats the key"),
    (lambda d: d.update(entries={}), "entries must be a list"),
    (lambda d: d["entries"][5].update(global_min=-1), r"global_min must be a non-negative number"),
])
def test_invalid_content_names_file_and_field(tmp_path, change, expected):
    doc = copy.deepcopy(PROFILE)
    change(doc)
    import re

    assert re.search(expected, _error(tmp_path, json.dumps(doc)))


def test_top_level_must_be_an_object(tmp_path):
    assert "not a waitscope profile" in _error(tmp_path, "[1, 2]")


# ---- the comparison with the trace analysis ----------------------------------------

# A synthetic run (exact timing, no latency), worked out by hand:
#   rank 0: solve: work 0..3, send (t=3); work 3..4, send (t=4); MPI_Allreduce enters at 4.
#   rank 1: solve: MPI_Recv 0..3 (Late Sender 3), work 3..5, MPI_Recv at 5 (message sent at 4,
#           no waiting); tail 5..7; MPI_Allreduce enters at 7 -> rank 0 waits 3 (Wait at N x N).
#   total time 7 + 7 = 14 s.
# The hand-made profile of "the same run" says:
#   MPI_Recv rank 1: 2 calls, 3.5 s, min 0.2 s -> Late Sender 3.1 s: 22.142857 % vs 21.428571 %
#   MPI_Allreduce: 3.0 s and 1 ms, global min 1 ms -> 2.999 s on rank 0: 21.421429 % vs 21.428571 %


def _synthetic_run():
    prog = synth.Program(nranks=2)
    r0, r1 = prog.rank(0), prog.rank(1)
    with r0.region("solve"):
        r0.compute("work", 3.0).send(1, tag=0, size=8)
        r0.compute("work", 1.0).send(1, tag=0, size=8)
    with r1.region("solve"):
        r1.recv(0, tag=0)
        r1.compute("work", 2.0)
        r1.recv(0, tag=0)
    r1.compute("tail", 2.0)
    r0.allreduce(size=8)
    r1.allreduce(size=8)
    return prog.run()


COMPARE_PROFILE = {
    "format": "waitscope-profile", "version": 1, "mpi": "synthetic", "command": "synth", "ranks": 2,
    "callpaths": ["main", "main/solve/MPI_Send", "main/solve/MPI_Recv", "main/MPI_Allreduce"],
    "execution_time": [7.0, 7.0], "mpi_time": [3.0002, 3.501],
    "entries": [
        {"callpath": 1, "function": "MPI_Send", "size_class": 3, "root": False, "collective": False,
         "count": [2, 0], "sum": [0.0002, 0.0], "min": [0.0001, N], "global_min": N},
        {"callpath": 2, "function": "MPI_Recv", "size_class": 3, "root": False, "collective": False,
         "count": [0, 2], "sum": [0.0, 3.5], "min": [N, 0.2], "global_min": N},
        {"callpath": 3, "function": "MPI_Allreduce", "size_class": 3, "root": False, "collective": True,
         "count": [1, 1], "sum": [3.0, 0.001], "min": [3.0, 0.001], "global_min": 0.001},
    ],
}


def _rows(table):
    return table.to_dict("records") if hasattr(table, "to_dict") else table


def test_compare_with_the_trace_of_the_same_run(tmp_path):
    profile = open_profile(write(tmp_path, COMPARE_PROFILE))
    trace = _synthetic_run()
    rows = {(r["metric"], r["callpath"]): r for r in _rows(profile.compare(trace.analyze()))}
    assert set(rows) == {("mpi_latesender", "main/solve/MPI_Recv"), ("mpi_wait_nxn", "main/MPI_Allreduce")}
    ls = rows[("mpi_latesender", "main/solve/MPI_Recv")]
    assert ls["function"] == "MPI_Recv" and not ls["unreliable"]
    assert ls["profile_wait"] == pytest.approx(3.1) and ls["trace_wait"] == pytest.approx(3.0)
    assert ls["profile_ratio"] == pytest.approx(100 * 3.1 / 14)
    assert ls["trace_ratio"] == pytest.approx(100 * 3.0 / 14)
    assert ls["difference"] == pytest.approx(100 * 0.1 / 14)
    nxn = rows[("mpi_wait_nxn", "main/MPI_Allreduce")]
    assert nxn["profile_wait"] == pytest.approx(2.999) and nxn["trace_wait"] == pytest.approx(3.0)
    assert nxn["difference"] == pytest.approx(-100 * 0.001 / 14)


def test_compare_threshold_and_plain_output(tmp_path):
    profile = open_profile(write(tmp_path, COMPARE_PROFILE))
    result = _synthetic_run().analyze()
    plain = profile.compare(result, as_pandas=False)
    assert isinstance(plain, list) and len(plain) == 2
    assert [r["metric"] for r in plain] == ["mpi_latesender", "mpi_wait_nxn"]
    assert profile.compare(result, threshold=0.22, as_pandas=False) == [plain[0]]  # 22.14 % stays
    assert profile.compare(result, threshold=0.25, as_pandas=False) == []


def test_compare_accepts_a_trace_and_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    profile = open_profile(write(tmp_path, COMPARE_PROFILE))
    table = profile.compare(_synthetic_run())
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["metric", "callpath", "function", "profile_wait", "trace_wait",
                                   "profile_ratio", "trace_ratio", "difference", "calibrated_wait",
                                   "calibrated_ratio", "calibrated_difference", "unreliable"]
    assert len(table) == 2
    assert table["calibrated_wait"].isna().all()  # the file has no calibration


def test_compare_refuses_another_run(tmp_path):
    result = _synthetic_run().analyze()
    doc = copy.deepcopy(COMPARE_PROFILE)
    doc["callpaths"] = ["main", "main/a/MPI_Send", "main/b/MPI_Recv", "main/c/MPI_Allreduce"]
    with pytest.raises(ValueError, match="is in the trace"):
        open_profile(write(tmp_path, doc, "renamed.json")).compare(result)
    doc = copy.deepcopy(COMPARE_PROFILE)
    doc.update(ranks=3, execution_time=[7.0] * 3, mpi_time=[1.0] * 3)
    for e in doc["entries"]:
        for key in ("count", "sum", "min"):
            e[key] = e[key] + [e[key][0]]
    other = open_profile(write(tmp_path, doc, "three.json"))
    with pytest.raises(ValueError, match="3 ranks, the trace 2"):
        other.compare(result)
    with pytest.raises(TypeError):
        other.compare("not a result")  # type: ignore[arg-type]


def test_missing_call_path_in_trace_is_nan(tmp_path):
    doc = copy.deepcopy(COMPARE_PROFILE)
    doc["callpaths"][3] = "main/elsewhere/MPI_Allreduce"
    rows = _rows(open_profile(write(tmp_path, doc)).compare(_synthetic_run().analyze(), as_pandas=False))
    nxn = [r for r in rows if r["metric"] == "mpi_wait_nxn"]
    assert len(nxn) == 1 and math.isnan(nxn[0]["trace_wait"]) and math.isnan(nxn[0]["difference"])


# ---- profiles open wherever traces do --------------------------------------------------------------

# Late Sender of PROFILE (worked out above): 9.2 + 1.5 ms (solve), 0.2 ms (other), 15 + 0.5 ms (Waitall)
LATE_SENDER = 0.0264


def test_open_gives_the_profile_and_its_estimates(tmp_path):
    path = write(tmp_path, PROFILE)
    for name in (path, path.parent):
        opened = waitscope.open(name)
        assert isinstance(opened, waitscope.Profile) and opened.path == str(path)
        est = opened.analyze()
        assert est.total("mpi_latesender") == pytest.approx(LATE_SENDER)
        assert est.total("Wait at N x N") == pytest.approx(0.049 + 0.001)
    assert opened.run_length == 1.0
    with pytest.raises(ValueError, match="delay_model: .*profile.json is a wait-state profile, which has no events"):
        opened.analyze(delay_model="proportional")
    with pytest.raises(ValueError, match="locations: .*is a wait-state profile"):
        waitscope.open(path, locations=[0])
    # a directory of waitscope trace --profile holds both: it opens as the trace
    from waitscope.examples import HALO2D

    assert isinstance(waitscope.open(HALO2D), waitscope.Trace)
    assert isinstance(waitscope.open(Path(HALO2D) / "profile.json"), waitscope.Profile)


def test_command_line_reports_a_profile(tmp_path, capsys):
    from waitscope import cli

    path = write(tmp_path, PROFILE)
    assert cli.main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    # shares of the execution time (2 s over both ranks): Late Sender 26.4 ms 1.3 %, Wait at N x N 50 ms,
    # Wait at Barrier 3.5 ms, Late Broadcast 6 ms, Early Reduce 6 ms, Late Receiver 2 ms
    assert ("estimated waiting (share of the execution time): Late Sender 1.3 %, Wait at N x N 2.5 %, "
            "Wait at Barrier 0.2 %, Late Broadcast 0.3 %, Early Reduce 0.3 %, Late Receiver 0.1 %") in out
    assert f"waitscope analyze {path}" in out and "OTF2" not in out
    assert cli.main(["analyze", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # 11 call paths listed and 4 ancestors added (main/solve, main/other, main/step, main/io)
    assert out.splitlines()[1] == ("wait-state profile of ./app -x 4: 2 ranks, 15 call paths, "
                                   f"{open_profile(path).n_calls:,} MPI calls (MPICH Version: 4.1)")
    assert f"  mpi_latesender (Late Sender): {LATE_SENDER:.6f} s" in out
    # POP from the profile: useful 807 and 865.2 ms, run length 1 s
    assert "load balance                96.64 %" in out and "communication efficiency    86.52 %" in out
    assert cli.main(["analyze", str(path), "--metric", "late_sender", "--top", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3].startswith("mpi_latesender (Late Sender): 0.026400 s") and len(out) == 6
    assert out[5].split()[0] == "0.015500" and out[5].endswith("main/solve/MPI_Waitall")
    assert cli.main(["analyze", str(path), "--critical-path", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("waitscope: error: --critical-path, --json: ") and "needs a trace (waitscope trace" in err
    from waitscope.examples import HALO2D

    assert cli.main(["analyze", HALO2D]) == 0  # the trace, and a pointer to the profile beside it
    out = capsys.readouterr().out
    assert f"the wait-state profile of the same run is beside it: waitscope analyze {HALO2D}/profile.json" in out
    assert cli.main(["info", "--json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranks"] == 2 and doc["estimates"]["mpi_latesender"] == pytest.approx(LATE_SENDER)


def test_command_line_writes_the_estimates_as_a_cube_report(tmp_path, capsys):
    from waitscope import cli

    path = write(tmp_path, PROFILE)
    target = tmp_path / "estimates.cubex"
    assert cli.main(["analyze", str(path), "-o", str(target)]) == 0
    assert f"Cube report written to {target}" in capsys.readouterr().out
    pycubexr = pytest.importorskip("pycubexr")
    with pycubexr.CubexParser(str(target)) as cube:
        values = cube.get_metric_values(cube.get_metric_by_name("mpi_latesender"))
        total = sum(sum(values.cnode_values(c)) for c in cube.all_cnodes())
    assert total == pytest.approx(LATE_SENDER)


def test_command_line_method(tmp_path, capsys):
    from waitscope import cli
    from waitscope.examples import HALO2D

    plain = write(tmp_path, PROFILE, "plain.json")
    path = write(tmp_path, dict(PROFILE, calibration=CALIBRATION))
    assert cli.main(["analyze", str(path), "--method", "calibrated"]) == 0
    out = capsys.readouterr().out
    assert "how reliable the estimates are (method 'calibrated'" in out
    # the calibrated Late Sender of main/solve/MPI_Recv: 9.92 ms on rank 1 and 1.5 ms on rank 0
    assert "0.011420 s over 7 calls" in out
    assert cli.main(["analyze", str(plain), "--method", "calibrated"]) == 2
    assert "waitscope: error: --method: method='calibrated': the profile" in capsys.readouterr().err
    assert cli.main(["analyze", HALO2D, "--method", "seed"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"waitscope: error: --method: {HALO2D} is a trace"), err
