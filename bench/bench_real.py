"""The traces of real programs: the full analysis next to decoding them.

The NAS Parallel Benchmarks' traces of ../shared/data/real-programs/ (Score-P
7.1 traces of BT, CG, SP; waitscope's own traces of LU and CG) have another
shape than the generated benchmarks: hundreds of call paths, many small
messages, requests completed in bulk.  For each one this measures,
interleaved over --repeat rounds in one process (best wall time of each):

* the baseline: OTF2's global event reader over every location with
  callbacks that do nothing (``_core.bare_read(anchor, True)``);
* ``waitscope.open`` (definitions and events into the store);
* the wait states alone (``analyze()``);
* the full analysis (``analyze(delay_model="proportional",
  critical_path=True)``) on one thread and on --threads threads;
* the same with ``reproduce_scalasca=True`` (Scalasca 2.6's defects
  reproduced, for comparisons);

and prints events per second and (open + full analysis) / decode.  The
threaded result is checked to equal the one-thread cube bit for bit.  The
files are read once first, so no disk I/O is timed.  No assertions.

    python bench/bench_real.py [--data DIR] [--repeat R] [--threads N]
"""
import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import waitscope  # noqa: E402
from waitscope import _core  # noqa: E402
from bench_load import warm_page_cache  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "..", "shared", "data", "real-programs")
FULL = dict(delay_model="proportional", critical_path=True)


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def measure(anchor: str, repeat: int, threads: int) -> dict[str, float]:
    warm_page_cache(anchor)
    _core.bare_read(anchor, True)  # untimed warm-up
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, float("inf")), seconds)

    mismatch = False
    for _ in range(repeat):
        keep("decode", timed(lambda: _core.bare_read(anchor, True))[0])
        t, trace = timed(lambda: waitscope.open(anchor, progress=False, threads=1))
        keep("open", t)
        keep("wait states", timed(lambda: trace.analyze(progress=False, threads=1))[0])
        t, one = timed(lambda: trace.analyze(progress=False, **FULL, threads=1))
        keep("full analysis", t)
        t, many = timed(lambda: trace.analyze(progress=False, threads=threads, **FULL))
        keep(f"full analysis, {threads} threads", t)
        keep("full, reproduce_scalasca", timed(lambda: trace.analyze(progress=False, reproduce_scalasca=True,
                                                                       **FULL, threads=1))[0])
        mismatch |= one.cube.tobytes() != many.cube.tobytes()
        best["events"] = trace.n_events
        best["locations"] = trace.n_locations
        best["callpaths"] = len(trace.callpath_names)
        del trace, one, many
    if mismatch:
        print(f"  !! {threads} threads gave another cube than 1 thread on {anchor}")
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="the real-programs directory")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    names = sorted(d for d in os.listdir(args.data) if os.path.exists(os.path.join(args.data, d, "traces.otf2")))
    if not names:
        sys.exit(f"no traces under {args.data}")
    print(f"full analysis = analyze(delay_model='proportional', critical_path=True); best of {args.repeat}")
    header = (f"{'trace':<14} {'events':>10} {'locs':>5} {'cps':>5} {'decode':>9} {'open':>9} {'waits':>9} "
              f"{'full':>9} {'full/' + str(args.threads) + 't':>9} {'compat':>9} {'Mev/s':>7} {'(open+full)/decode':>19}")
    print(header)
    for name in names:
        b = measure(os.path.join(args.data, name, "traces.otf2"), args.repeat, args.threads)
        full, decode = b["full analysis"], b["decode"]
        print(f"{name:<14} {int(b['events']):>10,} {int(b['locations']):>5} {int(b['callpaths']):>5} "
              f"{decode:>8.4f}s {b['open']:>8.4f}s {b['wait states']:>8.4f}s {full:>8.4f}s "
              f"{b[f'full analysis, {args.threads} threads']:>8.4f}s {b['full, reproduce_scalasca']:>8.4f}s "
              f"{b['events'] / full / 1e6:>7.1f} {(b['open'] + full) / decode:>18.2f}x")


if __name__ == "__main__":
    main()
