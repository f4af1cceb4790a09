"""Writing the Perfetto/Chrome trace-event file next to the analysis it shows.

A generated ring exchange (non-blocking messages, ``MPI_Waitall``, an
allreduce every 10 iterations) of --ranks ranks and --iters iterations,
analysed with wait-state records, delay records and the critical path
(the baseline: the time the analysis takes).  Then, best of --repeat:

* ``to_perfetto`` of the whole run;
* ``to_perfetto`` of a window over the middle tenth of the run;
* ``to_perfetto`` of two locations.

Prints the seconds, their ratio to the analysis, the file sizes and the
bytes per trace event (the figure docs/explore.md quotes), and checks that
each file holds one flow arrow per message shown.  No assertions.

    python bench/bench_perfetto.py [--ranks N] [--iters N] [--repeat R]
"""
import argparse
import json
import os
import tempfile
import time

import waitscope  # noqa: F401
from waitscope import synth


def ring(ranks: int, iters: int) -> "synth.Program":
    prog = synth.Program(ranks)
    for i in range(iters):
        for r in range(ranks):
            rp = prog.rank(r).compute("work", 0.001 * (1 + (r % 3)))
            reqs = [rp.irecv((r - 1) % ranks, tag=i), rp.isend((r + 1) % ranks, tag=i, size=4096)]
            rp.waitall(reqs)
        if i % 10 == 0:
            for r in range(ranks):
                prog.rank(r).allreduce(size=8)
    return prog


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    trace = ring(args.ranks, args.iters).run(latency=1e-5)
    options = dict(wait_records=True, delay_model="proportional", delay_records=True, critical_path=True)
    base = best(lambda: trace.analyze(**options, threads=1), args.repeat)
    result = trace.analyze(**options, threads=1)
    t0, t1 = result.critical_path.start, result.critical_path.end
    cases = [("whole run", {}), ("middle tenth", {"window": (t0 + 0.45 * (t1 - t0), t0 + 0.55 * (t1 - t0))}),
             ("two locations", {"locations": [0, 1]})]
    print(f"{args.ranks} ranks, {args.iters} iterations: {trace.n_events} events")
    print(f"{'analysis (baseline)':<24} {base:8.3f} s")
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in cases:
            path = os.path.join(tmp, "t.json")
            seconds = best(lambda: result.to_perfetto(path, **kw), args.repeat)
            size = os.path.getsize(path)
            with open(path) as f:
                doc = json.load(f)
            flows = sum(1 for e in doc["traceEvents"] if e["ph"] == "s")
            ends = sum(1 for e in doc["traceEvents"] if e["ph"] == "f")
            print(f"{'to_perfetto, ' + name:<24} {seconds:8.3f} s  ({seconds / base:5.2f} x analysis)  "
                  f"{size / 1e6:7.2f} MB  {size / trace.n_events:6.1f} bytes/event  "
                  f"{flows} arrows{'' if flows == ends else ' (UNPAIRED)'}")


if __name__ == "__main__":
    main()
