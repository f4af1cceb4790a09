"""Analysis results: a labelled [metric, call path, location] cube.

Values are seconds (counts for occurrence metrics, bytes for byte
metrics), exclusive along the call-path tree, and each metric holds its
full amount: a metric includes its sub-metrics (``mpi_latesender``
includes ``mpi_latesender_wo``), as in Scalasca's reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence, Union

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from .trace import Trace

CallpathKey = Union[int, str]


@dataclass(frozen=True)
class Metric:
    """One metric of the tree (Scalasca's unique name as ``id``)."""

    id: str
    name: str
    unit: str
    parent: str | None
    description: str


class AnalysisResult:
    """The result of :meth:`waitscope.Trace.analyze`.

    Attributes
    ----------
    metric_ids : list of str
        Metric identifiers, in cube order.
    callpath_names : list of str
        Region names joined by '/' from the root, e.g. ``main/MPI_Recv``.
    location_ranks : ndarray
        MPI rank of every location, in location order.
    cube : ndarray, shape (metrics, call paths, locations)
    """

    def __init__(self, trace: "Trace", raw: dict[str, Any]):
        self._trace = trace
        self._raw = raw
        self.metrics: list[Metric] = [
            Metric(m["id"], m["name"], m["unit"], m["parent"], m["description"]) for m in raw["metrics"]
        ]
        self.metric_ids: list[str] = [m.id for m in self.metrics]
        self._metric_index = {m: i for i, m in enumerate(self.metric_ids)}
        self.cube: np.ndarray = raw["cube"]
        self.callpath_names: list[str] = list(trace.callpath_names)
        self._callpath_index = {n: i for i, n in enumerate(self.callpath_names)}
        self.callpath_parent: np.ndarray = trace.callpath_parent
        self.location_ranks: np.ndarray = trace.location_ranks
        self.clock_violations: np.ndarray = raw["clock_violations"]
        """Receives per location that end before their send starts."""
        self.delay_model: str | None = raw["delay_model"]

    # ---- labels ------------------------------------------------------------

    @property
    def n_locations(self) -> int:
        return self.cube.shape[2]

    def metric(self, metric_id: str) -> Metric:
        return self.metrics[self.metric_index(metric_id)]

    def metric_index(self, metric_id: str) -> int:
        try:
            return self._metric_index[metric_id]
        except KeyError:
            raise KeyError(f"unknown metric {metric_id!r}; this result has: {', '.join(self.metric_ids)}") from None

    def callpath_index(self, callpath: CallpathKey) -> int:
        """Index of a call path given by index or full name."""
        if isinstance(callpath, (int, np.integer)):
            if not 0 <= int(callpath) < len(self.callpath_names):
                raise IndexError(f"call path {callpath} out of range ({len(self.callpath_names)} call paths)")
            return int(callpath)
        try:
            return self._callpath_index[callpath]
        except KeyError:
            raise KeyError(f"unknown call path {callpath!r}") from None

    def metric_children(self, metric_id: str) -> list[str]:
        return [m.id for m in self.metrics if m.parent == metric_id]

    def metric_tree(self) -> dict[str | None, list[str]]:
        """Children of every metric (key None: the roots)."""
        tree: dict[str | None, list[str]] = {}
        for m in self.metrics:
            parent = m.parent if m.parent in self._metric_index else None
            tree.setdefault(parent, []).append(m.id)
        return tree

    # ---- selection ---------------------------------------------------------

    def get(self, metric: str, callpath: CallpathKey | None = None, location: int | None = None) -> Any:
        """Values of one metric: [call path, location], a row, a column or a number."""
        values = self.cube[self.metric_index(metric)]
        if callpath is not None:
            values = values[self.callpath_index(callpath)]
            return values if location is None else float(values[int(location)])
        return values if location is None else values[:, int(location)]

    def inclusive(self, metric: str) -> np.ndarray:
        """[call path, location] values including every call path below."""
        values = np.array(self.cube[self.metric_index(metric)], dtype=np.float64)
        parent = self.callpath_parent
        # children have larger indices than their parents in the tree
        for cp in range(len(parent) - 1, -1, -1):
            p = int(parent[cp])
            if p >= 0:
                values[p] += values[cp]
        return values

    def by_location(self, metric: str) -> np.ndarray:
        """Sum over call paths: one value per location."""
        return self.cube[self.metric_index(metric)].sum(axis=0)

    def by_callpath(self, metric: str, inclusive: bool = False) -> np.ndarray:
        """Sum over locations: one value per call path."""
        values = self.inclusive(metric) if inclusive else self.cube[self.metric_index(metric)]
        return values.sum(axis=1)

    def total(self, metric: str) -> float:
        return float(self.cube[self.metric_index(metric)].sum())

    def fraction(self, metric: str, of: str = "time") -> float:
        """Share of a metric in another one (e.g. Late Sender time in total time)."""
        denominator = self.total(of)
        return self.total(metric) / denominator if denominator else 0.0

    def to_pandas(self, metrics: Sequence[str] | None = None, nonzero: bool = True) -> "pandas.DataFrame":
        """Long table: metric, callpath, location, rank, value."""
        import pandas as pd

        ids = list(metrics) if metrics is not None else self.metric_ids
        frames = []
        for mid in ids:
            values = self.cube[self.metric_index(mid)]
            cps, locs = np.nonzero(values) if nonzero else np.indices(values.shape).reshape(2, -1)
            frames.append(
                pd.DataFrame(
                    {
                        "metric": mid,
                        "callpath": np.array(self.callpath_names, dtype=object)[cps],
                        "location": locs,
                        "rank": self.location_ranks[locs],
                        "value": values[cps, locs],
                    }
                )
            )
        if not frames:
            return pd.DataFrame(columns=["metric", "callpath", "location", "rank", "value"])
        return pd.concat(frames, ignore_index=True)

    # ---- text --------------------------------------------------------------

    WAIT_PATTERNS = (
        "mpi_latesender",
        "mpi_latesender_wo",
        "mpi_latereceiver",
        "mpi_barrier_wait",
        "mpi_barrier_completion",
        "mpi_wait_nxn",
        "mpi_nxn_completion",
        "mpi_latebroadcast",
        "mpi_earlyreduce",
        "mpi_earlyscan",
        "mpi_finalize_wait",
        "mpi_init_completion",
    )

    def summary(self, top: int = 5) -> str:
        """A short report: time, waiting per pattern, worst call paths and locations."""
        total = self.total("time")
        lines = [f"total time (all locations): {total:.6f} s over {self.n_locations} locations"]
        for mid in ("execution", "comp", "mpi"):
            if mid in self._metric_index:
                lines.append(f"  {mid:<24}{self.total(mid):14.6f} s {100 * self.fraction(mid):7.2f} %")
        lines.append("waiting time per pattern:")
        for mid in self.WAIT_PATTERNS:
            if mid in self._metric_index:
                value = self.total(mid)
                lines.append(f"  {mid:<24}{value:14.6f} s {100 * self.fraction(mid):7.2f} %")
        waits = [m for m in self.WAIT_PATTERNS if m in self._metric_index and m not in
                 ("mpi_latesender_wo", "mpi_barrier_completion", "mpi_nxn_completion", "mpi_init_completion")]
        if waits:
            per_cp = sum(self.by_callpath(m) for m in waits)
            per_loc = sum(self.by_location(m) for m in waits)
            lines.append(f"call paths with the most waiting:")
            for cp in np.argsort(-per_cp)[:top]:
                if per_cp[cp] > 0:
                    lines.append(f"  {per_cp[cp]:14.6f} s  {self.callpath_names[cp]}")
            lines.append(f"locations with the most waiting:")
            for loc in np.argsort(-per_loc)[:top]:
                if per_loc[loc] > 0:
                    lines.append(f"  {per_loc[loc]:14.6f} s  location {loc} (rank {self.location_ranks[loc]})")
        violations = int(np.sum(self.clock_violations))
        if violations:
            lines.append(f"clock condition violations: {violations} receive(s) end before their send starts")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<waitscope.AnalysisResult {len(self.metric_ids)} metrics x {len(self.callpath_names)} call paths"
                f" x {self.n_locations} locations>")
