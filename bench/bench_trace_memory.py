"""Tracing many events per rank: each rank's peak memory and MPI_Finalize's time.

bench/trace_load.c (built into a temporary directory with ``mpicc.<mpi>``)
records about --events trace events per rank from local work only: loops
of MPI_Irecv + MPI_Isend to the rank itself on MPI_COMM_SELF and
MPI_Waitall, so that no rank waits for another before MPI_Finalize.  Each
rank prints its peak resident set size (VmHWM) just before MPI_Finalize and
after it, and how long the call took: with tracing on, MPI_Finalize is
where the per-rank files become the archive traces.otf2.

How many events the program records per rank (a fixed number plus a
fixed number per iteration, by kind) is measured first, from traced runs
of 0 and 1,000 iterations; the iterations then follow from --events.
For each number of ranks (--ranks) the program runs untraced and traced
(the interposition library preloaded as ``waitscope trace`` does, through
``waitscope.pmpi.environment``) under ``mpiexec.<mpi> -n P``, --repeat
interleaved rounds, and the table gives:

* the untraced peak RSS (the largest over the ranks);
* traced: rank 0's peak RSS before MPI_Finalize and at the end, the
  other ranks' smallest and largest peak at the end, and the ratio of the
  largest peak over all ranks to the smallest;
* MPI_Finalize's time on rank 0 and the longest over all ranks;
* the wall time of the whole run (mpiexec) untraced and traced, and the
  tracing cost per event, (traced - untraced) / events per rank: the
  ranks share the machine's cores, so above one rank per core this is
  not the cost of one event on one core.

Peaks are the largest over the rounds, times the fastest.  Then every
trace of the last round is opened with the Python API, location by
location, and its events are counted by kind against what the program
did (and against the number the archive's definitions announce): "all N
events present", or the differences and exit status 1.
Figures are printed, nothing is asserted about them.

Each number of ranks is traced both ways the library can write the archive
(--unify, default both, side by side): ``serial``, rank 0 alone reading
every rank's events (``WAITSCOPE_UNIFY=serial``, the baseline), and
``parallel``, every rank converting and writing its own events (the
default).  --buffer SIZE[,SIZE...] (e.g. 16M, or 20K,1.25M,64M: one traced
run each) is passed as WAITSCOPE_BUFFER, the window of its event file each
process keeps in memory.  Traced runs take no samples of the call stack
(WAITSCOPE_SAMPLING=0), so that every run records the same events.

On 2 cores ``--buffer 16M`` (10^7 events per rank, 2, 4 and 8 ranks,
MPICH, both ways) took 2.3 minutes, most of it the serial 8-rank run,
whose files need about 4 GB of disk (the raw per-rank files, 40 bytes per
event, and the archive, ~11 bytes per event): there rank 0 peaked at 2.2
GB and MPI_Finalize took 44 s, against 34 MB and 4.8 s when every rank
writes its own events.  ``--events 2e6 --ranks 2,4`` takes about 10 s.
Above one rank per core MPI_Finalize's time includes the other ranks'
busy-polling in the collective steps.

    python bench/bench_trace_memory.py [--events E] [--ranks 2,4,8] [--mpi mpich[,openmpi]]
                                       [--buffer SIZE[,SIZE...]] [--unify serial,parallel]
                                       [--repeat R] [--dir DIR]
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
from pathlib import Path

import numpy as np

import waitscope
from waitscope import pmpi

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "trace_load.c"
CALIBRATION = 1000  # iterations of the second calibration run
LINE = re.compile(r"trace_load rank (\d+) iterations (\d+) hwm_before_kB (-?\d+) hwm_after_kB (-?\d+) "
                  r"finalize_s ([0-9.]+)")
MB = 1024.0  # kB per MB


class RunError(RuntimeError):
    pass


def launcher(mpi: str, ranks: int) -> list[str]:
    cmd = [f"mpiexec.{mpi}", "-n", str(ranks)]
    if mpi == "openmpi":
        cmd.insert(1, "--oversubscribe")
    return cmd


def build(mpi: str, tmp: Path) -> Path:
    exe = tmp / f"trace_load.{mpi}"
    subprocess.run([f"mpicc.{mpi}", "-O2", "-o", str(exe), str(SOURCE)], check=True)
    return exe


def run(mpi: str, ranks: int, exe: Path, iterations: int, trace: Path | None,
        buffer: str | None, unify: str = "parallel") -> tuple[float, dict[int, dict[str, float]]]:
    """(wall time of the run, per rank the figures it printed)."""
    cmd = launcher(mpi, ranks) + [str(exe), str(iterations)]
    env = dict(os.environ)
    for key in [k for k in env if k.startswith("WAITSCOPE_")]:
        del env[key]
    if mpi == "openmpi" and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if trace is not None:
        shutil.rmtree(trace, ignore_errors=True)
        env = pmpi.environment(cmd, trace_dir=trace, mpi=mpi, base=env)
        # no samples of the call stack: every run records exactly the same events
        env["WAITSCOPE_SAMPLING"] = "0"
        env["WAITSCOPE_UNIFY"] = unify
        if buffer is not None:
            env["WAITSCOPE_BUFFER"] = buffer
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    what = f"{' '.join(cmd)} ({'traced' if trace is not None else 'untraced'})"
    if proc.returncode != 0:
        raise RunError(f"{what} exited with status {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    per_rank = {}
    for m in LINE.finditer(proc.stdout):
        per_rank[int(m.group(1))] = {"iterations": int(m.group(2)), "before": int(m.group(3)),
                                     "after": int(m.group(4)), "finalize": float(m.group(5))}
    if sorted(per_rank) != list(range(ranks)):
        raise RunError(f"{what}: expected a line from each of {ranks} ranks, got ranks {sorted(per_rank)}:\n"
                       f"{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    if trace is not None and not (trace / "traces.otf2").is_file():
        raise RunError(f"{what}: no archive {trace / 'traces.otf2'} was written:\n{proc.stderr[-4000:]}")
    if proc.stderr.strip() and trace is not None:
        print(f"note: {what} wrote to stderr:\n{proc.stderr[-2000:]}", file=sys.stderr)
    return wall, per_rank


def kind_counts(trace: Path) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    """Per rank the events of its location counted by kind (read location by
    location, so that one location's events are in memory at a time), and
    the events each location's definition announces."""
    defs = waitscope.open(str(trace / "traces.otf2"), load=False, progress=None)
    ranks = defs.location_ranks
    announced = defs._defs["locations"]["n_records"]
    n_kinds = max(waitscope.EVENT_KINDS) + 1
    counts, defined = {}, {}
    for loc in range(defs.n_locations):
        t = waitscope.open(str(trace / "traces.otf2"), locations=[loc], progress=None)
        counts[int(ranks[loc])] = np.bincount(t.events(loc).kind, minlength=n_kinds)
        defined[int(ranks[loc])] = int(announced[loc])
        del t
    return counts, defined


def calibrate(mpi: str, exe: Path, tmp: Path, buffer: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The events by kind every rank records besides the loop, and per iteration."""
    found = []
    for iterations in (0, CALIBRATION):
        out = tmp / f"calibrate-{mpi}-{iterations}"
        run(mpi, 2, exe, iterations, out, buffer)
        found.append(kind_counts(out)[0])
        shutil.rmtree(out)
    base, more = found[0][0], found[1][0]
    for rank in (0, 1):
        if (found[0][rank] != base).any() or (found[1][rank] != more).any():
            raise RunError(f"{mpi}: the ranks of the calibration runs recorded different events: "
                           f"{found[0]} / {found[1]}")
    per_iteration, rest = np.divmod(more - base, CALIBRATION)
    if rest.any():
        raise RunError(f"{mpi}: {CALIBRATION} iterations recorded {more - base} events by kind: not the same "
                       "events in every iteration")
    return base, per_iteration


def describe(counts: np.ndarray) -> str:
    return ", ".join(f"{waitscope.EVENT_KINDS.get(k, k)} {n}" for k, n in enumerate(counts) if n)


def check(trace: Path, ranks: int, expected: np.ndarray) -> tuple[int, list[str]]:
    """(the events read, the differences between them and the expected ones)."""
    counts, defined = kind_counts(trace)
    found = int(sum(c.sum() for c in counts.values()))
    problems = []
    if sorted(counts) != list(range(ranks)):
        problems.append(f"locations of ranks {sorted(counts)}, expected ranks 0..{ranks - 1}")
        return found, problems
    for rank in range(ranks):
        got = counts[rank]
        if defined[rank] != got.sum():
            problems.append(f"rank {rank}: the definitions announce {defined[rank]:,d} events, "
                            f"{got.sum():,d} were read")
        for k in np.flatnonzero(got != expected):
            name = waitscope.EVENT_KINDS.get(int(k), str(k))
            problems.append(f"rank {rank}: {name}: {got[k]:,d} events, expected {expected[k]:,d} "
                            f"({int(got[k]) - int(expected[k]):+,d})")
    return found, problems


def events_arg(text: str) -> int:
    value = float(text)
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"{text}: expected a number of events >= 0")
    return int(value)


def ranks_arg(text: str) -> list[int]:
    try:
        ranks = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: expected numbers of ranks separated by commas") from None
    if not ranks or min(ranks) < 2:
        raise argparse.ArgumentTypeError(f"{text}: expected numbers of ranks >= 2 separated by commas")
    return ranks


def measure(mpi: str, ranks: int, exe: Path, iterations: int, out_dir: Path, buffer: str | None, unify: str,
            repeat: int, expected: np.ndarray, per_rank_events: int, failures: list[str]) -> dict | None:
    """Untraced and traced runs of one configuration, the archive checked; the table's row."""
    plain_t, traced_t, plain_peak = [], [], 0
    traced: dict[int, dict[str, float]] = {}
    trace = out_dir / f"trace-{mpi}-{ranks}"
    what = f"{mpi}, {ranks} ranks, {unify}, buffer {buffer or 'default'}"
    try:
        for _ in range(repeat):
            wall, per_rank = run(mpi, ranks, exe, iterations, None, None)
            plain_t.append(wall)
            plain_peak = max(plain_peak, max(r["after"] for r in per_rank.values()))
            wall, per_rank = run(mpi, ranks, exe, iterations, trace, buffer, unify)
            traced_t.append(wall)
            for r, fig in per_rank.items():
                old = traced.setdefault(r, dict(fig))
                old["before"] = max(old["before"], fig["before"])
                old["after"] = max(old["after"], fig["after"])
                old["finalize"] = min(old["finalize"], fig["finalize"])
    except RunError as e:
        print(f"{what}: {e}")
        failures.append(f"FAILED {what}: the run failed (above)")
        shutil.rmtree(trace, ignore_errors=True)
        return None
    t0 = time.perf_counter()
    found, problems = check(trace, ranks, expected)
    check_s = time.perf_counter() - t0
    shutil.rmtree(trace, ignore_errors=True)
    if problems:
        total = ranks * per_rank_events
        print(f"{what}: {found:,d} events of {total:,d} ({found - total:+,d}):")
        for problem in problems:
            print(f"    {problem}")
        failures.append(f"MISMATCH {what}: {found - total:+,d} events")
    else:
        print(f"{what}: all {ranks * per_rank_events:,d} events present (read back in {check_s:.1f} s)")
    return {"mpi": mpi, "ranks": ranks, "unify": unify, "buffer": buffer, "events": per_rank_events,
            "plain_peak": plain_peak, "traced": traced, "plain_t": min(plain_t), "traced_t": min(traced_t)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=events_arg, default=10_000_000,
                    help="trace events per rank (about; e.g. 2e6), default 1e7")
    ap.add_argument("--ranks", type=ranks_arg, default=[2, 4, 8], help="numbers of ranks, default 2,4,8")
    ap.add_argument("--mpi", default="mpich", help="mpich, openmpi or both (mpich,openmpi); default mpich")
    ap.add_argument("--buffer", default=None, metavar="SIZE[,SIZE...]",
                    help="passed to the traced runs as WAITSCOPE_BUFFER (e.g. 16M, or 20K,1.25M,64M: a run each)")
    ap.add_argument("--unify", default="serial,parallel", metavar="MODE[,MODE]",
                    help="WAITSCOPE_UNIFY of the traced runs: serial (rank 0 writes the archive alone), parallel "
                         "(each rank its own events), or both side by side (default)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds of untraced and traced runs")
    ap.add_argument("--dir", default=None, help="where the traces are written (default: a temporary directory)")
    args = ap.parse_args()
    mpis = [m for m in args.mpi.split(",") if m]
    for mpi in mpis:
        if mpi not in pmpi.MPIS:
            ap.error(f"--mpi {mpi}: expected one of {', '.join(pmpi.MPIS)}")
        if mpi not in pmpi.available() or not shutil.which(f"mpicc.{mpi}") or not shutil.which(f"mpiexec.{mpi}"):
            print(f"{mpi}: no interposition library, mpicc.{mpi} or mpiexec.{mpi}: nothing to measure",
                  file=sys.stderr)
            return 1
    if args.repeat < 1:
        ap.error("--repeat: at least 1")
    modes = [m for m in args.unify.split(",") if m]
    if not modes or any(m not in ("serial", "parallel") for m in modes):
        ap.error(f"--unify {args.unify}: expected serial, parallel or both")
    buffers: list[str | None] = [b for b in args.buffer.split(",") if b] if args.buffer else [None]
    for b in buffers:
        try:
            pmpi.buffer_bytes(b)
        except ValueError as e:
            ap.error(f"--buffer: {e}")

    buffer = ("WAITSCOPE_BUFFER unset (library default)" if args.buffer is None
              else f"WAITSCOPE_BUFFER={args.buffer}")
    print(f"bench_trace_memory: ~{args.events:,d} events per rank, ranks {','.join(map(str, args.ranks))}, "
          f"{args.repeat} round(s); {buffer}; {os.cpu_count()} cores")
    rows, failures = [], []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out_dir = Path(args.dir) if args.dir else tmp
        out_dir.mkdir(parents=True, exist_ok=True)
        for mpi in mpis:
            exe = build(mpi, tmp)
            try:
                base, per_iteration = calibrate(mpi, exe, out_dir, buffers[0])
            except RunError as e:
                print(f"{mpi}: calibration failed: {e}")
                return 1
            iterations = max(0, round((args.events - base.sum()) / per_iteration.sum()))
            expected = base + iterations * per_iteration
            per_rank_events = int(expected.sum())
            print(f"{mpi}: each rank records {base.sum()} events + {per_iteration.sum()} per iteration "
                  f"({describe(per_iteration)}); {iterations:,d} iterations = {per_rank_events:,d} events per rank")
            for ranks in args.ranks:
                for unify in modes:
                    for buf in buffers:
                        row = measure(mpi, ranks, exe, iterations, out_dir, buf, unify, args.repeat, expected,
                                      per_rank_events, failures)
                        if row:
                            rows.append(row)

    print()
    print("peak RSS in MB (VmHWM); MPI_Finalize and run times in s; cost = (traced - untraced run) / events per rank")
    print("unify: serial = rank 0 writes the archive alone, reading every rank's events; parallel = each rank "
          "writes its own")
    print(f"{'MPI':<8} {'ranks':>5} {'unify':>8} {'buffer':>7} {'events/rank':>12} {'untraced':>9} {'r0 before':>10} {'r0 peak':>8} "
          f"{'others min':>11} {'max':>8} {'max/min':>8} {'final r0':>9} {'max':>7} "
          f"{'untraced':>9} {'traced':>8} {'ns/event':>9}")
    for row in rows:
        tr = row["traced"]
        others = [tr[r]["after"] for r in tr if r != 0]
        peaks = [tr[r]["after"] for r in tr]
        cost = (row["traced_t"] - row["plain_t"]) / row["events"] * 1e9 if row["events"] else float("nan")
        print(f"{row['mpi']:<8} {row['ranks']:>5} {row['unify']:>8} {row['buffer'] or 'default':>7} {row['events']:>12,d} {row['plain_peak'] / MB:>9.1f} "
              f"{tr[0]['before'] / MB:>10.1f} {tr[0]['after'] / MB:>8.1f} {min(others) / MB:>11.1f} "
              f"{max(others) / MB:>8.1f} {max(peaks) / min(peaks):>8.2f} {tr[0]['finalize']:>9.3f} "
              f"{max(r['finalize'] for r in tr.values()):>7.3f} {row['plain_t']:>9.3f} {row['traced_t']:>8.3f} "
              f"{cost:>9.1f}")
    print(f"total {time.perf_counter() - started:.0f} s")
    if failures:
        print()
        for f in failures:
            print(f)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
