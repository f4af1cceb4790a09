"""The interposition library (csrc/pmpi) on real MPI programs.

Small C/C++ programs are compiled at test time with each MPI's compiler
wrapper, run under that MPI's launcher with the library preloaded, and the
trace and profile they leave are checked against what the programs do:
message counts and sizes, an injected delay that must come out as Late
Sender waiting, call paths naming the user's functions, ANY_SOURCE
receives, rooted collectives, a Cartesian topology, runs cut short.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import waitscope
from waitscope import pmpi
from conftest import relative_names

ALL_MPIS = [m for m in pmpi.MPIS if shutil.which(f"mpicc.{m}") and shutil.which(f"mpiexec.{m}")]
MPIS = [m for m in ALL_MPIS if m in pmpi.available()]

pytestmark = pytest.mark.skipif(not MPIS, reason="no MPI with an interposition library")

SLEEP = 0.2  # seconds rank 0 sleeps before each send in the Late Sender program


def late_sender_truth(output: str) -> list[float]:
    """Per exchange, how long rank 1 waited in MPI_Recv for rank 0 to enter
    MPI_Send, from the CLOCK_MONOTONIC times the two ranks (on one machine,
    so one clock) printed just before their calls."""
    t = {(int(r), int(i)): float(v) for r, i, v in re.findall(r"before (\d) (\d) ([0-9.]+)", output)}
    assert len(t) == 4
    waits = [t[0, i] - t[1, i] for i in range(2)]
    assert all(w > 0.9 * SLEEP for w in waits)  # rank 0 slept before each send
    return waits


# ---- helpers -----------------------------------------------------------------------


def compile_program(tmp: Path, mpi: str, source: str, name: str = "prog", cxx: bool = False,
                    flags: tuple[str, ...] = ("-O0", "-g")) -> Path:
    src = tmp / (name + (".cpp" if cxx else ".c"))
    src.write_text(textwrap.dedent(source))
    exe = tmp / f"{name}-{mpi}"
    compiler = f"mpicxx.{mpi}" if cxx else f"mpicc.{mpi}"
    subprocess.run([compiler, *flags, "-o", str(exe), str(src)], check=True, capture_output=True)
    return exe


def launcher(mpi: str, n: int) -> list[str]:
    cmd = [f"mpiexec.{mpi}", "-n", str(n)]
    if mpi == "openmpi":
        cmd.insert(1, "--oversubscribe")
    return cmd


def run(mpi: str, n: int, program: list[str], trace: Path | None = None, profile: Path | None = None,
        callpath: str | None = None, check: bool = True,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = launcher(mpi, n) + program
    env = os.environ.copy()
    env.update(extra_env or {})
    # the sanitizer runtimes of .ci/sanitize test the analysis kernel, not the
    # MPI libraries (Open MPI itself trips ASan): the programs run without them
    preload = [p for p in env.pop("LD_PRELOAD", "").split(":") if p and "san.so" not in p]
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    if mpi == "openmpi" and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if trace is not None or profile is not None:
        env = pmpi.environment(cmd, trace_dir=trace, profile_dir=profile, callpath=callpath, base=env)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def otf2_print(trace: Path) -> str:
    proc = subprocess.run(["otf2-print", str(trace / "traces.otf2")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def region_visits(text: str, location: int, region: str) -> list[float]:
    """Durations (s) of the visits of one location to a region, from otf2-print."""
    out, start = [], None
    pattern = re.compile(r"^(ENTER|LEAVE)\s+(\d+)\s+(\d+)\s+Region: \"([^\"]+)\"")
    for line in text.splitlines():
        m = pattern.match(line)
        if not m or int(m.group(2)) != location or m.group(4) != region:
            continue
        if m.group(1) == "ENTER":
            start = int(m.group(3))
        else:
            out.append((int(m.group(3)) - start) * 1e-9)
    return out


def records(text: str, kind: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(kind + " ")]


def profile_entries(profile: Path) -> tuple[dict, dict[tuple[str, str, int, bool], dict]]:
    doc = json.loads((profile / "profile.json").read_text())
    out = {}
    for e in doc["entries"]:
        out[(doc["callpaths"][e["callpath"]], e["function"], e["size_class"], e["root"])] = e
    return doc, out


# ---- programs ------------------------------------------------------------------------

LATE_SENDER = r"""
    #include <mpi.h>
    #include <stdio.h>
    #include <time.h>
    #include <unistd.h>
    #define N 4096
    static double buf[N], before[2];
    static int calls;
    static double now(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec + 1e-9 * t.tv_nsec;
    }
    static void exchange(int rank) {
        if (rank == 0) {
            usleep(200000);
            before[calls++] = now();
            MPI_Send(buf, N, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
        } else if (rank == 1) {
            before[calls++] = now();
            MPI_Recv(buf, N, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    static void compute(void) { for (volatile int i = 0; i < 1000; i++) ; }
    static void solver(int rank) {
        for (int it = 0; it < 2; it++) { compute(); exchange(rank); }
    }
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Barrier(MPI_COMM_WORLD);
        solver(rank);
        for (int i = 0; i < calls; i++)
            printf("before %d %d %.9f\n", rank, i, before[i]);
        MPI_Finalize();
        return 0;
    }
"""

RICH = r"""
    #include <mpi.h>
    static void halo(MPI_Comm cart, int rank, int size, double *sb, double *rb) {
        MPI_Request req[4];
        int left = (rank + size - 1) % size, right = (rank + 1) % size;
        MPI_Irecv(rb, 100, MPI_DOUBLE, left, 1, cart, &req[0]);
        MPI_Irecv(rb + 100, 100, MPI_DOUBLE, right, 2, cart, &req[1]);
        MPI_Isend(sb, 100, MPI_DOUBLE, right, 1, cart, &req[2]);
        MPI_Isend(sb + 100, 100, MPI_DOUBLE, left, 2, cart, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    }
    static void collect(int rank, int size) {
        int v = rank;
        if (rank == 0)
            for (int i = 1; i < size; i++)
                MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(&v, 1, MPI_INT, 0, 10 + rank, MPI_COMM_WORLD);
    }
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        int rank, size;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        int dims[2] = {2, size / 2}, periods[2] = {1, 0};
        MPI_Comm cart;
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
        double sb[200], rb[200];
        for (int i = 0; i < 200; i++) sb[i] = rank;
        for (int it = 0; it < 3; it++) halo(cart, rank, size, sb, rb);
        collect(rank, size);
        int x[8] = {0};
        MPI_Bcast(x, 8, MPI_INT, 1, MPI_COMM_WORLD);
        int s = 0;
        MPI_Reduce(&rank, &s, 1, MPI_INT, MPI_SUM, 2, MPI_COMM_WORLD);
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        int all[16];
        MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, half);
        MPI_Comm_free(&half);
        MPI_Comm_free(&cart);
        MPI_Finalize();
        return 0;
    }
"""

ABORT = r"""
    #include <mpi.h>
    static void fail(int rank, int crash) {
        int v = 1;
        if (rank == 0) {
            MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (crash) {
                volatile int *nowhere = 0;
                *nowhere = 1;
            }
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fail(rank, argc > 1);
        MPI_Finalize();
        return 0;
    }
"""


def check_late_sender(trace: Path, recv_path: str, sleeps: list[float]) -> None:
    t = waitscope.open(trace)
    assert t.cut_short_ranks == []
    r = t.analyze()
    assert recv_path in relative_names(r)
    # rank 0 sleeps before each of its 2 sends while rank 1 waits in MPI_Recv
    assert r.get("mpi_latesender", recv_path, 1) == pytest.approx(sum(sleeps), rel=0.05)
    assert r.get("mpi_latesender", recv_path, 0) == 0.0


# ---- tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("mpi", MPIS)
def test_late_sender_messages_and_profile(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, LATE_SENDER)
    out = tmp_path / "out"
    sleeps = late_sender_truth(run(mpi, 2, [str(exe)], trace=out, profile=out).stdout)

    text = otf2_print(out)
    sends, recvs = records(text, "MPI_SEND"), records(text, "MPI_RECV")
    assert len(sends) == 2 and len(recvs) == 2
    assert all("Length: 32768" in line and "Tag: 7" in line for line in sends + recvs)
    assert all(re.search(r"Receiver: 1 ", line) for line in sends)
    assert all(re.search(r"Sender: 0 ", line) for line in recvs)
    assert not (out / ".waitscope").exists()

    check_late_sender(out, "main/solver/exchange/MPI_Recv", sleeps)

    doc, entries = profile_entries(out)
    assert doc["format"] == "waitscope-profile" and doc["ranks"] == 2
    recv = entries[("main/solver/exchange/MPI_Recv", "MPI_Recv", 15, False)]
    send = entries[("main/solver/exchange/MPI_Send", "MPI_Send", 15, False)]
    assert recv["count"] == [0, 2] and send["count"] == [2, 0]
    assert recv["global_min"] is None
    # each receive waited for one sleep: the minimum and the sum say so
    # the profile aggregates the very intervals the trace records: the
    # durations of rank 1's MPI_Recv visits from the archive's timestamps (ns)
    visits = region_visits(text, 1, "MPI_Recv")
    assert len(visits) == 2
    assert recv["min"][0] is None and recv["min"][1] == pytest.approx(min(visits), abs=1e-9)
    assert recv["sum"][1] == pytest.approx(sum(visits), abs=1e-9)
    # and each visit is (at least) the wait for the late sender
    assert recv["min"][1] >= 0.95 * min(sleeps)
    barrier = entries[("main/MPI_Barrier", "MPI_Barrier", -1, False)]
    assert barrier["count"] == [1, 1] and barrier["collective"]
    assert barrier["global_min"] == min(barrier["min"])
    assert "main/solver/exchange" in doc["callpaths"] and "main" in doc["callpaths"]
    # the profile's call paths are the trace's
    names = relative_names(waitscope.open(out).analyze())
    assert all(cp in names for cp in doc["callpaths"])
    assert all(0 < m <= e for m, e in zip(doc["mpi_time"], doc["execution_time"]))


@pytest.mark.parametrize("mpi", MPIS)
def test_nonblocking_any_source_collectives_topology(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, RICH)
    out = tmp_path / "out"
    run(mpi, 4, [str(exe)], trace=out, profile=out)

    text = otf2_print(out)
    # 3 iterations x 4 ranks x 2 requests each way, all completed by Waitall(STATUSES_IGNORE)
    assert len(records(text, "MPI_ISEND")) == 24
    assert len(records(text, "MPI_ISEND_COMPLETE")) == 24
    assert len(records(text, "MPI_IRECV_REQUEST")) == 24
    irecvs = records(text, "MPI_IRECV")
    assert len(irecvs) == 24 and all("Length: 800" in line for line in irecvs)
    # ANY_SOURCE / ANY_TAG receives resolved from the status
    recvs = records(text, "MPI_RECV")
    got = sorted((int(re.search(r"Sender: (\d+)", s).group(1)), int(re.search(r"Tag: (\d+)", s).group(1)))
                 for s in recvs)
    assert got == [(1, 11), (2, 12), (3, 13)]
    ends = records(text, "MPI_COLLECTIVE_END")
    assert sum("BCAST" in e and "Root: 1" in e for e in ends) == 4
    assert sum("REDUCE" in e and "ALLREDUCE" not in e and "Root: 2" in e for e in ends) == 4

    t = waitscope.open(out)
    topo = t.cart_topology
    assert topo is not None and topo.dims == (2, 2) and topo.periodic == (True, False)
    assert sorted(map(tuple, topo.coords.tolist())) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    r = t.analyze()
    for cp in ("main/halo/MPI_Waitall", "main/collect/MPI_Recv", "main/MPI_Bcast", "main/MPI_Allgather"):
        assert cp in relative_names(r)

    doc, entries = profile_entries(out)
    bcast_root = entries[("main/MPI_Bcast", "MPI_Bcast", 5, True)]
    bcast = entries[("main/MPI_Bcast", "MPI_Bcast", 5, False)]
    assert bcast_root["count"] == [0, 1, 0, 0] and bcast["count"] == [1, 0, 1, 1]
    assert entries[("main/MPI_Reduce", "MPI_Reduce", 2, True)]["count"] == [0, 0, 1, 0]
    # Waitall completes two receives of 800 bytes: size class of 1600 bytes
    waitall = entries[("main/halo/MPI_Waitall", "MPI_Waitall", 10, False)]
    assert waitall["count"] == [3, 3, 3, 3]
    assert waitall["global_min"] is None
    allgather = entries[("main/MPI_Allgather", "MPI_Allgather", 2, False)]
    assert allgather["global_min"] == min(allgather["min"])


@pytest.mark.parametrize("mpi", MPIS)
def test_profile_alone(mpi: str, tmp_path: Path) -> None:
    """Profiling without tracing writes no trace files at all."""
    exe = compile_program(tmp_path, mpi, LATE_SENDER)
    out = tmp_path / "out"
    sleeps = late_sender_truth(run(mpi, 2, [str(exe)], profile=out).stdout)
    assert sorted(os.listdir(out)) == ["profile.json"]
    doc, entries = profile_entries(out)
    recv = entries[("main/solver/exchange/MPI_Recv", "MPI_Recv", 15, False)]
    assert recv["count"] == [0, 2]
    # the receive lasts the waiting plus the message's delivery; on a loaded
    # machine the receiver may also be scheduled late after the send
    assert 0.97 * sum(sleeps) <= recv["sum"][1] <= 1.05 * sum(sleeps) + 0.05
    assert entries[("main/MPI_Init", "MPI_Init", -1, False)]["count"] == [1, 1]
    assert entries[("main/MPI_Finalize", "MPI_Finalize", -1, False)]["count"] == [1, 1]


def test_instrumented_functions(tmp_path: Path) -> None:
    """-finstrument-functions: exact regions, also for code without MPI calls."""
    mpi = MPIS[0]
    exe = compile_program(tmp_path, mpi, LATE_SENDER, flags=("-O0", "-g", "-finstrument-functions"))
    out = tmp_path / "out"
    sleeps = late_sender_truth(run(mpi, 2, [str(exe)], trace=out).stdout)
    names = relative_names(waitscope.open(out).analyze())
    assert "main/solver/compute" in names  # never on the stack at an MPI call
    check_late_sender(out, "main/solver/exchange/MPI_Recv", sleeps)


def test_stack_mode_forced(tmp_path: Path) -> None:
    """WAITSCOPE_CALLPATH=stack ignores the hooks of an instrumented binary."""
    mpi = MPIS[0]
    exe = compile_program(tmp_path, mpi, LATE_SENDER, flags=("-O0", "-g", "-finstrument-functions"))
    out = tmp_path / "out"
    run(mpi, 2, [str(exe)], trace=out, callpath="stack")
    names = relative_names(waitscope.open(out).analyze())
    assert "main/solver/compute" not in names
    assert "main/solver/exchange/MPI_Recv" in names


@pytest.mark.parametrize("how", ["abort", "segv"])
@pytest.mark.parametrize("mpi", MPIS)
def test_abort_leaves_a_trace_cut_short(mpi: str, how: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, ABORT)
    args = [str(exe)] + (["crash"] if how == "segv" else [])
    plain = run(mpi, 2, args, check=False)
    out = tmp_path / "out"
    traced = run(mpi, 2, args, trace=out, check=False)
    assert traced.returncode == plain.returncode != 0
    assert (out / ".waitscope").is_dir() and not (out / "traces.otf2").exists()
    with pytest.raises(waitscope.TraceError, match=r"cut short: ranks? .*1"):
        waitscope.open(out)
    t = waitscope.open(out, allow_partial=True)
    assert 1 in t.cut_short_ranks
    subprocess.run(["otf2-print", "--silent", str(out / "traces.otf2")], check=True, capture_output=True)
    names = relative_names(t.analyze())
    assert "main/fail/MPI_Recv" in names
    if how == "abort":
        assert "main/fail/MPI_Abort" in names
    # the message that was received before the abort is in the trace
    assert len(records(otf2_print(out), "MPI_SEND")) >= 1


def test_cxx_program(tmp_path: Path) -> None:
    mpi = MPIS[0]
    source = LATE_SENDER.replace("static void exchange(int rank)", "namespace halo { void exchange(int rank)")
    source = source.replace("    static void compute(void)", "    }\n    static void compute(void)")
    source = source.replace("exchange(rank); }", "halo::exchange(rank); }")
    exe = compile_program(tmp_path, mpi, source, cxx=True)
    out = tmp_path / "out"
    sleeps = late_sender_truth(run(mpi, 2, [str(exe)], trace=out).stdout)
    check_late_sender(out, "main/solver/halo::exchange/MPI_Recv", sleeps)


MPI4PY = """
    import time
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    buf = np.zeros(1000)
    before = []
    comm.Barrier()
    for _ in range(2):
        if comm.rank == 0:
            time.sleep(0.2)
            before.append(time.clock_gettime(time.CLOCK_MONOTONIC))
            comm.Send(buf, dest=1, tag=3)
        elif comm.rank == 1:
            before.append(time.clock_gettime(time.CLOCK_MONOTONIC))
            comm.Recv(buf, source=0, tag=3)
    for i, t in enumerate(before):
        print("before %d %d %.9f" % (comm.rank, i, t), flush=True)
"""


def test_mpi4py_program(tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    import mpi4py

    import mpi4py.MPI

    mpi = pmpi.detect_mpi([mpi4py.MPI.__file__])  # the libmpi mpi4py links
    if mpi not in MPIS:
        pytest.skip(f"mpi4py uses {mpi}, which has no interposition library")
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(MPI4PY))
    out = tmp_path / "out"
    sleeps = late_sender_truth(run(mpi, 2, [sys.executable, str(script)], trace=out, profile=out).stdout)
    # the Python frames (the module's code) and the mpi4py method it called
    check_late_sender(out, "prog.py:<module>/MPI.Comm.Recv/MPI_Recv", sleeps)
    doc, entries = profile_entries(out)
    recv = ("prog.py:<module>/MPI.Comm.Recv/MPI_Recv", "MPI_Recv", 12, False)
    assert entries[recv]["count"] == [0, 2]


THREADS = r"""
    #include <mpi.h>
    #include <pthread.h>
    #include <stdio.h>
    static int rank;
    static void *helper(void *arg) {   /* a second thread exchanging on its own communicator */
        MPI_Comm comm = *(MPI_Comm *)arg;
        int v = rank, w = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, 1 - rank, 5, &w, 1, MPI_INT, 1 - rank, 5, comm, MPI_STATUS_IGNORE);
        printf("helper got %d\n", w);
        return NULL;
    }
    int main(int argc, char **argv) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        if (argc > 1 && provided == MPI_THREAD_MULTIPLE) {
            pthread_t t;
            pthread_create(&t, NULL, helper, &comm);
            pthread_join(t, NULL);
        } else {
            helper(&comm);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Comm_free(&comm);
        MPI_Finalize();
        return 0;
    }
"""


@pytest.mark.parametrize("mpi", MPIS)
def test_mpi_from_two_threads_is_refused(mpi: str, tmp_path: Path) -> None:
    """MPI_THREAD_MULTIPLE with MPI called from one thread (as mpi4py asks
    for by default) is measured; with a second thread calling MPI nothing is
    recorded, the program's run is untouched and the message says why."""
    exe = compile_program(tmp_path, mpi, THREADS, flags=("-O0", "-g", "-pthread"))
    one = measure_cli(mpi, 2, [str(exe)], tmp_path / "one", "trace")
    assert one.returncode == 0 and one.stdout.count("helper got") == 2, one.stderr
    assert "trace written" in one.stderr
    assert len(records(otf2_print(tmp_path / "one"), "MPI_RECV")) == 2
    out = tmp_path / "two"
    two = subprocess.run([sys.executable, "-m", "waitscope", "trace", "--profile", "-o", str(out), "--",
                          *launcher(mpi, 2), str(exe), "thread"], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert two.returncode == 0 and two.stdout.count("helper got") == 2, two.stderr
    assert "nothing was recorded: 2 ranks of" in two.stderr
    assert "called MPI from more than one thread (MPI was initialised with MPI_THREAD_MULTIPLE)" in two.stderr
    assert os.listdir(out) == []


def test_detect_mpi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAITSCOPE_MPI", raising=False)
    assert pmpi.detect_mpi(["mpiexec.mpich", "-n", "2", "a.out"]) == "mpich"
    assert pmpi.detect_mpi(["mpiexec.hydra", "a.out"]) == "mpich"
    assert pmpi.detect_mpi(["/usr/bin/mpirun.openmpi", "a.out"]) == "openmpi"
    assert pmpi.detect_mpi(["orterun", "a.out"]) == "openmpi"
    monkeypatch.setenv("WAITSCOPE_MPI", "openmpi")
    assert pmpi.detect_mpi(["mpiexec.mpich"]) == "openmpi"
    monkeypatch.setenv("WAITSCOPE_MPI", "lam")
    with pytest.raises(ValueError, match="WAITSCOPE_MPI"):
        pmpi.detect_mpi(["mpiexec.mpich"])
    monkeypatch.delenv("WAITSCOPE_MPI")
    with pytest.raises(ValueError, match="cannot tell"):
        pmpi.detect_mpi(["/bin/true"])
    with pytest.raises(ValueError, match="unknown MPI"):
        pmpi.library_path("lam")


@pytest.mark.parametrize("mpi", MPIS)
def test_detect_mpi_from_the_executable(mpi: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAITSCOPE_MPI", raising=False)
    exe = compile_program(tmp_path, mpi, ABORT)
    assert pmpi.detect_mpi([str(exe)]) == mpi


@pytest.mark.skipif(len(MPIS) < 2, reason="needs both MPIs")
def test_launcher_of_the_other_mpi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The library follows the program, not the launcher; a program of one
    MPI under the other's launcher (every rank would start alone) is refused
    before anything runs, saying which MPI each is."""
    monkeypatch.delenv("WAITSCOPE_MPI", raising=False)
    exe = compile_program(tmp_path, "mpich", ABORT)
    assert pmpi.detect_mpi(["mpiexec.mpich", "-n", "2", str(exe)]) == "mpich"
    with pytest.raises(ValueError, match=r"linked with MPICH \(libmpich.so.12\), but mpiexec.openmpi is Open MPI"):
        pmpi.detect_mpi(["mpiexec.openmpi", "--oversubscribe", "-n", "2", str(exe)])
    out = tmp_path / "never"
    proc = subprocess.run([sys.executable, "-m", "waitscope", "trace", "-o", str(out), "--",
                           "mpiexec.openmpi", "-n", "2", str(exe)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "mpiexec.mpich" in proc.stderr and "Open MPI's launcher" in proc.stderr
    assert not out.exists()
    monkeypatch.setenv("WAITSCOPE_MPI", "openmpi")  # the user's word stands
    assert pmpi.detect_mpi(["mpiexec.openmpi", "-n", "2", str(exe)]) == "openmpi"


# MPI called only through the profiling interface, which is not wrapped
PMPI_ONLY = r"""
    #include <mpi.h>
    int main(int argc, char **argv) {
        PMPI_Init(&argc, &argv);
        int rank, v = 1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0)
            PMPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        else
            PMPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        PMPI_Finalize();
        return 0;
    }
"""


def measure_cli(mpi: str, n: int, program: list[str], out: Path, what: str = "trace") -> subprocess.CompletedProcess[str]:
    """``waitscope trace|profile -o out -- mpiexec.<mpi> -n N program``."""
    env = os.environ.copy()
    if mpi == "openmpi" and os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([sys.executable, "-m", "waitscope", what, "-o", str(out), "--", *launcher(mpi, n), *program],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("what", ["trace", "profile"])
@pytest.mark.parametrize("mpi", MPIS)
def test_no_mpi_call_seen(mpi: str, what: str, tmp_path: Path) -> None:
    """A run whose MPI calls all went past the library says so, naming the
    calls, instead of calling it cut short."""
    exe = compile_program(tmp_path, mpi, PMPI_ONLY)
    out = tmp_path / "out"
    proc = measure_cli(mpi, 2, [str(exe)], out, what)
    assert proc.returncode == 0, proc.stderr
    assert "no MPI call was seen in the 2 processes" in proc.stderr, proc.stderr
    assert "MPI was initialised in 2 of them" in proc.stderr
    assert "PMPI_Init" in proc.stderr and "PMPI_Send" in proc.stderr and "not wrapped" in proc.stderr
    assert "cut short" not in proc.stderr
    assert os.listdir(out) == []  # the notes were a diagnosis only


@pytest.mark.skipif("mpich" not in MPIS, reason="needs MPICH")
def test_statically_linked_mpi(tmp_path: Path) -> None:
    """An MPI linked into the program (MPICH's libmpich.a) is named as the reason nothing was recorded."""
    src = tmp_path / "static.c"
    src.write_text(textwrap.dedent(LATE_SENDER))
    exe = tmp_path / "static"
    flags = subprocess.run(["pkg-config", "--static", "--libs", "mpich"], capture_output=True, text=True,
                           check=True).stdout.split()
    include = subprocess.run(["pkg-config", "--cflags", "mpich"], capture_output=True, text=True, check=True).stdout
    static = "/usr/lib/x86_64-linux-gnu/libmpich.a"
    assert os.path.exists(static), "libmpich-dev ships libmpich.a"
    subprocess.run(["gcc", "-O0", *include.split(), "-o", str(exe), str(src), static,
                    *[f for f in flags if f != "-lmpich"]], check=True, capture_output=True)
    out = tmp_path / "out"
    proc = measure_cli("mpich", 2, [str(exe)], out)
    assert proc.returncode == 0, proc.stderr
    assert len(re.findall(r"before \d \d", proc.stdout)) == 4  # it ran
    assert "no MPI call was seen" in proc.stderr and "linked in statically (it defines MPI_Init" in proc.stderr


def test_crash_before_mpi_init_is_a_crash(tmp_path: Path) -> None:
    mpi = MPIS[0]
    exe = compile_program(tmp_path, mpi, """
        #include <mpi.h>
        #include <signal.h>
        int main(int argc, char **argv) { raise(SIGSEGV); MPI_Init(&argc, &argv); MPI_Finalize(); return 0; }
    """)
    proc = measure_cli(mpi, 2, [str(exe)], tmp_path / "out")
    assert proc.returncode != 0
    assert "cut short" in proc.stderr and "no MPI call was seen" not in proc.stderr


def test_environment() -> None:
    mpi = MPIS[0]
    env = pmpi.environment([f"mpiexec.{mpi}", "x"], trace_dir="t", base={"LD_PRELOAD": "other.so"})
    assert env["LD_PRELOAD"] == "other.so:" + pmpi.library_path(mpi)
    assert env["WAITSCOPE_TRACE_DIR"] == os.path.abspath("t") and "WAITSCOPE_PROFILE_DIR" not in env
    with pytest.raises(ValueError):
        pmpi.environment([f"mpiexec.{mpi}"])
    with pytest.raises(ValueError, match="callpath"):
        pmpi.environment([f"mpiexec.{mpi}"], profile_dir="p", callpath="frames")


@pytest.mark.parametrize("mpi", MPIS)
def test_library_defines_all_its_own_functions(mpi: str) -> None:
    """Every function of the project the library calls is in it: a missing
    one would only fail when first called (lazy binding), e.g. when the
    unification writes a kind of record for the first time."""
    out = subprocess.run(["nm", "-D", "--undefined-only", pmpi.library_path(mpi)], capture_output=True, text=True,
                         check=True).stdout
    missing = [line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith("ws_")]
    assert missing == []
