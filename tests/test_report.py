"""The text summary (AnalysisResult.summary, `waitscope analyze`): a metric tree whose
percentages add up, the MPI time by call path, the non-zero patterns with their call
paths and min / mean / max over ranks, delay costs and the critical path.

Numbers are checked against sums of the raw cube array (``r.cube``) and against
programs whose waiting time is known by hand."""

from __future__ import annotations

import re

import numpy as np
import pytest

import waitscope
from waitscope import report, synth
from trace_facts import path_span

LABEL, NAME = slice(2, 42), slice(43, 71)
VALUE = re.compile(r"^\s*(-?\d+\.\d+) s\s+(-?\d+\.\d+) %$")


def _tree(text: str, first: str) -> list[tuple[int, str, str, float, float]]:
    """(depth, label, name, seconds, percent) of the tree lines after the line starting with `first`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first)) + 1
    assert lines[start] == report.TREE_HEADER  # every tree has its column header
    start += 1
    rows = []
    for line in lines[start:]:
        m = VALUE.match(line[71:])
        if not line.startswith("  ") or m is None:
            break
        label = line[LABEL].rstrip()
        depth = (len(label) - len(label.lstrip(" "))) // 2
        rows.append((depth, label.strip(), line[NAME].strip(), float(m.group(1)), float(m.group(2))))
    return rows


@pytest.fixture(scope="module")
def pingpong(pingpong_dir):
    return waitscope.open(pingpong_dir).analyze(delay_model="proportional", critical_path=True)


def _cube_total(r, metric: str) -> float:
    return float(r.cube[r.metric_ids.index(metric)].sum())


def test_metric_tree_values_and_percentages(pingpong):
    r = pingpong
    text = r.summary()
    rows = _tree(text, "metric tree")
    time = _cube_total(r, "time")
    assert rows[0][:3] == (0, "time", "Time") and rows[0][4] == 100.0
    ids = [label for _, label, _, _, _ in rows]
    for depth, label, name, value, percent in rows:
        assert percent <= 100.0
        assert percent == pytest.approx(100 * value / time, abs=0.006)
        if not label.startswith("other "):
            assert name == r.metric(label).name  # Cube's display name beside the id
            assert value == pytest.approx(_cube_total(r, label), abs=6e-7)
            assert value > 0  # only non-zero metrics
    # sub-metrics are indented under their parent and, with the rest line, add up to it
    for i, (depth, label, _, value, percent) in enumerate(rows):
        children = []
        for d, child, _, v, p in rows[i + 1:]:
            if d <= depth:
                break
            if d == depth + 1:
                children.append((child, v, p))
        if children:
            assert sum(v for _, v, _ in children) == pytest.approx(value, abs=1e-6 * len(children)), label
            assert sum(p for _, _, p in children) == pytest.approx(percent, abs=0.01 * len(children)), label
            for child, _, _ in children:
                if not child.startswith("other "):
                    assert r.metric(child).parent == label
    # zero patterns are left out; MPI_Init's share of the MPI time is the rest of Init/Exit
    assert "mpi_barrier_wait" not in ids and "mpi_wait_nxn" not in ids
    assert "other Init/Exit" in ids
    # time > execution > mpi > mpi_communication > mpi_point2point > mpi_latereceiver
    assert [d for d, label, *_ in rows if label == "mpi_latereceiver"] == [5]


def test_mpi_time_by_call_path_shows_mpi_init(pingpong):
    r = pingpong
    text = r.summary()
    section = text.split("MPI time by call path")[1].split("\n\n")[0].splitlines()[2:]
    mpi = r.cube[r.metric_ids.index("mpi")]
    init = r.callpath_index("int main(int, char**)/MPI_Init")
    first = section[0].split()
    assert first[-1] == "char**)/MPI_Init"
    assert float(first[0]) == pytest.approx(mpi[init].sum(), abs=6e-7)
    assert float(first[2]) == pytest.approx(100 * mpi[init].sum() / _cube_total(r, "time"), abs=0.006)
    assert float(first[2]) > 90


def test_patterns_with_min_mean_max_over_ranks(pingpong):
    r = pingpong
    text = r.summary()
    section = text.split("wait states (non-zero patterns)")[1].split("\n\n")[0]
    shown = re.findall(r"^  (mpi_\w+) \(([^)]*)\): (\d+\.\d+) s", section, re.M)
    expected = [m for m in report.WAIT_PATTERNS if _cube_total(r, m) > 0]
    assert [m for m, _, _ in shown] == expected
    for metric, name, value in shown:
        assert name == r.metric(metric).name
        assert float(value) == pytest.approx(_cube_total(r, metric), abs=6e-7)
    # Late Receiver: on MPI_Send; per rank from the cube
    lr = r.cube[r.metric_ids.index("mpi_latereceiver")]
    send = r.callpath_index("int main(int, char**)/MPI_Send")
    line = section.split("mpi_latereceiver (Late Receiver)")[1].splitlines()[1].split()
    values = lr[send]  # one location per rank here
    assert r.location_ranks.tolist() == [0, 1]
    assert [float(x) for x in (line[0], line[4], line[5], line[6])] == pytest.approx(
        [values.sum(), values.min(), values.mean(), values.max()], abs=6e-7)
    assert int(line[7]) == int(np.argmax(values))


def test_known_waiting_by_hand():
    """Rank 0 computes 3 s, ranks 1 and 2 1 s and 2 s, then receive from rank 0: Late Sender 2 s and 1 s."""
    p = synth.Program(3)
    p.rank(0).compute("work", 3.0).send(1).send(2)
    p.rank(1).compute("work", 1.0).recv(0)
    p.rank(2).compute("work", 2.0).recv(0)
    r = p.run(latency=0.0).analyze()
    text = r.summary(top=3)
    section = text.split("wait states (non-zero patterns)")[1]
    head, line = section.split("mpi_latesender (Late Sender): ")[1].splitlines()[:2]
    assert head.startswith("3.000000 s")
    cols = line.split()
    assert cols[-1] == "synthetic/main/MPI_Recv"
    assert [float(c) for c in (cols[0], cols[4], cols[5], cols[6])] == pytest.approx([3.0, 0.0, 1.0, 2.0])
    assert cols[7] == "1"  # rank 1 waits longest
    time = _cube_total(r, "time")
    assert float(cols[2]) == pytest.approx(100 * 3.0 / time, abs=0.006)
    assert text.count("mpi_latesender") >= 2 and "mpi_latereceiver" not in text.split("wait states")[1]


def test_delay_and_critical_path_sections(pingpong):
    r = pingpong
    text = r.summary()
    assert f"critical path: {r.critical_path.length:.6f} s in {len(r.critical_path.segments)} segments" in text
    path = text.split("call paths on the critical path")[1].splitlines()[1:]
    assert path.pop(0) == report.PATH_HEADER  # the table's column header
    on_path = r.cube[r.metric_ids.index("critical_path")].sum(axis=1)
    best = int(np.argmax(on_path))
    assert path[0].split()[-1] == r.callpath_names[best].split()[-1]
    assert float(path[0].split()[0]) == pytest.approx(on_path[best], abs=6e-7)
    delay = text.split("delay costs (proportional model): ")[1]
    assert delay.startswith(f"{r.delay_short.sum():.6f} s short-term")
    assert text.splitlines()[0].endswith("; run length 0.199604 s")
    # the path runs from MPI_Init's Enter to the latest Enter of MPI_Finalize
    assert r.critical_path.length == pytest.approx(path_span(r.trace), rel=1e-12)


def test_top_zero_and_negative():
    p = synth.Program(2)
    p.rank(0).compute("work", 1.0).send(1)
    p.rank(1).recv(0)
    r = p.run(latency=0.0).analyze()
    assert "main/MPI_Recv" not in r.summary(top=0)
    with pytest.raises(ValueError, match="top must be 0 or more"):
        r.summary(top=-1)


SCALASCA_REFS = ("ls_blocking", "ls_wrongorder", "late_receiver", "barrier_imbalance", "nxn", "bcast_lateroot",
                 "reduce_early", "scan", "chain_longterm")


@pytest.mark.parametrize("name", SCALASCA_REFS)
def test_patterns_agree_with_scalasca(name: str):
    """Each pattern's total, top call path, maximum over ranks and its rank as Scalasca 2.6 reports them
    (scalasca.json of /work/shared/data/scalasca-refs; Scalasca's call paths start with the program region)."""
    import json

    from conftest import SHARED_DATA

    ref_dir = SHARED_DATA / "scalasca-refs" / name
    if not (ref_dir / "scalasca.json").exists():
        pytest.skip("the Scalasca reference reports are not available")
    ref = json.loads((ref_dir / "scalasca.json").read_text())["metrics"]
    r = waitscope.open(ref_dir).analyze()
    text = r.summary(top=1)
    section = text.split("wait states (non-zero patterns)")[1].split("\n\n")[0]
    shown = dict(re.findall(r"^  (mpi_\w+) \([^)]*\): (\d+\.\d+) s", section, re.M))
    expected = {m: v for m, v in ref.items() if m in report.WAIT_PATTERNS and v["total"] > 5e-7}
    assert set(shown) == set(expected), name
    ranks = r.location_ranks.tolist()
    for metric, value in shown.items():
        paths = expected[metric]["paths"]
        assert float(value) == pytest.approx(expected[metric]["total"], abs=6e-7)
        top = max(paths, key=lambda p: sum(paths[p]))
        line = section.split(f"  {metric} (")[1].splitlines()[1].split()
        assert line[-1] == top, metric  # with the program region, as in Scalasca
        per_location = paths[top]
        assert float(line[6]) == pytest.approx(max(per_location), abs=6e-7)
        assert int(line[7]) == ranks[int(np.argmax(per_location))]


# ---- computation by call path, one metric's table (cube_stat -m M -t N), headed sections ----------


def _two_regions():
    """Rank 0 computes a 2 s and b 1.5 s, rank 1 a 1 s and b 3 s (inside 'outer'), then a barrier."""
    p = synth.Program(2)
    p.rank(0).compute("a", 2.0).compute("b", 1.5).barrier()
    with p.rank(1).region("outer"):
        p.rank(1).compute("a", 1.0).compute("b", 3.0)
    p.rank(1).barrier()
    return p.run(latency=0.0).analyze()


def _table(text: str, title: str) -> list[list[str]]:
    """The rows (split into columns) of the call-path table under the line starting with `title`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title)) + 1
    assert lines[start].split()[:3] == ["value", "%", "time"] or lines[start].split()[:3] == ["value", "%", "metric"]
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("    ") or not line.strip():
            break
        rows.append(line.split())
    return rows


def _short(name: str, suffixes: tuple[str, ...]) -> str:
    """`name` as the one of `suffixes` it ends with (call paths may start with the program region)."""
    return next((x for x in suffixes if name == x or name.endswith("/" + x)), name)


COMP_PATHS = ("main/outer/b", "main/outer/a", "main/outer", "main/a", "main/b", "main/MPI_Barrier", "main")


def test_computation_by_call_path():
    r = _two_regions()
    rows = _table(r.summary(), "Computation by call path")
    # rank 1's b 3 s, rank 0's a 2 s and b 1.5 s, rank 1's a 1 s; time = 2 x 4 s (rank 0 waits 0.5 s)
    assert [_short(row[-1], COMP_PATHS) for row in rows] == ["main/outer/b", "main/a", "main/b", "main/outer/a"]
    by_name = {_short(row[-1], COMP_PATHS): row for row in rows}
    assert float(by_name["main/outer/b"][0]) == 3.0 and by_name["main/outer/b"][-2] == "1"
    assert float(by_name["main/a"][0]) == 2.0 and float(by_name["main/a"][2]) == pytest.approx(25.0)
    # min / mean / max over ranks: main/a is 2 s on rank 0, 0 on rank 1
    assert [float(x) for x in by_name["main/a"][4:7]] == [0.0, 1.0, 2.0]


def test_metric_table_like_cube_stat():
    r = _two_regions()
    text = report.metric_table(r, "comp", top=2)
    first = text.splitlines()[0]
    assert first.startswith("comp (Computation): 7.500000 s (93.75 % of total time); exclusive values of the top 2 "
                            "of 4 call paths")
    rows = _table(text, "comp (Computation)")
    assert [(_short(row[-1], COMP_PATHS), float(row[0])) for row in rows] == [("main/outer/b", 3.0), ("main/a", 2.0)]
    # inclusive: 'outer' holds a and b of rank 1 (4 s), main everything (7.5 s)
    rows = _table(report.metric_table(r, "Computation", top=10, inclusive=True), "comp (Computation)")
    inclusive = [(_short(row[-1], COMP_PATHS), float(row[0])) for row in rows]
    assert ("main", 7.5) in inclusive and inclusive.index(("main/outer", 4.0)) == inclusive.index(("main", 7.5)) + 1
    # a count: percentages of the metric's total, values without seconds
    rows = _table(report.metric_table(r, "visits", top=20), "visits (Visits)")
    visits = {_short(row[-1], COMP_PATHS): int(row[0]) for row in rows}
    assert visits["main/a"] == 1 and visits["main/outer"] == 1 and visits["main/MPI_Barrier"] == 2
    total = sum(int(x) for x in r.by_callpath("visits"))
    assert float(next(row for row in rows if row[-1].endswith("main/MPI_Barrier"))[1]) == pytest.approx(100 * 2 / total, abs=0.006)
    with pytest.raises(KeyError, match="closest: 'comp'"):
        report.metric_table(r, "compt")


def test_delay_trees_apart_and_headed(pingpong):
    text = pingpong.summary()
    delay = text.split("delay costs by wait-state pattern")[1].split("call paths whose delays")[0]
    assert "delay_latereceiver" in delay and "mpi_wait_direct" not in delay and "terminal" not in delay
    direct = text.split("wait states by cause: direct")[1].split("\n\n")[0].splitlines()
    assert direct[1] == report.TREE_HEADER and direct[2].split()[0] == "waitstates_direct_vs_indirect"
    terminal = text.split("wait states by effect: propagating")[1].split("\n\n")[0].splitlines()
    assert terminal[1] == report.TREE_HEADER and terminal[2].split()[0] == "waitstates_propagating_vs_terminal"
    # the classification trees add up to the handled waiting
    handled = pingpong.handled_waiting()
    assert float(direct[2].split()[-4]) == pytest.approx(handled, abs=6e-7)


def test_culprit_is_the_largest_delay_cost():
    """Rank 0 works 3 s in a, rank 1 0.5 s in c, then 0 sends to 1: Late Sender 2.5 s, all caused by a.
    Ranks 2 and 3 the same with b 2 s: 1.5 s caused by b.  The culprit: a on rank 0, 2.5 of 4 s."""
    p = synth.Program(4)
    p.rank(0).compute("a", 3.0).send(1)
    p.rank(1).compute("c", 0.5).recv(0)
    p.rank(2).compute("b", 2.0).send(3)
    p.rank(3).compute("c", 0.5).recv(2)
    r = p.run(latency=0.0).analyze(delay_model="proportional")
    found = report.culprit(r)
    assert r.callpath_names[found.callpath].endswith("main/a") and found.rank == 0
    assert (found.cost, found.callpath_cost, found.share) == pytest.approx((2.5, 2.5, 2.5 / 4.0))
    line = report.culprit_line(r)
    assert line.endswith("main/a, whose delays caused 2.500000 s of waiting (62.5 % of the delay costs), "
                         "all of it on rank 0")
    assert f"  the largest cause of waiting: {line}" in r.summary()
    assert report.culprit(p.run(latency=0.0).analyze()) is None  # no delay analysis
