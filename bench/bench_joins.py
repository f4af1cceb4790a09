"""Replays as joins next to the scheduled replays: CPU time per stage.

On the two archives of bench_decode.py (the 2-rank, 9.6 M-event barrier
trace and the 1024-rank, 10.3 M-event stencil, cached under --dir), this
runs the full analysis ``analyze(delay_model="proportional",
critical_path=True)`` on one thread with the private option ``replays`` of
``_core.analyze``:

* ``scheduled``: every replay scheduled (the engine before joins);
* ``auto``: the default (passes 2, 3 and 5 as joins, or with many
  collective sites only their point-to-point payloads produced ahead);
* ``joins``: every replay that allows it as a full join.

and prints, per stage (the progress callback's stages), the best CPU time
(``time.process_time``) of --repeat interleaved rounds: CPU time, not wall
time, because the machine is shared and wall times vary 2-3x with the
load.  "wait states 1/2" includes building the synchronization data, the
backward stage building the delay analysis's synchronization points.
Every result is checked to equal the scheduled one bit for bit.  No
assertions.

    python bench/bench_joins.py [--dir DIR] [--repeat R] [--only barrier|stencil]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import waitscope  # noqa: E402
from waitscope import _core  # noqa: E402
from bench_load import DEFAULT_DIR, warm_page_cache  # noqa: E402
from bench_parallel import ANALYSIS as FULL, barrier_and_stencil  # noqa: E402
MODES = ("scheduled", "auto", "joins")


def stages_of(trace: waitscope.Trace, replays: str) -> tuple[dict[str, float], dict]:
    marks: list[tuple[float, str, int, int]] = []
    t0 = time.process_time()
    result = _core.analyze(trace._core, replays=replays, progress=lambda s, d, n: marks.append(
        (time.process_time(), s, d, n)), **FULL)
    t1 = time.process_time()
    out: dict[str, float] = {}
    prev, last = t0, None
    for t, stage, done, total in marks:
        if done == total and stage != last:
            out[stage] = t - prev
            prev, last = t, stage
    out["rest"] = t1 - prev
    out["total"] = t1 - t0
    return out, result


def same(a: dict, b: dict) -> bool:
    """Every array of the two results (cube, clock violations, critical path, ...), byte for byte."""
    arrays = [k for k, v in a.items() if isinstance(v, np.ndarray) and not v.dtype.hasobject]
    return sorted(a) == sorted(b) and all(np.ascontiguousarray(a[k]).tobytes() ==
                                          np.ascontiguousarray(b[k]).tobytes() for k in arrays)


def measure(name: str, anchor: str, repeat: int) -> None:
    warm_page_cache(anchor)
    trace = waitscope.open(anchor, progress=False)
    best: dict[str, dict[str, float]] = {m: {} for m in MODES}
    equal = True
    for _ in range(repeat):
        reference = None
        for mode in MODES:
            stages, result = stages_of(trace, mode)
            if reference is None:
                reference = result
            else:
                equal &= same(reference, result)
            for k, v in stages.items():
                best[mode][k] = min(best[mode].get(k, float("inf")), v)
    print(f"\n{name}: {trace.n_events:,} events, {trace.n_locations} locations; best CPU seconds of {repeat}")
    print(f"  {'stage':<42}" + "".join(f"{m:>11}" for m in MODES) + f"{'auto/sched':>12}")
    for stage in best["scheduled"]:
        row = [best[m].get(stage, float("nan")) for m in MODES]
        ratio = row[1] / row[0] if row[0] > 0 else float("nan")
        print(f"  {stage:<42}" + "".join(f"{v:>11.3f}" for v in row) + f"{ratio:>12.2f}")
    print(f"  results bitwise equal to the scheduled replays: {'yes' if equal else 'NO'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=DEFAULT_DIR, help="cache directory of the generated traces")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (the best CPU time is shown)")
    ap.add_argument("--only", choices=["barrier", "stencil"])
    args = ap.parse_args()
    for name, anchor in barrier_and_stencil(args.dir, args.only):
        measure(name, anchor, args.repeat)


if __name__ == "__main__":
    main()
