"""halo1d_mpi4py.py - a 1D halo exchange in Python (mpi4py, NumPy buffers)
with a convergence check and a tunable load imbalance.

What it does
    The ranks form a non-periodic chain.  Every step each rank
      1. computes: a NumPy update plus a sleep of WORK ms, EXTRA ms more
         on the slow rank (k mod P; ``--fixed R``: always rank R);
      2. exchanges halos with its left and right neighbours:
         Irecv x 2, Isend x 2, MPI.Request.Waitall;
      3. checks convergence: comm.Allreduce of the local residual.

Run (mpi4py must be built against the MPI that launches it; the waitscope
test environment builds it against MPICH):
    mpiexec.mpich -n 4 python3 examples/halo1d_mpi4py.py [--steps K] [--work W]
                                                         [--extra X] [--fixed R]
    waitscope trace --profile -- mpiexec.mpich -n 4 python3 examples/halo1d_mpi4py.py
Defaults: 40 steps, WORK = 1 ms, EXTRA = 4 ms, rotating slow rank.

The injected waiting (printed by rank 0 as "waitscope-nominal ..." from the
formula below and as "waitscope-expected ..." from what the ranks measured:
each stamps (time.monotonic, one clock on a node) the start of its sends,
the start and end of its Waitall and Allreduce; rank 0 gathers the stamps
and sums Scalasca's definitions, min(partner's start, own end) - own start.
The two agree on an idle machine; on a loaded one the scheduler stretches
sleeps, and a trace must find the measured amount)
    Every step starts with all ranks leaving the Allreduce of the previous
    step together.  With w_r the work of rank r in step k, a rank's Waitall
    waits for its latest neighbour (Scalasca's Late Sender of a Waitall is
    the largest lateness of the sends it completes):
        LS_r = max_{n in {r} u N(r)} w_n - w_r,
    it then enters the Allreduce at max_{n in {r} u N(r)} w_n and waits there
    until the last rank enters (Wait at N x N):
        NxN_r = max_q w_q - max_{n in {r} u N(r)} w_n.
    Summed over ranks LS + NxN = (P - 1) * EXTRA per step; the slow rank's
    neighbours (one at the ends of the chain, two inside) wait in the
    Waitall, everybody else in the Allreduce.  Rank 0 sums these terms.
    Python adds some tens of microseconds per step to every rank alike.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from mpi4py import MPI


def compute(u: np.ndarray, ms: float) -> float:
    u[1:-1] = 0.5 * u[1:-1] + 0.25 * (u[:-2] + u[2:])
    time.sleep(ms / 1000.0)
    return float(np.abs(u).sum())


def exchange(comm: MPI.Comm, u: np.ndarray, left: int, right: int, stamp: list[float]) -> None:
    """Appends to `stamp`: start of the sends, start and end of the Waitall."""
    recv_l, recv_r = np.empty(1), np.empty(1)
    requests = [comm.Irecv(recv_l, source=left, tag=0), comm.Irecv(recv_r, source=right, tag=1)]
    out_l, out_r = u[1:2].copy(), u[-2:-1].copy()
    stamp.append(time.monotonic())
    requests += [comm.Isend(out_l, dest=left, tag=1), comm.Isend(out_r, dest=right, tag=0)]
    stamp.append(time.monotonic())
    MPI.Request.Waitall(requests)
    stamp.append(time.monotonic())
    if left != MPI.PROC_NULL:
        u[0] = recv_l[0]
    if right != MPI.PROC_NULL:
        u[-1] = recv_r[0]


def converged(comm: MPI.Comm, residual: float, stamp: list[float]) -> bool:
    """Appends to `stamp`: start and end of the Allreduce."""
    total = np.zeros(1)
    stamp.append(time.monotonic())
    comm.Allreduce(np.array([residual]), total, op=MPI.SUM)
    stamp.append(time.monotonic())
    return bool(total[0] < 0)


def slow_rank(step: int, size: int, fixed: int | None) -> int:
    return fixed if fixed is not None else step % size


def solver(comm: MPI.Comm, args: argparse.Namespace) -> list[list[float]]:
    """Runs the steps; returns per step the stamps of exchange() and converged()."""
    rank, size = comm.Get_rank(), comm.Get_size()
    stamps: list[list[float]] = []
    left = rank - 1 if rank > 0 else MPI.PROC_NULL
    right = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    u = np.linspace(0.0, 1.0, 256) + rank
    for step in range(1, args.steps + 1):
        extra = args.extra if rank == slow_rank(step, size, args.fixed) else 0.0
        residual = compute(u, args.work + extra)
        stamp: list[float] = []
        stamps.append(stamp)
        exchange(comm, u, left, right, stamp)
        if converged(comm, residual, stamp):
            break
    return stamps


def measured(stamps: list[list[list[float]]]) -> tuple[float, float]:
    """Late Sender and Wait at N x N by Scalasca's definitions from the stamps
    stamps[rank][step] = [send start, Waitall start, Waitall end, Allreduce start, Allreduce end]."""
    size = len(stamps)
    ls = nxn = 0.0
    for step in range(len(stamps[0])):
        s = [stamps[r][step] for r in range(size)]
        last = max(x[3] for x in s)
        for r in range(size):
            latest = max(s[n][0] for n in (r - 1, r + 1) if 0 <= n < size) if size > 1 else s[r][1]
            ls += max(0.0, min(latest, s[r][2]) - s[r][1])
            nxn += max(0.0, min(last, s[r][4]) - s[r][3])
    return ls, nxn


def nominal(args: argparse.Namespace, size: int) -> tuple[float, float]:
    """Late Sender and Wait at N x N of the header's model, in seconds."""
    ls = nxn = 0.0
    for step in range(1, args.steps + 1):
        slow = slow_rank(step, size, args.fixed)
        w = [args.work + (args.extra if r == slow else 0.0) for r in range(size)]
        top = max(w)
        for r in range(size):
            near = max(w[n] for n in (r - 1, r, r + 1) if 0 <= n < size)
            ls += near - w[r]
            nxn += top - near
    return ls / 1000.0, nxn / 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--work", type=float, default=1.0, help="ms of work per step")
    parser.add_argument("--extra", type=float, default=4.0, help="extra ms of the slow rank")
    parser.add_argument("--fixed", type=int, default=None, help="always make this rank slow")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    comm.Barrier()
    t0 = time.perf_counter()
    stamps = solver(comm, args)
    elapsed = time.perf_counter() - t0
    everyone = comm.gather(stamps, root=0)
    if comm.Get_rank() == 0:
        print(f"halo1d_mpi4py: {comm.Get_size()} ranks, {args.steps} steps, {elapsed:.3f} s")
        ls, nxn = nominal(args, comm.Get_size())
        print(f"waitscope-nominal mpi_latesender={ls:.9f} mpi_wait_nxn={nxn:.9f}")
        ls, nxn = measured(everyone)
        print(f"waitscope-expected mpi_latesender={ls:.9f} mpi_wait_nxn={nxn:.9f}", flush=True)


if __name__ == "__main__":
    main()
