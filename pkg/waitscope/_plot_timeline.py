"""Time-line diagrams of :mod:`waitscope.plot`: regions per location over time, messages, wait states
and the critical path."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ._plot_base import MPI_COLORS, OTHER_COLORS, Axes, Figure, _single_axes, mcolors
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, PathPatch
from matplotlib.path import Path

from . import _core
from ._messages import matched_messages
from ._plot_heatmap import _metric_title
from .result import AnalysisResult

if TYPE_CHECKING:  # pragma: no cover
    from .trace import Trace

TIMELINE_BAR = 0.32
"""Half the height of a location's bar in :func:`timeline` (rows are 1 apart)."""
CRITICAL_PATH_OFFSET = TIMELINE_BAR + 0.045
"""How far above its row's centre :func:`timeline` draws the critical path: in the gap
just above the bar, so that it marks the bar without hiding it."""
INIT_REGIONS = ("MPI_Init", "MPI_Init_thread")
WAIT_HATCHES = {"mpi_latesender": "////", "mpi_latereceiver": "\\\\\\\\", "mpi_barrier_wait": "xxx",
                "mpi_barrier_completion": "++", "mpi_wait_nxn": "xxx", "mpi_nxn_completion": "++",
                "mpi_latebroadcast": "xxx", "mpi_earlyreduce": "xxx", "mpi_earlyscan": "xxx",
                "mpi_finalize_wait": "...", "mpi_init_completion": "++",
                "omp_ibarrier_wait": "--", "omp_ebarrier_wait": "oo", "omp_lock_contention_critical": "||",
                "omp_lock_contention_api": "**"}
"""Hatch of each wait-state metric in :func:`timeline` (keys: the ``metric`` of
:attr:`AnalysisResult.wait_states`), in drawing order: MPI's, then OpenMP's (waiting at
implicit barriers ``--`` and explicit ones ``oo``, critical-section contention ``||``,
lock contention ``**``)."""



def palette(base: Sequence[str], n: int, hues: tuple[float, float]) -> list[tuple[float, float, float]]:
    """`n` different RGB colours: `base` first, then generated ones with hues in `hues`
    (fractions of the colour circle, ``(0.92, 1.15)`` wraps through red), spread by the
    golden ratio and varied in saturation and value, each differing from all before
    it by more than 0.15 in summed |R| + |G| + |B|."""
    out = [mcolors.to_rgb(c) for c in base][:n]
    k = 0
    while len(out) < n:
        k += 1
        hue = (hues[0] + (hues[1] - hues[0]) * ((k * 0.6180339887) % 1.0)) % 1.0
        saturation = (0.9, 0.6, 0.75)[k % 3]
        value = (0.95, 0.7, 0.5, 0.85)[k % 4]
        rgb = tuple(float(v) for v in mcolors.hsv_to_rgb((hue, saturation, value)))
        if all(sum(abs(a - b) for a, b in zip(rgb, c)) > 0.15 for c in out) or k > 50 * n:
            out.append(rgb)  # type: ignore[arg-type]
    return out


def _region_colors(trace: "Trace") -> np.ndarray:
    """An RGBA colour per region, one colour per region: MPI in warm colours, the others
    in cool ones (:data:`MPI_COLORS`, :data:`OTHER_COLORS`, then generated ones).

    Colours go to the regions that occur in the call-path tree (a Score-P
    trace defines hundreds of MPI regions it never enters), in the order
    of their first call path, so a region keeps its colour in every window.
    """
    regions = trace.regions
    out = np.zeros((len(regions), 4))
    out[:] = mcolors.to_rgba("lightgrey")
    mpi: list[int] = []
    other: list[int] = []
    seen: set[int] = set()
    for region in (int(x) for x in trace.callpath_region):
        if region in seen or not 0 <= region < len(regions):
            continue
        seen.add(region)
        (mpi if regions[region].is_mpi else other).append(region)
    for chosen, base, hues in ((mpi, MPI_COLORS, (0.92, 1.15)), (other, OTHER_COLORS, (0.25, 0.8))):
        for region, rgb in zip(chosen, palette(base, len(chosen), hues)):
            out[region] = (*rgb, 1.0)
    return out


def _states(time: np.ndarray, kind: np.ndarray, callpath: np.ndarray, parent: np.ndarray,
            t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals of the innermost open call path inside [t0, t1]: (start, end, call path).

    Only regions the location entered count: after the Leave of its
    outermost region a location is in none (an OpenMP worker thread between
    parallel regions is idle, not in its master's call path)."""
    n = len(time)
    if n < 2:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    lo = max(int(np.searchsorted(time, t0, side="right")) - 1, 0)
    hi = min(int(np.searchsorted(time, t1, side="left")), n - 1)
    if hi <= lo:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    i = np.arange(lo, hi)
    cp = callpath[i].astype(np.int64)
    left = kind[i] == _core.EV_LEAVE
    state = cp.copy()
    ok = left & (cp >= 0)
    state[ok] = parent[cp[ok]]
    steps = (kind[:hi] == _core.EV_ENTER).astype(np.int64) - (kind[:hi] == _core.EV_LEAVE).astype(np.int64)
    state[np.cumsum(steps)[lo:hi] <= 0] = -1  # nothing open on this location
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
        hit = (np.asarray(ev.kind) == _core.EV_LEAVE) & np.isin(np.asarray(ev.callpath), list(init))
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
      ``xxx``, completions ``++``, Wait at Finalize ``...``, OpenMP waiting
      at implicit barriers ``--`` and explicit ones ``oo``, critical-section
      contention ``||``, lock contention ``**``; see
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
      marks the bar it runs along without hiding it.  Zoomed out, when the
      path moves between locations more than :data:`CRITICAL_PATH_SWITCHES`
      times per inch of the time axis, the line is thin and leaves the
      moves out (the legend says so): only the pieces along the bars remain;
      messages crowded more than :data:`MESSAGES_PER_INCH` are drawn faint.

    The title (when no `ax` is given; `title` replaces it, ``""`` omits it)
    names the trace and the window.

    `locations` (default: all loaded) are shown top to bottom, at most
    `max_locations` of them; rows are labelled by rank, or rank:thread in a
    trace with threads (MPI+OpenMP), where a worker thread's row is empty
    while it idles between parallel regions.  Regions and messages are bulk collections
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
            label = _metric_title(source, source.metric(metric)) if metric in source.metric_ids else metric
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
            # zoomed out, many messages side by side would paint the gaps black: draw them faint
            rows_crossed = float(np.abs(seg[:, 1, 1] - seg[:, 0, 1]).sum())
            crowded = rows_crossed > MESSAGES_PER_INCH * _axes_inches(fig, ax) * max(len(locs) - 1, 1)
            width, alpha = (0.3, 0.25) if crowded else (0.6, 0.7)
            ax.add_collection(LineCollection(seg, colors="black", linewidths=width,  # type: ignore[arg-type]
                                             alpha=alpha, gid="messages", zorder=3))
            handles.append(Line2D([], [], color="black", linewidth=width, alpha=alpha, label="message"))
    if result is not None and "critical_path" in result.metric_ids:
        line = _critical_path_line(result, row_of, t0, t1,
                                   max_switches=int(CRITICAL_PATH_SWITCHES * _axes_inches(fig, ax)))
        if line is not None:
            ax.add_line(line)
            crowded = np.isnan(np.asarray(line.get_xdata(), dtype=float)).any() and line.get_linewidth() < 2.0
            handles.append(Line2D([], [], color="black", linewidth=line.get_linewidth(),
                                  label="critical path (its moves left out)" if crowded
                                  else "critical path"))

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


MESSAGES_PER_INCH = 10
"""When more messages than this cross the gap between two rows per inch of the time
axis (on average over the gaps), :func:`timeline` draws them faint (thinner, more
transparent), so that zoomed out they do not paint the picture black."""


def _axes_inches(fig: Figure, ax: Axes) -> float:
    """The width of the Axes in inches (of the figure's current layout)."""
    return max(ax.get_window_extent().width / fig.dpi, 1.0) if fig.dpi else 8.0


CRITICAL_PATH_SWITCHES = 12
"""Moves of the critical path between locations per inch of the time axis above which
:func:`timeline` draws the path thin and without those moves: zoomed out on a
pipelined code the moves would fill the picture with black zig-zags."""


def _critical_path_line(result: AnalysisResult, row_of: dict[int, int], t0: float, t1: float,
                        max_switches: int | None = None) -> Line2D | None:
    """The critical path inside [t0, t1] as one line just above the bars.

    With more than `max_switches` moves between locations in the window the
    line is thin (1 point) and broken at every move, so only the pieces
    along the bars are drawn."""
    seg = result.critical_path.segments
    seg = seg[(seg["end"] >= t0) & (seg["start"] <= t1)]
    if not len(seg):
        return None
    switches = int(np.count_nonzero(seg["location"][1:] != seg["location"][:-1]))
    crowded = max_switches is not None and switches > max_switches
    xs: list[float] = []
    ys: list[float] = []
    last = None
    for s in seg:
        row = row_of.get(int(s["location"]))
        if row is None or (crowded and last is not None and int(s["location"]) != last):
            # the path runs through a location not shown, or moves while zoomed out: break the line
            if xs and not math.isnan(xs[-1]):
                xs.append(math.nan)
                ys.append(math.nan)
        last = int(s["location"])
        if row is None:
            continue
        xs += [max(float(s["start"]), t0), min(float(s["end"]), t1)]
        ys += [row - CRITICAL_PATH_OFFSET, row - CRITICAL_PATH_OFFSET]
    return Line2D(xs, ys, color="black", linewidth=1.0 if crowded else 2.0, solid_capstyle="butt",
                  solid_joinstyle="miter", gid="critical_path", zorder=4)
