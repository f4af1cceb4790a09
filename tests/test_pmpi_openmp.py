"""waitscope trace on hybrid MPI+OpenMP programs: OpenMP through OMPT.

Small C and Fortran programs (2 ranks x 2 OpenMP threads, compiled with
GCC's -fopenmp) run under each MPI with the interposition library and
LLVM's libomp, whose OpenMP tools interface the library records the
threads through.  The programs time their own OpenMP synchronization with
CLOCK_MONOTONIC (one clock for every thread and both ranks, on one
machine) and print it: how long each thread arrived before the last one at
an imbalanced parallel region's end, how long each waited for a critical
section and for an OpenMP lock.  The analysis of the trace must find that
waiting: omp_ibarrier_wait, omp_lock_contention_critical and
omp_lock_contention_api per location, within a few milliseconds of what
the program measured itself.  The trace must have what Score-P writes for
such a run (thread locations, team communicators, Process x Thread), and
a program whose OpenMP runtime has no tools interface, or whose OpenMP
recording was turned off, a trace that says so.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import pmpi
from test_pmpi import MPIS, launcher, otf2_print, run

LIBOMP = pmpi.llvm_openmp()
pytestmark = [
    pytest.mark.skipif(not MPIS, reason="no MPI with an interposition library"),
    pytest.mark.skipif(LIBOMP is None, reason="LLVM's OpenMP runtime (libomp-dev) is not installed"),
]

# waiting threads sleep at once: 2 ranks x 2 threads share 2 cores
OMP_ENV = {"OMP_NUM_THREADS": "2", "KMP_BLOCKTIME": "0", "OMP_WAIT_POLICY": "passive"}
# A thread reads the clock, then enters the runtime, whose tools-interface
# callback the trace records; with 4 threads on 2 cores the scheduler may
# run another thread in between, and in a loaded run that gap has reached
# 6.6 ms in 3 iterations.  The waiting itself is 60 ms per iteration (30 ms
# for the locks), so this still tells a wrong attribution from a right one.
MEASURED_ABS = 0.010

HYBRID_C = r"""
    #include <mpi.h>
    #include <omp.h>
    #include <stdio.h>
    #include <time.h>
    #define NITER 3
    static double arrive[NITER][2], creq[NITER][2], cgot[NITER][2], lreq[NITER][2], lgot[NITER][2];
    static omp_lock_t lock;
    static double now(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec + 1e-9 * t.tv_nsec;
    }
    __attribute__((noinline)) static void spin_until(double t) { while (now() < t) ; }
    /* thread t computes until t0 + 20 ms + 60 ms * t: the master waits at the end */
    __attribute__((noinline)) static void imbalanced(int it, double t0) {
        #pragma omp parallel
        {
            int t = omp_get_thread_num();
            spin_until(t0 + 0.020 + 0.060 * t);
            arrive[it][t] = now();
        }
    }
    /* both threads want the critical section at once; each holds it 30 ms */
    __attribute__((noinline)) static void contended(int it, double t0) {
        #pragma omp parallel
        {
            int t = omp_get_thread_num();
            spin_until(t0);
            creq[it][t] = now();
            #pragma omp critical
            {
                cgot[it][t] = now();
                spin_until(cgot[it][t] + 0.030);
            }
        }
    }
    /* the same with an OpenMP lock */
    __attribute__((noinline)) static void locked(int it, double t0) {
        #pragma omp parallel
        {
            int t = omp_get_thread_num();
            spin_until(t0);
            lreq[it][t] = now();
            omp_set_lock(&lock);
            lgot[it][t] = now();
            spin_until(lgot[it][t] + 0.030);
            omp_unset_lock(&lock);
        }
    }
    int main(int argc, char **argv) {
        int provided, rank;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        omp_init_lock(&lock);
        double T0 = now() + 0.05;
        MPI_Bcast(&T0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        for (int it = 0; it < NITER; it++) {
            double t0 = T0 + 0.3 * it;
            imbalanced(it, t0);
            contended(it, t0 + 0.12);
            locked(it, t0 + 0.20);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        for (int it = 0; it < NITER; it++)
            for (int t = 0; t < 2; t++)
                printf("times %d %d %d %.9f %.9f %.9f %.9f %.9f\n", rank, it, t, arrive[it][t], creq[it][t],
                       cgot[it][t], lreq[it][t], lgot[it][t]);
        omp_destroy_lock(&lock);
        MPI_Finalize();
        return 0;
    }
"""

HYBRID_F90 = r"""
    program hybrid_f
      use mpi
      use omp_lib
      implicit none
      integer :: ierr, provided, rank, it, t
      double precision :: t0, tt0
      double precision :: arrive(0:1, 3)
      call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
      call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
      tt0 = omp_get_wtime() + 0.05d0
      call MPI_Bcast(tt0, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
      do it = 1, 3
        t0 = tt0 + 0.15d0 * (it - 1)
        !$omp parallel private(t)
        t = omp_get_thread_num()
        call spin_until(t0 + 0.02d0 + 0.06d0 * t)
        arrive(t, it) = omp_get_wtime()
        !$omp end parallel
        call MPI_Barrier(MPI_COMM_WORLD, ierr)
      end do
      do it = 1, 3
        do t = 0, 1
          print '(A,3I4,1X,F24.9)', 'arrive', rank, it - 1, t, arrive(t, it)
        end do
      end do
      call MPI_Finalize(ierr)
    contains
      subroutine spin_until(t)
        double precision, intent(in) :: t
        do while (omp_get_wtime() < t)
        end do
      end subroutine
    end program
"""


def build(tmp: Path, mpi: str, source: str, name: str, fortran: bool = False) -> Path:
    src = tmp / (name + (".f90" if fortran else ".c"))
    src.write_text(textwrap.dedent(source))
    exe = tmp / f"{name}-{mpi}"
    compiler = f"mpif90.{mpi}" if fortran else f"mpicc.{mpi}"
    flags = ["-O1", "-g", "-fopenmp", "-fno-omit-frame-pointer"] + ([] if fortran else ["-rdynamic"])
    subprocess.run([compiler, *flags, "-o", str(exe), str(src)], check=True, capture_output=True)
    return exe


def run_traced(mpi: str, exe: Path, out: Path, openmp: bool = True, strip_libomp: bool = False,
               check: bool = True, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = launcher(mpi, 2) + [str(exe)]
    env = os.environ.copy()
    env.update(OMP_ENV)
    env.update(extra_env or {})
    env = pmpi.environment(cmd, trace_dir=out, base=env, openmp=openmp)
    if strip_libomp:
        env["LD_PRELOAD"] = ":".join(p for p in env["LD_PRELOAD"].split(":") if "libomp" not in p)
    else:
        assert LIBOMP in env["LD_PRELOAD"].split(":") or not openmp
    if mpi == "openmpi" and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    preload = [p for p in env["LD_PRELOAD"].split(":") if p and "san.so" not in p]
    env["LD_PRELOAD"] = ":".join(preload)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def program_times(output: str) -> dict[tuple[int, int, int], list[float]]:
    """(rank, iteration, thread) -> the times the C program printed."""
    out = {}
    for m in re.finditer(r"^times (\d) (\d) (\d) (.*)$", output, re.M):
        out[int(m.group(1)), int(m.group(2)), int(m.group(3))] = [float(v) for v in m.group(4).split()]
    assert len(out) == 12, output
    return out


def per_location(r: waitscope.AnalysisResult, metric: str, path_filter=lambda p: True) -> dict[tuple[int, int], float]:
    """A metric summed over the call paths that pass `path_filter`, per (rank, thread)."""
    cube = r.get(metric)
    out: dict[tuple[int, int], float] = defaultdict(float)
    for i, name in enumerate(r.callpath_names):
        if path_filter(name):
            for j, loc in enumerate(r.trace.locations):
                out[loc.rank, loc.thread] += float(cube[i, j])
    return dict(out)


@pytest.fixture(scope="module", params=MPIS)
def hybrid_run(request, tmp_path_factory):
    mpi = request.param
    tmp = tmp_path_factory.mktemp(f"omp-{mpi}")
    exe = build(tmp, mpi, HYBRID_C, "hybrid")
    out = tmp / "trace"
    proc = run_traced(mpi, exe, out)
    trace = waitscope.open(str(out / "traces.otf2"))
    r = trace.analyze(delay_model="proportional", critical_path=True)
    return mpi, out, trace, r, program_times(proc.stdout)


def test_trace_has_the_threads_as_score_p_writes_them(hybrid_run) -> None:
    mpi, out, trace, r, _ = hybrid_run
    assert trace.openmp_recording.startswith("recorded through OMPT (LLVM OMP")
    assert sorted((loc.rank, loc.thread) for loc in trace.locations) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    text = otf2_print(out)
    # three parallel regions per iteration on each rank, two threads requested
    forks = [line for line in text.splitlines() if line.startswith("THREAD_FORK ")]
    assert len(forks) == 2 * 3 * 3 and all("# Requested Threads: 2" in line for line in forks)
    assert len([line for line in text.splitlines() if line.startswith("THREAD_JOIN ")]) == 18
    begins = [line for line in text.splitlines() if line.startswith("THREAD_TEAM_BEGIN ")]
    assert len(begins) == 2 * 18  # every thread of every team
    # one team communicator per process, its master first
    defs = subprocess.run(["otf2-print", "-G", str(out / "traces.otf2")], capture_output=True, text=True).stdout
    teams = [line for line in defs.splitlines() if re.match(r"GROUP .*Type: COMM_GROUP, Paradigm: \"OpenMP\"", line)]
    assert len(teams) == 2
    assert 'Members: 0 ("Master thread" <0>), 1 ("OMP thread 1" <4294967296>)' in teams[0]
    assert 'Members: 2 ("Master thread" <1>), 3 ("OMP thread 1" <4294967297>)' in teams[1]
    assert 'CART_TOPOLOGY' in defs and '"Process x Thread"' in defs
    roles = {region.name.split(" @")[0]: region.role for region in trace.regions if " @" in region.name or
             region.name.startswith("omp_")}
    assert roles["!$omp parallel"] == "parallel"
    assert roles["!$omp implicit barrier"] == "implicit_barrier"
    assert roles["!$omp critical"] == "critical" and roles["!$omp critical sblock"] == "critical_sblock"
    assert roles["omp_set_lock"] == "wrapper" and roles["omp_unset_lock"] == "wrapper"


def test_parallel_regions_sit_below_the_function_that_forked_them(hybrid_run) -> None:
    _, _, _, r, _ = hybrid_run
    names = r.callpath_names
    for function in ("imbalanced", "contended", "locked"):
        assert any(re.search(rf"/main/{function}/!\$omp parallel @[^/]+$", n) for n in names), names
    # the master's computation inside a region is charged to the function it runs there
    assert any(re.search(r"/main/imbalanced/!\$omp parallel @[^/]+/spin_until$", n) for n in names), names
    # the outlined function the compiler made of a region is no frame of it
    assert not any("_omp_fn" in n for n in names)


def test_implicit_barrier_waiting_is_what_the_threads_measured(hybrid_run) -> None:
    _, _, _, r, times = hybrid_run
    truth: dict[tuple[int, int], float] = defaultdict(float)
    for rank in (0, 1):
        for it in range(3):
            last = max(times[rank, it, t][0] for t in (0, 1))
            for t in (0, 1):
                truth[rank, t] += last - times[rank, it, t][0]
    ours = per_location(r, "omp_ibarrier_wait",
                        lambda p: "/imbalanced/" in p and p.endswith(tuple(["barrier @" + p.split(" @")[-1]])))
    for key, value in truth.items():
        assert ours.get(key, 0.0) == pytest.approx(value, rel=0.03, abs=MEASURED_ABS), (key, ours, dict(truth))
    assert truth[0, 0] > 0.15 and truth[1, 0] > 0.15  # 60 ms per iteration on each master


def test_lock_contention_is_what_the_threads_measured(hybrid_run) -> None:
    _, _, _, r, times = hybrid_run
    for metric, req, got in (("omp_lock_contention_critical", 1, 2), ("omp_lock_contention_api", 3, 4)):
        truth: dict[tuple[int, int], float] = defaultdict(float)
        for (rank, it, t), v in times.items():
            truth[rank, t] += v[got] - v[req]
        ours = per_location(r, metric)
        for key, value in truth.items():
            assert ours.get(key, 0.0) == pytest.approx(value, rel=0.03, abs=MEASURED_ABS), (metric, key, ours, dict(truth))
        # per iteration one thread of each rank waits about the other's 30 ms
        assert sum(truth.values()) == pytest.approx(2 * 3 * 0.030, rel=0.15)


def test_analysis_of_the_recorded_threads_holds_together(hybrid_run) -> None:
    _, _, trace, r, _ = hybrid_run
    # the critical path runs without gaps from MPI_Init to MPI_Finalize, across threads
    cp = r.critical_path
    assert r.total("critical_path") == pytest.approx(cp.end - cp.start, rel=1e-9)
    assert cp.end - cp.start > 0.9
    workers = [loc.index for loc in r.trace.locations if loc.thread]
    assert r.get("critical_path")[:, workers].sum() > 0.3  # the late threads of the imbalanced regions
    # worker threads idle outside the parallel regions (the MPI calls in
    # between), and their Time, with that, is their process's
    idle = per_location(r, "omp_idle_threads")
    assert idle[0, 0] == 0.0 and idle[1, 0] == 0.0
    assert idle[0, 1] > 0.01 and idle[1, 1] > 0.01
    time = per_location(r, "time")
    for rank in (0, 1):
        assert time[rank, 1] == pytest.approx(time[rank, 0], rel=1e-9)
    # delay costs, OpenMP's among them, add up to the waiting they explain
    assert r.total("delay") + r.undistributed == pytest.approx(r.handled_waiting(), rel=1e-12)
    assert r.total("delay_ompbarrier") > 0.1


@pytest.mark.parametrize("mpi", MPIS)
def test_fortran_program(mpi: str, tmp_path: Path) -> None:
    if not shutil.which(f"mpif90.{mpi}"):
        pytest.fail(f"mpif90.{mpi} is missing")
    exe = build(tmp_path, mpi, HYBRID_F90, "hybrid_f", fortran=True)
    out = tmp_path / "trace"
    proc = run_traced(mpi, exe, out)
    arrive = {(int(m.group(1)), int(m.group(2)), int(m.group(3))): float(m.group(4))
              for m in re.finditer(r"^\s*arrive\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)", proc.stdout, re.M)}
    assert len(arrive) == 12, proc.stdout
    trace = waitscope.open(str(out / "traces.otf2"))
    assert len(trace.locations) == 4
    r = trace.analyze()
    ours = per_location(r, "omp_ibarrier_wait")
    for rank in (0, 1):
        truth = sum(max(arrive[rank, it, t] for t in (0, 1)) - arrive[rank, it, 0] for it in range(3))
        assert ours[rank, 0] == pytest.approx(truth, rel=0.03, abs=MEASURED_ABS)
        assert truth > 0.15


@pytest.mark.parametrize("mpi", MPIS[:1])
def test_openmp_not_recorded_is_said(mpi: str, tmp_path: Path) -> None:
    exe = build(tmp_path, mpi, HYBRID_C, "hybrid")
    # turned off: GCC's runtime as the program was built, no threads in the trace
    run_traced(mpi, exe, tmp_path / "off", openmp=False)
    off = waitscope.open(str(tmp_path / "off" / "traces.otf2"))
    assert off.openmp_recording == "not recorded: recording OpenMP was turned off (libgomp.so.1)"
    assert len(off.locations) == 2
    # GCC's runtime, which has no tools interface: the MPI part is whole
    run_traced(mpi, exe, tmp_path / "gomp", strip_libomp=True)
    gomp = waitscope.open(str(tmp_path / "gomp" / "traces.otf2"))
    assert gomp.openmp_recording.startswith("not recorded: the program's OpenMP runtime (libgomp.so.1) has no "
                                            "OpenMP tools interface")
    assert len(gomp.locations) == 2
    r = gomp.analyze()
    assert r.get("mpi_barrier_wait").sum() >= 0.0
    # an MPI program without OpenMP says nothing
    assert pmpi.openmp_runtime(launcher(mpi, 2) + [str(exe)]) == "libgomp.so.1"


CUT_SHORT = r"""
    #include <mpi.h>
    #include <omp.h>
    #include <stdlib.h>
    int main(int argc, char **argv) {
        int provided, rank;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        volatile double x = 0;
        for (int it = 0; it < 2; it++) {
            #pragma omp parallel
            { for (int i = 0; i < 100000 * (1 + omp_get_thread_num()); i++) x += 1; }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 1)
            MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
"""


@pytest.mark.parametrize("mpi", MPIS[:1])
def test_run_cut_short_keeps_its_threads(mpi: str, tmp_path: Path) -> None:
    exe = build(tmp_path, mpi, CUT_SHORT, "cut")
    out = tmp_path / "trace"
    proc = run_traced(mpi, exe, out, check=False)
    assert proc.returncode != 0
    assert pmpi.finish_trace(out) >= 1
    trace = waitscope.open(str(out / "traces.otf2"), allow_partial=True)
    assert 1 in trace.cut_short_ranks
    # the worker threads' files were kept: their teams are in the trace
    assert len(trace.locations) == 4
    r = trace.analyze()
    assert np.isfinite(r.get("time").sum())


@pytest.fixture(scope="module")
def raw_files(tmp_path_factory) -> Path:
    """The per-rank files of a hybrid run cut short, before unification."""
    mpi = MPIS[0]
    tmp = tmp_path_factory.mktemp("omp-raw")
    exe = build(tmp, mpi, CUT_SHORT, "cut")
    out = tmp / "trace"
    run_traced(mpi, exe, out, check=False)
    assert list((out / ".waitscope").glob("p*.t*.evt")), "no thread event files"
    return out


def damaged_copy(raw: Path, tmp: Path, name: str) -> Path:
    d = tmp / name
    shutil.copytree(raw, d)
    return d


def unify_or_refuse(d: Path) -> None:
    """Unification of damaged files builds a trace that opens and analyses,
    or one of them raises a TraceError that names the file."""
    try:
        pmpi.finish_trace(d)
        trace = waitscope.open(str(d / "traces.otf2"), allow_partial=True)
        trace.analyze()
    except waitscope.TraceError as exc:
        assert str(d) in str(exc)


def test_damaged_thread_files_are_unified_or_refused(raw_files: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    threads = sorted((raw_files / ".waitscope").glob("p*.t*.evt"))
    size = threads[0].stat().st_size
    for cut in sorted({0, 1, 39, 40, 41, size // 2, size - 1}):
        d = damaged_copy(raw_files, tmp_path, f"cut{cut}")
        with open(d / ".waitscope" / threads[0].name, "r+b") as f:
            f.truncate(cut)
        unify_or_refuse(d)
    for trial in range(12):
        d = damaged_copy(raw_files, tmp_path, f"flip{trial}")
        path = d / ".waitscope" / threads[trial % len(threads)].name
        data = bytearray(path.read_bytes())
        for i in rng.integers(0, len(data), size=8):
            data[i] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
        unify_or_refuse(d)
    # a thread's event file missing though its process named it
    d = damaged_copy(raw_files, tmp_path, "missing")
    (d / ".waitscope" / threads[0].name).unlink()
    unify_or_refuse(d)
    # definitions naming constructs and threads that make no sense
    d = damaged_copy(raw_files, tmp_path, "defs")
    defs = sorted((d / ".waitscope").glob("p*.defs"))[0]
    defs.write_text(defs.read_text() + "ompregion\t99999999\t5\tx\nompregion\t3\tnot-a-role\n"
                    "thread\t77\nompregion\t2\t-4\ty\n")
    unify_or_refuse(d)


# ---- the hybrid examples (examples/hybrid.c, hybrid.f90) traced ------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# the waiting the examples inject (2 ranks x 2 threads, examples/hybrid.c's header), seconds
INJECTED = {"omp_barrier_wait": 0.660, "omp_lock_contention_critical": 0.192, "mpi_latesender": 0.270}


def self_check(stdout: str) -> dict[tuple[int, int], dict[str, float]]:
    """(rank, thread) -> the waiting the example computed from its threads' own stamps by each
    metric's definition (its self-check's "expected" values)."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("hybrid-location "):
            f = dict(item.split("=") for item in line.split()[1:])
            key = int(f.pop("rank")), int(f.pop("thread"))
            out[key] = {k: float(v.split("/")[1]) for k, v in f.items()}
    assert len(out) == 4, stdout
    return out


@pytest.mark.parametrize("program", ["hybrid", "hybrid_f"])
@pytest.mark.parametrize("mpi", MPIS)
def test_examples_traced_show_the_waiting_they_inject(mpi: str, program: str, tmp_path: Path) -> None:
    """The trace of each example, on each MPI, finds per thread the waiting the threads
    measured, and in all within 3 % what the program injects by construction.  Its
    explicit barrier (GCC's, through libgomp's interface) is recorded as an implicit one,
    so the barrier waiting is compared as one."""
    subprocess.run(["make", "-s", "-C", str(EXAMPLES), f"{program}.{mpi}"], check=True, capture_output=True)
    exe = EXAMPLES / f"{program}.{mpi}"
    for attempt in range(3):  # a loaded machine can delay a thread past its deadline
        out = tmp_path / f"trace{attempt}"
        proc = run_traced(mpi, exe, out, extra_env={"HYBRID_CHECK": "1"})
        truth = self_check(proc.stdout)
        r = waitscope.open(str(out / "traces.otf2")).analyze(delay_model="proportional")
        barrier = per_location(r, "omp_ibarrier_wait")
        explicit = per_location(r, "omp_ebarrier_wait")
        critical = per_location(r, "omp_lock_contention_critical")
        late = per_location(r, "mpi_latesender")
        off = []
        for key, t in truth.items():
            pairs = [(barrier.get(key, 0) + explicit.get(key, 0), t["omp_ibarrier_wait"] + t["omp_ebarrier_wait"]),
                     (critical.get(key, 0), t["omp_lock_contention_critical"]),
                     (late.get(key, 0), t["mpi_latesender"])]
            off += [(key, ours, theirs) for ours, theirs in pairs if abs(ours - theirs) > 0.003 + 0.02 * theirs]
        totals = {"omp_barrier_wait": sum(barrier.values()) + sum(explicit.values()),
                  "omp_lock_contention_critical": sum(critical.values()), "mpi_latesender": sum(late.values())}
        off += [(m, totals[m], v) for m, v in INJECTED.items() if abs(totals[m] - v) > 0.03 * v]
        if not off:
            break
    assert not off, off
    # the workers idle at least while their masters ran outside the parallel regions
    idle = per_location(r, "omp_idle_threads")
    assert all(idle[rank, 1] >= 0.99 * truth[rank, 1]["omp_idle_threads"] for rank in (0, 1))
    assert r.total("delay") + r.undistributed == pytest.approx(r.handled_waiting(), rel=1e-12)
