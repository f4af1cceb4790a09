"""Analysis wall time with 1 thread (the baseline) next to 2 (and more) threads.

``trace.analyze(threads=N)`` replays blocks of locations on N threads of
this process, connected by the threaded transport.  The trace is
bench_load.py's cached 2-D stencil (default 32 x 32 = 1024 ranks, 200
iterations, about 10.3 million events; generated once under --dir).  For
each configuration (wait states only; delay costs + critical path) the
thread counts run interleaved, --repeat times; the table shows the best
and median wall time, the speed-up of the best over 1 thread, and how
many cores other programs kept busy just before the runs ("busy", from
/proc/stat: on a shared machine a speed-up below the thread count is
often only that).  Every result is checked to equal the one-thread cube
bit for bit, so the figures are of runs that computed the same thing.
No assertions.

    python bench/bench_threads.py [--dir DIR] [--side S] [--iters N] [--threads 2,4] [--repeat R]
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import waitscope  # noqa: E402
from bench_load import DEFAULT_DIR, ensure_trace, warm_page_cache  # noqa: E402

CONFIGS = [
    ("wait states only", {}),
    ("+ delay + critical path", {"delay_model": "proportional", "critical_path": True}),
]


def busy_cores(seconds: float = 0.5) -> float:
    """Cores busy (not idle) over a short interval, from /proc/stat."""
    def sample() -> tuple:
        with open("/proc/stat") as f:
            values = [int(x) for x in f.readline().split()[1:]]
        return sum(values), values[3] + (values[4] if len(values) > 4 else 0)

    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return max(0.0, ((total1 - total0) - (idle1 - idle0)) / (os.sysconf("SC_CLK_TCK") * seconds))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated trace")
    ap.add_argument("--side", type=int, default=32, help="grid side (ranks = side^2)")
    ap.add_argument("--iters", type=int, default=200, help="iterations of the stencil")
    ap.add_argument("--threads", default="2", help="thread counts to compare with 1 (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each configuration")
    args = ap.parse_args()
    counts = [1] + [int(x) for x in args.threads.split(",") if int(x) > 1]

    anchor = ensure_trace(args.dir, args.side, args.iters)
    warm_page_cache(anchor)
    trace = waitscope.open(anchor, threads=1)
    n = trace.n_events
    print(f"trace: {anchor}\n  {trace.n_locations} locations, {n:,} events; {os.cpu_count()} cores")

    times = {(name, k): [] for name, _ in CONFIGS for k in counts}
    busy = []
    equal = {(name, k): True for name, _ in CONFIGS for k in counts}
    for _ in range(args.repeat):
        busy.append(busy_cores())
        for name, opts in CONFIGS:
            reference = None
            for k in counts:
                t0 = time.perf_counter()
                r = trace.analyze(progress=False, threads=k, **opts)
                times[(name, k)].append(time.perf_counter() - t0)
                cube = r.cube.tobytes()
                if reference is None:
                    reference = cube
                equal[(name, k)] &= cube == reference
                del r

    print(f"\n{args.repeat} interleaved runs; cores busy with other work before each round: "
          + ", ".join(f"{b:.1f}" for b in busy))
    header = "".join(f"   {k} thread{'s' if k > 1 else ' '} best/median" for k in counts)
    print(f"  {'':26}{header}   speed-up (best)")
    for name, _ in CONFIGS:
        cells = "".join(f"   {min(times[(name, k)]):8.3f} {statistics.median(times[(name, k)]):7.3f} s"
                        for k in counts)
        base = min(times[(name, 1)])
        ups = ", ".join(f"{k}: {base / min(times[(name, k)]):.2f}" for k in counts[1:])
        print(f"  {name:<26}{cells}   {ups}")
    bad = [f"{name} with {k} threads" for (name, k), ok in equal.items() if not ok]
    print("\n  cubes bitwise equal to 1 thread: " + ("yes" if not bad else "NO: " + ", ".join(bad)))


if __name__ == "__main__":
    main()
