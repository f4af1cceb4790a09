"""Throughput of synthetic trace generation (waitscope.synth).

A 2-D wavefront sweep (like Sweep3D / LU): on a 32 x 32 process grid each
rank receives from its north and west neighbours, computes, and sends to
its south and east neighbours, for a number of sweeps; an allreduce closes
every 10 sweeps.  Prints the time to state the program in Python, to
execute it in C (events/s) and to write it as OTF2.  No assertions.

    python bench/bench_synth.py [--sweeps N] [--side S] [--write DIR]
"""
import argparse
import os
import shutil
import tempfile
import time

from waitscope import synth


def wavefront(side: int, sweeps: int) -> synth.Program:
    prog = synth.Program(side * side)
    prog.cart((side, side))
    for rank in range(side * side):
        r = prog.rank(rank)
        row, col = divmod(rank, side)
        for s in range(sweeps):
            if row > 0:
                r.recv(rank - side, tag=0)
            if col > 0:
                r.recv(rank - 1, tag=1)
            r.compute("sweep", 1e-4 * (1 + (rank + s) % 3))
            if row < side - 1:
                r.send(rank + side, tag=0, size=4096)
            if col < side - 1:
                r.send(rank + 1, tag=1, size=4096)
            if s % 10 == 9:
                r.allreduce(size=8)
    return prog


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=int, default=32, help="grid side (ranks = side^2)")
    ap.add_argument("--sweeps", type=int, default=200)
    ap.add_argument("--write", metavar="DIR", help="also write the OTF2 archive into DIR (default: a temp dir)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    prog = wavefront(args.side, args.sweeps)
    t1 = time.perf_counter()
    trace = prog.run(latency=2e-6, bandwidth=5e9, mpi_overhead=1e-7)
    t2 = time.perf_counter()
    n = trace.n_events
    print(f"program: {args.side * args.side} ranks, {args.sweeps} sweeps, {n:,} events")
    print(f"  state the program (Python): {t1 - t0:7.2f} s")
    print(f"  execute (C):                {t2 - t1:7.2f} s  -> {n / (t2 - t1) / 1e6:7.2f} M events/s")
    print(f"  total:                      {t2 - t0:7.2f} s  -> {n / (t2 - t0) / 1e6:7.2f} M events/s")

    target = args.write or tempfile.mkdtemp(prefix="ws-bench-synth-")
    try:
        t3 = time.perf_counter()
        trace.write(os.path.join(target, "traces.otf2"))
        t4 = time.perf_counter()
        print(f"  write OTF2:                 {t4 - t3:7.2f} s  -> {n / (t4 - t3) / 1e6:7.2f} M events/s")
    finally:
        if not args.write:
            shutil.rmtree(target, ignore_errors=True)


if __name__ == "__main__":
    main()
