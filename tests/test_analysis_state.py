"""The analysis state per message row (csrc/analysis/msg_waits.c).

A row's Late Sender and Late Receiver share one double: a row never has
both while each location's times never decrease, because a Late Sender
needs the send to start after the receive was posted and a Late Receiver
needs the reverse.  The reader refuses an event file whose timestamps go
backwards, which is what makes that hold for every trace; should a row
get both nevertheless, every row's Late Receiver moves to an array of its
own, which the C check exercises directly.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import waitscope
from waitscope import _core, synth

from c_checks import run_c_check


def test_a_row_with_both_waits_keeps_both(tmp_path):
    out = run_c_check(tmp_path, "msg_waits_check", ["analysis/msg_waits.c", "common/alloc.c"], otf2=True)
    assert out.strip() == "ok"


def timestamp(ticks: int) -> bytes:
    """An OTF2 timestamp record: its type (5) and the ticks in 8 bytes."""
    return b"\x05" + struct.pack("<Q", ticks)


def test_timestamps_going_backwards_are_refused(tmp_path):
    """Rank 1 posts its receive (MPI_Irecv) at 1.1 s, then works from 0 s
    on: a Late Sender (send at 1.0, MPI_Wait entered at 0.2) and a Late
    Receiver (posted 0.1 after the send began) on one row.  The reader
    names the event file and the event instead of analysing it."""
    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).send(1, size=8)
    r1 = prog.rank(1)
    request = r1.irecv(0)
    r1.compute("work", 0.2)
    r1.wait(request)
    anchor = prog.write(tmp_path / "traces.otf2", resolution=1000, latency=0.0, mpi_overhead=0.0)
    irecv = waitscope.open(anchor).region_names.index("MPI_Irecv")
    evt = tmp_path / "traces" / "1.evt"
    data = evt.read_bytes()
    # Enter MPI_Irecv, MpiIrecvRequest (request 1), Leave MPI_Irecv, at tick 1 (time 0)
    posting = bytes([0x0C, 0x01, irecv, 0x11, 0x01, 0x01, 0x0D, 0x01, irecv])
    assert data.count(posting) == 1
    evt.write_bytes(data.replace(posting, timestamp(1101) + posting + timestamp(1)))
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(anchor)
    message = str(info.value)
    assert str(evt) in message
    assert "timestamp goes backwards (1 after 1101)" in message


def test_a_call_of_more_than_65535_events_keeps_its_leave():
    """The replays keep the Leave of the call holding a message record as a
    16-bit distance from its Enter, or, where a call is longer, every
    Leave of the location as it is.  Rank 0 sends 70,000 messages, one
    every microsecond; rank 1 posts them all at once and waits for them
    in one MPI_Waitall of over 70,000 events, each receive completing as
    its message arrives.  Its Late Sender is the largest of the call's:
    from its Enter at 0 to the last send's Enter, 70,000 microseconds,
    capped by the call's Leave.  With the Leave read 65,536 events short
    of where it is, at the 4,465th receive, the cap would cut it to 4.465
    milliseconds."""
    n = 70_000
    prog = synth.Program(2)
    r0, r1 = prog.rank(0), prog.rank(1)
    sends = []
    for _ in range(n):
        r0.compute("work", 1e-6)
        sends.append(r0.isend(1, size=8))
    r0.waitall(sends)
    r1.waitall([r1.irecv(0) for _ in range(n)])
    trace = prog.run(latency=0.0, mpi_overhead=0.0)
    call = trace.callpath_names.index("synthetic/main/MPI_Waitall")
    ev = trace.events(1)
    (enter,) = np.nonzero((ev.kind == _core.EV_ENTER) & (ev.ref == call))
    (leave,) = np.nonzero((ev.kind == _core.EV_LEAVE) & (ev.ref == call))
    assert leave[0] - enter[0] > 65_535
    (records,) = np.nonzero(ev.kind == _core.EV_IRECV)
    assert len(records) == n and ev.time[enter[0]] == 0.0 and ev.time[leave[0]] == pytest.approx(n * 1e-6)
    times = [trace.events(i).time.copy() for i in range(2)]
    times[1][records] = np.arange(1, n + 1) * 1e-6
    _core.set_times(trace._core, times)
    late = trace.analyze(threads=1).get("mpi_latesender", "synthetic/main/MPI_Waitall")
    assert late[0] == 0.0
    assert late[1] == pytest.approx(n * 1e-6, rel=1e-9)
