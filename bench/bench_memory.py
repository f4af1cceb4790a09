"""Memory of the full analysis: the store, the analysis' peak, what stays after it.

For each trace, in a fresh process: VmRSS before opening, after
``waitscope.open`` (the store), the peak during
``analyze(delay_model="proportional", critical_path=True)`` (VmHWM, reset
through /proc/self/clear_refs after opening), and VmRSS after the analysis
(the result kept) -- all as bytes per event.  Traces: the cached 1024-rank
stencil of bench_load.py (~10.3 M events) and the allreduce program of
bench_scale.py at 4,096 ranks (~1 M events, in memory: its store is
measured after the synthetic run), and the 2-rank barrier trace of
bench_parallel.py (800,000 iterations, 9.6 M events: 1.6 M collective
sites, the trace whose per-site state weighs most).  With ``--real`` the
real traces of the shared data directory too (``../shared/data`` or
$WAITSCOPE_TEST_DATA: the Score-P and waitscope traces of the NAS
Parallel Benchmarks and the hybrid MPI+OpenMP traces); they are small
(at most 1.35 M events), so that what the result keeps (the cube: metrics
x call paths x locations) is much of their bytes per event, and the
column "transient" (the peak less what is kept after) is what the
analysis's state weighs; traces of fewer than 100,000 events are listed
without bytes per event.

With ``--events N`` (e.g. ``--events 1e8``) only one trace is measured: the
same 1024-rank stencil program (messages, requests, collectives) with as
many iterations as give at least N events, written once as OTF2 into --dir
(``stencil-32x32-<iters>``, ~8 bytes per event on disk; generating 10^8
events took 2.5 minutes here) and opened in a fresh process.  Besides the
per-event figures it prints the peak resident set size of the whole process
(store, analysis, interpreter: VmHWM) against the issue's aim of 8 GiB for
a full analysis (delay + critical path) of 10^8 events in one process.

With ``--compare DIR`` the same measurements run with the waitscope
package found in DIR (e.g. a build of an earlier commit:
``git archive <rev> | tar -x -C /tmp/old && (cd /tmp/old && python setup.py
build_ext --inplace)`` then ``--compare /tmp/old/pkg``) and the table
shows both side by side.  The aims (issue: analysis at most 16 bytes per
event above the store, returned after the analysis) are printed, not
asserted.  No assertions.

    python bench/bench_memory.py [--dir DIR] [--compare PKGDIR] [--only stencil|allreduce|barrier] [--events N]
                                 [--real]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_load import DEFAULT_DIR, ensure_trace, warm_page_cache  # noqa: E402
from bench_parallel import ensure_barrier_trace  # noqa: E402

SIDE = 32
# events per rank and iteration of the stencil (50.11 at 1947 iterations, 50.15 at 200):
# rounded down so that --events N gives at least N events
EVENTS_PER_RANK_ITERATION = 50.1
GIB = 1 << 30
#: traces with fewer events are listed without bytes per event: a few
#: kilobytes of the interpreter's own would be as many bytes per event
MIN_EVENTS = 100_000
DATA = Path(os.environ.get("WAITSCOPE_TEST_DATA", Path(__file__).resolve().parent.parent.parent / "shared" / "data"))

#: the child processes' resident set (VmRSS) and its peak (VmHWM), in bytes
STATUS = r"""
def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out
"""

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, {bench!r})

{status}
import numpy, waitscope
base = status()["VmRSS"]
kind, arg = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if kind in ("stencil", "barrier", "real"):
    trace = waitscope.open(arg, threads=1)
else:
    from bench_scale import allreduce_program
    n = int(arg)
    trace = allreduce_program(n, max(1, round(1_000_000 / (6 * n)))).run(latency=2e-6, bandwidth=5e9,
                                                                         mpi_overhead=1e-7)
t_open = time.perf_counter() - t0
import gc; gc.collect()
st = status()
store, store_peak = st["VmRSS"], st["VmHWM"]
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
t0 = time.perf_counter()
r = trace.analyze(delay_model="proportional", critical_path=True, threads=1)
t_an = time.perf_counter() - t0
s = status()
print(json.dumps(dict(events=trace.n_events, base=base, store=store, peak=s["VmHWM"], after=s["VmRSS"],
                      store_peak=store_peak, module=waitscope.__file__, t_open=t_open, t_analysis=t_an)))
"""


def run_child(code: str, *args: str, pkg: str | None = None) -> dict:
    """Runs `code` in a fresh interpreter (with the waitscope package of
    directory `pkg` first on the path) and returns the JSON object its
    last line of output holds."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if pkg:
        env["PYTHONPATH"] = pkg + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(pkg: str | None, kind: str, arg: str) -> dict:
    code = CHILD.format(bench=os.path.dirname(os.path.abspath(__file__)), status=STATUS)
    return run_child(code, kind, arg, pkg=pkg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the stencil trace")
    ap.add_argument("--compare", metavar="PKGDIR", help="directory holding another build's waitscope package")
    ap.add_argument("--only", choices=["stencil", "allreduce", "barrier"])
    ap.add_argument("--real", action="store_true", help="also the real traces of the shared data directory")
    ap.add_argument("--events", type=float, metavar="N",
                    help="only the stencil program with at least N events (e.g. 1e8), written once into --dir")
    args = ap.parse_args()

    cases = []
    if args.events:
        iters = max(1, math.ceil(args.events / (SIDE * SIDE * EVENTS_PER_RANK_ITERATION)))
        anchor = ensure_trace(args.dir, SIDE, iters)
        warm_page_cache(anchor)
        cases.append((f"stencil {iters} iterations", "stencil", anchor))
    elif args.only in (None, "stencil"):
        anchor = ensure_trace(args.dir, 32, 200)
        warm_page_cache(anchor)
        cases.append(("stencil 1024 ranks", "stencil", anchor))
    if not args.events and args.only in (None, "allreduce"):
        cases.append(("allreduce 4096 ranks", "allreduce", "4096"))
    if not args.events and args.only in (None, "barrier"):
        anchor = ensure_barrier_trace(args.dir, 800_000)
        warm_page_cache(anchor)
        cases.append(("barrier 2 ranks", "barrier", anchor))
    if args.real and not args.events:
        for anchor in sorted(DATA.glob("real-programs/*/traces.otf2")) + sorted(DATA.glob("hybrid/*/traces.otf2")):
            cases.append((anchor.parent.name, "real", str(anchor)))
    builds = [("this build", None)] + ([("compared", args.compare)] if args.compare else [])

    rows = []
    whole = []
    for label, kind, arg in cases:
        for build, pkg in builds:
            m = measure(pkg, kind, arg)
            n = m["events"]
            rows.append((label, build, n, (m["store"] - m["base"]) / n, (m["peak"] - m["store"]) / n,
                         (m["after"] - m["store"]) / n, (m["peak"] - m["after"]) / n, m["t_analysis"]))
            whole.append((label, build, n, m["store_peak"], m["peak"], m["t_open"], m["t_analysis"]))
            print(f"  {label}, {build}: {m['module']}", flush=True)

    print(f"\n{'trace':<22} {'build':<11} {'events':>11} {'store B/ev':>10} {'analysis peak B/ev':>19} "
          f"{'kept after B/ev':>16} {'transient B/ev':>15} {'analysis s':>10}")
    for label, build, n, store, peak, after, transient, t in rows:
        if n < MIN_EVENTS:  # the interpreter's own changes are as large as the trace
            print(f"{label:<22} {build:<11} {n:>11,} {'-':>10} {'-':>19} {'-':>16} {'-':>15} {t:>10.2f}")
            continue
        print(f"{label:<22} {build:<11} {n:>11,} {store:>10.1f} {peak:>19.1f} {after:>16.1f} {transient:>15.1f} "
              f"{t:>10.2f}")
    print("aim: analysis peak <= 16 bytes per event above the store, returned after the analysis "
          "('kept after' includes the result; 'transient' is the peak less it)")
    if args.events:
        print(f"\n{'trace':<22} {'build':<11} {'events':>13} {'open peak GiB':>13} {'peak RSS GiB':>12} "
              f"{'open s':>7} {'analysis s':>10}")
        for label, build, n, open_peak, peak, t_open, t_an in whole:
            print(f"{label:<22} {build:<11} {n:>13,} {open_peak / GIB:>13.2f} {peak / GIB:>12.2f} {t_open:>7.1f} "
                  f"{t_an:>10.1f}")
        print("aim: a 10^8-event trace analysed in full (delay + critical path) in one process within 8 GiB "
              "(peak RSS: the whole process)")


if __name__ == "__main__":
    main()
