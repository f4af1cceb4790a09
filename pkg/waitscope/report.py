"""The text summary of an analysis (:meth:`AnalysisResult.summary`, ``waitscope analyze``).

Laid out like Cube's metric tree and ``cube_stat``:

* the metric tree with inclusive values (a metric includes its
  sub-metrics) and the percentage of total time (``time``, summed over all
  locations); sub-metrics are indented under their parent, only non-zero
  metrics are shown, and where a parent holds more than its shown
  sub-metrics an indented ``(rest of ...)`` line makes the percentages of
  every level add up to their parent's;
* where the computation and the MPI time go: the call paths with the most
  ``comp`` and ``mpi`` time (and ``omp_time``, the OpenMP runtime, in a
  hybrid run);
* every non-zero wait-state pattern (MPI, and OpenMP in a hybrid run)
  with its top call paths: value, percentage of total time, minimum /
  mean / maximum over ranks and the rank of the maximum;
* the delay costs when the analysis computed them: the largest cause of
  waiting (:func:`culprit`: the call path whose delays caused the most
  waiting, and the rank where it did), by wait-state pattern,
  by the call paths whose delays caused the waiting, and apart from them
  the wait states split into direct / indirect and propagating / terminal;
* the critical path when the analysis computed it.

In a run with threads (MPI+OpenMP) the columns are per location instead
of per rank: minimum / mean / maximum over the locations, and the
location of the maximum named rank.thread (``1.1``: thread 1 of rank 1);
the culprit is a thread of a rank.

Every table has a line of column headings.  With a window
(``analyze(window=...)``) every value is that of the window.
:func:`metric_table` lists one metric's top call paths as ``cube_stat -m
METRIC -t TOP`` does.  :func:`metric_rows` gives the tree as data (the
text and the tests use it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult

WAIT_PATTERNS = (
    "mpi_latesender", "mpi_latesender_wo", "mpi_lswo_different", "mpi_lswo_same", "mpi_latereceiver",
    "mpi_barrier_wait", "mpi_barrier_completion", "mpi_wait_nxn", "mpi_nxn_completion", "mpi_latebroadcast",
    "mpi_earlyreduce", "mpi_earlyscan", "mpi_finalize_wait", "mpi_init_completion",
)
"""The wait-state metrics whose call paths the summary lists (in this order)."""

OMP_WAIT_PATTERNS = ("omp_ibarrier_wait", "omp_ebarrier_wait", "omp_lock_contention_critical",
                     "omp_lock_contention_api")
"""The OpenMP wait states the summary lists after :data:`WAIT_PATTERNS` (only results of
traces with threads have these metrics)."""

TIME_ROOTS = ("time",)
"""Trees of the time hierarchy; the other trees in seconds (delay costs, wait-state
classes, critical path, performance impact) get sections of their own."""

COUNT_METRICS = ("visits", "syncs", "comms", "bytes")


@dataclass(frozen=True)
class Row:
    """One line of the metric tree: a metric, or the rest of a parent beyond its shown sub-metrics."""

    depth: int
    id: str  # metric id; for a rest line "(rest of <parent id>)"
    name: str
    unit: str
    value: float
    parent: str | None
    rest: bool = False


def _tolerance(result: "AnalysisResult") -> float:
    """Values below this are shown as zero (rounding of sums of many numbers)."""
    return 1e-12 * max(abs(result.total("time")), 1.0) if "time" in result.metric_ids else 1e-12


def metric_rows(result: "AnalysisResult", root: str, nonzero: bool = True) -> list[Row]:
    """The subtree of `root` in display order, depth first, with rest lines (see the module docstring)."""
    tree = result.metric_tree()
    eps = _tolerance(result)
    rows: list[Row] = []

    def visit(mid: str, depth: int) -> None:
        m = result.metric(mid)
        value = result.total(mid)
        if nonzero and abs(value) <= eps and depth > 0:
            return
        rows.append(Row(depth, mid, m.name, m.unit, value, m.parent))
        shown = [c for c in tree.get(mid, []) if not (nonzero and abs(result.total(c)) <= eps)]
        for child in shown:
            visit(child, depth + 1)
        if shown:
            rest = value - sum(result.total(c) for c in shown)
            if abs(rest) > eps:
                rows.append(Row(depth + 1, f"(rest of {mid})", f"other {m.name}", m.unit, rest, mid, rest=True))

    visit(root, 0)
    return rows


def per_rank(result: "AnalysisResult", values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-location `values` summed per MPI rank: (ranks, values); locations without rank count as rank -1."""
    ranks = np.asarray(result.location_ranks, dtype=np.int64)
    keys = np.unique(ranks)
    sums = np.array([values[ranks == k].sum() for k in keys], dtype=np.float64)
    return keys, sums


def _threaded(result: "AnalysisResult") -> bool:
    return bool(getattr(result, "has_threads", False))


def per_place(result: "AnalysisResult", values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The places the tables spread a call path's value over: (labels, values).

    Ranks (the locations of a rank summed, labels ``"3"``) for a run
    without threads; for a run with threads every location on its own,
    labelled rank.thread (``"1.1"``: thread 1 of rank 1)."""
    if _threaded(result):
        return [result.location_label(i) for i in range(len(values))], np.asarray(values, dtype=np.float64)
    ranks, sums = per_rank(result, values)
    return [str(int(r)) for r in ranks], sums


def _over(result: "AnalysisResult") -> str:
    """What the min / mean / max columns run over, in words."""
    if _threaded(result):
        return "min / mean / max over locations, location (rank.thread) of the max"
    return "min / mean / max over ranks, rank of the max"


def _seconds(value: float) -> str:
    return f"{value:12.6f} s"


def _percent(value: float, total: float) -> str:
    return f"{100.0 * value / total:7.2f} %" if total else "       - "


def _tree_header(percent_of: str = "% time") -> str:
    return f"  {'metric':<40} {'name':<28}{'value':>14} {percent_of:>9}"


TREE_HEADER = _tree_header()
"""Columns of the metric trees: id (indented by depth), display name, inclusive value, % of total time."""


def _tree_lines(result: "AnalysisResult", root: str, total: float, skip_root: bool = False) -> list[str]:
    lines = []
    rows = metric_rows(result, root)
    for row in rows[1:] if skip_root else rows:
        depth = row.depth - 1 if skip_root else row.depth
        label = ("  " * depth + (row.name if row.rest else row.id))[:40]
        name = "" if row.rest else row.name
        if row.unit == "sec":
            lines.append(f"  {label:<40} {name:<28}{_seconds(row.value)} {_percent(row.value, total)}")
        else:
            lines.append(f"  {label:<40} {name:<28}{row.value:14,.0f} {row.unit}")
    return lines


def _format_value(value: float, unit: str) -> str:
    if unit == "sec":
        return _seconds(value)
    return f"{value:14,.0f}"


def _callpath_table(result: "AnalysisResult", matrix: np.ndarray, total: float, top: int,
                    indent: str = "    ", unit: str = "sec") -> list[str]:
    """The `top` call paths of a [call path, location] matrix with min / mean / max over ranks."""
    per_cp = matrix.sum(axis=1)
    lines = []
    width = _place_width(result)
    small = _tolerance(result) if unit == "sec" else 0.0
    for cp in np.argsort(-per_cp, kind="stable")[:max(top, 0)]:
        if per_cp[cp] <= small:
            break
        labels, values = per_place(result, matrix[cp])
        worst = int(np.argmax(values))
        if unit == "sec":
            spread = f"{values.min():10.6f} {values.mean():10.6f} {values.max():10.6f}"
        else:
            mean = f"{values.mean():10,.1f}" if abs(values.mean()) < 1e5 else f"{values.mean():10,.0f}"
            spread = f"{values.min():10,.0f} {mean} {values.max():10,.0f}"
        lines.append(f"{indent}{_format_value(per_cp[cp], unit)} {_percent(per_cp[cp], total)}  "
                     f"{spread}  {labels[worst]:>{width}}  {result.callpath_names[cp]}")
    return lines


def _place_width(result: "AnalysisResult | None") -> int:
    """Width of the column naming the rank (or location) of the maximum."""
    if result is None or not _threaded(result):
        return 5
    return max([8] + [len(result.location_label(i)) for i in range(result.n_locations)])


def _table_header(percent_of: str = "% time", indent: str = "    ", result: "AnalysisResult | None" = None) -> str:
    place = "location" if result is not None and _threaded(result) else "rank"
    return (f"{indent}{'value':>14} {percent_of:>9}  {'min':>10} {'mean':>10} {'max':>10}  "
            f"{place:>{_place_width(result)}}  call path")


TABLE_HEADER = _table_header()
"""Columns of the call-path tables: summed value, % of total time, min / mean / max over
ranks (seconds) and the rank of the maximum (over locations and the location of the maximum,
``rank.thread``, in a run with threads: :func:`table_header`)."""


def table_header(result: "AnalysisResult", percent_of: str = "% time") -> str:
    """The column headings of `result`'s call-path tables (:data:`TABLE_HEADER` for a run
    without threads; a ``location`` column for one with threads)."""
    return _table_header(percent_of, result=result)

PATH_HEADER = f"    {'on the path':>14} {'% path':>9}  {'imbalance':>12}  call path"
"""Columns of the critical-path table: time on the path, % of the path length, the critical-path
imbalance (time on the path above the average per process) and the call path."""


def metric_table(result: "AnalysisResult", metric: str, top: int = 10, inclusive: bool = False) -> str:
    """One metric's `top` call paths, as ``cube_stat -m METRIC -t TOP`` lists them
    (``waitscope analyze --metric METRIC --top TOP``).

    `metric` is anything :meth:`AnalysisResult.metric_index` accepts (id,
    display name, unique prefix).  Values are exclusive per call path
    (``inclusive=True``: including the call paths below); the table gives
    the value summed over locations, its percentage (of the total time for
    times, of the metric's total otherwise), minimum, mean and maximum over
    ranks and the rank of the maximum (over locations and the location of
    the maximum, rank.thread, in a run with threads).
    """
    if top < 0:
        raise ValueError(f"top must be 0 or more, not {top}")
    m = result.metric(metric)
    matrix = np.asarray(result.inclusive(m.id) if inclusive else result.get(m.id), dtype=np.float64)
    exclusive = matrix if not inclusive else np.asarray(result.get(m.id), dtype=np.float64)
    metric_total = float(exclusive.sum())
    if m.unit == "sec" and "time" in result.metric_ids:
        base, of = result.total("time"), "% time"
    else:
        base, of = metric_total, "% metric"
    n_nonzero = int(np.count_nonzero(np.abs(exclusive.sum(axis=1)) > (_tolerance(result) if m.unit == "sec" else 0)))
    kind = "inclusive" if inclusive else "exclusive"
    total = _seconds(metric_total).strip() if m.unit == "sec" else f"{metric_total:,.0f} {m.unit}"
    share = f" ({_percent(metric_total, base).strip()} of total time)" if of == "% time" else ""
    shown = min(top, n_nonzero)
    unit = "" if m.unit == "sec" else f" (in {m.unit})"
    lines = [f"{m.id} ({m.name}): {total}{share}; {kind} values{unit} of the top {shown} of {n_nonzero} call paths "
             f"({_over(result)}):",
             _table_header(of, result=result)]
    lines += _callpath_table(result, matrix, base, top, unit=m.unit)
    if n_nonzero == 0:
        lines.append("    (zero on every call path)")
    return "\n".join(lines)


@dataclass(frozen=True)
class Culprit:
    """The activity whose delays caused the most waiting (:func:`culprit`)."""

    callpath: int
    """Index of the call path (the delaying activity)."""
    rank: int
    """The MPI rank where it delayed most (of the thread, in a run with threads)."""
    cost: float
    """Its delay costs on that rank (thread), short- plus long-term (seconds)."""
    callpath_cost: float
    """Its delay costs over all ranks (seconds)."""
    share: float
    """`callpath_cost` as a share of all delay costs (of the waiting the delay analysis handled)."""
    thread: int | None = None
    """In a run with threads: the thread of `rank` where it delayed most (None without threads)."""
    location: int | None = None
    """In a run with threads: that thread's location index (None without threads)."""


def culprit(result: "AnalysisResult") -> Culprit | None:
    """The call path whose delays caused the most waiting (short- plus long-term
    delay costs summed over locations), and the rank where it caused most
    (in a run with threads: the location, a thread of a rank); None without
    a delay analysis or without delay costs."""
    if "delay" not in result.metric_ids:
        return None
    costs = np.asarray(result.delay_short, dtype=np.float64) + np.asarray(result.delay_long, dtype=np.float64)
    total = float(costs.sum())
    if total <= _tolerance(result):
        return None
    per_cp = costs.sum(axis=1)
    cp = int(np.argmax(per_cp))
    if _threaded(result):
        loc = int(np.argmax(costs[cp]))
        return Culprit(cp, int(result.location_ranks[loc]), float(costs[cp, loc]), float(per_cp[cp]),
                       float(per_cp[cp]) / total, thread=int(result.location_threads[loc]), location=loc)
    ranks, values = per_rank(result, costs[cp])
    worst = int(np.argmax(values))
    return Culprit(cp, int(ranks[worst]), float(values[worst]), float(per_cp[cp]), float(per_cp[cp]) / total)


def culprit_line(result: "AnalysisResult") -> str | None:
    """The :func:`culprit` in words: the call path, the waiting its delays caused and where
    (None when there is none)."""
    found = culprit(result)
    if found is None:
        return None
    share = found.cost / found.callpath_cost if found.callpath_cost else 0.0
    place = f"rank {found.rank}" if found.thread is None else f"thread {found.thread} of rank {found.rank}"
    where = (f"most on {place} ({100 * share:.0f} % of it)" if share < 0.995
             else f"all of it on {place}")
    return (f"{result.callpath_names[found.callpath]}, whose delays caused {found.callpath_cost:.6f} s of waiting "
            f"({100 * found.share:.1f} % of the delay costs), {where}")


def _window_lines(result: "AnalysisResult") -> list[str]:
    window = getattr(result, "window", None)
    if window is None:
        return []
    try:
        start, end = result.analysed_span
    except ValueError as exc:
        return [f"window {window[0]:.6f} s to {window[1]:.6f} s: {exc}"]
    clipped = "" if (start, end) == tuple(window) else f"; inside the run {start:.6f} s to {end:.6f} s"
    return [f"window {window[0]:.6f} s to {window[1]:.6f} s: the metrics of this part of the run only "
            f"({end - start:.6f} s{clipped})"]


def _processes(result: "AnalysisResult") -> str:
    """``2 ranks``; with threads ``2 ranks x 2 threads`` (or ``2 ranks, 5 threads`` when they differ)."""
    ranks = np.asarray(result.location_ranks, dtype=np.int64)
    keys = np.unique(ranks)
    text = f"{len(keys)} rank{'s' if len(keys) != 1 else ''}"
    if not _threaded(result):
        return text
    counts = {int(np.count_nonzero(ranks == k)) for k in keys}
    if len(counts) == 1:
        return f"{text} x {counts.pop()} threads"
    return f"{text}, {len(ranks)} threads"


def summary(result: "AnalysisResult", top: int = 5) -> str:
    """The text summary (see the module docstring); `top` call paths per table."""
    if top < 0:
        raise ValueError(f"top must be 0 or more, not {top}")
    ids = set(result.metric_ids)
    total = result.total("time") if "time" in ids else 0.0
    lines = [f"total time {total:.6f} s, summed over {result.n_locations} locations ({_processes(result)}); "
             f"run length {result.run_length:.6f} s"]
    lines += _window_lines(result)

    lines.append("")
    lines.append("metric tree (inclusive values; non-zero metrics; % of total time):")
    lines.append(TREE_HEADER)
    for root in TIME_ROOTS:
        if root in ids:
            lines += _tree_lines(result, root, total)
    counts = [m for m in COUNT_METRICS if m in ids and result.total(m)]
    if counts:
        lines.append("  " + ", ".join(f"{m} ({result.metric(m).name}) {result.total(m):,.0f} {result.metric(m).unit}"
                                      for m in counts))

    header = table_header(result)
    for metric, what in (("comp", "Computation"), ("mpi", "MPI time"), ("omp_time", "OpenMP time")):
        if metric in ids and result.total(metric) > 0:
            lines.append("")
            lines.append(f"{what} by call path (metric {metric}; {_over(result)}):")
            lines.append(header)
            lines += _callpath_table(result, np.asarray(result.get(metric)), total, top)

    eps = _tolerance(result)
    patterns = [m for m in WAIT_PATTERNS + OMP_WAIT_PATTERNS if m in ids and result.total(m) > eps]
    lines.append("")
    if patterns:
        lines.append(f"wait states (non-zero patterns) and their top call paths ({_over(result)}):")
        lines.append(header)
        for mid in patterns:
            m = result.metric(mid)
            lines.append(f"  {mid} ({m.name}): {result.total(mid):.6f} s {_percent(result.total(mid), total).strip()}")
            lines += _callpath_table(result, np.asarray(result.get(mid)), total, top)
    else:
        lines.append("wait states: none")

    if "delay" in ids:
        lines.append("")
        short, long_ = result.delay_short, result.delay_long
        lines.append(f"delay costs ({result.delay_model} model): {short.sum():.6f} s short-term + "
                     f"{long_.sum():.6f} s long-term"
                     + (f" + {result.undistributed:.6f} s undistributed" if result.undistributed else "")
                     + f" = handled waiting {result.handled_waiting():.6f} s")
        blame = culprit_line(result)
        if blame is not None:
            lines.append(f"  the largest cause of waiting: {blame}")
        lines.append("  delay costs by wait-state pattern (the waiting each pattern's delays caused):")
        lines.append(TREE_HEADER)
        lines += _tree_lines(result, "delay", total, skip_root=True)
        lines.append("  call paths whose delays caused the most waiting (short + long term):")
        lines.append(header)
        lines += _callpath_table(result, short + long_, total, top)
        for root, title in (("waitstates_direct_vs_indirect",
                             "wait states by cause: direct (caused by a delay of the partner) or indirect "
                             "(passed on by a partner that waited itself)"),
                            ("waitstates_propagating_vs_terminal",
                             "wait states by effect: propagating (they delay others in turn) or terminal")):
            if root in ids and result.total(root) > eps:
                lines.append("")
                lines.append(f"{title}:")
                lines.append(TREE_HEADER)
                lines += _tree_lines(result, root, total)

    if "critical_path" in ids:
        path = result.critical_path
        lines.append("")
        lines.append(f"critical path: {path.length:.6f} s in {len(path.segments)} segments "
                     f"({path.start:.6f} s to {path.end:.6f} s)")
        lines.append("  call paths on the critical path (time on the path, % of the path, imbalance):")
        lines.append(PATH_HEADER)
        on_path = path.by_callpath
        for cp in np.argsort(-on_path, kind="stable")[:max(top, 0)]:
            if on_path[cp] <= eps:
                break
            lines.append(f"    {_seconds(on_path[cp])} {_percent(on_path[cp], path.length)}  "
                         f"{path.imbalance[cp]:10.6f} s  {result.callpath_names[cp]}")
        if "performance_impact" in ids and result.total("performance_impact") > eps:
            impact = result.total("performance_impact")
            lines.append(f"  performance impact (% of processes x run time = {impact:.6f} s):")
            lines.append(_tree_header("% impact"))
            lines += _tree_lines(result, "performance_impact", impact, skip_root=True)

    violations = int(np.sum(result.clock_violations))
    if violations:
        lines.append("")
        lines.append(f"clock condition violations: {violations} receive(s) end before their send starts")
    return "\n".join(lines)
