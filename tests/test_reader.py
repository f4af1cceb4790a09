"""Reading real Score-P traces: the store must agree with otf2-print."""

from __future__ import annotations

import gc
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope._names import OTF2_RECORD_NAMES

OTF2_PRINT = shutil.which("otf2-print")
needs_otf2_print = pytest.mark.skipif(OTF2_PRINT is None, reason="otf2-print is not installed")

EVENT_LINE = re.compile(r"^([A-Z_]+)\s+(\d+)\s+(\d+)\s+(.*)$")


def otf2_print_events(path: Path) -> list[tuple[str, int, int, str]]:
    out = subprocess.run([OTF2_PRINT, str(path / "traces.otf2")], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        m = EVENT_LINE.match(line)
        if m:
            rows.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)))
    return rows


def otf2_print_definitions(path: Path) -> str:
    return subprocess.run([OTF2_PRINT, "-G", str(path / "traces.otf2")], capture_output=True, text=True,
                          check=True).stdout


@needs_otf2_print
@pytest.mark.parametrize("which", ["pingpong_dir", "papi_dir"])
def test_event_counts_match_otf2_print(which, request):
    path = request.getfixturevalue(which)
    trace = waitscope.open(path)
    rows = otf2_print_events(path)
    # ProgramBegin and ProgramEnd name the program region: they are stored as
    # its Enter and Leave, the root of every call path
    as_stored = {"PROGRAM_BEGIN": "ENTER", "PROGRAM_END": "LEAVE"}
    expected = Counter((as_stored.get(name, name), loc) for name, loc, _, _ in rows)
    stored_names = set(OTF2_RECORD_NAMES.values())
    assert trace.program_region == "ping-pong.otf2"
    for loc in trace.locations:
        ev = trace.events(loc.index)
        assert trace.callpath_names[ev.callpath[0]] == "ping-pong.otf2" and int(ev.kind[0]) == 1
        assert trace.callpath_names[ev.callpath[-1]] == "ping-pong.otf2" and int(ev.kind[-1]) == 2
        got = Counter(OTF2_RECORD_NAMES[int(k)] for k in ev.kind)
        for name in stored_names:
            assert got.get(name, 0) == expected.get((name, loc.id), 0), (name, loc.index)
        skipped = sum(n for (name, l), n in expected.items() if l == loc.id and name not in stored_names)
        assert ev.n_skipped == skipped
        # every record otf2-print shows is either stored or counted as skipped
        assert len(ev) + ev.n_skipped == sum(n for (_, l), n in expected.items() if l == loc.id)
        assert loc.n_records == len(ev) + ev.n_skipped


@needs_otf2_print
def test_timestamps_match_otf2_print(pingpong_dir):
    trace = waitscope.open(pingpong_dir)
    clock = trace.clock
    rows = otf2_print_events(pingpong_dir)
    for loc in trace.locations:
        ticks = np.array([t for _, l, t, _ in rows if l == loc.id], dtype=np.int64)
        seconds = (ticks - clock["offset"]) / clock["resolution"]
        np.testing.assert_allclose(trace.events(loc.index).time, seconds, rtol=0, atol=1e-12)


@needs_otf2_print
def test_message_sizes_and_partners_match_otf2_print(pingpong_dir):
    trace = waitscope.open(pingpong_dir)
    rows = otf2_print_events(pingpong_dir)
    for loc in trace.locations:
        printed = [(name, int(re.search(r"Length: (\d+)", a).group(1)), int(re.search(r"Tag: (\d+)", a).group(1)))
                   for name, l, _, a in rows if l == loc.id and name in ("MPI_SEND", "MPI_RECV")]
        m = trace.messages(loc.index)
        ours = [("MPI_SEND" if k == "send" else "MPI_RECV", int(b), int(t))
                for k, b, t in zip(m["kind"], m["bytes"], m["tag"])]
        assert ours == printed
        assert set(m["partner"]) == {1 - loc.index}
    sizes = sorted(set(int(b) for b in trace.messages(0)["bytes"]))
    assert sizes == [16384 * 2**k for k in range(8)]


@needs_otf2_print
def test_region_names_match_otf2_print(pingpong_dir):
    trace = waitscope.open(pingpong_dir)
    text = otf2_print_definitions(pingpong_dir)
    printed = re.findall(r'^REGION\s+\d+\s+Name: "([^"]*)"', text, flags=re.M)
    assert trace.region_names == printed
    regions = {r.name: r for r in trace.regions}
    assert regions["MPI_Send"].paradigm == "mpi" and regions["MPI_Send"].role == "point2point"
    assert regions["MPI_Barrier"].role == "barrier"
    assert regions["MPI_Bcast"].role == "coll_one2all"
    assert regions["MPI_Send"].file == "MPI"
    assert regions["int main(int, char**)"].canonical_name == "main"


def test_definitions(pingpong_dir):
    trace = waitscope.open(pingpong_dir)
    assert trace.clock["resolution"] == 2095197216
    assert trace.clock["offset"] == 7397466976977800
    locs = trace.locations
    assert [l.rank for l in locs] == [0, 1]
    assert [l.process for l in locs] == ["MPI Rank 0", "MPI Rank 1"]
    assert [l.name for l in locs] == ["Master thread", "Master thread"]
    assert [l.thread for l in locs] == [0, 0]
    comms = {c.name: c for c in trace.communicators}
    assert comms["MPI_COMM_WORLD"].size == 2
    assert list(comms["MPI_COMM_WORLD"].locations) == [0, 1]
    assert comms["MPI_COMM_SELF"].is_self
    assert [n["name"] for n in trace.system_tree] == ["Linux", "quartz10"]
    topo = trace.cart_topology
    assert topo is not None and topo.name == "Process x Thread"
    assert topo.dims == (2, 1)
    assert topo.coords.tolist() == [[0, 0], [1, 0]]


def test_callpath_tree(pingpong_dir):
    trace = waitscope.open(pingpong_dir)
    # the program region (ProgramBegin) is the root, as in Scalasca and Cube
    assert trace.callpath_names == [
        "ping-pong.otf2",
        "ping-pong.otf2/int main(int, char**)",
        "ping-pong.otf2/int main(int, char**)/MPI_Init",
        "ping-pong.otf2/int main(int, char**)/MPI_Comm_size",
        "ping-pong.otf2/int main(int, char**)/MPI_Comm_rank",
        "ping-pong.otf2/int main(int, char**)/MPI_Send",
        "ping-pong.otf2/int main(int, char**)/MPI_Recv",
        "ping-pong.otf2/int main(int, char**)/MPI_Finalize",
    ]
    assert list(trace.callpath_parent) == [-1, 0, 1, 1, 1, 1, 1, 1]
    assert trace.callpath_index("main/MPI_Send") == 5
    ev = trace.events(0)
    cps = ev.callpath
    # the send record sits inside main/MPI_Send
    sends = np.flatnonzero(np.asarray(ev.kind) == 3)
    assert all(trace.callpath_names[cps[i]].endswith("MPI_Send") for i in sends)


def test_zero_copy_views_keep_trace_alive(pingpong_dir):
    trace = waitscope.open(pingpong_dir)
    kind = trace.events(1).kind
    ref = trace.events(1).ref
    assert not kind.flags.writeable and not kind.flags.owndata
    first = int(ref[0])
    del trace
    gc.collect()
    assert int(ref[0]) == first
    assert len(kind) == 60
    # the same memory is handed out twice, not copied
    t2 = waitscope.open(pingpong_dir)
    a, b = t2.events(0).kind, t2.events(0).kind
    assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def test_times_are_the_ticks_in_seconds(pingpong_dir):
    # the store keeps ticks (4 bytes per event and a base per block); the
    # seconds handed out are a read-only copy, (ticks - offset) / resolution
    trace = waitscope.open(pingpong_dir)
    time = trace.events(1).time
    assert time.dtype == np.float64 and not time.flags.writeable
    clock = trace.clock
    ticks = np.rint(time * clock["resolution"]).astype(np.int64)
    assert np.array_equal(ticks.astype(np.float64) * (1.0 / clock["resolution"]), time)
    assert time[0] >= 0.0 and np.all(np.diff(time) >= 0)


def test_to_pandas(pingpong_dir):
    pd = pytest.importorskip("pandas")
    trace = waitscope.open(pingpong_dir)
    df = trace.to_pandas()
    assert len(df) == 120
    assert set(df["rank"]) == {0, 1}
    sends = df[df["event"] == "send"]
    assert len(sends) == 16
    assert set(sends["region"]) == {"MPI_Send"}
    assert sorted(set(sends["bytes"])) == [16384 * 2**k for k in range(8)]
    one = trace.to_pandas(1)
    assert len(one) == 60 and set(one["location"]) == {1}
    assert isinstance(df, pd.DataFrame)


def test_subset_loading_reads_only_those_files(pingpong_copy):
    (pingpong_copy / "traces" / "0.evt").unlink()
    trace = waitscope.open(pingpong_copy, locations=[1])
    assert list(trace.loaded_locations) == [1]
    assert len(trace.events(1)) == 60
    with pytest.raises(ValueError, match="not loaded"):
        trace.events(0)
    with pytest.raises(waitscope.TraceError, match=r"0\.evt.*missing"):
        trace.load([0])


def test_open_accepts_anchor_or_directory(pingpong_dir):
    a = waitscope.open(pingpong_dir)
    b = waitscope.open(pingpong_dir / "traces.otf2")
    assert a.n_events == b.n_events == 120


def test_open_without_loading(pingpong_dir):
    trace = waitscope.open(pingpong_dir, load=False)
    assert trace.n_events == 0 and len(trace.loaded_locations) == 0
    assert trace.n_locations == 2
    trace.load()
    assert trace.n_events == 120
