"""Communication matrices and message sizes (waitscope.comm, Trace.comm_matrix, Trace.message_sizes).

The reference for the point-to-point matrices is ``otf2-print`` (OTF2's
own tool, Debian package otf2-tools) run on the archives: its send lines
name the sending location, the receiving location (resolved from the
communicator rank) and the length.  The collective shares are worked out
by hand from the synthetic programs' recorded bytes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

import waitscope
from waitscope import synth
from waitscope.examples import HALO2D, PING_PONG

OTF2_PRINT = shutil.which("otf2-print")
SEND = re.compile(r"^MPI_I?SEND\s+(\d+)\s+\d+\s+Receiver: \d+ \(\"[^\"]*\" <(\d+)>\).*Length: (\d+)")
LOCATION = re.compile(r"^LOCATION\s+(\d+)\s+.*Group: \"MPI Rank (\d+)\"")


def otf2_print_matrix(anchor: str) -> tuple[np.ndarray, np.ndarray, Counter]:
    """(bytes, counts, sizes) from otf2-print's event and definition listings."""
    assert OTF2_PRINT, "otf2-print (Debian: otf2-tools) is needed by this test; .ci/setup installs it"
    defs = subprocess.run([OTF2_PRINT, "-G", anchor], capture_output=True, text=True, check=True).stdout
    rank_of = {int(m.group(1)): int(m.group(2)) for m in map(LOCATION.match, defs.splitlines()) if m}
    n = max(rank_of.values()) + 1
    nbytes = np.zeros((n, n), dtype=np.int64)
    count = np.zeros((n, n), dtype=np.int64)
    sizes: Counter = Counter()
    events = subprocess.run([OTF2_PRINT, anchor], capture_output=True, text=True, check=True).stdout
    n_lines = 0
    for line in events.splitlines():
        if line.startswith("MPI_SEND") or line.startswith("MPI_ISEND "):
            m = SEND.match(line)
            assert m, line
            src, dst, length = rank_of[int(m.group(1))], rank_of[int(m.group(2))], int(m.group(3))
            nbytes[src, dst] += length
            count[src, dst] += 1
            sizes[length] += 1
            n_lines += 1
    assert n_lines > 0
    return nbytes, count, sizes


@pytest.mark.parametrize("anchor", [PING_PONG, HALO2D + "/traces.otf2"], ids=["ping-pong", "halo2d"])
def test_bundled_traces_match_otf2_print(anchor):
    nbytes, count, sizes = otf2_print_matrix(anchor)
    trace = waitscope.open(anchor)
    got = trace.comm_matrix()
    assert got.dtype == np.int64
    assert np.array_equal(got, nbytes)
    assert np.array_equal(trace.comm_matrix(kind="count"), count)
    hist = trace.message_sizes()
    expected = Counter()
    for size, k in sizes.items():
        expected[size.bit_length() - 1] += k
    assert {int(r["log2_class"]): int(r["count"]) for r in hist if r["count"]} == dict(expected)
    assert int(hist["bytes"].sum()) == int(nbytes.sum())
    assert np.all(hist["low"][hist["log2_class"] >= 0] == 2 ** hist["log2_class"][hist["log2_class"] >= 0])


def test_sub_communicator_ranks_become_world_ranks(tmp_path):
    # messages on a communicator of world ranks (3, 1, 2): its rank 0 is world rank 3
    prog = synth.Program(4)
    sub = prog.comm([3, 1, 2])
    prog.rank(3).send(2, tag=1, size=100, comm=sub).send(1, tag=1, size=7, comm=sub)
    prog.rank(2).recv(0, tag=1, comm=sub)
    prog.rank(1).recv(0, tag=1, comm=sub).send(0, size=0).send(0, size=1)
    prog.rank(0).recv(1).recv(1)
    anchor = prog.write(tmp_path / "sub")
    nbytes, count, _ = otf2_print_matrix(anchor)
    expected = np.zeros((4, 4), dtype=np.int64)
    expected[3, 2], expected[3, 1], expected[1, 0] = 100, 7, 1
    assert np.array_equal(nbytes, expected)  # otf2-print agrees with the program
    trace = waitscope.open(anchor)
    assert np.array_equal(trace.comm_matrix(), expected)
    counts = np.zeros((4, 4), dtype=np.int64)
    counts[3, 2], counts[3, 1], counts[1, 0] = 1, 1, 2  # the empty message counts too
    assert np.array_equal(count, counts)
    assert np.array_equal(trace.comm_matrix("count"), counts)
    hist = trace.message_sizes()
    # classes: -1 (0 bytes), 0 (1 byte), 2 (7 bytes), 6 (100 bytes)
    assert [(int(r["log2_class"]), int(r["count"])) for r in hist] == [
        (-1, 1), (0, 1), (1, 0), (2, 1), (3, 0), (4, 0), (5, 0), (6, 1)]
    assert (int(hist["low"][-1]), int(hist["high"][-1])) == (64, 128)


def test_collective_shares_by_hand():
    prog = synth.Program(3)
    for r in range(3):
        prog.rank(r).bcast(root=1, size=8).gather(root=2, size=4).allreduce(size=16)
    trace = prog.run()
    # recorded bytes sent (synth's model): bcast root 24; gather 4 each (the root too); allreduce 48 each
    # bcast: 8 from rank 1 to every rank; gather: 4 from 0 and 1 to 2, the root's own 4 on the diagonal;
    # allreduce: 16 from every rank to every rank
    expected = np.array([[16, 16, 20],
                         [24, 24, 28],
                         [16, 16, 20]], dtype=float)
    assert np.array_equal(trace.comm_matrix(collectives=True), expected)
    assert np.array_equal(trace.comm_matrix("count", collectives=True),
                          [[1, 1, 2], [2, 2, 3], [1, 1, 2]])
    assert not trace.comm_matrix().any()  # no point-to-point messages
    assert trace.comm_matrix(collectives=True).sum() == 24 + 12 + 3 * 48  # every byte sent once


def test_window_keeps_messages_sent_inside():
    prog = synth.Program(2)
    prog.rank(0).send(1, size=10).compute("work", 1.0).send(1, size=20).compute("work", 1.0).send(1, size=40)
    prog.rank(1).recv(0).recv(0).recv(0)
    trace = prog.run(resolution=1000)
    assert trace.comm_matrix()[0, 1] == 70
    assert trace.comm_matrix(window=(0.5, 1.5))[0, 1] == 20
    assert trace.comm_matrix(window=(0.5, 3.0))[0, 1] == 60
    assert trace.comm_matrix("count", window=(0.5, 3.0))[0, 1] == 2
    sizes = trace.message_sizes(window=(0.5, 3.0))  # 20 bytes: class 4, 40 bytes: class 5
    assert [(int(r["log2_class"]), int(r["count"])) for r in sizes] == [(4, 1), (5, 1)]


def test_bad_arguments():
    trace = waitscope.open(PING_PONG)
    with pytest.raises(ValueError, match="kind"):
        trace.comm_matrix(kind="volume")
    with pytest.raises(ValueError, match="window"):
        trace.comm_matrix(window=(1.0, 0.0))
    with pytest.raises(TypeError, match="collectives"):
        trace.comm_matrix(collectives="yes")


def test_cli_comm(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "waitscope", "comm", PING_PONG], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "from 0" in proc.stdout and "4177920" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "waitscope", "comm", PING_PONG, "--kind", "count", "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["matrix"] == [[0, 8], [8, 0]]
    assert sum(row["count"] for row in doc["message_sizes"]) == 16


def _bar_labels(fig) -> list[str]:
    """The tick labels of the colour bar inside its range."""
    fig.canvas.draw()
    bar = fig.axes[1]
    low, high = sorted(bar.get_ylim())
    return [t.get_text() for t, y in zip(bar.get_yticklabels(), bar.get_yticks())
            if t.get_text() and low - 1e-9 * abs(low) <= y <= high * (1 + 1e-9)]


def test_plot_comm_matrix():
    from waitscope import plot

    trace = waitscope.open(HALO2D)
    fig = plot.comm_matrix(trace)
    ax = fig.axes[0]
    image = ax.images[0]
    data = np.ma.getdata(image.get_array())
    assert np.array_equal(data, trace.comm_matrix())
    # the two ranks send each other 20,480 bytes: values close together (here equal) on a linear
    # scale from 0, and a colour bar in k without an offset (a log scale read 2.048e4 .. 2.048e4)
    positive = data[data > 0]
    assert positive.max() < 10 * positive.min()
    assert type(image.norm).__name__ == "Normalize" and image.norm.vmin == 0.0
    assert image.norm.vmax == positive.max()
    fig.canvas.draw()
    labels = _bar_labels(fig)
    assert labels[0] == "0" and labels[-1] == "20k" and all("e" not in label for label in labels)
    assert fig.axes[1].yaxis.get_offset_text().get_text() == ""
    # values over decades: a log scale, labelled 1, 10, 100 (k, M, G for large ones)
    fig = plot.comm_matrix(np.array([[0, 1], [100_000, 0]]), kind="count")
    assert type(fig.axes[0].images[0].norm).__name__ == "LogNorm"
    assert _bar_labels(fig) == ["1", "10", "100", "1k", "10k", "100k"]
    # a matrix given directly; zero cells are masked (no colour on a log scale)
    fig = plot.comm_matrix(np.array([[0, 5], [100, 0]]), kind="count")
    arr = fig.axes[0].images[0].get_array()
    assert bool(np.ma.getmaskarray(arr)[0, 0]) and not bool(np.ma.getmaskarray(arr)[1, 0])
    with pytest.raises(ValueError, match="square"):
        plot.comm_matrix(np.zeros((2, 3)))


PARALLEL = """
import json, sys
from mpi4py import MPI
import waitscope
trace = waitscope.open(sys.argv[1], comm=MPI.COMM_WORLD)
out = {"loaded": [int(x) for x in trace.loaded_locations],
       "bytes": trace.comm_matrix().tolist(), "count": trace.comm_matrix("count").tolist(),
       "collectives": trace.comm_matrix(collectives=True).tolist(),
       "sizes": [[int(v) for v in row] for row in trace.message_sizes()]}
with open(sys.argv[2] + f"-{MPI.COMM_WORLD.Get_rank()}.json", "w") as f:
    json.dump(out, f)
"""


def test_parallel_mode_sums_over_the_processes(tmp_path):
    # under mpiexec every process loads its own locations; each gets the whole matrix
    from conftest import mpi_launcher  # tests/ is on sys.path

    launcher = mpi_launcher()
    assert launcher is not None, "the parallel mode needs mpi4py and the mpiexec of its MPI"
    mpiexec, env = launcher
    script = tmp_path / "comm_parallel.py"
    script.write_text(PARALLEL)
    run = subprocess.run([*mpiexec, "-n", "2", sys.executable, str(script), HALO2D, str(tmp_path / "out")],
                         env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    trace = waitscope.open(HALO2D)
    loaded = []
    for rank in range(2):
        got = json.loads((tmp_path / f"out-{rank}.json").read_text())
        loaded.append(got["loaded"])
        assert got["bytes"] == trace.comm_matrix().tolist()
        assert got["count"] == trace.comm_matrix("count").tolist()
        assert got["collectives"] == trace.comm_matrix(collectives=True).tolist()
        assert got["sizes"] == [[int(v) for v in row] for row in trace.message_sizes()]
    assert loaded == [[0], [1]]  # each process read one location only
