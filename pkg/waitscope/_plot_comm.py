"""Communication matrix of :mod:`waitscope.plot`: bytes or messages per sender and receiver rank."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ._plot_base import DEFAULT_CMAP, GRID_BAD_COLOR, Axes, Figure, _single_axes
from matplotlib import colormaps
from matplotlib.colors import LogNorm, Normalize
from matplotlib.ticker import FuncFormatter, NullFormatter

LOG_SPAN = 10.0
"""The matrix is drawn on a logarithmic colour scale when its largest cell is at least this
many times its smallest non-zero one, else on a linear scale from 0."""

if TYPE_CHECKING:  # pragma: no cover
    from .trace import Trace


def comm_matrix(source: "Trace | np.ndarray", kind: str = "bytes", window: Sequence[float] | None = None,
                collectives: bool = False, ax: Axes | None = None, cmap: Any = DEFAULT_CMAP,
                annotate: bool | None = None) -> Figure:
    """Sender x receiver matrix, on a logarithmic colour scale when the values span
    at least a factor :data:`LOG_SPAN` (10), else on a linear one from 0; the colour
    bar reads in k, M, G (``1.6M``).

    `source` is a trace (then :meth:`waitscope.Trace.comm_matrix` with
    `kind`, `window` and `collectives` makes the matrix) or a square
    matrix.  Rows are senders, columns receivers; cells without
    communication are grey.  `annotate` writes the values into the cells
    (default: for up to 16 ranks).
    """
    if isinstance(source, np.ndarray) or isinstance(source, (list, tuple)):
        matrix = np.asarray(source, dtype=np.float64)
    else:
        matrix = np.asarray(source.comm_matrix(kind=kind, window=window, collectives=collectives), dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"a communication matrix must be square (senders x receivers), got shape {matrix.shape}")
    if np.any(matrix < 0) or not np.all(np.isfinite(matrix)):
        raise ValueError("a communication matrix holds non-negative finite values")
    n = matrix.shape[0]
    fig, ax = _single_axes(ax, (1.6 + 0.35 * max(n, 4), 1.2 + 0.3 * max(n, 4)))
    masked = np.ma.masked_less_equal(matrix, 0.0)
    positive = matrix[matrix > 0]
    vmin, vmax = (float(positive.min()), float(positive.max())) if len(positive) else (1.0, 10.0)
    colors = (colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad=GRID_BAD_COLOR)
    if vmax >= LOG_SPAN * vmin:
        norm: Normalize = LogNorm(vmin=vmin, vmax=vmax)
    else:  # values close together: a linear scale from 0 (cells 40 bytes apart look alike, as they are)
        norm = Normalize(vmin=0.0, vmax=vmax)
    image = ax.imshow(masked, norm=norm, cmap=colors, interpolation="nearest")
    bar = fig.colorbar(image, ax=ax, label="bytes" if kind == "bytes" else "messages")
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _short_number(v)))  # 1.6M, not 1.63840e6
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("receiver rank")
    ax.set_ylabel("sender rank")
    step = max(1, n // 16)
    ax.set_xticks(range(0, n, step))
    ax.set_yticks(range(0, n, step))
    ax.set_title("bytes sent" if kind == "bytes" else "messages sent")
    if annotate if annotate is not None else n <= 16:
        for (i, j), v in np.ndenumerate(matrix):
            if v > 0:
                ax.text(j, i, _short_number(v), ha="center", va="center", fontsize=7)
    return fig


def _short_number(v: float) -> str:
    """``1.64M``, ``40k``, ``512``: three significant digits and a unit prefix."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"
