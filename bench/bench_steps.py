"""Where the full analysis spends its time: its steps, one thread against two.

For the 2-rank, 9.6 M-event barrier trace of bench_parallel.py and the
1024-rank, 10.3 M-event stencil of bench_load.py (both generated once and
cached under --dir), this opens the trace and runs the full analysis
(``delay_model="proportional", critical_path=True``) with one thread and
with --threads threads, interleaved over --repeat rounds in one process,
each round on a freshly opened trace (the first analysis, as
bench_decode.py measures it), and prints ``AnalysisResult.timings`` side by
side: per step the least seconds over the rounds, and the whole analysis.
With threads, a step's seconds are those of thread 0; the threads end each
replay together, so the time thread 0 waits there for the other counts to
that replay.

    python bench/bench_steps.py [--dir DIR] [--repeat R] [--threads N] [--only barrier|stencil]
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import waitscope  # noqa: E402
from bench_load import DEFAULT_DIR, warm_page_cache  # noqa: E402
from bench_parallel import ANALYSIS as FULL, barrier_and_stencil  # noqa: E402


def measure(anchor: str, repeat: int, threads: int) -> dict[int, dict[str, float]]:
    warm_page_cache(anchor)
    best: dict[int, dict[str, float]] = {1: {}, threads: {}}
    for _ in range(repeat):
        for n in (1, threads):
            trace = waitscope.open(anchor, progress=False, threads=n)
            start = time.perf_counter()
            result = trace.analyze(progress=False, threads=n, **FULL)
            wall = time.perf_counter() - start
            steps = dict(result.timings)
            steps["outside the steps"] = wall - sum(result.timings.values())
            steps["the whole analysis"] = wall
            for step, seconds in steps.items():
                best[n][step] = min(best[n].get(step, float("inf")), seconds)
            del trace, result
    return best


def report(name: str, best: dict[int, dict[str, float]], threads: int) -> None:
    print(f"\n{name}: seconds per step (least of the rounds)")
    print(f"  {'step':22s} {'1 thread':>9s} {f'{threads} threads':>10s} {'speed-up':>9s}")
    for step, one in best[1].items():
        many = best[threads].get(step, float("nan"))
        ratio = one / many if many > 0 else float("nan")
        print(f"  {step:22s} {one:9.3f} {many:10.3f} {ratio:8.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated traces")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (the least is shown)")
    ap.add_argument("--threads", type=int, default=2, help="threads of the threaded analysis")
    ap.add_argument("--only", choices=("barrier", "stencil"), help="one archive only")
    args = ap.parse_args()
    for name, anchor in barrier_and_stencil(args.dir, args.only):
        report(name, measure(anchor, args.repeat, args.threads), args.threads)


if __name__ == "__main__":
    main()
