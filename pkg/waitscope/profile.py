"""Wait-state profiles: estimates without a trace (Mao et al., EuroMPI/ASIA 2014)
and their check against the trace analysis of the same run.

``waitscope profile`` (or ``waitscope trace --profile``) runs an MPI program
with the interposition library, which keeps, per rank and per (call path,
MPI function, message-size class, root or not), a count, the summed and the
minimum duration of the calls, and writes ``DIR/profile.json`` at
``MPI_Finalize`` (docs/measuring.md describes the file).  No event is
stored, so the profile does not grow with the run.

:func:`open_profile` reads it; :meth:`Profile.estimates` turns it into the
estimates of Mao, Böhme, Hermanns, Geimer, Lorenz and Wolf, "Catching idlers
with ease: a lightweight wait-state profiler for MPI programs" (EuroMPI/ASIA
2014; "the paper" below): everything a call
takes beyond the minimum duration of its category is waiting.

* **Late Sender** (``mpi_latesender``): ``MPI_Recv``, ``MPI_Wait``,
  ``MPI_Waitall`` (and ``MPI_Sendrecv(_replace)``, whose receive a trace
  analysis also charges Late Sender); the minimum is the rank-local one, over all call paths of
  the function with the same size class (the paper's section 3.1):
  ``L(c, p) = sum_s [sum_i d_i(c, p, s) - n(c, p, s) * M_p(f(c), s)]``.
  Estimates of ``MPI_Waitall`` call paths are flagged unreliable
  (:attr:`ProfileEstimates.unreliable`): the paper found them to
  overestimate the waiting substantially (section 4.1.1).
* **Wait at N x N** (``mpi_wait_nxn``): ``MPI_Allreduce``,
  ``MPI_Allgather(v)``, ``MPI_Alltoall(v,w)``, ``MPI_Reduce_scatter(_block)``,
  with the global minimum over all ranks (section 3.2).  ``MPI_Barrier``
  is estimated the same way as ``mpi_barrier_wait``.
* **Late Broadcast** (``mpi_latebroadcast``): non-root ``MPI_Bcast``,
  ``MPI_Scatter(v)``; **Early Reduce** (``mpi_earlyreduce``): the root of
  ``MPI_Reduce``, ``MPI_Gather(v)``; both with the global minimum of the
  calls in the same role (root or not), as section 3.3 proposes.
* **Late Receiver** (``mpi_latereceiver``): ``MPI_Ssend`` with the
  rank-local minimum (section 3.3).

:meth:`Profile.compare` puts these estimates next to the trace analysis of
the same run per call path, as wait ratios (waiting / total execution time)
and their difference in percentage points, leaving out call paths under
0.5 % in both, as the paper's section 4.1 does.

:func:`waitscope.open` and the command line (``waitscope info``, ``waitscope
analyze``) open a profile where they would open a trace: ``profile.json``
itself, or a directory that holds one and no trace (:func:`profile_path`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ._core import TraceError
from .result import AnalysisResult
from .trace import Location, Region

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from .trace import Trace

__all__ = ["Profile", "ProfileEntry", "ProfileEstimates", "open_profile", "profile_path", "PROFILE_FILE",
           "ESTIMATED_METRICS"]

PROFILE_FILE = "profile.json"
FORMAT_NAME = "waitscope-profile"
FORMAT_VERSION = 1

# ---- which MPI function is estimated how --------------------------------------

LATE_SENDER_FUNCTIONS = ("MPI_Recv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Wait", "MPI_Waitall")
UNRELIABLE_FUNCTIONS = ("MPI_Waitall",)
LATE_RECEIVER_FUNCTIONS = ("MPI_Ssend",)
NXN_FUNCTIONS = ("MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv",
                 "MPI_Alltoallw", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block")
BARRIER_FUNCTIONS = ("MPI_Barrier",)
ONE_TO_N_FUNCTIONS = ("MPI_Bcast", "MPI_Scatter", "MPI_Scatterv")
N_TO_ONE_FUNCTIONS = ("MPI_Reduce", "MPI_Gather", "MPI_Gatherv")
OTHER_COLLECTIVES = ("MPI_Scan", "MPI_Exscan")
P2P_PREFIXES = ("MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend", "MPI_Recv", "MPI_Isend", "MPI_Ibsend",
                "MPI_Issend", "MPI_Irsend", "MPI_Irecv", "MPI_Sendrecv", "MPI_Wait", "MPI_Test", "MPI_Probe",
                "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe", "MPI_Mrecv", "MPI_Imrecv", "MPI_Start",
                "MPI_Request_free", "MPI_Cancel")

ESTIMATED_METRICS = ("mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_wait_nxn",
                     "mpi_latebroadcast", "mpi_earlyreduce")
"""The wait-state metrics :meth:`Profile.estimates` estimates (and :meth:`Profile.compare` compares)."""

# (id, name, unit, parent, description): ids and tree as in the trace analysis (docs/metrics.md)
_METRICS = (
    ("time", "Time", "sec", None,
     "Time of each rank from MPI_Init to MPI_Finalize: MPI calls on their call paths, the rest on the root "
     "call path."),
    ("execution", "Execution", "sec", "time", "As time (the profile has no measurement overhead of its own)."),
    ("comp", "Computation", "sec", "execution", "Time outside MPI calls, charged to the root call path."),
    ("mpi", "MPI", "sec", "execution", "Time inside MPI calls."),
    ("mpi_management", "Management", "sec", "mpi", "MPI calls that neither communicate nor synchronize."),
    ("mpi_synchronization", "Synchronization", "sec", "mpi", "Time in MPI_Barrier."),
    ("mpi_sync_collective", "Collective", "sec", "mpi_synchronization", "Time in MPI_Barrier."),
    ("mpi_barrier_wait", "Wait at Barrier", "sec", "mpi_sync_collective",
     "Estimate: time in MPI_Barrier beyond the global minimum duration of a barrier."),
    ("mpi_communication", "Communication", "sec", "mpi", "Time in MPI calls that move data."),
    ("mpi_point2point", "Point-to-point", "sec", "mpi_communication",
     "Time in point-to-point calls (sends, receives, waits, tests)."),
    ("mpi_latesender", "Late Sender", "sec", "mpi_point2point",
     "Estimate (Mao et al. 2014): time in MPI_Recv, MPI_Sendrecv, MPI_Wait, MPI_Waitall beyond the rank-local minimum "
     "duration of the function and message-size class; unreliable for MPI_Waitall."),
    ("mpi_latereceiver", "Late Receiver", "sec", "mpi_point2point",
     "Estimate: time in MPI_Ssend beyond the rank-local minimum duration of the size class."),
    ("mpi_collective", "Collective", "sec", "mpi_communication", "Time in collective communication calls."),
    ("mpi_earlyreduce", "Early Reduce", "sec", "mpi_collective",
     "Estimate: time of the root in MPI_Reduce, MPI_Gather(v) beyond the global minimum of roots."),
    ("mpi_latebroadcast", "Late Broadcast", "sec", "mpi_collective",
     "Estimate: time of non-roots in MPI_Bcast, MPI_Scatter(v) beyond the global minimum of non-roots."),
    ("mpi_wait_nxn", "Wait at N x N", "sec", "mpi_collective",
     "Estimate (Mao et al. 2014): time in N-to-N collectives beyond the global minimum duration of the function and "
     "size class."),
    ("visits", "Visits", "occ", None, "Number of MPI calls on the call path."),
)


def _category(function: str) -> str:
    """The time metric an MPI function's time belongs to."""
    if function in BARRIER_FUNCTIONS:
        return "mpi_sync_collective"
    if function in NXN_FUNCTIONS or function in ONE_TO_N_FUNCTIONS or function in N_TO_ONE_FUNCTIONS \
            or function in OTHER_COLLECTIVES:
        return "mpi_collective"
    if function.startswith(P2P_PREFIXES):
        return "mpi_point2point"
    return "mpi_management"


_ANCESTORS = {
    "mpi_sync_collective": ("mpi_synchronization", "mpi"),
    "mpi_collective": ("mpi_communication", "mpi"),
    "mpi_point2point": ("mpi_communication", "mpi"),
    "mpi_management": ("mpi",),
}


@dataclass(frozen=True)
class ProfileEntry:
    """One row of the profile: an MPI function on a call path, a size class and a role.

    The per-rank arrays have one value per rank; ``minimum`` is NaN where
    the rank has no such call.
    """

    callpath: int
    """Index into :attr:`Profile.callpath_names`."""
    function: str
    size_class: int
    """floor(log2(bytes)) of the payload; -1 for 0 bytes or none."""
    root: bool
    collective: bool
    count: np.ndarray
    sum: np.ndarray
    minimum: np.ndarray
    global_min: float | None
    """Collectives: the minimum over all ranks (None for point to point)."""


class _Definitions:
    """What an :class:`AnalysisResult` and the Cube writer read from a trace,
    made from a profile: call paths, regions, one location per rank."""

    def __init__(self, path: str, callpath_names: list[str], ranks: int):
        self.path = path
        self.callpath_names = callpath_names
        index = {name: i for i, name in enumerate(callpath_names)}
        self.callpath_parent = np.array(
            [index[n.rsplit("/", 1)[0]] if "/" in n else -1 for n in callpath_names], dtype=np.int64)
        leaves = [n.rsplit("/", 1)[-1] for n in callpath_names]
        region_index: dict[str, int] = {}
        for leaf in leaves:
            region_index.setdefault(leaf, len(region_index))
        self.regions = [
            Region(index=i, id=i, name=name, canonical_name=name, description="",
                   role="function", paradigm="mpi" if name.startswith("MPI_") else "user",
                   file="MPI" if name.startswith("MPI_") else "", begin_line=-1, end_line=-1)
            for name, i in region_index.items()
        ]
        self.callpath_region = np.array([region_index[leaf] for leaf in leaves], dtype=np.int64)
        self.location_ranks = np.arange(ranks, dtype=np.int64)
        self.location_threads = np.zeros(ranks, dtype=np.int64)
        self.locations = [Location(index=r, id=r, name="Master thread", rank=r, process=f"MPI Rank {r}", thread=0,
                                   type="cpu_thread", n_records=0) for r in range(ranks)]
        self.cart_topologies: list[Any] = []
        #: the profile's call paths begin at the first function on the stack
        #: (no program region)
        self.program_region: str | None = None


class ProfileEstimates(AnalysisResult):
    """The wait-state estimates of Mao et al. (EuroMPI/ASIA 2014) from a profile, as a labelled cube.

    The layout is :class:`AnalysisResult`'s: ``metric_ids``,
    ``callpath_names``, ``cube[metric, callpath, rank]`` (one location per
    rank), ``get``, ``total``, ``by_callpath``, ``to_pandas``, ``to_cube``.
    Metrics: ``time``, ``execution``, ``comp`` (the time outside MPI, all
    on the root call path), ``mpi`` and its parts, the estimates of
    :data:`ESTIMATED_METRICS`, and ``visits`` (MPI calls).
    """

    def __init__(self, profile: "Profile", cube: np.ndarray, unreliable: Iterable[str]):
        metrics = [dict(id=m[0], name=m[1], unit=m[2], parent=m[3], description=m[4]) for m in _METRICS]
        raw = {"metrics": metrics, "cube": cube, "clock_violations": np.zeros(profile.ranks, dtype=np.int64),
               "delay_model": None}
        super().__init__(profile._definitions, raw)  # type: ignore[arg-type]
        self.profile = profile
        self.unreliable: frozenset[str] = frozenset(unreliable)
        """Call paths whose estimate Mao et al. found unreliable (those of ``MPI_Waitall``)."""

    @property
    def trace(self) -> Any:  # type: ignore[override]
        raise AttributeError("profile estimates have no trace: use .profile")

    @property
    def run_length(self) -> float:
        """The longest rank's execution time (MPI_Init to MPI_Finalize)."""
        return float(np.max(self.profile.execution_time))

    def summary(self, top: int = 5) -> str:
        lines = [f"wait-state estimates from the profile {self.profile.path}: no trace, so every MPI call's time "
                 "beyond the minimum of its kind counts as waiting (Mao et al., EuroMPI/ASIA 2014); delay costs "
                 "and the critical path need a trace (waitscope trace)"]
        lines.append(super().summary(top))
        if self.unreliable:
            lines.append("unreliable estimates (MPI_Waitall, often overestimated):")
            lines.extend(f"  {name}" for name in sorted(self.unreliable))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<waitscope.ProfileEstimates {len(self.metric_ids)} metrics x {len(self.callpath_names)} call paths"
                f" x {self.n_locations} ranks>")


class Profile:
    """A wait-state profile (``profile.json``), as :func:`open_profile` reads it.

    Attributes: ``path``, ``mpi`` (the MPI library's version string),
    ``command``, ``ranks``, ``callpath_names`` (ancestors the file leaves
    out are added, parents before children), ``execution_time`` and
    ``mpi_time`` (seconds per rank) and ``entries`` (:class:`ProfileEntry`).
    """

    def __init__(self, path: str, data: dict[str, Any]):
        self.path = path
        self.mpi: str = data["mpi"]
        self.command: str = data["command"]
        self.ranks: int = data["ranks"]
        self.execution_time: np.ndarray = data["execution_time"]
        self.mpi_time: np.ndarray = data["mpi_time"]
        self.callpath_names: list[str] = data["callpaths"]
        self.entries: list[ProfileEntry] = data["entries"]
        self._definitions = _Definitions(path, self.callpath_names, self.ranks)

    @property
    def run_length(self) -> float:
        """The longest rank's execution time (MPI_Init to MPI_Finalize), seconds."""
        return float(np.max(self.execution_time)) if len(self.execution_time) else 0.0

    def analyze(self, delay_model: str | None = None, critical_path: bool = False,
                window: Any = None, **ignored: Any) -> "ProfileEstimates":
        """The estimates (:meth:`estimates`), so that ``waitscope.open(path).analyze()``
        works on a profile as on a trace.  A profile has no events: `delay_model`,
        `critical_path` and `window` raise ValueError (they need a trace); the
        arguments of a trace's analysis that change no value (``progress``,
        ``threads``) are accepted and ignored."""
        for name, value in (("delay_model", delay_model), ("critical_path", critical_path), ("window", window)):
            if value:
                raise ValueError(f"{name}: {self.path} is a wait-state profile, which has no events; "
                                 "delay costs, the critical path and time windows need a trace "
                                 "(waitscope trace instead of waitscope profile)")
        unknown = sorted(set(ignored) - {"progress", "threads", "schedule_seed"})
        if unknown:
            raise TypeError(f"Profile.analyze: {', '.join(unknown)} need a trace ({self.path} is a profile)")
        return self.estimates()

    @property
    def n_calls(self) -> int:
        """MPI calls the profile counts, over all ranks."""
        return int(sum(int(e.count.sum()) for e in self.entries))

    # ---- the estimates -------------------------------------------------------

    def _minima(self) -> tuple[dict[tuple[str, int, bool], np.ndarray], dict[tuple[str, int, bool], float]]:
        """Rank-local (per rank) and global minima of each (function, size class, root) over call paths."""
        local: dict[tuple[str, int, bool], np.ndarray] = {}
        glob: dict[tuple[str, int, bool], float] = {}
        for e in self.entries:
            key = (e.function, e.size_class, e.root)
            m = local.setdefault(key, np.full(self.ranks, np.inf))
            np.fmin(m, e.minimum, out=m)
            g = e.global_min if e.global_min is not None else float(np.nanmin(e.minimum)) \
                if np.any(e.count > 0) else math.inf
            glob[key] = min(glob.get(key, math.inf), g)
        return local, glob

    def estimates(self) -> ProfileEstimates:
        """The estimates as a cube [metric, call path, rank] (module docstring)."""
        ids = [m[0] for m in _METRICS]
        mi = {m: i for i, m in enumerate(ids)}
        cube = np.zeros((len(ids), len(self.callpath_names), self.ranks))
        local, glob = self._minima()
        unreliable: set[str] = set()
        for e in self.entries:
            cp, f = e.callpath, e.function
            cube[mi["mpi"], cp] += e.sum
            for metric in (_category(f),) + _ANCESTORS[_category(f)][:-1]:
                cube[mi[metric], cp] += e.sum
            cube[mi["visits"], cp] += e.count
            key = (f, e.size_class, e.root)
            metric = None
            if f in LATE_SENDER_FUNCTIONS:
                metric, minimum = "mpi_latesender", local[key]
                if f in UNRELIABLE_FUNCTIONS and np.any(e.count > 0):
                    unreliable.add(self.callpath_names[cp])
            elif f in LATE_RECEIVER_FUNCTIONS:
                metric, minimum = "mpi_latereceiver", local[key]
            elif f in NXN_FUNCTIONS:
                metric, minimum = "mpi_wait_nxn", np.full(self.ranks, glob[key])
            elif f in BARRIER_FUNCTIONS:
                metric, minimum = "mpi_barrier_wait", np.full(self.ranks, glob[key])
            elif f in ONE_TO_N_FUNCTIONS and not e.root:
                metric, minimum = "mpi_latebroadcast", np.full(self.ranks, glob[key])
            elif f in N_TO_ONE_FUNCTIONS and e.root:
                metric, minimum = "mpi_earlyreduce", np.full(self.ranks, glob[key])
            if metric is not None:
                has = e.count > 0
                wait = np.zeros(self.ranks)
                wait[has] = np.maximum(e.sum[has] - e.count[has] * minimum[has], 0.0)
                cube[mi[metric], cp] += wait
        root = int(np.flatnonzero(self._definitions.callpath_parent < 0)[0]) if self.callpath_names else 0
        comp = np.maximum(self.execution_time - self.mpi_time, 0.0)
        if self.callpath_names:
            cube[mi["comp"], root] += comp
            for m in ("execution", "time"):
                cube[mi[m]] = cube[mi["mpi"]]
                cube[mi[m], root] += comp
        return ProfileEstimates(self, cube, unreliable)

    # ---- the comparison with a trace analysis --------------------------------

    def compare(self, result: "AnalysisResult | Trace", threshold: float = 0.005,
                as_pandas: bool | None = None) -> "pandas.DataFrame | list[dict[str, Any]]":
        """The estimates next to the trace analysis of the same run, per call path and metric.

        `result` is the :class:`AnalysisResult` of the trace (a
        :class:`Trace` is analysed first).  One row per (metric of
        :data:`ESTIMATED_METRICS`, call path) where the profile's or the
        trace's wait ratio reaches `threshold` (0.5 % as in Mao et al. 2014):

        ``metric``, ``callpath``, ``function`` (the call path's last
        region), ``profile_wait``, ``trace_wait`` (seconds, summed over
        ranks), ``profile_ratio``, ``trace_ratio`` (percent of the total
        execution time, each of its own measurement), ``difference`` (profile
        minus trace, in percentage points), ``unreliable`` (an ``MPI_Waitall``
        estimate).  Rows are ordered by metric, then by descending trace
        ratio.  A pandas DataFrame when pandas is installed (or
        ``as_pandas=True``), else a list of dicts with these keys.

        Raises ValueError when the rank counts differ or no MPI call path of
        the profile appears in the trace (not the same run).
        """
        if not isinstance(result, AnalysisResult):
            analyze = getattr(result, "analyze", None)
            if analyze is None:
                raise TypeError(f"compare needs an AnalysisResult or a Trace, not {type(result).__name__}")
            result = analyze()
        ranks = result.location_ranks
        n_ranks = int(ranks.max()) + 1 if len(ranks) else 0
        if n_ranks != self.ranks:
            raise ValueError(f"the profile {self.path} has {self.ranks} ranks, the trace {n_ranks}: not the same run")
        est = self.estimates()
        mpi_paths = [n for n in self.callpath_names if n.rsplit("/", 1)[-1].startswith("MPI_")]
        # the trace's call paths begin with the program region, the
        # profile's below it: both spellings find a call path of the trace
        trace_index = {n: i for i, n in enumerate(result.callpath_names)}
        root = getattr(result.trace, "program_region", None)
        if root is not None:
            for i, n in enumerate(result.callpath_names):
                if n.startswith(root + "/"):
                    trace_index.setdefault(n[len(root) + 1:], i)
        if mpi_paths and not any(n in trace_index for n in mpi_paths):
            raise ValueError(f"no MPI call path of the profile {self.path} (e.g. {mpi_paths[0]!r}) is in the trace: "
                             "not the same run, or call paths named differently")
        profile_total = float(np.sum(self.execution_time))
        trace_total = result.total("time")
        rows: list[dict[str, Any]] = []
        for metric in ESTIMATED_METRICS:
            p_values = est.by_callpath(metric)
            t_values = result.by_callpath(metric) if metric in result.metric_ids else np.zeros(len(trace_index))
            metric_rows = []
            for cp, name in enumerate(self.callpath_names):
                p = float(p_values[cp])
                t = float(t_values[trace_index[name]]) if name in trace_index else math.nan
                pr = 100.0 * p / profile_total if profile_total > 0 else 0.0
                tr = 100.0 * t / trace_total if trace_total > 0 else 0.0
                if max(pr, 0.0 if math.isnan(tr) else tr) < 100.0 * threshold:
                    continue
                metric_rows.append({
                    "metric": metric, "callpath": name, "function": name.rsplit("/", 1)[-1],
                    "profile_wait": p, "trace_wait": t, "profile_ratio": pr, "trace_ratio": tr,
                    "difference": pr - tr, "unreliable": name in est.unreliable,
                })
            metric_rows.sort(key=lambda r: -(0.0 if math.isnan(r["trace_ratio"]) else r["trace_ratio"]))
            rows.extend(metric_rows)
        use_pandas = as_pandas
        if use_pandas is None:
            try:
                import pandas  # noqa: F401

                use_pandas = True
            except ImportError:
                use_pandas = False
        if not use_pandas:
            return rows
        from . import _optional

        pd = _optional.require("pandas", "Profile.compare(as_pandas=True)")
        return pd.DataFrame(rows, columns=["metric", "callpath", "function", "profile_wait", "trace_wait",
                                           "profile_ratio", "trace_ratio", "difference", "unreliable"])

    # ---- text ------------------------------------------------------------------

    def estimated_waiting(self) -> str:
        """The estimated waiting per pattern as shares of the time, in one phrase:
        ``"Late Sender 34.7 %, Wait at Barrier 0.5 %"`` (patterns under 0.05 % left out)."""
        est = self.estimates()
        total = est.total("time")
        parts = []
        for metric in ("mpi_latesender", "mpi_wait_nxn", "mpi_barrier_wait", "mpi_latebroadcast", "mpi_earlyreduce",
                       "mpi_latereceiver"):
            value = est.total(metric)
            if total > 0 and value / total >= 0.0005:
                parts.append(f"{est.metric(metric).name} {100 * value / total:.1f} %")
        return ", ".join(parts) if parts else "no waiting above 0.05 % of the time"

    def summary(self) -> str:
        lines = [f"profile {self.path}", f"  command: {self.command}", f"  MPI: {self.mpi}",
                 f"  ranks: {self.ranks}  call paths: {len(self.callpath_names)}  entries: {len(self.entries)}"
                 f"  MPI calls: {self.n_calls}",
                 f"  execution time: {float(np.sum(self.execution_time)):.6f} s summed over ranks, "
                 f"{float(np.sum(self.mpi_time)):.6f} s in MPI; the longest rank {self.run_length:.6f} s",
                 f"  estimated waiting (share of the execution time): {self.estimated_waiting()}"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<waitscope.Profile {self.path!r}: {self.ranks} ranks, {len(self.entries)} entries>"


# ---- reading and checking the file ----------------------------------------------


class _Checker:
    """Checks the parsed JSON against the format; errors name the file and the field."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, what: str) -> TraceError:
        return TraceError(f"{self.path}: {what}")

    def field(self, obj: dict[str, Any], key: str, where: str = "") -> Any:
        if key not in obj:
            raise self.fail(f"{where}missing field {key!r}")
        return obj[key]

    def integer(self, value: Any, what: str, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{what} must be an integer, not {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(f"{what} must be at least {minimum}, not {value}")
        return value

    def number(self, value: Any, what: str, allow_null: bool = False) -> float:
        if value is None and allow_null:
            return math.nan
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise self.fail(f"{what} must be a non-negative number, not {value!r}")
        return float(value)

    def array(self, value: Any, n: int, what: str, kind: str = "number", allow_null: bool = False) -> np.ndarray:
        if not isinstance(value, list):
            raise self.fail(f"{what} must be a list of {n} values, not {type(value).__name__}")
        if len(value) != n:
            raise self.fail(f"{what} has {len(value)} values for {n} ranks")
        if kind == "integer":
            return np.array([self.integer(v, f"{what}[{i}]", 0) for i, v in enumerate(value)], dtype=np.int64)
        return np.array([self.number(v, f"{what}[{i}]", allow_null) for i, v in enumerate(value)], dtype=np.float64)

    def string(self, value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"{what} must be a string, not {value!r}")
        return value


def _add_ancestors(names: list[str]) -> tuple[list[str], list[int]]:
    """Call paths with their missing ancestors added, parents first; and where each input name went."""
    out: list[str] = []
    index: dict[str, int] = {}

    def add(name: str) -> int:
        if name in index:
            return index[name]
        if "/" in name:
            add(name.rsplit("/", 1)[0])
        index[name] = len(out)
        out.append(name)
        return index[name]

    return out, [add(n) for n in names]


def _parse(path: str, doc: Any) -> dict[str, Any]:
    c = _Checker(path)
    if not isinstance(doc, dict):
        raise c.fail("not a waitscope profile (the top level is not a JSON object)")
    fmt = doc.get("format")
    if fmt != FORMAT_NAME:
        raise c.fail(f"not a waitscope profile (format {fmt!r}, expected {FORMAT_NAME!r})")
    version = c.field(doc, "version")
    if version != FORMAT_VERSION:
        raise c.fail(f"unsupported profile version {version!r} (this waitscope reads version {FORMAT_VERSION})")
    ranks = c.integer(c.field(doc, "ranks"), "ranks", 1)
    raw_paths = c.field(doc, "callpaths")
    if not isinstance(raw_paths, list):
        raise c.fail("callpaths must be a list of names")
    names = [c.string(n, f"callpaths[{i}]") for i, n in enumerate(raw_paths)]
    for i, n in enumerate(names):
        if not n or n.startswith("/") or n.endswith("/") or "//" in n:
            raise c.fail(f"callpaths[{i}] {n!r} is not a call path (names joined by '/')")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise c.fail(f"call path {dup!r} is listed twice")
    callpaths, moved = _add_ancestors(names)
    data: dict[str, Any] = {
        "mpi": c.string(doc.get("mpi", ""), "mpi"),
        "command": c.string(doc.get("command", ""), "command"),
        "ranks": ranks,
        "callpaths": callpaths,
        "execution_time": c.array(c.field(doc, "execution_time"), ranks, "execution_time"),
        "mpi_time": c.array(c.field(doc, "mpi_time"), ranks, "mpi_time"),
    }
    raw_entries = c.field(doc, "entries")
    if not isinstance(raw_entries, list):
        raise c.fail("entries must be a list")
    entries = []
    seen: set[tuple[int, str, int, bool]] = set()
    for k, e in enumerate(raw_entries):
        where = f"entries[{k}]: "
        if not isinstance(e, dict):
            raise c.fail(f"entries[{k}] is not an object")
        cp = c.integer(c.field(e, "callpath", where), f"entries[{k}].callpath", 0)
        if cp >= len(names):
            raise c.fail(f"entries[{k}].callpath {cp} is out of range ({len(names)} call paths)")
        function = c.string(c.field(e, "function", where), f"entries[{k}].function")
        size_class = c.integer(c.field(e, "size_class", where), f"entries[{k}].size_class", -1)
        root, collective = e.get("root", False), e.get("collective", False)
        if not isinstance(root, bool) or not isinstance(collective, bool):
            raise c.fail(f"entries[{k}]: root and collective must be true or false")
        count = c.array(c.field(e, "count", where), ranks, f"entries[{k}].count", "integer")
        total = c.array(c.field(e, "sum", where), ranks, f"entries[{k}].sum")
        minimum = c.array(c.field(e, "min", where), ranks, f"entries[{k}].min", allow_null=True)
        for r in range(ranks):
            if (count[r] > 0) == math.isnan(minimum[r]):
                raise c.fail(f"entries[{k}].min[{r}] must be null exactly where count is 0 "
                             f"(count {count[r]}, min {e['min'][r]!r})")
            if count[r] > 0 and (minimum[r] * count[r] > total[r] * (1 + 1e-9) + 1e-12):
                raise c.fail(f"entries[{k}] rank {r}: count x min exceeds sum ({count[r]} x {minimum[r]} > "
                             f"{total[r]})")
        gmin = e.get("global_min")
        global_min = None if gmin is None else c.number(gmin, f"entries[{k}].global_min")
        key = (cp, function, size_class, root)
        if key in seen:
            raise c.fail(f"entries[{k}] repeats the key (call path {names[cp]!r}, {function}, size class "
                         f"{size_class}, root {root})")
        seen.add(key)
        entries.append(ProfileEntry(callpath=moved[cp], function=function, size_class=size_class, root=root,
                                    collective=collective, count=count, sum=total, minimum=minimum,
                                    global_min=global_min))
    data["entries"] = entries
    return data


def profile_path(path: str | os.PathLike[str]) -> str | None:
    """The profile file `path` names, or None when it names a trace (or nothing).

    A profile is named by the file itself (``DIR/profile.json``, or any
    ``*.json`` file) or by a directory that holds ``profile.json`` but no
    trace (``traces.otf2``, or the per-rank files of a run cut short), as
    ``waitscope profile`` leaves it.  A directory of ``waitscope trace
    --profile`` holds both and names its trace."""
    target = os.fspath(path)
    if os.path.isdir(target):
        candidate = os.path.join(target, PROFILE_FILE)
        if os.path.isfile(candidate) and not os.path.exists(os.path.join(target, "traces.otf2")) \
                and not os.path.isdir(os.path.join(target, ".waitscope")):
            return candidate
        return None
    if target.endswith(".json") and os.path.isfile(target):
        return target
    return None


def open_profile(path: str | os.PathLike[str]) -> Profile:
    """Reads a wait-state profile: ``DIR/profile.json`` or the file itself.

    Raises :class:`waitscope.TraceError` naming the file and the problem
    when it is missing, unreadable, truncated or not a valid profile.
    """
    target = os.fspath(path)
    if os.path.isdir(target):
        target = os.path.join(target, PROFILE_FILE)
    try:
        with open(target, "rb") as fh:
            text = fh.read()
    except FileNotFoundError:
        hint = ""
        if os.path.isdir(os.path.dirname(target) or ".") and os.path.exists(
                os.path.join(os.path.dirname(target) or ".", "traces.otf2")):
            hint = " (the directory holds a trace only: run with --profile)"
        raise TraceError(f"{target}: no such file{hint}") from None
    except OSError as exc:
        raise TraceError(f"{target}: cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise TraceError(f"{target}: empty file (the run ended before MPI_Finalize wrote the profile?)")
    try:
        doc = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TraceError(f"{target}: not a waitscope profile (not UTF-8 text: {exc.reason} at byte {exc.start})") \
            from None
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1
        what = "truncated" if truncated else "not valid JSON"
        raise TraceError(f"{target}: {what}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return Profile(target, _parse(target, doc))

