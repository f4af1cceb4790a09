"""Cost per event of the full analysis as the communicator grows.

An allreduce-only synthetic program (every iteration: a computation whose
length varies with the rank, then MPI_Allreduce over MPI_COMM_WORLD) of
about the same number of events (--events, default 1 million) at 64,
4,096, 16,384 and 65,536 ranks (--ranks): the more ranks, the fewer
iterations, so the collective instances grow while the events stay.  For
each size the in-memory trace of ``waitscope.synth`` is analysed in full
(wait states, delay costs with the proportional model, critical path) in
one process; the table prints the best of --repeat runs in ns per event
side by side, with the ratio to the smallest size (the aim: 4,096 ranks
within 1.5x of 64).  The runs are interleaved (a round analyses every
size once), so that a change in the machine's speed during the run moves
every size alike rather than the ratios.  Also checks that the results are the right ones
(delay == handled waiting, path length == wall-clock time).  No
assertions.

With ``--compare PKGDIR`` each size also runs with the waitscope package
in PKGDIR (a build of another commit, as for bench_memory.py) in a
subprocess, and the table shows both; sizes that take the compared build
longer than --compare-timeout are given up.

    python bench/bench_scale.py [--events N] [--ranks 64,4096,16384,65536] [--repeat R]
                                [--compare PKGDIR] [--compare-timeout S]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from waitscope import synth  # noqa: E402

ANALYSIS = {"delay_model": "proportional", "critical_path": True}
EVENTS_PER_ITERATION = 6  # compute Enter/Leave + Allreduce Enter/CollBegin/CollEnd/Leave


def allreduce_program(nranks: int, iterations: int) -> synth.Program:
    prog = synth.Program(nranks, name="allreduce")
    for rank in range(nranks):
        r = prog.rank(rank)
        for it in range(iterations):
            r.compute("work", 1e-4 * (1 + (rank * 7 + it * 3) % 5))
            r.allreduce(size=8)
    return prog


def synthesize(n: int, events: int) -> tuple[object, int, float]:
    """The n-rank program of about `events` events: its trace, iterations and synthesis time."""
    iterations = max(1, round(events / (n * EVENTS_PER_ITERATION)))
    t0 = time.perf_counter()
    trace = allreduce_program(n, iterations).run(latency=2e-6, bandwidth=5e9, mpi_overhead=1e-7)
    return trace, iterations, time.perf_counter() - t0


def analyse_once(trace) -> tuple[float, object]:
    """Seconds of one full analysis, and its result."""
    t0 = time.perf_counter()
    r = trace.analyze(**ANALYSIS, threads=1)
    return time.perf_counter() - t0, r


def figures(n: int, trace, iterations: int, t_synth: float, best: float, r) -> dict:
    cp = r.critical_path
    return dict(n=n, iterations=iterations, events=trace.n_events, synth=t_synth, analysis=best,
                delay=r.total("delay"), handled=r.handled_waiting(), path=cp.length, wall=cp.end - cp.start)


def measure(n: int, events: int, repeat: int) -> dict:
    """Synthesises the n-rank program and times its full analysis (in this process)."""
    trace, iterations, t_synth = synthesize(n, events)
    best = float("inf")
    r = None
    for _ in range(repeat):
        seconds, r = analyse_once(trace)
        best = min(best, seconds)
    return figures(n, trace, iterations, t_synth, best, r)


def measure_interleaved(sizes: list[int], events: int, repeat: int) -> list[dict]:
    """measure() for every size, the rounds interleaved (one analysis of each size per round), so that
    the machine's drift during the run affects every size alike and not the ratios."""
    traces = [synthesize(n, events) for n in sizes]
    best = [float("inf")] * len(sizes)
    last = [None] * len(sizes)
    for _ in range(repeat):
        for i, (trace, _, _) in enumerate(traces):
            seconds, last[i] = analyse_once(trace)
            best[i] = min(best[i], seconds)
    return [figures(n, trace, iterations, t_synth, best[i], last[i])
            for i, (n, (trace, iterations, t_synth)) in enumerate(zip(sizes, traces))]


def in_subprocess(pkg: str, n: int, events: int, repeat: int, timeout: float) -> dict | None:
    """measure() with the waitscope package found in `pkg` (None when it takes longer than timeout)."""
    env = dict(os.environ, PYTHONPATH=pkg + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = (f"import json, sys; sys.path.insert(1, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import bench_scale; print(json.dumps(bench_scale.measure({n}, {events}, {repeat})))")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="events per trace (about)")
    ap.add_argument("--ranks", default="64,4096,16384,65536", help="comma-separated rank counts")
    ap.add_argument("--repeat", type=int, default=3, help="timed analyses per size (best counts)")
    ap.add_argument("--compare", metavar="PKGDIR",
                    help="also run with the waitscope package in PKGDIR (another build) and show it alongside")
    ap.add_argument("--compare-timeout", type=float, default=300.0,
                    help="seconds after which a size of the compared build is given up")
    args = ap.parse_args()
    sizes = [int(x) for x in args.ranks.split(",") if x]

    rows = []
    for m in measure_interleaved(sizes, args.events, args.repeat):
        n = m["n"]
        other = None
        if args.compare:
            other = in_subprocess(args.compare, n, args.events, args.repeat, args.compare_timeout)
        rows.append((m, other))
        print(f"  {n:>6} ranks x {m['iterations']:>5} iterations: {m['events']:>10,} events, "
              f"synth {m['synth']:6.2f} s, analysis {m['analysis']:7.3f} s; "
              f"delay {m['delay']:.6g} s vs handled waiting {m['handled']:.6g} s, "
              f"path {m['path']:.6g} s vs wall clock {m['wall']:.6g} s", flush=True)

    base = rows[0][0]["analysis"] / rows[0][0]["events"]
    print("\nfull analysis (wait states + delay + critical path), one process, best of", args.repeat)
    head = f"{'ranks':>7} {'iterations':>10} {'events':>11} {'analysis s':>11} {'ns/event':>9} {'vs ' + str(sizes[0]):>8}"
    if args.compare:
        head += f"   {'compared ns/event':>17} {'vs ' + str(sizes[0]):>8}"
    print(head)
    other_base = rows[0][1]["analysis"] / rows[0][1]["events"] if args.compare and rows[0][1] else None
    for m, other in rows:
        per = m["analysis"] / m["events"]
        line = (f"{m['n']:>7} {m['iterations']:>10} {m['events']:>11,} {m['analysis']:>11.3f} {per * 1e9:>9.1f} "
                f"{per / base:>7.2f}x")
        if args.compare:
            if other is None:
                line += f"   {'(gave up)':>17}"
            else:
                o = other["analysis"] / other["events"]
                line += f"   {o * 1e9:>17.1f} " + (f"{o / other_base:>7.2f}x" if other_base else "")
        print(line)
    print("aim: 4096 ranks within 1.5x of 64 ranks per event")


if __name__ == "__main__":
    main()
