"""Debian's MPI applications measured: plain vs. profiling vs. tracing, side by side.

Each application runs on 2 ranks under Open MPI (the MPI Debian builds
them with), in interleaved rounds (--repeat), as ``plain``, ``profile``
(the interposition library with WAITSCOPE_PROFILE_DIR, what ``waitscope
profile`` does) and ``trace`` (WAITSCOPE_TRACE_DIR, ``waitscope trace``):

* ``pw.x``: Quantum ESPRESSO, an 8-atom silicon cell, 45 Ry, 6x6x6
  k-points (the pseudopotential made by its ld1.x, as in
  tests/test_debian_apps.py); its own time is the WALL of its ``PWSCF``
  line;
* ``elk``: Elk, bulk silicon, 12x12x12 k-points until self-consistent
  (about 14 loops); Elk reports no wall time of its own;
* ``lmp``: LAMMPS, the Lennard-Jones benchmark (4,000 atoms, 1,000 steps);
  its own time is the ``Loop time``.

The table gives each configuration's fastest run: wall time of the whole
command (launcher, MPI_Init, the run, MPI_Finalize with the library's
unification and writing), the application's own time, their dilation
against the plain run, and for tracing the events and bytes per event.
Targets (printed, not asserted): profiling <= 5 %, tracing <= 15 %.

    python bench/bench_apps.py [--repeat R] [--only pw.x elk lmp]
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
from typing import Any, Callable

from waitscope._parallel import LAUNCHERS

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from test_debian_apps import ELK, LD1, LJ, PW  # noqa: E402  the inputs of the tests, made larger

PW_BIG = PW.replace("ibrav=2, celldm(1)=10.20, nat=2, ntyp=1, ecutwfc=14.0",
                    "ibrav=1, celldm(1)=10.20, nat=8, ntyp=1, ecutwfc=45.0").replace(
    "ATOMIC_POSITIONS alat\n Si 0.00 0.00 0.00\n Si 0.25 0.25 0.25\n",
    "ATOMIC_POSITIONS crystal\n" + "".join(f" Si {x} {y} {z}\n" for x, y, z in [
        (0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5),
        (0.25, 0.25, 0.25), (0.75, 0.75, 0.25), (0.75, 0.25, 0.75), (0.25, 0.75, 0.75)])).replace(
    " 4 4 4 1 1 1", " 6 6 6 1 1 1")
ELK_BIG = ELK.replace("  4 4 4", "  12 12 12").replace("maxscl\n  3", "maxscl\n  40")
LJ_BIG = LJ.replace("run 100", "run 1000")


def own_pw(stdout: str, _: str) -> float | None:
    m = re.search(r"PWSCF\s*:.*?([0-9.]+)s WALL", stdout)
    return float(m.group(1)) if m else None


def own_lmp(stdout: str, _: str) -> float | None:
    m = re.search(r"Loop time of ([0-9.e+-]+) on", stdout)
    return float(m.group(1)) if m else None


def prepare_pw(work: str) -> list[str]:
    with open(os.path.join(work, "si.ld1"), "w") as f:
        f.write(LD1)
    with open(os.path.join(work, "si.ld1")) as stdin:
        subprocess.run(["ld1.x"], stdin=stdin, cwd=work, capture_output=True, check=True)
    with open(os.path.join(work, "si.in"), "w") as f:
        f.write(PW_BIG)
    return [shutil.which("pw.x") or "pw.x", "-in", "si.in"]


def prepare_elk(work: str) -> list[str]:
    with open(os.path.join(work, "elk.in"), "w") as f:
        f.write(ELK_BIG)
    return [shutil.which("elk-lapw") or "elk-lapw"]


def prepare_lmp(work: str) -> list[str]:
    with open(os.path.join(work, "in.lj"), "w") as f:
        f.write(LJ_BIG)
    return [shutil.which("lmp") or "lmp", "-in", "in.lj", "-log", "none"]


APPS: dict[str, tuple[Callable[[str], list[str]], Callable[[str, str], float | None] | None]] = {
    "pw.x": (prepare_pw, own_pw),
    "elk": (prepare_elk, None),
    "lmp": (prepare_lmp, own_lmp),
}


def trace_size(directory: str) -> tuple[int, int]:
    import waitscope

    total = sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(directory)
                for name in files if name != "profile.json")
    return int(waitscope.open(os.path.join(directory, "traces.otf2")).n_events), total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None, help=f"some of: {', '.join(APPS)}")
    args = parser.parse_args()
    from waitscope import cli_measure

    env0 = dict(os.environ, OMP_NUM_THREADS="1", **LAUNCHERS["openmpi"][1])
    base = [*LAUNCHERS["openmpi"][0], "-n", "2"]
    names = args.only or list(APPS)
    work = tempfile.mkdtemp(prefix="ws-bench-apps-")
    results: dict[tuple[str, str], dict[str, Any]] = {}
    configs = ["plain", "profile", "trace"]
    try:
        commands = {}
        for name in names:
            os.makedirs(os.path.join(work, name))
            commands[name] = base + APPS[name][0](os.path.join(work, name))
        for rnd in range(args.repeat):
            for name in names:
                command, own_of = commands[name], APPS[name][1]
                for config in configs:
                    out_dir = os.path.join(work, f"{name}-{config}")
                    shutil.rmtree(out_dir, ignore_errors=True)
                    os.makedirs(out_dir)
                    env = env0 if config == "plain" else cli_measure.prepare(
                        command, out_dir if config == "trace" else None, out_dir if config == "profile" else None,
                        env0)
                    t0 = time.perf_counter()
                    proc = subprocess.run(command, env=env, cwd=os.path.join(work, name), capture_output=True,
                                          text=True, timeout=600)
                    wall = time.perf_counter() - t0
                    if proc.returncode != 0:
                        raise RuntimeError(f"{name} ({config}) failed: {proc.stderr[-400:]}")
                    own = own_of(proc.stdout, proc.stderr) if own_of else None
                    best = results.get((name, config))
                    if best is None or wall < best["wall"]:
                        entry: dict[str, Any] = {"wall": wall, "own": own}
                        if config == "trace":
                            entry["events"], entry["bytes"] = trace_size(out_dir)
                        results[(name, config)] = entry
            print(f"round {rnd + 1}/{args.repeat} done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"Debian's applications, Open MPI, 2 ranks, fastest of {args.repeat} interleaved runs")
    header = f"{'application':<13}{'config':<9}{'wall s':>9}{'dilation':>10}{'own s':>9}{'dilation':>10}" \
             f"{'events':>11}{'B/event':>9}"
    print(header)
    print("-" * len(header))
    for name in names:
        plain = results[(name, "plain")]
        for config in configs:
            r = results[(name, config)]
            wd = "" if config == "plain" else f"{100 * (r['wall'] / plain['wall'] - 1):+9.1f}%"
            own = f"{r['own']:9.3f}" if r["own"] is not None else f"{'-':>9}"
            od = "" if config == "plain" or r["own"] is None or not plain["own"] \
                else f"{100 * (r['own'] / plain['own'] - 1):+9.1f}%"
            ev = f"{r['events']:>11,}{r['bytes'] / r['events']:>9.1f}" if r.get("events") else ""
            print(f"{name:<13}{config:<9}{r['wall']:9.3f}{wd:>10}{own}{od:>10}{ev}")
    print("targets: profile <= 5 %, trace <= 15 % dilation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
