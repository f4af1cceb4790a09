"""MPI programs nobody here wrote, as Debian packages them: NetPIPE (a
ping-pong over growing message sizes), measured without recompiling under
each MPI with ``waitscope trace --profile``.

What is known independently of waitscope: NetPIPE prints one line per
message size, ``N: BYTES bytes TIMES times --> ...``, and measures each
size in 3 trials of TIMES round trips (its fixed number of trials), so
each rank receives exactly 3 * TIMES messages of that size (sizes 1 and 4
also carry NetPIPE's own synchronisation messages and are left out).
Every message sent is received, and the profile of the same run counts
the same MPI calls as the trace.
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import waitscope
from test_measure import environment, mpi_command  # tests/ is on sys.path
from conftest import relative_names

NETPIPE = {"mpich": "NPmpich2", "openmpi": "NPopenmpi"}
TRIALS = 3
LINE = re.compile(r"^\s*\d+:\s+(\d+) bytes\s+(\d+) times -->", re.M)


@pytest.mark.parametrize("mpi", sorted(NETPIPE))
def test_netpipe(mpi: str, tmp_path: Path):
    program = shutil.which(NETPIPE[mpi])
    assert program is not None, f"{NETPIPE[mpi]} is missing: .ci/setup installs netpipe-mpich2 and netpipe-openmpi"
    out = tmp_path / "np"
    run = subprocess.run([sys.executable, "-m", "waitscope", "trace", "--profile", "-o", str(out), "--",
                          *mpi_command(mpi, 2, [program, "-u", "1024", "-n", "10"])],
                         env=environment(mpi, python=True), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    sizes = {int(b): int(t) for b, t in LINE.findall(run.stdout + run.stderr)}  # NetPIPE reports on stderr
    assert len(sizes) > 10 and max(sizes) >= 1024, run.stdout

    trace = waitscope.open(out)
    received = [collections.Counter(int(b) for k, b in zip(m["kind"], m["bytes"]) if k == "recv")
                for m in (trace.messages(loc) for loc in range(trace.n_locations))]
    sent = [collections.Counter(int(b) for k, b in zip(m["kind"], m["bytes"]) if k == "send")
            for m in (trace.messages(loc) for loc in range(trace.n_locations))]
    assert sent[0] == received[1] and sent[1] == received[0]
    for size, times in sizes.items():
        if size not in (1, 4):
            assert received[0][size] == received[1][size] == TRIALS * times, (size, received)

    result = trace.analyze()
    profile = waitscope.open_profile(out)
    for function in ("MPI_Send", "MPI_Recv"):
        calls = sum(int(sum(e.count)) for e in profile.entries
                    if profile.callpath_names[e.callpath].rsplit("/", 1)[-1] == function)
        visits = result.by_callpath("visits")[result.callpath_index(function)]
        assert calls == visits == sum(sent[0].values()) + sum(sent[1].values()), function
    # a stripped binary: the call paths are the MPI calls themselves
    assert "MPI_Recv" in relative_names(result)
    printed = subprocess.run(["otf2-print", str(out / "traces.otf2")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr[-2000:]
