"""AnalysisResult.to_hatchet: the call-path tree and the metrics per (call path, rank) as a Hatchet GraphFrame.

Hatchet (PyPI: llnl-hatchet) is in the ``test`` extra, so this runs in CI.
The inclusive columns are checked against Hatchet's own computation of
them from the exclusive ones, the per-rank values against the cube.
"""
from __future__ import annotations

import numpy as np
import pytest

import waitscope
from waitscope import synth
from waitscope.examples import HALO2D

import hatchet  # noqa: E402  (a test dependency: no skip)


@pytest.fixture(scope="module")
def halo():
    return waitscope.open(HALO2D).analyze(delay_model="proportional", critical_path=True)


def test_graph_is_the_call_path_tree(halo):
    gf = halo.to_hatchet()
    assert isinstance(gf, hatchet.GraphFrame)
    nodes = list(gf.graph.traverse())
    assert len(nodes) == len(halo.callpath_names)
    # every node's path of frame names is a call path of the result
    paths = {"/".join(p.frame["name"] for p in n.path()) for n in nodes}
    assert paths == set(halo.callpath_names)
    # the program region is the root, as in Cube
    assert [r.frame["name"] for r in gf.graph.roots] == [halo.trace.program_region]
    assert halo.trace.program_region.startswith("halo2d")


def test_values_per_rank_match_the_cube(halo):
    gf = halo.to_hatchet()
    df = gf.dataframe
    assert df.index.names == ["node", "rank"]
    assert len(df) == len(halo.callpath_names) * 2
    by_path = {("/".join(p.frame["name"] for p in node.path()), rank): row for (node, rank), row in df.iterrows()}
    for metric in ("time", "visits", "mpi_latesender", "delay_latesender", "critical_path"):
        values = halo.get(metric)
        for cp, name in enumerate(halo.callpath_names):
            for loc, rank in enumerate(halo.location_ranks):
                assert by_path[(name, int(rank))][metric] == pytest.approx(values[cp, loc], abs=0)
    assert df["time"].sum() == pytest.approx(halo.total("time"))
    assert gf.default_metric == "time"


def test_inclusive_columns_agree_with_hatchet(halo):
    gf = halo.to_hatchet()
    ours = gf.dataframe[["time (inc)", "mpi_latesender (inc)"]].copy()
    redo = gf.deepcopy()
    redo.dataframe = redo.dataframe.drop(columns=[c for c in redo.dataframe.columns if c.endswith("(inc)")])
    redo.inc_metrics = []
    redo.update_inclusive_columns()  # Hatchet sums the subtrees itself
    for col in ours.columns:
        theirs = redo.dataframe[col].reindex(ours.index)
        assert np.allclose(theirs.to_numpy(), ours[col].to_numpy(), rtol=1e-12, atol=1e-15), col
    root = gf.graph.roots[0]
    assert gf.dataframe.loc[root]["time (inc)"].sum() == pytest.approx(halo.total("time"))


def test_hatchet_operations_work(halo):
    gf = halo.to_hatchet()
    text = gf.tree(metric_column="time (inc)")
    assert "exchange_halos" in text and "MPI_Init" in text
    mean = gf.deepcopy()
    mean.drop_index_levels()  # mean over ranks
    assert len(mean.dataframe) == len(halo.callpath_names)
    mpi = gf.filter(lambda row: row["name"].startswith("MPI_"), squash=True)
    assert set(mpi.dataframe["name"]) == {n.rsplit("/", 1)[-1] for n in halo.callpath_names
                                         if n.rsplit("/", 1)[-1].startswith("MPI_")}


def test_threads_of_a_rank_are_summed():
    # a synthetic run has one location per rank: the per-rank sums are the locations
    prog = synth.Program(3)
    for r in range(3):
        prog.rank(r).compute("work", 1.0 + r).barrier()
    result = prog.run(resolution=1000).analyze()
    df = result.to_hatchet().dataframe
    wait = df[df["name"] == "MPI_Barrier"]["mpi_barrier_wait"].sort_index(level="rank").to_numpy()
    assert wait.tolist() == pytest.approx([2.0, 1.0, 0.0])  # ranks arrive at 1, 2, 3 s


def test_runs_join_a_thicket():
    # Thicket (LLNL, built on Hatchet) takes the GraphFrames of several runs: here the same
    # program at two scales of work; the barrier waiting doubles with the imbalance
    import thicket

    frames = []
    for scale in (1.0, 2.0):
        prog = synth.Program(3)
        for r in range(3):
            prog.rank(r).compute("work", scale * (1.0 + r)).barrier()
        gf = prog.run(resolution=1000).analyze().to_hatchet()
        gf.metadata["scale"] = scale
        frames.append(gf)
    tk = thicket.Thicket.concat_thickets(
        [thicket.Thicket.thicketize_graphframe(gf, f"scale{i}") for i, gf in enumerate(frames)])
    assert sorted(tk.metadata["scale"]) == [1.0, 2.0]
    df = tk.dataframe
    assert df.index.names == ["node", "profile", "rank"]
    barrier = df[df["name"] == "MPI_Barrier"]
    by_scale = {float(tk.metadata.loc[p, "scale"]): barrier.xs(p, level="profile")["mpi_barrier_wait"].tolist()
                for p in tk.metadata.index}
    assert by_scale == {1.0: [2.0, 1.0, 0.0], 2.0: [4.0, 2.0, 0.0]}
