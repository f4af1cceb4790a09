"""waitscope.plot: topology heatmaps, timelines, delay and critical-path profiles.

The programs are small and their values worked out by hand from the timing
model in the docstring of waitscope/synth.py (latency 0 unless stated, so
MPI_Init ends at t = 0 and an eager send takes no time).  Every plot is
also saved as a PNG and read back to check that it is not blank.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
from matplotlib.collections import LineCollection, PolyCollection  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import PathPatch  # noqa: E402
from matplotlib.path import Path  # noqa: E402

import waitscope  # noqa: E402
from waitscope import plot, synth  # noqa: E402


def png_colours(fig, path) -> int:
    """Saves `fig` as a PNG and returns the number of distinct colours in it."""
    fig.savefig(path, dpi=60)
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.std() > 0.01
    return len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0))


def images(fig):
    return [im for ax in fig.axes for im in ax.images]


def colorbars(fig):
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def collection(ax, gid):
    """The collection or patch with this gid (None if there is none)."""
    found = [c for c in ax.collections + ax.patches if c.get_gid() == gid]
    assert len(found) <= 1
    return found[0] if found else None


# ---- import ---------------------------------------------------------------------------


def test_importing_waitscope_does_not_import_matplotlib():
    code = "import sys, waitscope, waitscope.synth; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_matplotlib_names_a_command_that_installs_it():
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "try:\n    import waitscope.plot\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ("waitscope.plot needs matplotlib, which is not installed: python -m pip install "
                                  "matplotlib (or python -m pip install 'waitscope[plot]')")


# ---- topology heatmaps ------------------------------------------------------------------
#
# 12 ranks on a 4 x 3 grid (MPI_Cart_create order: rank = 3 x + y for
# coordinates (x, y)); rank 7 sits at (2, 1).  Rank 0 computes "prep" for
# 0.5 s and sends to rank 7, which receives first: a Late Sender of 0.5 s
# at rank 7 only.  Then all compute "work" for 1 s, rank 7 for 3 s, and meet
# in a barrier.  Rank 0 enters it at 1.5, rank 7 at 3.5 (its work starts
# at 0.5), the others at 1: Wait at Barrier 2.0 at rank 0, 0 at rank 7,
# 2.5 elsewhere.

DIMS = (4, 3)
HOT = 7  # coordinates (2, 1)


def grid_program(nranks: int = 12, cart: tuple | None = DIMS) -> synth.Program:
    prog = synth.Program(nranks)
    if cart is not None:
        prog.cart(cart)
    prog.rank(0).compute("prep", 0.5).send(HOT, tag=0)
    prog.rank(HOT).recv(0, tag=0)
    for r in range(nranks):
        prog.rank(r).compute("work", 3.0 if r == HOT else 1.0).barrier()
    return prog


@pytest.fixture(scope="module")
def grid_result():
    return grid_program().run().analyze()


def expected_grid(per_rank) -> np.ndarray:
    """[y, x] image of per-rank values on the 4 x 3 grid, rank = 3 x + y."""
    out = np.zeros((DIMS[1], DIMS[0]))
    for x in range(DIMS[0]):
        for y in range(DIMS[1]):
            out[y, x] = per_rank(3 * x + y)
    return out


def test_heatmap_places_the_waiting_rank(grid_result, tmp_path):
    fig = plot.heatmap(grid_result, "mpi_latesender")
    (im,) = images(fig)
    data = im.get_array()
    assert data.shape == (3, 4)
    assert np.unravel_index(np.argmax(data), data.shape) == (1, 2)  # row y = 1, column x = 2
    np.testing.assert_allclose(data, expected_grid(lambda r: 0.5 if r == HOT else 0.0), atol=1e-9)
    assert im.norm.vmin == 0.0 and im.norm.vmax == pytest.approx(0.5)
    (cb,) = colorbars(fig)
    assert "sec" in cb.get_ylabel()
    assert png_colours(fig, tmp_path / "ls.png") > 5


def test_heatmap_of_work_and_barrier_waits(grid_result):
    data = images(plot.heatmap(grid_result, "time", "main/work"))[0].get_array()
    np.testing.assert_allclose(data, expected_grid(lambda r: 3.0 if r == HOT else 1.0), atol=1e-9)
    comp = images(plot.heatmap(grid_result, "comp"))[0].get_array()  # work + prep
    np.testing.assert_allclose(comp, expected_grid(lambda r: 3.0 if r == HOT else 1.5 if r == 0 else 1.0),
                               atol=1e-9)
    wait = images(plot.heatmap(grid_result, "mpi_barrier_wait"))[0].get_array()
    np.testing.assert_allclose(wait, expected_grid(lambda r: 0.0 if r == HOT else 2.0 if r == 0 else 2.5),
                               atol=1e-9)
    assert np.unravel_index(np.argmin(wait), wait.shape) == (1, 2)


def test_inclusive_and_exclusive_call_paths(grid_result):
    # main's subtree is all of the time: 3.5 s everywhere (the barrier ends at 3.5)
    incl = plot.topology_grid(grid_result, "time", "main", inclusive=True)
    np.testing.assert_allclose(incl[0], np.full((3, 4), 3.5), atol=1e-9)
    # main itself: no time outside its children
    excl = plot.topology_grid(grid_result, "time", "main", inclusive=False)
    np.testing.assert_allclose(excl[0], 0.0, atol=1e-9)
    # all call paths summed = the inclusive root
    np.testing.assert_allclose(plot.topology_grid(grid_result, "time")[0], incl[0], atol=1e-9)


def test_dims_and_coords_replace_a_missing_topology(tmp_path):
    r = grid_program(cart=None).run().analyze()
    assert r.trace.cart_topology is None
    # without topology, dims and coords: the ranks in a row, rank 0 on the left, and the axis says so
    fig = plot.heatmap(r, "mpi_latesender")
    strip = images(fig)[0].get_array()
    assert strip.shape == (1, 12) and strip[0].tolist() == [0.5 if rank == HOT else 0.0 for rank in range(12)]
    assert fig.axes[0].get_xlabel() == plot.STRIP_LABEL
    assert list(fig.axes[0].get_xticks()) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] and len(fig.axes[0].get_yticks()) == 0
    want = expected_grid(lambda rank: 0.5 if rank == HOT else 0.0)
    by_dims = images(plot.heatmap(r, "mpi_latesender", dims=DIMS))[0].get_array()
    np.testing.assert_allclose(by_dims, want, atol=1e-9)
    # the same placement given explicitly, as an array and as a function
    table = np.array([(rank // 3, rank % 3) for rank in range(12)])
    by_array = images(plot.heatmap(r, "mpi_latesender", coords=table))[0].get_array()
    by_func = images(plot.heatmap(r, "mpi_latesender", coords=lambda rank: (rank // 3, rank % 3)))[0].get_array()
    np.testing.assert_allclose(by_array, want, atol=1e-9)
    np.testing.assert_allclose(by_func, want, atol=1e-9)
    # transposed by the user: rank 7 at (x, y) = (1, 2)
    flipped = images(plot.heatmap(r, "mpi_latesender", coords=lambda rank: (rank % 3, rank // 3)))[0].get_array()
    assert flipped.shape == (4, 3) and np.unravel_index(np.argmax(flipped), flipped.shape) == (2, 1)
    # ... which transpose=True does as well (coordinate 0 vertical, matrix order)
    fig = plot.heatmap(r, "mpi_latesender", dims=DIMS)
    assert list(fig.axes[0].get_xticks()) == [0, 1, 2, 3] and list(fig.axes[0].get_yticks()) == [0, 1, 2]
    fig = plot.heatmap(r, "mpi_latesender", dims=DIMS, transpose=True)
    np.testing.assert_allclose(images(fig)[0].get_array(), flipped, atol=1e-9)
    assert fig.axes[0].get_xlabel() == "dim 1" and fig.axes[0].get_ylabel() == "dim 0"


def test_cells_without_location_are_masked():
    # 5 ranks on a 3 x 2 grid (row-major: rank = 2 x + y): (x, y) = (2, 1) would be rank 5
    prog = synth.Program(5)
    for r in range(5):
        prog.rank(r).compute("work", 1.0 + r)
    r = prog.run().analyze()
    data = images(plot.heatmap(r, "comp", dims=(3, 2)))[0].get_array()
    assert data.shape == (2, 3)
    assert np.ma.getmaskarray(data).tolist() == [[False, False, False], [False, False, True]]
    assert data[1, 1] == pytest.approx(4.0)  # rank 3 = (1, 1) works 4 s


# A 3D topology of 2 x 2 x 2 ranks from a user mapping (x fastest, unlike
# MPI): rank r at (r % 2, r // 2 % 2, r // 4).  Rank 6 = (0, 1, 1) works 3 s,
# the others 1 s.


def mapping(rank: int) -> tuple:
    return rank % 2, rank // 2 % 2, rank // 4


def test_heatmap_3d_from_a_user_mapping(tmp_path):
    prog = synth.Program(8)
    for r in range(8):
        prog.rank(r).compute("work", 3.0 if r == 6 else 1.0)
    r = prog.run().analyze()
    fig = plot.heatmap(r, "comp", coords=mapping, dims=(2, 2, 2))
    planes = images(fig)
    assert len(planes) == 2
    np.testing.assert_allclose(planes[0].get_array(), np.ones((2, 2)), atol=1e-9)
    np.testing.assert_allclose(planes[1].get_array(), [[1.0, 1.0], [3.0, 1.0]], atol=1e-9)  # [y, x]
    # one colour scale for all planes, one colour bar
    assert {(im.norm.vmin, im.norm.vmax) for im in planes} == {(1.0, 3.0)}
    assert len(colorbars(fig)) == 1
    assert png_colours(fig, tmp_path / "3d.png") > 5


def test_heatmap_3d_from_the_trace_topology():
    prog = synth.Program(8)
    prog.cart((2, 2, 2))  # row-major: rank 6 = (1, 1, 0)
    for r in range(8):
        prog.rank(r).compute("work", 3.0 if r == 6 else 1.0)
    grid = plot.topology_grid(prog.run().analyze(), "comp")
    assert grid.shape == (2, 2, 2)
    assert np.unravel_index(np.argmax(grid), grid.shape) == (0, 1, 1)  # [z, y, x]


def test_heatmap_errors(grid_result):
    with pytest.raises(KeyError, match="no_such_metric"):
        plot.heatmap(grid_result, "no_such_metric")
    with pytest.raises(ValueError, match="delay_model"):
        plot.heatmap(grid_result, "delay_short")  # no delay analysis
    with pytest.raises(KeyError):
        plot.heatmap(grid_result, "time", "main/nowhere")
    with pytest.raises(ValueError, match="one row per location"):
        plot.heatmap(grid_result, "time", coords=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        plot.heatmap(grid_result, "time", dims=(2, 2, 2, 2))
    with pytest.raises(ValueError, match="outside the grid"):
        plot.heatmap(grid_result, "time", coords=np.full((12, 2), 5), dims=(2, 2))


# ---- several panels, one colour scale (seed 000 Fig. 5) --------------------------------------


@pytest.fixture(scope="module")
def sweep():
    from test_scenarios import sweep3d  # the tests directory is on sys.path (pytest's rootdir import)

    trace = sweep3d(4, 4).run(latency=1e-6)
    return trace, trace.analyze(delay_model="proportional"), trace.analyze(delay_model="wait-first")


def test_heatmaps_share_one_colour_scale(sweep, tmp_path):
    trace, prop, wf = sweep
    panels = [(prop, "mpi_latesender", None), (prop, "delay_latesender", None),
              (prop, "delay_latesender_longterm", None), (wf, "delay_latesender_longterm", None)]
    fig = plot.heatmaps(panels=panels)
    ims = images(fig)
    assert len(ims) == 4
    values = np.concatenate([r.by_location(m) for r, m, _ in panels])
    assert {(im.norm.vmin, im.norm.vmax) for im in ims} == {(values.min(), values.max())}
    assert len(colorbars(fig)) == 1
    # the panels hold the per-location values on the trace's 4 x 4 grid (rank = 4 row + column)
    coords = trace.cart_topology.location_coords(trace.n_locations)
    for im, (r, m, _) in zip(ims, panels):
        data = im.get_array()
        np.testing.assert_allclose(data[coords[:, 1], coords[:, 0]], r.by_location(m), rtol=1e-12)
    assert png_colours(fig, tmp_path / "panels.png") > 5
    # separate scales on request
    fig = plot.heatmaps(prop, ["mpi_latesender", "delay_short", "delay_long"], shared_scale=False)
    ims = images(fig)
    assert len(colorbars(fig)) == 3
    for im, values in zip(ims, (prop.by_location("mpi_latesender"), prop.delay_short.sum(axis=0),
                                prop.delay_long.sum(axis=0))):
        assert (im.norm.vmin, im.norm.vmax) == pytest.approx((values.min(), values.max()))


def test_heatmaps_refuse_mixed_units_on_one_scale(sweep):
    _, prop, _ = sweep
    with pytest.raises(ValueError, match="different units"):
        plot.heatmaps(prop, ["mpi_latesender", "visits"])
    fig = plot.heatmaps(prop, ["mpi_latesender", "visits"], shared_scale=False)
    assert len(images(fig)) == 2
    with pytest.raises(ValueError, match="names no result"):
        plot.heatmaps(panels=[("mpi_latesender", None)])


def test_heatmaps_3d_panels_into_given_axes():
    prog = synth.Program(8)
    for r in range(8):
        prog.rank(r).compute("work", 3.0 if r == 6 else 1.0).barrier()
    r = prog.run().analyze()
    fig = matplotlib.figure.Figure()
    axes = fig.subplots(2, 2)
    out = plot.heatmaps(r, ["comp", "mpi_barrier_wait"], coords=mapping, axes=axes.T)
    assert out is fig
    ims = images(fig)
    assert len(ims) == 4
    assert {(im.norm.vmin, im.norm.vmax) for im in ims} == {(0.0, 3.0)}  # waits 2 .. 0, work 1 .. 3
    np.testing.assert_allclose(ims[3].get_array(), [[2.0, 2.0], [0.0, 2.0]], atol=1e-9)  # waits, plane 1


# ---- timeline ---------------------------------------------------------------------------
#
# 3 ranks, zero-byte messages.  Rank 0 computes "a" 1 s and sends to rank 1;
# rank 1 receives from 0 (entered at 0: Late Sender [0, 1]), computes "b"
# 0.25 s, then receives from rank 2, which computes "c" 2 s before sending
# (Late Sender [1.25, 2]).  MPI_Finalize: rank 0 enters at 1, ranks 1 and 2
# at 2: rank 0 waits [1, 2].  The critical path runs through "c" on rank 2.


@pytest.fixture(scope="module")
def three():
    prog = synth.Program(3)
    prog.rank(0).compute("a", 1.0).send(1, tag=0)
    prog.rank(1).recv(0, tag=0).compute("b", 0.25).recv(2, tag=1)
    prog.rank(2).compute("c", 2.0).send(1, tag=1)
    trace = prog.run()
    return trace, trace.analyze(critical_path=True)


def boxes(artist):
    """(x0, x1, row) of each rectangle of a PolyCollection or of a compound PathPatch."""
    if isinstance(artist, PathPatch):
        path = artist.get_path()  # MOVETO, 3 x LINETO, CLOSEPOLY per rectangle
        assert np.count_nonzero(path.codes == Path.MOVETO) * 5 == len(path.codes)
        paths = [Path(v) for v in path.vertices.reshape(-1, 5, 2)[:, :4]]
    else:
        paths = artist.get_paths()
    out = []
    for path in paths:
        v = path.vertices
        out.append((v[:, 0].min(), v[:, 0].max(), round(float(v[:, 1].min() + v[:, 1].max()) / 2, 6)))
    return sorted(out)


def test_timeline_hatches_each_late_sender(three, tmp_path):
    trace, r = three
    fig = plot.timeline(trace, r)
    ax = fig.axes[0]
    ls = collection(ax, "waits:mpi_latesender")
    assert r.total("mpi_sls_count") == 2  # the core counts 2 Late Sender instances
    assert boxes(ls) == [(0.0, 1.0, 1.0), (1.25, 2.0, 1.0)]
    assert ls.get_hatch() == "////"
    assert boxes(collection(ax, "waits:mpi_finalize_wait")) == [(1.0, 2.0, 0.0)]
    assert collection(ax, "waits:mpi_latereceiver") is None
    # messages from send to receive: (1, rank 0) -> (1, rank 1), (2, rank 2) -> (2, rank 1)
    msgs = collection(ax, "messages")
    assert isinstance(msgs, LineCollection)
    assert sorted(tuple(map(tuple, s)) for s in msgs.get_segments()) == [((1.0, 0.0), (1.0, 1.0)),
                                                                         ((2.0, 2.0), (2.0, 1.0))]
    # the critical path: through "c" on rank 2, then the message to rank 1
    (line,) = [ln for ln in ax.lines if ln.get_gid() == "critical_path"]
    x, y = line.get_xdata(), line.get_ydata()
    assert x[0] == 0.0 and x[-1] == pytest.approx(r.critical_path.end)
    lane = 2 - plot.CRITICAL_PATH_OFFSET  # just above rank 2's bar, not over it
    assert any(y[i] == lane and x[i] == 0.0 and y[i + 1] == lane and x[i + 1] == 2.0 for i in range(len(x) - 1))
    assert line.get_linewidth() >= 2.0
    # regions: MPI reddish, computation not
    regions = collection(ax, "regions")
    assert isinstance(regions, PolyCollection)
    colours = {to_hex(c) for c in regions.get_facecolors()}
    assert len(colours) >= 4
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"a", "c", "MPI_Recv", "Late Sender", "Wait at Finalize", "message", "critical path"} <= set(names)
    assert png_colours(fig, tmp_path / "timeline.png") > 5


def test_timeline_window_and_locations(three):
    trace, r = three
    ax = plot.timeline(trace, r, window=(0.5, 1.5)).axes[0]
    assert ax.get_xlim() == (0.5, 1.5)
    assert boxes(collection(ax, "waits:mpi_latesender")) == [(0.5, 1.0, 1.0), (1.25, 1.5, 1.0)]
    for path in collection(ax, "regions").get_paths():
        assert 0.5 <= path.vertices[:, 0].min() and path.vertices[:, 0].max() <= 1.5
    ax = plot.timeline(trace, window=(1.05, 1.2)).axes[0]
    assert collection(ax, "waits:mpi_latesender") is None
    assert not [ln for ln in ax.lines if ln.get_gid() == "critical_path"]  # no result given
    # ranks 2 and 1, top to bottom; the message 2 -> 1 only
    ax = plot.timeline(trace, r, locations=[2, 1]).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["2", "1"]
    assert [tuple(map(tuple, s)) for s in collection(ax, "messages").get_segments()] == [((2.0, 0.0), (2.0, 1.0))]
    assert boxes(collection(ax, "waits:mpi_latesender")) == [(0.0, 1.0, 1.0), (1.25, 2.0, 1.0)]
    ax = plot.timeline(trace, max_locations=2).axes[0]
    assert len(ax.get_yticks()) == 2
    with pytest.raises(ValueError, match="t1 > t0"):
        plot.timeline(trace, window=(1.0, 1.0))


def test_timeline_into_given_axes(three):
    trace, r = three
    fig = matplotlib.figure.Figure()
    ax = fig.add_subplot()
    assert plot.timeline(trace, r, ax=ax) is fig


def test_timeline_takes_the_wait_states_of_the_result(three, tmp_path):
    trace, _ = three
    r = trace.analyze(wait_records=True)
    ax = plot.timeline(trace, r).axes[0]
    assert boxes(collection(ax, "waits:mpi_latesender")) == [(0.0, 1.0, 1.0), (1.25, 2.0, 1.0)]
    # a partly loaded trace without such a result: no hatching (no analysis possible)
    part = waitscope.open(trace.write(tmp_path / "three"), load=False).load([0, 1])
    ax = plot.timeline(part).axes[0]
    assert not [p for p in ax.patches if str(p.get_gid()).startswith("waits:")]
    assert [t.get_text() for t in ax.get_legend().get_texts()].count("message") == 1  # 0 -> 1 still drawn
    with pytest.raises(ValueError, match="wait_records=True"):
        plot.wait_intervals(part)
    # the same trace, but a result with the records: hatched
    ax = plot.timeline(part, r, locations=[0, 1]).axes[0]
    assert boxes(collection(ax, "waits:mpi_latesender")) == [(0.0, 1.0, 1.0), (1.25, 2.0, 1.0)]


def test_wait_intervals_select_locations_and_window(three):
    # the instances of the fixture (see above): rank 1's Late Senders [0, 1]
    # and [1.25, 2] (partners 0 and 2), rank 0's Wait at Finalize [1, 2]
    # (partner: the last to enter, rank 1, the first of ranks 1 and 2)
    trace, r = three
    w = plot.wait_intervals(trace)
    got = sorted((int(x["location"]), str(x["metric"]), float(x["start"]), float(x["end"]), int(x["partner"]))
                 for x in w)
    assert got == [(0, "mpi_finalize_wait", 1.0, 2.0, 1), (1, "mpi_latesender", 0.0, 1.0, 0),
                   (1, "mpi_latesender", 1.25, 2.0, 2)]
    assert np.array_equal(w, trace.analyze(wait_records=True).wait_states)
    w = plot.wait_intervals(trace, locations=[1], window=(1.1, 1.3))
    assert [(float(x["start"]), float(x["end"])) for x in w] == [(1.25, 2.0)]
    assert len(plot.wait_intervals(trace, window=(2.0, 3.0))) == 0  # touching the window is not overlapping


# ---- profiles ---------------------------------------------------------------------------
#
# Delay: rank 0 computes "slow" 2 s and sends to rank 1, which computes
# "fast" 0.5 s, receives (Late Sender 1.5 s, caused by slow) and sends on to
# rank 2, waiting since 0: Late Sender 2 s, of which rank 1's own 0.5 s of
# fast are short-term costs and the 1.5 s it waited itself propagate as
# long-term costs to slow.  So slow: short 1.5, long 1.5; fast: short 0.5.
# Both models agree here (one carrier per interval).


@pytest.fixture(scope="module")
def chain():
    prog = synth.Program(3)
    prog.rank(0).compute("slow", 2.0).send(1)
    prog.rank(1).compute("fast", 0.5).recv(0).send(2)
    prog.rank(2).recv(1)
    trace = prog.run()
    return {m: trace.analyze(delay_model=m) for m in ("proportional", "wait-first")}


def bar_widths(ax, gid):
    return [p.get_width() for p in ax.patches if p.get_gid() == gid]


def test_delay_profile_two_models(chain, tmp_path):
    fig = plot.delay_profile(chain, top=5)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["synthetic/main/slow", "synthetic/main/fast"]
    for model in chain:
        assert bar_widths(ax, f"short:{model}") == pytest.approx([1.5, 0.5])
        assert bar_widths(ax, f"long:{model}") == pytest.approx([1.5, 0.0])
    # stacked: long-term starts where short-term ends
    longs = [p for p in ax.patches if p.get_gid() == "long:proportional"]
    assert [p.get_x() for p in longs] == pytest.approx([1.5, 0.5])
    assert png_colours(fig, tmp_path / "delay.png") > 5
    one = plot.delay_profile(chain["wait-first"], top=1).axes[0]
    assert [t.get_text() for t in one.get_yticklabels()] == ["synthetic/main/slow"]
    with pytest.raises(ValueError, match="delay_model"):
        plot.delay_profile(chain["proportional"].trace.analyze())  # no delay analysis


# Critical path: 4 ranks, 5 iterations of work + barrier, rank p works
# 1 + 0.5 p seconds.  The path runs through rank 3 every time: 12.5 s of
# work on it against an average of 5 x 1.75 = 8.75 s per process, an
# imbalance of 3.75 s.


def test_critical_path_profile(tmp_path):
    prog = synth.Program(4)
    for p in range(4):
        for _ in range(5):
            prog.rank(p).compute("work", 1.0 + 0.5 * p).barrier()
    r = prog.run().analyze(critical_path=True)
    fig = plot.critical_path_profile(r, top=3)
    ax = fig.axes[0]
    assert ax.get_yticklabels()[0].get_text() == "synthetic/main/work"
    assert bar_widths(ax, "critical_path")[0] == pytest.approx(8.75)  # the part up to the average
    (imb, *_) = [p for p in ax.patches if p.get_gid() == "imbalance"]
    assert imb.get_width() == pytest.approx(3.75) and imb.get_x() == pytest.approx(8.75)
    assert imb.get_hatch() == "///"
    assert bar_widths(ax, "average")[0] == pytest.approx(8.75)
    np.testing.assert_allclose(plot.activity_average(r)[r.callpath_index("main/work")], 8.75)
    assert png_colours(fig, tmp_path / "cp.png") > 5
    with pytest.raises(ValueError, match="critical_path=True"):
        plot.critical_path_profile(prog.run().analyze())


def test_new_figures_stay_out_of_pyplot_and_render_for_jupyter(three):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = plot.timeline(*three)
    assert plt.get_fignums() == before
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- the demo's pictures: window, title, colours, critical path, share of run time ----------


@pytest.fixture(scope="module")
def pingpong_result():
    from waitscope.examples import PING_PONG

    trace = waitscope.open(PING_PONG)
    return trace, trace.analyze(delay_model="proportional", critical_path=True)


def test_default_window_skips_a_dominating_mpi_init(pingpong_result, three):
    trace, r = pingpong_result
    init = r.callpath_index("MPI_Init")
    leave = min(float(trace.events(loc).time[(trace.events(loc).kind == 2) & (trace.events(loc).callpath == init)][0])
                for loc in range(trace.n_locations))
    end = max(float(trace.events(loc).time[-1]) for loc in range(trace.n_locations))
    assert leave > 0.9 * end  # MPI_Init takes 97 % of this run
    t0, t1 = plot.default_window(trace)
    assert t1 == end and leave - 0.03 * (end - leave) < t0 < leave
    ax = plot.timeline(trace, r).axes[0]
    assert ax.get_xlim() == (t0, t1)
    assert ax.get_title() == (f"timeline of scorep-ping-pong: {t0:.4g} to {t1:.4g} s "
                              f"(after MPI_Init; the run: 0 to {end:.4g} s)")
    # the window shows every message
    msgs = collection(ax, "messages").get_segments()
    assert len(msgs) == r.total("comms_send") == 16
    assert plot.timeline(trace, r, window="all").axes[0].get_xlim() == (0.0, end)
    with pytest.raises(ValueError, match="'all'"):
        plot.timeline(trace, window="most")
    # MPI_Init short (synthetic program): the whole run, titled so
    trace3, r3 = three
    assert plot.default_window(trace3) == (0.0, 2.0)
    assert "(the whole run)" in plot.timeline(trace3, r3).axes[0].get_title()
    assert plot.timeline(trace3, r3, title="").axes[0].get_title() == ""


def test_timeline_colours_mpi_calls_apart_and_keeps_the_bars_visible(pingpong_result):
    trace, r = pingpong_result
    ax = plot.timeline(trace, r).axes[0]
    regions = collection(ax, "regions")
    # one colour per region, MPI calls with clearly different colours
    legend = {t.get_text(): h for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    mpi = [name for name in legend if name.startswith("MPI_")]
    assert {"MPI_Send", "MPI_Recv", "MPI_Init"} <= set(mpi)
    rgb = np.array([matplotlib.colors.to_rgb(legend[name].get_facecolor()) for name in mpi])
    palette = np.array([matplotlib.colors.to_rgb(c) for c in plot.MPI_COLORS])
    assert min(np.abs(a - b).sum() for i, a in enumerate(palette) for b in palette[i + 1:]) > 0.4
    for i in range(len(rgb)):
        for j in range(i + 1, len(rgb)):
            assert np.abs(rgb[i] - rgb[j]).sum() > 0.4, (mpi[i], mpi[j])
    # the critical path runs outside every bar: above its row's bar, within the gap
    (line,) = [ln for ln in ax.lines if ln.get_gid() == "critical_path"]
    y = np.asarray(line.get_ydata(), dtype=float)
    x = np.asarray(line.get_xdata(), dtype=float)
    horizontal = [i for i in range(len(y) - 1) if y[i] == y[i + 1] and x[i + 1] > x[i]]
    assert horizontal
    for i in horizontal:
        row = round(y[i] + plot.CRITICAL_PATH_OFFSET)
        assert row - 0.5 < y[i] < row - plot.TIMELINE_BAR  # between the gap's middle and the bar's top
    bars = regions.get_paths()
    tops = {round(float(p.vertices[:, 1].min()), 6) for p in bars}
    assert tops == {round(-plot.TIMELINE_BAR, 6), round(1 - plot.TIMELINE_BAR, 6)}


def test_heatmap_as_share_of_run_time(pingpong_result, tmp_path):
    trace, r = pingpong_result
    run = trace.clock["length"] / trace.clock["resolution"]
    assert plot.run_length(trace) == run
    fig = plot.heatmaps(r, ["mpi_latesender", "mpi_latereceiver", "delay_short", "delay_long"], share=True)
    ims = images(fig)
    # one scale from 0 to the largest share of the four panels: fitted to the data (all under 1 %)
    top = max(float(im.get_array().max()) for im in ims)
    assert {(im.norm.vmin, im.norm.vmax) for im in ims} == {(0.0, top)}
    per_location = [r.by_location("mpi_latesender"), r.by_location("mpi_latereceiver"),
                    np.asarray(r.delay_short).sum(axis=0), np.asarray(r.delay_long).sum(axis=0)]
    assert top == pytest.approx(max(v.max() for v in per_location) / run, rel=1e-12) and top < 0.01
    lr = ims[1].get_array()
    np.testing.assert_allclose(lr[0], r.by_location("mpi_latereceiver") / run, rtol=1e-12)
    assert lr.max() < 0.01
    # the trace's topology names the axes; each cell shows its share
    assert {ax.get_xlabel() for ax in fig.axes if ax.images} == {"Process"}
    texts = [t.get_text() for t in fig.axes[1].texts if t.get_gid() == "value"]
    assert texts == [plot.format_value(v / run, "sec", share=True) for v in r.by_location("mpi_latereceiver")]
    assert texts[0] == "0.3 %"
    (bar,) = colorbars(fig)
    assert "% of the run time" in bar.get_ylabel()
    assert png_colours(fig, tmp_path / "share.png") > 5
    # a larger share raises the top of the scale; counts cannot be shares
    single = plot.heatmap(r, "mpi", share=True)
    top = r.by_location("mpi").max() / run
    assert images(single)[0].norm.vmax == pytest.approx(top) and top > 0.9
    assert images(plot.heatmap(r, "mpi_latereceiver", share=True, vmax=0.1))[0].norm.vmax == 0.1
    with pytest.raises(ValueError, match="not times"):
        plot.heatmap(r, "visits", share=True)


@pytest.mark.parametrize("value,unit,share,text", [
    (0.003, "sec", True, "0.3 %"), (0.00062, "sec", False, "620 \u00b5s"), (1.5, "sec", False, "1.5 s"),
    (0.0, "sec", False, "0"), (16711680.0, "bytes", False, "16.7 MB"), (42.0, "occ", False, "42"),
    (4.44e-16, "sec", False, "0"), (4e-18, "sec", True, "0"),  # rounding of sums, not "4.44e-07 ns"
    (4.3, "sec", True, "430 %"), (0.39, "sec", True, "39 %"),  # not "4.3e+02 %"
])
def test_format_value(value, unit, share, text):
    assert plot.format_value(value, unit, share) == text


# ---- pictures of every trace: no topology, dims everywhere, one colour per region, zoomed out ------


def test_whatif_without_topology_and_with_dims(tmp_path):
    # rank 3 works 2 s, the others 1 s, then a barrier; balancing "work" removes the waiting
    prog = synth.Program(4)
    for p in range(4):
        prog.rank(p).compute("work", 2.0 if p == 3 else 1.0).barrier()
    trace = prog.run(latency=0.0)
    before = trace.analyze()
    after = trace.simulate(balance="work", progress=False).analyze()
    fig = plot.whatif(before, after, "mpi_barrier_wait", ["MPI_Barrier"])
    recorded, simulated = (im.get_array() for im in images(fig))
    # ranks in a row: ranks 0-2 wait 1 s for rank 3; balanced (1.25 s each) nobody waits
    assert recorded.shape == (1, 4) and recorded[0].tolist() == pytest.approx([1.0, 1.0, 1.0, 0.0])
    assert simulated[0].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0], abs=1e-9)
    assert fig.axes[0].get_xlabel() == plot.STRIP_LABEL
    fig = plot.whatif(before, after, "mpi_barrier_wait", ["MPI_Barrier"], dims=(2, 2))
    recorded = images(fig)[0].get_array()
    assert recorded.shape == (2, 2)
    np.testing.assert_allclose(recorded, [[1.0, 1.0], [1.0, 0.0]], atol=1e-9)  # rank 3 at (1, 1)
    assert list(fig.axes[0].get_xticks()) == [0, 1] and list(fig.axes[0].get_yticks()) == [0, 1]
    assert png_colours(fig, tmp_path / "whatif.png") > 5


def test_one_colour_per_region_however_many():
    # 17 MPI functions (with MPI_Init and MPI_Finalize) and 20 user regions: more than either palette has
    prog = synth.Program(2)
    for rank in prog.ranks():
        for k in range(20):
            rank.compute(f"f{k}", 0.01)
        rank.barrier().bcast().scatter().reduce().gather().allreduce().alltoall().allgather().scan()
    a, b = prog.rank(0), prog.rank(1)
    a.send(1).ssend(1).wait(a.isend(1))
    b.recv(0).recv(0).waitall([b.irecv(0)])
    trace = prog.run(latency=0.0)
    colours = plot._region_colors(trace)
    used = list(dict.fromkeys(int(r) for r in trace.callpath_region))  # in the order of the first call paths
    regions = trace.regions
    mpi = [r for r in used if regions[r].is_mpi]
    other = [r for r in used if not regions[r].is_mpi]
    assert len(mpi) > len(plot.MPI_COLORS) and len(other) > len(plot.OTHER_COLORS)
    rgb = colours[used, :3]
    for i in range(len(used)):
        for j in range(i + 1, len(used)):
            assert np.abs(rgb[i] - rgb[j]).sum() > 0.15, (regions[used[i]].name, regions[used[j]].name)
    # the palettes come first, in the order of the first call paths
    assert to_hex(colours[mpi[0]]) == to_hex(plot.MPI_COLORS[0])
    assert to_hex(colours[other[0]]) == to_hex(plot.OTHER_COLORS[0])


def test_critical_path_profile_leaves_out_invisible_rows():
    # rank 1 works 10 s in "big" and 5 ms in "tiny" (0.05 % of the path), then both meet in a barrier
    prog = synth.Program(2)
    prog.rank(0).compute("big", 1.0).barrier()
    prog.rank(1).compute("big", 10.0).compute("tiny", 0.005).barrier()
    r = prog.run(latency=0.0).analyze(critical_path=True)
    assert r.critical_path.by_callpath[r.callpath_index("tiny")] == pytest.approx(0.005)
    ax = plot.critical_path_profile(r).axes[0]
    assert [t.get_text().rsplit("/", 1)[-1] for t in ax.get_yticklabels()] == ["big"]
    assert ax.get_title() == "critical path: 10.005 s (1 call path under 0.1 % of it left out)"


def _ping_pong(n: int) -> synth.Program:
    """Two ranks take turns: 1 ms of work, then a message to the other (the path moves every time)."""
    prog = synth.Program(2)
    a, b = prog.rank(0), prog.rank(1)
    for k in range(n):
        a.compute("work", 1e-3).send(1, tag=k)
        b.recv(0, tag=k).compute("work", 1e-3).send(0, tag=k)
        a.recv(1, tag=k)
    return prog


def test_timeline_thins_the_critical_path_when_zoomed_out(tmp_path):
    trace = _ping_pong(300).run(latency=1e-5)
    r = trace.analyze(critical_path=True, wait_records=True)
    seg = r.critical_path.segments
    assert np.count_nonzero(seg["location"][1:] != seg["location"][:-1]) >= 599  # a move per message
    fig = plot.timeline(trace, r, window="all")
    ax = fig.axes[0]
    (line,) = [ln for ln in ax.lines if ln.get_gid() == "critical_path"]
    x = np.asarray(line.get_xdata(), dtype=float)
    y = np.asarray(line.get_ydata(), dtype=float)
    assert line.get_linewidth() == 1.0
    # no move between the rows is drawn: every piece between two breaks stays in one row
    pieces = np.split(y, np.flatnonzero(np.isnan(y)))
    assert len(pieces) >= 600 and all(len(set(p[~np.isnan(p)])) == 1 for p in pieces)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "critical path (its moves left out)" in legend
    assert png_colours(fig, tmp_path / "zoomed-out.png") > 5
    # zoomed in on three exchanges the moves are drawn, thick
    (line,) = [ln for ln in plot.timeline(trace, r, window=(0.0, 0.006)).axes[0].lines
               if ln.get_gid() == "critical_path"]
    assert line.get_linewidth() == 2.0 and not np.isnan(np.asarray(line.get_xdata(), dtype=float)).any()
