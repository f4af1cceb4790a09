"""Everything that shows a result accepts hybrid MPI+OpenMP traces.

The six Score-P 7.1 traces of ../shared/data/hybrid/ (2 ranks x 2 OpenMP
threads, with the report of the real Scalasca 2.6 ``scout.hyb`` as
``scalasca.json``) through the text report, the JSON document, Cube
reports, Perfetto, the plots, compare/diff, the POP efficiencies and the
Hatchet export.  Expected values come from elsewhere than the code under
test: Scalasca's report (per metric, call path and location, for the
metrics where tests/test_scalasca_hybrid.py shows waitscope equal to it),
Scalasca's own Cube file (its system tree), the trace's events, or the
result's cube by another route than the code under test takes.

Location order (cube and JSON alike): rank 0 master, rank 0 OMP thread 1,
rank 1 master, rank 1 OMP thread 1.
"""
from __future__ import annotations

import functools
import json
import re
import tarfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import _core, cli, export, report

from conftest import SHARED_DATA

HYBRID = SHARED_DATA / "hybrid"
LABELS = ["0.0", "0.1", "1.0", "1.1"]  # rank.thread of the four locations
# waitscope equals Scalasca 2.6 on these (test_scalasca_hybrid.py); seconds
ATOL = 2e-6


def _dir(name: str) -> Path:
    d = HYBRID / name
    if not (d / "traces.otf2").exists():
        pytest.skip(f"{d} is not available")
    return d


@functools.lru_cache(maxsize=None)
def reference(name: str) -> dict:
    """Scalasca 2.6's report: metric -> call path -> [4 values] (seconds)."""
    ref = json.loads((_dir(name) / "scalasca.json").read_text())
    return {m: {p: np.asarray(v, dtype=np.float64) for p, v in e["paths"].items()} for m, e in ref["metrics"].items()}


def ref_by_location(name: str, metric: str) -> np.ndarray:
    return sum(reference(name).get(metric, {}).values(), np.zeros(4))


@functools.lru_cache(maxsize=None)
def analysed(name: str, model: str = "proportional") -> waitscope.AnalysisResult:
    trace = waitscope.open(str(_dir(name)))
    return trace.analyze(delay_model=model, critical_path=True, wait_records=True, delay_records=True)


# ---- the text report --------------------------------------------------------------------------


def _table_rows(text: str, title: str) -> dict[str, list[str]]:
    """The rows of the call-path table under the pattern line starting with `title`: call path -> columns."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(title))
    rows = {}
    for line in lines[start + 1:]:
        if not re.match(r"^ {8}\d", line):
            break
        cols = line.split()
        # value s % time % min mean max location callpath (the call path may hold spaces)
        rows[" ".join(cols[8:])] = cols[:8]
    return rows


@pytest.mark.parametrize("name, metric", [("omp_imbalance", "omp_ibarrier_wait"),
                                          ("omp_imbalance", "mpi_latesender"),
                                          ("omp_locks", "omp_lock_contention_api"),
                                          ("omp_critical", "omp_lock_contention_critical"),
                                          ("omp_explicit_barrier", "omp_ebarrier_wait")])
def test_wait_state_tables_are_per_thread(name, metric):
    """The report lists the OpenMP wait states too, and spreads each call path over the four
    locations: min / mean / max over them and the location of the max as rank.thread, the
    values of Scalasca's report."""
    r = analysed(name)
    text = r.summary(top=20)
    assert "4 locations (2 ranks x 2 threads)" in text.splitlines()[0]
    assert "location (rank.thread) of the max" in text
    rows = _table_rows(text, f"{metric} (")
    ref = reference(name)[metric]
    assert set(rows) == {p for p, v in ref.items() if v.sum() > 5e-7}
    for path, values in ref.items():
        if values.sum() <= 5e-7:
            continue
        cols = rows[path]
        assert float(cols[0]) == pytest.approx(values.sum(), abs=ATOL)
        assert [float(c) for c in cols[4:7]] == pytest.approx([values.min(), values.mean(), values.max()], abs=ATOL)
        assert cols[7] == LABELS[int(np.argmax(values))]


def test_tables_of_a_trace_without_threads_stay_per_rank(pingpong_dir):
    r = waitscope.open(pingpong_dir).analyze()
    text = r.summary()
    assert "min / mean / max over ranks, rank of the max" in text and "location (rank.thread)" not in text
    assert report.TABLE_HEADER in text and report.table_header(r) == report.TABLE_HEADER
    assert "(2 ranks);" in text.splitlines()[0] and "OpenMP" not in text


def test_metric_tree_has_the_openmp_part():
    """Under Execution the OpenMP runtime with Scalasca's names; Idle threads beside Execution;
    the OpenMP wait states of Scalasca's report."""
    r = analysed("omp_critical")
    rows = {row.id: row for row in report.metric_rows(r, "time")}
    expected = {"omp_time": ("OpenMP", "execution"), "omp_management": ("Management", "omp_time"),
                "omp_fork": ("Fork", "omp_management"), "omp_synchronization": ("Synchronization", "omp_time"),
                "omp_barrier": ("Barrier", "omp_synchronization"), "omp_ibarrier": ("Implicit", "omp_barrier"),
                "omp_ibarrier_wait": ("Wait at Barrier", "omp_ibarrier"),
                "omp_critical": ("Critical", "omp_synchronization"),
                "omp_lock_contention_critical": ("Lock Contention", "omp_critical"),
                "omp_idle_threads": ("Idle threads", "time")}
    for mid, (name, parent) in expected.items():
        assert (rows[mid].name, rows[mid].parent) == (name, parent), mid
    for mid in ("omp_ibarrier_wait", "omp_lock_contention_critical", "omp_fork"):
        assert rows[mid].value == pytest.approx(ref_by_location("omp_critical", mid).sum(), abs=ATOL), mid
    # the levels add up: Execution = Computation + MPI + OpenMP, Time = Execution + Idle threads (+ overhead)
    total = r.total
    assert total("execution") == pytest.approx(total("comp") + total("mpi") + total("omp_time"), rel=1e-12)
    text = r.summary()
    assert re.search(r"^    omp_idle_threads +Idle threads ", text, re.M)  # beside execution
    assert "OpenMP time by call path (metric omp_time;" in text


def test_culprit_is_a_thread():
    """The call path whose delays caused the most waiting and the thread where it caused most,
    worked out from Scalasca's delay costs (which waitscope equals on this program)."""
    ref = reference("omp_imbalance")
    per_path: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(4))
    for metric, paths in ref.items():
        if metric.startswith("delay_"):  # Scalasca's leaves: short- and long-term costs of each class
            for path, values in paths.items():
                per_path[path] += values
    path = max(per_path, key=lambda p: per_path[p].sum())
    loc = int(np.argmax(per_path[path]))
    r = analysed("omp_imbalance")
    found = report.culprit(r)
    assert r.callpath_names[found.callpath] == path
    assert (found.location, found.rank, found.thread) == (loc, loc // 2, loc % 2)
    assert found.cost == pytest.approx(per_path[path][loc], abs=ATOL)
    share = per_path[path][loc] / per_path[path].sum()
    assert f"most on thread {loc % 2} of rank {loc // 2} ({100 * share:.0f} % of it)" in report.culprit_line(r)


def test_metric_table_names_locations(capsys):
    d = _dir("omp_locks")
    assert cli.main(["analyze", str(d), "--metric", "omp_lock_contention_api", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "location (rank.thread) of the max" in out and re.search(r"\blocation  call path$", out, re.M)
    values = next(iter(reference("omp_locks")["omp_lock_contention_api"].values()))
    line = next(line for line in out.splitlines() if "omp_set_lock" in line)
    assert line.split()[7] == LABELS[int(np.argmax(values))]


# ---- JSON ---------------------------------------------------------------------------------


def test_json_locations_and_pop(capsys):
    from test_json import SCHEMA, _conforms, _validate

    d = _dir("omp_idle")
    assert cli.main(["analyze", str(d), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    _validate(doc, analysis=True)
    # every location with its process rank, thread and own MPI rank (Score-P: workers have none)
    assert [(loc["rank"], loc["thread"], loc["mpi_rank"], loc["name"]) for loc in doc["locations"]] == [
        (0, 0, 0, "Master thread"), (0, 1, -1, "OMP thread 1"), (1, 0, 1, "Master thread"), (1, 1, -1, "OMP thread 1")]
    assert [t["name"] for t in doc["topologies"]] == ["Process x Thread"]
    # metrics as without threads: per location, Scalasca's values
    assert doc["metrics"]["omp_ibarrier_wait"]["by_location"] == pytest.approx(
        list(ref_by_location("omp_idle", "omp_ibarrier_wait")), abs=ATOL)
    hybrid = doc["pop"]["hybrid"]
    _conforms(hybrid, "pop hybrid", "pop.hybrid")
    assert set(SCHEMA["pop hybrid"]) == set(hybrid)
    comp = np.asarray(doc["metrics"]["comp"]["by_location"])
    omp = np.asarray(doc["metrics"]["omp_time"]["by_location"])
    outside = (comp + omp)[[0, 2]]  # the masters
    assert hybrid["outside_mpi_max"] == pytest.approx(outside.max(), rel=1e-12)
    assert hybrid["mpi_load_balance"] == pytest.approx(outside.mean() / outside.max(), rel=1e-12)
    assert hybrid["mpi_parallel_efficiency"] * hybrid["openmp_parallel_efficiency"] == pytest.approx(
        doc["pop"]["parallel_efficiency"], rel=1e-12)


def test_json_of_a_trace_without_threads_has_no_hybrid_pop(pingpong_dir):
    doc = export.analysis_document(waitscope.open(pingpong_dir).analyze())
    assert doc["pop"]["hybrid"] is None
    assert [loc["mpi_rank"] for loc in doc["locations"]] == [0, 1]


# ---- Cube ---------------------------------------------------------------------------------


def _system(path: Path) -> list[tuple[str, str, str, list[tuple[str, str, str]]]]:
    """(process name, rank, type, [(location name, rank, type)]) of every location group, via pycubexr."""
    pycubexr = pytest.importorskip("pycubexr")
    out = []
    with pycubexr.CubexParser(str(path)) as cube:
        for node in cube._anchor_result.system_tree_nodes:
            for group in node.all_location_groups():
                out.append((group.name, str(group.rank), group.type,
                            [(loc.name, str(loc.rank), loc.type) for loc in group.all_locations()]))
    return out


@pytest.mark.parametrize("name", ["omp_imbalance", "omp_locks"])
def test_cube_system_tree_is_scalascas(name, tmp_path):
    """Processes with their threads as in Scalasca's own report of the trace: location groups of
    type process named by the rank, holding a location of type thread per thread."""
    r = analysed(name)
    path = Path(r.to_cube(tmp_path / "hybrid.cubex"))
    ours = _system(path)
    assert ours == _system(_dir(name) / "scout.cubex")
    assert ours == [("MPI Rank 0", "0", "process", [("Master thread", "0", "thread"), ("OMP thread 1", "1", "thread")]),
                    ("MPI Rank 1", "1", "process", [("Master thread", "0", "thread"), ("OMP thread 1", "1", "thread")])]
    with tarfile.open(path) as tar:
        anchor = ET.fromstring(tar.extractfile("anchor.xml").read())
    cart = anchor.find("system").find("topologies").find("cart")
    assert cart.get("name") == "Process x Thread"
    assert [c.text for c in cart.findall("coord")] == ["0 0", "0 1", "1 0", "1 1"]


def test_cube_reads_back_every_thread_and_the_openmp_metrics(tmp_path):
    pycubexr = pytest.importorskip("pycubexr")
    name = "omp_locks"
    r = analysed(name)
    path = r.to_cube(tmp_path / "hybrid.cubex")
    parents = {"omp_time": "execution", "omp_management": "omp_time", "omp_fork": "omp_management",
               "omp_flush": "omp_time", "omp_synchronization": "omp_time", "omp_barrier": "omp_synchronization",
               "omp_ebarrier": "omp_barrier", "omp_ebarrier_wait": "omp_ebarrier", "omp_ibarrier": "omp_barrier",
               "omp_ibarrier_wait": "omp_ibarrier", "omp_critical": "omp_synchronization",
               "omp_lock_contention_critical": "omp_critical", "omp_lock_api": "omp_synchronization",
               "omp_lock_contention_api": "omp_lock_api", "omp_ordered": "omp_synchronization",
               "omp_taskwait": "omp_synchronization", "omp_idle_threads": "time",
               "omp_limited_parallelism": "omp_idle_threads", "delay_omp": "delay",
               "delay_ompbarrier_aggregate": "delay_omp", "delay_ompbarrier": "delay_ompbarrier_aggregate",
               "delay_ompbarrier_longterm": "delay_ompbarrier_aggregate", "delay_ompidle_aggregate": "delay_omp",
               "delay_ompidle": "delay_ompidle_aggregate", "delay_ompidle_longterm": "delay_ompidle_aggregate"}
    with pycubexr.CubexParser(str(path)) as cube:
        parent_of = {}

        def walk(children, parent):
            for m in children:
                parent_of[m.name] = parent
                walk(m.childs, m.name)

        walk(cube.get_metrics(), None)
        assert {m: parent_of[m] for m in parents} == parents
        assert [(loc.name, loc.rank) for loc in cube.get_locations()] == [
            ("Master thread", "0"), ("OMP thread 1", "1"), ("Master thread", "0"), ("OMP thread 1", "1")]
        with pycubexr.CubexParser(str(_dir(name) / "scout.cubex")) as theirs:
            for metric in ("omp_ibarrier_wait", "omp_lock_contention_api", "omp_fork", "delay_ompbarrier"):
                got, want = (sum((np.asarray(c.get_metric_values(c.get_metric_by_name(metric)).cnode_values(n),
                                             dtype=np.float64) for n in c.all_cnodes()), np.zeros(4))
                             for c in (cube, theirs))
                np.testing.assert_allclose(got, want, atol=ATOL, err_msg=metric)
                assert got[1] + got[3] > 0 or got[0] + got[2] > 0


# ---- Perfetto -------------------------------------------------------------------------------


def test_perfetto_threads_of_a_rank_are_one_process():
    from test_perfetto import validate

    r = analysed("omp_locks")
    doc = waitscope.perfetto.trace_events(r)
    validate(doc)
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    # one process per rank (pid rank + 1), one thread per location
    assert processes == {1: "rank 0", 2: "rank 1", waitscope.perfetto.SUMMARY_PID: "critical path"}
    for loc, (pid, name) in enumerate([(1, "Master thread"), (1, "OMP thread 1"), (2, "Master thread"),
                                       (2, "OMP thread 1")]):
        assert names[(pid, loc + 1)] == name
    # OpenMP wait states as slices on the thread's wait track, adding up to Scalasca's values
    waited: dict[tuple[str, int], float] = defaultdict(float)
    track = {}
    for e in doc["traceEvents"]:
        if e.get("cat") == "wait":
            waited[(e["name"], e["pid"])] += e["dur"] / 1e6
            track.setdefault(e["args"]["metric"], set()).add(names[(e["pid"], e["tid"])])
    for metric in ("omp_lock_contention_api", "omp_ibarrier_wait"):
        want = ref_by_location("omp_locks", metric)
        for loc in range(4):
            if want[loc]:
                assert track[metric] >= {f"{'Master thread' if loc % 2 == 0 else 'OMP thread 1'} wait states"}
        assert [waited[(metric, pid)] for pid in (1, 2)] == pytest.approx(
            [want[0] + want[1], want[2] + want[3]], abs=ATOL)
    assert track["omp_lock_contention_api"] == {"OMP thread 1 wait states"}
    # the critical path names the thread it runs on: the locations Scalasca puts it on
    segments = [e for e in doc["traceEvents"] if e.get("cat") == "critical_path"]
    on_path = ref_by_location("omp_locks", "critical_path")
    assert {(s["args"]["location"], s["args"]["thread"]) for s in segments if s["dur"] > 0} == \
        {(loc, loc % 2) for loc in range(4) if on_path[loc] > 0}


def test_perfetto_window_keeps_worker_threads_to_their_regions():
    """Cut at a window, a worker thread's track opens only the regions the worker entered (the
    parallel region and below), never its master's call path above them."""
    from test_perfetto import validate

    r = analysed("omp_locks")
    trace = r.trace
    t0, t1 = trace.run_length * 0.3, trace.run_length * 0.6
    doc = waitscope.perfetto.trace_events(r, window=(t0, t1))
    validate(doc)
    for loc in range(4):
        ev = trace.events(loc)
        entered = {trace.region_names[int(trace.callpath_region[int(cp)])]
                   for k, cp in zip(ev.kind, ev.callpath) if k == _core.EV_ENTER}
        sliced = {e["name"] for e in doc["traceEvents"] if e["ph"] == "B" and e["tid"] == loc + 1}
        assert sliced and sliced <= entered, loc
        if loc % 2:
            assert "main" not in sliced


# ---- plots -----------------------------------------------------------------------------------


def test_heatmap_on_the_process_x_thread_grid():
    pytest.importorskip("matplotlib")
    from waitscope import plot

    r = analysed("omp_imbalance")
    assert plot.thread_topology(r).dims == (2, 2) and r.trace.cart_topology.name == "Process x Thread"
    for metric in ("omp_ibarrier_wait", "delay_ompbarrier", "delay_ompidle"):
        v = ref_by_location("omp_imbalance", metric)
        want = np.array([[v[0], v[2]], [v[1], v[3]]])  # [thread, process]: processes across, threads down
        fig = plot.heatmap(r, metric)
        ax = fig.axes[0]
        np.testing.assert_allclose(np.ma.getdata(ax.images[0].get_array()), want, atol=ATOL)
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("Process", "Thread")
    assert fig.axes[0].get_title().startswith("OpenMP idle threads: short-term delay costs")
    # the four OpenMP panels of the README's picture side by side on one scale
    fig = plot.heatmaps(r, ["omp_ibarrier_wait", "delay_ompbarrier", "omp_idle_threads", "delay_ompidle"])
    assert [ax.get_title().splitlines()[0] for ax in fig.axes[:4]] == [
        "OpenMP wait at implicit barrier", "OpenMP barrier: short-term delay costs", "OpenMP idle threads",
        "OpenMP idle threads: short-term delay costs"]


def test_heatmap_sums_the_threads_of_a_process_on_an_application_topology():
    """An application topology places a process's MPI location; its threads share that cell."""
    pytest.importorskip("matplotlib")
    from waitscope import plot
    from waitscope.trace import CartTopology

    r = analysed("omp_imbalance")
    line = CartTopology("ranks", 0, ("x",), (2,), (False,), np.array([[0], [1]]), np.array([0, 2]))
    grid = plot.topology_grid(r, "delay_ompbarrier", topology=line)
    v = ref_by_location("omp_imbalance", "delay_ompbarrier")
    np.testing.assert_allclose(grid.filled(np.nan)[0, 0], [v[0] + v[1], v[2] + v[3]], atol=ATOL)


def _covered(time: np.ndarray, kind: np.ndarray) -> float:
    """Time a location spends inside regions it entered, from its events."""
    depth = np.cumsum((kind == _core.EV_ENTER).astype(int) - (kind == _core.EV_LEAVE).astype(int))
    return float(np.sum(np.diff(time)[depth[:-1] > 0]))


def test_timeline_rows_are_rank_thread_and_workers_idle():
    pytest.importorskip("matplotlib")
    from waitscope import plot

    name = "omp_imbalance"
    r = analysed(name)
    trace = r.trace
    fig = plot.timeline(trace, r, window="all")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0:0", "0:1", "1:0", "1:1"]
    assert ax.get_ylabel() == "rank:thread"
    regions = next(c for c in ax.collections if c.get_gid() == "regions")
    bars = defaultdict(float)
    for path in regions.get_paths():
        xs, ys = path.vertices[:, 0], path.vertices[:, 1]
        bars[int(round(ys.mean()))] += xs.max() - xs.min()
    for loc in range(4):  # a worker's bar covers its parallel regions only: idle time stays empty
        ev = trace.events(loc)
        assert bars[loc] == pytest.approx(_covered(np.asarray(ev.time), np.asarray(ev.kind)), abs=1e-9), loc
    assert bars[1] < trace.run_length - r.by_location("omp_idle_threads")[1] + 1e-9
    # the implicit-barrier waiting is hatched: one rectangle per wait (4 iterations x 2 masters)
    hatched = next(p for p in ax.patches if p.get_gid() == "waits:omp_ibarrier_wait")
    closed = int(np.count_nonzero(hatched.get_path().codes == hatched.get_path().CLOSEPOLY))
    assert closed == 8
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "OpenMP wait at implicit barrier" in labels and "Late Sender" in labels


def test_profiles_and_whatif_accept_hybrid_results():
    pytest.importorskip("matplotlib")
    from waitscope import plot

    name = "omp_imbalance"
    ref = reference(name)
    r1, r2 = analysed(name), analysed(name, "wait-first")
    fig = plot.delay_profile({"proportional": r1, "wait-first": r2}, top=20)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]

    def widths(gid):
        return {lab: p.get_width() for lab, p in zip(labels, [p for p in ax.patches if p.get_gid() == gid])}

    short, long_ = widths("short:proportional"), widths("long:proportional")
    want_short, want_long = defaultdict(float), defaultdict(float)
    for metric, paths in ref.items():
        if metric.startswith("delay_"):
            target = want_long if metric.endswith("_longterm") else want_short
            for path, values in paths.items():
                target[plot._short(path)] += values.sum()
    for lab in labels:
        assert short[lab] == pytest.approx(want_short[lab], abs=ATOL), lab
        assert long_[lab] == pytest.approx(want_long[lab], abs=ATOL), lab
    assert set(labels) == {k for k in set(want_short) | set(want_long) if want_short[k] + want_long[k] > 0}

    fig = plot.critical_path_profile(r1, top=20)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    on_path = {plot._short(p): v.sum() for p, v in ref["critical_path"].items()}
    bars = [p for p in ax.patches if p.get_gid() in ("critical_path", "imbalance")]
    per_label = defaultdict(float)
    for p in bars:
        per_label[labels[int(round(p.get_y() + p.get_height() / 2 + 0.19))]] += p.get_width()
    for lab in labels:
        assert per_label[lab] == pytest.approx(on_path[lab], abs=ATOL), lab
    assert "average per location (thread)" in [t.get_text() for t in ax.get_legend().get_texts()]

    fig = plot.whatif(r1, r2, "delay_ompidle_longterm", ["main/work_until"])
    grids = [np.ma.getdata(ax.images[0].get_array()) for ax in fig.axes if ax.images]
    for grid, result in zip(grids, (r1, r2)):
        v = result.inclusive("delay_ompidle_longterm")[result.callpath_index("main/work_until")]
        np.testing.assert_allclose(grid, [[v[0], v[2]], [v[1], v[3]]], rtol=1e-12)
    np.testing.assert_allclose(grids[0], [[ref["delay_ompidle_longterm"][f"{name}/main/work_until"][i]
                                           for i in (0, 2)], [0.0, 0.0]], atol=ATOL)


# ---- compare / diff ----------------------------------------------------------------------------


def test_compare_aligns_by_rank_and_thread():
    pytest.importorskip("pandas")
    a, b = analysed("omp_imbalance"), analysed("omp_idle")
    table = waitscope.compare(a, b, metrics=["omp_ibarrier_wait", "omp_idle_threads"], locations=True)
    assert list(table.columns[:4]) == ["metric", "callpath", "rank", "thread"]
    rows = table[table["metric"] == "omp_ibarrier_wait"]
    for name, column in (("omp_imbalance", "before"), ("omp_idle", "after")):
        (path, values), = reference(name)["omp_ibarrier_wait"].items()
        got = rows[rows["callpath"] == path]
        by_place = {(int(r), int(t)): float(v) for r, t, v in zip(got["rank"], got["thread"], got[column]) if v}
        assert set(by_place) == {(loc // 2, loc % 2) for loc in range(4) if values[loc] > 0}
        for (rank, thread), value in by_place.items():
            assert value == pytest.approx(values[2 * rank + thread], abs=ATOL)
    idle = table[table["metric"] == "omp_idle_threads"]
    assert set(idle["thread"]) == {1}  # only workers idle
    for rank in (0, 1):
        sel = idle[idle["rank"] == rank]
        assert sel["before"].sum() == pytest.approx(a.by_location("omp_idle_threads")[2 * rank + 1], rel=1e-12)


def test_compare_explains_openmp_waiting_by_thread():
    """A changed OpenMP barrier wait is explained by the barrier delay costs of the thread that
    arrived late; rows per location name rank and thread."""
    a, b = analysed("omp_imbalance"), analysed("omp_imbalance", "wait-first")
    from waitscope.compare import compare_rows, format_rows

    rows = compare_rows(a, b, locations=True)
    assert all(r.thread in (0, 1) for r in rows[1:])
    assert all(r.change == pytest.approx(0.0, abs=1e-12) for r in rows if r.metric == "omp_ibarrier_wait")
    text = format_rows(rows, top=50)
    assert re.search(r"\(rank [01] thread [01]\)$", text, re.M)
    with pytest.raises(ValueError, match="ranks and threads"):
        compare_rows(a, waitscope.open(waitscope.examples.PING_PONG).analyze(), locations=True)


def test_diff_ranks_lists_threads(capsys):
    a, b = _dir("omp_imbalance"), _dir("omp_explicit_barrier")
    assert cli.main(["diff", str(a), str(b), "--ranks", "--top", "80"]) == 0
    out = capsys.readouterr().out
    want = ref_by_location("omp_explicit_barrier", "omp_ebarrier_wait")
    assert len(re.findall(r"^omp_ebarrier_wait .*\(rank [01] thread [01]\)$", out, re.M)) == np.count_nonzero(want)
    for loc in np.flatnonzero(want):
        line = next(line for line in out.splitlines()
                    if line.startswith("omp_ebarrier_wait") and line.endswith(f"(rank {loc // 2} thread {loc % 2})"))
        assert float(line.split()[2]) == pytest.approx(want[loc], abs=ATOL)


# ---- POP ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["omp_imbalance", "omp_idle", "omp_critical"])
def test_pop_hybrid_efficiencies(name):
    """POP's multiplicative hybrid model, worked out from the cube another way: useful time per
    thread is Time less MPI, the OpenMP runtime, idleness and measurement overhead; a process's
    time outside MPI that of its master thread's Execution less MPI."""
    r = analysed(name)
    pop = r.pop_metrics(ideal=None)
    by = r.by_location
    useful = by("time") - by("mpi") - by("omp_time") - by("omp_idle_threads") - by("overhead")
    outside = (by("execution") - by("mpi"))[[0, 2]]
    runtime = r.trace.run_length
    h = pop.hybrid
    assert (h.processes, h.threads) == (2, 4)
    assert pop.parallel_efficiency == pytest.approx(useful.mean() / runtime, rel=1e-9)
    assert h.mpi_load_balance == pytest.approx(outside.mean() / outside.max(), rel=1e-9)
    assert h.mpi_communication_efficiency == pytest.approx(outside.max() / runtime, rel=1e-9)
    assert h.mpi_parallel_efficiency == pytest.approx(outside.mean() / runtime, rel=1e-9)
    assert h.openmp_communication_efficiency == pytest.approx(useful.max() / outside.max(), rel=1e-9)
    assert h.openmp_load_balance == pytest.approx((useful.mean() / useful.max()) / (outside.mean() / outside.max()),
                                                  rel=1e-9)
    assert h.openmp_parallel_efficiency == pytest.approx(useful.mean() / outside.mean(), rel=1e-9)
    assert h.mpi_parallel_efficiency * h.openmp_parallel_efficiency == pytest.approx(pop.parallel_efficiency,
                                                                                     rel=1e-12)
    # the OpenMP runtime and idle workers cost OpenMP efficiency, not MPI efficiency
    assert h.openmp_parallel_efficiency < 1 and h.mpi_parallel_efficiency > pop.parallel_efficiency
    # without an ideal run time no MPI serialisation and transfer; a given one is used as it is
    assert pop.serialisation_efficiency is None and h.mpi_transfer_efficiency is None
    given = r.pop_metrics(ideal=0.8 * runtime).hybrid
    assert given.mpi_transfer_efficiency == pytest.approx(0.8, rel=1e-12)
    assert given.mpi_serialisation_efficiency == pytest.approx(outside.max() / (0.8 * runtime), rel=1e-9)


def test_pop_report_lines(capsys):
    d = _dir("omp_idle")
    assert cli.main(["analyze", str(d), "--quiet"]) == 0
    out = capsys.readouterr().out
    pop = analysed("omp_idle").pop_metrics()
    h = pop.hybrid
    # the ideal network simulated with the threads: MPI serialisation and transfer too
    assert "POP's hybrid model" in out and h.mpi_transfer_efficiency is not None
    ideal = analysed("omp_idle").trace.simulate(network="ideal", progress=False).run_length
    assert h.mpi_transfer_efficiency == pytest.approx(ideal / analysed("omp_idle").trace.run_length, rel=1e-9)
    assert re.search(rf"^ +MPI transfer efficiency +{100 * h.mpi_transfer_efficiency:.2f} %", out, re.M), out
    for label, value in (("MPI parallel efficiency", h.mpi_parallel_efficiency),
                         ("MPI load balance", h.mpi_load_balance),
                         ("OpenMP parallel efficiency", h.openmp_parallel_efficiency),
                         ("OpenMP communication efficiency", h.openmp_communication_efficiency)):
        assert re.search(rf"^ +{label} +{100 * value:.2f} %", out, re.M), label


def test_pop_of_a_trace_without_threads_is_unchanged(pingpong_dir):
    r = waitscope.open(pingpong_dir).analyze()
    pop = r.pop_metrics(ideal=None)
    useful = r.by_location("comp")
    assert pop.hybrid is None
    assert (pop.parallel_efficiency, pop.load_balance, pop.communication_efficiency) == pytest.approx(
        (useful.mean() / r.run_length, useful.mean() / useful.max(), useful.max() / r.run_length), rel=1e-12)
    lines = pop.lines()
    assert [line[:30] for line in lines] == ["  parallel efficiency         ", "    load balance              ",
                                             "    communication efficiency  ", "      serialisation efficiency",
                                             "      transfer efficiency     "]
    assert not any("MPI" in line or "OpenMP" in line for line in lines)


# ---- Hatchet -------------------------------------------------------------------------------------


def test_hatchet_index_is_rank_and_thread():
    pytest.importorskip("hatchet")
    r = analysed("omp_critical")
    gf = r.to_hatchet()
    df = gf.dataframe
    assert df.index.names == ["node", "rank", "thread"]
    assert len(df) == 4 * len(r.callpath_names)
    ref = reference("omp_critical")
    for metric in ("omp_lock_contention_critical", "omp_ibarrier_wait"):
        for path, values in ref[metric].items():
            region = path.rsplit("/", 1)[-1]
            rows = df[df["name"] == region].reset_index()
            got = {(int(a), int(b)): v for a, b, v in zip(rows["rank"], rows["thread"], rows[metric])}
            assert [got[(loc // 2, loc % 2)] for loc in range(4)] == pytest.approx(list(values), abs=ATOL), metric
    # Hatchet's own operations: the mean over ranks and threads, one row per call path
    mean = gf.deepcopy()
    mean.drop_index_levels()
    assert len(mean.dataframe) == len(r.callpath_names)
