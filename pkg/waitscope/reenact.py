"""Real-time re-enactment of a (changed) trace: the simulation method of Böhme et al. (ICPP 2010).

Böhme et al. (ICPP 2010, section VI) evaluate an optimization hypothesis by
re-enacting the changed trace on the machine: computation is simulated by
busy-waiting for its (changed) duration, communication by performing the
recorded MPI operations with identical partners, tags, communicators and
message sizes, and the re-enactment is traced.  This module does that with
mpi4py:

* :func:`schedule` turns a trace into one list of operations per rank (the
  computation between two MPI calls as a duration, then the MPI call);
* ``python -m waitscope.reenact --run SCHEDULE.json`` is the program every
  rank runs under ``mpiexec``;
* :func:`simulate_realtime` (``Trace.simulate(mode="realtime")``) applies
  the hypothesis with the model simulation (which changes only computation
  times when the network is the recorded one), writes the schedule, runs it
  under ``waitscope trace -- mpiexec.<MPI> -n N python -m waitscope.reenact``
  and opens the recorded trace;
* ``python -m waitscope.reenact TRACE [--balance REGION] [--scale REGION=F]
  [-o DIR]`` does the same from the command line.

Re-enacted: MPI_Send/Ssend/Bsend/Rsend, MPI_Recv, MPI_Sendrecv, MPI_Isend,
MPI_Irecv, MPI_Wait*/MPI_Test* (the requests they completed), and the
collectives (barrier, bcast, gather(v), scatter(v), allgather(v),
alltoall(v,w), allreduce, reduce, reduce_scatter, scan, exscan) on the
recorded communicators.  Other MPI calls cost their recorded duration as
computation.  The recorded trace has the MPI calls only (the re-enacting
program has no user regions), one location per rank.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .trace import Trace

ENTER, LEAVE, SEND, ISEND, ISEND_COMPLETE, IRECV_REQUEST, RECV, IRECV = 1, 2, 3, 4, 5, 6, 7, 8
COLL_END = 12

# OTF2 collective operations -> what the re-enactment calls
_COLL = {0: "barrier", 1: "bcast", 2: "gather", 3: "gather", 4: "scatter", 5: "scatter", 6: "allgather",
         7: "allgather", 8: "alltoall", 9: "alltoall", 10: "alltoall", 11: "allreduce", 12: "reduce",
         13: "allreduce", 14: "scan", 15: "exscan", 16: "allreduce"}
_SYNC_SENDS = {"MPI_Ssend", "MPI_Issend"}


class ReenactError(RuntimeError):
    """The re-enactment cannot run or failed (the message says why)."""


def _translate(ev: dict[str, np.ndarray], inside: list[int], call: str, at: dict[str, dict[int, int]],
               state: dict[str, Any]) -> list[list[Any]]:
    """The operations of one MPI call from the events inside it."""
    kind = ev["kind"]
    ops: list[list[Any]] = []
    wait: list[Any] | None = None
    for j in inside:
        kj = int(kind[j])
        if kj in (SEND, RECV, ISEND, IRECV):
            m = at["msg"][j]
            msg = [int(ev["msg_comm"][m]), int(ev["msg_peer"][m]), int(ev["msg_tag"][m]), int(ev["msg_bytes"][m])]
        if kj == SEND:
            ops.append(["send", *msg, int(call in _SYNC_SENDS)])
        elif kj == RECV:
            ops.append(["recv", *msg])
        elif kj == ISEND:
            state["open"][at["req"].get(j, -1)] = state["next"]
            ops.append(["isend", *msg, state["next"], int(call in _SYNC_SENDS)])
            state["next"] += 1
        elif kj == IRECV_REQUEST:
            op = ["irecv", -1, -1, -1, 0, state["next"]]
            state["open"][at["req"].get(j, -1)] = state["next"]
            state["irecv"][state["next"]] = op
            ops.append(op)
            state["next"] += 1
        elif kj in (ISEND_COMPLETE, IRECV):
            ours = state["open"].pop(at["req"].get(j, -1), None)
            if ours is None:
                continue
            if kj == IRECV and ours in state["irecv"]:
                state["irecv"].pop(ours)[1:5] = msg
            if wait is None:
                wait = ["wait", []]
                ops.append(wait)
            wait[1].append(ours)
        elif kj == COLL_END:
            c = at["coll"][j]
            name = _COLL.get(int(ev["coll_op"][c]))
            if name is not None:
                root = int(ev["coll_root"][c])
                ops.append(["coll", name, int(ev["coll_comm"][c]), -1 if root == 0xFFFFFFFF else root,
                            int(max(ev["coll_sent"][c], ev["coll_received"][c]))])
    if call == "MPI_Sendrecv" and len(ops) == 2 and {ops[0][0], ops[1][0]} == {"send", "recv"}:
        send, recv = (ops[0], ops[1]) if ops[0][0] == "send" else (ops[1], ops[0])
        ops = [["sendrecv", *send[1:5], *recv[1:5]]]
    return ops


def _rank_ops(trace: "Trace", loc: int, is_mpi: np.ndarray) -> list[list[Any]]:
    """The operations of one location: ["c", seconds] before every MPI call, then the call."""
    ev = trace._core.events(loc)
    kind, ref, time_ = ev["kind"], ev["ref"], ev["time"]
    at = {"msg": {int(e): i for i, e in enumerate(ev["msg_event"])},
          "req": {int(e): int(r) for e, r in zip(ev["req_event"], ev["req_id"])},
          "coll": {int(e): i for i, e in enumerate(ev["coll_event"])}}
    # recorded request ids may be reused once completed: map them to our own ids
    state: dict[str, Any] = {"open": {}, "irecv": {}, "next": 0}
    names = trace.callpath_names
    ops: list[list[Any]] = []
    depth, last, enter, call = 0, float(time_[0]) if len(time_) else 0.0, 0.0, ""
    inside: list[int] = []
    for i in range(len(kind)):
        k = int(kind[i])
        if k in (ENTER, LEAVE) and is_mpi[ref[i]]:
            if k == ENTER:
                if depth == 0:
                    ops.append(["c", float(time_[i]) - last])
                    call, inside, enter = names[ref[i]].rsplit("/", 1)[-1], [], float(time_[i])
                depth += 1
            elif depth > 0:
                depth -= 1
                if depth == 0:
                    done = _translate(ev, inside, call, at, state)
                    if not done and call not in _NO_COST:
                        ops[-1][1] += float(time_[i]) - enter  # a call not re-enacted costs its duration
                    ops.extend(done)
                    last = float(time_[i])
        elif depth > 0:
            inside.append(i)
    # requests never completed (cancelled, cut short) are not posted
    dropped = set(state["irecv"])
    ops = [op for op in ops if not (op[0] == "irecv" and op[5] in dropped)]
    if len(time_):
        ops.append(["c", float(time_[-1]) - last])
    return [op for op in ops if not (op[0] == "c" and op[1] <= 0.0)]


_NO_COST = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"}


def schedule(trace: "Trace") -> dict[str, Any]:
    """What every rank re-enacts: communicators (world ranks in communicator order) and
    the operations per rank.  Collective sizes are made equal over the members of each
    instance (the largest recorded count)."""
    ranks = np.asarray(trace.location_ranks)
    n = trace.n_locations
    if len(set(int(r) for r in ranks)) != n or set(int(r) for r in ranks) != set(range(n)):
        raise ValueError("re-enactment needs one location per MPI rank (no threads, every rank loaded)")
    is_mpi = np.array([trace.regions[int(r)].is_mpi for r in trace.callpath_region], dtype=bool)
    per_rank: list[list[list[Any]]] = [[] for _ in range(n)]
    for loc in range(n):
        per_rank[int(ranks[loc])] = _rank_ops(trace, loc, is_mpi)
    comms: dict[str, Any] = {}
    for c in trace.communicators:
        comms[str(c.index)] = "self" if c.is_self else [int(ranks[loc]) for loc in c.locations]
    # the k-th collective of every member of a communicator is one instance
    instances: dict[tuple[int, int], list[list[Any]]] = {}
    for rank_ops in per_rank:
        seen: dict[int, int] = {}
        for op in rank_ops:
            if op[0] == "coll":
                k = seen.get(op[2], 0)
                seen[op[2]] = k + 1
                instances.setdefault((op[2], k), []).append(op)
    for members in instances.values():
        size = max(op[4] for op in members)
        for op in members:
            op[4] = size
    return {"n_ranks": n, "comms": comms, "ranks": per_rank}


# ---- the program every rank runs --------------------------------------------------------


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run_schedule(path: str) -> None:
    """Re-enacts rank MPI.COMM_WORLD.rank's operations of the schedule at `path`."""
    import mpi4py

    with open(path) as f:
        plan = json.load(f)
    mpi4py.rc.initialize = False  # MPI_Init once the imports are done: the trace starts there
    from mpi4py import MPI

    MPI.Init()
    world = MPI.COMM_WORLD
    if world.Get_size() != plan["n_ranks"]:
        raise ReenactError(f"{path}: the schedule is for {plan['n_ranks']} ranks, mpiexec started {world.Get_size()}")
    me = world.Get_rank()
    comms: dict[int, Any] = {}
    group = world.Get_group()
    for key in sorted(plan["comms"], key=int):
        members = plan["comms"][key]
        if members == "self":
            comms[int(key)] = MPI.COMM_SELF
        elif members == list(range(world.Get_size())):
            comms[int(key)] = world
        else:
            sub = group.Incl(members)
            comms[int(key)] = world.Create(sub)  # collective over world, in the same order everywhere
            sub.Free()
    group.Free()
    requests: dict[int, Any] = {}
    buffers: list[Any] = []
    world.Barrier()
    for op in plan["ranks"][me]:
        kind = op[0]
        if kind == "c":
            _busy(op[1])
        elif kind == "send":
            comm, peer, tag, size, sync = op[1:6]
            (comms[comm].Ssend if sync else comms[comm].Send)([np.zeros(size, np.uint8), MPI.BYTE], peer, tag)
        elif kind == "recv":
            comm, peer, tag, size = op[1:5]
            comms[comm].Recv([np.empty(size, np.uint8), MPI.BYTE], peer, tag)
        elif kind == "sendrecv":
            comm, peer, tag, size, rcomm, rpeer, rtag, rsize = op[1:9]
            comms[comm].Sendrecv([np.zeros(size, np.uint8), MPI.BYTE], peer, tag,
                                 [np.empty(rsize, np.uint8), MPI.BYTE], rpeer, rtag)
        elif kind == "isend":
            comm, peer, tag, size, req, sync = op[1:7]
            buf = np.zeros(size, np.uint8)
            buffers.append(buf)
            requests[req] = (comms[comm].Issend if sync else comms[comm].Isend)([buf, MPI.BYTE], peer, tag)
        elif kind == "irecv":
            comm, peer, tag, size, req = op[1:6]
            buf = np.empty(size, np.uint8)
            buffers.append(buf)
            requests[req] = comms[comm].Irecv([buf, MPI.BYTE], peer, tag)
        elif kind == "wait":
            MPI.Request.Waitall([requests.pop(r) for r in op[1]])
        elif kind == "coll":
            _collective(MPI, comms[op[2]], op[1], op[3], op[4])
    world.Barrier()
    MPI.Finalize()


def reenacted_seconds(trace: "Trace") -> float:
    """How long the re-enacted operations took in a trace of :func:`run_schedule`: from
    the end of the first MPI_Barrier (the start, after setting up the communicators) to
    the last entry into the final one."""
    starts, ends = [], []
    for loc in range(trace.n_locations):
        ev = trace.events(loc)
        barrier = np.array([name.rsplit("/", 1)[-1] == "MPI_Barrier" for name in trace.callpath_names])
        is_b = (ev.kind == ENTER) | (ev.kind == LEAVE)
        sel = np.flatnonzero(is_b & barrier[np.where(is_b, ev.ref, 0)])
        leaves = [i for i in sel if ev.kind[i] == LEAVE]
        enters = [i for i in sel if ev.kind[i] == ENTER]
        if not leaves or not enters:
            raise ReenactError(f"{trace.path}: location {loc} has no MPI_Barrier: not a re-enactment")
        starts.append(float(ev.time[leaves[0]]))
        ends.append(float(ev.time[enters[-1]]))
    return max(ends) - max(starts)


def _collective(MPI: Any, comm: Any, name: str, root: int, size: int) -> None:
    n = comm.Get_size()
    block = max(size // n, 1)
    one = np.zeros(max(size, 1), np.uint8)
    out = np.empty_like(one)
    if name == "barrier":
        comm.Barrier()
    elif name == "bcast":
        comm.Bcast([one, MPI.BYTE], root)
    elif name == "reduce":
        comm.Reduce([one, MPI.BYTE], [out, MPI.BYTE], MPI.BAND, root)
    elif name == "allreduce":
        comm.Allreduce([one, MPI.BYTE], [out, MPI.BYTE], MPI.BAND)
    elif name == "scan":
        comm.Scan([one, MPI.BYTE], [out, MPI.BYTE], MPI.BAND)
    elif name == "exscan":
        comm.Exscan([one, MPI.BYTE], [out, MPI.BYTE], MPI.BAND)
    else:
        part = np.zeros(block, np.uint8)
        whole = np.zeros(block * n, np.uint8)
        if name == "gather":
            comm.Gather([part, MPI.BYTE], [whole, MPI.BYTE], root)
        elif name == "scatter":
            comm.Scatter([whole, MPI.BYTE], [part, MPI.BYTE], root)
        elif name == "allgather":
            comm.Allgather([part, MPI.BYTE], [whole, MPI.BYTE])
        elif name == "alltoall":
            comm.Alltoall([whole, MPI.BYTE], [np.empty_like(whole), MPI.BYTE])


# ---- driving it -----------------------------------------------------------------------------


def simulate_realtime(trace: "Trace", balance: Any = None, scale: Any = None, network: Any = "recorded",
                      output: str | os.PathLike[str] | None = None, log: Any = None) -> "Trace":
    """Re-enacts `trace` changed by the hypothesis under mpiexec (the MPI mpi4py uses),
    records it with ``waitscope trace`` into `output`/trace (default: a new temporary
    directory; the schedule is written next to it) and returns the recorded trace.
    `log` (a text stream) receives the lines ``waitscope trace`` prints."""
    from . import open as open_trace
    from ._parallel import launcher
    from .cli_measure import measure

    if network != "recorded":
        raise ValueError("mode='realtime' re-enacts on the real network: network must be 'recorded'")
    if trace.comm is not None:
        raise ValueError("mode='realtime' runs its own mpiexec: simulate from one process (open without comm=)")
    start = launcher(sys.executable)
    if start is None:
        raise ReenactError("mode='realtime' needs mpi4py and the mpiexec of its MPI (mpiexec.mpich or "
                           "mpiexec.openmpi); .ci/setup test installs them")
    changed = trace.simulate(balance=balance, scale=scale, progress=False) if (balance or scale) else trace
    plan = schedule(changed)
    out = Path(output) if output is not None else Path(tempfile.mkdtemp(prefix="waitscope-reenact-"))
    out.mkdir(parents=True, exist_ok=True)
    plan_path = out / "reenact-schedule.json"
    plan_path.write_text(json.dumps(plan))
    trace_dir = out / "trace"
    env = dict(os.environ)
    env.update(start[1])
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    command = [*start[0], "-n", str(plan["n_ranks"]), sys.executable, "-m", "waitscope.reenact", "--run",
               str(plan_path)]
    report = io.StringIO()
    status = measure(command, str(trace_dir), None, force=True, environ=env, out=report)
    if log is not None:
        log.write(report.getvalue())
    if status != 0:
        raise ReenactError(f"the re-enactment failed (exit status {status}): {' '.join(command)}\n"
                           f"{report.getvalue()}")
    result = open_trace(trace_dir, progress=False)
    result._simulation = {"balance": balance, "scale": dict(scale) if scale else None, "network": network,
                          "mode": "realtime", "schedule": str(plan_path),
                          "reenacted_seconds": reenacted_seconds(result)}
    return result


def _parse_scale(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, factor = item.rpartition("=")
        if not sep or not name:
            raise SystemExit(f"--scale needs REGION=FACTOR, got {item!r}")
        try:
            out[name] = float(factor)
        except ValueError:
            raise SystemExit(f"--scale {item!r}: {factor!r} is not a number") from None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m waitscope.reenact", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", nargs="?", help="the trace to re-enact")
    ap.add_argument("--balance", action="append", metavar="REGION", help="balance a region or call path")
    ap.add_argument("--scale", action="append", default=[], metavar="REGION=F", help="speed a region up by F")
    ap.add_argument("-o", "--output-dir", metavar="DIR", help="where to write the schedule and the recorded trace")
    ap.add_argument("--run", metavar="SCHEDULE", help=argparse.SUPPRESS)  # what every rank runs
    args = ap.parse_args(argv)
    if args.run:
        try:
            run_schedule(args.run)
        except Exception:
            # one failing rank must not leave the others waiting in MPI
            import traceback

            traceback.print_exc()
            from mpi4py import MPI

            if MPI.Is_initialized() and not MPI.Is_finalized():
                MPI.COMM_WORLD.Abort(3)
            return 3
        return 0
    if not args.trace:
        ap.error("give a TRACE")
    from . import open as open_trace

    before = open_trace(args.trace, progress=False)
    after = simulate_realtime(before, balance=args.balance, scale=_parse_scale(args.scale) or None,
                              output=args.output_dir, log=sys.stderr)
    print(f"run length: recorded {before.run_length:.6f} s; re-enacted operations took "
          f"{after.simulation['reenacted_seconds']:.6f} s (the whole re-enactment {after.run_length:.6f} s); "
          f"trace: {after.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
