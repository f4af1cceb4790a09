"""The store's compact columns: event times as clock ticks (a 64-bit base
per block of 128 events, 32 bits per event, an escape table for events too
far from their block's base), side-table columns in the widths the values
need, and the writer that repeats a program's main loop.

Every time handed out must be exactly (ticks - offset) / resolution as
the reader computes it, whatever the form, and every value must survive a
write and a read; values that do not fit the narrow widths keep the wide
ones.  Expected values are worked out from the programs' own parameters.
"""
from __future__ import annotations

import numpy as np
import pytest

import waitscope
from waitscope import synth

RES = 10**9  # ticks per second: 2^32 ticks are 4.29 s


def _long_gaps() -> synth.Program:
    """Two ranks; rank 0 computes 10 s (over 2^32 ticks) inside a block of
    events, rank 1 waits for its message: the Late Sender is 10 s."""
    p = synth.Program(2)
    r0, r1 = p.rank(0), p.rank(1)
    for i in range(40):
        r0.compute("short", 1e-6)
    r0.compute("long", 10.0)
    r0.send(1, tag=3, size=8)
    for i in range(40):
        r0.compute("short", 1e-6)
    r1.recv(0, tag=3)
    return p


def test_times_across_gaps_of_more_than_2_to_the_32_ticks(tmp_path) -> None:
    p = _long_gaps()
    mem = p.run(latency=0.0, bandwidth=1e12, mpi_overhead=0.0, resolution=RES)
    anchor = p.write(tmp_path / "gaps" / "traces.otf2", latency=0.0, bandwidth=1e12, mpi_overhead=0.0,
                     resolution=RES)
    disk = waitscope.open(anchor)
    for trace in (mem, disk):
        t0 = trace.events(0).time
        assert np.all(np.diff(t0) >= 0)
        # every time is a whole number of ticks in seconds, the reader's conversion
        ticks = np.rint(t0 * RES).astype(np.int64)
        assert np.array_equal(ticks.astype(np.float64) * (1.0 / RES), t0)
        # the long computation: 10 s between its Enter and Leave
        assert np.max(np.diff(ticks)) == 10 * RES
        r = trace.analyze()
        assert r.total("mpi_latesender") == pytest.approx(10.0 + 40e-6, abs=1e-6)  # 40 short ones before
    # written back, the archive holds the same ticks
    again = waitscope.open(_rewrite(disk, tmp_path))
    for loc in range(2):
        assert np.array_equal(again.events(loc).time, disk.events(loc).time)


def _rewrite(trace: waitscope.Trace, tmp_path) -> str:
    out = tmp_path / "again" / "traces.otf2"
    trace.write(out)
    return str(out)


def test_wide_values_keep_their_width(tmp_path) -> None:
    p = synth.Program(2)
    big, tag = 5 * 2**30, 70_000  # over 32 and 16 bits
    p.rank(0).send(1, tag=tag, size=big)
    p.rank(0).send(1, tag=1, size=8)
    p.rank(1).recv(0, tag=tag)
    p.rank(1).recv(0, tag=1)
    anchor = p.write(tmp_path / "wide" / "traces.otf2")
    trace = waitscope.open(anchor)
    sent = trace.messages(0)
    assert list(sent["bytes"]) == [big, 8] and list(sent["tag"]) == [tag, 1]
    ev = trace.events(1)
    assert ev.msg_bytes.dtype == np.uint64 and list(ev.msg_bytes) == [big, 8]
    assert ev.msg_tag.dtype == np.uint32 and list(ev.msg_tag) == [tag, 1]
    again = waitscope.open(_rewrite(trace, tmp_path))
    assert list(again.messages(1)["bytes"]) == [big, 8] and list(again.messages(1)["tag"]) == [tag, 1]


def test_narrow_columns_hand_out_the_documented_dtypes(pingpong_dir) -> None:
    ev = waitscope.open(pingpong_dir).events(0)
    assert ev.time.dtype == np.float64 and ev.msg_bytes.dtype == np.uint64 and ev.msg_tag.dtype == np.uint32
    assert ev.msg_peer.dtype == np.uint32 and ev.msg_comm.dtype == np.uint32 and ev.req_id.dtype == np.uint64
    for column in (ev.time, ev.msg_bytes, ev.msg_tag, ev.msg_peer, ev.msg_comm, ev.req_id):
        assert not column.flags.writeable


def test_store_holds_at_most_16_bytes_per_event_on_a_halo_exchange() -> None:
    # the exact bytes of the event columns: 4 + 1 + 4 per event and 8 per
    # block of 128 (times, kinds, references), 4 + 2 + 2 + 2 + 4 per
    # message, 4 + 4 per request, 29 per collective
    p = synth.Program(16)
    for r in range(16):
        rank = p.rank(r)
        for i in range(20):
            reqs = [rank.irecv((r - 1) % 16, tag=1), rank.isend((r + 1) % 16, tag=1, size=1024)]
            rank.compute("work", 1e-4)
            rank.waitall(reqs)
        rank.allreduce(size=8)
    trace = p.run()
    n, m, q, c = 0, 0, 0, 0
    for loc in trace.loaded_locations:
        e = trace.events(int(loc))
        n += len(e.kind)
        m += len(e.msg_event)
        q += len(e.req_event)
        c += len(e.coll_event)
    blocks = sum(-(-len(trace.events(int(loc)).kind) // 128) for loc in trace.loaded_locations)
    expected = 9 * n + 8 * blocks + 14 * m + 8 * q + 29 * c
    assert trace._core.event_memory() == expected
    assert expected / n <= 16


def test_repeated_main_loop_multiplies_the_waiting(tmp_path) -> None:
    p = _long_gaps()
    base = waitscope.open(p.write(tmp_path / "base" / "traces.otf2"))
    out = tmp_path / "x3" / "traces.otf2"
    base._core.write(str(out), repeat=3)
    rep = waitscope.open(out)
    # the calls of MPI_Init and MPI_Finalize, main and the program region once, the rest 3 times
    for loc in range(2):
        n = len(base.events(loc).kind)
        outside = 8  # the program region's and main's Enter and Leave, MPI_Init's and MPI_Finalize's
        assert len(rep.events(loc).kind) == outside + 3 * (n - outside)
    a, b = base.analyze(), rep.analyze()
    assert b.total("mpi_latesender") == pytest.approx(3 * a.total("mpi_latesender"), rel=1e-12)
    t = rep.events(0).time
    assert np.all(np.diff(t) >= 0)


def test_repeat_needs_mpi_init_and_finalize(tmp_path) -> None:
    trace = waitscope.open(_long_gaps().write(tmp_path / "base" / "traces.otf2"))
    with pytest.raises(ValueError, match="number of copies"):
        trace._core.write(str(tmp_path / "zero" / "traces.otf2"), repeat=0)
