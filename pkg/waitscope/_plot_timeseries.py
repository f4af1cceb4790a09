"""A metric per visit of a repeating region (:func:`waitscope.plot.timeseries`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._plot_base import DEFAULT_CMAP, GRID_BAD_COLOR, Axes, Figure, _single_axes
from ._timeseries import RegionKey
from .result import AnalysisResult

MAX_LINES = 16
"""Up to this many locations ``style="auto"`` draws one line each, beyond it a heatmap."""


def timeseries(result: AnalysisResult, metric: str, region: RegionKey, *, locations: Sequence[int] | None = None,
               style: str = "auto", ax: Axes | None = None) -> Figure:
    """`metric` in every visit of `region` (e.g. each ``timestep``), per location.

    The values are :meth:`AnalysisResult.timeseries`.  ``style="lines"``
    draws one line per location over the visit number and the mean over
    the locations as a thick black line; ``style="heatmap"`` one row per
    location, one column per visit (light = low, dark red = high, grey
    where a location has no such visit); ``"auto"`` picks lines for up to
    16 locations.  `locations` selects the locations shown.  So a user sees
    in which iterations the waiting grows, and where.  Returns the Figure.
    """
    if style not in ("auto", "lines", "heatmap"):
        raise ValueError(f"style must be 'auto', 'lines' or 'heatmap', not {style!r}")
    values = result.timeseries(metric, region)
    locs = np.arange(result.n_locations) if locations is None else np.asarray(list(locations), dtype=np.int64)
    if len(locs) == 0 or locs.min() < 0 or locs.max() >= result.n_locations:
        raise ValueError(f"locations must be indices 0..{result.n_locations - 1}, got {list(locs)}")
    values = values[:, locs]
    if style == "auto":
        style = "lines" if len(locs) <= MAX_LINES else "heatmap"
    unit = result.metric(metric).unit
    label = f"{result.metric(metric).name} ({metric}) [{unit}]"
    visits = np.arange(values.shape[0])
    ranks = np.asarray(result.location_ranks)[locs]
    if style == "lines":
        fig, ax = _single_axes(ax, (8.0, 4.0))
        for k, loc in enumerate(locs):
            ax.plot(visits, values[:, k], linewidth=1.0, alpha=0.8, label=f"rank {ranks[k]} (location {loc})",
                    gid=f"location:{loc}")
        if len(locs) > 1 and values.size:
            ax.plot(visits, np.nanmean(values, axis=1), color="black", linewidth=2.5, label="mean", gid="mean")
        ax.set_ylabel(label)
        if len(locs) <= MAX_LINES:
            ax.legend(fontsize="small", ncols=2 if len(locs) > 6 else 1)
    else:
        fig, ax = _single_axes(ax, (8.0, 1.5 + 0.2 * min(len(locs), 40)))
        import matplotlib

        cmap = matplotlib.colormaps[DEFAULT_CMAP].with_extremes(bad=GRID_BAD_COLOR)
        image = ax.imshow(np.ma.masked_invalid(values.T), aspect="auto", cmap=cmap, interpolation="nearest",
                          gid="timeseries")
        ax.set_ylabel("location")
        fig.colorbar(image, ax=ax, label=label)
    ax.set_xlabel(f"visit of {region}")
    ax.set_title(f"{metric} per visit of {region}")
    return fig
