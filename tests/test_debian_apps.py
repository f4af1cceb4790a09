"""MPI programs nobody here wrote, as Debian packages them: NetPIPE (a
ping-pong over growing message sizes), measured without recompiling under
each MPI with ``waitscope trace --profile``.

What is known independently of waitscope: NetPIPE prints one line per
message size, ``N: BYTES bytes TIMES times --> ...``, and measures each
size in 3 trials of TIMES round trips (its fixed number of trials), so
each rank receives exactly 3 * TIMES messages of that size (sizes 1 and 4
also carry NetPIPE's own synchronisation messages and are left out).
Every message sent is received, and the profile of the same run counts
the same MPI calls as the trace.
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import waitscope
from test_measure import environment, mpi_command  # tests/ is on sys.path

NETPIPE = {"mpich": "NPmpich2", "openmpi": "NPopenmpi"}
TRIALS = 3
LINE = re.compile(r"^\s*\d+:\s+(\d+) bytes\s+(\d+) times -->", re.M)


@pytest.mark.parametrize("mpi", sorted(NETPIPE))
def test_netpipe(mpi: str, tmp_path: Path):
    program = shutil.which(NETPIPE[mpi])
    assert program is not None, f"{NETPIPE[mpi]} is missing: .ci/setup installs netpipe-mpich2 and netpipe-openmpi"
    out = tmp_path / "np"
    run = subprocess.run([sys.executable, "-m", "waitscope", "trace", "--profile", "-o", str(out), "--",
                          *mpi_command(mpi, 2, [program, "-u", "1024", "-n", "10"])],
                         env=environment(mpi, python=True), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    sizes = {int(b): int(t) for b, t in LINE.findall(run.stdout + run.stderr)}  # NetPIPE reports on stderr
    assert len(sizes) > 10 and max(sizes) >= 1024, run.stdout

    trace = waitscope.open(out)
    received = [collections.Counter(int(b) for k, b in zip(m["kind"], m["bytes"]) if k == "recv")
                for m in (trace.messages(loc) for loc in range(trace.n_locations))]
    sent = [collections.Counter(int(b) for k, b in zip(m["kind"], m["bytes"]) if k == "send")
            for m in (trace.messages(loc) for loc in range(trace.n_locations))]
    assert sent[0] == received[1] and sent[1] == received[0]
    for size, times in sizes.items():
        if size not in (1, 4):
            assert received[0][size] == received[1][size] == TRIALS * times, (size, received)

    result = trace.analyze()
    profile = waitscope.open_profile(out)
    visits = result.by_callpath("visits")
    for function in ("MPI_Send", "MPI_Recv"):
        calls = sum(int(sum(e.count)) for e in profile.entries
                    if profile.callpath_names[e.callpath].rsplit("/", 1)[-1] == function)
        traced = sum(visits[i] for i, n in enumerate(result.callpath_names) if n.rsplit("/", 1)[-1] == function)
        assert calls == traced == sum(sent[0].values()) + sum(sent[1].values()), function
    # a stripped binary: main is found from its entry code, its other
    # functions are named by the binary and the start of each
    binary = Path(program).name
    mpi_paths = [n for n in result.callpath_names if n.rsplit("/", 1)[-1].startswith("MPI_")]
    assert mpi_paths and all(n.startswith("main/") or "/main/" in n for n in mpi_paths), mpi_paths
    frames = {f for n in mpi_paths for f in n.split("/")[n.split("/").index("main") + 1:-1]}
    assert frames and all(re.fullmatch(re.escape(binary) + r"\+0x[0-9a-f]+", f) for f in frames), frames
    printed = subprocess.run(["otf2-print", str(out / "traces.otf2")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr[-2000:]


# LAMMPS's Lennard-Jones benchmark (bench/in.lj of its sources), smaller
LJ = """
units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 10 0 10 0 10
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
run 100
"""


def test_lammps(tmp_path: Path):
    """Debian's LAMMPS (Open MPI): a stripped /usr/bin/lmp whose code is in
    /usr/lib/x86_64-linux-gnu/liblammps.so.0.  The call paths start at the
    executable's main (found from its entry code) and name LAMMPS's
    functions from the library's exported symbols; the samples between MPI
    calls find the pair force computation, which calls no MPI."""
    program = shutil.which("lmp")
    assert program is not None, "lmp is missing: .ci/setup installs lammps"
    (tmp_path / "in.lj").write_text(LJ)
    out = tmp_path / "lj"
    run = subprocess.run([sys.executable, "-m", "waitscope", "trace", "-o", str(out), "--",
                          *mpi_command("openmpi", 2, [program, "-in", "in.lj", "-log", "none"])],
                         env=dict(environment("openmpi", python=True), WAITSCOPE_SAMPLING="1"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    steps = re.search(r"Loop time of [0-9.e+-]+ on 2 procs for (\d+) steps", run.stdout)
    assert steps and int(steps.group(1)) == 100, run.stdout
    names = waitscope.open(out).analyze().callpath_names
    mpi_paths = [n for n in names if n.rsplit("/", 1)[-1].startswith("MPI_")]
    assert mpi_paths and all(n.split("/")[0] == "main" or n.split("/")[1:2] == ["main"] for n in mpi_paths), names
    # every MPI call is made from LAMMPS code, which the paths name, but for
    # those lmp's main makes itself (MPI_Init, MPI_Barrier, MPI_Finalize)
    outside = [n for n in mpi_paths if "LAMMPS_NS::" not in n]
    assert all(n.split("/")[-2] == "main" for n in outside) and len(outside) <= 4, outside
    assert len(mpi_paths) - len(outside) > 20
    assert any(n.endswith("LAMMPS_NS::Verlet::run/LAMMPS_NS::CommBrick::forward_comm/MPI_Send") or
               n.endswith("LAMMPS_NS::Verlet::run/LAMMPS_NS::CommBrick::forward_comm/MPI_Sendrecv") for n in names)
    assert any(n.endswith("LAMMPS_NS::Verlet::run/LAMMPS_NS::PairLJCut::compute") for n in names), names
