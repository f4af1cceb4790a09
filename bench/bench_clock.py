"""Timestamp correction (controlled logical clock) next to the wait-state analysis.

Builds a synthetic ring program in memory (--ranks ranks, --iters
iterations of compute, send to the right, receive from the left, an
allreduce every 10 iterations), gives every rank's clock a random offset
(up to --offset seconds) and drift (up to 1e-4), and times, interleaved
over --repeat runs (best and median wall time):

* the wait-state analysis ``trace.analyze()`` (the baseline);
* the correction ``Trace.correct_clocks("clc")`` (on a fresh copy of the
  drifted timestamps each run);
* ``trace.analyze(clock_correction="clc")`` (correction, analysis and
  restoring the timestamps).

Prints each time and its ratio to the baseline, the number of violations
before and after the correction and the correction's statistics.  No
assertions.

    python bench/bench_clock.py [--ranks N] [--iters N] [--offset S] [--repeat R]
"""
import argparse
import os
import random
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from waitscope import _core, synth  # noqa: E402


def build(ranks: int, iters: int, seed: int):
    rng = random.Random(seed)
    prog = synth.Program(ranks, name="ring")
    for it in range(iters):
        for r in range(ranks):
            b = prog.rank(r).compute("work", rng.random() * 1e-3)
            b.send((r + 1) % ranks, tag=it, size=8).recv((r - 1) % ranks, tag=it)
        if it % 10 == 9:
            for r in range(ranks):
                prog.rank(r).allreduce(8)
    return prog.run(latency=1e-6, bandwidth=1e9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--offset", type=float, default=1e-3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    trace = build(args.ranks, args.iters, args.seed)
    rng = random.Random(args.seed + 1)
    drifted = []
    for loc in range(trace.n_locations):
        t = trace.events(loc).time
        drifted.append(t + rng.uniform(-args.offset, args.offset) + rng.uniform(-1e-4, 1e-4) * t)
    _core.set_times(trace._core, drifted)
    print(f"{trace.n_locations} locations, {trace.n_events} events")
    print(f"violations before: {int(trace.analyze().clock_violations.sum())}")

    runs: dict[str, list[float]] = {"wait states (baseline)": [], "correct_clocks": [],
                                    "analyze(clock_correction)": []}
    stats = None
    for _ in range(args.repeat):
        _core.set_times(trace._core, drifted)
        t0 = time.perf_counter()
        trace.analyze(threads=1)
        runs["wait states (baseline)"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        trace.analyze(clock_correction="clc", threads=1)
        runs["analyze(clock_correction)"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        stats = trace.correct_clocks("clc")
        runs["correct_clocks"].append(time.perf_counter() - t0)
    print(f"violations after: {int(trace.analyze().clock_violations.sum())}; correction: {stats}")
    base = min(runs["wait states (baseline)"])
    print(f"{'':28s} {'best s':>9s} {'median s':>9s} {'x baseline':>10s}")
    for name, times in runs.items():
        print(f"{name:28s} {min(times):9.4f} {statistics.median(times):9.4f} {min(times) / base:10.2f}")


if __name__ == "__main__":
    main()
