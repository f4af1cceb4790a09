"""The interposition library on MPI calls beyond the modelled ones.

Calls the library does not model (datatypes, groups, persistent requests,
non-blocking collectives, MPI-IO, ...) must still work, unchanged, and
appear in the trace as plain MPI regions on the call path.  The helpers
come from test_pmpi (the tests directory is on sys.path).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import waitscope
from test_pmpi import (LATE_SENDER, MPIS, check_late_sender, compile_program, late_sender_truth, otf2_print,
                       records, region_visits, run)
from conftest import relative_names

pytestmark = pytest.mark.skipif(not MPIS, reason="no MPI with an interposition library")

# Each rank: 3 derived datatypes committed and freed, a group of rank 0,
# a persistent exchange started 3 times, an Ibarrier and an Iallreduce,
# a file written and read back with MPI-IO.  It prints what it computed.
PLAIN = r"""
    #include <mpi.h>
    #include <stdio.h>
    #include <stddef.h>
    struct pt { int id; double x; };
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        int rank, size;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        int dims[2] = {0, 0};
        MPI_Dims_create(size, 2, dims);
        /* datatypes */
        MPI_Datatype pair, column, ptype;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &column);
        int bl[2] = {1, 1};
        MPI_Aint disp[2] = {offsetof(struct pt, id), offsetof(struct pt, x)};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
        MPI_Type_create_struct(2, bl, disp, types, &ptype);
        MPI_Type_commit(&pair);
        MPI_Type_commit(&column);
        MPI_Type_commit(&ptype);
        /* groups */
        MPI_Group world, first;
        int zero = 0, gsize = 0;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &zero, &first);
        MPI_Group_size(first, &gsize);
        MPI_Group_free(&first);
        MPI_Group_free(&world);
        /* persistent exchange of a struct and of a column, 3 times */
        int peer = 1 - rank;
        struct pt out = {rank, 0.5 + rank}, in = {-1, -1.0};
        double grid[12], got[12] = {0};
        for (int i = 0; i < 12; i++) grid[i] = 100 * rank + i;
        MPI_Request req[4];
        MPI_Send_init(&out, 1, ptype, peer, 5, MPI_COMM_WORLD, &req[0]);
        MPI_Recv_init(&in, 1, ptype, peer, 5, MPI_COMM_WORLD, &req[1]);
        double sum_in = 0;
        for (int it = 0; it < 3; it++) {
            MPI_Startall(2, req);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            sum_in += in.x;
        }
        MPI_Recv_init(got, 1, column, peer, 6, MPI_COMM_WORLD, &req[2]);
        MPI_Send_init(grid, 1, column, peer, 6, MPI_COMM_WORLD, &req[3]);
        MPI_Start(&req[2]);
        MPI_Start(&req[3]);
        MPI_Status st;
        MPI_Wait(&req[2], &st);
        MPI_Wait(&req[3], MPI_STATUS_IGNORE);
        int n = 0;
        MPI_Get_count(&st, column, &n);
        for (int i = 0; i < 4; i++) MPI_Request_free(&req[i]);
        /* non-blocking collectives */
        MPI_Request cr[2];
        int mine[2] = {rank + 1, 10 * (rank + 1)}, total[2] = {0, 0};
        MPI_Ibarrier(MPI_COMM_WORLD, &cr[0]);
        MPI_Iallreduce(mine, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr[1]);
        MPI_Waitall(2, cr, MPI_STATUSES_IGNORE);
        /* MPI-IO: each rank writes its pair at its offset, reads the other's */
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
        MPI_File_write_at(fh, (MPI_Offset)(rank * sizeof mine), mine, 2, MPI_INT, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        int other[2] = {0, 0};
        MPI_File_read_at(fh, (MPI_Offset)(peer * sizeof mine), other, 2, MPI_INT, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        MPI_Type_free(&pair);
        MPI_Type_free(&column);
        MPI_Type_free(&ptype);
        printf("rank %d dims %dx%d group %d in %d %.1f sum %.1f col %.0f %.0f %.0f count %d "
               "total %d %d file %d %d\n", rank, dims[0], dims[1], gsize, in.id, in.x, sum_in,
               got[0], got[4], got[8], n, total[0], total[1], other[0], other[1]);
        MPI_Finalize();
        return 0;
    }
"""

# call path -> visits per rank (the program above, per rank)
PLAIN_VISITS = {
    "main/MPI_Dims_create": 1, "main/MPI_Type_contiguous": 1, "main/MPI_Type_vector": 1,
    "main/MPI_Type_create_struct": 1, "main/MPI_Type_commit": 3, "main/MPI_Type_free": 3,
    "main/MPI_Comm_group": 1, "main/MPI_Group_incl": 1, "main/MPI_Group_size": 1, "main/MPI_Group_free": 2,
    "main/MPI_Send_init": 2, "main/MPI_Recv_init": 2, "main/MPI_Startall": 3, "main/MPI_Start": 2,
    "main/MPI_Get_count": 1, "main/MPI_Request_free": 4, "main/MPI_Ibarrier": 1, "main/MPI_Iallreduce": 1,
    "main/MPI_File_open": 1, "main/MPI_File_write_at": 1, "main/MPI_File_read_at": 1, "main/MPI_File_close": 1,
}


def expected_output(rank: int) -> str:
    peer = 1 - rank
    col = [100 * peer + i for i in (0, 4, 8)]
    return (f"rank {rank} dims 2x1 group 1 in {peer} {0.5 + peer:.1f} sum {3 * (0.5 + peer):.1f} "
            f"col {col[0]} {col[1]} {col[2]} count 1 total 3 30 file {peer + 1} {10 * (peer + 1)}")


@pytest.mark.parametrize("mpi", MPIS)
def test_unmodelled_calls_are_plain_regions(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, PLAIN)
    plain = run(mpi, 2, [str(exe), str(tmp_path / "plain.dat")]).stdout
    out = tmp_path / "out"
    traced = run(mpi, 2, [str(exe), str(tmp_path / "traced.dat")], trace=out, profile=out).stdout
    # the program computes the same with and without the library
    for text in (plain, traced):
        assert sorted(text.strip().splitlines()) == [expected_output(0), expected_output(1)]

    r = waitscope.open(out).analyze()
    for cp, n in PLAIN_VISITS.items():
        assert cp in relative_names(r), cp
        assert [r.get("visits", cp, rank) for rank in (0, 1)] == [n, n], cp
    # regions with paradigm MPI and Score-P's role
    trace = waitscope.open(out)
    regions = {reg.name: reg for reg in trace.regions}
    assert regions["MPI_Type_commit"].paradigm == "mpi" and regions["MPI_Type_commit"].role == "function"
    assert regions["MPI_Startall"].role == "point2point"
    assert regions["MPI_Ibarrier"].role == "barrier"
    assert regions["MPI_Iallreduce"].role == "coll_all2all"
    assert regions["MPI_File_read_at"].role == "file_io"
    assert regions["MPI_File_open"].role == "file_io_metadata"
    # time in MPI-IO is MPI-IO time, the file management too
    assert r.total("mpi_io_individual") > 0
    text = otf2_print(out)
    assert len(region_visits(text, 0, "MPI_File_write_at")) == 1
    # the profile of the same run counts the same calls on the same call paths
    est = waitscope.open_profile(out).estimates()
    for cp in ("main/MPI_Type_commit", "main/MPI_Startall", "main/MPI_File_open"):
        assert [est.get("visits", cp, rank) for rank in (0, 1)] == [PLAIN_VISITS[cp]] * 2, cp
    # persistent requests are not modelled: no message records
    assert not records(text, "MPI_SEND") and not records(text, "MPI_RECV") and not records(text, "MPI_IRECV")
    assert len(region_visits(text, 1, "MPI_Type_commit")) == 3


# Communicators made by MPI_Cart_sub, MPI_Comm_split_type and
# MPI_Comm_create_group carry recorded messages: on the row of a 1x2 grid
# rank 1 enters an Allreduce SLEEP late (Wait at N x N on rank 0) and rank 0
# sends SLEEP late (Late Sender on rank 1); one more message on the
# shared-memory communicator, one more Allreduce on the group communicator.
# Each rank prints the CLOCK_MONOTONIC times just before its calls.
SUBCOMMS = r"""
    #include <mpi.h>
    #include <stdio.h>
    #include <time.h>
    #include <unistd.h>
    static double now(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + 1e-9 * ts.tv_nsec;
    }
    int main(int argc, char **argv) {
        MPI_Init(&argc, &argv);
        int dims[2] = {1, 2}, periods[2] = {0, 0}, remain[2] = {0, 1}, rr, x = 1, y = 0;
        MPI_Comm cart, row, shared, grp;
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
        MPI_Cart_sub(cart, remain, &row);
        MPI_Comm_rank(row, &rr);
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rr, MPI_INFO_NULL, &shared);
        MPI_Group wg;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Comm_create_group(MPI_COMM_WORLD, wg, 3, &grp);
        if (rr == 1) usleep(200000);
        double t_ar = now();
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, row);
        double t_p2p;
        if (rr == 0) {
            usleep(200000);
            t_p2p = now();
            MPI_Send(&x, 1, MPI_INT, 1, 4, row);
            MPI_Send(&x, 1, MPI_INT, 1, 5, shared);
        } else {
            t_p2p = now();
            MPI_Recv(&x, 1, MPI_INT, 0, 4, row, MPI_STATUS_IGNORE);
            MPI_Recv(&x, 1, MPI_INT, 0, 5, shared, MPI_STATUS_IGNORE);
        }
        int z = 0;
        MPI_Allreduce(&y, &z, 1, MPI_INT, MPI_SUM, grp);
        printf("times %d %.9f %.9f sum %d %d\n", rr, t_ar, t_p2p, y, z);
        MPI_Group_free(&wg);
        MPI_Comm_free(&grp);
        MPI_Comm_free(&shared);
        MPI_Comm_free(&row);
        MPI_Comm_free(&cart);
        MPI_Finalize();
        return 0;
    }
"""


@pytest.mark.parametrize("mpi", MPIS)
def test_messages_on_derived_communicators(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, SUBCOMMS)
    out = tmp_path / "out"
    stdout = run(mpi, 2, [str(exe)], trace=out).stdout
    t = {int(r): (float(a), float(p)) for r, a, p in re.findall(r"times (\d) ([0-9.]+) ([0-9.]+) sum 2 4", stdout)}
    assert sorted(t) == [0, 1]
    nxn_truth = t[1][0] - t[0][0]   # rank 0 waits in the row Allreduce for rank 1
    ls_truth = t[0][1] - t[1][1]    # rank 1 waits in MPI_Recv for rank 0's send
    assert nxn_truth > 0.15 and ls_truth > 0.15

    text = otf2_print(out)
    assert len(records(text, "MPI_SEND")) == 2 and len(records(text, "MPI_RECV")) == 2
    assert len(records(text, "MPI_COLLECTIVE_END")) == 4   # 2 Allreduces x 2 ranks
    trace = waitscope.open(out)
    r = trace.analyze()
    assert r.get("mpi_wait_nxn", "main/MPI_Allreduce", 0) == pytest.approx(nxn_truth, rel=0.05)
    assert r.get("mpi_wait_nxn", "main/MPI_Allreduce", 1) < 0.01 * nxn_truth
    assert r.get("mpi_latesender", "main/MPI_Recv", 1) == pytest.approx(ls_truth, rel=0.05)
    assert r.get("mpi_latesender", "main/MPI_Recv", 0) == 0.0
    for cp in ("main/MPI_Cart_sub", "main/MPI_Comm_split_type", "main/MPI_Comm_create_group"):
        assert [r.get("visits", cp, rank) for rank in (0, 1)] == [1, 1], cp
    # world, self, the grid, its row, the shared-memory and the group communicator
    defs = subprocess.run(["otf2-print", "-G", str(out / "traces.otf2")], capture_output=True, text=True).stdout
    assert len(re.findall(r"^COMM ", defs, re.M)) == 6
    # the row made by MPI_Cart_sub has its own 1-D topology of size 2, made from the grid
    assert re.search(r'^COMM .*Name: "Comm 0\.1".*Parent: "Comm 0\.0"', defs, re.M)
    assert len(re.findall(r"^CART_TOPOLOGY ", defs, re.M)) == 2
    assert re.search(r'^CART_TOPOLOGY .*Communicator: "Comm 0\.1".*1 Dimension', defs, re.M)
    assert re.search(r'^CART_DIMENSION\s+2 .*Size: 2, Periodicity: FALSE', defs, re.M)


def clock_offsets(trace: Path) -> list[tuple[int, int, int, float]]:
    """(location, time, offset, stddev) of the ClockOffset records, from otf2-print -C."""
    proc = subprocess.run(["otf2-print", "-C", str(trace / "traces.otf2")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [(int(loc), int(time), int(off), float(sd)) for loc, time, off, sd in re.findall(
        r"^CLOCK_OFFSET\s+(\d+)\s+Time: (\d+), Offset: ([+-]?\d+), StdDev: ([0-9.e+-]+)", proc.stdout, re.M)]


@pytest.mark.parametrize("mpi", MPIS)
def test_clock_offsets_at_init_and_finalize(mpi: str, tmp_path: Path) -> None:
    exe = compile_program(tmp_path, mpi, LATE_SENDER)
    out = tmp_path / "out"
    sleeps = late_sender_truth(run(mpi, 2, [str(exe)], trace=out).stdout)
    offsets = clock_offsets(out)
    # two per location, as Score-P writes them: one measured in MPI_Init, one in MPI_Finalize
    assert sorted(loc for loc, *_ in offsets) == [0, 0, 1, 1]
    text = otf2_print(out)
    pattern = re.compile(r"^(ENTER|LEAVE)\s+(\d+)\s+(\d+)\s+Region: \"(MPI_Init|MPI_Finalize)\"", re.M)
    spans: dict[tuple[int, str], list[int]] = {}
    for kind, loc, time, region in pattern.findall(text):
        spans.setdefault((int(loc), region), []).append(int(time))
    for loc in (0, 1):
        init, fin = sorted(time for lo, time, _, _ in offsets if lo == loc)
        # each record lies inside the call that measured it
        assert spans[loc, "MPI_Init"][0] <= init <= spans[loc, "MPI_Init"][1]
        assert spans[loc, "MPI_Finalize"][0] <= fin <= spans[loc, "MPI_Finalize"][1]
    # both ranks share one machine's clock (offset exactly 0 to rank 0), and
    # the archive's timestamps are already synchronised: nothing is left to apply
    assert all(off == 0 and sd == 0.0 for *_, off, sd in offsets)
    # waitscope reads the same times: the Late Sender waiting is the injected one
    check_late_sender(out, "main/solver/exchange/MPI_Recv", sleeps)
