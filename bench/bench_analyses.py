"""Delay and critical-path analysis time next to the wait-state analysis, on one trace.

Uses the synthetic stencil trace of bench_load.py (1024 ranks, ~10.3
million events; generated once and cached under --dir).  For each
configuration, interleaved over --repeat runs (best and median wall
time), on one loaded trace:

* wait states only: ``trace.analyze()`` (the baseline of this comparison);
* wait states + records: ``trace.analyze(wait_records=True)``, one record
  per wait-state instance (``AnalysisResult.wait_states``);
* + delay costs, proportional model;
* + delay costs, wait-first model;
* + critical path;
* + delay (proportional) and critical path together;
* load (``waitscope.open``), for scale.

Prints each time and its ratio to the wait-state analysis; also checks
the conservation law (delay == handled waiting), the path length
(== wall-clock time) and the sum of the wait-state records (== the
wait-state metrics) on the results, so the figures are of runs that
computed the right thing, and the number and memory of the wait-state
records.  No assertions.

    python bench/bench_analyses.py [--dir DIR] [--side S] [--iters N] [--repeat R]
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
    ("wait states + records", {"wait_records": True}),
    ("+ delay (proportional)", {"delay_model": "proportional"}),
    ("+ delay (wait-first)", {"delay_model": "wait-first"}),
    ("+ critical path", {"critical_path": True}),
    ("+ delay + critical path", {"delay_model": "proportional", "critical_path": True}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated trace")
    ap.add_argument("--side", type=int, default=32, help="grid side (ranks = side^2)")
    ap.add_argument("--iters", type=int, default=200, help="iterations of the stencil")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each configuration")
    args = ap.parse_args()

    anchor = ensure_trace(args.dir, args.side, args.iters)
    warm_page_cache(anchor)
    loads = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        trace = waitscope.open(anchor, threads=1)
        loads.append(time.perf_counter() - t0)
    n = trace.n_events
    print(f"trace: {anchor}\n  {trace.n_locations} locations, {n:,} events")

    times = {name: [] for name, _ in CONFIGS}
    checks = {}
    for _ in range(args.repeat):
        for name, opts in CONFIGS:
            t0 = time.perf_counter()
            r = trace.analyze(**opts, threads=1)
            times[name].append(time.perf_counter() - t0)
            notes = []
            if "delay_model" in opts:
                handled = r.handled_waiting()
                notes.append(f"delay {r.total('delay'):.6g} s = handled waiting {handled:.6g} s "
                             f"(rel. diff {abs(r.total('delay') - handled) / max(handled, 1e-300):.1e})")
            if opts.get("wait_records"):
                raw = r._raw["wait_records"]
                n_rec = len(raw["location"])
                columns = sum(v.nbytes for v in raw.values() if hasattr(v, "nbytes"))
                metrics = sorted(set(raw["metrics"]))
                in_cube = sum(r.total(m) for m in metrics)
                notes.append(f"{n_rec:,} wait-state records ({n_rec * 48 / 1e6:.1f} MB in the core at 48 B each, "
                             f"{columns / 1e6:.1f} MB as columns, {n_rec * r.wait_states.itemsize / 1e6:.1f} MB "
                             f"as wait_states); sum {float(raw['wait'].sum()):.6g} s = metrics {in_cube:.6g} s")
            if opts.get("critical_path"):
                cp = r.critical_path
                notes.append(f"path length {cp.length:.6f} s = wall clock {cp.end - cp.start:.6f} s")
            checks[name] = "; ".join(notes)
            del r

    base = min(times[CONFIGS[0][0]])
    print(f"\n{args.repeat} interleaved runs each              wall s          ratio to       M events/s")
    print(f"  {'':32}  best  median      wait states    (best)")
    print(f"  {'load (waitscope.open)':<32} {min(loads):6.3f} {statistics.median(loads):7.3f}   "
          f"{min(loads) / base:8.2f}       {n / min(loads) / 1e6:8.2f}")
    for name, _ in CONFIGS:
        t = times[name]
        print(f"  {name:<32} {min(t):6.3f} {statistics.median(t):7.3f}   {min(t) / base:8.2f}       "
              f"{n / min(t) / 1e6:8.2f}")
    print()
    for name, _ in CONFIGS:
        if checks[name]:
            print(f"  {name}: {checks[name]}")


if __name__ == "__main__":
    main()
