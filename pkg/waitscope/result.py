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

from . import _callpaths, _metrics, _optional
from ._names import WAIT_CLASSES
from .report import WAIT_PATTERNS

if TYPE_CHECKING:  # pragma: no cover
    import os

    import pandas

    from .pop import PopMetrics
    from .trace import Trace

CallpathKey = Union[int, str]

"""Names of wait-state classes in delay records (index = the C core's code)."""

WRONG_ORDER = ("", "same", "different")
"""Values of the ``wrong_order`` field of wait-state records (index = the C core's code)."""

DELAY_SHORT = ("delay_latesender", "delay_latereceiver", "delay_barrier", "delay_n2n", "delay_12n", "delay_n21",
               "delay_ompbarrier", "delay_ompidle")
DELAY_LONG = tuple(m + "_longterm" for m in DELAY_SHORT)
HANDLED_WAITS = ("mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_wait_nxn",
                 "mpi_latebroadcast", "mpi_earlyreduce", "omp_ebarrier_wait", "omp_ibarrier_wait")
"""The wait states whose cost the delay analysis accounts (with the idle
time of OpenMP worker threads outside parallel regions: handled_waiting)."""


class LabelledArray(np.ndarray):
    """A [call path, column] array that knows its labels: ``callpaths`` (the
    call-path name of every row), ``columns`` (the location index or MPI
    rank of every column) and ``column_name`` (``"location"`` or ``"rank"``).

    It is an ndarray: arithmetic, ``sum``, indexing and comparisons work as
    before.  Results of the same shape (``a * 2``, ``a - b``) keep the
    labels; anything of another shape (a row, ``a.sum(axis=1)``, a number)
    is a plain ndarray or scalar, whose labels would no longer fit.
    :meth:`row` selects a call path by name, :meth:`to_pandas` gives a
    pandas DataFrame with the call paths as index and the columns named.
    """

    callpaths: list[str] | None
    columns: np.ndarray | None
    column_name: str

    def __new__(cls, values: Any, callpaths: Sequence[str], columns: Sequence[int],
                column_name: str) -> "LabelledArray":
        obj = np.asarray(values).view(cls)
        if obj.ndim != 2 or obj.shape != (len(callpaths), len(columns)):
            raise ValueError(f"labels for a {len(callpaths)} x {len(columns)} array, got shape {obj.shape}")
        obj.callpaths = list(callpaths)
        obj.columns = np.asarray(columns, dtype=np.int64)
        obj.column_name = column_name
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        same = obj is not None and getattr(obj, "shape", None) == self.shape
        self.callpaths = getattr(obj, "callpaths", None) if same else None
        self.columns = getattr(obj, "columns", None) if same else None
        self.column_name = getattr(obj, "column_name", "location")

    def __array_wrap__(self, out: np.ndarray, context: Any = None, return_scalar: bool = False) -> Any:
        if out.shape != self.shape or self.callpaths is None:
            plain = out.view(np.ndarray)
            return plain[()] if return_scalar else plain
        return super().__array_wrap__(out, context, return_scalar)

    def __getitem__(self, key: Any) -> Any:
        got = super().__getitem__(key)
        if isinstance(got, LabelledArray) and (got.shape != self.shape or got.callpaths is None):
            return got.view(np.ndarray)
        return got

    def __reduce__(self) -> Any:  # pickling keeps the labels
        function, arguments, state = super().__reduce__()  # type: ignore[misc]
        return function, arguments, (state, (self.callpaths, self.columns, self.column_name))

    def __setstate__(self, state: Any) -> None:
        base, (self.callpaths, self.columns, self.column_name) = state
        super().__setstate__(base)

    @property
    def locations(self) -> np.ndarray | None:
        """The location index of every column (None when the columns are ranks)."""
        return self.columns if self.column_name == "location" else None

    @property
    def ranks(self) -> np.ndarray | None:
        """The MPI rank of every column (None when the columns are locations)."""
        return self.columns if self.column_name == "rank" else None

    def row(self, callpath: CallpathKey) -> np.ndarray:
        """The values of one call path, given by index, full name or unique suffix (``"main/MPI_Recv"``)."""
        if self.callpaths is None:
            raise ValueError("this array has no call-path labels")
        if isinstance(callpath, (int, np.integer)) and not isinstance(callpath, bool):
            return np.asarray(self)[int(callpath)]
        return np.asarray(self)[_callpaths.resolve(self.callpaths, callpath, ".callpaths lists")]

    def to_pandas(self, nonzero: bool = False) -> "pandas.DataFrame":
        """A DataFrame: call paths as the index, one column per location or rank
        (``nonzero=True`` leaves out the call paths that are 0 everywhere).  Needs pandas."""
        pd = _optional.require("pandas", "LabelledArray.to_pandas")
        values = np.asarray(self)
        callpaths = self.callpaths if self.callpaths is not None else list(range(values.shape[0]))
        columns = self.columns if self.columns is not None else np.arange(values.shape[1])
        frame = pd.DataFrame(values, index=pd.Index(callpaths, name="callpath"),
                             columns=pd.Index(columns, name=self.column_name))
        return frame.loc[np.any(values != 0, axis=1)] if nonzero else frame


@dataclass(frozen=True)
class CriticalPath:
    """The critical path (Böhme et al., IPDPS 2012): segments, profile and indicators.

    ``segments`` is a structured array (location, rank, callpath, start,
    end) ordered in time; callpath is -1 where the path runs outside any
    region.  The path runs from the Enter of ``MPI_Init`` (``start``) to
    the latest Enter of ``MPI_Finalize`` (``end``; ties: the lowest
    location), as in Scalasca 2.6; without them, from the first event of
    the location that holds the path at its beginning to the last event
    of the trace.
    """

    segments: np.ndarray
    start: float
    end: float
    profile: np.ndarray
    """Time on the path per [call path, location], a :class:`LabelledArray`
    (``profile.callpaths``, ``profile.locations``, ``profile.to_pandas()``)."""
    imbalance: np.ndarray
    """Critical-path imbalance per call path (seconds)."""
    partitions: np.ndarray
    """Partition of every location used for the imbalance costs."""

    @property
    def length(self) -> float:
        """Summed duration of the segments (equals end - start)."""
        return float(np.sum(self.segments["end"] - self.segments["start"]))

    @property
    def by_callpath(self) -> np.ndarray:
        """Time on the path per call path."""
        return self.profile.sum(axis=1)


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
        MPI rank of every location, in location order (the rank of its
        process: the threads of an MPI+OpenMP process share it).
    location_threads : ndarray
        Thread number of every location within its process (0: master).
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
        self.location_threads: np.ndarray = np.asarray(trace.location_threads, dtype=np.int64)
        """Thread number of every location within its process (0: the master thread)."""
        self.clock_violations: np.ndarray = raw["clock_violations"]
        """Receives per location that end before their send starts."""
        self.delay_model: str | None = raw["delay_model"]
        self.undistributed: float = float(raw.get("undistributed", 0.0))
        """Waiting time whose cost could not be charged to any activity."""
        self.timings: dict[str, float] = dict(raw.get("timings") or {})
        """Wall-clock seconds of each step of the analysis that ran, in the
        order they ran: ``matching``, ``wait states``, and with a delay model
        or the critical path ``sync points``, ``delay points``, ``backward
        replay``, ``path walk``, ``delay forward``, ``path pieces``,
        ``derived metrics`` (docs/performance.md).  In a threaded analysis
        those of thread 0, in the parallel mode those of the process that
        holds this result; loading the trace and building the Python result
        are not included."""
        window = raw.get("window")
        self.window: tuple[float, float] | None = None if window is None else (float(window[0]), float(window[1]))
        """The analysis window (start, end) in seconds, or None for the whole run."""

    # ---- labels ------------------------------------------------------------

    @property
    def trace(self) -> "Trace":
        """The trace this result was computed from (definitions, topology, events)."""
        return self._trace

    @property
    def n_locations(self) -> int:
        return self.cube.shape[2]

    @property
    def has_threads(self) -> bool:
        """Whether a process of the trace has several locations (threads: a hybrid MPI+OpenMP run)."""
        return bool(np.any(self.location_threads != 0))

    def location_label(self, location: int) -> str:
        """How reports name a location: its rank (``"3"``), or rank.thread
        (``"1.1"``: thread 1 of rank 1) when the run has threads."""
        rank = int(self.location_ranks[location])
        return f"{rank}.{int(self.location_threads[location])}" if self.has_threads else str(rank)

    def metric(self, metric_id: str) -> Metric:
        """The :class:`Metric` a key names (see :meth:`metric_index`)."""
        return self.metrics[self.metric_index(metric_id)]

    def metric_index(self, metric_id: str) -> int:
        """Index of a metric given by its id (``"mpi_latesender"``), display name
        (``"Late Sender"``, case, spaces and ``_`` ignored: ``"late_sender"``) or a
        unique prefix of either (``"mpi_latesend"``); see :mod:`waitscope._metrics`.

        A display name several metric trees share names the metric of the
        time hierarchy.  Raises KeyError naming the closest metrics for an
        unknown key, ValueError naming the candidates for an ambiguous one.
        """
        found = self._metric_index.get(metric_id) if isinstance(metric_id, str) else None
        return found if found is not None else _metrics.resolve(self.metrics, metric_id)

    def callpath_index(self, callpath: CallpathKey) -> int:
        """Index of a call path given by index, full name or a unique suffix.

        ``"MPI_Recv"``, ``"main/MPI_Recv"`` and
        ``"int main(int, char**)/MPI_Recv"`` all name the same call path of
        a Score-P trace: whole path components are matched, and a component
        matches a region by its name or by the function name inside a C/C++
        signature (``main`` for ``int main(int, char**)``); see
        :mod:`waitscope._callpaths`.  Raises KeyError naming the closest call
        paths for an unknown key, ValueError naming the candidates for an
        ambiguous one.
        """
        if isinstance(callpath, (int, np.integer)) and not isinstance(callpath, bool):
            if not 0 <= int(callpath) < len(self.callpath_names):
                raise IndexError(f"call path {callpath} out of range ({len(self.callpath_names)} call paths)")
            return int(callpath)
        found = self._callpath_index.get(callpath) if isinstance(callpath, str) else None
        root = self._trace.program_region
        if root is not None and self.callpath_names[:1] != [root]:
            root = None
        return found if found is not None else _callpaths.resolve(self.callpath_names, callpath, root)

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
        """Long table: metric, callpath, location, rank, value (needs pandas)."""
        pd = _optional.require("pandas", "AnalysisResult.to_pandas")

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

    # ---- delay analysis --------------------------------------------------

    def _require(self, metric: str, option: str) -> None:
        if metric not in self._metric_index:
            raise ValueError(f"this result has no {metric!r}: analyze with {option}")

    @property
    def delay_short(self) -> np.ndarray:
        """Short-term delay costs charged per [call path, location] (all wait-state classes)."""
        self._require("delay_latesender", 'delay_model="proportional" or "wait-first"')
        return sum(self.get(m) for m in DELAY_SHORT if m in self._metric_index)  # type: ignore[return-value]

    @property
    def delay_long(self) -> np.ndarray:
        """Long-term delay costs charged per [call path, location] (all wait-state classes)."""
        self._require("delay_latesender", 'delay_model="proportional" or "wait-first"')
        return sum(self.get(m) for m in DELAY_LONG if m in self._metric_index)  # type: ignore[return-value]

    def delay_vectors(self, by: str = "rank") -> tuple[LabelledArray, LabelledArray]:
        """Delay vectors: (short, long) costs as [call path, rank] arrays.

        ``by="rank"`` sums the locations of a rank (its threads); ``by="location"``
        gives one column per location (per thread of an MPI+OpenMP process),
        labelled with ``.locations``.  Both are :class:`LabelledArray`:
        ``short.callpaths`` names the rows, ``short.ranks`` (or
        ``short.locations``) the columns, ``short.to_pandas()`` gives a table.
        """
        if by not in ("rank", "location"):
            raise ValueError(f"delay_vectors: by must be 'rank' or 'location', not {by!r}")
        if by == "location":
            return (LabelledArray(np.asarray(self.delay_short), self.callpath_names,
                                  np.arange(len(self.location_ranks)), "location"),
                    LabelledArray(np.asarray(self.delay_long), self.callpath_names,
                                  np.arange(len(self.location_ranks)), "location"))
        ranks = self.location_ranks
        n_ranks = int(ranks.max()) + 1 if len(ranks) else 0
        out = []
        for values in (self.delay_short, self.delay_long):
            per_rank = np.zeros((values.shape[0], n_ranks))
            for loc, rank in enumerate(ranks):
                if rank >= 0:
                    per_rank[:, rank] += values[:, loc]
            out.append(LabelledArray(per_rank, self.callpath_names, np.arange(n_ranks), "rank"))
        return out[0], out[1]

    def handled_waiting(self) -> float:
        """Total waiting time of the wait states the delay analysis accounts,
        and the time OpenMP worker threads idle outside parallel regions
        (omp_idle_threads without omp_limited_parallelism)."""
        total = sum(self.total(m) for m in HANDLED_WAITS if m in self._metric_index)
        if "omp_idle_threads" in self._metric_index:
            total += self.total("omp_idle_threads") - self.total("omp_limited_parallelism")
        return total

    @property
    def delay_records(self) -> np.ndarray:
        """One record per delay calculation (``delay_records=True`` when analyzing).

        Fields: delayer, delayer_rank, waiter, waiter_rank, pattern, sync_event,
        sync_time, wait, longterm_in, short_cost, long_cost, propagated,
        vector_offset, vector_length.  :meth:`delay_vector` gives the non-zero
        entries of a record's delay vector d = t_s - w_s - t_r (Böhme et al., ICPP 2010).
        """
        rec = self._raw["records"]
        n = len(rec["delayer"])
        dtype = np.dtype([
            ("delayer", np.int64), ("delayer_rank", np.int64), ("waiter", np.int64), ("waiter_rank", np.int64),
            ("pattern", "U16"), ("sync_event", np.int64), ("sync_time", np.float64), ("wait", np.float64),
            ("longterm_in", np.float64), ("short_cost", np.float64), ("long_cost", np.float64),
            ("propagated", np.float64), ("vector_offset", np.int64), ("vector_length", np.int64),
        ])
        out = np.zeros(n, dtype=dtype)
        for key in ("delayer", "waiter", "sync_event", "sync_time", "wait", "longterm_in", "short_cost",
                    "long_cost", "propagated", "vector_offset", "vector_length"):
            out[key] = rec[key]
        out["delayer_rank"] = self.location_ranks[rec["delayer"]] if n else []
        out["waiter_rank"] = self.location_ranks[rec["waiter"]] if n else []
        out["pattern"] = [WAIT_CLASSES[int(k)] for k in rec["kind"]]
        return out

    def delay_vector(self, record: int) -> tuple[list[str], np.ndarray]:
        """Call paths and values of the non-zero entries of one record's delay vector.

        The vector is signed: d = t_s - w_s - t_r per call path (the
        delayer's time in the synchronization interval minus its waiting,
        minus the waiter's time).  Negative entries are where the waiter
        spent more time; the costs are distributed over the positive part
        only (the difference profile).
        """
        rec = self._raw["records"]
        off, n = int(rec["vector_offset"][record]), int(rec["vector_length"][record])
        cps = rec["vector_callpath"][off:off + n]
        return [self.callpath_names[int(c)] for c in cps], rec["vector_value"][off:off + n].copy()

    # ---- wait-state instances ------------------------------------------------

    @property
    def has_wait_states(self) -> bool:
        """Whether the result has its wait-state records (``wait_records=True`` when analyzing)."""
        return self._raw.get("wait_records") is not None

    @property
    def wait_states(self) -> np.ndarray:
        """Every wait-state instance, one record each (``wait_records=True`` when analyzing).

        A structured array ordered by location, event and metric, made by the
        C core where it adds the waiting time to the cube, so that summed per
        (metric, callpath, location) the ``wait`` values are the cube's
        values of these metrics: ``mpi_latesender``, ``mpi_latereceiver``,
        ``mpi_barrier_wait``, ``mpi_barrier_completion``, ``mpi_wait_nxn``,
        ``mpi_nxn_completion``, ``mpi_latebroadcast``, ``mpi_earlyreduce``,
        ``mpi_earlyscan``, ``mpi_finalize_wait``, ``mpi_init_completion`` and,
        in a hybrid MPI+OpenMP trace, the OpenMP wait states
        ``omp_ibarrier_wait``, ``omp_ebarrier_wait``,
        ``omp_lock_contention_critical``, ``omp_lock_contention_api`` (on the
        thread that waited; ``rank`` is its process's rank).
        Only instances with a positive waiting time are listed.

        Fields:

        * ``location``, ``rank``: the location that waited;
        * ``callpath``: index of the waiting MPI call's call path (the one
          the metric is charged to; for a Late Receiver the call completing
          the send, e.g. ``MPI_Wait``);
        * ``metric``: the metric id (above);
        * ``wrong_order``: for Late Senders that also count in
          ``mpi_latesender_wo``, ``"same"`` (``mpi_lswo_same``) or
          ``"different"`` (``mpi_lswo_different``) source; ``""`` otherwise;
        * ``start``, ``end``: the waiting interval in seconds, e.g. Late
          Sender [enter of the receiving call, min(enter of the send, leave)],
          Late Receiver [enter of the call completing the send, post of the
          receive], completions [max(first leave, last enter), own leave]
          (docs/metrics.md);
        * ``wait``: the value added to the cube; ``end - start == wait``;
        * ``event``: index, in the location's events, of the record that
          waited: the receive's message record (Late Sender), the send's
          message record or its ``MpiIsendComplete`` (Late Receiver), the
          ``MpiCollectiveEnd`` (collectives), the Leave of ``MPI_Init`` /
          ``MPI_Finalize``;
        * ``partner``, ``partner_rank``: the location waited for: the sender
          (Late Sender), the receiver (Late Receiver), the last member to
          enter (barrier, N x N, Early Reduce, Finalize), the root (Late
          Broadcast), the latest member up to the waiting one (Early Scan);
          -1 for the completion metrics.

        Builds a new array on each access; ``pandas.DataFrame(r.wait_states)``
        makes a table of it.  Raises ValueError when the analysis ran
        without ``wait_records=True``.
        """
        return self._wait_states()

    def _wait_states(self, locations: Sequence[int] | None = None,
                     window: tuple[float, float] | None = None) -> np.ndarray:
        """:attr:`wait_states` of `locations` only, and of intervals overlapping `window` = (t0, t1)."""
        raw = self._raw.get("wait_records")
        if raw is None:
            raise ValueError("this result has no wait-state records: analyze with wait_records=True")
        keep = None
        if locations is not None:
            keep = np.isin(raw["location"], np.asarray(list(locations), dtype=np.int64))
        if window is not None:
            t0, t1 = float(window[0]), float(window[1])
            inside = (raw["end"] > t0) & (raw["start"] < t1)
            keep = inside if keep is None else keep & inside
        cols = {k: (raw[k] if keep is None else raw[k][keep]) for k in
                ("location", "callpath", "pattern", "wrong_order", "start", "end", "wait", "event", "partner")}
        metrics = np.array(raw["metrics"])
        n = len(cols["location"])
        out = np.zeros(n, dtype=[
            ("location", np.int64), ("rank", np.int64), ("callpath", np.int64), ("metric", metrics.dtype),
            ("wrong_order", "U9"), ("start", np.float64), ("end", np.float64), ("wait", np.float64),
            ("event", np.int64), ("partner", np.int64), ("partner_rank", np.int64),
        ])
        for key in ("location", "callpath", "start", "end", "wait", "event", "partner"):
            out[key] = cols[key]
        ranks = np.asarray(self.location_ranks, dtype=np.int64)
        out["rank"] = ranks[cols["location"]]
        out["partner_rank"] = np.where(cols["partner"] >= 0, ranks[np.maximum(cols["partner"], 0)], -1)
        out["metric"] = metrics[cols["pattern"]]
        out["wrong_order"] = np.array(WRONG_ORDER)[cols["wrong_order"]]
        return out

    # ---- per visit -----------------------------------------------------------

    def timeseries(self, metric: str, region: int | str) -> np.ndarray:
        """The metric in each visit of a repeating region, per location.

        Returns an array [visit, location]: row k holds the metric inside
        the k-th visit of `region` (e.g. each ``timestep``) on every
        location, NaN where a location visited it fewer times.  `region` is
        a region name (all its call paths; nested visits count in the
        outer one) or a call path (index, name or suffix).  Summed over the
        visits, a column is the region's inclusive metric on that location.
        Supported: the time hierarchy (``time``, ``comp``, ``mpi``, ...),
        ``visits``, the wait-state metrics charged per instance (these need
        ``wait_records=True``) and ``critical_path``; see
        :mod:`waitscope._timeseries`.  ``plot.timeseries`` draws it.
        """
        from ._timeseries import timeseries

        return timeseries(self, metric, region)

    # ---- critical path -------------------------------------------------------

    @property
    def critical_path(self) -> CriticalPath:
        """The critical path, its profile and indicators (``critical_path=True``)."""
        self._require("critical_path", "critical_path=True")
        raw = self._raw["path"]
        n = len(raw["location"])
        seg = np.zeros(n, dtype=[("location", np.int64), ("rank", np.int64), ("callpath", np.int64),
                                 ("start", np.float64), ("end", np.float64)])
        seg["location"] = raw["location"]
        seg["rank"] = self.location_ranks[raw["location"]] if n else []
        seg["callpath"] = raw["callpath"]
        seg["start"] = raw["start"]
        seg["end"] = raw["end"]
        return CriticalPath(
            segments=seg,
            start=float(self._raw["path_start"]),
            end=float(self._raw["path_end"]),
            profile=LabelledArray(self.get("critical_path"), self.callpath_names, np.arange(self.n_locations),
                                  "location"),
            imbalance=self.by_callpath("critical_path_imbalance"),
            partitions=self._raw["partition"],
        )

    # ---- reports -----------------------------------------------------------

    def to_cube(self, path: str | os.PathLike[str]) -> str:
        """Writes a Cube4 report (``.cubex``) for CubeGUI and pycubexr; returns its path.

        ".cubex" is appended when the name has no suffix; another suffix
        (``report.txt``) raises ValueError, a missing directory
        FileNotFoundError, before anything is written.  See
        :mod:`waitscope.cube` for the format and its semantics.
        """
        from .cube import write_cube

        return write_cube(self, path)

    def to_perfetto(self, path: str | os.PathLike[str], window: Sequence[float] | None = None,
                    locations: Sequence[int] | None = None) -> str:
        """Writes the trace with its analysis as Chrome/Perfetto trace-event JSON; returns the path.

        Regions as nested slices per location, wait states (with
        ``wait_records=True``) as slices named by pattern, messages as flow
        arrows, the critical path (with ``critical_path=True``) as a track of
        its own and a counter of the waiting locations; open it in
        https://ui.perfetto.dev or ``chrome://tracing``.  `window` = (start,
        end) in seconds and `locations` (indices) keep the file small.  See
        :mod:`waitscope.perfetto`.
        """
        from .perfetto import to_perfetto

        return to_perfetto(self, path, window=window, locations=locations)

    def to_hatchet(self) -> Any:
        """The result as a Hatchet ``GraphFrame``: the call-path tree as its graph,
        every metric per (call path, rank), exclusive and inclusive (``"time (inc)"``);
        per (call path, rank, thread) for a result with threads (hybrid MPI+OpenMP).

        Needs Hatchet (``pip install llnl-hatchet``); Thicket takes such
        GraphFrames for studies over several runs.  See :mod:`waitscope._hatchet`.
        """
        from ._hatchet import to_hatchet

        return to_hatchet(self)

    # ---- text --------------------------------------------------------------

    WAIT_PATTERNS = WAIT_PATTERNS
    """The wait-state metrics the summary lists with their call paths (:data:`waitscope.report.WAIT_PATTERNS`)."""

    @property
    def run_length(self) -> float:
        """Wall-clock seconds of the analysed run (from the trace)."""
        return float(self.trace.run_length)

    @property
    def analysed_span(self) -> tuple[float, float]:
        """(start, end) in seconds of what the result describes: the run
        (:attr:`Trace.time_span`), or the part of :attr:`window` inside it.
        Raises ValueError for a window that does not overlap the run."""
        start, end = self.trace.time_span
        if self.window is None:
            return start, end
        lo, hi = max(start, self.window[0]), min(end, self.window[1])
        if not lo < hi:
            raise ValueError(f"the window {self.window[0]:.6g} s to {self.window[1]:.6g} s lies outside the run, "
                             f"which spans {start:.6g} s to {end:.6g} s")
        return lo, hi

    @property
    def analysed_length(self) -> float:
        """Seconds of :attr:`analysed_span`: the run length, or the window's part of the run."""
        start, end = self.analysed_span
        return end - start

    def pop_metrics(self, ideal: Any = "simulate") -> "PopMetrics":
        """The POP efficiencies: parallel efficiency, load balance, communication,
        serialisation and transfer efficiency (see :mod:`waitscope.pop`).

        `ideal` gives the run time on an ideal network, which serialisation
        and transfer efficiency need: ``"simulate"`` simulates it with
        ``trace.simulate(network="ideal")`` where available, None leaves
        them out (None in the result), a number of seconds, a simulated
        Trace or its AnalysisResult give it.  A run with threads also gets
        POP's hybrid efficiencies (``.hybrid``: MPI and OpenMP parallel
        efficiency and their factors; the simulation moves a process's
        threads with their master)."""
        from .pop import pop_metrics

        return pop_metrics(self, ideal)

    def summary(self, top: int = 5) -> str:
        """A readable report, as informative as ``cube_stat``: the metric tree
        (inclusive values, display names, % of total time adding up per
        level), the computation and the MPI time by call path, every non-zero
        wait-state pattern with its top `top` call paths (min / mean / max over
        ranks and the rank of the maximum; over locations, named rank.thread,
        in a run with threads), and the delay costs (with the
        direct / indirect and propagating / terminal wait states apart) and
        critical path when the result has them.  See :mod:`waitscope.report`."""
        from .report import summary

        return summary(self, top=top)

    def __repr__(self) -> str:
        return (f"<waitscope.AnalysisResult {len(self.metric_ids)} metrics x {len(self.callpath_names)} call paths"
                f" x {self.n_locations} locations>")
