"""Comparing two analyses: what changed, where, and which delays changed with it.

:func:`compare` takes two :class:`~waitscope.AnalysisResult` objects (two
runs of one program, two scales, a run and its simulation with
:meth:`waitscope.Trace.simulate`) and returns a table of metric, call
path, (rank,) before, after and change, sorted by the size of the change.
Call paths are aligned by their names (``main/hsmoc/comm2/MPI_Waitall``):
a call path that only one result has counts 0 in the other.  With
``locations=True`` the rows are also split by MPI rank, which needs both
results to have the same ranks.

For a wait-state metric that changed, the ``explanation`` column says
which delay costs changed with it, when both results have delay costs
(``analyze(delay_model=...)``): the delay costs of the same pattern
(short- plus long-term, e.g. ``delay_latesender`` +
``delay_latesender_longterm`` for ``mpi_latesender``) per call path of
the delaying activity, and the ranks where they changed most, e.g.
``Late Sender in main/comm1/MPI_Waitall shrank 2.3 s; delay costs in
main/lorentz on ranks 21-22, 25-26 shrank 2.1 s``.

:func:`compare_rows` gives the same rows as plain tuples (no pandas
needed; ``waitscope diff`` prints them); :func:`compare` needs pandas
(the ``pandas`` extra: ``pip install waitscope[pandas]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from .report import WAIT_PATTERNS

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from .result import AnalysisResult

__all__ = ["compare", "compare_rows", "Row", "DEFAULT_METRICS", "PATTERN_DELAYS", "rank_ranges", "RUN_TIME", "format_rows", "side_by_side"]

RUN_TIME = "run_time"
"""Pseudo metric of the first row: the run length of each result (call path "")."""

PATTERN_DELAYS = {
    "mpi_latesender": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_latesender_wo": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_lswo_different": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_lswo_same": ("delay_latesender", "delay_latesender_longterm"),
    "mpi_latereceiver": ("delay_latereceiver", "delay_latereceiver_longterm"),
    "mpi_barrier_wait": ("delay_barrier", "delay_barrier_longterm"),
    "mpi_wait_nxn": ("delay_n2n", "delay_n2n_longterm"),
    "mpi_latebroadcast": ("delay_12n", "delay_12n_longterm"),
    "mpi_earlyreduce": ("delay_n21", "delay_n21_longterm"),
}
"""The delay-cost metrics (short-term, long-term) that account for each wait-state metric."""

DEFAULT_METRICS = (
    ("comp", "mpi") + tuple(WAIT_PATTERNS)
    + ("mpi_wait_direct", "mpi_wait_indirect", "delay")
    + tuple(f"delay_{k}_aggregate" for k in ("latesender", "latereceiver", "barrier", "n2n", "12n", "n21"))
)
"""The metrics :func:`compare` lists unless told otherwise (those both results have)."""


@dataclass(frozen=True)
class Row:
    """One line of a comparison (``rank`` is None unless split by rank)."""

    metric: str
    callpath: str
    rank: int | None
    before: float
    after: float
    explanation: str = ""

    @property
    def change(self) -> float:
        """after - before"""
        return self.after - self.before


def rank_ranges(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 7, 9, 10]`` -> ``"0-3, 7, 9-10"``."""
    values = sorted({int(r) for r in ranks})
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts)


def _aligned_ranks(a: "AnalysisResult", b: "AnalysisResult") -> bool:
    ra, rb = np.asarray(a.location_ranks), np.asarray(b.location_ranks)
    return len(ra) == len(rb) and bool(np.array_equal(np.sort(ra), np.sort(rb)))


def _per_rank(result: "AnalysisResult", matrix: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """[call path, location] -> [call path, rank] in the order of `ranks`."""
    out = np.zeros((matrix.shape[0], len(ranks)))
    where = {int(r): i for i, r in enumerate(ranks)}
    for loc, r in enumerate(result.location_ranks):
        out[:, where[int(r)]] += matrix[:, loc]
    return out


def _by_name(result: "AnalysisResult", matrix: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Rows of `matrix` (one per call path of `result`) moved to the positions of `names`."""
    out = np.zeros((len(names),) + matrix.shape[1:])
    index = {n: i for i, n in enumerate(names)}
    for cp, name in enumerate(result.callpath_names):
        out[index[name]] += matrix[cp]
    return out


def _verb(change: float) -> str:
    return "grew" if change > 0 else "shrank"


def _pattern_name(result: "AnalysisResult", metric: str) -> str:
    return result.metric(metric).name


def _delay_matrix(result: "AnalysisResult", pattern: str) -> np.ndarray | None:
    ids = PATTERN_DELAYS.get(pattern)
    if ids is None or any(m not in result.metric_ids for m in ids):
        return None
    return sum(np.asarray(result.get(m), dtype=np.float64) for m in ids)  # type: ignore[return-value]


def _explain_pattern(a: "AnalysisResult", b: "AnalysisResult", pattern: str, names: Sequence[str],
                     ranks: np.ndarray | None, top: int, eps: float) -> str:
    """Which delay costs of `pattern` changed, per call path of the delaying activity (and ranks)."""
    da, db = _delay_matrix(a, pattern), _delay_matrix(b, pattern)
    if da is None or db is None:
        return ""
    if ranks is not None:
        ca, cb = _by_name(a, _per_rank(a, da, ranks), names), _by_name(b, _per_rank(b, db, ranks), names)
    else:
        ca, cb = _by_name(a, da.sum(axis=1, keepdims=True), names), _by_name(b, db.sum(axis=1, keepdims=True), names)
    diff = cb - ca
    per_cp = diff.sum(axis=1)
    parts = []
    for cp in np.argsort(-np.abs(per_cp), kind="stable")[:top]:
        if abs(per_cp[cp]) <= eps:
            break
        text = f"delay costs in {names[cp]}"
        if ranks is not None:
            row = diff[cp] * np.sign(per_cp[cp])
            # the ranks that make up most (90 %) of the change, largest first
            order = np.argsort(-row, kind="stable")
            cum = np.cumsum(row[order])
            n = int(np.searchsorted(cum, 0.9 * cum[-1] - eps)) + 1 if cum[-1] > 0 else 0
            chosen = [int(ranks[i]) for i in order[:max(n, 1)] if row[i] > eps]
            if chosen:
                ranges = rank_ranges(chosen).split(", ")
                shown = ", ".join(ranges[:6]) + (f", ... ({len(chosen)} ranks)" if len(ranges) > 6 else "")
                text += f" on rank{'s' if len(chosen) > 1 else ''} {shown}"
        parts.append(f"{text} {_verb(per_cp[cp])} {abs(per_cp[cp]):.3g} s")
    return "; ".join(parts)


def compare_rows(a: "AnalysisResult", b: "AnalysisResult", metrics: Sequence[str] | None = None,
                 locations: bool = False, explain: bool = True, tolerance: float | None = None,
                 top: int = 2) -> list[Row]:
    """The rows of :func:`compare` as :class:`Row` objects, sorted by |change| (largest first).

    The first row is always :data:`RUN_TIME` (the two run lengths).  Rows
    whose before and after are both within `tolerance` of 0 are left out
    (default: 1e-9 of the larger summed ``time``).  `top` limits the call
    paths an explanation names.
    """
    names = list(dict.fromkeys(list(a.callpath_names) + list(b.callpath_names)))
    ids = [m for m in (DEFAULT_METRICS if metrics is None else metrics)]
    missing = [m for m in ids if m not in a.metric_ids or m not in b.metric_ids]
    if metrics is not None and missing:
        raise ValueError(f"metrics {missing} are not in both results (before has {len(a.metric_ids)} metrics, "
                         f"after {len(b.metric_ids)}; delay metrics need analyze(delay_model=...) on both)")
    ids = [m for m in ids if m not in missing]
    aligned = _aligned_ranks(a, b)
    if locations and not aligned:
        raise ValueError(f"locations=True needs the same MPI ranks in both results; before has "
                         f"{len(a.location_ranks)} locations, after {len(b.location_ranks)}")
    ranks = np.unique(np.asarray(a.location_ranks)) if aligned else None
    scale = max(abs(a.total("time")) if "time" in a.metric_ids else 0.0,
                abs(b.total("time")) if "time" in b.metric_ids else 0.0, 1.0)
    eps = 1e-9 * scale if tolerance is None else float(tolerance)

    rows: list[Row] = []
    explanations: dict[str, str] = {}
    for mid in ids:
        ma, mb = np.asarray(a.get(mid), dtype=np.float64), np.asarray(b.get(mid), dtype=np.float64)
        if locations and ranks is not None:
            va, vb = _by_name(a, _per_rank(a, ma, ranks), names), _by_name(b, _per_rank(b, mb, ranks), names)
        else:
            va, vb = _by_name(a, ma.sum(axis=1), names), _by_name(b, mb.sum(axis=1), names)
        changed = explain and mid in PATTERN_DELAYS and abs(vb.sum() - va.sum()) > eps
        if changed and mid not in explanations:
            explanations[mid] = _explain_pattern(a, b, mid, names, ranks, top, eps)
        for cp, name in enumerate(names):
            cols = range(va.shape[1]) if va.ndim == 2 else [None]
            for col in cols:
                before = float(va[cp] if col is None else va[cp, col])
                after = float(vb[cp] if col is None else vb[cp, col])
                if abs(before) <= eps and abs(after) <= eps:
                    continue
                note = ""
                if changed and abs(after - before) > eps and explanations.get(mid):
                    note = f"{_pattern_name(a, mid)} in {name} {_verb(after - before)} {abs(after - before):.3g} s; " \
                           f"{explanations[mid]}"
                rank = None if col is None else int(ranks[col])  # type: ignore[index]
                rows.append(Row(mid, name, rank, before, after, note))
    rows.sort(key=lambda r: -abs(r.change))
    return [Row(RUN_TIME, "", None, a.run_length, b.run_length)] + rows


def compare(a: "AnalysisResult", b: "AnalysisResult", metrics: Sequence[str] | None = None,
            locations: bool = False, explain: bool = True, tolerance: float | None = None,
            top: int = 2) -> "pandas.DataFrame":
    """Compares two analysis results: a pandas DataFrame sorted by |change|.

    Columns: ``metric``, ``callpath``, (``rank`` with ``locations=True``),
    ``before``, ``after``, ``change`` (after - before), ``relative``
    (change / before; NaN where before is 0) and ``explanation`` (for
    wait-state metrics that changed: which delay costs changed with them).
    The first row is the run time (metric :data:`RUN_TIME`).

    `metrics` defaults to :data:`DEFAULT_METRICS` (those both results
    have); metrics named explicitly must be in both.  Call paths are aligned
    by name; ``locations=True`` splits the rows by MPI rank (both results
    need the same ranks).  Needs pandas (``pip install waitscope[pandas]``).
    """
    from . import _optional

    pd = _optional.require("pandas", "waitscope.compare")
    rows = compare_rows(a, b, metrics=metrics, locations=locations, explain=explain, tolerance=tolerance, top=top)
    data = {
        "metric": [r.metric for r in rows],
        "callpath": [r.callpath for r in rows],
        "before": np.array([r.before for r in rows]),
        "after": np.array([r.after for r in rows]),
    }
    if locations:
        data = {"metric": data["metric"], "callpath": data["callpath"],
                "rank": pd.array([r.rank for r in rows], dtype="Int64"),
                "before": data["before"], "after": data["after"]}
    frame = pd.DataFrame(data)
    frame["change"] = frame["after"] - frame["before"]
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["relative"] = np.where(frame["before"] != 0, frame["change"] / frame["before"].where(frame["before"] != 0, 1), np.nan)
    frame["explanation"] = [r.explanation for r in rows]
    return frame


def _line_of(r: Row) -> str:
    return (f"{r.metric:<28} {r.before:12.6f} {r.after:12.6f} {r.change:+12.6f}  "
            f"{r.callpath}{'' if r.rank is None else f' (rank {r.rank})'}")


def format_rows(rows: Sequence[Row], top: int = 20, label_before: str = "before", label_after: str = "after") -> str:
    """A text table of the first `top` rows (the run time and the largest changes)."""
    lines = [f"{'metric':<28} {label_before:>12} {label_after:>12} {'change':>12}  call path"]
    # the run time, then the changes that are more than rounding
    shown = rows[:1] + [r for r in rows[1:] if abs(r.change) > 1e-9 * max(abs(r.before), abs(r.after))]
    if len(shown) == 1:
        lines.append(_line_of(rows[0]))
        lines.append("no metric changed")
        return "\n".join(lines)
    for r in shown[:top + 1]:
        lines.append(_line_of(r))
        if r.explanation:
            lines.append(f"{'':<28}   {r.explanation}")
    return "\n".join(lines)


def _line(label: str, before: float, after: float) -> str:
    change = after - before
    if abs(change) <= 1e-12 * max(abs(before), abs(after)):
        change = 0.0  # rounding of sums
    rel = f"{100 * change / before:+8.2f} %" if before else "        -"
    if len(label) > 44:
        label = label[:43] + "…"
    return f"  {label:<44} {before:12.6f} {after:12.6f} {change:+12.6f} {rel}"


def side_by_side(a: "AnalysisResult", b: "AnalysisResult", top: int = 5, label_before: str = "before",
                 label_after: str = "after") -> str:
    """Before and after, side by side (``waitscope whatif``): run time, waiting per
    pattern, delay costs per call path (when both have them), and where the
    saving comes from (the explanations of the wait-state changes)."""
    header = f"  {'':<44} {label_before:>12} {label_after:>12} {'change':>12} {'':>10}"
    lines = [header, _line("run time (s)", a.run_length, b.run_length)]
    eps = 1e-9 * max(a.total("time"), b.total("time"), 1.0)
    patterns = [m for m in WAIT_PATTERNS if m in a.metric_ids and m in b.metric_ids
                and max(abs(a.total(m)), abs(b.total(m))) > eps]
    lines.append("waiting time per pattern (s, summed over locations):")
    if not patterns:
        lines.append("  none")
    for m in patterns:
        lines.append(_line(f"{m} ({a.metric(m).name})", a.total(m), b.total(m)))
    has_delay = "delay" in a.metric_ids and "delay" in b.metric_ids
    if has_delay:
        names = list(dict.fromkeys(list(a.callpath_names) + list(b.callpath_names)))
        da = _by_name(a, (a.delay_short + a.delay_long).sum(axis=1), names)
        db = _by_name(b, (b.delay_short + b.delay_long).sum(axis=1), names)
        lines.append("delay costs per call path of the delaying activity (short + long term, s):")
        order = [int(i) for i in np.argsort(-np.maximum(np.abs(da), np.abs(db)), kind="stable")[:top]
                 if max(abs(da[i]), abs(db[i])) > eps]
        if not order:
            lines.append("  none")
        for cp in order:
            name = names[cp] if len(names[cp]) <= 44 else "…" + names[cp][-43:]
            lines.append(_line(name, float(da[cp]), float(db[cp])))
    lines.append("where the saving comes from:")
    rows = [r for r in compare_rows(a, b, metrics=patterns, explain=has_delay)[1:] if r.metric in PATTERN_DELAYS]
    shown = 0
    for r in rows:
        if shown >= top or abs(r.change) <= eps:
            break
        text = r.explanation or f"{a.metric(r.metric).name} in {r.callpath} {_verb(r.change)} {abs(r.change):.3g} s"
        lines.append(f"  {text}")
        shown += 1
    if not shown:
        lines.append("  no wait state changed")
    return "\n".join(lines)
