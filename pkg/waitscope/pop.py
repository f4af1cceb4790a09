"""The POP efficiency metrics of an analysis (:meth:`AnalysisResult.pop_metrics`).

The POP Centre of Excellence (Performance Optimisation and Productivity)
assesses MPI programs with a hierarchy of efficiencies between 0 and 1
(Wagner, Mohr, Giménez, Labarta: "A Structured Approach to Performance
Analysis", Tools for High Performance Computing 2017, Springer 2019; the
POP CoE's "POP Standard Metrics for Parallel Performance Analysis").
With *useful* time = time outside MPI per process (metric ``comp`` per
location), *runtime* = the run's wall-clock length, and *runtime_ideal*
= the run length of the same execution on an ideal network (zero latency,
infinite bandwidth; :meth:`waitscope.Trace.simulate` with
``network="ideal"``):

* load balance             LB   = mean(useful) / max(useful)
* communication efficiency CommE = max(useful) / runtime
* parallel efficiency      PE   = LB * CommE = mean(useful) / runtime
* serialisation efficiency SerE = max(useful) / runtime_ideal
* transfer efficiency      TE   = runtime_ideal / runtime
  (so CommE = SerE * TE and PE = LB * SerE * TE)

Every location (process or thread) counts as one process.

Hybrid MPI+OpenMP runs (a process with several locations) also get the
POP hybrid efficiencies of the multiplicative model (:class:`HybridPop`;
the POP CoE's "POP Standard Metrics for Performance Analysis of Hybrid
Parallel Applications" and its co-design catalogue of metrics, hybrid
multiplicative model).  There the efficiencies above are the *hybrid*
ones (useful = ``comp``: outside MPI, outside the OpenMP runtime and not
idle; mean and maximum over all threads), and with *outside MPI* =
the time of each process's master thread outside MPI (``comp`` +
``omp_time``: for MPI, the OpenMP runtime counts as useful):

* MPI load balance             MPI_LB  = mean_p(outside MPI) / max_p(outside MPI)
* MPI communication efficiency MPI_CommE = max_p(outside MPI) / runtime
* MPI parallel efficiency      MPI_PE  = MPI_LB * MPI_CommE
  (MPI_CommE = MPI_SerE * MPI_TE with MPI_SerE = max_p(outside MPI) /
  runtime_ideal and MPI_TE = runtime_ideal / runtime)
* OpenMP load balance          OMP_LB  = LB / MPI_LB
* OpenMP communication eff.    OMP_CommE = CommE / MPI_CommE = max(useful) / max_p(outside MPI)
* OpenMP parallel efficiency   OMP_PE  = OMP_LB * OMP_CommE
  so that PE = MPI_PE * OMP_PE.

The ideal-network simulation (:meth:`waitscope.Trace.simulate`) moves a
process's OpenMP threads with their master (forks start the team's threads
from the master's fork, barriers release at the last arrival), so
``ideal="simulate"`` gives the MPI serialisation and transfer efficiency of
a trace with threads too.

Over a time window (``analyze(window=(start, end))``) the useful time is
that inside the window and *runtime* the part of the window that lies in
the run (:attr:`AnalysisResult.analysed_span`), so that the efficiencies
describe that phase of the run.  Its *runtime_ideal* is the length of the
same piece of execution in the ideal-network run: each location's window
edges are carried over to the simulated timestamps by linear interpolation
between its events (:func:`ideal_span`), and the piece runs from the
earliest carried start to the latest carried end.  A window that does not
overlap the run raises ValueError.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult
    from .trace import Trace

__all__ = ["PopMetrics", "HybridPop", "pop_metrics", "hybrid_pop", "ideal_span"]


@dataclass(frozen=True)
class HybridPop:
    """POP's hybrid MPI+OpenMP efficiencies (multiplicative model; see :mod:`waitscope.pop`).

    ``mpi_parallel_efficiency * openmp_parallel_efficiency`` is the hybrid
    parallel efficiency (:attr:`PopMetrics.parallel_efficiency`)."""

    mpi_parallel_efficiency: float
    mpi_load_balance: float
    mpi_communication_efficiency: float
    mpi_serialisation_efficiency: float | None
    mpi_transfer_efficiency: float | None
    openmp_parallel_efficiency: float
    openmp_load_balance: float
    openmp_communication_efficiency: float
    outside_mpi_mean: float
    """Mean over the processes of their master thread's time outside MPI (``comp`` + ``omp_time``), seconds."""
    outside_mpi_max: float
    """The largest of those, seconds."""
    processes: int
    threads: int
    """Locations (threads) of all processes."""


@dataclass(frozen=True)
class PopMetrics:
    """POP efficiencies of one run (see :mod:`waitscope.pop`); the last two are None without an ideal-network run."""

    parallel_efficiency: float
    load_balance: float
    communication_efficiency: float
    serialisation_efficiency: float | None
    transfer_efficiency: float | None
    runtime: float
    """Wall-clock seconds of the run (of the part of the window inside the run, for a windowed result)."""
    runtime_ideal: float | None
    """Run length on an ideal network (None when not simulated); of the window's piece of execution
    for a windowed result."""
    useful_mean: float
    useful_max: float
    window: tuple[float, float] | None = None
    """The part of the run the efficiencies describe (start, end in seconds), None for the whole run."""
    hybrid: HybridPop | None = None
    """The MPI and OpenMP parallel efficiencies of a run with threads (None without threads)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """Text lines as ``waitscope analyze`` prints them."""
        def pct(v: float | None) -> str:
            return "       -" if v is None else f"{100 * v:7.2f} %"

        what = "run time" if self.window is None else "window length"
        ideal = self.runtime_ideal is not None
        h = self.hybrid
        rows: list[tuple[int, str, float | None, str]] = [
            (0, "parallel efficiency", self.parallel_efficiency,
             "(= load balance x communication efficiency" + (" = MPI x OpenMP parallel efficiency)" if h else ")")),
            (1, "load balance", self.load_balance,
             f"(mean / max useful time: {self.useful_mean:.6f} / {self.useful_max:.6f} s)"),
            (1, "communication efficiency", self.communication_efficiency,
             f"(= serialisation x transfer efficiency; max useful time / {what} {self.runtime:.6f} s)"),
            (2, "serialisation efficiency", self.serialisation_efficiency,
             f"(max useful time / {what} on an ideal network)" if ideal else ""),
            (2, "transfer efficiency", self.transfer_efficiency,
             f"({what} on an ideal network {self.runtime_ideal:.6f} s)" if ideal else ""),
        ]
        if h is not None:
            rows += [
                (1, "MPI parallel efficiency", h.mpi_parallel_efficiency,
                 "(= MPI load balance x MPI communication efficiency)"),
                (2, "MPI load balance", h.mpi_load_balance,
                 f"(mean / max time outside MPI of the {h.processes} processes' master threads: "
                 f"{h.outside_mpi_mean:.6f} / {h.outside_mpi_max:.6f} s)"),
                (2, "MPI communication efficiency", h.mpi_communication_efficiency,
                 f"(= MPI serialisation x transfer efficiency; max time outside MPI / {what})"),
                (3, "MPI serialisation efficiency", h.mpi_serialisation_efficiency,
                 f"(max time outside MPI / {what} on an ideal network)" if ideal else ""),
                (3, "MPI transfer efficiency", h.mpi_transfer_efficiency, ""),
                (1, "OpenMP parallel efficiency", h.openmp_parallel_efficiency,
                 "(= OpenMP load balance x OpenMP communication efficiency)"),
                (2, "OpenMP load balance", h.openmp_load_balance, "(= load balance / MPI load balance)"),
                (2, "OpenMP communication efficiency", h.openmp_communication_efficiency,
                 f"(max useful time / max time outside MPI, over {h.threads} threads)"),
            ]
        width = max([28] + [2 * depth + len(label) for depth, label, _, _ in rows])
        return [f"  {'  ' * depth + label:<{width}}{pct(value)}" + (f"  {note}" if note else "")
                for depth, label, value, note in rows]


def _runtime_of(ideal: Any, result: "AnalysisResult") -> float:
    from .result import AnalysisResult
    from .trace import Trace

    if isinstance(ideal, AnalysisResult):
        ideal = ideal.trace
    if isinstance(ideal, Trace):
        if result.window is None:
            return float(ideal.run_length)
        lo, hi = ideal_span(result.trace, ideal, result.analysed_span)
        return hi - lo
    if isinstance(ideal, (int, float, np.floating, np.integer)) and not isinstance(ideal, bool):
        value = float(ideal)
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"ideal: a run time must be a positive number of seconds, not {ideal!r}")
        return value
    raise TypeError(f"ideal must be 'simulate', None, a run time in seconds, a Trace or an AnalysisResult, "
                    f"not {type(ideal).__name__}")


def ideal_span(recorded: "Trace", ideal: "Trace", span: tuple[float, float]) -> tuple[float, float]:
    """Where the piece of execution between `span` = (start, end) of `recorded` lies in `ideal`.

    `ideal` is a simulation of `recorded` (:meth:`waitscope.Trace.simulate`:
    the same events, other timestamps).  On every loaded location the two
    edges are carried over by linear interpolation between the location's
    events (the run's start and end carried to the simulated run's start
    and end); the result is the earliest carried start and the latest
    carried end (seconds of `ideal`).  In the parallel mode these are those
    of this process's locations: combine them with a min / max reduction.
    """
    r0, r1 = recorded.time_span
    s0, s1 = ideal.time_span
    lo, hi = math.inf, -math.inf
    for loc in recorded.loaded_locations:
        t = np.asarray(recorded.events(int(loc)).time, dtype=np.float64)
        u = np.asarray(ideal.events(int(loc)).time, dtype=np.float64)
        if len(t) != len(u):
            raise ValueError(f"ideal: location {int(loc)} has {len(u)} events in the ideal run and {len(t)} in the "
                             "recorded one: not a simulation of this trace")
        if not len(t):
            continue
        xp = np.concatenate(([min(r0, t[0])], t, [max(r1, t[-1])]))
        fp = np.concatenate(([min(s0, u[0])], u, [max(s1, u[-1])]))
        a, b = np.interp(span, xp, fp)
        lo, hi = min(lo, float(a)), max(hi, float(b))
    if not lo < hi:
        raise ValueError("ideal: no events of the window's piece of execution in the ideal run")
    return lo, hi


def _has_threads(result: "AnalysisResult") -> bool:
    return bool(np.any(np.asarray(getattr(result, "location_threads", ()), dtype=np.int64) != 0))


def hybrid_pop(result: "AnalysisResult", runtime: float, runtime_ideal: float | None = None) -> HybridPop | None:
    """The POP hybrid efficiencies of `result` (:class:`HybridPop`; None for a run without threads).

    `runtime` is the run's (or window's) length in seconds, `runtime_ideal`
    that on an ideal network (None: no MPI serialisation and transfer
    efficiency).  Raises ValueError when the result lacks ``comp`` or
    ``omp_time``.
    """
    if not _has_threads(result):
        return None
    for needed in ("comp", "omp_time"):
        if needed not in result.metric_ids:
            raise ValueError(f"the POP hybrid efficiencies need the metric {needed!r} in the result")
    useful = np.asarray(result.by_location("comp"), dtype=np.float64)
    outside = useful + np.asarray(result.by_location("omp_time"), dtype=np.float64)
    ranks = np.asarray(result.location_ranks, dtype=np.int64)
    threads = np.asarray(result.location_threads, dtype=np.int64)
    masters = [int(np.flatnonzero(ranks == r)[np.argmin(threads[ranks == r])]) for r in np.unique(ranks)]
    per_process = outside[masters]
    out_mean, out_max = float(per_process.mean()), float(per_process.max())
    use_mean, use_max = float(useful.mean()), float(useful.max())
    lb = use_mean / use_max if use_max > 0 else 1.0
    comm = use_max / runtime
    mpi_lb = out_mean / out_max if out_max > 0 else 1.0
    mpi_comm = out_max / runtime
    omp_lb = lb / mpi_lb if mpi_lb > 0 else 1.0
    omp_comm = comm / mpi_comm if mpi_comm > 0 else 1.0
    ser = te = None
    if runtime_ideal is not None:
        ser, te = out_max / runtime_ideal, runtime_ideal / runtime
    return HybridPop(mpi_parallel_efficiency=mpi_lb * mpi_comm, mpi_load_balance=mpi_lb,
                     mpi_communication_efficiency=mpi_comm, mpi_serialisation_efficiency=ser,
                     mpi_transfer_efficiency=te, openmp_parallel_efficiency=omp_lb * omp_comm,
                     openmp_load_balance=omp_lb, openmp_communication_efficiency=omp_comm,
                     outside_mpi_mean=out_mean, outside_mpi_max=out_max, processes=len(masters),
                     threads=len(useful))


def pop_metrics(result: "AnalysisResult", ideal: Any = "simulate") -> PopMetrics:
    """The POP efficiencies of `result` (see the module docstring).

    `ideal` gives the run time on an ideal network: ``"simulate"`` (the
    default) simulates it with ``result.trace.simulate(network="ideal")``
    when this waitscope has :meth:`Trace.simulate` and the trace is in one
    process; None leaves
    serialisation and transfer efficiency out; a
    number (seconds; for a windowed result the length of the window's
    piece of execution on the ideal network), a simulated Trace or its
    AnalysisResult give it.
    A run with threads also gets :attr:`PopMetrics.hybrid`, the MPI and
    OpenMP parallel efficiencies (:func:`hybrid_pop`).
    """
    if "comp" not in result.metric_ids:
        raise ValueError("pop_metrics needs the metric 'comp' (time outside MPI) in the result")
    useful = np.asarray(result.by_location("comp"), dtype=np.float64)
    if len(useful) == 0:
        raise ValueError("pop_metrics: the result has no locations")
    window = result.window
    if window is None:
        runtime = float(result.run_length)
        if runtime <= 0:
            raise ValueError(f"pop_metrics: the run length of {result.trace.path or 'the trace'} is {runtime}")
    else:
        start, end = result.analysed_span  # ValueError for a window outside the run
        runtime = end - start
    mean, peak = float(useful.mean()), float(useful.max())
    lb = mean / peak if peak > 0 else 1.0
    comm = peak / runtime
    runtime_ideal = None
    if isinstance(ideal, str):
        if ideal != "simulate":
            raise ValueError(f"ideal must be 'simulate', None, seconds, a Trace or an AnalysisResult, not {ideal!r}")
        trace = result.trace
        if hasattr(trace, "simulate") and getattr(trace, "comm", None) is None:
            runtime_ideal = _runtime_of(trace.simulate(network="ideal", progress=False), result)
    elif ideal is not None:
        runtime_ideal = _runtime_of(ideal, result)
    ser = te = None
    if runtime_ideal is not None:
        ser = peak / runtime_ideal
        te = runtime_ideal / runtime
    return PopMetrics(parallel_efficiency=lb * comm, load_balance=lb, communication_efficiency=comm,
                      serialisation_efficiency=ser, transfer_efficiency=te, runtime=runtime,
                      runtime_ideal=runtime_ideal, useful_mean=mean, useful_max=peak,
                      window=None if window is None else result.analysed_span,
                      hybrid=hybrid_pop(result, runtime, runtime_ideal))
