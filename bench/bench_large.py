"""Half a billion events in one process: open and analyse a 2,048-rank trace.

The trace is the stencil program of bench_load.py on a 32 x 64 grid of
2,048 ranks (wavefront sweep, halo exchange with isend/irecv/waitall, an
allreduce every 10 iterations, a bcast every 50): 50 iterations are
generated, and the archive is written with those iterations repeated
--copies times, one copy after the other (``Trace.write(..., repeat=K)``
of the private ``_core`` object), so that a trace of ~5 x 10^8 events
needs neither the memory nor the time of generating it whole.  It is
written once into --dir (``stencil-32x64-50x<K>``, ~4 GB).

Measured, each in a fresh process and one after the other:

* OTF2's own decode of the archive (``_core.bare_read``: every event file
  read with callbacks that do nothing), location by location, and through
  OTF2's global event reader (all locations merged in time order, as a
  tool reads a trace to replay it; the baseline of bench_decode.py);
* ``waitscope.open`` + ``analyze(delay_model="proportional",
  critical_path=True)`` with --threads 1 and 2: wall time of each, the
  store's bytes per event (VmRSS after opening minus before), the peak
  during the analysis above the store (VmHWM, reset after opening), and
  the whole process's peak resident set (VmHWM), against the aims of 20
  GiB and of 1.5 x OTF2's decode with two threads.

A full run at 98 copies takes about 25 minutes here, generation excluded
(which takes about 15 more, once).  No assertions.

    python bench/bench_large.py [--dir DIR] [--copies K] [--threads 1,2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_load import DEFAULT_DIR, cached_trace, stencil  # noqa: E402
from bench_memory import STATUS, run_child  # noqa: E402

ROWS, COLS, ITERS = 32, 64, 50
GIB = 1 << 30


def ensure_large_trace(directory: str, copies: int) -> str:
    """Anchor of the repeated 2,048-rank stencil trace, written once."""
    import waitscope

    def write(anchor: str) -> None:
        with tempfile.TemporaryDirectory(prefix=".base-", dir=directory) as tmp:
            base = os.path.join(tmp, "traces.otf2")
            stencil(ROWS, ITERS, COLS).write(base, latency=2e-6, bandwidth=5e9, mpi_overhead=1e-7)
            waitscope.open(base)._core.write(anchor, repeat=copies)

    return cached_trace(directory, f"stencil-{ROWS}x{COLS}-{ITERS}x{copies}", write)


CHILD = r"""
import json, os, sys, time
""" + STATUS + r"""
import numpy, waitscope
from waitscope import _core
what, anchor = sys.argv[1], sys.argv[2]
if what in ("decode", "global"):
    t0 = time.perf_counter()
    n = _core.bare_read(anchor, what == "global")
    print(json.dumps(dict(events=n, seconds=time.perf_counter() - t0, peak=status()["VmHWM"])))
    sys.exit(0)
threads = what if what == "auto" else int(what)
base = status()["VmRSS"]
t0 = time.perf_counter()
trace = waitscope.open(anchor, threads=threads)
t_open = time.perf_counter() - t0
st = status()
store, open_peak = st["VmRSS"], st["VmHWM"]
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
t0 = time.perf_counter()
r = trace.analyze(delay_model="proportional", critical_path=True, threads=threads)
t_an = time.perf_counter() - t0
s = status()
whole = max(open_peak, s["VmHWM"])
print(json.dumps(dict(events=trace.n_events, base=base, store=store, open_peak=open_peak, peak=s["VmHWM"],
                      whole=whole, t_open=t_open, t_analysis=t_an, waiting=r.total("mpi_latesender"),
                      delay=r.total("delay"), critical=r.total("critical_path"))))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the trace")
    ap.add_argument("--copies", type=int, default=98, help="copies of the 50 iterations (98: ~5 x 10^8 events)")
    ap.add_argument("--threads", default="1,2,auto", help="comma-separated thread counts of open and analyze")
    args = ap.parse_args()
    anchor = ensure_large_trace(args.dir, args.copies)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.dirname(anchor)) for f in fs)
    print(f"trace: {anchor}, {size / 1e9:.2f} GB on disk", flush=True)

    decode = run_child(CHILD, "decode", anchor)
    n = decode["events"]
    print(f"OTF2's decode: {n:,} events in {decode['seconds']:.1f} s ({size / n:.1f} bytes per event on disk)",
          flush=True)
    merged = run_child(CHILD, "global", anchor)
    print(f"OTF2's global reader: {merged['seconds']:.1f} s", flush=True)
    rows = []
    for threads in args.threads.split(","):
        m = run_child(CHILD, threads, anchor)
        rows.append((threads, m))
        print(f"  threads={threads} done: {json.dumps(m)}", flush=True)

    print(f"\n{'threads':>7} {'events':>13} {'open s':>7} {'analysis s':>10} {'x decode':>8} {'x global':>8} "
          f"{'store B/ev':>10} {'analysis B/ev':>13} {'open peak GiB':>13} {'peak GiB':>8}")
    for threads, m in rows:
        total = m["t_open"] + m["t_analysis"]
        print(f"{threads:>7} {m['events']:>13,} {m['t_open']:>7.1f} {m['t_analysis']:>10.1f} "
              f"{total / decode['seconds']:>8.2f} {total / merged['seconds']:>8.2f} "
              f"{(m['store'] - m['base']) / m['events']:>10.1f} "
              f"{(m['peak'] - m['store']) / m['events']:>13.1f} {m['open_peak'] / GIB:>13.2f} "
              f"{m['whole'] / GIB:>8.2f}")
    print(f"OTF2's decode {decode['seconds']:.1f} s per location, {merged['seconds']:.1f} s through its global "
          "reader; aims: peak resident set at most 20 GiB, open + analysis at most 1.5 x the decode with two "
          "threads")


if __name__ == "__main__":
    main()
