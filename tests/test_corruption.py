"""Bad input gives a TraceError naming the file; never a crash, never a
silently partial trace."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import waitscope
from waitscope import synth


def test_missing_path(tmp_path):
    with pytest.raises(waitscope.TraceError, match="no-such-trace"):
        waitscope.open(tmp_path / "no-such-trace")


def test_directory_without_anchor(tmp_path):
    with pytest.raises(waitscope.TraceError, match="no OTF2 anchor"):
        waitscope.open(tmp_path)


def test_file_that_is_not_an_anchor(pingpong_copy):
    with pytest.raises(waitscope.TraceError, match=r"MANIFEST\.md: not an OTF2 anchor"):
        waitscope.open(pingpong_copy / "MANIFEST.md")


def test_empty_anchor(tmp_path):
    (tmp_path / "traces.otf2").write_bytes(b"")
    with pytest.raises(waitscope.TraceError, match="traces.otf2"):
        waitscope.open(tmp_path)


def assert_same_events(a: "waitscope.Trace", b: "waitscope.Trace") -> None:
    for loc in range(a.n_locations):
        ea, eb = a.events(loc), b.events(loc)
        for key in ea.columns:
            assert (ea.columns[key] == eb.columns[key]).all(), key


@pytest.mark.parametrize("share", [0.0, 0.001, 0.1, 0.3, 0.5, 0.8, 0.95])
def test_truncated_event_file(pingpong_copy, share):
    evt = pingpong_copy / "traces" / "1.evt"
    data = evt.read_bytes()
    evt.write_bytes(data[: int(share * len(data))])
    with pytest.raises(waitscope.TraceError, match=r"1\.evt"):
        waitscope.open(pingpong_copy)


@pytest.mark.parametrize("cut", range(1, 24))
def test_event_file_cut_near_its_end(pingpong_dir, pingpong_copy, cut):
    """The last bytes of an event file are OTF2's chunk trailer: cutting
    them may lose nothing; then the trace must load completely and
    unchanged.  Cutting into the records must raise."""
    evt = pingpong_copy / "traces" / "1.evt"
    evt.write_bytes(evt.read_bytes()[:-cut])
    try:
        damaged = waitscope.open(pingpong_copy)
    except waitscope.TraceError as exc:
        assert "1.evt" in str(exc)
        return
    assert_same_events(damaged, waitscope.open(pingpong_dir))


def _load_error(anchor: Path, locations: list[int] | None, threads: int = 1) -> str:
    trace = waitscope.open(anchor, progress=False, load=False)
    with pytest.raises(waitscope.TraceError) as info:
        trace.load(locations, threads=threads)
    return str(info.value)


@pytest.mark.parametrize("bad", [0, 1])
def test_event_file_cut_with_its_end_mark_kept(pingpong_copy, bad):
    """An event file cut inside its records but still ending with OTF2's
    end-of-file mark (a copy stitched together).  libotf2 decodes the cut
    record into whatever its chunk buffer held before, which depends on
    what was read before; the error must not: the file read alone, after
    the other location (whose bytes then fill that buffer), and on two
    threads, at every cut.  Where the cut falls inside a record, the error
    is the truncation, with the file's size."""
    evt = pingpong_copy / "traces" / f"{bad}.evt"
    data = evt.read_bytes()
    anchor = pingpong_copy / "traces.otf2"
    inside = 0
    for cut in range(20, len(data) - 2):
        evt.write_bytes(data[:cut] + data[-2:])
        alone = _load_error(anchor, [bad])
        assert alone.startswith(f"{evt}: "), alone
        assert "truncated" in alone, alone
        assert _load_error(anchor, [1 - bad, bad]) == alone, cut
        assert _load_error(anchor, None, threads=2) == alone, cut
        if "runs past the end of the data" in alone:
            inside += 1
            at = int(alone.split("its record at byte ")[1].split()[0])
            assert at < cut and f"({cut + 2} bytes;" in alone, (cut, alone)
    # most cuts fall inside a record (the others end the file early at a record's end)
    assert inside > (len(data) - 22) // 2


def test_missing_event_file(pingpong_copy):
    (pingpong_copy / "traces" / "0.evt").unlink()
    with pytest.raises(waitscope.TraceError, match=r"traces/0\.evt: event file of location 0 is missing"):
        waitscope.open(pingpong_copy)


@pytest.mark.parametrize("share", [0.0, 0.001, 0.01, 0.2, 0.5, 0.9])
def test_truncated_definition_file(pingpong_copy, share):
    defs = pingpong_copy / "traces.def"
    data = defs.read_bytes()
    defs.write_bytes(data[: int(share * len(data))])
    with pytest.raises(waitscope.TraceError, match=r"traces\.def"):
        waitscope.open(pingpong_copy)


def test_unknown_clock(pingpong_copy):
    # The ClockProperties record of traces.def starts at byte 0x12: type 5,
    # length 18, then the resolution as a compressed uint64 (4 bytes).
    # Rewriting the resolution as 0 leaves a well-formed record.
    defs = pingpong_copy / "traces.def"
    data = bytearray(defs.read_bytes())
    assert data[0x12:0x19] == bytes([0x05, 0x12, 0x04, 0x20, 0x2C, 0xE2, 0x7C])
    data[0x12:0x19] = bytes([0x05, 0x0E, 0x00])
    defs.write_bytes(bytes(data))
    with pytest.raises(waitscope.TraceError, match="unknown clock"):
        waitscope.open(pingpong_copy)


def test_event_file_of_another_archive(pingpong_copy, papi_dir):
    # same location ids, different content: the announced counts differ
    (pingpong_copy / "traces" / "0.evt").write_bytes((papi_dir / "traces" / "0.evt").read_bytes())
    with pytest.raises(waitscope.TraceError, match=r"0\.evt"):
        waitscope.open(pingpong_copy)


def _mutate(data: bytearray, rng: random.Random) -> bytearray:
    mode = rng.choice(["flip", "cut", "zero", "insert"])
    if mode == "flip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif mode == "cut":
        data = data[: rng.randrange(len(data))]
    elif mode == "zero":
        i = rng.randrange(len(data))
        n = rng.randint(1, 16)
        data[i : i + n] = bytes(len(data[i : i + n]))
    else:
        i = rng.randrange(len(data))
        data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return data


def test_random_corruptions_raise_or_load_completely(pingpong_dir, tmp_path):
    rng = random.Random(20261122)
    targets = ["traces.otf2", "traces.def", "traces/0.evt", "traces/1.evt", "traces/0.def", "traces/1.def"]
    outcomes = {"error": 0, "loaded": 0}
    from conftest import writable_copy

    for trial in range(150):
        d = writable_copy(pingpong_dir, tmp_path / f"c{trial}")
        target = d / rng.choice(targets)
        target.write_bytes(bytes(_mutate(bytearray(target.read_bytes()), rng)))
        try:
            trace = waitscope.open(d)
        except waitscope.TraceError as exc:
            assert str(d) in str(exc) or "traces" in str(exc), str(exc)
            outcomes["error"] += 1
            continue
        # a trace that loads must be complete: every announced record read
        for loc in trace.locations:
            ev = trace.events(loc.index)
            assert len(ev) + ev.n_skipped == loc.n_records
        outcomes["loaded"] += 1
    assert outcomes["error"] > 50


# ---- messages that say what is wrong (truncation, missing files, overwritten data) ----


@pytest.mark.parametrize("cut", [1, 2, 40, 56, 5712, 5789, 9765, 9814, 9877, 9898, 9912])
def test_truncated_definition_file_says_truncated(pingpong_copy, cut):
    """Cuts at which the definitions used to be reported as "string 0 is defined
    twice", "region 0 is defined twice", a Cartesian coordinate with 0 dimensions."""
    defs = pingpong_copy / "traces.def"
    data = defs.read_bytes()
    assert len(data) == 9914  # the cut points above are positions in this file
    defs.write_bytes(data[:cut])
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(pingpong_copy)
    message = str(info.value)
    assert message.startswith(f"{defs}: the global definition file is truncated"), message
    assert "defined twice" not in message and "dimensions" not in message


def test_every_cut_of_the_definition_file_is_reported_as_damage(pingpong_copy):
    """Every cut raises and names traces.def; the few cuts that end by chance with
    OTF2's end-of-file mark still say the file is damaged or truncated."""
    defs = pingpong_copy / "traces.def"
    data = defs.read_bytes()
    for cut in range(0, len(data), 13):
        defs.write_bytes(data[:cut])
        with pytest.raises(waitscope.TraceError) as info:
            waitscope.open(pingpong_copy)
        message = str(info.value)
        assert "traces.def" in message and ("truncated" in message or "damaged" in message), (cut, message)


def test_missing_local_definitions_reported_at_open(pingpong_copy):
    """Without traces/1.def the trace used to load and the analysis failed later
    with a message about a communicator."""
    (pingpong_copy / "traces" / "1.def").unlink()
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(pingpong_copy, load=False)
    assert str(info.value).startswith(f"{pingpong_copy / 'traces' / '1.def'}: the local definitions of location 1 "
                                      "are missing (1 of 2 locations have theirs)")


def test_truncated_local_definitions(pingpong_copy):
    local = pingpong_copy / "traces" / "1.def"
    local.write_bytes(local.read_bytes()[:-5])
    with pytest.raises(waitscope.TraceError, match=rf"{local}: local definition file of location 1 is truncated"):
        waitscope.open(pingpong_copy)


def test_event_file_overwritten_with_random_bytes(pingpong_copy):
    evt = pingpong_copy / "traces" / "1.evt"
    noise = bytearray(random.Random(7).randbytes(len(evt.read_bytes())))
    noise[0] = 0x55  # not OTF2's chunk header
    evt.write_bytes(bytes(noise))
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(pingpong_copy)
    message = str(info.value)
    assert message.startswith(f"{evt}: event file of location 1 is damaged: it does not start with an OTF2 chunk header"), message


def test_event_file_with_random_bytes_after_its_header(pingpong_copy):
    evt = pingpong_copy / "traces" / "0.evt"
    data = evt.read_bytes()
    evt.write_bytes(data[:2] + random.Random(3).randbytes(len(data) - 2))
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(pingpong_copy)
    message = str(info.value)
    assert message.startswith(str(evt)) and "cannot open the event file" not in message
    assert any(w in message for w in ("truncated", "damaged", "corrupted")), message


def _anchor_property_count_offset(anchor: bytes) -> int:
    """Offset of the property count in the ping-pong anchor (5 properties, the first OTF2::...)."""
    i = anchor.index(b"\x05\x00\x00\x00OTF2::")
    return i


@pytest.mark.parametrize("count", [0x7FFFFFFF, 0xFFFFFFFF, 1000, 110])
def test_anchor_with_a_huge_property_count_is_rejected_before_otf2_reads_it(pingpong_copy, count):
    """libotf2 would reserve memory for every announced property (22 GB for 2**31) and take
    10-30 s before failing; the count is checked against the anchor's size first."""
    anchor = pingpong_copy / "traces.otf2"
    data = bytearray(anchor.read_bytes())
    i = _anchor_property_count_offset(bytes(data))
    data[i:i + 4] = count.to_bytes(4, "little")
    anchor.write_bytes(bytes(data))
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(pingpong_copy)
    message = str(info.value)
    assert message.startswith(f"{anchor}: the OTF2 anchor file is damaged"), message
    assert str(count) in message


def test_anchor_whose_properties_run_past_its_end(pingpong_copy):
    anchor = pingpong_copy / "traces.otf2"
    data = bytearray(anchor.read_bytes())
    i = _anchor_property_count_offset(bytes(data))
    data[i:i + 4] = (6).to_bytes(4, "little")  # one more than there are
    anchor.write_bytes(bytes(data[:-12]))
    with pytest.raises(waitscope.TraceError, match=rf"{anchor}: the OTF2 anchor file is damaged or truncated"):
        waitscope.open(pingpong_copy)


def test_truncated_anchor(pingpong_copy):
    anchor = pingpong_copy / "traces.otf2"
    anchor.write_bytes(anchor.read_bytes()[:50])
    with pytest.raises(waitscope.TraceError, match=rf"{anchor}: the OTF2 anchor file is truncated"):
        waitscope.open(pingpong_copy)


# ---- errors found by the analysis name the trace and the location's event file ----


def _four_ranks(kind: str = "allreduce", tag: int = 1) -> "waitscope.synth.Program":
    """0 -> 1 and 2 -> 3 (with `tag`), then a collective `kind` on all four ranks."""
    from waitscope import synth

    p = synth.Program(4)
    for r in range(4):
        p.rank(r).compute("work", 0.1 * (r + 1))
    p.rank(0).send(1, tag=1, size=8)
    p.rank(1).recv(0, tag=1)
    p.rank(2).send(3, tag=tag, size=8)
    p.rank(3).recv(2, tag=tag)
    for r in range(4):
        getattr(p.rank(r), kind)(size=8)
    return p


def _spliced(tmp_path: Path, other: "waitscope.synth.Program", location: int) -> Path:
    """The archive of _four_ranks() whose location's files come from `other` (each file valid OTF2)."""
    import shutil

    a = Path(_four_ranks().write(tmp_path / "a")).parent
    b = Path(other.write(tmp_path / "b")).parent
    out = tmp_path / "spliced"
    shutil.copytree(a, out)
    for ext in ("evt", "def"):
        shutil.copyfile(b / "traces" / f"{location}.{ext}", out / "traces" / f"{location}.{ext}")
    return out


@pytest.mark.parametrize("other, location, culprit, problem", [
    # location 3 receives with tag 99: the send of location 2 (tag 1) is never received
    (lambda: _four_ranks(tag=99), 3, 2, "location 2: send 0 to location 3 (tag 1, communicator 'MPI_COMM_WORLD') "
                                        "is never received"),
    # location 1 takes part in an alltoall where the others do an allreduce
    (lambda: _four_ranks(kind="alltoall"), 1, 3, "location 3: the members of a collective operation at "
                                                 "t=0.400000000 s recorded different operations"),
])
def test_analysis_errors_name_the_trace_and_the_event_file(tmp_path, other, location, culprit, problem):
    path = _spliced(tmp_path, other(), location)
    trace = waitscope.open(path)  # every file is valid OTF2: the problem shows in the analysis
    with pytest.raises(waitscope.TraceError) as info:
        trace.analyze()
    message = str(info.value)
    assert message.startswith(f"{path / 'traces.otf2'}: {path / 'traces' / f'{culprit}.evt'}: {problem}"), message


def test_stalled_replay_names_the_trace(tmp_path):
    path = _spliced(tmp_path, _four_ranks(kind="reduce"), 1)
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(path).analyze()
    message = str(info.value)
    assert message.startswith(f"{path / 'traces.otf2'}: {path / 'traces'}/"), message
    assert "the trace's communication is inconsistent" in message


def _zero_time_messages(steps: int) -> synth.Program:
    """Two ranks exchanging messages without computing: every event at time 0."""
    p = synth.Program(2)
    for _ in range(steps):
        p.rank(0).send(1, size=8)
        p.rank(1).recv(0)
    return p


def test_events_all_at_time_zero_over_many_chunks_read_back(tmp_path):
    # 60,000 messages make event files of ~2.4 MB, over several of
    # libotf2's 1 MiB chunks; at tick 0 throughout, libotf2's reader
    # decoded such a file without end.  Written one tick later, it reads
    # back whole, at the same times.
    prog = _zero_time_messages(60_000)
    trace = waitscope.open(prog.write(tmp_path / "zero"), progress=False)
    # per rank: program begin and end, main, MPI_Init and MPI_Finalize (8),
    # and enter, send or receive, leave per message
    assert trace.n_events == 2 * (8 + 3 * 60_000)
    for loc in range(2):
        assert not trace.events(loc).time.any()


def test_more_event_records_than_announced(tmp_path):
    # An event file with more records than its location announces (here:
    # the file of a longer run of the same program) is refused, naming the
    # file, after at most one record past the announced count: a damaged
    # file that libotf2 would decode without end stops there as well.
    short = Path(_zero_time_messages(10).write(tmp_path / "short"))
    long_ = Path(_zero_time_messages(2_000).write(tmp_path / "long"))
    evt = short.parent / "traces" / "0.evt"
    evt.write_bytes((long_.parent / "traces" / "0.evt").read_bytes())
    for threads in (1, 2):
        with pytest.raises(waitscope.TraceError, match=r"0\.evt: location 0: the file holds more event records "
                                                       r"than the definitions announce \(38\)"):
            waitscope.open(short, progress=False, threads=threads)


def test_collective_members_that_disagree_on_the_root_are_inconsistent(tmp_path):
    """A broadcast whose members recorded different roots (a damaged record:
    rank 1's MpiCollectiveEnd rewritten with root 1 instead of 0) is
    reported as inconsistent, naming the file, instead of giving delay costs
    that do not add up to the waiting."""
    from waitscope import synth

    prog = synth.Program(2)
    prog.rank(0).compute("work", 1.0).bcast(0, size=8)
    prog.rank(1).bcast(0, size=8)
    path = Path(prog.run(latency=0.0, mpi_overhead=0.0, resolution=1000).write(tmp_path / "t"))
    evt = path.parent / "traces" / "1.evt"
    data = bytearray(evt.read_bytes())
    # MpiCollectiveEnd (0x17), 6 bytes: BCAST (1), communicator 0, root 0, sent 0, received 8 (1 byte)
    record = bytes([0x17, 0x06, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08])
    i = data.index(record)
    data[i + 1] = 0x07        # one byte longer
    data[i + 4:i + 5] = b"\x01\x01"  # root 1 (1 byte)
    evt.write_bytes(bytes(data))
    trace = waitscope.open(path)
    assert [int(trace.collectives(loc)["root"][0]) for loc in range(2)] == [0, 1]
    with pytest.raises(waitscope.TraceError, match="recorded different roots; the trace is inconsistent") as info:
        trace.analyze(delay_model="proportional")
    assert str(path) in str(info.value)
