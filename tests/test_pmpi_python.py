"""Python call paths of mpi4py programs (csrc/pmpi/pyframes.c).

An mpi4py program whose waiting is known is traced under MPICH (the MPI
mpi4py is built against here): its Python functions stand on the call
paths as ``file.py:qualified name``, followed by the mpi4py method they
called; what the program measured with its own clock (rank 0 sleeps before
each send while rank 1 has entered its receive) comes out as Late Sender
on exactly that call path; the messages mpi4py sends internally for a
pickled ``comm.allreduce`` stand under ``MPI.Comm.allreduce`` on a
communicator of mpi4py's own, apart from the program's messages; a
lowercase ``comm.recv`` (matched probe and receive) receives every message
``comm.send`` sent.
"""

from __future__ import annotations

import collections
import re
import sys
import textwrap
from pathlib import Path

import pytest

import waitscope
from conftest import relative_names
from test_pmpi import MPIS, run

pytest.importorskip("mpi4py")

STEPS = 4
SLEEP = 0.05

PROGRAM = f"""
    import sys
    import threading
    import time

    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD

    def clock():
        return time.clock_gettime(time.CLOCK_MONOTONIC)

    class Halo:
        def exchange(self, buf, stamps):
            if comm.rank == 0:
                time.sleep({SLEEP})
                stamps.append(clock())
                comm.Send(buf, dest=1, tag=3)
            else:
                stamps.append(clock())
                comm.Recv(buf, source=0, tag=3)

    def pickled(step):
        if comm.rank == 0:
            comm.send({{"step": step}}, dest=1, tag=4)
        else:
            assert comm.recv(source=0, tag=4) == {{"step": step}}
        return comm.allreduce(step + comm.rank)

    def busy(done):
        while not done.is_set():
            sum(range(1000))

    def main():
        done = threading.Event()
        if "--thread" in sys.argv:   # a Python thread computing while MPI is called
            threading.Thread(target=busy, args=(done,)).start()
        buf = np.zeros(1000)
        stamps = []
        for step in range({STEPS}):
            Halo().exchange(buf, stamps)
            assert pickled(step) == 2 * step + 1
        done.set()
        for i, t in enumerate(stamps):
            print("before %d %d %.9f" % (comm.rank, i, t), flush=True)

    main()
"""

PREFIX = "prog.py:<module>/prog.py:main"
RECV = f"{PREFIX}/prog.py:Halo.exchange/MPI.Comm.Recv/MPI_Recv"


def waits(output: str) -> list[float]:
    """Per step, how long rank 1 waited for rank 0 to start its send, from
    the CLOCK_MONOTONIC stamps (one clock on one machine) both ranks took
    just before their calls (none where rank 1 came later).  Rank 0 sleeps
    SLEEP before each send; rank 1 may reach its receive somewhat late on a
    loaded machine, or with a Python thread computing (its main thread gets
    the GIL back only every switch interval, 5 ms)."""
    t = {(int(r), int(i)): float(v) for r, i, v in re.findall(r"before (\d) (\d+) ([0-9.]+)", output)}
    assert len(t) == 2 * STEPS, output
    w = [max(t[0, i] - t[1, i], 0.0) for i in range(STEPS)]
    assert sum(w) > 0.25 * STEPS * SLEEP, w
    return w


@pytest.fixture(scope="module")
def mpich() -> str:
    if "mpich" not in MPIS:
        pytest.skip("no interposition library for MPICH, the MPI mpi4py is built against")
    return "mpich"


def measure(mpi: str, tmp_path: Path, *args: str) -> tuple[waitscope.Trace, list[float]]:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(PROGRAM))
    out = tmp_path / "out"
    proc = run(mpi, 2, [sys.executable, str(script), *args], trace=out, profile=out)
    return waitscope.open(out), waits(proc.stdout)


def message_paths(trace: waitscope.Trace, names: list[str]) -> list[tuple[str, str, int, int]]:
    """(kind, call path, communicator, tag) of every message record."""
    out = []
    for loc in range(trace.n_locations):
        m = trace.messages(loc)
        paths = trace.events(loc).callpath[m["event"]]
        out += [(k, names[p], int(c), int(t)) for k, p, c, t in zip(m["kind"], paths, m["comm"], m["tag"])]
    return out


@pytest.mark.parametrize("thread", [False, True], ids=["one-thread", "computing-thread"])
def test_python_frames_and_known_waiting(mpich: str, thread: bool, tmp_path: Path) -> None:
    trace, sleeps = measure(mpich, tmp_path, *(["--thread"] if thread else []))
    result = trace.analyze()
    names = relative_names(result)
    # Python frames by file and qualified name, then the mpi4py method
    assert RECV in names, names
    assert f"{PREFIX}/prog.py:Halo.exchange/MPI.Comm.Send/MPI_Send" in names
    assert f"{PREFIX}/prog.py:pickled/MPI.Comm.send/MPI_Send" in names
    assert f"{PREFIX}/prog.py:pickled/MPI.Comm.recv/MPI_Mrecv" in names
    assert "prog.py:<module>/MPI_Init_thread" in names  # under the import, without importlib's frames
    # no frame of the interpreter itself: Python frames, mpi4py methods, MPI functions
    frames = {f for n in names if n for f in n.split("/")}
    assert all(f.startswith(("prog.py:", "MPI.Comm.", "MPI_")) for f in frames), frames
    # the waiting the program measured, on the call path of the receive
    assert result.get("mpi_latesender", RECV, 1) == pytest.approx(sum(sleeps), rel=0.05)
    assert result.get("mpi_latesender", RECV, 0) == 0.0
    visits = result.by_callpath("visits")
    assert visits[names.index(RECV)] == STEPS


def test_mpi4py_internal_messages_apart(mpich: str, tmp_path: Path) -> None:
    trace, _ = measure(mpich, tmp_path)
    names = relative_names(trace)
    world = next(c.index for c in trace.communicators if c.name == "MPI_COMM_WORLD")
    records = message_paths(trace, names)
    mine = [r for r in records if "/MPI.Comm.allreduce/" not in r[1]]
    internal = [r for r in records if "/MPI.Comm.allreduce/" in r[1]]
    # the program's messages: one Send/Recv and one pickled send/recv per step, on MPI_COMM_WORLD
    counts = collections.Counter((k, p.rsplit("/", 2)[-2], c, t) for k, p, c, t in mine)
    assert counts == {("send", "MPI.Comm.Send", world, 3): STEPS, ("recv", "MPI.Comm.Recv", world, 3): STEPS,
                      ("send", "MPI.Comm.send", world, 4): STEPS, ("recv", "MPI.Comm.recv", world, 4): STEPS}, counts
    # mpi4py's own messages for comm.allreduce: under the method the program
    # called, on mpi4py's duplicate of MPI_COMM_WORLD, every one received
    assert internal and all(p.startswith(f"{PREFIX}/prog.py:pickled/MPI.Comm.allreduce/MPI_") for _, p, _, _ in internal)
    comms = {c for _, _, c, _ in internal}
    assert world not in comms and len(comms) == 1
    dup = trace.communicators[comms.pop()]
    assert dup.size == 2 and dup.parent == world
    kinds = collections.Counter(k for k, _, _, _ in internal)
    assert kinds["send"] + kinds["isend"] == kinds["recv"] + kinds["irecv"] > 0
    # and the pickled receive's matched probe holds no message of its own
    assert visits_of(trace, f"{PREFIX}/prog.py:pickled/MPI.Comm.recv/MPI_Mprobe") == [0, STEPS]


def visits_of(trace: waitscope.Trace, path: str) -> list[int]:
    result = trace.analyze()
    names = relative_names(result)
    full = result.callpath_names[names.index(path)]
    return [int(result.get("visits", full, loc)) for loc in range(trace.n_locations)]


def test_the_call_path_line_says_python() -> None:
    from waitscope.cli_measure import describe_callpaths

    line = describe_callpaths(["mpiexec.mpich", "-n", "2", sys.executable, "prog.py"], {})
    assert line.startswith("call paths: the Python frames at each MPI call") and "not sampled" in line
