"""The text summary of an analysis (:meth:`AnalysisResult.summary`, ``waitscope analyze``).

Laid out like Cube's metric tree and ``cube_stat``:

* the metric tree with inclusive values (a metric includes its
  sub-metrics) and the percentage of total time (``time``, summed over all
  locations); sub-metrics are indented under their parent, only non-zero
  metrics are shown, and where a parent holds more than its shown
  sub-metrics an indented ``(rest of ...)`` line makes the percentages of
  every level add up to their parent's;
* where the MPI time goes: the call paths with the most ``mpi`` time;
* every non-zero wait-state pattern with its top call paths: value,
  percentage of total time, minimum / mean / maximum over ranks and the
  rank of the maximum;
* the delay costs and the critical path when the analysis computed them.

:func:`metric_rows` gives the tree as data (the text and the tests use it).
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


def _seconds(value: float) -> str:
    return f"{value:12.6f} s"


def _percent(value: float, total: float) -> str:
    return f"{100.0 * value / total:7.2f} %" if total else "       - "


def _tree_lines(result: "AnalysisResult", root: str, total: float) -> list[str]:
    lines = []
    for row in metric_rows(result, root):
        label = ("  " * row.depth + (row.name if row.rest else row.id))[:40]
        name = "" if row.rest else row.name
        if row.unit == "sec":
            lines.append(f"  {label:<40} {name:<28}{_seconds(row.value)} {_percent(row.value, total)}")
        else:
            lines.append(f"  {label:<40} {name:<28}{row.value:14,.0f} {row.unit}")
    return lines


def _callpath_table(result: "AnalysisResult", matrix: np.ndarray, total: float, top: int,
                    indent: str = "    ") -> list[str]:
    """The `top` call paths of a [call path, location] matrix with min / mean / max over ranks."""
    per_cp = matrix.sum(axis=1)
    lines = []
    for cp in np.argsort(-per_cp, kind="stable")[:max(top, 0)]:
        if per_cp[cp] <= _tolerance(result):
            break
        ranks, values = per_rank(result, matrix[cp])
        worst = int(np.argmax(values))
        lines.append(f"{indent}{_seconds(per_cp[cp])} {_percent(per_cp[cp], total)}  "
                     f"{values.min():10.6f} {values.mean():10.6f} {values.max():10.6f}  {int(ranks[worst]):>5}  "
                     f"{result.callpath_names[cp]}")
    return lines


TABLE_HEADER = f"    {'value':>14} {'% time':>9}  {'min':>10} {'mean':>10} {'max':>10}  {'rank':>5}  call path"
"""Columns of the call-path tables: summed value, % of total time, min / mean / max over
ranks (seconds) and the rank of the maximum."""


def summary(result: "AnalysisResult", top: int = 5) -> str:
    """The text summary (see the module docstring); `top` call paths per table."""
    if top < 0:
        raise ValueError(f"top must be 0 or more, not {top}")
    ids = set(result.metric_ids)
    total = result.total("time") if "time" in ids else 0.0
    ranks = np.unique(result.location_ranks)
    lines = [f"total time {total:.6f} s, summed over {result.n_locations} locations ({len(ranks)} ranks); "
             f"run length {result.run_length:.6f} s"]
    window = getattr(result, "window", None)
    if window is not None:
        lines.append(f"window {window[0]:.6f} s to {window[1]:.6f} s: the metrics of this part of the run only")

    lines.append("")
    lines.append("metric tree (inclusive values; non-zero metrics; % of total time):")
    for root in TIME_ROOTS:
        if root in ids:
            lines += _tree_lines(result, root, total)
    counts = [m for m in COUNT_METRICS if m in ids and result.total(m)]
    if counts:
        lines.append("  " + ", ".join(f"{m} ({result.metric(m).name}) {result.total(m):,.0f} {result.metric(m).unit}"
                                      for m in counts))

    if "mpi" in ids and result.total("mpi") > 0:
        lines.append("")
        lines.append("MPI time by call path (metric mpi; min / mean / max over ranks, rank of the max):")
        lines.append(TABLE_HEADER)
        lines += _callpath_table(result, np.asarray(result.get("mpi")), total, top)

    eps = _tolerance(result)
    patterns = [m for m in WAIT_PATTERNS if m in ids and result.total(m) > eps]
    lines.append("")
    if patterns:
        lines.append("wait states (non-zero patterns) and their top call paths "
                     "(min / mean / max over ranks, rank of the max):")
        lines.append(TABLE_HEADER)
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
        lines += _tree_lines(result, "delay", total)[1:]
        lines.append("  call paths whose delays caused the most waiting (short + long term):")
        lines.append(TABLE_HEADER)
        lines += _callpath_table(result, short + long_, total, top)
        for root in ("waitstates_direct_vs_indirect", "waitstates_propagating_vs_terminal"):
            if root in ids and result.total(root) > eps:
                lines += _tree_lines(result, root, total)

    if "critical_path" in ids:
        path = result.critical_path
        lines.append("")
        lines.append(f"critical path: {path.length:.6f} s in {len(path.segments)} segments "
                     f"({path.start:.6f} s to {path.end:.6f} s)")
        lines.append("  call paths on the critical path (time on the path, % of the path, imbalance):")
        on_path = path.by_callpath
        for cp in np.argsort(-on_path, kind="stable")[:max(top, 0)]:
            if on_path[cp] <= eps:
                break
            lines.append(f"    {_seconds(on_path[cp])} {_percent(on_path[cp], path.length)}  "
                         f"{path.imbalance[cp]:10.6f} s  {result.callpath_names[cp]}")
        if "performance_impact" in ids and result.total("performance_impact") > eps:
            impact = result.total("performance_impact")
            lines.append(f"  performance impact (% of processes x run time = {impact:.6f} s):")
            lines += _tree_lines(result, "performance_impact", impact)[1:]

    violations = int(np.sum(result.clock_violations))
    if violations:
        lines.append("")
        lines.append(f"clock condition violations: {violations} receive(s) end before their send starts")
    return "\n".join(lines)
