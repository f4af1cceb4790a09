"""The full analysis next to decoding the trace: how many decodes it costs.

For two archives -- the 2-rank, 9.6 M-event barrier trace of
bench_parallel.py (800,000 iterations of imbalanced work + MPI_Barrier) and
the 1024-rank, 10.3 M-event stencil of bench_load.py, both generated once
and cached under --dir -- this measures, interleaved over --repeat rounds
in one process (best wall time of each):

* the baseline: OTF2's global event reader over every location with
  callbacks that do nothing (``_core.bare_read(anchor, True)``), and, for
  reference, the per-location reader (``_core.bare_read(anchor)``);
* ``waitscope.open`` (definitions and events into the store) on one
  thread and with ``threads=`` --threads;
* the full analysis ``analyze(delay_model="proportional",
  critical_path=True)`` on one thread and on --threads threads (of the
  trace loaded with as many threads).

and prints, per archive, (open + full analysis) / global decode for one
thread and for --threads threads (the aims: 3x and 2x).  Every result of
the threaded load + analysis is checked to equal the one-thread cube bit
for bit.
The archive's files are read once first, so no disk I/O is timed.  No
assertions.

    python bench/bench_decode.py [--dir DIR] [--repeat R] [--threads N] [--only barrier|stencil]
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import waitscope  # noqa: E402
from waitscope import _core  # noqa: E402
from bench_load import DEFAULT_DIR, warm_page_cache  # noqa: E402
from bench_parallel import ANALYSIS as FULL, barrier_and_stencil  # noqa: E402



def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def same_cube(a: waitscope.AnalysisResult, b: waitscope.AnalysisResult) -> bool:
    """Every metric of the two results, bit for bit."""
    return a.cube.tobytes() == b.cube.tobytes()


def measure(anchor: str, repeat: int, threads: int) -> dict[str, float]:
    warm_page_cache(anchor)
    _core.bare_read(anchor, True)  # untimed warm-up
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, float("inf")), seconds)

    mismatch = False
    for _ in range(repeat):
        keep("decode, global reader", timed(lambda: _core.bare_read(anchor, True))[0])
        keep("decode, per location", timed(lambda: _core.bare_read(anchor))[0])
        t, trace = timed(lambda: waitscope.open(anchor, progress=False, threads=1))
        keep("open, 1 thread", t)
        t, one = timed(lambda: trace.analyze(progress=False, **FULL, threads=1))
        keep("full analysis, 1 thread", t)
        best["events"] = trace.n_events
        del trace
        t, trace = timed(lambda: waitscope.open(anchor, progress=False, threads=threads))
        keep(f"open, {threads} threads", t)
        t, many = timed(lambda: trace.analyze(progress=False, threads=threads, **FULL))
        keep(f"full analysis, {threads} threads", t)
        mismatch |= not same_cube(one, many)
        del trace, one, many
    if mismatch:
        print(f"  !! {threads} threads (load and analysis) gave another cube than 1 thread on {anchor}")
    return best


def report(name: str, best: dict[str, float], threads: int) -> None:
    events = best.pop("events")
    base = best["decode, global reader"]
    print(f"\n{name}: {events:,.0f} events")
    print(f"  {'':34s} {'seconds':>8s} {'ns/event':>9s} {'x decode':>9s}")
    for key, seconds in best.items():
        print(f"  {key:34s} {seconds:8.3f} {1e9 * seconds / events:9.1f} {seconds / base:9.2f}")
    one = best["open, 1 thread"] + best["full analysis, 1 thread"]
    many = best[f"open, {threads} threads"] + best[f"full analysis, {threads} threads"]
    print(f"  open + full analysis, 1 thread:  {one:.3f} s = {one / base:.2f}x the global decode (aim 3x)")
    print(f"  open + full analysis, {threads} threads: {many:.3f} s = {many / base:.2f}x the global decode (aim 2x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated traces")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (the best is shown)")
    ap.add_argument("--threads", type=int, default=2, help="threads of the threaded analysis")
    ap.add_argument("--only", choices=("barrier", "stencil"), help="one archive only")
    args = ap.parse_args()
    for name, anchor in barrier_and_stencil(args.dir, args.only):
        report(name, measure(anchor, args.repeat, args.threads), args.threads)


if __name__ == "__main__":
    main()
