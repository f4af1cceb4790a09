"""Before and after on the process topology (:func:`waitscope.plot.whatif`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ._plot_base import DEFAULT_CMAP, Axes, Figure, _figure_of, _new_figure, _short, mcolors
from ._plot_heatmap import (Coords, _cmap, _draw_plane, _flat_axes, _grid, _metric_info, _metric_title, _norm,
                            _placement, location_values)
from .result import AnalysisResult, CallpathKey

if TYPE_CHECKING:  # pragma: no cover
    from .trace import CartTopology


def _default_callpaths(before: AnalysisResult, metric: str, count: int) -> list[str]:
    """The `count` call paths with the most `metric` in `before`, in call-path order."""
    per_cp = np.asarray(before.get(metric), dtype=np.float64).sum(axis=1)
    top = [int(cp) for cp in np.argsort(-per_cp, kind="stable")[:count] if per_cp[cp] > 0]
    return [before.callpath_names[cp] for cp in sorted(top)]


def whatif(before: AnalysisResult, after: AnalysisResult, metric: str = "mpi_latesender",
           callpaths: Sequence[CallpathKey] | None = None, *, plane: int | None = None,
           labels: tuple[str, str] = ("recorded", "simulated"), titles: Sequence[str] | None = None,
           topology: "CartTopology | None" = None, dims: Sequence[int] | None = None, coords: Coords | None = None,
           transpose: bool = False, axes: Sequence[Axes] | None = None, cmap: str | mcolors.Colormap = DEFAULT_CMAP,
           annotate: bool | None = None) -> Figure:
    """`metric` per location before and after a change, on the process topology
    (as Fig. 12 of Böhme et al., ICPP 2010, shows Zeus-MP/2 before and after balancing).

    One column per call path (default: the three with the most `metric`
    in `before`, e.g. the waiting of three communication phases), the
    `before` result in the top row and `after` below, all on one colour
    scale, so that what the change removed shows as paler cells.  Call
    paths are given by name (or index in `before`) and found in `after`
    by name (a call path missing there counts 0).  For a 3D topology one
    plane is shown: `plane` (coordinate 2; default: the middle one).
    Placement as :func:`waitscope.plot.heatmap`: the topology of
    `before`'s trace (a hybrid MPI+OpenMP trace of Score-P: processes by
    threads), or `topology`, `dims` or `coords`; without any of
    them the ranks in a row; `transpose` swaps the first two coordinates.
    `axes`: 2 x columns Axes, row by row.  Returns the Figure.
    """
    info = _metric_info(before, metric)
    _metric_info(after, metric)
    if len(before.location_ranks) != len(after.location_ranks) or \
            not np.array_equal(before.location_ranks, after.location_ranks) or \
            not np.array_equal(before.location_threads, after.location_threads):
        raise ValueError("before and after must have the same locations (ranks and threads) to share a topology")
    names = [before.callpath_names[before.callpath_index(cp)] for cp in
             (callpaths if callpaths is not None else _default_callpaths(before, metric, 3))]
    if not names:
        raise ValueError(f"{metric!r} is 0 everywhere in the before result: pass callpaths=")
    xy, grid, dim_names = _placement(before, topology, dims, coords, transpose)
    planes = []
    for result in (before, after):
        row = []
        for name in names:
            try:
                values = location_values(result, metric, name, True)
            except KeyError:
                values = np.zeros(result.n_locations)
            g = _grid(values, xy, grid)
            z = g.shape[0] // 2 if plane is None else int(plane)
            if not 0 <= z < g.shape[0]:
                raise ValueError(f"plane {plane} is outside the topology's {g.shape[0]} planes")
            row.append(g[z])
        planes.append(row)
    n = len(names)
    if axes is None:
        nx, ny = grid[0], grid[1] if len(grid) > 1 else 1
        width = 3.2 if ny > 1 else min(max(3.2, 0.55 * nx), 8.0)
        fig = _new_figure((width * n + 1.4, 6.4 if ny > 1 else 3.6))
        flat = list(fig.subplots(2, n, squeeze=False).ravel())
    else:
        flat = _flat_axes(axes, 2 * n, "whatif")
        fig = _figure_of(flat[0])
    cm = _cmap(cmap)
    norm = _norm([p for row in planes for p in row], None, None)
    z_note = f", {dim_names[2]} = {grid[2] // 2 if plane is None else plane}" if len(grid) > 2 else ""
    for r, row in enumerate(planes):
        for c, p in enumerate(row):
            ax = flat[r * n + c]
            _draw_plane(ax, p, cm, norm, dim_names, annotate, info.unit)
            head = titles[c] if titles is not None else _short(names[c], 36)
            ax.set_title(f"{head}\n{labels[r]}{z_note}", fontsize="small")
    from matplotlib.cm import ScalarMappable

    fig.colorbar(ScalarMappable(norm=norm, cmap=cm), ax=flat, label=f"{_metric_title(before, info)} ({info.unit})")
    return fig
