"""MPI programs nobody here wrote, as Debian packages them, measured
without recompiling with ``waitscope trace --profile``: NetPIPE (a
ping-pong over growing message sizes) under each MPI, LAMMPS (C++), and two
Fortran codes, Quantum ESPRESSO's pw.x and Elk (both Open MPI).  Debian's
binaries are stripped (no debugging package is reachable here), so their
functions are named by the binary and the start of each; the tests check
those starts against the binary's own unwind tables (readelf).

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
from conftest import relative_names
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


# ---- Fortran: Quantum ESPRESSO and Elk -----------------------------------------------


def function_starts(binary: str) -> set[int]:
    """The start of every function the binary's .eh_frame describes (readelf)."""
    text = subprocess.run(["readelf", "--debug-dump=frames", binary], capture_output=True, text=True,
                          check=True).stdout
    return {int(m, 16) for m in re.findall(r" FDE cie=\w+ pc=([0-9a-f]+)\.\.", text)}


def check_app_frames(names: list[str], binary: str) -> list[str]:
    """Every MPI call but those of the program's own main is reached through
    functions of `binary`, named binary+offset at the start of a function
    (other frames: libraries the binary links, such as ScaLAPACK, named by
    their exported symbols); returns the MPI call paths."""
    base = Path(binary).name
    starts = function_starts(binary)
    mpi_paths = [n for n in names if n.rsplit("/", 1)[-1].startswith("MPI_")]
    assert mpi_paths
    inside = 0
    for n in mpi_paths:
        frames = n.split("/")
        assert "main" in frames, n
        frames = frames[frames.index("main") + 1:-1]
        inside += bool(frames) and frames[0].startswith(base + "+0x")
        for f in frames:
            m = re.fullmatch(re.escape(base) + r"\+0x([0-9a-f]+)", f)
            assert (m and int(m.group(1), 16) in starts) or (not m and "+0x" not in f), (f, n)
    assert inside >= len(mpi_paths) - 2, mpi_paths  # at most MPI_Finalize (and MPI_Init) from main itself
    return mpi_paths


def check_profile_counts(out: Path, result) -> None:
    """The profile of the same run counts, per MPI function, the calls the trace has."""
    profile = waitscope.open_profile(out)
    counts: collections.Counter = collections.Counter()
    for e in profile.entries:
        counts[e.function] += int(sum(e.count))
    visits = result.by_callpath("visits")
    traced: collections.Counter = collections.Counter()
    for i, n in enumerate(result.callpath_names):
        if n.rsplit("/", 1)[-1] in counts:
            traced[n.rsplit("/", 1)[-1]] += int(visits[i])
    assert counts and counts == traced


def run_openmpi_app(tmp_path: Path, program: list[str], out: Path) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "waitscope", "trace", "--profile", "-o", str(out), "--",
                          *mpi_command("openmpi", 2, program)],
                         env=dict(environment("openmpi", python=True), OMP_NUM_THREADS="1"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


# a norm-conserving silicon pseudopotential (Troullier-Martins, LDA), made by
# Quantum ESPRESSO's own atomic code ld1.x: Debian ships no pseudopotential
# with the program
LD1 = """&input
   title='Si', zed=14.0, rel=0, config='[Ne] 3s2 3p2', iswitch=3, dft='PZ'
/
&inputp
   pseudotype=1, file_pseudopw='Si.pz-tm.UPF', author='waitscope test', lloc=1, tm=.true.
/
2
3S  1  0  2.00  0.00  2.00  2.00  0.0
3P  2  1  2.00  0.00  2.00  2.00  0.0
"""

# bulk silicon, 2 atoms, self-consistent field
PW = """&control
   calculation='scf', prefix='si', pseudo_dir='./', outdir='./tmp'
/
&system
   ibrav=2, celldm(1)=10.20, nat=2, ntyp=1, ecutwfc=14.0
/
&electrons
   conv_thr=1.0d-8
/
ATOMIC_SPECIES
 Si 28.086 Si.pz-tm.UPF
ATOMIC_POSITIONS alat
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS automatic
 4 4 4 1 1 1
"""


def test_quantum_espresso(tmp_path: Path):
    """Debian's pw.x (Fortran, Open MPI, stripped) on 2 ranks, the plane
    waves distributed over both (G-space): each 3D FFT transposes the data
    with MPI_Alltoall.  Quantum ESPRESSO counts the calls of its FFT
    transpose itself (the `fft_scatt_yz` line of its timing report, rank
    0): the trace has exactly as many MPI_Alltoall through the function
    that makes them, on each rank."""
    program = shutil.which("pw.x")
    assert program is not None, "pw.x is missing: .ci/setup installs quantum-espresso"
    (tmp_path / "si.ld1").write_text(LD1)
    with open(tmp_path / "si.ld1") as stdin:
        subprocess.run(["ld1.x"], stdin=stdin, cwd=tmp_path, capture_output=True, check=True, timeout=60)
    (tmp_path / "si.in").write_text(PW)
    out = tmp_path / "pw"
    run = run_openmpi_app(tmp_path, [program, "-in", "si.in"], out)
    assert "convergence has been achieved" in run.stdout, run.stdout[-3000:]
    transposes = re.search(r"fft_scatt_yz\s*:.*\(\s*(\d+) calls\)", run.stdout)
    assert transposes, run.stdout[-3000:]

    trace = waitscope.open(out)
    assert trace.cut_short_ranks == []
    result = trace.analyze()
    names = relative_names(result)
    mpi_paths = check_app_frames(names, program)
    assert len(mpi_paths) > 50
    # the MPI_Alltoall of the FFT transpose: the function that makes most of them
    alltoall = [i for i, n in enumerate(names) if n.endswith("/MPI_Alltoall")]
    visits = result.get("visits")  # [call path, location]
    busiest = max(alltoall, key=lambda i: visits[i].sum())
    transpose = names[busiest].split("/")[-2]
    for loc in range(2):
        assert sum(visits[i][loc] for i in alltoall if names[i].split("/")[-2] == transpose) == \
            int(transposes.group(1)), (loc, transpose)
    check_profile_counts(out, result)


ELK = """tasks
  0

sppath
  '/usr/share/elk-lapw/species/'

avec
  5.13  5.13  0.0
  5.13  0.0   5.13
  0.0   5.13  5.13

atoms
  1
  'Si.in'
  2
  0.0  0.0  0.0   0.0 0.0 0.0
  0.25 0.25 0.25  0.0 0.0 0.0

ngridk
  4 4 4

maxscl
  3
"""


def test_elk(tmp_path: Path):
    """Debian's Elk (Fortran, Open MPI, stripped), bulk silicon on 2 ranks.
    Elk distributes the k-points round-robin over the ranks (k-point k on
    rank (k - 1) mod 2) and, in every self-consistent loop, broadcasts each
    k-point's eigenvalues from the rank that computed them: per rank,
    loops x k-points broadcasts of `valence states` doubles, rooted at
    0, 1, 0, 1, ...  Elk reports the loops, the k-points and the states in
    INFO.OUT."""
    program = shutil.which("elk-lapw")
    assert program is not None, "elk-lapw is missing: .ci/setup installs elk-lapw"
    (tmp_path / "elk.in").write_text(ELK)
    out = tmp_path / "elk"
    run_openmpi_app(tmp_path, [program], out)
    info = (tmp_path / "INFO.OUT").read_text()
    loops = len(re.findall(r"Loop number :\s+\d+", info))
    kpoints = int(re.search(r"Total number of k-points :\s+(\d+)", info).group(1))
    states = int(re.search(r"Total number of valence states :\s+(\d+)", info).group(1))
    assert loops == 3 and kpoints > 2

    trace = waitscope.open(out)
    assert trace.cut_short_ranks == []
    result = trace.analyze()
    names = relative_names(trace)
    check_app_frames([n for n in names if n], program)
    for loc in range(2):
        c = trace.collectives(loc)
        paths = trace.events(loc).callpath[c["event"]]
        by_path = collections.defaultdict(list)
        for op, root, path, received in zip(c["op"], c["root"], paths, c["received"]):
            if op == "bcast":
                by_path[names[path]].append((int(root), int(received)))
        eigenvalues = [b for b in by_path.values() if len(b) == loops * kpoints]
        assert len(eigenvalues) == 1, {p: len(b) for p, b in by_path.items()}
        assert eigenvalues[0] == [(k % 2, 8 * states) for k in range(kpoints)] * loops, loc
    check_profile_counts(out, result)
