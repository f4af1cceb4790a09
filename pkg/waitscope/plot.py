"""Plots of traces and analysis results (needs matplotlib: ``python -m pip install matplotlib``).

* :func:`heatmap`, :func:`heatmaps`: a metric per location on the Cartesian
  process topology, as Cube's topology view shows it (seed 000, Figs. 5, 8,
  9 and 12); several panels share one colour scale;
* :func:`timeline`: regions per location over time, messages, wait states
  (hatched) and the critical path;
* :func:`delay_profile`: short- and long-term delay costs per call path,
  for one delay model or several side by side;
* :func:`critical_path_profile`: critical-path time per call path next to
  the average time per process, the critical-path imbalance hatched (seed
  001, Fig. 1b).

Figures
-------
Every function returns the :class:`matplotlib.figure.Figure` it drew on.
Pass ``ax=`` (``axes=`` for several panels) to draw into existing Axes;
the figure returned is then theirs.  Otherwise a new figure is made with
``matplotlib.figure.Figure``, not with pyplot: nothing is registered in
pyplot's global state, so figures made in a loop need no ``plt.close``
and are freed with their last reference.  Save one with
``fig.savefig("out.png")``; in Jupyter it shows as the value of a cell
(the figure renders itself as PNG).  For a window of an interactive
backend, draw into pyplot Axes: ``fig, ax = plt.subplots();
timeline(trace, ax=ax); plt.show()``.

Conventions
-----------
Topology grids follow Cube's topology view: coordinate 0 of a location
runs horizontally (x, left to right), coordinate 1 vertically (y, top to
bottom, origin at the top left), and a third dimension gives one panel
("plane") per coordinate 2; ``transpose=True`` swaps the first two
(matrix order, for (row, column) coordinates).  Cells without a location
are grey.  Colours run from light (low) to dark red (high).

Timelines colour MPI regions in warm colours of clearly different hues
(red, orange, magenta, brown, gold, ...) and other regions in blues,
greens and purples (a colour per region, stable for a trace); time runs
left to right, location 0 is the top row.  The critical path runs in the
gap just above the bars.
"""

from __future__ import annotations

import io
import math
import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Tuple, Union

import numpy as np

try:
    import matplotlib
    from matplotlib import colors as mcolors
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, PathPatch
    from matplotlib.path import Path
    from matplotlib.ticker import MaxNLocator
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("waitscope.plot needs matplotlib: python -m pip install matplotlib (or .ci/setup plot in a checkout)") from exc

from ._messages import matched_messages
from .result import AnalysisResult, CallpathKey, Metric

if TYPE_CHECKING:  # pragma: no cover
    from .trace import CartTopology, Trace

__all__ = [
    "heatmap",
    "heatmaps",
    "topology_grid",
    "location_values",
    "run_length",
    "timeline",
    "default_window",
    "delay_profile",
    "critical_path_profile",
    "activity_average",
    "wait_intervals",
]

Coords = Union[np.ndarray, Sequence[Sequence[int]], Callable[[int], Sequence[int]]]
Panel = Union[str, Tuple[str, Any], Tuple[AnalysisResult, str, Any]]

DELAY_ALIASES = {
    "delay_short": Metric("delay_short", "Short-term delay costs", "sec", "delay",
                          "Short-term delay costs of all wait-state classes (AnalysisResult.delay_short)."),
    "delay_long": Metric("delay_long", "Long-term delay costs", "sec", "delay",
                         "Long-term delay costs of all wait-state classes (AnalysisResult.delay_long)."),
}
"""Metric names the plots accept besides the result's metrics."""

GRID_BAD_COLOR = "#d0d0d0"
DEFAULT_CMAP = "YlOrRd"  # light = low, dark red = high (the seed's "darker is higher")

# timeline palettes: MPI regions in warm colours of clearly different hue and lightness
# (red, orange, magenta, brown, gold, ...), everything else in cool ones
MPI_COLORS = ("#d62728", "#ff7f00", "#c51b8a", "#8c510a", "#ffe119", "#fb9a99", "#67000d", "#f6e8c3",
              "#7a0177", "#bf812d")  # any two differ by more than 0.4 in summed |R|+|G|+|B|
OTHER_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#aec7e8", "#98df8a", "#c5b0d5", "#9edae5",
                "#7f7f7f", "#393b79", "#637939", "#5254a3", "#8ca252", "#6b6ecf", "#b5cf6b", "#bcbd22")
TIMELINE_BAR = 0.32
"""Half the height of a location's bar in :func:`timeline` (rows are 1 apart)."""
CRITICAL_PATH_OFFSET = TIMELINE_BAR + 0.045
"""How far above its row's centre :func:`timeline` draws the critical path: in the gap
just above the bar, so that it marks the bar without hiding it."""
INIT_REGIONS = ("MPI_Init", "MPI_Init_thread")
WAIT_HATCHES = {"mpi_latesender": "////", "mpi_latereceiver": "\\\\\\\\", "mpi_barrier_wait": "xxx",
                "mpi_barrier_completion": "++", "mpi_wait_nxn": "xxx", "mpi_nxn_completion": "++",
                "mpi_latebroadcast": "xxx", "mpi_earlyreduce": "xxx", "mpi_earlyscan": "xxx",
                "mpi_finalize_wait": "...", "mpi_init_completion": "++"}
"""Hatch of each wait-state metric in :func:`timeline` (keys: the ``metric`` of
:attr:`AnalysisResult.wait_states`), in drawing order."""


# ---- figures -------------------------------------------------------------------


class _Figure(Figure):
    """A figure outside pyplot that shows itself in Jupyter (as PNG)."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()


def _new_figure(figsize: tuple[float, float]) -> Figure:
    return _Figure(figsize=figsize, layout="constrained")


def _figure_of(ax: Axes) -> Figure:
    """The (root) figure of an Axes, also for Axes in a SubFigure."""
    try:
        fig = ax.get_figure(root=True)  # type: ignore[call-arg,unused-ignore]
    except TypeError:  # matplotlib < 3.10: a SubFigure's .figure is the root
        parent: Any = ax.figure
        fig = getattr(parent, "figure", parent)
    if not isinstance(fig, Figure):
        raise ValueError("the Axes belong to no figure")
    return fig


def _single_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is not None:
        return _figure_of(ax), ax
    fig = _new_figure(figsize)
    return fig, fig.add_subplot()


def _short(name: str, width: int = 44) -> str:
    return name if len(name) <= width else "\u2026" + name[-(width - 1):]


# ---- values per location and grid placement ---------------------------------------------


def _metric_info(result: AnalysisResult, metric: str) -> Metric:
    if metric in DELAY_ALIASES and metric not in result.metric_ids:
        return DELAY_ALIASES[metric]
    return result.metric(metric)  # KeyError naming the metrics the result has


def _metric_title(result: AnalysisResult, info: Metric) -> str:
    """The metric's name; "Late Sender: short-term delay costs" for the delay metrics named "Short-term"."""
    if info.name in ("Short-term", "Long-term") and info.parent in result.metric_ids:
        return f"{result.metric(info.parent).name}: {info.name.lower()} delay costs"
    return info.name


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
        topo = topology if topology is not None else result.trace.cart_topology
        if topo is None:
            raise ValueError("the trace defines no Cartesian topology: pass dims= (ranks are placed row-major) "
                             "or coords= (one coordinate row per location, or a function of the rank)")
        grid = tuple(int(d) for d in topo.dims)
        xy = topo.location_coords(n)
        names = tuple(topo.dim_names)
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


SHARE_VMAX = 0.1
"""With ``share=True`` the colour scale of the heatmaps runs from 0 to at least this share of
the run time (10 %), so that little waiting stays light instead of filling the scale."""


def run_length(trace: "Trace") -> float:
    """Wall-clock length of the run in seconds (:attr:`waitscope.Trace.run_length`)."""
    return trace.run_length


def _share_norm(grids: Sequence[np.ma.MaskedArray], vmin: float | None, vmax: float | None) -> mcolors.Normalize:
    data = [g.compressed() for g in grids if g.compressed().size]
    hi = max((float(d.max()) for d in data), default=0.0)
    return mcolors.Normalize(vmin=0.0 if vmin is None else vmin, vmax=max(hi, SHARE_VMAX) if vmax is None else vmax)


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
        return f"{100 * value:.2g} %" if value else "0"
    if unit == "sec":
        magnitude = abs(value)
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "\u00b5s"), (1e-9, "ns")):
            if magnitude >= scale or scale == 1e-9:
                return f"{value / scale:.3g} {suffix}" if value else "0"
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


def _draw_plane(ax: Axes, plane: np.ma.MaskedArray, cmap: mcolors.Colormap, norm: mcolors.Normalize,
                names: tuple[str, ...], annotate: bool | None = None, unit: str = "", share: bool = False) -> Any:
    im = ax.imshow(plane, origin="upper", cmap=cmap, norm=norm, interpolation="nearest", aspect="equal")
    ny, nx = plane.shape
    if annotate or (annotate is None and ny * nx <= ANNOTATE_CELLS):
        _annotate(ax, plane, cmap, norm, unit, share)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=min(nx, 8), integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=min(ny, 8), integer=True))
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1] if len(names) > 1 else "")
    if ny == 1:
        ax.set_yticks([])
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
    compared, as in seed 000, Figs. 5, 8 and 9: waiting time next to the
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
            runs.append(run_length(r.trace))
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
        cell = 3.4
        height = min(max(cell * ny / nx, 1.0), 6.0)
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
    coordinates + 1).  Without topology, dims and coords: ValueError.

    Orientation (Cube's): coordinate 0 runs horizontally from the left,
    coordinate 1 vertically from the top; a 3D topology is drawn as one
    panel per value of coordinate 2, all on one colour scale.
    ``transpose=True`` swaps the first two: matrix order, for topologies
    whose coordinates are (row, column) such as ``cart((rows, columns))``.  Cells
    without a location are grey; the colour bar is labelled with the
    metric's unit.  Light colours are low values, dark high ones.

    Colour scale: by default from the smallest to the largest value shown
    (or `vmin`/`vmax`).  ``share=True`` (time metrics only) shows each
    location's value as a share of the run's wall-clock time
    (:func:`run_length`) on a scale from 0 to the largest share, but at
    least :data:`SHARE_VMAX` (10 %), with a colour bar in percent: how
    alarming a colour looks then says how much of the run the time is, so
    0.6 ms of waiting in a 0.2 s run stays pale.

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
    run = run_length(result.trace) if share else 1.0
    if share:
        _check_share([info])
        values = values / run
    grid = _grid(values, xy, dims_used)
    nz, ny, nx = grid.shape
    if ax is None:
        ncols = min(nz, 4)
        nrows = math.ceil(nz / ncols)
        cell = 3.6 if nz == 1 else 2.8
        height = min(max(cell * ny / nx, 1.0), 7.0)
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


# ---- timeline ----------------------------------------------------------------------------


def _region_colors(trace: "Trace") -> np.ndarray:
    """An RGBA colour per region: MPI reddish, the others from a palette without red.

    Colours go to the regions that occur in the call-path tree (a Score-P
    trace defines hundreds of MPI regions it never enters), in the order
    of their first call path, so a region keeps its colour in every window.
    """
    regions = trace.regions
    out = np.zeros((len(regions), 4))
    out[:] = mcolors.to_rgba("lightgrey")
    n_mpi = n_other = 0
    seen: set[int] = set()
    for region in (int(x) for x in trace.callpath_region):
        if region in seen or not 0 <= region < len(regions):
            continue
        seen.add(region)
        if regions[region].is_mpi:
            out[region] = mcolors.to_rgba(MPI_COLORS[n_mpi % len(MPI_COLORS)])
            n_mpi += 1
        else:
            out[region] = mcolors.to_rgba(OTHER_COLORS[n_other % len(OTHER_COLORS)])
            n_other += 1
    return out


def _states(time: np.ndarray, kind: np.ndarray, callpath: np.ndarray, parent: np.ndarray,
            t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals of the innermost open call path inside [t0, t1]: (start, end, call path)."""
    n = len(time)
    if n < 2:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    lo = max(int(np.searchsorted(time, t0, side="right")) - 1, 0)
    hi = min(int(np.searchsorted(time, t1, side="left")), n - 1)
    if hi <= lo:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    i = np.arange(lo, hi)
    cp = callpath[i].astype(np.int64)
    left = kind[i] == 2
    state = cp.copy()
    ok = left & (cp >= 0)
    state[ok] = parent[cp[ok]]
    start = np.maximum(time[i], t0)
    end = np.minimum(time[i + 1], t1)
    keep = (end > start) & (state >= 0)
    start, end, state = start[keep], end[keep], state[keep]
    if not len(state):
        return start, end, state
    first = np.ones(len(state), dtype=bool)
    first[1:] = (state[1:] != state[:-1]) | (start[1:] != end[:-1])
    idx = np.flatnonzero(first)
    last = np.append(idx[1:], len(state)) - 1
    return start[idx], end[last], state[idx]


def _rects(x0: np.ndarray, x1: np.ndarray, row: np.ndarray, half: float) -> np.ndarray:
    verts = np.empty((len(x0), 4, 2))
    verts[:, 0, 0] = verts[:, 1, 0] = x0
    verts[:, 2, 0] = verts[:, 3, 0] = x1
    verts[:, 0, 1] = verts[:, 3, 1] = row - half
    verts[:, 1, 1] = verts[:, 2, 1] = row + half
    return verts


def _run_span(trace: "Trace", locs: Sequence[int]) -> tuple[float, float]:
    starts, ends = [], []
    for loc in locs:
        t = trace.events(loc).time
        if len(t):
            starts.append(float(t[0]))
            ends.append(float(t[-1]))
    return min(starts, default=0.0), max(ends, default=1.0)


def _init_end(trace: "Trace", locs: Sequence[int]) -> float | None:
    """The earliest time a shown location leaves MPI_Init (None: no MPI_Init)."""
    names = trace.region_names
    init = {i for i, region in enumerate(trace.callpath_region) if names[int(region)] in INIT_REGIONS}
    if not init:
        return None
    leaves = []
    for loc in locs:
        ev = trace.events(loc)
        hit = (np.asarray(ev.kind) == 2) & np.isin(np.asarray(ev.callpath), list(init))
        if hit.any():
            leaves.append(float(np.asarray(ev.time)[hit][0]))
    return min(leaves) if leaves else None


def default_window(trace: "Trace", locations: Sequence[int] | None = None) -> tuple[float, float]:
    """The window :func:`timeline` shows by default: the whole run of `locations`, or,
    when MPI_Init takes more than half of it (as in short runs), from shortly
    before the first location leaves MPI_Init to the end."""
    locs = [int(x) for x in (trace.loaded_locations if locations is None else locations)]
    t0, t1 = _run_span(trace, locs)
    init = _init_end(trace, locs)
    if init is not None and t0 < init < t1 and init - t0 > 0.5 * (t1 - t0):
        return (init - 0.02 * (t1 - init), t1)
    return (t0, t1)


def timeline(trace: "Trace", result: AnalysisResult | None = None, *,
             window: tuple[float, float] | str | None = None, locations: Sequence[int] | None = None,
             ax: Axes | None = None, max_locations: int = 64, messages: bool = True, waits: bool = True,
             legend: int = 8, figsize: tuple[float, float] | None = None, title: str | None = None) -> Figure:
    """A time-line diagram: one bar per location, coloured by region, over `window` = (t0, t1) seconds.

    `window` defaults to :func:`default_window`: the whole run of the shown
    locations, or the part after MPI_Init when MPI_Init takes more than
    half the run (a short Score-P run spends most of its time there);
    ``window="all"`` shows the whole run.  Drawn from the events inside
    the window:

    * a rectangle per interval of the innermost open region, coloured per
      region (MPI in reds, the rest in other colours); the legend names the
      `legend` regions with the most time in the window;
    * ``messages``: a line from every send record to its receive record
      (both locations shown);
    * ``waits``: every wait-state instance hatched over its interval
      (Late Sender ``////``, Late Receiver ``\\\\``, collective waits
      ``xxx``, completions ``++``, Wait at Finalize ``...``; see
      :data:`WAIT_HATCHES`): the records of
      :attr:`AnalysisResult.wait_states`, taken from `result` when it was
      analyzed with ``wait_records=True``; otherwise the trace is analyzed
      again with ``wait_records=True`` for them (the whole trace, a cost
      like that of ``trace.analyze()``), which needs every location loaded
      and one process: for a partly loaded trace or in the parallel mode
      nothing is hatched (pass a result with wait records instead).  Each
      metric is one :class:`~matplotlib.patches.PathPatch` with gid
      ``"waits:<metric>"`` (e.g. ``"waits:mpi_latesender"``, in
      ``ax.patches``) whose compound path has one closed rectangle per
      instance;
    * the critical path, when `result` has one (``critical_path=True``): a
      thick black :class:`~matplotlib.lines.Line2D` (gid
      ``"critical_path"``) through its segments and the transfers between
      locations, drawn in the gap just above each bar
      (:data:`CRITICAL_PATH_OFFSET` above the row's centre), so that it
      marks the bar it runs along without hiding it.

    The title (when no `ax` is given; `title` replaces it, ``""`` omits it)
    names the trace and the window.

    `locations` (default: all loaded) are shown top to bottom, at most
    `max_locations` of them.  Regions and messages are bulk collections
    (a :class:`~matplotlib.collections.PolyCollection` with gid
    ``"regions"``, a :class:`~matplotlib.collections.LineCollection` with
    gid ``"messages"``): a window of 100,000 events on 64 locations
    (9,000 messages, 4,000 wait states) of a 10-million-event trace takes
    about 1 s to build and 1 s to render as PNG, with a `result` that has
    wait records; analyzing the trace for them adds about 1.7 s.  `figsize` (inches) applies when no `ax` is given;
    the default grows with the number of locations.  Returns the Figure.
    """
    locs = [int(x) for x in (trace.loaded_locations if locations is None else locations)][:max(int(max_locations), 1)]
    if not locs:
        raise ValueError("no locations to show (none loaded?)")
    whole = _run_span(trace, locs)
    after_init = window is None and default_window(trace, locs) != whole
    if window is None:
        window = default_window(trace, locs)
    elif isinstance(window, str):
        if window != "all":
            raise ValueError(f"window must be (t0, t1), None or 'all', not {window!r}")
        window = whole
    t0, t1 = float(window[0]), float(window[1])
    if not t1 > t0:
        raise ValueError(f"window must be (t0, t1) with t1 > t0, not {window!r}")
    if t1 < whole[0] or t0 > whole[1]:
        raise ValueError(f"window=({t0:.9g}, {t1:.9g}) lies outside the run, which spans {whole[0]:.9g} s to "
                         f"{whole[1]:.9g} s")
    own_figure = ax is None
    fig, ax = _single_axes(ax, figsize or (11.0, max(2.6, 1.4 + 0.32 * len(locs))))
    row_of = {loc: i for i, loc in enumerate(locs)}
    parent = np.asarray(trace.callpath_parent, dtype=np.int64)
    cp_region = np.asarray(trace.callpath_region, dtype=np.int64)
    colors = _region_colors(trace)
    half = TIMELINE_BAR

    # regions
    all_x0, all_x1, all_row, all_region = [], [], [], []
    for loc in locs:
        ev = trace.events(loc)
        x0, x1, state = _states(ev.time, ev.kind, ev.callpath, parent, t0, t1)
        all_x0.append(x0)
        all_x1.append(x1)
        all_row.append(np.full(len(x0), row_of[loc], dtype=np.float64))
        all_region.append(cp_region[state])
    x0, x1 = np.concatenate(all_x0), np.concatenate(all_x1)
    rows, region = np.concatenate(all_row), np.concatenate(all_region)
    ax.add_collection(PolyCollection(_rects(x0, x1, rows, half),  # type: ignore[arg-type]
                                     facecolors=colors[region], edgecolors="none",
                                     linewidths=0, gid="regions", zorder=1))
    handles: list[Any] = []
    if len(region):
        per_region = np.bincount(region, weights=x1 - x0, minlength=len(colors))
        names = trace.region_names
        for r in np.argsort(-per_region, kind="stable")[:max(int(legend), 0)]:
            if per_region[r] > 0:
                handles.append(Patch(facecolor=colors[r], label=names[r]))

    source = _wait_source(trace, result) if waits else None
    if source is not None:
        w = source._wait_states(locs, (t0, t1))
        for metric, hatch in WAIT_HATCHES.items():
            sel = w[w["metric"] == metric]
            if not len(sel):
                continue
            rects = _rects(np.maximum(sel["start"], t0), np.minimum(sel["end"], t1),
                           np.array([row_of[int(x)] for x in sel["location"]], dtype=np.float64), half)
            # one compound path per metric: Agg hatches it at once (~10x faster than a collection)
            ax.add_patch(PathPatch(Path.make_compound_path_from_polys(rects), facecolor="none",
                                   edgecolor="black", linewidth=0, hatch=hatch, gid=f"waits:{metric}",
                                   zorder=2))
            label = source.metric(metric).name if metric in source.metric_ids else metric
            handles.append(Patch(facecolor="white", edgecolor="black", hatch=hatch, label=label))
    if messages:
        m = matched_messages(trace, locs)
        lo = np.minimum(m["send_time"], m["recv_time"])
        hi = np.maximum(m["send_time"], m["recv_time"])
        m = m[(hi >= t0) & (lo <= t1)]
        if len(m):
            seg = np.empty((len(m), 2, 2))
            seg[:, 0, 0] = m["send_time"]
            seg[:, 1, 0] = m["recv_time"]
            seg[:, 0, 1] = [row_of[int(x)] for x in m["send_location"]]
            seg[:, 1, 1] = [row_of[int(x)] for x in m["recv_location"]]
            ax.add_collection(LineCollection(seg, colors="black", linewidths=0.6,  # type: ignore[arg-type]
                                             alpha=0.7, gid="messages", zorder=3))
            handles.append(Line2D([], [], color="black", linewidth=0.6, label="message"))
    if result is not None and "critical_path" in result.metric_ids:
        line = _critical_path_line(result, row_of, t0, t1)
        if line is not None:
            ax.add_line(line)
            handles.append(Line2D([], [], color="black", linewidth=2.0, label="critical path"))

    ax.set_xlim(t0, t1)
    ax.set_ylim(len(locs) - 0.5, -0.6)
    ax.set_yticks(range(len(locs)))
    info = trace.locations
    threads = any(info[loc].thread != 0 for loc in locs)
    ax.set_yticklabels([f"{info[loc].rank}:{info[loc].thread}" if threads else str(info[loc].rank) for loc in locs])
    ax.set_ylabel("rank:thread" if threads else "rank")
    ax.set_xlabel("time (s)")
    shown = len(locs)
    total = len(trace.loaded_locations) if locations is None else len(locations)
    subset = f", first {shown} of {total} locations" if shown < total else ""
    if title is None and own_figure:
        name = os.path.basename(os.path.dirname(os.path.abspath(trace.path))) or trace.path
        part = "the whole run" if (t0, t1) == whole else f"the run: {whole[0]:.4g} to {whole[1]:.4g} s"
        part = ("after MPI_Init; " if after_init else "") + part
        ax.set_title(f"timeline of {name}: {t0:.4g} to {t1:.4g} s ({part}{subset})", fontsize="medium")
    elif title:
        ax.set_title(title)
    elif subset and title is None:
        ax.set_title(subset[2:], fontsize="small")
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                  frameon=False)
        if own_figure and figsize is None:  # room for every legend entry
            width, height = fig.get_size_inches()
            fig.set_size_inches(width, max(height, 0.6 + 0.2 * len(handles)))
    return fig


def _wait_source(trace: "Trace", result: AnalysisResult | None) -> AnalysisResult | None:
    """A result with wait-state records: `result`, or a new analysis of the trace (None where not possible)."""
    if result is not None and result.has_wait_states:
        return result
    if trace.comm is not None or len(trace.loaded_locations) != trace.n_locations:
        return None
    analyzed = trace.analyze(wait_records=True)
    assert analyzed is not None  # one process
    return analyzed


def wait_intervals(trace: "Trace", locations: Sequence[int] | None = None,
                   window: tuple[float, float] | None = None, result: AnalysisResult | None = None) -> np.ndarray:
    """The wait-state instances :func:`timeline` hatches: :attr:`AnalysisResult.wait_states` of `locations`.

    The records come from `result` when it has them (``wait_records=True``),
    else from ``trace.analyze(wait_records=True)``, which needs every
    location loaded and one process (ValueError otherwise).  `locations`
    (default: all) selects the waiting locations; with `window` = (t0, t1)
    only the intervals overlapping it are kept (not clipped).  The order is
    that of ``wait_states``: by location, event and metric.
    """
    source = _wait_source(trace, result)
    if source is None:
        raise ValueError("wait intervals need a result of analyze(wait_records=True), or a trace with every "
                         "location loaded in one process")
    return source._wait_states(locations, window)


def _critical_path_line(result: AnalysisResult, row_of: dict[int, int], t0: float, t1: float) -> Line2D | None:
    seg = result.critical_path.segments
    seg = seg[(seg["end"] >= t0) & (seg["start"] <= t1)]
    if not len(seg):
        return None
    xs: list[float] = []
    ys: list[float] = []
    for s in seg:
        row = row_of.get(int(s["location"]))
        if row is None:  # the path runs through a location not shown: break the line
            if xs and not math.isnan(xs[-1]):
                xs.append(math.nan)
                ys.append(math.nan)
            continue
        xs += [max(float(s["start"]), t0), min(float(s["end"]), t1)]
        ys += [row - CRITICAL_PATH_OFFSET, row - CRITICAL_PATH_OFFSET]
    return Line2D(xs, ys, color="black", linewidth=2.0, solid_capstyle="butt", solid_joinstyle="miter",
                  gid="critical_path", zorder=4)


# ---- profiles ----------------------------------------------------------------------------


def _mix(color: Any, white: float) -> tuple[float, float, float, float]:
    r, g, b, a = mcolors.to_rgba(color)
    return (r + (1 - r) * white, g + (1 - g) * white, b + (1 - b) * white, a)


MODEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")


def delay_profile(results: Mapping[str, AnalysisResult] | AnalysisResult, *, top: int = 10,
                  ax: Axes | None = None) -> Figure:
    """Short- and long-term delay costs per call path (stacked horizontal bars).

    `results` is one result of a delay analysis or a mapping from labels to
    results, e.g. ``{"proportional": r1, "wait-first": r2}``: then every
    call path has one bar per result, side by side.  A bar is the costs
    charged to that call path over all locations and wait-state classes:
    short-term (dark) plus long-term (light).  The `top` call paths with the
    largest costs (in any result) are shown, the largest at the top.
    Results of the same trace are expected (call paths are matched by
    name).  A result without delay analysis raises ValueError.  Returns
    the Figure.
    """
    named = {(r.delay_model or "delay costs"): r for r in [results]} if isinstance(results, AnalysisResult) \
        else dict(results)
    if not named:
        raise ValueError("no results to show")
    names: list[str] = []
    seen: set[str] = set()
    per: dict[str, tuple[dict[str, float], dict[str, float]]] = {}
    for label, r in named.items():
        short = np.asarray(r.delay_short).sum(axis=1)
        long_ = np.asarray(r.delay_long).sum(axis=1)
        per[label] = (dict(zip(r.callpath_names, short)), dict(zip(r.callpath_names, long_)))
        for n in r.callpath_names:
            if n not in seen:
                seen.add(n)
                names.append(n)
    total = np.array([max(s.get(n, 0.0) + lg.get(n, 0.0) for s, lg in per.values()) for n in names])
    order = [i for i in np.argsort(-total, kind="stable")[:max(int(top), 1)] if total[i] > 0]
    shown = [names[i] for i in order]
    n_models = len(named)
    fig, ax = _single_axes(ax, (8.0, 1.2 + 0.45 * max(len(shown), 1) * max(n_models, 1) ** 0.5))
    height = 0.8 / n_models
    y = np.arange(len(shown), dtype=np.float64)
    for k, (label, (short, long_)) in enumerate(per.items()):
        pos = y - 0.4 + height * (k + 0.5)
        s = np.array([short.get(n, 0.0) for n in shown])
        lg = np.array([long_.get(n, 0.0) for n in shown])
        color = MODEL_COLORS[k % len(MODEL_COLORS)]
        prefix = f"{label}: " if n_models > 1 or label != "delay costs" else ""
        ax.barh(pos, s, height=height, color=color, label=f"{prefix}short-term", gid=f"short:{label}")
        ax.barh(pos, lg, left=s, height=height, color=_mix(color, 0.55), label=f"{prefix}long-term",
                gid=f"long:{label}")
    ax.set_yticks(y)
    ax.set_yticklabels([_short(n) for n in shown])
    ax.set_ylim(max(len(shown), 1) - 0.5, -0.5)
    ax.set_xlabel("delay costs (s)")
    ax.legend(loc="lower right", fontsize="small")
    if not shown:
        ax.set_title("no delay costs", fontsize="small")
    return fig


def activity_average(result: AnalysisResult) -> np.ndarray:
    """Average time per process of every call path without wait states (seed 001's avg(i)).

    The activity time of the critical-path analysis (``critical_path_activities``
    plus ``non_critical_path_activities``) summed over locations, divided by
    the number of locations that ran (time > 0).
    """
    activity = result.by_callpath("critical_path_activities") + result.by_callpath("non_critical_path_activities")
    procs = int(np.count_nonzero(result.by_location("time") > 0))
    return activity / max(procs, 1)


def critical_path_profile(result: AnalysisResult, *, top: int = 10, ax: Axes | None = None) -> Figure:
    """The critical-path profile (seed 001, Fig. 1b): per call path, time on the critical path
    next to the average time per process.

    The critical-path bar (dark) has its critical-path imbalance (the part
    above the average; ``critical_path.imbalance``) hatched; the grey bar
    below it is the average activity time per process without wait states
    (:func:`activity_average`).  The `top` call paths with the most
    critical-path time are shown, the largest at the top.  Needs a result
    of ``analyze(critical_path=True)`` (ValueError otherwise).  Returns the
    Figure.
    """
    cp = result.critical_path
    on_path = np.asarray(cp.by_callpath, dtype=np.float64)
    imbalance = np.asarray(cp.imbalance, dtype=np.float64)
    average = activity_average(result)
    order = [i for i in np.argsort(-on_path, kind="stable")[:max(int(top), 1)] if on_path[i] > 0]
    fig, ax = _single_axes(ax, (8.0, 1.2 + 0.55 * max(len(order), 1)))
    y = np.arange(len(order), dtype=np.float64)
    h = 0.38
    path = on_path[order]
    imb = np.minimum(imbalance[order], path)
    color = "#08306b"
    ax.barh(y - h / 2, path - imb, height=h, color=color, label="critical path", gid="critical_path")
    ax.barh(y - h / 2, imb, left=path - imb, height=h, color=_mix(color, 0.45), hatch="///", edgecolor="white",
            linewidth=0, label="critical-path imbalance", gid="imbalance")
    ax.barh(y + h / 2, average[order], height=h, color="#9e9e9e", label="average per process", gid="average")
    ax.set_yticks(y)
    ax.set_yticklabels([_short(result.callpath_names[i]) for i in order])
    ax.set_ylim(max(len(order), 1) - 0.5, -0.5)
    ax.set_xlabel("time (s)")
    ax.set_title(f"critical path: {cp.length:.6g} s", fontsize="medium")
    ax.legend(loc="lower right", fontsize="small")
    return fig
