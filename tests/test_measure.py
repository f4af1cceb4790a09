"""Measuring real MPI programs: ``waitscope trace --profile`` on the examples
(examples/) under MPICH and Open MPI, checked against the waiting the
programs inject and against seed 003's accuracy.

Every example prints, from rank 0, a line ``waitscope-expected
METRIC=SECONDS ...``: the waiting its imbalance caused, by Scalasca's
definitions, from stamps (CLOCK_MONOTONIC, one clock on the node) that
every rank takes itself around its MPI calls and gathers after the loop
(each program's header gives the formula and the nominal value).  The
trace analysis must find that amount within 2 %.

The profile's estimates are compared with the trace analysis per call
path.  Seed 003's accuracy (Recv and Wait within 2 percentage points of
wait ratio, Wait at N x N within 0.5) was found on dedicated cluster
nodes; with more ranks than cores the durations the profile sees include
scheduling delays after the waiting ends (MPI busy-polls), which the
trace's definitions do not count, and any other work on the machine
(even with a core per rank) does the same.  So the seed's bounds, and the
nominal imbalance each program injects, are asserted with
WAITSCOPE_STRICT_ACCURACY=1 (for runs on an otherwise idle machine) on
runs with a core per rank
(bench/bench_measure.py prints the differences either way; on this
two-core machine, idle, every run with two ranks meets them).  Always asserted: the rows exist; and with a
core per rank, for the Late Sender and N x N functions, the estimate is
at least the trace's waiting less 2 points (the minimum method
overestimates, as the seed found; Late Receiver in MPI_Send, which a
trace finds, has no estimate).  With more ranks than cores not even that
holds every time (3 ranks on 2 cores, master_worker: 4.9 points under in
about one run of ten on a busy machine): a descheduled process moves the
durations the profile and the trace see by different amounts.

These tests run only where the interposition library was built (they skip
when its file is absent).  Keep the runs small: the machine has 2 cores.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import waitscope
from waitscope import pmpi
from waitscope._parallel import LAUNCHERS
from waitscope.profile import LATE_SENDER_FUNCTIONS
from conftest import relative_names

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

ABORT_PROGRAM = r"""
#include <mpi.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 5);
    sleep(5);
    MPI_Finalize();
    return 0;
}
"""

EXIT_PROGRAM = r"""
#include <mpi.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 3;
}
"""


def library(mpi: str) -> str | None:
    """The interposition library built for `mpi`, or None."""
    return pmpi.library_path(mpi) if mpi in pmpi.available() else None


def launcher(mpi: str, n: int) -> list[str]:
    """Debian's launcher of `mpi` for `n` processes (waitscope._parallel.LAUNCHERS)."""
    return [*LAUNCHERS[mpi][0], "-n", str(n)]


SANITIZERS = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p.endswith("san.so")]
"""Sanitizer runtimes preloaded into this Python (.ci/sanitize): they test the analysis
kernel, not the MPI libraries (Open MPI itself trips ASan), so MPI processes run without them."""


def environment(mpi: str, python: bool = False) -> dict[str, str]:
    """The environment the launcher of `mpi` needs (Open MPI: running as root), for MPI
    processes (no sanitizer runtimes), or with `python` for a Python that imports
    waitscope (it keeps them; the MPI command then comes from :func:`mpi_command`)."""
    env = dict(os.environ, WAITSCOPE_MPI=mpi, **LAUNCHERS[mpi][1])
    if not python:
        kept = [p for p in env.pop("LD_PRELOAD", "").split(":") if p and p not in SANITIZERS]
        if kept:
            env["LD_PRELOAD"] = ":".join(kept)
    return env


def mpi_command(mpi: str, n: int, program: list[str]) -> list[str]:
    """The MPI command `waitscope trace` runs; with sanitizer runtimes preloaded, through
    ``env`` so that the MPI processes preload the interposition library alone."""
    command = launcher(mpi, n) + program
    if SANITIZERS:
        command = ["env", f"LD_PRELOAD={library(mpi)}"] + command
    return command


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def mpi(request) -> str:
    name = request.param
    if library(name) is None:
        pytest.skip(f"the interposition library for {name} is not built")
    if shutil.which(f"mpicc.{name}") is None:
        pytest.skip(f"mpicc.{name} is not installed")
    subprocess.run(["make", "-s", "-C", str(EXAMPLES), name], check=True)
    return name


def measure(mpi: str, n: int, program: list[str], out: Path, profile: bool = True) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "waitscope", "trace", "-o", str(out)] + (["--profile"] if profile else []) \
        + ["--"] + mpi_command(mpi, n, program)
    return subprocess.run(command, env=environment(mpi, python=True), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def printed(stdout: str, label: str) -> dict[str, float]:
    """The values of the line ``LABEL METRIC=SECONDS ...`` an example prints."""
    line = next((l for l in stdout.splitlines() if l.startswith(label + " ")), None)
    assert line is not None, stdout
    return {k: float(v) for k, v in (item.split("=") for item in line.split()[1:])}


def expected(stdout: str, ranks: int) -> dict[str, float]:
    """The waiting the ranks measured themselves; with
    WAITSCOPE_STRICT_ACCURACY=1 it must also be the nominal imbalance the
    program injects, within 5 % (or 1 ms): on an idle machine with a core
    per rank they agree (halo2d -m wait, 2 ranks: 0.0795 s measured, 0.080 s
    injected), but other work on the machine stretches the sleeps."""
    measured = printed(stdout, "waitscope-expected")
    if strict(ranks):
        nominal = printed(stdout, "waitscope-nominal")
        for metric, value in nominal.items():
            assert close(measured[metric], value, rel=0.05), (metric, measured, nominal)
    return measured


def total_wait(result: waitscope.AnalysisResult, metric: str, function: str | None = None) -> float:
    values = result.by_callpath(metric)
    return float(sum(v for name, v in zip(result.callpath_names, values)
                     if function is None or name.rsplit("/", 1)[-1] == function))


def rows(table) -> list[dict]:
    return table.to_dict("records") if hasattr(table, "to_dict") else list(table)


def strict(ranks: int) -> bool:
    """Whether the seed's bounds and the nominal imbalance are asserted (module docstring)."""
    return os.environ.get("WAITSCOPE_STRICT_ACCURACY") == "1" and ranks <= len(os.sched_getaffinity(0))


def check_accuracy(profile: waitscope.Profile, result: waitscope.AnalysisResult) -> list[dict]:
    """Seed 003's accuracy: Recv, Wait within 2 points, N x N within 0.5 (Waitall is not held to it);
    asserted where :func:`strict` says so."""
    table = rows(profile.compare(result, as_pandas=False))
    assert profile.calibration is not None  # the library measured the no-wait durations
    for row in table:
        if (row["metric"] == "mpi_wait_nxn" or row["function"] in LATE_SENDER_FUNCTIONS) and \
                profile.ranks <= len(os.sched_getaffinity(0)):
            assert row["difference"] >= -2.0, row
            assert row["calibrated_difference"] >= -2.0, row
        if not strict(profile.ranks):
            continue
        if row["metric"] == "mpi_wait_nxn":
            assert abs(row["difference"]) <= 0.5 and abs(row["calibrated_difference"]) <= 0.5, row
        elif row["function"] in ("MPI_Recv", "MPI_Wait"):
            assert abs(row["difference"]) <= 2.0 and abs(row["calibrated_difference"]) <= 2.0, row
    return table


def run_example(mpi: str, n: int, program: list[str], tmp_path: Path):
    out = tmp_path / "m"
    proc = measure(mpi, n, program, out)
    assert proc.returncode == 0, proc.stderr
    assert "trace written to" in proc.stderr and "profile written to" in proc.stderr, proc.stderr
    assert "cut short" not in proc.stderr
    trace = waitscope.open(out / "traces.otf2")
    assert sorted({loc.rank for loc in trace.locations}) == list(range(n))
    if shutil.which("otf2-print"):
        printed = subprocess.run(["otf2-print", str(out / "traces.otf2")], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, timeout=120)
        assert printed.returncode == 0, printed.stderr[-2000:]
    result = trace.analyze()
    profile = waitscope.open_profile(out)
    assert profile.ranks == n
    mpi_paths = [p for p in profile.callpath_names if p.rsplit("/", 1)[-1].startswith("MPI_")]
    assert mpi_paths and all(p in relative_names(result) for p in mpi_paths), (mpi_paths, result.callpath_names)
    return expected(proc.stdout, n), result, profile


def close(measured: float, injected: float, rel: float = 0.02, abs_: float = 0.001) -> bool:
    return abs(measured - injected) <= max(rel * injected, abs_)


@pytest.mark.parametrize("n, mode", [(2, "waitall"), (2, "wait"), (3, "wait"), (4, "waitall")])
def test_halo2d_late_sender(mpi, n, mode, tmp_path):
    exp, result, profile = run_example(mpi, n, [str(EXAMPLES / f"halo2d.{mpi}"), "-m", mode], tmp_path)
    function = "MPI_Waitall" if mode == "waitall" else "MPI_Wait"
    ls = total_wait(result, "mpi_latesender", function)
    assert close(ls, exp["mpi_latesender"]), (ls, exp)
    assert any(p.endswith("solver/exchange_halos/" + function) for p in result.callpath_names), \
        result.callpath_names
    table = check_accuracy(profile, result)
    assert any(r["function"] == function and r["metric"] == "mpi_latesender" for r in table), table
    if mode == "waitall":
        assert any(p.endswith("/MPI_Waitall") for p in profile.estimates().unreliable)


@pytest.mark.parametrize("n", [2, 4])
def test_wavefront_late_sender(mpi, n, tmp_path):
    exp, result, profile = run_example(mpi, n, [str(EXAMPLES / f"wavefront.{mpi}")], tmp_path)
    ls = total_wait(result, "mpi_latesender", "MPI_Recv")
    assert close(ls, exp["mpi_latesender"]), (ls, exp)
    assert any(p.endswith("sweep/receive_faces/MPI_Recv") for p in result.callpath_names)
    check_accuracy(profile, result)


def test_static_imbalance_calibrated_estimate(mpi, tmp_path):
    """The static-imbalance example: 2 ranks, rank 0 computes 15 ms more in every
    block, so rank 1 waits about 15 ms in every MPI_Recv (the program measures how
    long).  The seed method finds no receive that did not wait and takes the waiting
    for processing time; the calibrated estimate measures against the no-wait
    duration of the receive, measured at MPI_Finalize, and comes within 2 points of
    the trace (asserted where strict(2): two idle cores; on a loaded machine the
    scheduler lets some receives find their message there).  Open MPI's sends block in
    this configuration (Late Receiver in the trace), which the program's nominal model
    does not cover: the waiting it measured is the reference."""
    out = tmp_path / "m"
    proc = measure(mpi, 2, [str(EXAMPLES / f"wavefront.{mpi}"), "-s", "fixed=0", "-x", "15", "-w", "1"], out)
    assert proc.returncode == 0, proc.stderr
    result, profile = waitscope.open(out).analyze(), waitscope.open_profile(out)
    measured = printed(proc.stdout, "waitscope-expected")
    assert close(total_wait(result, "mpi_latesender", "MPI_Recv"), measured["mpi_latesender"]), measured
    assert profile.calibration and ("MPI_Recv", 9) in profile.calibration  # 512-byte faces
    row = next(r for r in rows(profile.compare(result, as_pandas=False))
               if r["metric"] == "mpi_latesender" and r["function"] == "MPI_Recv")
    assert row["trace_ratio"] > 15.0, row
    assert row["calibrated_difference"] >= -2.0, row
    assert row["calibrated_wait"] >= row["profile_wait"], row
    if strict(2):
        # on an idle machine every receive of rank 1 waits: the seed estimate misses most of it
        assert row["difference"] < -10.0, row
        assert abs(row["calibrated_difference"]) <= 2.0, row
    # the no-wait receive takes microseconds, not the 15 ms the fastest receive took
    cal = profile.calibration[("MPI_Recv", 9)]
    assert cal.samples[1] >= 8 and cal.median[1] < 1e-3


@pytest.mark.parametrize("n", [2, 4])
def test_timestep_wait_nxn(mpi, n, tmp_path):
    exp, result, profile = run_example(mpi, n, [str(EXAMPLES / f"timestep.{mpi}")], tmp_path)
    assert close(total_wait(result, "mpi_wait_nxn", "MPI_Allreduce"), exp["mpi_wait_nxn@MPI_Allreduce"])
    assert close(total_wait(result, "mpi_wait_nxn", "MPI_Alltoall"), exp["mpi_wait_nxn@MPI_Alltoall"])
    table = check_accuracy(profile, result)
    assert {r["function"] for r in table if r["metric"] == "mpi_wait_nxn"} >= {"MPI_Allreduce", "MPI_Alltoall"}


@pytest.mark.parametrize("n", [2, 3])
def test_master_worker_rooted_collectives(mpi, n, tmp_path):
    exp, result, profile = run_example(mpi, n, [str(EXAMPLES / f"master_worker.{mpi}")], tmp_path)
    assert close(total_wait(result, "mpi_latebroadcast"), exp["mpi_latebroadcast"]), exp
    assert close(total_wait(result, "mpi_earlyreduce", "MPI_Reduce"), exp["mpi_earlyreduce"]), exp
    check_accuracy(profile, result)
    # the rooted collectives' estimates (seed 003 section 3.3 gives no bound) are compared
    table = rows(profile.compare(result, threshold=0.0, as_pandas=False))
    compared = {(r["metric"], r["function"]) for r in table}
    assert {("mpi_latebroadcast", "MPI_Bcast"), ("mpi_earlyreduce", "MPI_Reduce")} <= compared, table
    # the master's receives from MPI_ANY_SOURCE are matched: one message per request and answer
    assert result.total("comms_recv") > 0


def test_mpi4py_program(tmp_path):
    if library("mpich") is None:
        pytest.skip("the interposition library for mpich is not built")
    pytest.importorskip("mpi4py")
    exp, result, profile = run_example("mpich", 2, [sys.executable, str(EXAMPLES / "halo1d_mpi4py.py")], tmp_path)
    assert close(total_wait(result, "mpi_latesender"), exp["mpi_latesender"]), exp
    check_accuracy(profile, result)


def _compile(mpi: str, source: str, tmp_path: Path, name: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    exe = tmp_path / name
    subprocess.run([f"mpicc.{mpi}", "-o", str(exe), str(src)], check=True)
    return exe


def test_exit_status_passes_through(mpi, tmp_path):
    exe = _compile(mpi, EXIT_PROGRAM, tmp_path, "exit3")
    proc = measure(mpi, 2, [str(exe)], tmp_path / "m")
    assert proc.returncode == 3, proc.stderr
    assert "trace written to" in proc.stderr and "ended with status 3" in proc.stderr
    waitscope.open(tmp_path / "m" / "traces.otf2")


def test_abort_leaves_a_trace_reported_as_cut_short(mpi, tmp_path):
    exe = _compile(mpi, ABORT_PROGRAM, tmp_path, "abort")
    plain = subprocess.run(launcher(mpi, 2) + [str(exe)], env=environment(mpi), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
    proc = measure(mpi, 2, [str(exe)], tmp_path / "m")
    assert proc.returncode == plain.returncode != 0, proc.stderr
    assert "cut short" in proc.stderr, proc.stderr
    with pytest.raises(waitscope.TraceError, match=r"(?i)rank"):
        waitscope.open(tmp_path / "m" / "traces.otf2")
