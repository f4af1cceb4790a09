"""Tracing MPI+OpenMP programs through OMPT: plain vs. traced, side by side.

Each program runs on 2 ranks x 2 OpenMP threads on LLVM's libomp
(preloaded in both configurations, so that only the tracing differs;
OMP_WAIT_POLICY=passive), in interleaved rounds (--repeat):

* ``hybrid`` / ``hybrid_f``: examples/hybrid.c and hybrid.f90 under MPICH
  and Open MPI, whose phases end at deadlines of a fixed schedule: the
  dilation is what tracing adds to the run as a whole (start, the events,
  the unification at MPI_Finalize);
* ``regions``: a fixed amount of work split into many short parallel
  regions, each with a critical section and an explicit barrier (MPICH):
  no deadline absorbs the tracer's cost there, so the extra time per
  OpenMP event it records is the cost of recording one.

The table gives the fastest and the mean wall time of each configuration,
the dilation of the fastest runs, the events of the trace and, for
``regions``, the extra time per event.  Target (printed, not asserted):
tracing adds at most 5 % to the examples' run time.

    python bench/bench_ompt.py [--repeat R] [--regions N]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import waitscope
from waitscope import pmpi

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

REGIONS = r"""
#include <mpi.h>
#include <omp.h>
#include <stdlib.h>
static volatile double sink;
static void work(long n) { double x = 0; for (long i = 0; i < n; i++) x += i * 1e-9; sink += x; }
int main(int argc, char **argv) {
    int provided;
    long regions = argc > 1 ? atol(argv[1]) : 2000;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    for (long r = 0; r < regions; r++) {
        #pragma omp parallel
        {
            work(20000);
            #pragma omp critical
            { work(200); }
            #pragma omp barrier
            work(20000);
        }
        if (r % 100 == 0)
            MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
"""


def launcher(mpi: str) -> list[str]:
    cmd = [f"mpiexec.{mpi}", "-n", "2"]
    return cmd[:1] + ["--oversubscribe"] + cmd[1:] if mpi == "openmpi" else cmd


def environment(mpi: str, cmd: list[str], trace: Path | None) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive")
    if mpi == "openmpi" and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if trace is None:
        env["LD_PRELOAD"] = pmpi.llvm_openmp() or ""
        return env
    return pmpi.environment(cmd, trace_dir=trace, base=env)


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    return time.perf_counter() - t0


def measure(name: str, mpi: str, cmd: list[str], repeat: int, tmp: Path) -> dict[str, object]:
    plain: list[float] = []
    traced: list[float] = []
    events = 0
    for i in range(repeat):
        plain.append(timed(cmd, environment(mpi, cmd, None)))
        out = tmp / f"{name}-{mpi}-{i}"
        traced.append(timed(cmd, environment(mpi, cmd, out)))
        trace = waitscope.open(str(out / "traces.otf2"))
        events = int(trace.n_events)
        shutil.rmtree(out)
    return {"name": name, "mpi": mpi, "plain": plain, "traced": traced, "events": events}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--regions", type=int, default=2000, help="parallel regions of the `regions` program")
    args = ap.parse_args()
    if not pmpi.llvm_openmp():
        print("LLVM's OpenMP runtime (libomp) is not installed: nothing to measure", file=sys.stderr)
        return 1
    mpis = [m for m in pmpi.available() if shutil.which(f"mpicc.{m}")]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for mpi in mpis:
            for program in ("hybrid", "hybrid_f"):
                subprocess.run(["make", "-s", "-C", str(EXAMPLES), f"{program}.{mpi}"], check=True)
                rows.append(measure(program, mpi, launcher(mpi) + [str(EXAMPLES / f"{program}.{mpi}")],
                                    args.repeat, tmp))
        src = tmp / "regions.c"
        src.write_text(REGIONS)
        exe = tmp / "regions"
        subprocess.run(["mpicc.mpich", "-O2", "-fopenmp", "-o", str(exe), str(src)], check=True)
        rows.append(measure("regions", "mpich", launcher("mpich") + [str(exe), str(args.regions)], args.repeat, tmp))
    print(f"2 ranks x 2 OpenMP threads, LLVM's libomp in both configurations; {args.repeat} interleaved rounds; "
          f"{os.cpu_count()} cores")
    print(f"{'program':<10} {'MPI':<8} {'plain min':>10} {'mean':>8} {'traced min':>11} {'mean':>8} "
          f"{'dilation':>9} {'events':>9} {'extra/event':>12}")
    for r in rows:
        p, t = min(r["plain"]), min(r["traced"])
        extra = (t - p) / r["events"] * 1e6 if r["events"] else float("nan")
        per_event = f"{extra:9.2f} us" if r["name"] == "regions" else ""
        print(f"{r['name']:<10} {r['mpi']:<8} {p:9.3f}s {statistics.mean(r['plain']):7.3f}s {t:10.3f}s "
              f"{statistics.mean(r['traced']):7.3f}s {100 * (t - p) / p:8.2f}% {r['events']:9,d} {per_event:>12}")
    print("target: tracing adds at most 5 % to the examples' run time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
