"""Facts read straight from a trace's events, to check analysis results against."""

from __future__ import annotations

import numpy as np

import waitscope


def region_enters(trace: waitscope.Trace, region: str) -> list[float]:
    """Times of every Enter of the named region, over all locations."""
    ids = [i for i, name in enumerate(trace.region_names) if name == region]
    in_region = np.isin(np.asarray(trace.callpath_region), ids)
    times: list[float] = []
    for loc in range(trace.n_locations):
        e = trace.events(loc)
        enter = (e.kind_names() == "enter") & (e.callpath >= 0)
        times += [float(t) for t in e.time[enter][in_region[e.callpath[enter]]]]
    return times


def path_span(trace: waitscope.Trace) -> float:
    """What the critical path spans: from the first Enter of MPI_Init to the
    latest Enter of MPI_Finalize (Scalasca 2.6's convention)."""
    return max(region_enters(trace, "MPI_Finalize")) - min(region_enters(trace, "MPI_Init"))
