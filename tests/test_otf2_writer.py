"""Tests of the OTF2 writer (ws_otf2_write, Trace.write)."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import waitscope
import waitscope._core as core
from waitscope import synth

from conftest import BUNDLED

COLUMNS = ["time", "kind", "ref", "msg_event", "msg_peer", "msg_comm", "msg_tag", "msg_bytes", "req_event", "req_id",
           "coll_event", "coll_comm", "coll_root", "coll_op", "coll_sent", "coll_received"]


def read(path):
    t = core.open(path)
    t.load()
    return t


def assert_same_events(a, b):
    assert a.n_locations == b.n_locations
    assert a.n_events == b.n_events
    for loc in range(a.n_locations):
        ea, eb = a.events(loc), b.events(loc)
        for col in COLUMNS:
            assert ea[col].dtype == eb[col].dtype, (loc, col)
            np.testing.assert_array_equal(ea[col], eb[col], err_msg=f"location {loc}, column {col}")


def assert_same_callpaths(a, b):
    for x, y in zip(a.callpaths(), b.callpaths()):
        np.testing.assert_array_equal(x, y)


def assert_same_definitions(a, b, ignore=("path",)):
    da, db = a.definitions(), b.definitions()
    assert da.keys() == db.keys()
    for key in da:
        if key in ignore:
            continue
        assert repr(da[key]) == repr(db[key]), key


def full_program():
    """Uses every operation, a sub-communicator and a topology."""
    prog = synth.Program(4)
    sub = prog.comm([2, 0, 3], name="odd one out")
    prog.cart((2, 2), periods=(True, False))
    for i in range(4):
        r = prog.rank(i)
        with r.region("step"):
            r.compute("work", 0.1 * (i + 1))
            right, left = (i + 1) % 4, (i - 1) % 4
            q = [r.irecv(left, tag=1), r.isend(right, tag=1, size=100)]
            r.waitall(q)
            if i % 2 == 0:
                r.ssend(i + 1, tag=2, size=10)
                r.send(i + 1, tag=3, size=1 << 20)
            else:
                r.recv(i - 1, tag=2).recv(i - 1, tag=3)
        r.barrier().bcast(root=3, size=8).scatter(root=1, size=8).reduce(root=2, size=8).gather(root=0, size=8)
        r.allreduce(8).alltoall(8).allgather(8).scan(8)
        if i != 1:
            r.allreduce(4, comm=sub).scan(4, comm=sub)
        if i == 2:
            q = r.isend(2, tag=5, size=3, comm=sub)
            r.wait(q)
        if i == 3:
            r.recv(0, tag=5, comm=sub)
    return prog


PARAMS = dict(latency=2e-6, bandwidth=1e9, eager_limit=4096, mpi_overhead=1e-7)


def test_synthetic_round_trip(tmp_path):
    prog = full_program()
    mem = prog.run(**PARAMS)._core
    path = prog.write(tmp_path / "exp", **PARAMS)
    assert path == os.path.join(str(tmp_path / "exp"), "traces.otf2")
    disk = read(path)
    assert_same_events(mem, disk)
    assert_same_callpaths(mem, disk)
    assert_same_definitions(mem, disk)
    d = disk.definitions()
    assert d["path"] == path
    assert list(d["locations"]["n_records"]) == [len(mem.events(i)["kind"]) for i in range(4)]
    assert d["cart_topologies"][0]["coords"].tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]


def test_anchor_path_and_overwrite(tmp_path):
    big = synth.Program(4)
    small = synth.Program(2)
    small.rank(0).send(1, size=1)
    small.rank(1).recv(0)
    anchor = str(tmp_path / "d" / "run.otf2")
    assert big.write(anchor) == anchor
    assert read(anchor).n_locations == 4
    # overwriting an archive with fewer locations leaves none of the old files
    assert small.write(anchor) == anchor
    t = read(anchor)
    assert t.n_locations == 2
    assert sorted(os.listdir(tmp_path / "d" / "run")) == ["0.def", "0.evt", "1.def", "1.evt"]
    assert_same_events(small.run()._core, t)


def test_write_errors(tmp_path):
    trace = synth.Program(1).run()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert synth.TraceError is waitscope.TraceError
    with pytest.raises(waitscope.TraceError, match="not a directory"):
        trace.write(str(blocker / "sub" / "traces.otf2"))
    with pytest.raises(ValueError):
        trace.write("")
    # a location directory with foreign files is not deleted
    d = tmp_path / "keep"
    trace.write(str(d))
    (d / "traces" / "notes.txt").write_text("mine")
    with pytest.raises(waitscope.TraceError, match="not part of an OTF2 archive"):
        trace.write(str(d))
    assert (d / "traces" / "notes.txt").read_text() == "mine"


def test_write_progress(tmp_path):
    prog = synth.Program(1)
    for _ in range(300_000):
        prog.rank(0).compute("w", 1e-6)
    trace = prog.run()
    seen = []
    trace.write(str(tmp_path / "p"), progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert seen and seen[-1] == ("write", trace.n_events, trace.n_events)


def test_scorep_trace_round_trip(pingpong_dir, tmp_path):
    # pingpong_dir (tests/conftest.py): the real Score-P trace
    original = read(str(pingpong_dir))
    original.write(str(tmp_path / "copy"))
    copy = read(str(tmp_path / "copy"))
    assert_same_events(original, copy)
    assert_same_callpaths(original, copy)
    assert_same_definitions(original, copy)
    # and once more: the copy of the copy is identical too
    copy.write(str(tmp_path / "copy2" / "traces.otf2"))
    assert_same_events(copy, read(str(tmp_path / "copy2")))


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print is not installed")
def test_otf2_print_accepts_generated_trace(tmp_path):
    prog = synth.Program(3)
    for i in range(3):
        r = prog.rank(i)
        for k in range(5):
            r.compute("work", 0.01)
            if i == 0:
                r.send(1, tag=k, size=8).send(2, tag=k, size=8)
            else:
                r.recv(0, tag=k)
        r.allreduce(8)
    path = prog.write(tmp_path / "t", latency=1e-6)
    out = subprocess.run(["otf2-print", path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert sum(line.startswith("MPI_SEND ") for line in lines) == 10
    assert sum(line.startswith("MPI_RECV ") for line in lines) == 10
    assert sum(line.startswith("MPI_COLLECTIVE_END ") for line in lines) == 3
    defs = subprocess.run(["otf2-print", "-G", path], capture_output=True, text=True)
    assert defs.returncode == 0, defs.stderr
    assert 'PARADIGM                               4  MPI, Name: "MPI"' in defs.stdout
    assert "Role: POINT2POINT, Paradigm: \"MPI\"" in defs.stdout


# ---- Score-P's program region -------------------------------------------------
#
# Score-P defines one region for the program (role ARTIFICIAL, paradigm
# MEASUREMENT_SYSTEM, the executable as canonical name) and names
# ProgramBegin with that canonical name; Scalasca refuses archives without
# it ("Unable to find program region in global definitions").

def program_regions(defs_text):
    return [line for line in defs_text.splitlines()
            if line.startswith("REGION ") and "Role: ARTIFICIAL, Paradigm: MEASUREMENT_SYSTEM" in line]


def program_begin_names(path):
    out = subprocess.run(["otf2-print", path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [line.split("Name: ")[1].split(" <")[0] for line in out.stdout.splitlines()
            if line.startswith("PROGRAM_BEGIN ")]


def small_program(name=None):
    prog = synth.Program(2) if name is None else synth.Program(2, name=name)
    prog.rank(0).compute("work", 0.5).send(1, tag=0, size=8)
    prog.rank(1).recv(0, tag=0)
    return prog


def test_synth_defines_the_program_region():
    trace = small_program("ring").run()
    regions = [r for r in trace.regions if r.role == "artificial" and r.paradigm == "measurement_system"]
    assert [(r.name, r.canonical_name) for r in regions] == [("ring", "/synthetic/ring")]
    default = [r for r in small_program().run().regions if r.role == "artificial"]
    assert [(r.name, r.canonical_name) for r in default] == [("synthetic", "/synthetic/synthetic")]
    # it is the root of every call path, entered where the program begins,
    # as Score-P's ProgramBegin enters it in Scalasca and Cube
    assert trace.callpath_names[:2] == ["ring", "ring/main"]
    assert all(n == "ring" or n.startswith("ring/") for n in trace.callpath_names)
    with pytest.raises(ValueError, match="non-empty string"):
        synth.Program(2, name="")


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print is not installed")
def test_program_region_and_program_begin_as_scorep_writes_them(tmp_path):
    path = small_program("ring").write(tmp_path / "t")
    defs = subprocess.run(["otf2-print", "-G", path], capture_output=True, text=True).stdout
    (line,) = program_regions(defs)
    assert 'Name: "ring"' in line and 'Aka. "/synthetic/ring"' in line
    assert program_begin_names(path) == ['"/synthetic/ring"'] * 2
    # read back and written again: still exactly one program region
    again = waitscope.open(path).write(tmp_path / "again")
    defs = subprocess.run(["otf2-print", "-G", again], capture_output=True, text=True).stdout
    assert len(program_regions(defs)) == 1
    assert program_begin_names(again) == ['"/synthetic/ring"'] * 2
    assert waitscope.open(again).callpath_names == waitscope.open(path).callpath_names


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print is not installed")
def test_program_region_of_a_scorep_archive_written_back(tmp_path):
    # Score-P's buffer-flush region is ARTIFICIAL / MEASUREMENT_SYSTEM too
    # but not the program: the region at the root of the call tree is
    path = waitscope.open(BUNDLED / "traces.otf2").write(tmp_path / "again")
    defs = subprocess.run(["otf2-print", "-G", path], capture_output=True, text=True).stdout
    assert len(program_regions(defs)) == 2  # the program and the buffer flush, as Score-P wrote them
    original = program_begin_names(BUNDLED / "traces.otf2")
    assert original == ['"/g/g92/bhatele1/umd/traces/score-p/ping-pong.otf2"'] * 2
    assert program_begin_names(path) == original
    assert waitscope.open(path).callpath_names == waitscope.open(BUNDLED / "traces.otf2").callpath_names
