"""threads="auto" (the default of open and analyze) against one thread.

For each trace, interleaved over --repeat rounds (best and median wall
time): ``waitscope.open(path, threads=...)`` and the full analysis
``analyze(delay_model="proportional", critical_path=True, threads=...)``
with ``threads=1`` and with the default ``"auto"``, the number of
threads "auto" picked for each, and the ratio auto / one thread (aim:
never above 1, beyond noise).  Traces: the 2-rank barrier trace of
bench_parallel.py (800,000 iterations), the 1024-rank stencil of
bench_load.py, the bundled ping-pong, and the Score-P traces of NPB BT
and CG under the shared data directory (../shared/data or
$WAITSCOPE_TEST_DATA) when present.  No assertions.

    python bench/bench_auto.py [--dir DIR] [--repeat R]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import waitscope  # noqa: E402
from waitscope import trace as trace_module  # noqa: E402
from waitscope.examples import PING_PONG  # noqa: E402
from bench_load import DEFAULT_DIR, ensure_trace, warm_page_cache  # noqa: E402
from bench_parallel import ensure_barrier_trace  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("WAITSCOPE_TEST_DATA", REPO.parent / "shared" / "data"))


def picked(trace: waitscope.Trace) -> tuple[int, int]:
    """The threads "auto" picks for loading and for the analysis of `trace`."""
    records = int(trace.n_events)
    load = trace_module._check_threads("auto", trace.n_locations, None, n_events=records)
    analysis = trace_module._check_threads("auto", trace.n_locations, None, trace_module.AUTO_LOCATIONS_PER_THREAD,
                                           n_events=records, bytes_per_event=trace_module.AUTO_ANALYSIS_BYTES)
    return load, analysis


def run(path: str, threads: int | str) -> tuple[float, float]:
    t0 = time.perf_counter()
    trace = waitscope.open(path, threads=threads, progress=False)
    t1 = time.perf_counter()
    trace.analyze(delay_model="proportional", critical_path=True, threads=threads, progress=False)
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the bench traces")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    traces = [("barrier 2 ranks", ensure_barrier_trace(args.dir, 800_000)),
              ("stencil 1024 ranks", ensure_trace(args.dir, 32, 200)),
              ("ping-pong (bundled)", str(PING_PONG))]
    for name in ("bt-scorep", "cg-scorep"):
        anchor = DATA / "real-programs" / name / "traces.otf2"
        if anchor.is_file():
            traces.append((f"NPB {name}", str(anchor)))
    print(f"{'trace':<22} {'events':>11} {'auto: load/analysis threads':>28} {'open 1 / auto s':>18} "
          f"{'analysis 1 / auto s':>22} {'auto / 1 (total)':>17}")
    for label, path in traces:
        warm_page_cache(path)
        probe = waitscope.open(path, threads=1, progress=False)
        load_t, an_t = picked(probe)
        n = probe.n_events
        del probe
        times: dict[str, list[tuple[float, float]]] = {"1": [], "auto": []}
        run(path, 1)  # untimed: page cache and heap warm
        for _ in range(args.repeat):
            for key, threads in (("1", 1), ("auto", "auto")):
                times[key].append(run(path, threads))
        best = {k: (min(t[0] for t in v), min(t[1] for t in v)) for k, v in times.items()}
        med = {k: statistics.median(a + b for a, b in v) for k, v in times.items()}
        ratio = (best["auto"][0] + best["auto"][1]) / (best["1"][0] + best["1"][1])
        print(f"{label:<22} {n:>11,} {f'{load_t} / {an_t}':>28} "
              f"{best['1'][0]:>8.3f} / {best['auto'][0]:<8.3f} {best['1'][1]:>10.3f} / {best['auto'][1]:<9.3f} "
              f"{ratio:>8.2f} (median {med['auto'] / med['1']:.2f})")
    print("best of", args.repeat, "rounds, interleaved; aim: auto never slower than one thread")


if __name__ == "__main__":
    main()
