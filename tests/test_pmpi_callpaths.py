"""Call paths of the interposition library in stack mode: where the
computation between MPI calls is charged (the frames both calls share;
samples of the stack between calls), stripped programs and libraries
(exported symbols, separate debugging information, object+offset), the
cache of the last stack walk, and the line saying how call paths were
made.  Helpers come from test_pmpi (the tests directory is on sys.path).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import waitscope
from test_pmpi import LATE_SENDER, MPIS, compile_program, launcher, profile_entries, run
from conftest import relative_names

pytestmark = pytest.mark.skipif(not MPIS, reason="no MPI with an interposition library")


COMPUTE_THEN_CALL = r"""
    #include <mpi.h>
    #include <time.h>
    static double now(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec + 1e-9 * t.tv_nsec;
    }
    static void spin(double seconds) { double t0 = now(); while (now() - t0 < seconds) ; }
    static void exchange(int rank) {
        int v = rank, w;
        MPI_Sendrecv(&v, 1, MPI_INT, 1 - rank, 0, &w, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    /* rank 0 computes longer: rank 1 waits for it in residual's MPI_Allreduce */
    static void compute_interior(int rank) { spin(rank == 0 ? COMPUTE0 : COMPUTE1); }
    static double residual(double x) {
        double r;
        MPI_Allreduce(&x, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        return r;
    }
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        for (int it = 0; it < 3; it++) {
            EXCHANGE
            compute_interior(rank);
            residual(1.0);
        }
        MPI_Finalize();
        return 0;
    }
"""


def compute_then_call(exchange: bool) -> str:
    return (COMPUTE_THEN_CALL.replace("COMPUTE0", "0.12").replace("COMPUTE1", "0.02")
            .replace("EXCHANGE", "exchange(rank);" if exchange else ""))


def test_computation_goes_to_the_frames_both_calls_share(tmp_path: Path) -> None:
    """Stack mode: the computation between exchange's MPI_Sendrecv and
    residual's MPI_Allreduce (compute_interior, which never calls MPI) is
    charged to main, the frame both calls share: never to residual, which
    only the later call shows, nor to exchange, which only the earlier one
    shows; so are the critical path and the delay costs.  (Without the
    samples of the stack between MPI calls, which would find compute_interior.)"""
    mpi = MPIS[0]
    exe = compile_program(tmp_path, mpi, compute_then_call(exchange=True))
    out = tmp_path / "out"
    run(mpi, 2, [str(exe)], trace=out, callpath="stack", extra_env={"WAITSCOPE_SAMPLING": "0"})
    r = waitscope.open(out).analyze(critical_path=True, delay_model="proportional")
    computed = 3 * 0.12
    assert r.get("time", "main", 0) == pytest.approx(computed, rel=0.1)
    for frame in ("main/residual", "main/exchange"):
        assert r.get("time", frame, 0) < 0.01 * computed
        assert r.get("critical_path", frame).sum() < 0.01 * computed
        assert r.get("delay", frame).sum() < 0.01 * computed
    assert r.get("critical_path", "main").sum() > 0.8 * computed
    # rank 1 waited for rank 0's extra computation: its cause is in main
    assert r.get("mpi_wait_nxn", "main/residual/MPI_Allreduce", 1) > 0.8 * 3 * 0.10
    assert r.get("delay", "main", 0) > 0.8 * 3 * 0.10


@pytest.mark.parametrize("mpi", MPIS)
def test_samples_find_the_function_that_computed(mpi: str, tmp_path: Path) -> None:
    """A loop of compute_interior(); residual(); where only residual calls
    MPI: every MPI call shows main/residual, the samples of the stack taken
    between the calls (every 5 ms of CPU time by default) show where the
    time went: the time, the critical path and the delay costs land under
    compute_interior, none on residual."""
    exe = compile_program(tmp_path, mpi, compute_then_call(exchange=False))
    out = tmp_path / "out"
    run(mpi, 2, [str(exe)], trace=out)
    r = waitscope.open(out).analyze(critical_path=True, delay_model="proportional")
    computed, extra = 3 * 0.12, 3 * 0.10
    below = r.callpath_index("main/compute_interior")
    # from the first sample in each computation to the last: all of it but
    # up to about two sampling periods each (more when the machine is busy
    # and the thread's CPU time lags); the rest goes to main, which both the
    # samples and the MPI calls show
    sampled = r.inclusive("time")[below, 0]
    assert 0.75 * computed < sampled <= 1.02 * computed
    assert sampled + r.get("time", "main", 0) == pytest.approx(computed, abs=0.1 * computed + 0.05)
    assert r.inclusive("critical_path")[below].sum() > 0.8 * computed
    assert r.inclusive("delay")[below, 0] > 0.8 * extra
    # (rank 1 computes 20 ms at a time: on a loaded machine it may get less
    # than one period of CPU in it, and no sample; rank 0 computes 120 ms)
    for metric in ("time", "critical_path", "delay"):
        assert r.get(metric, "main/residual", 0) < 0.01 * computed
    assert r.get("mpi_wait_nxn", "main/residual/MPI_Allreduce", 1) > 0.8 * extra


SOLVER_LIB = r"""
    #include <mpi.h>
    #include <unistd.h>
    static void halo_recv(int rank, double *buf) {   /* not exported */
        if (rank == 0) {
            usleep(100000);
            MPI_Send(buf, 100, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
        } else {
            MPI_Recv(buf, 100, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    void solver_step(int rank, double *buf) { halo_recv(rank, buf); }
"""

SOLVER_APP = r"""
    #include <mpi.h>
    void solver_step(int rank, double *buf);
    static double buf[100];
    static void run_steps(int rank) { for (int i = 0; i < 2; i++) solver_step(rank, buf); }
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        run_steps(rank);
        MPI_Finalize();
        return 0;
    }
"""


def _function_at(binary: Path, offset: str) -> str:
    """The function addr2line finds at an offset of an unstripped binary."""
    out = subprocess.run(["addr2line", "-f", "-e", str(binary), offset], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


@pytest.mark.parametrize("debug", ["none", "separate"])
def test_stripped_program_and_library(debug: str, tmp_path: Path) -> None:
    """A stripped executable whose code lives in a stripped shared library,
    as distributions build programs: main is found from the entry code,
    exported functions from .dynsym, the others named object+offset of their
    start (what addr2line finds there in the unstripped build), or by name
    from separate debugging information (GNU debuglink next to the
    executable, the library's under DIR/.build-id/ of WAITSCOPE_DEBUG_DIRS);
    no frame is dropped."""
    mpi = MPIS[0]
    (tmp_path / "solver.c").write_text(textwrap.dedent(SOLVER_LIB))
    (tmp_path / "app.c").write_text(textwrap.dedent(SOLVER_APP))
    cc = f"mpicc.{mpi}"
    subprocess.run([cc, "-O0", "-g", "-fPIC", "-shared", "-o", "libsolver.so", "solver.c"], cwd=tmp_path, check=True)
    subprocess.run([cc, "-O0", "-g", "-o", "app", "app.c", "-L.", "-lsolver", "-Wl,-rpath,$ORIGIN"], cwd=tmp_path,
                   check=True)
    for name in ("app", "libsolver.so"):
        shutil.copy(tmp_path / name, tmp_path / (name + ".full"))
        subprocess.run(["strip", name], cwd=tmp_path, check=True)
    extra = {"WAITSCOPE_SAMPLING": "0"}
    if debug == "separate":
        subprocess.run(["objcopy", "--only-keep-debug", "app.full", "app.debug"], cwd=tmp_path, check=True)
        subprocess.run(["objcopy", "--add-gnu-debuglink=app.debug", "app"], cwd=tmp_path, check=True)
        notes = subprocess.run(["readelf", "-n", "libsolver.so.full"], cwd=tmp_path, capture_output=True, text=True,
                               check=True).stdout
        build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
        where = tmp_path / "debug" / ".build-id" / build_id[:2]
        where.mkdir(parents=True)
        subprocess.run(["objcopy", "--only-keep-debug", "libsolver.so.full", str(where / (build_id[2:] + ".debug"))],
                       cwd=tmp_path, check=True)
        extra["WAITSCOPE_DEBUG_DIRS"] = str(tmp_path / "nowhere") + ":" + str(tmp_path / "debug")
    out = tmp_path / "out"
    run(mpi, 2, [str(tmp_path / "app")], trace=out, extra_env=extra)
    r = waitscope.open(out).analyze()
    recv = [n for n in relative_names(r) if n.endswith("/MPI_Recv")]
    assert len(recv) == 1, r.callpath_names
    frames = recv[0].split("/")[:-1]
    assert len(frames) == 4 and frames[0] == "main" and frames[2] == "solver_step", frames
    if debug == "none":
        (app, run_steps), (lib, halo) = (f.split("+") for f in (frames[1], frames[3]))
        assert (app, lib) == ("app", "libsolver.so")
        assert _function_at(tmp_path / "app.full", run_steps) == "run_steps"
        assert _function_at(tmp_path / "libsolver.so.full", halo) == "halo_recv"
    else:
        assert frames == ["main", "run_steps", "solver_step", "halo_recv"]
    assert r.get("mpi_latesender", recv[0], 1) > 0.9 * 2 * 0.1


SAME_LEAF = r"""
    #include <mpi.h>
    static void __attribute__((noinline)) leaf(int k) {
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, k, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    static void __attribute__((noinline)) left(int k) { leaf(k); __asm__ volatile("" ::: "memory"); }
    static void __attribute__((noinline)) right(int k) { leaf(k); __asm__ volatile("" ::: "memory"); }
    static void __attribute__((noinline)) down(int d, int k) {
        if (d > 0) down(d - 1, k); else leaf(k);
        __asm__ volatile("" ::: "memory");
    }
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        for (int i = 0; i < 30; i++) {
            if (i % 3 == 0) left(1);
            else if (i % 3 == 1) right(2);
            else down(i % 4, 3);   /* i = 2, 5, 8, ...: depths 2, 1, 0, 3 in turn */
        }
        MPI_Finalize();
        return 0;
    }
"""


def test_stack_cache_tells_call_sites_apart(tmp_path: Path) -> None:
    """The cache of the last stack walk (stackwalk.c) never gives one call
    path for another: the same MPI call site reached through different
    functions at the same depth, and through recursion of varying depth,
    alternating call by call, gets each path's exact number of visits."""
    mpi = MPIS[0]
    exe = compile_program(tmp_path, mpi, SAME_LEAF, flags=("-O2", "-g", "-fno-ipa-icf", "-fno-ipa-cp"))
    out = tmp_path / "out"
    run(mpi, 1, [str(exe)], trace=out, profile=out, extra_env={"WAITSCOPE_SAMPLING": "0"})
    r = waitscope.open(out).analyze()
    visits = {rel: int(r.get("visits", n).sum())
              for n, rel in zip(r.callpath_names, relative_names(r)) if n.endswith("/MPI_Iprobe")}
    expected = {"main/left/leaf/MPI_Iprobe": 10, "main/right/leaf/MPI_Iprobe": 10}
    for i in range(2, 30, 3):
        path = "main/" + "/".join(["down"] * (i % 4 + 1)) + "/leaf/MPI_Iprobe"
        expected[path] = expected.get(path, 0) + 1
    assert visits == expected
    doc, entries = profile_entries(out)
    assert {k[0]: v["count"][0] for k, v in entries.items() if k[1] == "MPI_Iprobe"} == expected


def test_the_report_says_how_call_paths_were_made(tmp_path: Path) -> None:
    from waitscope.cli_measure import describe_callpaths

    mpi = MPIS[0]
    plain = compile_program(tmp_path, mpi, LATE_SENDER, name="plain")
    hooks = compile_program(tmp_path, mpi, LATE_SENDER, name="hooks", flags=("-O0", "-finstrument-functions"))
    command = launcher(mpi, 2)
    assert "exact, from the -finstrument-functions hooks" in describe_callpaths(command + [str(hooks)], {})
    assert "samples of it every 5 ms" in describe_callpaths(command + [str(plain)], {})
    assert "samples of it every 2 ms" in describe_callpaths(command + [str(plain)], {"WAITSCOPE_SAMPLING": "2"})
    without = describe_callpaths(command + [str(plain)], {"WAITSCOPE_SAMPLING": "0"})
    assert "without samples" in without and "functions both calls share" in without
    assert "samples" in describe_callpaths(command + [str(hooks)], {"WAITSCOPE_CALLPATH": "stack"})
