"""Bytes per event of the trace store on every bench trace and every real trace.

For each trace, in this process: the events stored, the exact bytes the
store's event columns hold (``_core.event_memory()``: times, kinds,
references and the side tables of messages, requests, collectives and
thread records) per event, next to the bytes the same columns took in
the earlier layout (8-byte seconds per event, 64-bit message sizes and
request ids: ``(time 8 + kind 1 + ref 4) per event + 24 per message + 12
per request + 29 per collective + 25 per thread record``), and what the
trace holds per event (messages, requests, collectives), which decides
its bytes per event.  The resident memory of opening and of the analysis
(VmRSS/VmHWM) is measured by bench_memory.py and bench_large.py.

Traces: the cached 1024-rank stencil of bench_load.py, the 2-rank barrier
trace of bench_parallel.py, the allreduce program of bench_scale.py at
4,096 ranks (in memory), and every OTF2 archive under the shared data
directory (``../shared/data`` or $WAITSCOPE_TEST_DATA: Score-P traces of
the NAS Parallel Benchmarks and of hybrid MPI+OpenMP programs, the
Scalasca reference traces, the ping-pong traces).  Aim: at most 16 bytes
per event on average.  No assertions.

    python bench/bench_store.py [--dir DIR] [--data DIR]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import waitscope  # noqa: E402
from bench_load import DEFAULT_DIR, ensure_trace  # noqa: E402
from bench_parallel import ensure_barrier_trace  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("WAITSCOPE_TEST_DATA", REPO.parent / "shared" / "data"))


def composition(trace: waitscope.Trace) -> tuple[int, int, int, int]:
    """Messages, requests, collectives and thread records of the loaded trace."""
    core = trace._core
    m = r = c = h = 0
    for loc in trace.loaded_locations:
        e = core.events(loc)
        m += len(e["msg_event"])
        r += len(e["req_event"])
        c += len(e["coll_event"])
        h += len(e["thr_event"])
    return m, r, c, h


def row(label: str, trace: waitscope.Trace) -> tuple:
    n = trace.n_events
    m, r, c, h = composition(trace)
    before = 13 * n + 24 * m + 12 * r + 29 * c + 25 * h
    return label, n, trace._core.event_memory() / n, before / n, m / n, r / n, c / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the bench traces")
    ap.add_argument("--data", default=str(DATA), help="directory of the real traces")
    args = ap.parse_args()

    rows = []
    rows.append(row("stencil 1024 ranks", waitscope.open(ensure_trace(args.dir, 32, 200))))
    rows.append(row("barrier 2 ranks", waitscope.open(ensure_barrier_trace(args.dir, 800_000))))
    from bench_scale import allreduce_program

    trace = allreduce_program(4096, max(1, round(1_000_000 / (6 * 4096)))).run(latency=2e-6, bandwidth=5e9,
                                                                               mpi_overhead=1e-7)
    rows.append(row("allreduce 4096 ranks", trace))
    data = Path(args.data)
    for anchor in sorted(data.rglob("traces.otf2")):
        rows.append(row(str(anchor.parent.relative_to(data)), waitscope.open(anchor)))

    print(f"\n{'trace':<36} {'events':>11} {'store B/ev':>10} {'earlier B/ev':>12} {'msg/ev':>7} "
          f"{'req/ev':>7} {'coll/ev':>7}")
    total_n = total_now = total_before = 0.0
    for label, n, now, before, m, r, c in rows:
        print(f"{label:<36} {n:>11,} {now:>10.2f} {before:>12.2f} {m:>7.3f} {r:>7.3f} {c:>7.4f}")
        total_n += n
        total_now += now * n
        total_before += before * n
    print(f"{'all traces (weighted by events)':<36} {int(total_n):>11,} {total_now / total_n:>10.2f} "
          f"{total_before / total_n:>12.2f}")
    print(f"mean over traces: {sum(r[2] for r in rows) / len(rows):.2f} bytes per event "
          f"(earlier {sum(r[3] for r in rows) / len(rows):.2f}); aim: at most 16")


if __name__ == "__main__":
    main()
