"""The analysis result as a Hatchet GraphFrame (LLNL's Hatchet; Thicket builds on it).

:func:`to_hatchet` (:meth:`waitscope.AnalysisResult.to_hatchet`) makes a
``hatchet.GraphFrame`` whose graph is the call-path tree (one node per
call path, its frame ``{"name": region, "type": "region"}``) and whose
dataframe is indexed by (node, rank): one row per call path and MPI rank,
the locations of a rank summed.  A hybrid MPI+OpenMP result (a process
with several threads) is indexed by (node, rank, thread), as Hatchet's
readers of threaded profiles do: one row per call path and location, the
thread numbered within its rank (0: the master thread).  Columns: ``name``, every
metric of the result by its id as an exclusive metric (``time``,
``mpi_latesender``, ...; seconds, counts or bytes as in the cube) and, for
each of them, the inclusive value ``"<id> (inc)"`` (the call path and
everything below it).  The default metric is ``time``.

Hatchet is an optional dependency: ``python -m pip install llnl-hatchet``
(the ``hatchet`` extra of waitscope).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult


def _import_hatchet() -> Any:
    try:
        import hatchet
        from hatchet.frame import Frame
        from hatchet.graph import Graph
        from hatchet.node import Node
    except ImportError as exc:
        from ._optional import install_hint

        raise ImportError(f"AnalysisResult.to_hatchet needs Hatchet, which is not installed: "
                          f"{install_hint('hatchet')}", name="hatchet") from exc
    return hatchet, Frame, Graph, Node


def per_rank(values: np.ndarray, ranks: np.ndarray, n_ranks: int) -> np.ndarray:
    """[call path, location] -> [call path, rank], summing the locations of a rank."""
    out = np.zeros((values.shape[0], n_ranks))
    for loc, rank in enumerate(ranks):
        if rank >= 0:
            out[:, int(rank)] += values[:, loc]
    return out


def to_hatchet(result: "AnalysisResult") -> Any:
    """The result as a ``hatchet.GraphFrame`` (see the module's docstring)."""
    hatchet, Frame, Graph, Node = _import_hatchet()
    from . import _optional

    pd = _optional.require("pandas", "AnalysisResult.to_hatchet")

    trace = result.trace
    parent = np.asarray(result.callpath_parent, dtype=np.int64)
    regions = np.asarray(trace.callpath_region, dtype=np.int64)
    region_names = trace.region_names
    n_cp = len(parent)
    names = [region_names[int(r)] if 0 <= int(r) < len(region_names) else "?" for r in regions]
    nodes = []
    roots = []
    for cp in range(n_cp):  # parents come before their children
        p = int(parent[cp])
        node = Node(Frame({"name": names[cp], "type": "region"}), nodes[p] if p >= 0 else None)
        nodes.append(node)
        if p >= 0:
            nodes[p].add_child(node)
        else:
            roots.append(node)
    graph = Graph(roots)
    graph.enumerate_traverse()

    ranks = np.asarray(result.location_ranks, dtype=np.int64)
    threaded = bool(getattr(result, "has_threads", False))
    if threaded:  # one column per location, in (rank, thread) order
        threads = np.asarray(result.location_threads, dtype=np.int64)
        order = np.lexsort((threads, ranks))
        keep = order[ranks[order] >= 0]
        n_cols = len(keep)

        def columns_of(values: np.ndarray) -> np.ndarray:
            return np.asarray(values, dtype=np.float64)[:, keep]
    else:
        n_cols = int(ranks.max()) + 1 if len(ranks) and ranks.max() >= 0 else 0

        def columns_of(values: np.ndarray) -> np.ndarray:
            return per_rank(values, ranks, n_cols)
    cp_idx = np.repeat(np.arange(n_cp), n_cols)
    columns: dict[str, Any] = {
        "node": [nodes[int(c)] for c in cp_idx],
        "rank": np.tile(ranks[keep] if threaded else np.arange(n_cols), n_cp),
    }
    if threaded:
        columns["thread"] = np.tile(threads[keep], n_cp)
    columns["name"] = [names[int(c)] for c in cp_idx]
    exc, inc = [], []
    for mid in result.metric_ids:
        columns[mid] = columns_of(result.get(mid)).reshape(-1)
        exc.append(mid)
    for mid in result.metric_ids:
        columns[f"{mid} (inc)"] = columns_of(result.inclusive(mid)).reshape(-1)
        inc.append(f"{mid} (inc)")
    index = ["node", "rank", "thread"] if threaded else ["node", "rank"]
    frame = pd.DataFrame(columns).set_index(index).sort_index()
    metadata = {"source": str(trace.path), "generator": "waitscope", "delay_model": result.delay_model}
    return hatchet.GraphFrame(graph, frame, exc_metrics=exc, inc_metrics=inc, default_metric="time",
                              metadata=metadata)
