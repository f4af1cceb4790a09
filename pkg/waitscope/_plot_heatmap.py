"""Topology heatmaps of :mod:`waitscope.plot`: a metric per location on the Cartesian process topology."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Sequence, Tuple, Union

import numpy as np

from ._plot_base import DEFAULT_CMAP, GRID_BAD_COLOR, Axes, Figure, _figure_of, _new_figure, _short, matplotlib, mcolors

from .result import AnalysisResult, CallpathKey, Metric

if TYPE_CHECKING:  # pragma: no cover
    from .trace import CartTopology, Trace

Coords = Union[np.ndarray, Sequence[Sequence[int]], Callable[[int], Sequence[int]]]
Panel = Union[str, Tuple[str, Any], Tuple[AnalysisResult, str, Any]]

DELAY_ALIASES = {
    "delay_short": Metric("delay_short", "Short-term delay costs", "sec", "delay",
                          "Short-term delay costs of all wait-state classes (AnalysisResult.delay_short)."),
    "delay_long": Metric("delay_long", "Long-term delay costs", "sec", "delay",
                         "Long-term delay costs of all wait-state classes (AnalysisResult.delay_long)."),
}
"""Metric names the plots accept besides the result's metrics."""


def _metric_info(result: AnalysisResult, metric: str) -> Metric:
    if metric in DELAY_ALIASES and metric not in result.metric_ids:
        return DELAY_ALIASES[metric]
    return result.metric(metric)  # KeyError naming the metrics the result has


OPENMP_TITLES = {
    "omp_management": "OpenMP management",
    "omp_synchronization": "OpenMP synchronization",
    "omp_barrier": "OpenMP barrier",
    "omp_ebarrier": "OpenMP explicit barrier",
    "omp_ebarrier_wait": "OpenMP wait at explicit barrier",
    "omp_ibarrier": "OpenMP implicit barrier",
    "omp_ibarrier_wait": "OpenMP wait at implicit barrier",
    "omp_critical": "OpenMP critical",
    "omp_lock_contention_critical": "OpenMP critical contention",
    "omp_lock_api": "OpenMP lock API",
    "omp_lock_contention_api": "OpenMP lock API contention",
    "omp_idle_threads": "OpenMP idle threads",
    "omp_limited_parallelism": "OpenMP limited parallelism",
    "delay_omp": "OpenMP delay costs",
    "delay_ompbarrier_aggregate": "OpenMP barrier",
    "delay_ompidle_aggregate": "OpenMP idle threads",
}
"""Titles of the OpenMP metrics whose display names (Scalasca's: "Wait at Barrier",
"Management", "Lock Contention") are also those of MPI metrics (as Scalasca's own report
names them: "OMP Wait at Implicit Barrier", ...)."""


def metric_title(result: AnalysisResult, metric: str) -> str:
    """A metric's name as the plots title it: its display name, OpenMP metrics that share it with
    MPI metrics told apart (:data:`OPENMP_TITLES`), delay metrics named "Short-term" or "Long-term"
    with their class ("Late Sender: short-term delay costs")."""
    info = _metric_info(result, metric)
    if info.name in ("Short-term", "Long-term") and info.parent in result.metric_ids:
        return f"{metric_title(result, info.parent)}: {info.name.lower()} delay costs"
    return OPENMP_TITLES.get(info.id, info.name)


def _metric_title(result: AnalysisResult, info: Metric) -> str:
    """:func:`metric_title` of a :class:`Metric`."""
    if info.id in DELAY_ALIASES and info.id not in result.metric_ids:
        return info.name
    return metric_title(result, info.id)


def _matrix(result: AnalysisResult, metric: str) -> np.ndarray:
    """[call path, location] values of a metric (or of a delay alias)."""
    if metric == "delay_short" and metric not in result.metric_ids:
        return np.asarray(result.delay_short, dtype=np.float64)
    if metric == "delay_long" and metric not in result.metric_ids:
        return np.asarray(result.delay_long, dtype=np.float64)
    return np.asarray(result.get(metric), dtype=np.float64)


def _subtree_sum(values: np.ndarray, parent: np.ndarray) -> np.ndarray:
    out = np.array(values, dtype=np.float64)
    for cp in range(len(parent) - 1, -1, -1):  # children have larger indices than their parents
        p = int(parent[cp])
        if p >= 0:
            out[p] += out[cp]
    return out


def location_values(result: AnalysisResult, metric: str, callpath: CallpathKey | None = None,
                    inclusive: bool = True) -> np.ndarray:
    """One value per location: the metric in `callpath` (its subtree if `inclusive`), or over all call paths."""
    values = _matrix(result, metric)
    if callpath is None:
        return values.sum(axis=0)
    cp = result.callpath_index(callpath)
    if inclusive:
        return _subtree_sum(values, result.callpath_parent)[cp]
    return values[cp]


STRIP_LABEL = "rank\n(the trace has no Cartesian topology: dims= places the ranks on a grid)"
"""The axis label of a heatmap that shows the ranks in a row, for a trace without a topology."""


def _trace_topology(result: AnalysisResult) -> "CartTopology | None":
    """The Cartesian topology of the result's trace (None without one, or without a trace)."""
    try:
        trace = result.trace
    except AttributeError:  # profile estimates
        return None
    return trace.cart_topology


def _placement(result: AnalysisResult, topology: "CartTopology | None", dims: Sequence[int] | None,
               coords: Coords | None, transpose: bool = False) -> tuple[np.ndarray, tuple[int, ...], tuple[str, ...]]:
    """Coordinates per location (-1: none), the grid's dimensions and their names (x, y, z order)."""
    n = result.n_locations
    ranks = np.asarray(result.location_ranks, dtype=np.int64)
    names: tuple[str, ...] = ()
    if coords is not None:
        if callable(coords):
            rows = [tuple(coords(int(r))) if r >= 0 else None for r in ranks]
            nd = max((len(r) for r in rows if r is not None), default=0)
            xy = np.array([r if r is not None else (-1,) * nd for r in rows], dtype=np.int64).reshape(n, nd)
        else:
            xy = np.asarray(coords, dtype=np.int64)
            if xy.ndim != 2 or xy.shape[0] != n:
                raise ValueError(f"coords must have one row per location, shape ({n}, ndim); got {xy.shape}")
        grid = tuple(int(d) for d in dims) if dims is not None else tuple(int(d) + 1 for d in xy.max(axis=0))
        if len(grid) != xy.shape[1]:
            raise ValueError(f"coords have {xy.shape[1]} dimensions, dims {len(grid)}")
    elif dims is not None:
        grid = tuple(int(d) for d in dims)
        if not grid or min(grid) < 1:
            raise ValueError(f"dims must be positive sizes, not {dims!r}")
        xy = np.full((n, len(grid)), -1, dtype=np.int64)
        ok = (ranks >= 0) & (ranks < math.prod(grid))
        dropped = np.unique(ranks[(ranks >= 0) & ~ok])
        if len(dropped):
            raise ValueError(f"dims={tuple(grid)} hold {math.prod(grid)} ranks, but the trace has "
                             f"{int(ranks.max()) + 1}: ranks {', '.join(str(int(r)) for r in dropped[:5])}"
                             f"{' ...' if len(dropped) > 5 else ''} would not be shown; pass dims whose product "
                             f"is at least {int(ranks.max()) + 1}")
        if ok.any():  # row-major, the last dimension fastest (as MPI_Cart_create)
            xy[ok] = np.stack(np.unravel_index(ranks[ok], grid), axis=1)
    else:
        topo = topology if topology is not None else _trace_topology(result)
        if topo is None:  # a strip of the ranks in a row (threads of a rank share its cell)
            grid = (max(int(ranks.max()) + 1, 1) if len(ranks) else 1,)
            xy = ranks.reshape(n, 1).copy()
            names = (STRIP_LABEL,)
        else:
            grid = tuple(int(d) for d in topo.dims)
            xy = topo.location_coords(n)
            names = tuple(topo.dim_names)
            # an application topology places the MPI locations only: a process's other
            # threads share its cell (Score-P's "Process x Thread" places every thread)
            placed = np.all(xy >= 0, axis=1)
            for loc in np.flatnonzero(~placed):
                same = np.flatnonzero(placed & (ranks == ranks[loc]))
                if ranks[loc] >= 0 and len(same):
                    xy[loc] = xy[same[0]]
    if not 1 <= len(grid) <= 3:
        raise ValueError(f"a topology grid shows 1 to 3 dimensions, not {len(grid)}")
    bad = np.any((xy >= np.asarray(grid)) & (xy >= 0), axis=1)
    if bad.any():
        loc = int(np.flatnonzero(bad)[0])
        raise ValueError(f"location {loc} has coordinates {tuple(xy[loc])} outside the grid {grid}")
    if len(names) != len(grid) or not all(names):
        names = tuple(f"dim {i}" for i in range(len(grid)))
    if transpose and len(grid) > 1:  # coordinate 0 vertical, 1 horizontal
        swap = [1, 0] + list(range(2, len(grid)))
        xy, grid, names = xy[:, swap], tuple(grid[i] for i in swap), tuple(names[i] for i in swap)
    return xy, grid, names


def topology_grid(result: AnalysisResult, metric: str, callpath: CallpathKey | None = None, *,
                  inclusive: bool = True, topology: "CartTopology | None" = None,
                  dims: Sequence[int] | None = None, coords: Coords | None = None,
                  transpose: bool = False) -> np.ma.MaskedArray:
    """The values :func:`heatmap` shows, as a masked array of shape (planes, dims[1], dims[0]).

    ``grid[z, y, x]`` is the value of the location at coordinates (x, y, z)
    ((y, x, z) with `transpose`; a 2D topology has one plane, a 1D one
    also one row); locations sharing a cell (threads of a process) are
    summed; cells without a location are masked.  Arguments as for
    :func:`heatmap`.
    """
    values = location_values(result, metric, callpath, inclusive)
    xy, grid, _ = _placement(result, topology, dims, coords, transpose)
    return _grid(values, xy, grid)


def thread_topology(result: AnalysisResult) -> "CartTopology | None":
    """Score-P's "Process x Thread" topology of the result's trace (a location per process and
    thread: the processes along coordinate 0, the threads along coordinate 1), or None.

    :func:`heatmap` uses it by default when the trace defines no application
    topology; pass it as ``topology=`` to see a hybrid run's threads on a trace
    that also has an application topology."""
    try:
        tops = result.trace.cart_topologies
    except AttributeError:  # profile estimates
        return None
    found = [t for t in tops if t.name.startswith("Process x Thread")]
    return found[0] if found else None


def _grid(values: np.ndarray, xy: np.ndarray, grid: tuple[int, ...]) -> np.ma.MaskedArray:
    nx = grid[0]
    ny = grid[1] if len(grid) > 1 else 1
    nz = grid[2] if len(grid) > 2 else 1
    full = np.zeros((nz, ny, nx))
    count = np.zeros((nz, ny, nx), dtype=np.int64)
    ok = np.all(xy >= 0, axis=1)
    x = xy[ok, 0]
    y = xy[ok, 1] if len(grid) > 1 else np.zeros(int(ok.sum()), dtype=np.int64)
    z = xy[ok, 2] if len(grid) > 2 else np.zeros(int(ok.sum()), dtype=np.int64)
    np.add.at(full, (z, y, x), values[ok])
    np.add.at(count, (z, y, x), 1)
    return np.ma.masked_array(full, mask=count == 0)


# ---- heatmaps -------------------------------------------------------------------------------


def _cmap(cmap: str | mcolors.Colormap) -> mcolors.Colormap:
    base = matplotlib.colormaps[cmap] if isinstance(cmap, str) else cmap
    return base.with_extremes(bad=GRID_BAD_COLOR)


def _norm(grids: Sequence[np.ma.MaskedArray], vmin: float | None, vmax: float | None) -> mcolors.Normalize:
    data = [g.compressed() for g in grids]
    data = [d for d in data if d.size]
    lo = float(min(d.min() for d in data)) if data else 0.0
    hi = float(max(d.max() for d in data)) if data else 1.0
    return mcolors.Normalize(vmin=lo if vmin is None else vmin, vmax=hi if vmax is None else vmax)




def run_length(trace: "Trace") -> float:
    """Wall-clock length of the run in seconds (:attr:`waitscope.Trace.run_length`)."""
    return trace.run_length


def _share_norm(grids: Sequence[np.ma.MaskedArray], vmin: float | None, vmax: float | None) -> mcolors.Normalize:
    """0 to the largest share shown (fitted to the data; the colour bar's percentages say how much it is)."""
    data = [g.compressed() for g in grids if g.compressed().size]
    hi = max((float(d.max()) for d in data), default=0.0)
    return mcolors.Normalize(vmin=0.0 if vmin is None else vmin, vmax=(hi if hi > 0 else 1e-3) if vmax is None else vmax)


def _share_colorbar(fig: Figure, norm: mcolors.Normalize, cmap: mcolors.Colormap, axes: Any, what: str,
                    run: float) -> None:
    from matplotlib.cm import ScalarMappable
    from matplotlib.ticker import PercentFormatter

    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes,
                       label=f"{what}, % of the run time ({run:.3g} s)")
    bar.ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))


def _check_share(infos: Sequence[Metric]) -> None:
    bad = [m.id for m in infos if m.unit != "sec"]
    if bad:
        raise ValueError(f"share=True shows times as shares of the run time; {', '.join(bad)} are not times")


def _callpath_label(result: AnalysisResult, callpath: CallpathKey | None, inclusive: bool) -> str:
    if callpath is None:
        return "all call paths"
    name = result.callpath_names[result.callpath_index(callpath)]
    return _short(name) + (" (incl.)" if inclusive else " (excl.)")


def _parse_panels(result: AnalysisResult | None, panels: Sequence[Panel]) -> list[tuple[AnalysisResult, str, Any]]:
    out = []
    for p in panels:
        if isinstance(p, str):
            r, metric, cp = result, p, None
        elif len(p) == 3:
            r, metric, cp = p  # type: ignore[misc]
        elif len(p) == 2 and isinstance(p[0], AnalysisResult):
            r, metric, cp = p[0], p[1], None
        elif len(p) == 2:
            r, (metric, cp) = result, p  # type: ignore[misc]
        else:
            raise ValueError(f"a panel is metric, (metric, callpath), (result, metric) or (result, metric, callpath), "
                             f"not {p!r}")
        if not isinstance(r, AnalysisResult):
            raise ValueError(f"panel {p!r} names no result: pass result= or (result, metric, callpath)")
        out.append((r, metric, cp))
    if not out:
        raise ValueError("no panels to draw")
    return out


def _flat_axes(axes: Any, n: int, what: str) -> list[Axes]:
    flat = [axes] if isinstance(axes, Axes) else list(np.ravel(np.asarray(axes, dtype=object)))
    if len(flat) != n:
        raise ValueError(f"{what}: {n} Axes are needed, {len(flat)} given")
    return flat


ANNOTATE_CELLS = 32
"""Heatmap planes with at most this many cells write each cell's value into it by default."""


def format_value(value: float, unit: str, share: bool = False) -> str:
    """A short label for a value: ``0.31 %`` (shares), ``620 µs``, ``1.2 s``, ``42``, ``16.7 MB``."""
    if share:
        if abs(value) < 1e-12:
            return "0"
        percent = 100 * value
        return f"{percent:.2g} %" if abs(percent) < 100 else f"{percent:.0f} %"
    if unit == "sec":
        magnitude = abs(value)
        if magnitude < 1e-12:  # rounding of sums, far below any clock's resolution
            return "0"
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "\u00b5s"), (1e-9, "ns")):
            if magnitude >= scale or scale == 1e-9:
                return f"{value / scale:.3g} {suffix}"
    if unit == "bytes":
        for scale, suffix in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {suffix}"
        return f"{value:.0f} B"
    return f"{value:.3g}"


def _annotate(ax: Axes, plane: np.ma.MaskedArray, cmap: mcolors.Colormap, norm: mcolors.Normalize, unit: str,
              share: bool) -> None:
    for (y, x), value in np.ndenumerate(plane.filled(np.nan)):
        if math.isnan(value):
            continue
        r, g, b, _ = cmap(norm(value))
        dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
        ax.text(x, y, format_value(float(value), unit, share), ha="center", va="center", fontsize="small",
                color="white" if dark else "black", gid="value")


def integer_ticks(n: int, most: int = 8) -> list[int]:
    """Tick positions for `n` cells: cell indices 0, step, 2 step, ... (at most `most` of them)."""
    step = max(1, math.ceil(n / most))
    return list(range(0, max(n, 1), step))


def _draw_plane(ax: Axes, plane: np.ma.MaskedArray, cmap: mcolors.Colormap, norm: mcolors.Normalize,
                names: tuple[str, ...], annotate: bool | None = None, unit: str = "", share: bool = False) -> Any:
    ny, nx = plane.shape
    strip = ny == 1 and nx > 16  # a long row of cells: fill the panel's width
    im = ax.imshow(plane, origin="upper", cmap=cmap, norm=norm, interpolation="nearest",
                   aspect="auto" if strip else "equal")
    if annotate or (annotate is None and ny * nx <= ANNOTATE_CELLS):
        _annotate(ax, plane, cmap, norm, unit, share)
    ax.set_xticks(integer_ticks(nx, 16 if ny == 1 else 8))  # cells sit at integer positions
    ax.set_yticks([] if ny == 1 else integer_ticks(ny))
    ax.set_xlabel(names[0], fontsize="small" if names[0] == STRIP_LABEL else None)
    ax.set_ylabel(names[1] if len(names) > 1 else "")
    return im


def heatmaps(result: AnalysisResult | None = None, panels: Sequence[Panel] = (), *, inclusive: bool = True,
             topology: "CartTopology | None" = None, dims: Sequence[int] | None = None,
             coords: Coords | None = None, transpose: bool = False, axes: Any = None, vmin: float | None = None,
             vmax: float | None = None, cmap: str | mcolors.Colormap = DEFAULT_CMAP,
             titles: Sequence[str] | None = None, shared_scale: bool = True, share: bool = False,
             annotate: bool | None = None) -> Figure:
    """Several topology heatmaps side by side, by default on ONE colour scale.

    `panels` lists what to show: ``metric``, ``(metric, callpath)`` (of
    `result`), ``(result, metric)`` or ``(result, metric, callpath)``, so
    that panels from different results (e.g. the two delay models) can be
    compared, as in Figs. 5, 8 and 9 of Böhme et al. (ICPP 2010): waiting time next to the
    short- and long-term delay costs.  The placement arguments apply to every panel
    (see :func:`heatmap`).

    With ``shared_scale`` (the default) all panels use one
    :class:`~matplotlib.colors.Normalize` from the smallest to the largest
    value of all of them (or `vmin`/`vmax`) and one colour bar; the panels
    must then have the same unit.  Otherwise each panel gets its own scale
    and colour bar.  `transpose`, `share` and `annotate` as for :func:`heatmap`.

    Panels are columns; a 3D topology adds one row per plane.  `axes`, if
    given, holds one Axes per panel and plane, panel by panel (for panel p
    and plane z: ``axes[p * planes + z]``).  Returns the Figure.
    """
    specs = _parse_panels(result, panels)
    grids, infos = [], []
    names: tuple[str, ...] = ()
    runs = []
    for r, metric, cp in specs:
        infos.append(_metric_info(r, metric))
        xy, grid, n = _placement(r, topology, dims, coords, transpose)
        names = names or n
        values = location_values(r, metric, cp, inclusive)
        if share:
            runs.append(r.run_length)
            values = values / runs[-1]
        grids.append(_grid(values, xy, grid))
    if share:
        _check_share(infos)
    shapes = {g.shape for g in grids}
    if len(shapes) != 1:
        raise ValueError(f"the panels lie on different grids: {sorted(shapes)}")
    units = {m.unit for m in infos}
    if shared_scale and len(units) > 1:
        raise ValueError(f"panels with different units ({', '.join(sorted(units))}) cannot share a colour scale: "
                         "pass shared_scale=False")
    nz, ny, nx = grids[0].shape
    n_panels = len(specs)
    if axes is None:
        cell = 3.4 if ny > 1 else min(max(3.4, 0.55 * nx), 8.0)
        height = min(max(cell * ny / nx, 1.4), 6.0)
        fig = _new_figure((cell * n_panels + 1.2, height * nz + 0.9))
        grid_axes = fig.subplots(nz, n_panels, squeeze=False)
        flat = [grid_axes[z, p] for p in range(n_panels) for z in range(nz)]
    else:
        flat = _flat_axes(axes, n_panels * nz, "heatmaps")
        fig = _figure_of(flat[0])
    cm = _cmap(cmap)
    norm_of = _share_norm if share else _norm
    shared = norm_of(grids, vmin, vmax) if shared_scale else None
    many_results = len({id(r) for r, _, _ in specs}) > 1
    for p, ((r, metric, cp), g, info) in enumerate(zip(specs, grids, infos)):
        norm = shared if shared is not None else norm_of([g], vmin, vmax)
        panel_axes = flat[p * nz:(p + 1) * nz]
        image = None
        for z, ax in enumerate(panel_axes):
            image = _draw_plane(ax, g[z], cm, norm, names, annotate, info.unit, share)
            if nz > 1:
                ax.set_title(f"{names[2]} = {z}", fontsize="small")
        if titles is not None:
            title = titles[p]
        else:
            model = f"{r.delay_model}, " if many_results and r.delay_model else ""
            title = f"{_metric_title(r, info)}\n{model}{_callpath_label(r, cp, inclusive)}"
        panel_axes[0].set_title(title if nz == 1 else f"{title}\n{names[2]} = 0", fontsize="small")
        if shared is None and image is not None:
            if share:
                _share_colorbar(fig, norm, cm, panel_axes, "time", runs[p])
            else:
                fig.colorbar(image, ax=panel_axes, label=info.unit)
    if shared is not None:
        from matplotlib.cm import ScalarMappable

        if share:
            _share_colorbar(fig, shared, cm, flat, "time", max(runs))
        else:
            fig.colorbar(ScalarMappable(norm=shared, cmap=cm), ax=flat, label=infos[0].unit)
    return fig


def heatmap(result: AnalysisResult, metric: str, callpath: CallpathKey | None = None, *, inclusive: bool = True,
            topology: "CartTopology | None" = None, dims: Sequence[int] | None = None,
            coords: Coords | None = None, transpose: bool = False, ax: Axes | Sequence[Axes] | None = None,
            vmin: float | None = None, vmax: float | None = None, cmap: str | mcolors.Colormap = DEFAULT_CMAP,
            title: str | None = None, share: bool = False, annotate: bool | None = None) -> Figure:
    """A metric per location on the Cartesian process topology (Cube's topology view).

    The value of a location is `metric` in `callpath` (a name such as
    ``"main/MPI_Recv"`` or an index) including the call paths below it
    when `inclusive` (the default; ``inclusive=False``: that call path
    alone), or summed over all call paths when `callpath` is None.  Besides
    the result's metrics, ``"delay_short"`` and ``"delay_long"`` show the
    short- and long-term delay costs of all wait-state classes.  An unknown
    metric raises KeyError, a delay metric of a result without delay
    analysis ValueError.

    Placement: the trace's Cartesian topology
    (``result.trace.cart_topology``, or `topology`, e.g. another of
    ``trace.cart_topologies``); `dims` alone places the ranks row-major
    (the last dimension fastest, as MPI_Cart_create); `coords` gives the
    coordinates of every location, as an array of shape (locations, ndim)
    or a function of the rank (its grid is `dims` or the largest
    coordinates + 1).  A trace without a Cartesian topology (most real
    codes) and without `dims` or `coords` shows its ranks in a row, rank 0
    on the left (:data:`STRIP_LABEL` says so on the axis).  Axis ticks sit
    on the cells (integer coordinates).

    Orientation (Cube's): coordinate 0 runs horizontally from the left,
    coordinate 1 vertically from the top; a 3D topology is drawn as one
    panel per value of coordinate 2, all on one colour scale.
    ``transpose=True`` swaps the first two: matrix order, for topologies
    whose coordinates are (row, column) such as ``cart((rows, columns))``.  Cells
    without a location are grey; the colour bar is labelled with the
    metric's unit.  Light colours are low values, dark high ones.

    Colour scale: by default from the smallest to the largest value shown
    (or `vmin`/`vmax`), so that the differences between the locations show.
    ``share=True`` (time metrics only) shows each location's value as a
    share of the run's wall-clock time (:func:`run_length`) on a scale from
    0 to the largest share, with a colour bar in percent, which says how
    much of the run the darkest cell is (``vmax=0.1`` fixes the top at 10 %).

    `annotate` writes each cell's value into it (text artists with gid
    ``"value"``); by default when a plane has at most
    :data:`ANNOTATE_CELLS` cells.

    `ax`: an Axes for a 1D/2D topology, one Axes per plane for a 3D one.
    Returns the Figure; ``fig.axes[i].images[0]`` holds the grid of
    plane i (array ``[y, x]``, see :func:`topology_grid`).
    """
    info = _metric_info(result, metric)
    xy, dims_used, names = _placement(result, topology, dims, coords, transpose)
    values = location_values(result, metric, callpath, inclusive)
    run = result.run_length if share else 1.0
    if share:
        _check_share([info])
        values = values / run
    grid = _grid(values, xy, dims_used)
    nz, ny, nx = grid.shape
    if ax is None:
        ncols = min(nz, 4)
        nrows = math.ceil(nz / ncols)
        cell = (3.6 if ny > 1 else min(max(3.6, 0.55 * nx), 10.0)) if nz == 1 else 2.8
        height = min(max(cell * ny / nx, 1.4), 7.0)
        fig = _new_figure((cell * ncols + 1.2, height * nrows + 0.9))
        flat = list(fig.subplots(nrows, ncols, squeeze=False).ravel())
        for extra in flat[nz:]:
            extra.remove()
        flat = flat[:nz]
    else:
        flat = _flat_axes(ax, nz, "heatmap")
        fig = _figure_of(flat[0])
    cm = _cmap(cmap)
    norm = _share_norm([grid], vmin, vmax) if share else _norm([grid], vmin, vmax)
    for z, a in enumerate(flat):
        _draw_plane(a, grid[z], cm, norm, names, annotate, info.unit, share)
        if nz > 1:
            a.set_title(f"{names[2]} = {z}", fontsize="small")
    name = _metric_title(result, info)
    text = title if title is not None else f"{name}\n{_callpath_label(result, callpath, inclusive)}"
    if nz == 1:
        flat[0].set_title(text)
    else:
        fig.suptitle(text)
    from matplotlib.cm import ScalarMappable

    if share:
        _share_colorbar(fig, norm, cm, flat, name, run)
    else:
        fig.colorbar(ScalarMappable(norm=norm, cmap=cm), ax=flat, label=f"{name} ({info.unit})")
    return fig


