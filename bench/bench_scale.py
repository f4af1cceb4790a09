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
within 1.5x of 64).  Also checks that the results are the right ones
(delay == handled waiting, path length == wall-clock time).  No
assertions.

    python bench/bench_scale.py [--events N] [--ranks 64,4096,16384,65536] [--repeat R]
"""
import argparse
import os
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="events per trace (about)")
    ap.add_argument("--ranks", default="64,4096,16384,65536", help="comma-separated rank counts")
    ap.add_argument("--repeat", type=int, default=3, help="timed analyses per size (best counts)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.ranks.split(",") if x]

    rows = []
    for n in sizes:
        iterations = max(1, round(args.events / (n * EVENTS_PER_ITERATION)))
        t0 = time.perf_counter()
        trace = allreduce_program(n, iterations).run(latency=2e-6, bandwidth=5e9, mpi_overhead=1e-7)
        t_synth = time.perf_counter() - t0
        best = float("inf")
        r = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = trace.analyze(**ANALYSIS)
            best = min(best, time.perf_counter() - t0)
        handled = r.handled_waiting()
        delay = r.total("delay")
        cp = r.critical_path
        rows.append((n, iterations, trace.n_events, t_synth, best))
        print(f"  {n:>6} ranks x {iterations:>5} iterations: {trace.n_events:>10,} events, "
              f"synth {t_synth:6.2f} s, analysis {best:7.3f} s = {best / trace.n_events * 1e9:8.1f} ns/event; "
              f"delay {delay:.6g} s vs handled waiting {handled:.6g} s, "
              f"path {cp.length:.6g} s vs wall clock {cp.end - cp.start:.6g} s", flush=True)
        del trace, r

    base = rows[0][4] / rows[0][2]
    print("\nfull analysis (wait states + delay + critical path), one process, best of", args.repeat)
    print(f"{'ranks':>7} {'iterations':>10} {'events':>11} {'analysis s':>11} {'ns/event':>9} {'vs ' + str(rows[0][0]):>8}")
    for n, it, ev, _, best in rows:
        per = best / ev
        print(f"{n:>7} {it:>10} {ev:>11,} {best:>11.3f} {per * 1e9:>9.1f} {per / base:>7.2f}x")
    print("aim: 4096 ranks within 1.5x of 64 ranks per event")


if __name__ == "__main__":
    main()
