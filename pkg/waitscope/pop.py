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
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult

__all__ = ["PopMetrics", "pop_metrics"]


@dataclass(frozen=True)
class PopMetrics:
    """POP efficiencies of one run (see :mod:`waitscope.pop`); the last two are None without an ideal-network run."""

    parallel_efficiency: float
    load_balance: float
    communication_efficiency: float
    serialisation_efficiency: float | None
    transfer_efficiency: float | None
    runtime: float
    """Wall-clock seconds of the run."""
    runtime_ideal: float | None
    """Run length on an ideal network (None when not simulated)."""
    useful_mean: float
    useful_max: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """Text lines as ``waitscope analyze`` prints them."""
        def pct(v: float | None) -> str:
            return "       -" if v is None else f"{100 * v:7.2f} %"

        out = [
            f"  parallel efficiency         {pct(self.parallel_efficiency)}  (= load balance x communication efficiency)",
            f"    load balance              {pct(self.load_balance)}  (mean / max useful time: "
            f"{self.useful_mean:.6f} / {self.useful_max:.6f} s)",
            f"    communication efficiency  {pct(self.communication_efficiency)}  (max useful time / run time "
            f"{self.runtime:.6f} s)",
            f"      serialisation efficiency{pct(self.serialisation_efficiency)}",
            f"      transfer efficiency     {pct(self.transfer_efficiency)}"
            + ("" if self.runtime_ideal is None else f"  (run time on an ideal network {self.runtime_ideal:.6f} s)"),
        ]
        return out


def _runtime_of(ideal: Any) -> float:
    from .result import AnalysisResult
    from .trace import Trace

    if isinstance(ideal, AnalysisResult):
        return ideal.run_length
    if isinstance(ideal, Trace):
        return float(ideal.run_length)
    if isinstance(ideal, (int, float, np.floating, np.integer)) and not isinstance(ideal, bool):
        value = float(ideal)
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"ideal: a run time must be a positive number of seconds, not {ideal!r}")
        return value
    raise TypeError(f"ideal must be 'simulate', None, a run time in seconds, a Trace or an AnalysisResult, "
                    f"not {type(ideal).__name__}")


def pop_metrics(result: "AnalysisResult", ideal: Any = "simulate") -> PopMetrics:
    """The POP efficiencies of `result` (see the module docstring).

    `ideal` gives the run time on an ideal network: ``"simulate"`` (the
    default) simulates it with ``result.trace.simulate(network="ideal")``
    when this waitscope has :meth:`Trace.simulate` and the trace is in one
    process; None leaves serialisation and transfer efficiency out; a
    number (seconds), a simulated Trace or its AnalysisResult give it.
    """
    if "comp" not in result.metric_ids:
        raise ValueError("pop_metrics needs the metric 'comp' (time outside MPI) in the result")
    useful = np.asarray(result.by_location("comp"), dtype=np.float64)
    if len(useful) == 0:
        raise ValueError("pop_metrics: the result has no locations")
    runtime = float(result.run_length)
    if runtime <= 0:
        raise ValueError(f"pop_metrics: the run length of {result.trace.path or 'the trace'} is {runtime}")
    mean, peak = float(useful.mean()), float(useful.max())
    lb = mean / peak if peak > 0 else 1.0
    comm = peak / runtime
    runtime_ideal = None
    if isinstance(ideal, str):
        if ideal != "simulate":
            raise ValueError(f"ideal must be 'simulate', None, seconds, a Trace or an AnalysisResult, not {ideal!r}")
        trace = result.trace
        if hasattr(trace, "simulate") and getattr(trace, "comm", None) is None:
            runtime_ideal = float(trace.simulate(network="ideal", progress=False).run_length)
    elif ideal is not None:
        runtime_ideal = _runtime_of(ideal)
    ser = te = None
    if runtime_ideal is not None:
        ser = peak / runtime_ideal
        te = runtime_ideal / runtime
    return PopMetrics(parallel_efficiency=lb * comm, load_balance=lb, communication_efficiency=comm,
                      serialisation_efficiency=ser, transfer_efficiency=te, runtime=runtime,
                      runtime_ideal=runtime_ideal, useful_mean=mean, useful_max=peak)
