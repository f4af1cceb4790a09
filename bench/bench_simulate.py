"""What-if simulation throughput next to the wait-state analysis of the same trace.

Uses the synthetic stencil trace of bench_load.py (default 1024 ranks,
~10.3 million events; generated once and cached under --dir).  For each
configuration, interleaved over --repeat runs (best and median wall time):

* wait states only: ``trace.analyze()`` (the baseline);
* ``trace.simulate()`` (identity: recorded network, no hypothesis);
* ``trace.simulate(balance="sweep")``;
* ``trace.simulate(network="ideal")``.

Prints each time, the events per second and the ratio to the analysis.
Then the same for seed 001's load-imbalance benchmark (work() + barrier,
--bench-ranks ranks x 320 iterations, generated in memory), where every
step is a collective: ``analyze()`` next to ``simulate(balance="work")``.
Prints, as a check, the identity simulation's run length next to the
recorded one (equal: the figures are of runs that computed the right
thing) and the predicted run lengths.  No assertions.

    python bench/bench_simulate.py [--dir DIR] [--side S] [--iters N] [--repeat R]
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
    ("simulate() identity", {}),
    ("simulate(balance='sweep')", {"balance": "sweep"}),
    ("simulate(network='ideal')", {"network": "ideal"}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated trace")
    ap.add_argument("--side", type=int, default=32, help="grid side (ranks = side^2)")
    ap.add_argument("--iters", type=int, default=200, help="iterations of the stencil")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each configuration")
    ap.add_argument("--bench-ranks", type=int, default=256, help="ranks of the load-imbalance benchmark")
    args = ap.parse_args()

    anchor = ensure_trace(args.dir, args.side, args.iters)
    warm_page_cache(anchor)
    trace = waitscope.open(anchor, progress=False, threads=1)
    n = trace.n_events
    print(f"trace: {anchor}\n  {trace.n_locations} locations, {n:,} events, run length {trace.run_length:.6f} s")
    names = ["analyze() wait states (baseline)"] + [name for name, _ in CONFIGS]
    times = {name: [] for name in names}
    lengths = {}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        trace.analyze(progress=False, threads=1)
        times[names[0]].append(time.perf_counter() - t0)
        for name, opts in CONFIGS:
            t0 = time.perf_counter()
            sim = trace.simulate(progress=False, **opts)
            times[name].append(time.perf_counter() - t0)
            lengths[name] = sim.run_length
            del sim
    base = min(times[names[0]])
    print(f"\n{'':36s} {'best s':>9s} {'median s':>9s} {'Mevents/s':>10s} {'vs analysis':>12s}")
    for name in names:
        best, med = min(times[name]), statistics.median(times[name])
        print(f"{name:36s} {best:9.3f} {med:9.3f} {n / best / 1e6:10.2f} {best / base:11.2f}x")
    print("\nchecks:")
    print(f"  identity run length {lengths[CONFIGS[0][0]]:.6f} s vs recorded {trace.run_length:.6f} s "
          f"(rel. diff {abs(lengths[CONFIGS[0][0]] - trace.run_length) / trace.run_length:.1e})")
    print(f"  balanced 'sweep': {lengths[CONFIGS[1][0]]:.6f} s; ideal network: {lengths[CONFIGS[2][0]]:.6f} s")

    from waitscope import examples

    bench = examples.imbalance_benchmark("dynamic", ranks=args.bench_ranks).run(latency=2e-6, mpi_overhead=1e-6)
    n = bench.n_events
    print(f"\nseed 001 benchmark (dynamic): {bench.n_locations} ranks x 320 iterations, {n:,} events")
    t_an, t_sim = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        bench.analyze(progress=False, threads=1)
        t_an.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        sim = bench.simulate(balance="work", progress=False)
        t_sim.append(time.perf_counter() - t0)
    print(f"{'analyze() wait states (baseline)':36s} {min(t_an):9.3f} s {n / min(t_an) / 1e6:10.2f} Mevents/s")
    print(f"{'simulate(balance=work)':36s} {min(t_sim):9.3f} s {n / min(t_sim) / 1e6:10.2f} Mevents/s "
          f"{min(t_sim) / min(t_an):6.2f}x")
    print(f"  run length {bench.run_length:.6f} s -> balanced {sim.run_length:.6f} s")


if __name__ == "__main__":
    main()
