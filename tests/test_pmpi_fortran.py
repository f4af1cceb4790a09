"""Fortran MPI programs under the interposition library: mpif.h, ``use mpi``
and ``use mpi_f08``, each compiled with MPICH's and Open MPI's ``mpifort``.

Neither MPI's Fortran binding reliably calls the C functions the library
wraps, so the library wraps the Fortran symbols themselves (csrc/pmpi/
fortran*.c).  One program, written three ways, checks what the trace must
hold, all of it known from the program itself:

* the Late Sender waiting its rank 0 injects by computing (a busy loop on
  the clock) before each of two sends, from the CLOCK_MONOTONIC times both
  ranks take just before their calls (``system_clock`` with 8-byte
  integers is that clock in nanoseconds);
* every message once (never twice where MPICH's mpif.h binding calls the
  C function), with its length and tag; ``MPI_STATUS(ES)_IGNORE`` and
  ``MPI_ANY_SOURCE``/``MPI_ANY_TAG`` resolved from the statuses the
  library supplies; ``MPI_IN_PLACE``, ``MPI_BOTTOM``, LOGICAL and
  CHARACTER arguments passed on unchanged (the program prints what it
  received);
* a communicator made by ``MPI_Comm_split`` and a Cartesian one from
  LOGICAL periods;
* the call paths named as written: ``sweep``, ``solver::exchange`` (a
  module procedure), the program's name for ``MAIN__``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import waitscope
from test_pmpi import MPIS, otf2_print, profile_entries, records, run

SPIN = 0.2  # seconds rank 0 computes before each of its two sends

PROGRAM = """
module solver
  {use}
  implicit none
  {include}
  integer, parameter :: n = 1000
  double precision :: buf(n), before(2)
  integer :: calls = 0
contains
  double precision function now()
    integer(8) :: c, r
    call system_clock(c, r)
    now = dble(c) / dble(r)
  end function now

  ! rank 0 computes before each exchange: rank 1 waits for it in MPI_Recv
  subroutine compute(rank)
    integer, intent(in) :: rank
    double precision :: t0
    if (rank /= 0) return
    t0 = now()
    do while (now() - t0 < {spin})
    end do
  end subroutine compute

  subroutine exchange(rank)
    integer, intent(in) :: rank
    integer :: ierr
    calls = calls + 1
    before(calls) = now()
    if (rank == 0) then
      call MPI_Send(buf, n, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD{ierr_kw})
    else
      call MPI_Recv(buf, n, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE{ierr})
    end if
  end subroutine exchange

  ! statuses ignored; ANY_SOURCE/ANY_TAG resolved from Waitany's or Waitall's statuses; Test's LOGICAL flag
  subroutine halo(rank)
    integer, intent(in) :: rank
    {request} :: req(2)
    {status} :: st{status_dims}, sts({status_size}2)
    integer :: idx, ierr, peer
    double precision :: sb(10), rb(20)
    logical :: flag
    sb = rank
    peer = 1 - rank
    call MPI_Irecv(rb, 10, MPI_DOUBLE_PRECISION, peer, 1, MPI_COMM_WORLD, req(1){ierr})
    call MPI_Isend(sb, 10, MPI_DOUBLE_PRECISION, peer, 1, MPI_COMM_WORLD, req(2){ierr})
    call MPI_Waitall(2, req, MPI_STATUSES_IGNORE{ierr})
    call MPI_Irecv(rb, 20, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, req(1){ierr})
    call MPI_Isend(sb, 5, MPI_DOUBLE_PRECISION, peer, 20 + rank, MPI_COMM_WORLD, req(2){ierr})
    call MPI_Waitany(2, req, idx, st{ierr})
    call MPI_Waitall(2, req, sts{ierr})
    call MPI_Irecv(rb, 3, MPI_DOUBLE_PRECISION, peer, 30, MPI_COMM_WORLD, req(1){ierr})
    call MPI_Isend(sb, 3, MPI_DOUBLE_PRECISION, peer, 30, MPI_COMM_WORLD, req(2){ierr})
    flag = .false.
    do while (.not. flag)
      call MPI_Test(req(1), flag, st{ierr})
    end do
    call MPI_Wait(req(2), MPI_STATUS_IGNORE{ierr})
  end subroutine halo

  subroutine collectives(rank)
    integer, intent(in) :: rank
    integer :: x(4), y(2), ierr, dims(1), length
    {comm} :: sub, cart
    logical :: periods(1)
    character(len=MPI_MAX_PROCESSOR_NAME) :: host
    x = rank + 1
    call MPI_Allreduce(MPI_IN_PLACE, x, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD{ierr})
    call MPI_Bcast(x, 4, MPI_INTEGER, 1, MPI_COMM_WORLD{ierr})
    call MPI_Comm_split(MPI_COMM_WORLD, 0, 1 - rank, sub{ierr})
    call MPI_Comm_set_name(sub, 'reversed', ierr)
    y(2 - rank) = rank
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, y, 1, MPI_INTEGER, sub{ierr})
    call MPI_Comm_free(sub{ierr})
    dims(1) = 2
    periods(1) = .true.
    call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart{ierr})
    call MPI_Barrier(cart{ierr})
    call MPI_Comm_free(cart{ierr})
    call MPI_Get_processor_name(host, length{ierr})
    write (*, '(A,6I3,L2)') 'collectives', x, y, length > 0
  end subroutine collectives

  ! a message sent from and received into absolute addresses (MPI_BOTTOM)
  subroutine bottom(rank)
    integer, intent(in) :: rank
    integer :: val(3), blen(1), ierr
    {datatype} :: bt, types(1)
    integer(kind=MPI_ADDRESS_KIND) :: disp(1)
    val = 0
    call MPI_Get_address(val, disp(1){ierr})
    blen(1) = 3
    types(1) = MPI_INTEGER
    call MPI_Type_create_struct(1, blen, disp, types, bt{ierr})
    call MPI_Type_commit(bt{ierr})
    if (rank == 0) then
      val = (/ 11, 22, 33 /)
      call MPI_Send(MPI_BOTTOM, 1, bt, 1, 9, MPI_COMM_WORLD{ierr})
    else
      call MPI_Recv(MPI_BOTTOM, 1, bt, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE{ierr})
      write (*, '(A,3I3)') 'bottom', val
    end if
    call MPI_Type_free(bt{ierr})
  end subroutine bottom
end module solver

subroutine sweep(rank)
  use solver
  implicit none
  integer, intent(in) :: rank
  integer :: it
  do it = 1, 2
    call compute(rank)
    call exchange(rank)
  end do
end subroutine sweep

program pingf
  use solver
  implicit none
  integer :: ierr, rank, i
  call MPI_Init({ierr_only})
  call MPI_Comm_rank(MPI_COMM_WORLD, rank{ierr})
  call MPI_Barrier(MPI_COMM_WORLD{ierr})
  call sweep(rank)
  call halo(rank)
  call collectives(rank)
  call bottom(rank)
  do i = 1, calls
    write (*, '(A,I1,A,I1,A,F24.9)') 'before ', rank, ' ', i - 1, ' ', before(i)
  end do
  call MPI_Finalize({ierr_only})
end program pingf
"""

BINDINGS = {
    "mpif.h": dict(use="", include="include 'mpif.h'", ierr=", ierr", ierr_kw=", ierr", ierr_only="ierr",
                   request="integer", status="integer", status_dims="(MPI_STATUS_SIZE)",
                   status_size="MPI_STATUS_SIZE, ", comm="integer",
                   datatype="integer"),
    "use mpi": dict(use="use mpi", include="", ierr=", ierr", ierr_kw=", ierr", ierr_only="ierr",
                    request="integer", status="integer", status_dims="(MPI_STATUS_SIZE)",
                   status_size="MPI_STATUS_SIZE, ", comm="integer",
                    datatype="integer"),
    # ierror is optional in mpi_f08: left out but for one call that names it
    "use mpi_f08": dict(use="use mpi_f08", include="", ierr="", ierr_kw=", ierror=ierr", ierr_only="",
                        request="type(MPI_Request)", status="type(MPI_Status)", status_dims="",
                        status_size="", comm="type(MPI_Comm)",
                        datatype="type(MPI_Datatype)"),
}


# mpif.h declares no interfaces: gfortran 10 and later refuse one routine
# called with buffers of different types unless told (as every F77 MPI code is)
LEGACY = ("-fallow-argument-mismatch",)


def compile_fortran(tmp: Path, mpi: str, source: str, name: str = "prog",
                    flags: tuple[str, ...] = ("-O0", "-g")) -> Path:
    compiler = shutil.which(f"mpifort.{mpi}")
    assert compiler, f"mpifort.{mpi} is missing: .ci/setup installs gfortran and the MPIs' development packages"
    src = tmp / (name + ".f90")
    src.write_text(textwrap.dedent(source))
    exe = tmp / f"{name}-{mpi}"
    proc = subprocess.run([compiler, *flags, "-o", str(exe), str(src)], capture_output=True, text=True, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return exe


def injected_waits(output: str) -> list[float]:
    """Per exchange, how long rank 1 waited in MPI_Recv for rank 0 to enter
    MPI_Send, from the clock readings both ranks printed before their calls."""
    t = {(int(r), int(i)): float(v) for r, i, v in re.findall(r"before (\d) (\d)\s+([0-9.]+)", output)}
    assert len(t) == 4, output
    waits = [t[0, i] - t[1, i] for i in range(2)]
    assert all(w > 0.9 * SPIN for w in waits), waits  # rank 0 computed before each send
    return waits


@pytest.mark.parametrize("binding", sorted(BINDINGS))
@pytest.mark.parametrize("mpi", MPIS)
def test_fortran_program(mpi: str, binding: str, tmp_path: Path) -> None:
    flags = ("-O0", "-g") + (LEGACY if binding == "mpif.h" else ())
    exe = compile_fortran(tmp_path, mpi, PROGRAM.format(spin=f"{SPIN}d0", **BINDINGS[binding]), flags=flags)
    out = tmp_path / "out"
    proc = run(mpi, 2, [str(exe)], trace=out, profile=out)
    waits = injected_waits(proc.stdout)
    # the buffers, MPI_IN_PLACE, MPI_BOTTOM, LOGICAL and CHARACTER arguments reached the MPI unchanged
    assert proc.stdout.count("collectives  3  3  3  3  1  0 T") == 2, proc.stdout
    assert "bottom 11 22 33" in proc.stdout

    text = otf2_print(out)
    sends, recvs = records(text, "MPI_SEND"), records(text, "MPI_RECV")
    # two exchanges and the MPI_BOTTOM message, each recorded once
    assert len(sends) == 3 and len(recvs) == 3
    assert sum("Tag: 7" in s and "Length: 8000" in s and "Receiver: 1 " in s for s in sends) == 2
    assert sum("Tag: 9" in s and "Length: 12" in s for s in sends) == 1
    assert sum("Tag: 7" in r and "Length: 8000" in r and "Sender: 0 " in r for r in recvs) == 2
    assert sum("Tag: 9" in r and "Length: 12" in r for r in recvs) == 1
    assert len([line for line in text.splitlines() if re.match(r"ENTER\s+0\s.*Region: \"MPI_Send\"", line)]) == 3
    assert len(records(text, "MPI_ISEND")) == len(records(text, "MPI_ISEND_COMPLETE")) == 6
    assert len(records(text, "MPI_IRECV_REQUEST")) == 6
    irecvs = records(text, "MPI_IRECV")
    assert sorted(re.search(r"Sender: (\d).*Tag: (\d+), Length: (\d+)", r).groups() for r in irecvs) == [
        ("0", "1", "80"), ("0", "20", "40"), ("0", "30", "24"), ("1", "1", "80"), ("1", "21", "40"),
        ("1", "30", "24")]
    ends = records(text, "MPI_COLLECTIVE_END")
    assert sum("ALLREDUCE" in e and "Sent: 32, Received: 32" in e for e in ends) == 2  # 4 INTEGERs in place
    assert sum("BCAST" in e and "Root: 1" in e for e in ends) == 2
    # on the split communicator (its rank 0 is world rank 1: "Comm 1.0"), on the Cartesian one
    assert sum("ALLGATHER" in e and '"Comm 1.0"' in e and "Sent: 8, Received: 8" in e for e in ends) == 2
    assert sum("BARRIER" in e and "MPI_COMM_WORLD" not in e for e in ends) == 2

    trace = waitscope.open(out)
    topo = trace.cart_topology
    assert topo is not None and topo.dims == (2,) and topo.periodic == (True,)
    r = trace.analyze()
    recv = "pingf/sweep/solver::exchange/MPI_Recv"
    assert r.get("mpi_latesender", recv, 1) == pytest.approx(sum(waits), rel=0.05)
    assert r.get("mpi_latesender", recv, 0) == 0.0
    names = r.callpath_names
    for path in ("pingf/solver::halo/MPI_Waitany", "pingf/solver::collectives/MPI_Cart_create",
                 "pingf/solver::collectives/MPI_Comm_set_name", "pingf/solver::bottom/MPI_Type_commit",
                 "pingf/MPI_Init", "pingf/MPI_Finalize"):
        assert any(n.endswith(path) for n in names), (path, names)
    assert not any("MAIN__" in n or "__solver_MOD" in n or n.endswith("/main") for n in names), names

    doc, entries = profile_entries(out)
    paths = [k for k in entries if k[0].endswith(recv) and k[2] == 12]
    assert len(paths) == 1
    e = entries[paths[0]]
    assert e["count"] == [0, 2]
    # the receive lasts the waiting plus the message's delivery; on a loaded
    # machine the receiver may also be scheduled late after the send
    assert 0.97 * sum(waits) <= e["sum"][1] <= 1.05 * sum(waits) + 0.05


# one rank: a request completed by each of MPI_Waitany, Testany, Waitsome and
# Testsome next to a null request, so that the index they return matters
# (MPICH 4.0's mpi_f08 binding returns them 0-based, Open MPI's 1-based)
COMPLETIONS = """
program completions
  {use}
  implicit none
  {include}
  {request} :: req(2)
  integer :: idx, x(4), y(4), outc, ind(2), k, ierr
  logical :: flag
  call MPI_Init({ierr_only})
  req(1) = MPI_REQUEST_NULL
  do k = 1, 4
    call MPI_Irecv(x, k, MPI_INTEGER, 0, k, MPI_COMM_SELF, req(2){ierr})
    call MPI_Send(y, k, MPI_INTEGER, 0, k, MPI_COMM_SELF{ierr})
    flag = .false.
    outc = 0
    if (k == 1) call MPI_Waitany(2, req, idx, MPI_STATUS_IGNORE{ierr})
    do while (k == 2 .and. .not. flag)
      call MPI_Testany(2, req, idx, flag, MPI_STATUS_IGNORE{ierr})
    end do
    if (k == 3) call MPI_Waitsome(2, req, outc, ind, MPI_STATUSES_IGNORE{ierr})
    do while (k == 4 .and. outc == 0)
      call MPI_Testsome(2, req, outc, ind, MPI_STATUSES_IGNORE{ierr})
    end do
  end do
  call MPI_Finalize({ierr_only})
end program completions
"""


@pytest.mark.parametrize("binding", sorted(BINDINGS))
@pytest.mark.parametrize("mpi", MPIS)
def test_fortran_completion_indices(mpi: str, binding: str, tmp_path: Path) -> None:
    exe = compile_fortran(tmp_path, mpi, COMPLETIONS.format(**BINDINGS[binding]))
    out = tmp_path / "out"
    run(mpi, 1, [str(exe)], trace=out)
    irecvs = records(otf2_print(out), "MPI_IRECV")
    # each of the four calls completed its receive of k INTEGERs with tag k
    assert sorted(re.search(r"Tag: (\d+), Length: (\d+)", r).groups() for r in irecvs) == [
        ("1", "4"), ("2", "8"), ("3", "12"), ("4", "16")]


NAMES = """
module grid_ops
  use mpi
contains
  subroutine halo(rank)
    integer :: rank, ierr, buf(4)
    call inner()
  contains
    subroutine inner()
      if (rank == 0) then
        call MPI_Send(buf, 4, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
      else
        call MPI_Recv(buf, 4, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      end if
    end subroutine inner
  end subroutine halo
end module grid_ops

subroutine rcv_real(rank)
  use grid_ops
  integer :: rank
  call halo(rank)
end subroutine rcv_real

program sweep3d
  use mpi
  integer :: ierr, rank
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call rcv_real(rank)
  call MPI_Finalize(ierr)
end program sweep3d
"""


@pytest.mark.parametrize("debug", [True, False])
def test_fortran_names_as_written(debug: bool, tmp_path: Path) -> None:
    """rcv_real_ as rcv_real, __grid_ops_MOD_halo as grid_ops::halo, the
    internal procedure inner.0 as inner, MAIN__ as the program's name, which
    only the debugging information keeps ("main program" without it)."""
    mpi = MPIS[0]
    exe = compile_fortran(tmp_path, mpi, NAMES, flags=("-O0",) + (("-g",) if debug else ()))
    out = tmp_path / "out"
    run(mpi, 2, [str(exe)], trace=out)
    names = waitscope.open(out).analyze().callpath_names
    program = "sweep3d" if debug else "main program"
    for path in (f"{program}/rcv_real/grid_ops::halo/inner/MPI_Recv", f"{program}/MPI_Init"):
        assert any(n == path or n.endswith("/" + path) for n in names), (path, names)
    assert not any(n == "main" or n.startswith("main/") or "/main/" in n for n in names), names


def _defined(lib: str) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


FORTRAN_LIBS = {
    "mpich": ["libmpichfort.so.12"],
    "openmpi": ["libmpi_mpifh.so.40", "libmpi_usempif08.so.40"],
}


@pytest.mark.parametrize("mpi", MPIS)
def test_every_fortran_spelling_is_wrapped(mpi: str, tmp_path: Path) -> None:
    """Each MPI function the library wraps in C is wrapped under every
    Fortran symbol the MPI defines for it, and every Fortran symbol the
    library defines is one the MPI has (a misspelt one would never be called)."""
    from waitscope import pmpi

    ours = _defined(pmpi.library_path(mpi))
    # where the MPI's Fortran libraries are: from a program linked with them
    exe = compile_fortran(tmp_path, mpi, "program p\n  use mpi_f08\n  call MPI_Init()\n  call MPI_Finalize()\nend program\n")
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, check=True).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
    theirs: set[str] = set()
    for lib in FORTRAN_LIBS[mpi]:
        assert lib in paths or any(k.startswith(lib.split(".so")[0]) for k in paths), ldd
        path = paths.get(lib) or next(v for k, v in paths.items() if k.startswith(lib.split(".so")[0]))
        theirs |= _defined(path)
    c_functions = sorted(s[4:] for s in ours if re.fullmatch(r"MPI_[A-Z][a-z_]+[a-z]", s) and not s.endswith("_c"))
    assert len(c_functions) > 100
    missing = []
    for name in c_functions:
        low = name.lower()
        spellings = [f"mpi_{low}_", f"mpi_{low}", f"mpi_{low}__", f"MPI_{name.upper()}",
                     f"mpi_{low}_f08_", f"mpi_{low}_f08ts_"]
        missing += [s for s in spellings if s in theirs and s not in ours]
    assert missing == []
    fortran_ours = {s for s in ours if s.lower().startswith("mpi_") and not re.fullmatch(r"MPI_[A-Z][a-z_0-9]+", s)}
    assert fortran_ours and fortran_ours <= theirs, sorted(fortran_ours - theirs)[:10]


MPROBE = """
program mprobef
  {use}
  implicit none
  {include}
  integer :: rank, ierr
  {message} :: msg
  {status} :: st{status_dims}
  {request} :: req
  logical :: flag
  double precision :: x(10), y(20)
  call MPI_Init({ierr_only})
  call MPI_Comm_rank(MPI_COMM_WORLD, rank{ierr})
  if (rank == 0) then
     x = 1d0
     y = 2d0
     call MPI_Send(x, 10, MPI_DOUBLE_PRECISION, 1, 5, MPI_COMM_WORLD{ierr})
     call MPI_Send(y, 20, MPI_DOUBLE_PRECISION, 1, 6, MPI_COMM_WORLD{ierr})
  else
     call MPI_Mprobe(0, 5, MPI_COMM_WORLD, msg, st{ierr})
     call MPI_Mrecv(x, 10, MPI_DOUBLE_PRECISION, msg, MPI_STATUS_IGNORE{ierr})
     flag = .false.
     do while (.not. flag)
        call MPI_Improbe(0, 6, MPI_COMM_WORLD, flag, msg, st{ierr})
     end do
     call MPI_Imrecv(y, 20, MPI_DOUBLE_PRECISION, msg, req{ierr})
     call MPI_Wait(req, MPI_STATUS_IGNORE{ierr})
     print '(A,2F6.1)', 'got', x(1), y(20)
  end if
  call MPI_Finalize({ierr_only})
end program mprobef
"""


@pytest.mark.parametrize("binding", sorted(BINDINGS))
@pytest.mark.parametrize("mpi", MPIS)
def test_fortran_matched_probes(mpi: str, binding: str, tmp_path: Path) -> None:
    """MPI_Mprobe/MPI_Mrecv and MPI_Improbe/MPI_Imrecv from Fortran: each message
    received once, with its sender, tag and length, whichever binding."""
    flags = ("-O0", "-g") + (LEGACY if binding == "mpif.h" else ())
    message = "type(MPI_Message)" if binding == "use mpi_f08" else "integer"
    exe = compile_fortran(tmp_path, mpi, MPROBE.format(message=message, **BINDINGS[binding]), name="mprobef",
                          flags=flags)
    out = tmp_path / "out"
    proc = run(mpi, 2, [str(exe)], trace=out)
    assert "got   1.0   2.0" in proc.stdout, proc.stdout
    text = otf2_print(out)
    recvs, irecvs = records(text, "MPI_RECV"), records(text, "MPI_IRECV")
    assert len(recvs) == 1 and "Sender: 0 " in recvs[0] and "Tag: 5" in recvs[0] and "Length: 80" in recvs[0]
    assert len(irecvs) == 1 and "Sender: 0 " in irecvs[0] and "Tag: 6" in irecvs[0] and "Length: 160" in irecvs[0]
    assert len(records(text, "MPI_IRECV_REQUEST")) == 1 and len(records(text, "MPI_SEND")) == 2
    names = waitscope.open(out).analyze().callpath_names
    for fn in ("MPI_Mprobe", "MPI_Mrecv", "MPI_Improbe", "MPI_Imrecv"):
        assert any(n.endswith("mprobef/" + fn) for n in names), (fn, names)
