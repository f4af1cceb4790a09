"""Shared parts of :mod:`waitscope.plot`: the matplotlib import, colour palettes, figures and Axes."""

from __future__ import annotations

import io
from typing import Any

try:
    import matplotlib
    from matplotlib import colors as mcolors
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    from ._optional import install_hint

    raise ImportError(f"waitscope.plot needs matplotlib, which is not installed: {install_hint('matplotlib')}",
                      name="matplotlib") from exc

GRID_BAD_COLOR = "#d0d0d0"
DEFAULT_CMAP = "YlOrRd"  # light = low, dark red = high ("darker is higher", as in Böhme et al. 2010)

# timeline palettes: MPI regions in warm colours of clearly different hue and lightness
# (red, orange, magenta, brown, gold, ...), everything else in cool ones
MPI_COLORS = ("#d62728", "#ff7f00", "#c51b8a", "#8c510a", "#ffe119", "#fb9a99", "#67000d", "#f6e8c3",
              "#7a0177", "#bf812d")  # any two differ by more than 0.4 in summed |R|+|G|+|B|
OTHER_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#aec7e8", "#98df8a", "#c5b0d5", "#00a087",
                "#7f7f7f", "#393b79", "#637939", "#5254a3", "#8ca252", "#6b6ecf", "#b5cf6b", "#bcbd22")
MODEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
"""Colour of each delay model in :func:`waitscope.plot.delay_profile`."""


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



def _mix(color: Any, white: float) -> tuple[float, float, float, float]:
    r, g, b, a = mcolors.to_rgba(color)
    return (r + (1 - r) * white, g + (1 - g) * white, b + (1 - b) * white, a)
