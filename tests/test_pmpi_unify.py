"""The archive of a traced run written by its ranks together at MPI_Finalize
(csrc/pmpi/unify_mpi.c): each rank converts and writes its own events, rank
0 only the global definitions.

The reference is the unification by one process that reads every rank's
events (``WAITSCOPE_UNIFY=serial``, the way runs cut short are assembled):
the same program traced both ways must give the same definitions and, per
location, the same events in the same order (the runs' timestamps differ,
nothing else may).  Small event-file windows (``WAITSCOPE_BUFFER``) must
lose no event.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import pmpi
from test_pmpi import LATE_SENDER, MPIS, check_late_sender, compile_program, late_sender_truth, otf2_print, run

pytestmark = pytest.mark.skipif(not MPIS, reason="no MPI with an interposition library")

# Every kind of definition the unification builds: user functions, a split
# communicator, a Cartesian topology, non-blocking halo messages,
# collectives on three communicators.  Nothing depends on timing (no
# ANY_SOURCE, no test loops), so two runs record the same events.
PROGRAM = r"""
#include <mpi.h>
#include <unistd.h>

static double work(int n) {
    volatile double x = 0;
    for (int i = 0; i < n; i++) x += i * 1e-9;
    return x;
}

static void exchange(MPI_Comm cart, double *out, double *in) {
    int left, right;
    MPI_Request req[4];
    MPI_Cart_shift(cart, 0, 1, &left, &right);
    MPI_Irecv(&in[0], 1, MPI_DOUBLE, left, 1, cart, &req[0]);
    MPI_Irecv(&in[1], 1, MPI_DOUBLE, right, 2, cart, &req[1]);
    MPI_Isend(&out[0], 1, MPI_DOUBLE, right, 1, cart, &req[2]);
    MPI_Isend(&out[1], 1, MPI_DOUBLE, left, 2, cart, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv) {
    int rank, size, dims[1] = {0}, periods[1] = {1};
    MPI_Comm cart, half;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 1, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    double out[2] = {rank, -rank}, in[2], sum = 0;
    for (int it = 0; it < 4; it++) {
        out[0] += work(100000 * (rank + 1));
        exchange(cart, out, in);
        MPI_Allreduce(in, &sum, 1, MPI_DOUBLE, MPI_SUM, half);
        MPI_Bcast(&sum, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&half);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
"""

# Local work only: Irecv + Isend to itself and Waitall, ITERATIONS times.
SELF_MESSAGES = r"""
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    int rank, in = -1, out;
    MPI_Request req[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    out = rank;
    for (long i = 0; i < n; i++) {
        MPI_Irecv(&in, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &req[0]);
        MPI_Isend(&out, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    MPI_Finalize();
    return n == 0 || in == rank ? 0 : 1;
}
"""

EVENT = re.compile(r"^(\S+)\s+(\d+)\s+(\d+)\s+(.*)$")


def per_location_events(text: str) -> dict[int, list[str]]:
    """otf2-print's events, per location in their order, without timestamps."""
    out: dict[int, list[str]] = defaultdict(list)
    body = text.split("=== Events ===", 1)[1]
    for line in body.splitlines():
        m = EVENT.match(line)
        if m and m.group(1).isupper():
            out[int(m.group(2))].append(f"{m.group(1)} {m.group(4)}")
    return dict(out)


def global_definitions(trace: Path) -> list[str]:
    """otf2-print -G's definitions; of the clock only its resolution (the runs differ in time)."""
    proc = subprocess.run(["otf2-print", "-G", str(trace / "traces.otf2")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = []
    for line in proc.stdout.splitlines():
        if line.startswith("CLOCK_PROPERTIES"):
            line = re.sub(r"Global Offset: \d+, Length: \d+", "", line)
        lines.append(line)
    return lines


def traced(mpi: str, n: int, exe: Path, out: Path, unify: str, args: tuple[str, ...] = (),
           extra: dict[str, str] | None = None) -> None:
    env = {"WAITSCOPE_SAMPLING": "0", "WAITSCOPE_UNIFY": unify, **(extra or {})}
    proc = run(mpi, n, [str(exe), *args], trace=out, callpath="stack", extra_env=env)
    assert "could not write the archive together" not in proc.stderr, proc.stderr
    assert (out / "traces.otf2").is_file()
    assert not (out / ".waitscope").exists(), "the per-rank files were left behind"


@pytest.mark.parametrize("mpi", MPIS)
def test_ranks_writing_together_give_the_archive_one_process_writes(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, PROGRAM, flags=("-O0", "-g", "-rdynamic"))
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    traced(mpi, 3, exe, serial, "serial")
    traced(mpi, 3, exe, parallel, "parallel")
    assert global_definitions(parallel) == global_definitions(serial)
    a, b = per_location_events(otf2_print(parallel)), per_location_events(otf2_print(serial))
    assert sorted(a) == [0, 1, 2]
    for loc in a:
        assert a[loc] == b[loc], f"location {loc}"
    # what the program did, on each rank: 4 halo exchanges of 2 + 2 messages
    for loc, events in a.items():
        assert sum(e.startswith("MPI_ISEND ") for e in events) == 8
        assert sum(e.startswith("MPI_IRECV ") for e in events) == 8
        assert sum(e.startswith("MPI_COLLECTIVE_END ") for e in events) >= 9  # 4 Allreduce, 4 Bcast, Barrier
        assert any('Region: "exchange"' in e for e in events)
    # each directory says what it holds and how it was written
    for out, how in ((parallel, "by every rank together"), (serial, "by one process")):
        manifest = (out / "MANIFEST.md").read_text()
        assert f"- command: `{exe}`" in manifest
        assert "- ranks: 3 on 1 host" in manifest
        assert "- every rank reached MPI_Finalize" in manifest
        assert how in manifest
        assert "`WAITSCOPE_SAMPLING=0`" in manifest and f"`WAITSCOPE_TRACE_DIR={out}`" in manifest
        total = sum(len(v) for v in per_location_events(otf2_print(out)).values())
        assert f"- events: {total} (" in manifest
    # the analysis reads both alike
    ra = waitscope.open(str(parallel / "traces.otf2")).analyze()
    rb = waitscope.open(str(serial / "traces.otf2")).analyze()
    assert ra.callpath_names == rb.callpath_names
    assert ra.trace.n_events == rb.trace.n_events


@pytest.mark.parametrize("mpi", MPIS)
def test_hybrid_run_gives_the_same_definitions(mpi: str, tmp_path: Path) -> None:
    from test_pmpi_openmp import HYBRID_C, build, run_traced

    exe = build(tmp_path, mpi, HYBRID_C, "hybrid")
    defs = {}
    for unify in ("serial", "parallel"):
        out = tmp_path / unify
        run_traced(mpi, exe, out, extra_env={"WAITSCOPE_SAMPLING": "0", "WAITSCOPE_UNIFY": unify})
        assert not (out / ".waitscope").exists()
        lines = global_definitions(out)
        # the threads' numbers of events depend on the run (lock and barrier order)
        defs[unify] = [re.sub(r"# Events: \d+", "", line) for line in lines]
        trace = waitscope.open(str(out / "traces.otf2"))
        assert trace.n_locations == 4  # 2 ranks x 2 threads
    assert defs["parallel"] == defs["serial"]
    assert any(line.startswith("COMM ") and '""' in line for line in defs["parallel"])  # the thread teams


@pytest.mark.parametrize("mpi", MPIS[:1])
def test_small_event_windows_lose_no_event(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, SELF_MESSAGES)
    iterations = {}
    for n in (0, 60_000):
        out = tmp_path / f"n{n}"
        # 20 KiB windows: 512 events each, about 1,200 windows per rank
        traced(mpi, 2, exe, out, "parallel", (str(n),), {"WAITSCOPE_BUFFER": "20K"})
        t = waitscope.open(str(out / "traces.otf2"))
        iterations[n] = [np.bincount(t.events(loc).kind, minlength=32) for loc in range(t.n_locations)]
    for rank in range(2):
        per_iteration, rest = np.divmod(iterations[60_000][rank] - iterations[0][rank], 60_000)
        assert not rest.any()
        kinds = {waitscope.EVENT_KINDS[k]: int(v) for k, v in enumerate(per_iteration) if v}
        assert kinds == {"enter": 3, "leave": 3, "isend": 1, "isend_complete": 1, "irecv_request": 1, "irecv": 1}


def leave_times(text: str, region: str) -> dict[int, list[int]]:
    """Per location, the timestamps (ns) of its leaves of `region`, from otf2-print."""
    out: dict[int, list[int]] = defaultdict(list)
    for m in re.finditer(rf'^LEAVE\s+(\d+)\s+(\d+)\s+Region: "{region}"', text, re.M):
        out[int(m.group(1))].append(int(m.group(2)))
    return dict(out)


@pytest.mark.parametrize("mpi", MPIS)
def test_clocks_that_disagree_are_brought_together(mpi: str, tmp_path: Path) -> None:
    """Rank 1's clock runs 50 ms ahead and gains 2 ms per second
    (WAITSCOPE_DEBUG_CLOCK): the offsets measured at MPI_Init and
    MPI_Finalize must undo it, so that the trace shows the Late Sender
    waiting the program measured on the real clock, and both ranks leaving
    MPI_Barrier together."""
    exe = compile_program(tmp_path, mpi, LATE_SENDER)
    out = tmp_path / "out"
    proc = run(mpi, 2, [str(exe)], trace=out, extra_env={"WAITSCOPE_DEBUG_CLOCK": "1:50:2000"})
    sleeps = late_sender_truth(proc.stdout)
    check_late_sender(out, "main/solver/exchange/MPI_Recv", sleeps)
    barrier = leave_times(otf2_print(out), "MPI_Barrier")
    # without the correction rank 1 would leave 50 ms after rank 0 (on a
    # loaded machine a rank may lose the processor for a few ms after the
    # barrier, and the round trips that measure the offsets slow down)
    assert abs(barrier[1][0] - barrier[0][0]) < 15e6
    for name in ("MPI_Recv", "MPI_Send"):
        leaves = leave_times(otf2_print(out), name)
        assert len(leaves) == 1 and len(next(iter(leaves.values()))) == 2
    # the control: the same run without the clock correction is 50 ms off
    skewed = tmp_path / "skewed"
    proc = run(mpi, 2, [str(exe)], trace=skewed,
               extra_env={"WAITSCOPE_DEBUG_CLOCK": "1:50:2000", "WAITSCOPE_DEBUG_CLOCK_UNCORRECTED": "1"})
    barrier = leave_times(otf2_print(skewed), "MPI_Barrier")
    assert abs(barrier[1][0] - barrier[0][0] - 50e6) < 15e6


ABORTS = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.parametrize("mpi", MPIS[:1])
def test_manifest_of_a_run_cut_short(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, ABORTS)
    out = tmp_path / "t"
    proc = run(mpi, 2, [str(exe)], trace=out, check=False)
    assert proc.returncode != 0
    assert pmpi.finish_trace(out) >= 1
    manifest = (out / "MANIFEST.md").read_text()
    assert "did not reach MPI_Finalize" in manifest and "1" in manifest.split("- cut short: ranks ")[1][:8]
    assert "assembled by one process after the run" in manifest


def test_buffer_sizes() -> None:
    pages = 512 * 40  # the window holds whole 40-byte records in whole pages
    assert pmpi.buffer_bytes("16M") == (16 << 20) // pages * pages
    assert pmpi.buffer_bytes("64MiB") == (64 << 20) // pages * pages
    assert pmpi.buffer_bytes("1G") == (1 << 30) // pages * pages
    assert pmpi.buffer_bytes(1 << 20) == (1 << 20) // pages * pages
    assert pmpi.buffer_bytes("20k") == pages
    assert pmpi.buffer_bytes("1") == pages
    for bad in ("", "abc", "0", "-5M", "16X", "65G"):
        with pytest.raises(ValueError, match="buffer"):
            pmpi.buffer_bytes(bad)
    # the variable the library reads; a size it cannot read is refused before a run
    cmd = [f"mpiexec.{MPIS[0]}", "-n", "2", "./app"]
    env = pmpi.environment(cmd, trace_dir="t", mpi=MPIS[0], base={}, buffer="16M")
    assert env["WAITSCOPE_BUFFER"] == "16M"
    assert "WAITSCOPE_BUFFER" not in pmpi.environment(cmd, trace_dir="t", mpi=MPIS[0], base={})
    with pytest.raises(ValueError, match="buffer='lots'"):
        pmpi.environment(cmd, trace_dir="t", mpi=MPIS[0], base={}, buffer="lots")


def test_trace_command_refuses_a_bad_buffer(tmp_path: Path, capsys) -> None:
    from waitscope.cli import main

    status = main(["trace", "--buffer", "lots", "-o", str(tmp_path / "t"), "--", "true"])
    assert status == 2
    err = capsys.readouterr().err
    assert "--buffer lots" in err and "16M" in err
    assert not (tmp_path / "t").exists()
