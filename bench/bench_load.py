"""Loading throughput and memory of the trace store (waitscope.open).

The trace is a synthetic 2-D stencil program on a side x side process grid
(default 32 x 32 = 1024 ranks, 200 iterations, about 10.3 million events):
every iteration does a wavefront sweep (blocking recv from north and west,
compute, send to south and east), a periodic halo exchange with four
irecv + four isend and a waitall around an interior compute, an allreduce
every 10 iterations and a bcast every 50, so that messages, requests and
collectives are all present.  It is generated once and cached under --dir
(default /tmp/waitscope-bench).

Measured, side by side in one run and interleaved, over --repeat runs
(best and median):

* the bare OTF2 read, ``waitscope._core.bare_read``: global definitions,
  local definitions and event decoding with callbacks that do nothing;
* our full load, ``waitscope.open``: definitions and events into the store;
* events per second of both, and their ratio.  Aim: ours >= 0.8 x bare;
* the threaded load, ``waitscope.open(threads=--threads)``, and its ratio
  to the bare read (wall time only: the CPU time of the calling thread
  says nothing about its workers).

Robustness: before timing, every file of the archive is read once so that
both contenders find it in the OS page cache (no disk I/O is timed), and
each contender runs once untimed.  Wall-clock and CPU time of the calling
thread (user + system, insensitive to other processes taking the cores)
are both reported.  The store needs ~230 MB of fresh memory and the kernel's
cost of providing zeroed pages is large (a few microseconds per 4 KiB page
in VMs), so the runs come in two heap states (glibc malloc):

* "fresh pages": malloc_trim(0) before every run hands all free memory back
  to the kernel, so the load page-faults its whole store in, as the first
  load of a process does;
* "reused pages": the pages of the previous run's freed store are recycled
  by malloc (trimming is switched off with mallopt), as in a process that
  loads traces repeatedly.

Memory, in a fresh subprocess: resident set size (VmRSS) before and after
``waitscope.open`` and the peak (VmHWM), per event, next to the exact
bytes of the event columns (``event_memory()``).  Aim: <= 24 bytes/event.

Prints a table; no assertions.

    python bench/bench_load.py [--dir DIR] [--side S] [--iters N] [--repeat R]
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

# numpy's OpenBLAS threads would compete for the machine's cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import waitscope  # noqa: E402
from waitscope import _core, synth  # noqa: E402

DEFAULT_DIR = "/tmp/waitscope-bench"


def stencil(side: int, iters: int, cols: int | None = None) -> synth.Program:
    """2-D wavefront sweep + periodic halo exchange (isend/irecv/waitall) + collectives.

    On a side x side grid of ranks, or side x cols."""
    rows = side
    side = cols or side
    n = rows * side
    prog = synth.Program(n)
    prog.cart((rows, side), periods=(True, True))
    for rank in range(n):
        r = prog.rank(rank)
        row, col = divmod(rank, side)
        north = ((row - 1) % rows) * side + col
        south = ((row + 1) % rows) * side + col
        west = row * side + (col - 1) % side
        east = row * side + (col + 1) % side
        for s in range(iters):
            # wavefront sweep (not periodic)
            if row > 0:
                r.recv(rank - side, tag=0)
            if col > 0:
                r.recv(rank - 1, tag=1)
            r.compute("sweep", 1e-4 * (1 + (rank + s) % 3))
            if row < rows - 1:
                r.send(rank + side, tag=0, size=4096)
            if col < side - 1:
                r.send(rank + 1, tag=1, size=4096)
            # halo exchange (periodic)
            reqs = [r.irecv(north, tag=2), r.irecv(south, tag=3), r.irecv(west, tag=4), r.irecv(east, tag=5)]
            reqs += [
                r.isend(south, tag=2, size=32768),
                r.isend(north, tag=3, size=32768),
                r.isend(east, tag=4, size=32768),
                r.isend(west, tag=5, size=32768),
            ]
            r.compute("interior", 5e-5 * (1 + (rank * 7 + s) % 5))
            r.waitall(reqs)
            if s % 10 == 9:
                r.allreduce(size=8)
            if s % 50 == 49:
                r.bcast(root=0, size=1024)
    return prog


def cached_trace(directory: str, name: str, write: Callable[[str], object]) -> str:
    """The anchor of ``directory/name/traces.otf2``, which ``write(anchor)``
    generates once: into a temporary directory beside it, renamed into
    place when complete (a run that dies leaves no half-written trace)."""
    target = os.path.join(directory, name)
    anchor = os.path.join(target, "traces.otf2")
    if os.path.isfile(anchor):
        return anchor
    os.makedirs(directory, exist_ok=True)
    print(f"generating the trace into {target} (once) ...", flush=True)
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix=".gen-", dir=directory)
    try:
        write(os.path.join(tmp, "traces.otf2"))
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"  done in {time.perf_counter() - t0:.1f} s", flush=True)
    return anchor


def ensure_trace(directory: str, side: int, iters: int) -> str:
    """Path of the cached trace's anchor file, generating the trace if needed."""
    return cached_trace(directory, f"stencil-{side}x{side}-{iters}",
                        lambda anchor: stencil(side, iters).write(anchor, latency=2e-6, bandwidth=5e9,
                                                                  mpi_overhead=1e-7))


def warm_page_cache(anchor: str) -> int:
    """Reads every file of the archive once; returns the bytes read."""
    root = os.path.dirname(anchor)
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    total += len(chunk)
    return total


def timed(fn):
    """(wall seconds, CPU seconds of this thread) of fn()."""
    w0, c0 = time.perf_counter(), time.thread_time()
    fn()
    return time.perf_counter() - w0, time.thread_time() - c0


def glibc_malloc():
    """glibc's allocator (for malloc_trim and mallopt), or None elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim, libc.mallopt  # noqa: B018 (glibc only)
        return libc
    except (OSError, AttributeError):
        return None


def load_and_drop(anchor: str, threads: int = 1) -> int:
    trace = waitscope.open(anchor, progress=False, threads=threads)
    n = trace.n_events
    del trace
    return n


# ---- memory (fresh subprocess) ----------------------------------------------

def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def memory_child(anchor: str) -> None:
    """Runs in the fresh subprocess: prints the figures as JSON."""
    import gc

    gc.collect()
    rss0 = _status_kib("VmRSS")
    hwm0 = _status_kib("VmHWM")
    trace = waitscope.open(anchor, threads=1)
    gc.collect()
    rss1 = _status_kib("VmRSS")
    hwm1 = _status_kib("VmHWM")
    print(json.dumps(dict(rss_before=rss0 * 1024, rss_after=rss1 * 1024, hwm_before=hwm0 * 1024,
                          hwm_after=hwm1 * 1024, exact=trace._core.event_memory(),
                          n_events=trace.n_events)))


def measure_memory(anchor: str) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory-child", anchor],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated trace")
    ap.add_argument("--side", type=int, default=32, help="grid side (ranks = side^2)")
    ap.add_argument("--iters", type=int, default=200, help="iterations of the stencil")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs of each contender")
    ap.add_argument("--threads", type=int, default=2, help="threads of the threaded load")
    ap.add_argument("--memory-child", metavar="ANCHOR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return

    anchor = ensure_trace(args.dir, args.side, args.iters)
    nbytes = warm_page_cache(anchor)
    print(f"trace: {anchor}")
    print(f"  {args.side * args.side} ranks, {args.iters} iterations, {nbytes / 2**20:.1f} MiB of OTF2 files "
          f"(read once before timing: page cache warm, no disk I/O is timed)")

    libc = glibc_malloc()
    if libc is not None:
        # no automatic trimming, and the 1-4 MiB OTF2 buffers come from the
        # heap rather than from fresh mmaps (constant settings for both)
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
        states = {"fresh pages": lambda: libc.malloc_trim(0), "reused pages": lambda: None}
    else:
        states = {"heap as the allocator leaves it": lambda: None}

    records = _core.bare_read(anchor)  # untimed warm-up of both contenders
    events = load_and_drop(anchor)
    print(f"  {records:,} event records, {events:,} events stored")

    runs = {(state, who): [] for state in states for who in ("bare", "ours", "threads")}
    for _ in range(args.repeat):  # interleaved so that drifts hit all alike
        for state, prepare in states.items():
            prepare()
            runs[state, "bare"].append(timed(lambda: _core.bare_read(anchor)))
            prepare()
            runs[state, "ours"].append(timed(lambda: load_and_drop(anchor)))
    # the threaded load after the others: its store lives in the threads'
    # malloc arenas, which would change the heap the one-thread load reuses
    for _ in range(args.repeat):
        for state, prepare in states.items():
            prepare()
            runs[state, "threads"].append(timed(lambda: load_and_drop(anchor, args.threads)))

    def stats(times: list, n: int) -> list:
        wall = [w for w, _ in times]
        cpu = [c for _, c in times]
        return [min(wall), statistics.median(wall), min(cpu), statistics.median(cpu),
                n / min(wall) / 1e6, n / statistics.median(wall) / 1e6]

    print(f"\nload, {args.repeat} interleaved runs each        wall s            cpu s          M events/s (wall)")
    print(f"  {'':36}   best  median     best  median       best  median")
    for state in states:
        print(f"[{state}]")
        b = stats(runs[state, "bare"], records)
        o = stats(runs[state, "ours"], events)
        for name, v in (("bare OTF2 read (_core.bare_read)", b), ("full load (waitscope.open)", o)):
            print(f"  {name:<36} {v[0]:6.3f} {v[1]:7.3f}   {v[2]:6.3f} {v[3]:7.3f}   {v[4]:8.2f} {v[5]:7.2f}")
        # events/s ratio = (events / t_ours) / (records / t_bare)
        r = [(events / o[k]) / (records / b[k]) for k in range(4)]
        print(f"  {'ratio full / bare (events/s)':<36} {r[0]:6.2f} {r[1]:7.2f}   {r[2]:6.2f} {r[3]:7.2f}"
              f"   (aim >= 0.80)")
        m = stats(runs[state, "threads"], events)
        name = f"full load, threads={args.threads}"
        print(f"  {name:<36} {m[0]:6.3f} {m[1]:7.3f}   {'':6} {'':7}   {m[4]:8.2f} {m[5]:7.2f}")
        r = [(events / m[k]) / (records / b[k]) for k in range(2)]
        print(f"  {'ratio threaded / bare (events/s)':<36} {r[0]:6.2f} {r[1]:7.2f}")

    m = measure_memory(anchor)
    n = m["n_events"]
    d_rss = m["rss_after"] - m["rss_before"]
    d_hwm = m["hwm_after"] - m["rss_before"]
    print("\nmemory of the loaded store (fresh subprocess)          bytes   bytes/event")
    print(f"  {'event columns, exact (event_memory())':<46} {m['exact']:>12,} {m['exact'] / n:9.2f}"
          f"   (aim <= 24)")
    print(f"  {'resident (VmRSS after - before open)':<46} {d_rss:>12,} {d_rss / n:9.2f}")
    print(f"  {'peak (VmHWM after open - VmRSS before)':<46} {d_hwm:>12,} {d_hwm / n:9.2f}")


if __name__ == "__main__":
    main()
