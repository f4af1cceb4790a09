"""Reading hybrid MPI+OpenMP traces (Score-P's, ../shared/data/hybrid/):
the thread records, the call paths of worker threads, the threads of a
process kept together, and damaged input raising TraceError naming the
file and the location."""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import waitscope

from conftest import SHARED_DATA

HYBRID = SHARED_DATA / "hybrid"
TRACES = ["omp_imbalance", "omp_explicit_barrier", "omp_critical", "omp_locks", "omp_idle", "omp_nested_calls"]


def trace_dir(name: str) -> Path:
    d = HYBRID / name
    if not d.is_dir():
        pytest.skip(f"{d} is not available")
    return d


@pytest.fixture
def locks_copy(tmp_path: Path) -> Path:
    out = tmp_path / "omp_locks"
    shutil.copytree(trace_dir("omp_locks"), out)
    for p in out.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return out


def test_locations_threads_and_ranks():
    """Two processes of two threads each: the master thread holds the MPI
    rank, the OpenMP thread shares its process's rank (Cube's "MPI Rank 0 /
    OMP thread 1")."""
    t = waitscope.open(str(trace_dir("omp_imbalance")))
    locs = [(loc.rank, loc.thread, loc.mpi_rank, loc.name) for loc in t.locations]
    assert locs == [(0, 0, 0, "Master thread"), (0, 1, -1, "OMP thread 1"), (1, 0, 1, "Master thread"),
                    (1, 1, -1, "OMP thread 1")]
    assert list(t.location_ranks) == [0, 0, 1, 1]
    assert "location 1: rank 0, thread 1, MPI Rank 0 / OMP thread 1: 32 events" in t.summary()


@pytest.mark.parametrize("name", TRACES)
def test_thread_records_as_otf2_print_lists_them(name):
    """Every thread record of every location, in order, with its fields, as
    Debian's otf2-print lists them."""
    import subprocess

    d = trace_dir(name)
    printed = subprocess.run(["otf2-print", str(d / "traces.otf2")], capture_output=True, text=True, check=True).stdout
    t = waitscope.open(str(d))
    kinds = {"THREAD_FORK": "thread_fork", "THREAD_JOIN": "thread_join", "THREAD_TEAM_BEGIN": "thread_team_begin",
             "THREAD_TEAM_END": "thread_team_end", "THREAD_ACQUIRE_LOCK": "thread_acquire_lock",
             "THREAD_RELEASE_LOCK": "thread_release_lock"}
    for loc in t.locations:
        expected = [line.split()[0] for line in printed.splitlines()
                    if line.split()[:1] and line.split()[0] in kinds and line.split()[1] == str(loc.id)]
        got = t.thread_events(loc.index)
        assert [kinds[k] for k in expected] == list(got["kind"])
        forks = got["kind"] == "thread_fork"
        assert list(got["a"][forks]) == [2] * int(forks.sum())  # the requested threads
        teams = np.isin(got["kind"], ["thread_team_begin", "thread_team_end"])
        assert (got["comm"][teams] >= 0).all()
    # every record is an event of the store (ProgramBegin/End as the program region's Enter/Leave)
    assert t.n_events == sum(1 for line in printed.splitlines()
                             if len(line.split()) > 2 and line.split()[0].isupper() and line.split()[1].isdigit())


def test_worker_threads_sit_below_the_masters_fork():
    """A worker thread's parallel region has the call path of its master's
    fork (omp_nested_calls forks inside a user function), as in Scalasca's
    report; no call path starts at a parallel region."""
    d = trace_dir("omp_nested_calls")
    t = waitscope.open(str(d))
    import json

    ref = json.loads((d / "scalasca.json").read_text())
    visited = {p for p, v in ref["metrics"]["visits"]["paths"].items() if v[1] > 0 or v[3] > 0}
    names = set(t.callpath_names)
    assert visited <= names
    assert all(n.startswith(t.program_region + "/") or n == t.program_region for n in names)
    events = t.events(1)
    entered = {t.callpath_names[c] for k, c in zip(events.kind, events.callpath) if int(k) == 1}
    assert entered and all(p.startswith(t.program_region + "/main/parallel_phase/!$omp parallel") for p in entered)


@pytest.mark.parametrize("name", TRACES)
def test_threaded_load_and_analysis_equal_one_thread(name):
    """Two loading threads and two analysis threads give the same store and
    the same result, bit for bit: a process's threads stay together."""
    d = str(trace_dir(name))
    a, b = waitscope.open(d), waitscope.open(d, threads=2)
    assert a.callpath_names == b.callpath_names
    for loc in range(a.n_locations):
        for col in ("time", "kind", "ref"):
            assert np.array_equal(getattr(a.events(loc), col), getattr(b.events(loc), col))
    r1 = a.analyze(delay_model="proportional", critical_path=True)
    r2 = a.analyze(delay_model="proportional", critical_path=True, threads=2)
    assert np.array_equal(r1.cube, r2.cube)


def test_writing_and_reading_back_is_the_same_trace(tmp_path):
    d = trace_dir("omp_critical")
    t = waitscope.open(str(d))
    t.write(str(tmp_path / "copy" / "traces.otf2"))
    u = waitscope.open(str(tmp_path / "copy"))
    assert u.callpath_names == t.callpath_names
    for loc in range(t.n_locations):
        a, b = t.thread_events(loc), u.thread_events(loc)
        for col in a:
            assert np.array_equal(a[col], b[col]), col
        assert np.array_equal(t.events(loc).time, u.events(loc).time)
    r, s = t.analyze(delay_model="proportional", critical_path=True), \
        u.analyze(delay_model="proportional", critical_path=True)
    assert np.array_equal(r.cube, s.cube)


def test_a_worker_without_its_master_is_refused():
    """Loading a worker thread alone names its master; the master is read
    first when both are asked for in the other order."""
    d = str(trace_dir("omp_imbalance"))
    with pytest.raises(waitscope.TraceError, match=r"4294967296\.evt.*master thread of its team \(location 0\)"):
        waitscope.open(d, locations=[1])
    t = waitscope.open(d, locations=[1, 0])
    assert t.loaded_locations.tolist() == [0, 1]


def test_missing_thread_event_file(locks_copy):
    """A worker's event file is missing: the error names the file and the
    location."""
    (locks_copy / "traces" / "4294967297.evt").unlink()
    with pytest.raises(waitscope.TraceError, match=r"4294967297\.evt: event file of location 4294967297 is missing"):
        waitscope.open(str(locks_copy))


def test_team_larger_than_its_fork_asked_for(locks_copy):
    """The second fork of rank 0 asks for 1 thread, its team has 2: the
    error names rank 0's event file, the location and the team."""
    evt = locks_copy / "traces" / "0.evt"
    data = bytearray(evt.read_bytes())
    # ThreadFork records: type 0x35, 3 bytes: model OpenMP (3), requested threads (compressed: 1 byte, 2)
    forks = [i for i in range(len(data) - 4) if data[i:i + 5] == b"\x35\x03\x03\x01\x02"]
    assert len(forks) == 4
    data[forks[1] + 4] = 1
    evt.write_bytes(bytes(data))
    with pytest.raises(waitscope.TraceError,
                       match=r"0\.evt: location 0: event \d+: thread team 3 has 2 threads but the fork before it asked "
                             r"for 1"):
        waitscope.open(str(locks_copy))


def test_random_damage_to_a_thread_file_raises_or_loads(locks_copy):
    """Random bytes changed in a worker's event file: a TraceError naming a
    file, or a trace that loads and analyses (never a crash or a hang)."""
    evt = locks_copy / "traces" / "4294967296.evt"
    original = evt.read_bytes()
    rng = random.Random(34)
    for _ in range(40):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(64, len(data))] = rng.randrange(256)
        evt.write_bytes(bytes(data))
        try:
            t = waitscope.open(str(locks_copy))
        except waitscope.TraceError as exc:
            assert ".evt" in str(exc) or ".otf2" in str(exc), str(exc)
            continue
        try:
            t.analyze(delay_model="proportional", critical_path=True)
        except waitscope.TraceError as exc:
            assert "traces.otf2" in str(exc), str(exc)


@pytest.mark.parametrize("name", TRACES)
def test_identity_simulation_reproduces_the_trace(name):
    """Simulating nothing changed gives back every time of every thread
    (forks start the team's threads from the master's fork with their
    recorded delays, barriers release at the last arrival)."""
    t = waitscope.open(str(trace_dir(name)))
    s = t.simulate()
    for loc in range(t.n_locations):
        np.testing.assert_allclose(s.events(loc).time, t.events(loc).time, rtol=0, atol=1e-12)


def test_scaling_the_parallel_work_scales_the_barrier_waiting():
    """omp_imbalance: in each parallel region the master works 40 ms and
    thread 1 120 ms (the master waits 80 ms at the implicit barrier).
    Making that work (one call path, on both threads) 3 times faster leaves
    40/3 and 40 ms: the masters wait a third as long, the regions end 80 ms
    sooner (4 x 80 ms off the run), and the Late Sender between the ranks
    (both ranks' regions shrink alike) stays as it was."""
    t = waitscope.open(str(trace_dir("omp_imbalance")))
    before = t.analyze()
    s = t.simulate(scale={"!$omp parallel @omp_imbalance.c:63/work_until": 3.0})
    after = s.analyze()
    masters = [loc.index for loc in t.locations if not loc.thread]
    np.testing.assert_allclose(after.by_location("omp_ibarrier_wait")[masters],
                               before.by_location("omp_ibarrier_wait")[masters] / 3, rtol=0.05)
    assert after.total("mpi_latesender") == pytest.approx(before.total("mpi_latesender"), rel=0.02)
    assert t.run_length - s.run_length > 4 * 0.080 * 0.95
