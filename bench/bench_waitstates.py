"""Wait-state analysis (replay) time against load time, on the same trace.

Uses the synthetic stencil trace of bench_load.py (1024 ranks, ~10.3
million events; generated once and cached under --dir, default
/tmp/waitscope-bench).  In one run, interleaved, over --repeat runs (best
and median):

* load: ``waitscope.open(path)`` (definitions and events into the store);
* analysis: ``trace.analyze()`` (the wait-state replay, default options)
  on a loaded trace.

Prints the replay throughput (events/s) and the ratio analysis time /
load time.  Aim: < 1 (analysing a trace should cost less than loading it).
Wall-clock and process CPU time (all threads, user + system) are both
reported; the archive is read once before timing so that no disk I/O is
timed.  No assertions.

    python bench/bench_waitstates.py [--dir DIR] [--side S] [--iters N] [--repeat R]
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


def timed(fn):
    """(wall seconds, process CPU seconds, result) of fn()."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated trace")
    ap.add_argument("--side", type=int, default=32, help="grid side (ranks = side^2)")
    ap.add_argument("--iters", type=int, default=200, help="iterations of the stencil")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of load and of analysis")
    args = ap.parse_args()

    anchor = ensure_trace(args.dir, args.side, args.iters)
    nbytes = warm_page_cache(anchor)
    print(f"trace: {anchor}")
    print(f"  {args.side * args.side} ranks, {args.iters} iterations, {nbytes / 2**20:.1f} MiB of OTF2 files "
          f"(read once before timing: page cache warm, no disk I/O is timed)")

    trace = waitscope.open(anchor, threads=1)  # untimed warm-up
    n = trace.n_events
    result = trace.analyze(threads=1)
    print(f"  {n:,} events; analysis: {result!r}")
    del trace, result

    loads, analyses = [], []
    for _ in range(args.repeat):
        w, c, trace = timed(lambda: waitscope.open(anchor, threads=1))
        loads.append((w, c))
        w, c, result = timed(trace.analyze)
        analyses.append((w, c))
        del trace, result

    def stats(times: list) -> list:
        wall = [w for w, _ in times]
        cpu = [c for _, c in times]
        return [min(wall), statistics.median(wall), min(cpu), statistics.median(cpu)]

    lo, an = stats(loads), stats(analyses)
    print(f"\n{args.repeat} interleaved runs each                 wall s            cpu s        M events/s (wall)")
    print(f"  {'':34}   best  median     best  median       best  median")
    for name, v in (("load (waitscope.open)", lo), ("analysis (trace.analyze)", an)):
        print(f"  {name:<34} {v[0]:6.3f} {v[1]:7.3f}   {v[2]:6.3f} {v[3]:7.3f}   "
              f"{n / v[0] / 1e6:8.2f} {n / v[1] / 1e6:7.2f}")
    r = [an[k] / lo[k] for k in range(4)]
    print(f"  {'ratio analysis / load (time)':<34} {r[0]:6.2f} {r[1]:7.2f}   {r[2]:6.2f} {r[3]:7.2f}   (aim < 1)")
    print(f"\nreplay throughput: {n / an[0] / 1e6:.2f} M events/s (best), {n / an[1] / 1e6:.2f} M events/s (median)")


if __name__ == "__main__":
    main()
