"""Plots of traces and analysis results (needs matplotlib: ``python -m pip install matplotlib``).

* :func:`heatmap`, :func:`heatmaps`: a metric per location on the Cartesian
  process topology, as Cube's topology view shows it (as in Figs. 5, 8, 9
  and 12 of Böhme et al., ICPP 2010); several panels share one colour
  scale; without a topology the ranks in a row (or ``dims=``); a hybrid
  MPI+OpenMP trace of Score-P on its "Process x Thread" grid, ranks by
  threads (:func:`thread_topology`);
* :func:`timeline`: regions per location over time, messages, wait states
  (hatched) and the critical path;
* :func:`delay_profile`: short- and long-term delay costs per call path,
  for one delay model or several side by side;
* :func:`whatif`: a metric per location before and after a change (a
  run and its simulation, two runs) on the process topology (as Fig. 12 of
  Böhme et al., ICPP 2010);
* :func:`comm_matrix`: bytes or messages per sender and receiver rank on
  a logarithmic colour scale (linear for values close together);
* :func:`critical_path_profile`: critical-path time per call path next to
  the average time per process, the critical-path imbalance hatched (as
  Fig. 1b of Böhme et al., IPDPS 2012);
* :func:`timeseries`: a metric per visit of a repeating region (each
  iteration), per location.

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
greens and purples (one colour per region, however many, stable for a
trace); time runs left to right, location 0 is the top row.  The critical
path runs in the gap just above the bars; zoomed out it is thin and its
moves between rows are left out.
"""

from __future__ import annotations

# the shared module first: it raises the ImportError that names the install command
from ._plot_base import (DEFAULT_CMAP, GRID_BAD_COLOR, MODEL_COLORS, MPI_COLORS, OTHER_COLORS, _figure_of,
                         _Figure, _mix, _new_figure, _short, _single_axes)
from ._plot_heatmap import (ANNOTATE_CELLS, DELAY_ALIASES, STRIP_LABEL, Coords, Panel, _annotate, _callpath_label,
                            _check_share, _cmap, _draw_plane, _flat_axes, _grid, _matrix, _metric_info,
                            _metric_title, _norm, _parse_panels, _placement, _share_colorbar, _share_norm,
                            _subtree_sum, format_value, heatmap, heatmaps, location_values, metric_title,
                            run_length, thread_topology, topology_grid)
from ._plot_comm import comm_matrix
from ._plot_profiles import activity_average, critical_path_profile, delay_profile
from ._plot_timeseries import timeseries
from ._plot_whatif import whatif
from ._plot_timeline import (CRITICAL_PATH_OFFSET, CRITICAL_PATH_SWITCHES, INIT_REGIONS, TIMELINE_BAR, WAIT_HATCHES,
                             _critical_path_line,
                             _init_end, _rects, _region_colors, _run_span, _states, _wait_source, default_window,
                             palette, timeline, wait_intervals)

__all__ = [
    "heatmap",
    "heatmaps",
    "topology_grid",
    "thread_topology",
    "metric_title",
    "location_values",
    "run_length",
    "timeline",
    "default_window",
    "delay_profile",
    "critical_path_profile",
    "activity_average",
    "wait_intervals",
    "timeseries",
    "whatif",
    "comm_matrix",
]
