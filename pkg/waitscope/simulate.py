"""What-if simulation: a trace's timestamps re-computed under a hypothesis.

:meth:`waitscope.Trace.simulate` is the entry point; this module checks its
arguments and resolves the regions and call paths they name.  The
semantics are described in ``docs/simulate.md``.  ``mode="model"`` runs a
forward replay in the C core (embedded or parallel); ``mode="realtime"``
re-enacts the changed trace with real MPI operations (:mod:`waitscope.reenact`).
"""

from __future__ import annotations

import difflib
import math
from numbers import Real
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

import numpy as np

from . import _callpaths, _core

if TYPE_CHECKING:
    from .trace import Trace

Network = Union[str, Sequence[float]]


class UnknownRegion(ValueError):
    """A region or call-path name of a hypothesis that the trace does not have.

    ``argument`` is the argument that named it (``"balance"``, ``"scale"``),
    ``key`` the name, ``closest`` the most similar call paths: the command
    line words its own message from them."""

    def __init__(self, argument: str, key: str, closest: list[str], n_callpaths: int):
        self.argument, self.key, self.closest, self.n_callpaths = argument, key, closest, n_callpaths
        super().__init__(self.message(argument, "trace.region_names and trace.callpath_names list them"))

    def message(self, argument: str, listing: str) -> str:
        """The message with `argument` (e.g. ``--balance``) and where to find every name."""
        hint = f"; closest: {', '.join(repr(n) for n in self.closest)}" if self.closest else ""
        return f"{argument}: unknown region or call path {self.key!r}{hint} ({listing})"


def callpaths_of(trace: "Trace", key: Any, argument: str) -> list[int]:
    """The call paths a region name or call-path name selects (every call
    path of a region; else one call path by full name or unique suffix)."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return [trace.callpath_index(int(key))]
    if not isinstance(key, str):
        raise TypeError(f"{argument}: a region or call path must be given by name (str), not {type(key).__name__}")
    names = trace.region_names
    regions = trace.callpath_region
    wanted = {r for r, name in enumerate(names) if key == name or key in _callpaths.component_names(name)}
    found = [int(cp) for cp in np.flatnonzero(np.isin(regions, list(wanted)))] if wanted else []
    if found:
        return found
    try:
        return [_callpaths.resolve(trace.callpath_names, key, trace.program_region)]
    except KeyError:
        raise UnknownRegion(argument, key, _callpaths.closest(trace.callpath_names, key),
                            len(trace.callpath_names)) from None


def _is_mpi(trace: "Trace", cp: int) -> bool:
    return trace.regions[int(trace.callpath_region[cp])].is_mpi


def balance_mask(trace: "Trace", balance: Any) -> np.ndarray | None:
    if balance is None:
        return None
    keys = [balance] if isinstance(balance, str) else balance
    if not isinstance(keys, (list, tuple)) or not keys:
        raise TypeError(f"balance must be a region or call-path name or a non-empty list of them, got {balance!r}")
    mask = np.zeros(len(trace.callpath_names), dtype=np.uint8)
    for key in keys:
        for cp in callpaths_of(trace, key, "balance"):
            if _is_mpi(trace, cp):
                raise ValueError(f"balance: {trace.callpath_names[cp]!r} is an MPI call; balance distributes "
                                 "computation (scale={...} changes MPI calls)")
            mask[cp] = 1
    return mask


def scale_factors(trace: "Trace", scale: Any) -> np.ndarray | None:
    """Per call path the factor of its time: 1 / the speed-up given (2: twice as fast)."""
    if scale is None:
        return None
    if not isinstance(scale, Mapping) or not scale:
        raise TypeError(f"scale must be a non-empty dict {{region or call path: speed-up factor}}, got {scale!r}")
    factors = np.ones(len(trace.callpath_names), dtype=np.float64)
    for key, factor in scale.items():
        if isinstance(factor, bool) or not isinstance(factor, Real):
            raise TypeError(f"scale: the factor of {key!r} must be a number, got {factor!r}")
        if not (math.isfinite(float(factor)) and float(factor) > 0.0):
            raise ValueError(f"scale: the factor of {key!r} must be finite and > 0, got {factor!r}")
        for cp in callpaths_of(trace, key, "scale"):
            factors[cp] /= float(factor)  # the core multiplies times
    return factors


def network_model(network: Any) -> tuple[float, float] | None:
    """None for the recorded network, else (latency in s, bandwidth in bytes/s)."""
    if isinstance(network, str):
        if network == "recorded":
            return None
        if network == "ideal":
            return (0.0, math.inf)
        raise ValueError(f"network must be 'recorded', 'ideal' or (latency_s, bandwidth_Bps), got {network!r}")
    if not isinstance(network, (tuple, list)) or len(network) != 2 or any(
            isinstance(v, bool) or not isinstance(v, Real) for v in network):
        raise TypeError(f"network must be 'recorded', 'ideal' or (latency_s, bandwidth_Bps), got {network!r}")
    latency, bandwidth = float(network[0]), float(network[1])
    if not (math.isfinite(latency) and latency >= 0.0):
        raise ValueError(f"network: the latency must be finite and >= 0 seconds, got {network[0]!r}")
    if not bandwidth > 0.0:
        raise ValueError(f"network: the bandwidth must be > 0 bytes/s, got {network[1]!r}")
    return (latency, bandwidth)


ARGUMENTS = ("balance", "scale", "network", "mode", "progress")
"""The arguments of :meth:`waitscope.Trace.simulate`."""
REALTIME_ARGUMENTS = ("output", "log")
"""The further arguments of ``mode="realtime"`` (:func:`waitscope.reenact.simulate_realtime`)."""


def _unexpected(arguments: Mapping[str, Any]) -> str:
    """The message of a TypeError for keyword arguments simulate does not take, with the likely intended one."""
    known = ARGUMENTS + REALTIME_ARGUMENTS
    parts = []
    for name in sorted(arguments):
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.4) or \
            [k for k in known if k in name or name in k][:1]
        parts.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    return (f"simulate() got an unexpected keyword argument {', '.join(parts)}; it takes "
            f"{', '.join(ARGUMENTS)} (and {', '.join(REALTIME_ARGUMENTS)} with mode='realtime')")


def simulate(trace: "Trace", balance: Any = None, scale: Any = None, network: Network = "recorded",
             mode: str = "model", progress: Any = "auto", **realtime: Any) -> "Trace":
    """See :meth:`waitscope.Trace.simulate`."""
    from .progress import Reporting
    from .trace import Trace

    unknown = {k: v for k, v in realtime.items() if k not in REALTIME_ARGUMENTS}
    if unknown:
        raise TypeError(_unexpected(unknown))
    if not isinstance(mode, str) or mode not in ("model", "realtime"):
        raise ValueError(f"mode must be 'model' or 'realtime', got {mode!r}")
    mask = balance_mask(trace, balance)
    factors = scale_factors(trace, scale)
    net = network_model(network)
    if mode == "realtime":
        from .reenact import simulate_realtime

        return simulate_realtime(trace, balance=balance, scale=scale, network=network, **realtime)
    if realtime:  # all of them REALTIME_ARGUMENTS (checked above)
        raise TypeError(f"simulate: {', '.join(repr(k) for k in sorted(realtime))} "
                        f"{'are arguments' if len(realtime) > 1 else 'is an argument'} of mode='realtime' only")
    if trace.comm is not None:
        from ._parallel import mpi_module

        with Reporting(progress, trace.comm, trace.n_events) as callback:
            core, stats = mpi_module().simulate(trace._core, trace.comm, trace.owner, scale=factors, balance=mask,
                                                network=net, progress=callback)
        out = Trace(core, comm=trace.comm, owner=trace.owner)
    else:
        with Reporting(progress) as callback:
            core, stats = _core.simulate(trace._core, scale=factors, balance=mask, network=net, progress=callback)
        out = Trace(core)
    out._simulation = {"balance": balance, "scale": dict(scale) if scale else None, "network": network,
                       "mode": mode, **stats}
    return out
