"""The threaded load (open(..., threads=N), Trace.load(threads=N)): the store
equals the one-thread store column for column, and errors, progress and
interruption behave as with one thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import _core, synth

from conftest import SHARED_DATA, writable_copy

REFS = SHARED_DATA / "scalasca-refs"
REF_NAMES = sorted(p.name for p in REFS.iterdir() if (p / "traces.otf2").exists()) if REFS.is_dir() else []


def snapshot(trace: waitscope.Trace) -> dict:
    """Every column of every location (None where not loaded), the call-path tree and the counts."""
    core = trace._core
    locations = core.definitions()["locations"]
    loaded = locations["loaded"]
    columns = []
    for loc in range(trace.n_locations):
        if not loaded[loc]:
            columns.append(None)
            continue
        columns.append({k: np.array(v, copy=True) for k, v in core.events(loc).items()})
    return {"columns": columns, "callpaths": core.callpaths(), "n_events": trace.n_events,
            "counts": locations["n_events"]}


def assert_same_store(a: dict, b: dict) -> None:
    assert a["n_events"] == b["n_events"]
    np.testing.assert_array_equal(a["counts"], b["counts"])
    assert len(a["callpaths"]) == len(b["callpaths"])
    for x, y in zip(a["callpaths"], b["callpaths"]):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert len(a["columns"]) == len(b["columns"])
    for loc, (x, y) in enumerate(zip(a["columns"], b["columns"])):
        assert (x is None) == (y is None), loc
        if x is None:
            continue
        assert x.keys() == y.keys()
        for key in x:
            assert x[key].dtype == y[key].dtype, (loc, key)
            np.testing.assert_array_equal(x[key], y[key], err_msg=f"location {loc}, column {key}")


def shuffled_regions(n_ranks: int, steps: int) -> synth.Program:
    """Ranks enter their regions in rank-dependent orders and depths, so that
    the call paths one thread meets first differ from block to block (the
    merge must renumber them), with messages and collectives in between."""
    prog = synth.Program(n_ranks)
    names = ["alpha", "beta", "gamma", "delta", "eps"]
    for rank in range(n_ranks):
        r = prog.rank(rank)
        order = names[rank % 5:] + names[: rank % 5]
        for s in range(steps):
            with r.region(order[s % 5]):
                r.compute(order[(s + rank) % 5], 1e-6 * (1 + rank % 3))
                if rank % 2 == 0 and rank + 1 < n_ranks:
                    r.send(rank + 1, tag=s, size=8)
                elif rank % 2 == 1:
                    r.recv(rank - 1, tag=s)
            if s % 3 == 2:
                r.allreduce(size=8)
    return prog


@pytest.fixture(scope="module")
def many_locations(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("many") / "traces.otf2"
    shuffled_regions(37, 24).write(str(path))
    return path


def one_and_many(path, threads) -> tuple[dict, dict]:
    one = snapshot(waitscope.open(path, progress=False))
    many = snapshot(waitscope.open(path, progress=False, threads=threads))
    return one, many


def test_call_paths_renumbered_on_many_locations(many_locations):
    """The synthetic trace really needs the merge: a block read alone would number its call paths otherwise."""
    whole = waitscope.open(many_locations, progress=False)
    tail = waitscope.open(many_locations, progress=False, load=False)
    tail.load(range(21, 37))
    alone = np.stack(tail._core.callpaths())
    assert not np.array_equal(np.stack(whole._core.callpaths())[:, : alone.shape[1]], alone)
    for threads in (2, 3, 4, 8, 37, 64, "auto"):
        one, many = one_and_many(many_locations, threads)
        assert_same_store(one, many)


def test_bundled_traces(pingpong_dir, papi_dir):
    for path in (pingpong_dir, papi_dir):
        for threads in (2, 3):
            assert_same_store(*one_and_many(path, threads))


@pytest.mark.parametrize("name", REF_NAMES)
def test_scalasca_reference_traces(name):
    assert_same_store(*one_and_many(REFS / name / "traces.otf2", 4))


def test_partial_loads_in_any_order(many_locations):
    """Locations given out of order and twice, then the rest: the store of one thread."""
    first = [30, 2, 17, 2, 5, 36, 11, 30]
    one = waitscope.open(many_locations, progress=False, load=False)
    many = waitscope.open(many_locations, progress=False, load=False)
    one.load(first)
    many.load(first, threads=3)
    assert_same_store(snapshot(one), snapshot(many))
    one.load()
    many.load(threads=4)
    assert_same_store(snapshot(one), snapshot(many))


def test_analysis_of_a_threaded_load(many_locations):
    full = {"delay_model": "proportional", "critical_path": True}
    one = waitscope.open(many_locations, progress=False).analyze(progress=False, **full)
    many = waitscope.open(many_locations, progress=False, threads=3).analyze(progress=False, **full)
    assert one.cube.tobytes() == many.cube.tobytes()


@pytest.mark.parametrize("cut", ["end", "middle"])
@pytest.mark.parametrize("bad", [5, 0, 36])
@pytest.mark.parametrize("threads", [2, 5])
def test_damaged_location_reported_as_with_one_thread(many_locations, tmp_path, bad, threads, cut):
    """A truncated event file (found before decoding, or, with its end mark
    kept, from the file once decoding failed): the same error naming the
    file and the truncation, and the same locations loaded (those before it
    in order) as with one thread."""
    copy = writable_copy(many_locations.parent, tmp_path / "copy")
    evt = copy / "traces" / f"{bad}.evt"
    data = evt.read_bytes()
    evt.write_bytes(data[: len(data) // 2] + (data[-2:] if cut == "middle" else b""))
    outcomes = []
    for n in (1, threads):
        trace = waitscope.open(copy, progress=False, load=False)
        with pytest.raises(waitscope.TraceError) as info:
            trace.load(threads=n)
        outcomes.append((str(info.value), snapshot(trace)))
    (message_one, store_one), (message_many, store_many) = outcomes
    assert f"{bad}.evt" in message_one and "truncated" in message_one
    assert message_many == message_one
    assert_same_store(store_one, store_many)
    assert store_one["counts"][bad] == 0 and (store_one["counts"][:bad] > 0).all()


def test_missing_event_file(many_locations, tmp_path):
    copy = writable_copy(many_locations.parent, tmp_path / "copy")
    (copy / "traces" / "20.evt").unlink()
    with pytest.raises(waitscope.TraceError, match=r"traces/20\.evt: event file of location 20 is missing"):
        waitscope.open(copy, progress=False, threads=4)


def test_progress_reports_the_load(many_locations):
    calls = []
    trace = waitscope.open(many_locations, progress=lambda *a: calls.append(a), threads=3)
    assert calls and all(stage == "load" for stage, _, _ in calls)
    assert calls[-1][1] == calls[-1][2] == trace._defs["locations"]["n_records"].sum()


def test_progress_callback_interrupts(many_locations):
    """A callback that raises stops the load on the calling thread; what was
    read stays consistent (each loaded location complete, its call paths
    those of a full load by name), and the rest can be loaded afterwards."""
    def stop(stage, done, total):
        raise KeyboardInterrupt

    full = waitscope.open(many_locations, progress=False)
    trace = waitscope.open(many_locations, progress=False, load=False)
    with pytest.raises(KeyboardInterrupt):
        trace.load(progress=stop, threads=4)
    trace.load(progress=False, threads=2)
    assert trace.n_events == full.n_events
    names, full_names = trace.callpath_names, full.callpath_names
    for loc in range(trace.n_locations):
        mine, ref = trace._core.events(loc), full._core.events(loc)
        for key in mine:
            if key != "ref":
                np.testing.assert_array_equal(mine[key], ref[key])
        enter = (mine["kind"] == 1) | (mine["kind"] == 2)
        np.testing.assert_array_equal(mine["ref"][~enter], ref["ref"][~enter])
        assert [names[i] for i in mine["ref"][enter]] == [full_names[i] for i in ref["ref"][enter]]


@pytest.mark.parametrize("threads", [0, -1, "many", 1.5, True])
def test_bad_threads_argument(pingpong_dir, threads):
    with pytest.raises((ValueError, TypeError), match="threads"):
        waitscope.open(pingpong_dir, progress=False, threads=threads)


# ---- big locations: side tables written in place (otf2_events.c, DIRECT_ROWS_MIN) ----

N_BIG = 48_000  # rank 0: > 2**17 records, so its side tables are reserved for its records


def big_program() -> synth.Program:
    """Rank 0 sends N_BIG messages to rank 1 (every third non-blocking, waited
    for at once), with a barrier every tenth; rank 1 receives them.  Each
    step computes a little (a program without any time in it makes an
    archive that libotf2 reads without end: otf2-print loops on it too)."""
    prog = synth.Program(2)
    r0, r1 = prog.rank(0), prog.rank(1)
    for i in range(N_BIG):
        tag, size = i % 1000, 8 * (i % 7)
        r0.compute("work", 1e-6)
        r1.compute("work", 1e-6)
        if i % 3 == 0:
            r0.wait(r0.isend(1, tag=tag, size=size))
        else:
            r0.send(1, tag=tag, size=size)
        r1.recv(0, tag=tag)
        if i % 10 == 9:
            r0.barrier()
            r1.barrier()
    return prog


@pytest.fixture(scope="module")
def big_locations(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "traces.otf2"
    big_program().write(str(path))
    return path


def test_side_tables_of_a_big_location(big_locations):
    """The side tables of a location read in place hold exactly what the program did."""
    trace = waitscope.open(big_locations, progress=False)
    assert trace._defs["locations"]["n_records"][0] >= 2**17
    ev = trace._core.events(0)
    i = np.arange(N_BIG)
    np.testing.assert_array_equal(ev["msg_tag"], i % 1000)
    np.testing.assert_array_equal(ev["msg_bytes"], 8 * (i % 7))
    np.testing.assert_array_equal(ev["msg_peer"], np.ones(N_BIG))
    kinds = ev["kind"][ev["msg_event"]]
    np.testing.assert_array_equal(kinds, np.where(i % 3 == 0, _core.EV_ISEND, _core.EV_SEND))
    np.testing.assert_array_equal(ev["ref"][ev["msg_event"]], i)  # each message event refers to its row
    # an isend and its completion per third message, with the same request id
    n_isend = len(i[i % 3 == 0])
    assert len(ev["req_id"]) == 2 * n_isend
    req_kinds = ev["kind"][ev["req_event"]]
    np.testing.assert_array_equal(req_kinds[0::2], np.full(n_isend, _core.EV_ISEND))
    np.testing.assert_array_equal(req_kinds[1::2], np.full(n_isend, _core.EV_ISEND_COMPLETE))
    np.testing.assert_array_equal(ev["req_id"][0::2], ev["req_id"][1::2])
    n_barriers = N_BIG // 10
    assert len(ev["coll_event"]) == n_barriers
    np.testing.assert_array_equal(ev["kind"][ev["coll_event"]], np.full(n_barriers, _core.EV_COLL_END))
    assert len(np.unique(ev["coll_op"])) == 1 and len(np.unique(ev["coll_comm"])) == 1
    # and rank 1 (read through the rows) agrees on the messages
    np.testing.assert_array_equal(trace._core.events(1)["msg_tag"], i % 1000)
    assert_same_store(snapshot(trace), snapshot(waitscope.open(big_locations, progress=False, threads=2)))
