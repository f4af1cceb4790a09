"""Who sends how much to whom: communication matrices and message sizes.

:func:`comm_matrix` (also :meth:`waitscope.Trace.comm_matrix`) counts the
point-to-point messages of a trace by sender and receiver rank, from the
send records (``MpiSend``, ``MpiIsend``): every send counts once, with the
bytes it records, whether or not its receive is in the trace.  A window
keeps the messages whose send record lies inside it.

Collectives (``collectives=True``) are added from their
``MpiCollectiveEnd`` records, which hold only the bytes each member sent
and received in total, not per partner.  They are spread as follows (an
estimate where the operation's own pattern is not recorded):

* operations with a root: a member other than the root sends its bytes
  to the root; the root's sent bytes are split evenly over all members
  (itself included) for one-to-all operations (bcast, scatter, scatterv)
  and stay with the root (the diagonal: its own contribution) for
  all-to-one operations (gather, gatherv, reduce);
* operations without one (allreduce, alltoall, allgather, barrier, ...):
  each member's sent bytes are split evenly over all members (itself
  included).

With ``kind="count"`` every such (member, destination) pair of an
operation that carries bytes counts as one message.

:func:`message_sizes` is a histogram of the point-to-point message sizes
in classes k = floor(log2 bytes), i.e. [2**k, 2**(k+1)) bytes; class -1
holds the empty messages.

In the parallel mode (``waitscope.open(path, comm=...)``) every process
counts the sends of its own locations and the counts are summed over the
communicator: every process must call, and every process gets the whole
matrix (histogram).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .trace import Trace

KINDS = ("bytes", "count")
ONE_TO_ALL = frozenset({"bcast", "scatter", "scatterv"})
"""Rooted collectives whose root sends to every member (the others send to the root)."""
_SEND, _ISEND = 3, 4

SIZE_DTYPE = np.dtype([("log2_class", np.int64), ("low", np.int64), ("high", np.int64),
                       ("count", np.int64), ("bytes", np.int64)])
"""Rows of :func:`message_sizes`: class k, its bytes [low, high), messages and their bytes."""


def _check_window(window: Sequence[float] | None) -> tuple[float, float] | None:
    if window is None:
        return None
    try:
        t0, t1 = (float(x) for x in window)
    except (TypeError, ValueError):
        raise ValueError(f"window must be a pair (start, end) of seconds, got {window!r}") from None
    if not (np.isfinite(t0) and np.isfinite(t1)) or t1 <= t0:
        raise ValueError(f"window must have start < end (seconds, finite), got {window!r}")
    return t0, t1


def n_ranks(trace: "Trace") -> int:
    ranks = trace.location_ranks
    return int(ranks.max()) + 1 if len(ranks) and ranks.max() >= 0 else 0


def _sends(trace: "Trace", window: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sender rank, receiver rank and bytes of every send record of the loaded locations."""
    ranks = trace.location_ranks
    src, dst, size = [], [], []
    for loc in (int(x) for x in trace.loaded_locations):
        if ranks[loc] < 0:
            continue
        m = trace.messages(loc)
        sel = np.isin(m["kind"], ("send", "isend"))
        if window is not None:
            sel &= (m["time"] >= window[0]) & (m["time"] <= window[1])
        partner = m["partner"][sel]
        src.append(np.full(len(partner), int(ranks[loc]), dtype=np.int64))
        dst.append(ranks[partner].astype(np.int64))
        size.append(m["bytes"][sel].astype(np.int64))
    if not src:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(src), np.concatenate(dst), np.concatenate(size)


def _add_collectives(trace: "Trace", out: np.ndarray, kind: str, window: tuple[float, float] | None) -> None:
    ranks = trace.location_ranks
    comms = trace.communicators
    for loc in (int(x) for x in trace.loaded_locations):
        me = int(ranks[loc])
        if me < 0:
            continue
        c = trace.collectives(loc)
        sel = np.ones(len(c["event"]), dtype=bool)
        if window is not None:
            sel &= (c["time"] >= window[0]) & (c["time"] <= window[1])
        for op, comm, root, sent in zip(c["op"][sel], c["comm"][sel], c["root"][sel], c["sent"][sel]):
            sent = float(sent)
            if sent <= 0:
                continue
            info = comms[int(comm)]
            members = np.array([loc]) if info.is_self else np.asarray(info.locations, dtype=np.int64)
            member_ranks = ranks[members]
            member_ranks = member_ranks[member_ranks >= 0]
            if not len(member_ranks):
                continue
            if root >= 0 and not info.is_self:
                root_rank = int(ranks[members[int(root)]])
                if root_rank != me or op not in ONE_TO_ALL:
                    out[me, root_rank] += sent if kind == "bytes" else 1
                    continue
            share = sent / len(member_ranks) if kind == "bytes" else 1
            np.add.at(out[me], member_ranks, share)


def _summed(trace: "Trace", values: np.ndarray) -> np.ndarray:
    """`values` summed over the processes of a parallel-mode trace (unchanged in one process)."""
    comm = trace.comm
    if comm is None:
        return values
    from mpi4py import MPI

    out = np.zeros_like(values)
    comm.Allreduce(np.ascontiguousarray(values), out, op=MPI.SUM)
    return out


def comm_matrix(trace: "Trace", kind: str = "bytes", window: Sequence[float] | None = None,
                collectives: bool = False) -> np.ndarray:
    """Sender x receiver matrix (rank-indexed) of bytes or message counts; see the module's docstring.

    Integers (int64) for point-to-point messages alone; floats with
    ``collectives=True`` (a collective's bytes are split into shares).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(repr(k) for k in KINDS)}, got {kind!r}")
    if not isinstance(collectives, (bool, np.bool_)):
        raise TypeError(f"collectives must be True or False, got {collectives!r}")
    win = _check_window(window)
    n = n_ranks(trace)
    src, dst, size = _sends(trace, win)
    values = size if kind == "bytes" else np.ones(len(src), dtype=np.int64)
    if not collectives:
        exact = np.zeros((n, n), dtype=np.int64)
        np.add.at(exact, (src, dst), values)
        return _summed(trace, exact)
    out = np.zeros((n, n), dtype=np.float64)
    np.add.at(out, (src, dst), values)
    _add_collectives(trace, out, kind, win)
    return _summed(trace, out)


def message_sizes(trace: "Trace", window: Sequence[float] | None = None) -> np.ndarray:
    """Histogram (:data:`SIZE_DTYPE`) of point-to-point message sizes in classes floor(log2 bytes).

    One row per class from the smallest to the largest class that occurs
    (classes in between with no message included); class -1 is the empty
    messages.
    """
    _, _, size = _sends(trace, _check_window(window))
    cls = np.full(len(size), -1, dtype=np.int64)
    pos = size > 0
    # exact floor(log2) for integers: bit length - 1
    cls[pos] = np.array([int(x).bit_length() - 1 for x in size[pos]], dtype=np.int64)
    # classes -1..63 (a message has less than 2**64 bytes), summed over the processes, then trimmed
    counts = np.zeros((2, 65), dtype=np.int64)
    np.add.at(counts[0], cls + 1, 1)
    np.add.at(counts[1], cls + 1, size)
    counts = _summed(trace, counts)
    used = np.flatnonzero(counts[0])
    if not len(used):
        return np.zeros(0, dtype=SIZE_DTYPE)
    lo, hi = int(used[0]) - 1, int(used[-1]) - 1
    out = np.zeros(hi - lo + 1, dtype=SIZE_DTYPE)
    out["log2_class"] = np.arange(lo, hi + 1)
    k = np.maximum(out["log2_class"], 0)
    out["low"] = np.where(out["log2_class"] >= 0, 2 ** k, 0)
    out["high"] = np.where(out["log2_class"] >= 0, 2 ** (k + 1), 1)
    out["count"] = counts[0][lo + 1:hi + 2]
    out["bytes"] = counts[1][lo + 1:hi + 2]
    return out


def format_matrix(matrix: np.ndarray, kind: str) -> str:
    """The matrix as text: rows are senders, columns receivers, with row and column totals."""
    n = matrix.shape[0]
    fmt = (lambda v: f"{int(round(v))}") if kind == "count" or np.all(matrix == np.round(matrix)) \
        else (lambda v: f"{v:.1f}")
    cells = [[fmt(v) for v in row] + [fmt(row.sum())] for row in matrix]
    cells.append([fmt(v) for v in matrix.sum(axis=0)] + [fmt(matrix.sum())])
    head = [f"to {j}" for j in range(n)] + ["total"]
    labels = [f"from {i}" for i in range(n)] + ["total"]
    width = max([len(x) for row in cells for x in row] + [len(h) for h in head])
    lw = max(len(x) for x in labels)
    lines = [" " * lw + " " + " ".join(h.rjust(width) for h in head)]
    for label, row in zip(labels, cells):
        lines.append(label.ljust(lw) + " " + " ".join(x.rjust(width) for x in row))
    return "\n".join(lines)
