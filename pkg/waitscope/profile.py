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

With ``method="calibrated"`` (:meth:`Profile.estimates`) Late Sender and
Late Receiver are measured against the no-wait duration of each category
that the interposition library measured at MPI_Finalize (a short exchange
with the partners the rank had), not against the fastest call: so a rank
that waits in every call of a category (a static imbalance) has its
waiting estimated; and ``MPI_Send``, whose fastest call says nothing about
blocking, gets a Late Receiver estimate where it was measured.

:meth:`Profile.compare` puts these estimates next to the trace analysis of
the same run per call path, as wait ratios (waiting / total execution time)
and their difference in percentage points, leaving out call paths under
0.5 % in both, as the paper's section 4.1 does.

:func:`waitscope.open` and the command line (``waitscope info``, ``waitscope
analyze``) open a profile where they would open a trace: ``profile.json``
itself, or a directory that holds one and no trace (:func:`profile_path`).
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ._profile_file import PROFILE_FILE, ProfileCalibration, ProfileEntry, profile_path, read_profile
from .result import AnalysisResult
from .trace import Location, Region

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from .trace import Trace

__all__ = ["Profile", "ProfileEntry", "ProfileEstimates", "open_profile", "profile_path", "PROFILE_FILE",
           "ESTIMATED_METRICS"]


# ---- which MPI function is estimated how --------------------------------------

LATE_SENDER_FUNCTIONS = ("MPI_Recv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Wait", "MPI_Waitall")
UNRELIABLE_FUNCTIONS = ("MPI_Waitall",)
LATE_RECEIVER_FUNCTIONS = ("MPI_Ssend",)
CALIBRATED_LATE_RECEIVER = ("MPI_Send",)
"""Estimated (Late Receiver) only against a measured no-wait duration: the fastest standard send says nothing."""
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

METHODS = ("seed", "calibrated")
"""The no-wait durations :meth:`Profile.estimates` can measure calls against."""

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


def _us(seconds: float) -> str:
    """A duration in the unit that reads best."""
    if math.isnan(seconds):
        return "?"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


class ProfileEstimates(AnalysisResult):
    """The wait-state estimates of Mao et al. (EuroMPI/ASIA 2014) from a profile, as a labelled cube.

    The layout is :class:`AnalysisResult`'s: ``metric_ids``,
    ``callpath_names``, ``cube[metric, callpath, rank]`` (one location per
    rank), ``get``, ``total``, ``by_callpath``, ``to_pandas``, ``to_cube``.
    Metrics: ``time``, ``execution``, ``comp`` (the time outside MPI, all
    on the root call path), ``mpi`` and its parts, the estimates of
    :data:`ESTIMATED_METRICS`, and ``visits`` (MPI calls).
    """

    def __init__(self, profile: "Profile", cube: np.ndarray, unreliable: Iterable[str], method: str = "seed",
                 reliability: list[dict[str, Any]] | None = None):
        metrics = [dict(id=m[0], name=m[1], unit=m[2], parent=m[3], description=m[4]) for m in _METRICS]
        raw = {"metrics": metrics, "cube": cube, "clock_violations": np.zeros(profile.ranks, dtype=np.int64),
               "delay_model": None}
        super().__init__(profile._definitions, raw)  # type: ignore[arg-type]
        self.profile = profile
        self.unreliable: frozenset[str] = frozenset(unreliable)
        """Call paths whose estimate Mao et al. found unreliable (those of ``MPI_Waitall``)."""
        self.method = method
        """The no-wait durations the calls were measured against: ``"seed"`` or ``"calibrated"``."""
        self.reliability: list[dict[str, Any]] = reliability or []
        """Per estimated (metric, call path): ``metric``, ``callpath``, ``calls`` (estimated calls, all
        ranks), ``estimate`` (s), ``baseline`` (the no-wait duration used, s, mean per call), ``source``
        (``"calls"``: the fastest call of the category, ``"calibration"``: measured at MPI_Finalize,
        ``"mixed"``), ``samples`` (the calibration's samples, or the calls the fastest was taken from),
        ``spread`` (largest max - min of the calibration samples used, s), ``bound`` (calls x spread:
        how far off the estimate can be for its baseline, s) and ``measured_baseline`` (the calibrated
        no-wait duration where one was measured, whatever the method, s; NaN where none)."""

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
        lines.extend(self._reliability_lines(top))
        if self.unreliable:
            lines.append("unreliable estimates (MPI_Waitall, often overestimated):")
            lines.extend(f"  {name}" for name in sorted(self.unreliable))
        return "\n".join(lines)

    def _reliability_lines(self, top: int) -> list[str]:
        """How reliable the larger estimates are: calls, the no-wait duration and what it rests on."""
        total = self.total("time")
        other = None
        if self.method == "seed" and self.profile.calibration is not None:
            other = self.profile.estimates("calibrated")

        def weight(r: dict[str, Any]) -> float:
            alt = other.get(r["metric"], r["callpath"]).sum() if other is not None else 0.0
            return max(r["estimate"], alt)

        shown = sorted((r for r in self.reliability if total > 0 and weight(r) >= 0.005 * total),
                       key=lambda r: -weight(r))[:top]
        if not shown:
            return []
        lines = [f"how reliable the estimates are (method {self.method!r}: each call counts as waiting what it "
                 "took beyond a no-wait duration):"]
        for r in shown:
            name = self.metric(r["metric"]).name
            head = f"  {name:<16} {r['callpath']}"
            what = f"{r['estimate']:.6f} s over {r['calls']:,} calls; no-wait {_us(r['baseline'])}"
            if r["source"] == "calls":
                scope = "on each rank" if r["metric"] in ("mpi_latesender", "mpi_latereceiver") else "over all ranks"
                what += (f", the fastest call of its kind {scope} (of {r['samples']:,}): right only if one of "
                         "them did not wait")
                if other is not None and not math.isnan(r["measured_baseline"]):
                    alt = float(other.get(r["metric"], r["callpath"]).sum())
                    what += (f"; measured at MPI_Finalize: {_us(r['measured_baseline'])} (method='calibrated' "
                             f"estimates {alt:.6f} s)")
            else:
                what += (f", the median of {r['samples']:,} no-wait samples measured at MPI_Finalize"
                         f"{' (some ranks: the fastest call)' if r['source'] == 'mixed' else ''}, spread "
                         f"{_us(r['spread'])}: at most {r['bound']:.6f} s off")
            lines.extend([head, "      " + what])
        return lines

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
        self.calibration: dict[tuple[str, int], ProfileCalibration] | None = data.get("calibration")
        """The no-wait durations measured at MPI_Finalize per (function, size
        class); None in a profile written before waitscope measured them."""
        self._definitions = _Definitions(path, self.callpath_names, self.ranks)

    @property
    def run_length(self) -> float:
        """The longest rank's execution time (MPI_Init to MPI_Finalize), seconds."""
        return float(np.max(self.execution_time)) if len(self.execution_time) else 0.0

    def analyze(self, delay_model: str | None = None, critical_path: bool = False,
                window: Any = None, method: str = "seed", **ignored: Any) -> "ProfileEstimates":
        """The estimates (:meth:`estimates` with `method`), so that ``waitscope.open(path).analyze()``
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
        return self.estimates(method)

    @property
    def n_calls(self) -> int:
        """MPI calls the profile counts, over all ranks."""
        return int(sum(int(e.count.sum()) for e in self.entries))

    # ---- the estimates -------------------------------------------------------

    def _minima(self) -> tuple[dict[tuple[str, int, bool], np.ndarray], dict[tuple[str, int, bool], float],
                               dict[tuple[str, int, bool], np.ndarray]]:
        """Rank-local (per rank) and global minima of each (function, size class,
        root) over call paths, and the calls per rank each local minimum is of."""
        local: dict[tuple[str, int, bool], np.ndarray] = {}
        glob: dict[tuple[str, int, bool], float] = {}
        pool: dict[tuple[str, int, bool], np.ndarray] = {}
        for e in self.entries:
            key = (e.function, e.size_class, e.root)
            m = local.setdefault(key, np.full(self.ranks, np.inf))
            np.fmin(m, e.minimum, out=m)
            pool[key] = pool.get(key, 0) + e.count
            g = e.global_min if e.global_min is not None else float(np.nanmin(e.minimum)) \
                if np.any(e.count > 0) else math.inf
            glob[key] = min(glob.get(key, math.inf), g)
        return local, glob, pool

    def estimates(self, method: str = "seed") -> ProfileEstimates:
        """The estimates as a cube [metric, call path, rank] (module docstring).

        `method` is the no-wait duration every call is measured against, for
        Late Sender and Late Receiver: ``"seed"``, the fastest call of the
        category on the rank (Mao et al.); ``"calibrated"``, the median of the
        no-wait durations the library measured at MPI_Finalize with the
        partners the rank had (where a rank has none for a category, the
        fastest call).  The collectives' estimates are the same in both (the
        minimum over all ranks).  :attr:`ProfileEstimates.reliability` says
        for each estimate how many calls it is of and what its no-wait
        duration rests on."""
        if method not in METHODS:
            raise ValueError(f"method: {method!r} is not one of {', '.join(repr(m) for m in METHODS)}")
        if method == "calibrated" and self.calibration is None:
            raise ValueError(f"method='calibrated': the profile {self.path} has no calibration (written before "
                             "waitscope measured no-wait durations at MPI_Finalize); use method='seed'")
        ids = [m[0] for m in _METRICS]
        mi = {m: i for i, m in enumerate(ids)}
        cube = np.zeros((len(ids), len(self.callpath_names), self.ranks))
        local, glob, pool = self._minima()
        unreliable: set[str] = set()
        rows: dict[tuple[str, int], dict[str, Any]] = {}
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
            elif f in CALIBRATED_LATE_RECEIVER and method == "calibrated" and self.calibration and \
                    (f, e.size_class) in self.calibration:
                # a standard send blocks only for a late receiver or the transfer, which the
                # no-wait duration includes; where a rank measured none, no estimate
                metric, minimum = "mpi_latereceiver", np.full(self.ranks, np.inf)
            elif f in NXN_FUNCTIONS:
                metric, minimum = "mpi_wait_nxn", np.full(self.ranks, glob[key])
            elif f in BARRIER_FUNCTIONS:
                metric, minimum = "mpi_barrier_wait", np.full(self.ranks, glob[key])
            elif f in ONE_TO_N_FUNCTIONS and not e.root:
                metric, minimum = "mpi_latebroadcast", np.full(self.ranks, glob[key])
            elif f in N_TO_ONE_FUNCTIONS and e.root:
                metric, minimum = "mpi_earlyreduce", np.full(self.ranks, glob[key])
            if metric is None:
                continue
            has = e.count > 0
            cal = self.calibration.get((f, e.size_class)) if self.calibration else None
            measured = np.zeros(self.ranks, dtype=bool)
            if cal is not None and metric in ("mpi_latesender", "mpi_latereceiver"):
                measured = has & (cal.samples > 0)
                if method == "calibrated":
                    minimum = np.where(measured, cal.median, minimum)
            if f in CALIBRATED_LATE_RECEIVER:
                has = measured
            wait = np.zeros(self.ranks)
            wait[has] = np.maximum(e.sum[has] - e.count[has] * minimum[has], 0.0)
            cube[mi[metric], cp] += wait
            row = rows.setdefault((metric, cp), {"calls": 0, "weighted": 0.0, "from_calibration": 0, "samples": 0,
                                                 "pool": 0, "spread": 0.0, "bound": 0.0, "no_wait": 0.0,
                                                 "no_wait_calls": 0})
            row["calls"] += int(e.count[has].sum())
            row["weighted"] += float((e.count[has] * minimum[has]).sum())
            local_fn = metric in ("mpi_latesender", "mpi_latereceiver")
            row["pool"] += int(pool[key][has].sum()) if local_fn else int(np.sum(pool[key]))
            if measured.any():
                spread = cal.maximum[measured] - cal.minimum[measured]
                row["no_wait"] += float((e.count[measured] * cal.median[measured]).sum())
                row["no_wait_calls"] += int(e.count[measured].sum())
                if method == "calibrated":
                    row["from_calibration"] += int(e.count[measured].sum())
                    row["samples"] += int(cal.samples[measured].sum())
                    row["spread"] = max(row["spread"], float(spread.max()))
                    row["bound"] += float((e.count[measured] * spread).sum())
        root = int(np.flatnonzero(self._definitions.callpath_parent < 0)[0]) if self.callpath_names else 0
        comp = np.maximum(self.execution_time - self.mpi_time, 0.0)
        if self.callpath_names:
            cube[mi["comp"], root] += comp
            for m in ("execution", "time"):
                cube[mi[m]] = cube[mi["mpi"]]
                cube[mi[m], root] += comp
        reliability = []
        for (metric, cp), r in rows.items():
            calls = r["calls"]
            source = "calibration" if calls and r["from_calibration"] == calls else \
                "calls" if not r["from_calibration"] else "mixed"
            reliability.append({
                "metric": metric, "callpath": self.callpath_names[cp], "calls": calls,
                "estimate": float(cube[mi[metric], cp].sum()),
                "baseline": r["weighted"] / calls if calls else math.nan, "source": source,
                "samples": r["samples"] if source != "calls" else r["pool"],
                "spread": r["spread"] if source != "calls" else math.nan,
                "bound": r["bound"] if source != "calls" else math.nan,
                "measured_baseline": r["no_wait"] / r["no_wait_calls"] if r["no_wait_calls"] else math.nan,
            })
        return ProfileEstimates(self, cube, unreliable, method, reliability)

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
        minus trace, in percentage points), ``calibrated_wait``,
        ``calibrated_ratio``, ``calibrated_difference`` (the same for
        ``estimates(method="calibrated")``; NaN when the profile has no
        calibration), ``unreliable`` (an ``MPI_Waitall`` estimate).  The
        ``profile_*`` columns and ``difference`` are the seed method's.  Rows are ordered by metric, then by descending trace
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
        cal = self.estimates("calibrated") if self.calibration is not None else None
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
            c_values = cal.by_callpath(metric) if cal is not None else None
            t_values = result.by_callpath(metric) if metric in result.metric_ids else np.zeros(len(trace_index))
            metric_rows = []
            for cp, name in enumerate(self.callpath_names):
                p = float(p_values[cp])
                t = float(t_values[trace_index[name]]) if name in trace_index else math.nan
                c = float(c_values[cp]) if c_values is not None else math.nan
                pr = 100.0 * p / profile_total if profile_total > 0 else 0.0
                cr = 100.0 * c / profile_total if profile_total > 0 else 0.0
                tr = 100.0 * t / trace_total if trace_total > 0 else 0.0
                if max(pr, 0.0 if math.isnan(cr) else cr, 0.0 if math.isnan(tr) else tr) < 100.0 * threshold:
                    continue
                metric_rows.append({
                    "metric": metric, "callpath": name, "function": name.rsplit("/", 1)[-1],
                    "profile_wait": p, "trace_wait": t, "profile_ratio": pr, "trace_ratio": tr,
                    "difference": pr - tr, "calibrated_wait": c,
                    # math.nan itself where there is no calibration: rows compare equal
                    "calibrated_ratio": cr if c_values is not None else math.nan,
                    "calibrated_difference": cr - tr if c_values is not None else math.nan,
                    "unreliable": name in est.unreliable,
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
                                           "profile_ratio", "trace_ratio", "difference", "calibrated_wait",
                                           "calibrated_ratio", "calibrated_difference", "unreliable"])

    # ---- text ------------------------------------------------------------------

    def estimated_waiting(self) -> str:
        """The estimated waiting per pattern as shares of the time, in one phrase:
        ``"Late Sender 34.7 %, Wait at Barrier 0.5 %"`` (patterns under 0.05 % left out);
        where the calibrated estimate differs from it by a point or more, it follows:
        ``"Late Sender 17.4 % (calibrated 39.5 %)"``."""
        est = self.estimates()
        cal = self.estimates("calibrated") if self.calibration is not None else None
        total = est.total("time")
        parts = []
        for metric in ("mpi_latesender", "mpi_wait_nxn", "mpi_barrier_wait", "mpi_latebroadcast", "mpi_earlyreduce",
                       "mpi_latereceiver"):
            value = est.total(metric)
            other = cal.total(metric) if cal is not None else value
            if total > 0 and max(value, other) / total >= 0.0005:
                text = f"{est.metric(metric).name} {100 * value / total:.1f} %"
                if abs(other - value) >= 0.01 * total:
                    text += f" (calibrated {100 * other / total:.1f} %)"
                parts.append(text)
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


def open_profile(path: str | os.PathLike[str]) -> Profile:
    """Reads a wait-state profile: ``DIR/profile.json`` or the file itself.

    Raises :class:`waitscope.TraceError` naming the file and the problem
    when it is missing, unreadable, truncated or not a valid profile.
    """
    target, data = read_profile(path)
    return Profile(target, data)
