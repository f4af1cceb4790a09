"""Overhead of the measurement: plain runs vs. profiling vs. tracing, side by side.

For each example program (examples/, built with ``make -C examples``) the
same command runs, in interleaved rounds (--repeat), as

* ``plain``: uninstrumented;
* ``profile``: with the interposition library preloaded and
  WAITSCOPE_PROFILE_DIR set (what ``waitscope profile`` does);
* ``trace``: with WAITSCOPE_TRACE_DIR set (``waitscope trace``);

and the table shows each configuration's fastest run: the wall time of the
whole command (launcher, MPI_Init, the run, MPI_Finalize with the
library's unification and writing), the program's own time of its main
loop (the line it prints, MPI_Wtime around the solver), their dilation
against the plain run, and for tracing the events, the bytes written and
bytes per event.

Targets (printed, not asserted): profiling <= 5 % and tracing <= 15 %
dilation of the run time on the examples (the program's own time; seed
003 reports < 8 % extra per call for its profiler).  The examples sleep
most of their time; the configuration ``halo2d-nowork`` (no work, only
halo exchanges) shows the worst case and the overhead per MPI call.

The machine has 2 cores: the default is MPICH with 2 ranks.

    python bench/bench_measure.py [--mpi mpich|openmpi] [--np N] [--repeat R] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from waitscope._parallel import LAUNCHERS

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLES = os.path.join(ROOT, "examples")

# name -> (program, arguments)
PROGRAMS: dict[str, tuple[str, list[str]]] = {
    "halo2d": ("halo2d", ["-k", "100"]),
    "wavefront": ("wavefront", ["-k", "6"]),
    "timestep": ("timestep", ["-k", "60"]),
    "master_worker": ("master_worker", ["-r", "8"]),
    "halo2d-nowork": ("halo2d", ["-k", "20000", "-w", "0", "-x", "0", "-s", "none"]),
}
NOWORK_CALLS = 20000 * 9
"""MPI calls per rank in halo2d-nowork's loop: 4 MPI_Irecv, 4 MPI_Isend (MPI_PROC_NULL at borders too), MPI_Waitall."""


def launcher(mpi: str, np_: int) -> list[str]:
    return [*LAUNCHERS[mpi][0], "-n", str(np_)]


def mpi_env(mpi: str) -> dict[str, str]:
    return dict(os.environ, **LAUNCHERS[mpi][1])


def build(mpi: str) -> None:
    subprocess.run(["make", "-s", "-C", EXAMPLES, mpi], check=True)


def run_once(command: list[str], env: dict[str, str], timeout: float) -> tuple[float, float | None, str]:
    """(wall seconds, program's own seconds or None, stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    m = re.search(r", ([0-9.]+) s\n", proc.stdout)
    return wall, (float(m.group(1)) if m else None), proc.stdout


def trace_size(directory: str) -> tuple[int, int]:
    """(events, bytes) of the trace in `directory`."""
    import waitscope

    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            if name != "profile.json":
                total += os.path.getsize(os.path.join(root, name))
    trace = waitscope.open(os.path.join(directory, "traces.otf2"))
    return int(trace.n_events), total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpi", choices=["mpich", "openmpi"], default="mpich")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--only", nargs="*", default=None, help=f"some of: {', '.join(PROGRAMS)}")
    args = parser.parse_args()

    build(args.mpi)
    from waitscope import cli_measure

    base = launcher(args.mpi, args.np)
    env0 = mpi_env(args.mpi)
    probe = base + [os.path.join(EXAMPLES, f"halo2d.{args.mpi}")]
    try:
        cli_measure.prepare(probe, "probe", None, env0)
        library = True
    except cli_measure.MeasureError as exc:
        library = False
        print(f"note: {exc}\nonly the plain runs are measured", file=sys.stderr)

    names = args.only or list(PROGRAMS)
    work = tempfile.mkdtemp(prefix="ws-bench-measure-")
    results: dict[tuple[str, str], dict[str, Any]] = {}
    configs = ["plain"] + (["profile", "trace"] if library else [])
    try:
        for rnd in range(args.repeat):
            for name in names:
                program, extra = PROGRAMS[name]
                command = base + [os.path.join(EXAMPLES, f"{program}.{args.mpi}")] + extra
                for config in configs:
                    out_dir = os.path.join(work, f"{name}-{config}")
                    shutil.rmtree(out_dir, ignore_errors=True)
                    os.makedirs(out_dir)
                    if config == "plain":
                        env = env0
                    else:
                        env = cli_measure.prepare(command, out_dir if config == "trace" else None,
                                                  out_dir if config == "profile" else None, env0)
                    wall, own, _ = run_once(command, env, args.timeout)
                    best = results.get((name, config))
                    if best is None or wall < best["wall"]:
                        entry = {"wall": wall, "own": own}
                        if config == "trace":
                            entry["events"], entry["bytes"] = trace_size(out_dir)
                        results[(name, config)] = entry
            print(f"round {rnd + 1}/{args.repeat} done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"measurement overhead, {args.mpi}, {args.np} ranks, fastest of {args.repeat} interleaved runs")
    header = (f"{'program':<16}{'config':<9}{'wall s':>9}{'dilation':>10}{'own s':>9}{'dilation':>10}"
              f"{'events':>10}{'bytes':>12}{'B/event':>9}")
    print(header)
    print("-" * len(header))
    for name in names:
        plain = results[(name, "plain")]
        for config in configs:
            r = results[(name, config)]
            wall_d = "" if config == "plain" else f"{100 * (r['wall'] / plain['wall'] - 1):+9.1f}%"
            own = r["own"]
            own_s = f"{own:9.3f}" if own is not None else f"{'-':>9}"
            own_d = "" if config == "plain" or own is None or not plain["own"] \
                else f"{100 * (own / plain['own'] - 1):+9.1f}%"
            ev = f"{r['events']:>10,}" if "events" in r else ""
            by = f"{r['bytes']:>12,}" if "bytes" in r else ""
            bpe = f"{r['bytes'] / r['events']:>9.1f}" if r.get("events") else ""
            print(f"{name:<16}{config:<9}{r['wall']:9.3f}{wall_d:>10}{own_s}{own_d:>10}{ev}{by}{bpe}")
    if library:
        print("targets: profile <= 5 %, trace <= 15 % dilation of the program's own time on the examples "
              "(halo2d-nowork: worst case, only MPI calls)")
        if ("halo2d-nowork", "trace") in results:
            r, p = results[("halo2d-nowork", "trace")], results[("halo2d-nowork", "plain")]
            q = results[("halo2d-nowork", "profile")]
            if r.get("events") and p["own"] and r["own"] and q["own"]:
                print(f"halo2d-nowork per MPI call and rank: profile "
                      f"{1e6 * (q['own'] - p['own']) / NOWORK_CALLS:.2f} us, "
                      f"trace {1e6 * (r['own'] - p['own']) / NOWORK_CALLS:.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
