"""This build's analysis time next to another build's, interleaved in one run.

For the cached 2-rank barrier trace of bench_parallel.py (800,000
iterations, 9.6 M events) and the 1024-rank stencil of bench_load.py
(10.3 M events), and for each configuration -- the full analysis
(``delay_model="proportional", critical_path=True``) and the delay analysis
alone, on one thread and on --threads threads -- fresh processes of this
build and of the build found in --compare (a directory holding a
``waitscope`` package, e.g. ``git archive <rev> | tar -x -C /tmp/old &&
(cd /tmp/old && python setup.py build_ext --inplace)`` then ``--compare
/tmp/old/pkg``) take turns, --repeat rounds, each timing --runs analyses
of a trace opened once.  The table shows each one's best time and the
ratio.  The archive's files are read once first, so no disk I/O is timed.
No assertions.

    python bench/bench_compare.py --compare PKGDIR [--repeat R] [--runs N] [--threads T] [--only barrier|stencil]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_load import DEFAULT_DIR, warm_page_cache  # noqa: E402
from bench_parallel import barrier_and_stencil  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
THIS_BUILD = os.path.join(os.path.dirname(HERE), "pkg")

CHILD = """
import json, os, sys, time
import waitscope
trace = waitscope.open(sys.argv[1], threads=1)
options = json.loads(sys.argv[2])
best = float("inf")
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    trace.analyze(progress=False, **options, threads=1)
    best = min(best, time.perf_counter() - t0)
print(best)
"""


def best_time(pkg: str, anchor: str, options: dict, runs: int) -> float:
    env = dict(os.environ, PYTHONPATH=pkg, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, anchor, json.dumps(options), str(runs)], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", required=True, metavar="PKGDIR", help="directory holding the other build's package")
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated traces")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (the best is shown)")
    ap.add_argument("--runs", type=int, default=2, help="analyses per process")
    ap.add_argument("--threads", type=int, default=2, help="threads of the threaded configurations")
    ap.add_argument("--only", choices=("barrier", "stencil"), help="one trace only")
    args = ap.parse_args()
    traces = barrier_and_stencil(args.dir, args.only)
    configs = [
        ("delay + critical path", {"delay_model": "proportional", "critical_path": True}),
        ("delay only", {"delay_model": "proportional"}),
    ]
    print(f"this build: {THIS_BUILD}\ncompared:   {os.path.abspath(args.compare)}\n")
    print(f"{'trace':22s} {'analysis':24s} {'threads':>7s} {'compared s':>11s} {'this s':>8s} {'ratio':>6s}")
    for name, anchor in traces:
        warm_page_cache(anchor)
        for label, options in configs:
            for threads in (1, args.threads):
                opts = dict(options, threads=threads)
                best = {"this": float("inf"), "compared": float("inf")}
                for _ in range(args.repeat):
                    best["compared"] = min(best["compared"], best_time(args.compare, anchor, opts, args.runs))
                    best["this"] = min(best["this"], best_time(THIS_BUILD, anchor, opts, args.runs))
                print(f"{name:22s} {label:24s} {threads:7d} {best['compared']:11.3f} {best['this']:8.3f} "
                      f"{best['compared'] / best['this']:5.2f}x", flush=True)
    print("\n(ratio: compared / this build; above 1: this build is faster)")


if __name__ == "__main__":
    main()
