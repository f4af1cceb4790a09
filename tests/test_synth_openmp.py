"""Hybrid MPI+OpenMP test programs (waitscope.synth with threads > 1).

Every expected value is worked out by hand from the timing model in the
docstring of waitscope/synth.py (the computation is in each test's
docstring) and checked through the trace and waitscope's analysis.  Times
are chosen as binary fractions, so that ticks and seconds are exact.
Latency and MPI overhead are 0 unless stated.  Location r * T + k is
thread k of rank r.
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import waitscope
from waitscope import _core, synth

from test_otf2_writer import assert_same_callpaths, assert_same_definitions, assert_same_events, read
from test_synth import ENTER, LEAVE, T, View

FORK, JOIN, TEAM_BEGIN, TEAM_END, ACQUIRE, RELEASE = 17, 18, 19, 20, 21, 22
THREAD_COLUMNS = ["thr_event", "thr_comm", "thr_model", "thr_a", "thr_b"]
P = "main/!$omp parallel @loop"  # call paths below the program region


def cell(r, metric, path, location):
    """One value of a metric at the call path `path` below the program region."""
    return r.get(metric, "synthetic/" + path)[location]


def nonzero(r, metric):
    """{call path below the program region: values per location} where
    nonzero (rounded to 1e-12 s: 7.5 s is 7.500000000000001 as the reader
    converts ticks)."""
    v = r.get(metric)
    return {name.split("/", 1)[1]: [round(float(x), 12) for x in v[i]]
            for i, name in enumerate(r.callpath_names) if np.any(v[i] != 0)}


def thread_records(trace, loc):
    """[(kind, ticks, comm, a, b)] of a location's thread records."""
    te = trace.thread_events(loc)
    return [(str(k), T(t), int(c), int(a), int(b))
            for k, t, c, a, b in zip(te["kind"], te["time"], te["comm"], te["a"], te["b"])]


def docstring_example() -> str:
    """The code of the OpenMP example in waitscope.synth's docstring."""
    lines = synth.__doc__.split("OpenMP example::", 1)[1].splitlines()[2:]
    code = []
    for line in lines:
        if line and not line.startswith("    "):
            break
        code.append(line[4:])
    return "\n".join(code)


def test_docstring_example_runs():
    """The docstring's example, by hand: rank 0's master computes 'serial'
    [0, 1] and forks at 1; thread 0 starts at 1 (work [1, 2], barrier from
    2), thread 1 at 1 + 0.5 (work [1.5, 3.5], barrier at 3.5): the master
    waits 1.5 at the barrier, both leave at 3.5.  Thread 0: more [3.5, 4];
    thread 1: critical [3.5, 3.75], lock [3.75, 4.25]; the master waits
    0.25 at the implicit barrier, left at 4.25; join at 4.25 + 0.25 = 4.5,
    then MPI_Send.  Rank 1 receives from 0: Late Sender 4.5.  Fork time
    0.5 on thread 1, management = fork + join delay: 0.25 and 0.75.
    Handled waiting: 1.5 + 0.25 + 4.5 and the idle workers (rank 0's
    while its master runs 'serial' 1, rank 1's during the whole 4.5 run)
    = 11.75, all of it charged as delay costs."""
    ns = {"synth": synth}
    exec(docstring_example(), ns)
    r = ns["result"]
    np.testing.assert_array_equal(r.by_location("omp_ebarrier_wait"), [1.5, 0, 0, 0])
    np.testing.assert_array_equal(r.by_location("omp_ibarrier_wait"), [0.25, 0, 0, 0])
    np.testing.assert_array_equal(r.by_location("mpi_latesender"), [0, 0, 4.5, 0])
    np.testing.assert_array_equal(r.by_location("omp_fork"), [0, 0.5, 0, 0])
    np.testing.assert_array_equal(r.by_location("omp_management"), [0.25, 0.75, 0, 0])
    np.testing.assert_array_equal(r.by_location("time"), [4.5] * 4)
    assert r.handled_waiting() == pytest.approx(11.75, rel=1e-12)
    assert r.total("delay") + r.undistributed == pytest.approx(11.75, rel=1e-12)


def region_program() -> synth.Program:
    """One rank, two threads: serial work, a parallel region with fork
    delays, a join delay, a barrier overhead, an explicit barrier, a
    critical section and a lock, then more serial work."""
    prog = synth.Program(1, threads=2)
    r0 = prog.rank(0)
    r0.compute("serial", 1.0)
    with r0.parallel("loop", fork=[0.0, 0.25], join=0.5, barrier=0.125) as team:
        team.thread(0).compute("work", 1.0).barrier().compute("more", 0.5)
        team.thread(1).compute("work", 2.0).barrier().critical(0.25).lock(7, 0.5)
    r0.compute("tail", 1.0)
    return prog


def test_events_as_scorep_records_them():
    """By hand: 'serial' [0, 1]; ThreadFork at 1.  Thread 0 starts at 1
    (TeamBegin, Enter parallel), work [1, 2], barrier from 2; thread 1
    starts at 1.25, work [1.25, 3.25], barrier from 3.25; both leave at
    3.25 + 0.125 (overhead) = 3.375.  Thread 0: more [3.375, 3.875], then
    the implicit barrier.  Thread 1: critical entered at 3.375, acquired at
    once (lock id 0, the process's first lock, order 1), sblock [3.375,
    3.625], released and left at 3.625; omp_set_lock of lock 7 entered at
    3.625, acquired at once (lock id 1, order 1), held 0.5, omp_unset_lock
    at 4.125; implicit barrier from 4.125.  Both leave it at 4.125 + 0.125
    = 4.25, Leave the parallel region and end the team there; ThreadJoin
    at 4.25 + 0.5 = 4.75; 'tail' [4.75, 5.75], MPI_Finalize at 5.75."""
    trace = region_program().run()
    v = View(trace._core)
    B, IB, C = P + "/!$omp barrier @loop", P + "/!$omp implicit barrier @loop", P + "/!$omp critical @loop"
    S, SET, UNSET = C + "/!$omp critical sblock @loop", P + "/omp_set_lock", P + "/omp_unset_lock"
    assert v.records(0) == [
        (ENTER, 0, ""), (ENTER, 0, "main"), (ENTER, 0, "main/MPI_Init"), (LEAVE, 0, "main/MPI_Init"),
        (ENTER, 0, "main/serial"), (LEAVE, T(1), "main/serial"),
        (FORK, T(1), None), (TEAM_BEGIN, T(1), None), (ENTER, T(1), P),
        (ENTER, T(1), P + "/work"), (LEAVE, T(2), P + "/work"),
        (ENTER, T(2), B), (LEAVE, T(3.375), B),
        (ENTER, T(3.375), P + "/more"), (LEAVE, T(3.875), P + "/more"),
        (ENTER, T(3.875), IB), (LEAVE, T(4.25), IB), (LEAVE, T(4.25), P), (TEAM_END, T(4.25), None),
        (JOIN, T(4.75), None),
        (ENTER, T(4.75), "main/tail"), (LEAVE, T(5.75), "main/tail"),
        (ENTER, T(5.75), "main/MPI_Finalize"), (LEAVE, T(5.75), "main/MPI_Finalize"),
        (LEAVE, T(5.75), "main"), (LEAVE, T(5.75), ""),
    ]
    assert v.records(1) == [
        (TEAM_BEGIN, T(1.25), None), (ENTER, T(1.25), P),
        (ENTER, T(1.25), P + "/work"), (LEAVE, T(3.25), P + "/work"),
        (ENTER, T(3.25), B), (LEAVE, T(3.375), B),
        (ENTER, T(3.375), C), (ACQUIRE, T(3.375), None), (ENTER, T(3.375), S),
        (LEAVE, T(3.625), S), (RELEASE, T(3.625), None), (LEAVE, T(3.625), C),
        (ENTER, T(3.625), SET), (ACQUIRE, T(3.625), None), (LEAVE, T(3.625), SET),
        (ENTER, T(4.125), UNSET), (RELEASE, T(4.125), None), (LEAVE, T(4.125), UNSET),
        (ENTER, T(4.125), IB), (LEAVE, T(4.25), IB), (LEAVE, T(4.25), P), (TEAM_END, T(4.25), None),
    ]
    team = 3  # after MPI_COMM_WORLD, MPI_COMM_SELF and "Process x Threads CPU Locations"
    assert thread_records(trace, 0) == [
        ("thread_fork", T(1), -1, 2, 0), ("thread_team_begin", T(1), team, 0, 0),
        ("thread_team_end", T(4.25), team, 0, 0), ("thread_join", T(4.75), -1, 0, 0)]
    assert thread_records(trace, 1) == [
        ("thread_team_begin", T(1.25), team, 0, 0),
        ("thread_acquire_lock", T(3.375), -1, 0, 1), ("thread_release_lock", T(3.625), -1, 0, 1),
        ("thread_acquire_lock", T(3.625), -1, 1, 1), ("thread_release_lock", T(4.125), -1, 1, 1),
        ("thread_team_end", T(4.25), team, 0, 0)]
    assert list(trace.thread_events(0)["model"]) == ["openmp", "", "", "openmp"]
    assert list(trace.thread_events(1)["model"]) == ["", "openmp", "openmp", "openmp", "openmp", ""]


def test_definitions_as_scorep_writes_them():
    """Two ranks of three threads; rank 0 forks teams of 3 and 2 threads
    (the second twice), rank 1 one of 2 threads: three team communicators
    ((rank 0, 3), (rank 0, 2), (rank 1, 2)), each over its rank's first
    threads with the master as rank 0.  The MPI locations are the masters
    (ids 0, 1); thread k of rank r has id k << 32 | r, is "OMP thread k"
    in "MPI Rank r" and belongs to rank r's process; the "Process x
    Thread" topology places it at (r, k)."""
    prog = synth.Program(2, threads=3)
    with prog.rank(0).parallel("a") as team:
        team.thread(2).compute("w", 1.0)
    for _ in range(2):
        with prog.rank(0).parallel("a", num_threads=2) as team:
            team.thread(1).critical(0.5)
    with prog.rank(1).parallel("b", num_threads=2) as team:
        team.thread(1).barrier().lock(3, 0.5)
        team.thread(0).barrier()
    trace = prog.run()
    d = trace._core.definitions()
    strings = d["strings"]
    locs = d["locations"]
    assert list(locs["otf2_id"]) == [0, 1 << 32, 2 << 32, 1, 1 << 32 | 1, 2 << 32 | 1]
    assert [strings[i] for i in locs["name"]] == ["Master thread", "OMP thread 1", "OMP thread 2"] * 2
    assert [(x.rank, x.thread, x.process, x.mpi_rank) for x in trace.locations] == [
        (0, 0, "MPI Rank 0", 0), (0, 1, "MPI Rank 0", -1), (0, 2, "MPI Rank 0", -1),
        (1, 0, "MPI Rank 1", 1), (1, 1, "MPI Rank 1", -1), (1, 2, "MPI Rank 1", -1)]
    assert d["world_size"] == 2
    groups = [(g["name"], g["type"], g["paradigm"], list(g["members"])) for g in d["groups"]]
    everyone = [0, 1 << 32, 2 << 32, 1, 1 << 32 | 1, 2 << 32 | 1]
    assert groups == [
        ("", 4, 4, [0, 1]), ("", 5, 4, [0, 1]), ("", 6, 4, []),  # MPI: the masters, world, self
        ("PROCESSXTHREADS_GROUP_LOCATIONS", 4, 6, everyone), ("PROCESSXTHREADS_GROUP", 5, 6, list(range(6))),
        ("OpenMP", 4, 3, everyone),  # COMM_LOCATIONS of OTF2_PARADIGM_OPENMP (3)
        ("", 5, 3, [0, 1]), ("", 5, 3, [0, 1, 2]), ("", 5, 3, [3, 4])]  # the teams, by rank and size
    comms = [(c["name"], list(c["locations"]), c["parent"]) for c in d["comms"]]
    assert comms == [("MPI_COMM_WORLD", [0, 3], -1), ("MPI_COMM_SELF", [], -1),
                     ("Process x Threads CPU Locations", list(range(6)), -1),
                     ("", [0, 1], -1), ("", [0, 1, 2], -1), ("", [3, 4], -1)]
    # every team begins on the communicator of its size
    assert [c for k, _, c, _, _ in thread_records(trace, 1) if k == "thread_team_begin"] == [4, 3, 3]
    assert [c for k, _, c, _, _ in thread_records(trace, 4) if k == "thread_team_begin"] == [5]
    assert [c for k, _, c, _, _ in thread_records(trace, 2) if k == "thread_team_begin"] == [4]
    (topo,) = d["cart_topologies"]
    assert (topo["name"], topo["dim_names"], list(topo["dims"]), topo["comm"]) == (
        "Process x Thread", ["Process", "Thread"], [2, 3], 2)
    assert topo["coords"].tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    regions = d["regions"]
    roles = {strings[n]: (int(role), int(par)) for n, role, par in zip(regions["name"], regions["role"],
                                                                      regions["paradigm"])}
    # OTF2 roles: PARALLEL 5, IMPLICIT_BARRIER 16, BARRIER 15, CRITICAL 12, CRITICAL_SBLOCK 13, WRAPPER 2
    assert {n: v for n, v in roles.items() if v[1] == 3} == {
        "!$omp parallel @a": (5, 3), "!$omp implicit barrier @a": (16, 3),
        "!$omp critical @a": (12, 3), "!$omp critical sblock @a": (13, 3),
        "!$omp parallel @b": (5, 3), "!$omp implicit barrier @b": (16, 3), "!$omp barrier @b": (15, 3),
        "omp_set_lock": (2, 3), "omp_unset_lock": (2, 3)}
    lock_file = {strings[n]: strings[f] for n, f in zip(regions["name"], regions["source_file"]) if f >= 0}
    assert lock_file["omp_set_lock"] == lock_file["omp_unset_lock"] == "OMP"


def test_a_team_of_one_thread_in_an_mpi_program():
    """threads=1 with a parallel region: each rank's team is its master
    alone (a team communicator of one location; a 2 x 1 topology).  Rank
    r: fork at 0, start at 0.125, w [0.125, 1.125 + r], implicit barrier
    left at once, join 0.25 later at 1.375 + r; rank 0 then sends at
    1.375, rank 1 receives at 2.375 without waiting.  Fork time 0.125,
    management 0.125 + 0.25."""
    prog = synth.Program(2)
    for r in range(2):
        with prog.rank(r).parallel("loop", fork=0.125, join=0.25) as team:
            team.thread(0).compute("w", 1.0 + r)
    prog.rank(0).send(1)
    prog.rank(1).recv(0)
    trace = prog.run()
    d = trace._core.definitions()
    assert [list(c["locations"]) for c in d["comms"][3:]] == [[0], [1]]
    assert list(d["cart_topologies"][0]["dims"]) == [2, 1]
    assert [(k, t) for k, t, *_ in thread_records(trace, 1)] == [
        ("thread_fork", 0), ("thread_team_begin", T(0.125)), ("thread_team_end", T(2.125)),
        ("thread_join", T(2.375))]
    r = trace.analyze()
    np.testing.assert_array_equal(r.by_location("omp_fork"), [0.125, 0.125])
    np.testing.assert_array_equal(r.by_location("omp_management"), [0.375, 0.375])
    np.testing.assert_array_equal(r.by_location("mpi_latesender"), [0, 0])
    np.testing.assert_array_equal(r.by_location("time"), [2.375, 2.375])


def test_fork_and_management_per_thread():
    """Three threads start 0, 0.25 and 0.5 after the fork at 0, each
    computes 1 (ends 1, 1.25, 1.5), all leave the implicit barrier at 1.5
    (waits 0.5, 0.25, 0), join at 1.5 + 0.125.  Per thread: omp_fork =
    its start delay, omp_management = fork + the join delay 0.125, both
    at the parallel region, which then holds no computation; every
    thread's Time is the run, 1.625."""
    prog = synth.Program(1, threads=3)
    with prog.rank(0).parallel("loop", fork=[0.0, 0.25, 0.5], join=0.125) as team:
        for i in range(3):
            team.thread(i).compute("w", 1.0)
    r = prog.run().analyze()
    assert [cell(r, "omp_fork", P, i) for i in range(3)] == [0, 0.25, 0.5]
    assert [cell(r, "omp_management", P, i) for i in range(3)] == [0.125, 0.375, 0.625]
    assert [cell(r, "comp", P, i) for i in range(3)] == [0, 0, 0]
    assert [cell(r, "omp_ibarrier_wait", P + "/!$omp implicit barrier @loop", i) for i in range(3)] == [0.5, 0.25, 0]
    np.testing.assert_array_equal(r.by_location("time"), [1.625] * 3)


def barrier_program() -> synth.Program:
    prog = synth.Program(1, threads=3)
    with prog.rank(0).parallel("loop") as team:
        for i in range(3):
            team.thread(i).compute("w", 1.0 + i).barrier().compute("v", 3.0 - i)
    return prog


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
def test_barrier_waiting_and_its_delay_costs(model):
    """Thread i computes w = 1 + i, meets the others at a barrier, then
    computes v = 3 - i.  Barrier: entered at 1, 2, 3, left at 3: waits 2,
    1, 0 (omp_ebarrier_wait).  Implicit barrier: v ends at 6, 5, 4: waits
    0, 1, 2 (omp_ibarrier_wait).  Delay costs (no waiting of the delayer
    in the interval, so both models charge the difference profile): at
    the barrier thread 2's w exceeds thread 0's by 2 and thread 1's by 1,
    so delay_ompbarrier on thread 2's w = 2 + 1 = 3; at the implicit
    barrier thread 0's v exceeds thread 1's by 1, thread 2's by 2: 3 on
    thread 0's v.  The critical path runs through thread 2's w [0, 3] and
    thread 0's v [3, 6]: 6, the run."""
    r = barrier_program().run().analyze(delay_model=model, critical_path=True)
    assert nonzero(r, "omp_ebarrier_wait") == {P + "/!$omp barrier @loop": [2, 1, 0]}
    assert nonzero(r, "omp_ibarrier_wait") == {P + "/!$omp implicit barrier @loop": [0, 1, 2]}
    assert nonzero(r, "delay_ompbarrier") == {P + "/w": [0, 0, 3], P + "/v": [3, 0, 0]}
    assert r.total("delay_ompbarrier_longterm") == 0
    assert nonzero(r, "critical_path") == {P + "/w": [0, 0, 3], P + "/v": [3, 0, 0]}
    assert r.critical_path.length == 6
    assert r.total("delay") + r.undistributed == r.handled_waiting() == 6


def test_critical_and_lock_contention():
    """Thread 0 starts 0.5 after the fork, threads 1 and 2 at once; each
    enters the unnamed critical section (held 1), then lock 5 (held 2).
    Critical entries: thread 1 at 0 and thread 2 at 0 (a tie: thread 1
    first), thread 0 at 0.5: acquired by thread 1 at 0, thread 2 at 1,
    thread 0 at 2 (contention 0, 1, 1.5; orders 1, 2, 3 of lock id 0).
    Lock 5 (id 1): entered by thread 1 at 1, thread 2 at 2, thread 0 at
    3; acquired at 1, 3, 5 (contention 0, 1, 2; orders 1, 2, 3); released
    at 3, 5, 7.  A second region (fork at 7): thread 0 enters the critical
    section "io" (lock id 2, order 1) while thread 1 enters the unnamed
    one (order 4): different locks, no contention; both hold 0.5 and
    thread 2 waits 0.5 at the implicit barrier.  Implicit barrier waits:
    region 1 arrivals 7, 3, 5 -> 0, 4, 2; in all 0, 4, 2.5."""
    prog = synth.Program(1, threads=3)
    r0 = prog.rank(0)
    with r0.parallel("loop", fork=[0.5, 0.0, 0.0]) as team:
        for i in range(3):
            team.thread(i).critical(1.0).lock(5, 2.0)
    with r0.parallel("loop") as team:
        team.thread(0).critical(0.5, name="io")
        team.thread(1).critical(0.5)
    trace = prog.run()
    r = trace.analyze()
    assert nonzero(r, "omp_lock_contention_critical") == {P + "/!$omp critical @loop": [1.5, 0, 1]}
    assert nonzero(r, "omp_lock_contention_api") == {P + "/omp_set_lock": [2, 0, 1]}
    assert nonzero(r, "omp_ibarrier_wait") == {P + "/!$omp implicit barrier @loop": [0, 4, 2.5]}
    locks = {i: [(k, t, a, b) for k, t, _, a, b in thread_records(trace, i) if "lock" in k] for i in range(3)}
    assert locks[1] == [("thread_acquire_lock", 0, 0, 1), ("thread_release_lock", T(1), 0, 1),
                        ("thread_acquire_lock", T(1), 1, 1), ("thread_release_lock", T(3), 1, 1),
                        ("thread_acquire_lock", T(7), 0, 4), ("thread_release_lock", T(7.5), 0, 4)]
    assert locks[2] == [("thread_acquire_lock", T(1), 0, 2), ("thread_release_lock", T(2), 0, 2),
                        ("thread_acquire_lock", T(3), 1, 2), ("thread_release_lock", T(5), 1, 2)]
    assert locks[0] == [("thread_acquire_lock", T(2), 0, 3), ("thread_release_lock", T(3), 0, 3),
                        ("thread_acquire_lock", T(5), 1, 3), ("thread_release_lock", T(7), 1, 3),
                        ("thread_acquire_lock", T(7), 2, 1), ("thread_release_lock", T(7.5), 2, 1)]


def idle_program() -> synth.Program:
    prog = synth.Program(2, threads=3)
    r0 = prog.rank(0)
    r0.compute("serial", 2.0)
    with r0.parallel("all") as team:
        for i in range(3):
            team.thread(i).compute("w", 1.0)
    with r0.parallel("two", num_threads=2) as team:
        for i in range(2):
            team.thread(i).compute("w", 1.0)
    r0.compute("tail", 1.0).barrier()
    prog.rank(1).compute("w", 6.0).barrier()
    return prog


def test_idle_threads_and_limited_parallelism():
    """Rank 0 (threads 0-2): 'serial' [0, 2], a region of all threads
    [2, 3], one of threads 0 and 1 [3, 4], 'tail' [4, 5], MPI_Barrier
    [5, 6] (waiting 1 for rank 1, which computes 'w' [0, 6]).  Workers
    idle while their master runs outside parallel regions, at the
    master's call paths: rank 0's threads 1 and 2 at serial 2, tail 1,
    MPI_Barrier 1; thread 2 also during the region it is left out of (1
    at the master's 'two/w', limited parallelism); rank 1's workers at
    'w' 6.  Every thread's Time is 6.  delay_ompidle = (threads - 1) x the
    master's serial work: rank 0 2 x (2, 1) on serial and tail, rank 1
    2 x 6 on w; the 2 x 1 idle while rank 0's master waits at the barrier
    goes long-term to what delayed the barrier: rank 1's w (which also
    takes the barrier's short-term 1).  Handled waiting: 1 + 2 x 4 + 2 x 6
    = 21, all charged.  (The proportional model; the wait-first model
    charges the idle cost of a waiting master wrongly with more than two
    threads per process: test_wait_first_idle_cost_of_a_waiting_master.)"""
    r = idle_program().run().analyze(delay_model="proportional")
    np.testing.assert_array_equal(r.by_location("time"), [6] * 6)
    assert nonzero(r, "omp_idle_threads") == {
        "main/serial": [0, 2, 2, 0, 0, 0], "main/!$omp parallel @two/w": [0, 0, 1, 0, 0, 0],
        "main/tail": [0, 1, 1, 0, 0, 0], "main/MPI_Barrier": [0, 1, 1, 0, 0, 0], "main/w": [0, 0, 0, 0, 6, 6]}
    assert nonzero(r, "omp_limited_parallelism") == {"main/!$omp parallel @two/w": [0, 0, 1, 0, 0, 0]}
    np.testing.assert_array_equal(r.get("execution") + r.get("omp_idle_threads"), r.get("time"))
    assert nonzero(r, "delay_ompidle") == {"main/serial": [4, 0, 0, 0, 0, 0], "main/tail": [2, 0, 0, 0, 0, 0],
                                           "main/w": [0, 0, 0, 12, 0, 0]}
    assert nonzero(r, "delay_ompidle_longterm") == {"main/w": [0, 0, 0, 2, 0, 0]}
    assert nonzero(r, "delay_barrier") == {"main/w": [0, 0, 0, 1, 0, 0]}
    assert r.handled_waiting() == 21
    assert r.total("delay") + r.undistributed == pytest.approx(21, rel=1e-12)


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
def test_idle_cost_of_a_waiting_master(model):
    """The smallest program: two ranks of three threads; rank 0 forks an
    empty region at 0, computes 'tail' [0, 1] and waits in MPI_Barrier
    [1, 2] for rank 1 ('w' [0, 2]).  Rank 0's two workers idle 2 x 1 while
    their master computes (delay_ompidle on 'tail': 2) and 2 x 1 while it
    waits (delay_ompidle_longterm: 2, to the barrier's cause, rank 1's w),
    whatever the model: the idle thread-time of the master's waiting (2 x
    1) is what the wait-first model gives its waiting first, not the
    master's 1 s."""
    prog = synth.Program(2, threads=3)
    r0 = prog.rank(0)
    r0.parallel("empty")
    r0.compute("tail", 1.0).barrier()
    prog.rank(1).compute("w", 2.0).barrier()
    r = prog.run().analyze(delay_model=model)
    assert r.total("delay") + r.undistributed == pytest.approx(r.handled_waiting(), rel=1e-12)
    assert cell(r, "delay_ompidle", "main/tail", 0) == 2
    assert cell(r, "delay_ompidle_longterm", "main/w", 3) == 2


def late_sender_program() -> synth.Program:
    prog = synth.Program(2, threads=2)
    with prog.rank(0).parallel("loop") as team:
        team.thread(0).compute("a", 1.0)
        team.thread(1).compute("b", 3.0)
    prog.rank(0).send(1)
    prog.rank(1).recv(0)
    return prog


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
def test_a_long_term_cost_passes_an_openmp_barrier(model):
    """Rank 0's master computes a [0, 1] and waits at the implicit barrier
    until 3 for thread 1 (b [0, 3]), then sends; rank 1 waits in MPI_Recv
    [0, 3]: Late Sender 3, and its worker idles 3 meanwhile (a long-term
    cost 3 on that wait state, class idle threads).  Rank 0's interval:
    a 1 and the barrier waiting 2, summing to the Late Sender's 3, so
    both models give a short-term 1 on a (delay_latesender) and pass 2
    on to the barrier's waiting; the idle cost 3 likewise: 1 on a
    (delay_ompidle_longterm), 2 on to the barrier's waiting.  There
    thread 1's b (3 over the master's 0 on that call path) takes the
    barrier's own 2 (delay_ompbarrier) and the 2 + 2 passed on:
    delay_latesender_longterm 2, delay_ompidle_longterm 2.  In all 1 + 2
    + 2 + 1 + 2 = 8 = the waiting: 3 + 2 + 3.  The critical path runs
    through thread 1's b: 3, the run."""
    r = late_sender_program().run().analyze(delay_model=model, critical_path=True)
    a, b = P + "/a", P + "/b"
    assert nonzero(r, "mpi_latesender") == {"main/MPI_Recv": [0, 0, 3, 0]}
    assert nonzero(r, "delay_latesender") == {a: [1, 0, 0, 0]}
    assert nonzero(r, "delay_latesender_longterm") == {b: [0, 2, 0, 0]}
    assert nonzero(r, "delay_ompbarrier") == {b: [0, 2, 0, 0]}
    assert nonzero(r, "delay_ompidle_longterm") == {a: [1, 0, 0, 0], b: [0, 2, 0, 0]}
    assert r.total("delay_ompidle") == 0
    assert r.handled_waiting() == 8 and r.undistributed == 0
    assert r.total("delay") == pytest.approx(8, rel=1e-12)
    assert nonzero(r, "critical_path") == {b: [0, 3, 0, 0]}
    cp = r.critical_path
    assert cp.length == 3 and 1 in set(cp.segments["location"].tolist())


def mixed_program() -> synth.Program:
    """Three ranks of three threads: every OpenMP construct, MPI in between."""
    prog = synth.Program(3, threads=3)
    for r in range(3):
        rk = prog.rank(r).compute("serial", 0.25 * r)
        with rk.parallel("loop", fork=[0.0, 0.0625 * r, 0.125], join=0.0625, barrier=0.03125) as team:
            for i in range(3):
                th = team.thread(i).compute("work", 1.0 + 0.5 * ((r + i) % 3))
                th.barrier().critical(0.125, region="update").lock(r, 0.25)
        if r == 0:
            rk.send(1, size=8).recv(2)
        elif r == 1:
            rk.recv(0).send(2, size=8)
        else:
            rk.recv(1).send(0, size=8)
        with rk.parallel("loop", num_threads=2) as team:
            team.thread(1 if r else 0).compute("work", 0.5)
        rk.allreduce(8)
    return prog


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
def test_conservation(model):
    """Delay costs plus the undistributed waiting equal the handled
    waiting, every delay cost is >= 0, on a program with every construct;
    the handled waiting includes the OpenMP barrier waiting (checked
    against the wait-state metrics: it is more than those)."""
    r = mixed_program().run(latency=1e-3, mpi_overhead=1e-4).analyze(delay_model=model, critical_path=True)
    waited = r.handled_waiting()
    assert r.total("delay") + r.undistributed == pytest.approx(waited, rel=1e-12)
    assert waited > r.total("omp_ibarrier_wait") + r.total("omp_ebarrier_wait") + r.total("mpi_latesender") > 0
    for m in r.metric_ids:
        if m.startswith("delay"):
            assert (r.get(m) >= -1e-12).all(), m
    assert r.total("critical_path") == pytest.approx(r.critical_path.end - r.critical_path.start, rel=1e-12)


def test_two_analysis_threads_equal_one():
    """analyze(threads=2) and threads=3 (a process's threads kept together)
    give bitwise the one-thread result, critical path included."""
    trace = mixed_program().run(latency=1e-3)
    one = trace.analyze(delay_model="proportional", critical_path=True)
    for n in (2, 3):
        other = trace.analyze(delay_model="proportional", critical_path=True, threads=n)
        for m in one.metric_ids:
            np.testing.assert_array_equal(one.get(m), other.get(m), err_msg=m)
        np.testing.assert_array_equal(one.critical_path.segments, other.critical_path.segments)


def test_worker_call_paths_lie_below_the_masters_fork():
    """The master forks once inside its region 'solver' and once in main:
    a worker's regions get the master's call path at the fork as parent,
    the one call path node the master's parallel region has too."""
    prog = synth.Program(1, threads=2)
    r0 = prog.rank(0)
    with r0.region("solver"):
        with r0.parallel("loop") as team:
            team.thread(1).compute("b", 1.0)
    with r0.parallel("loop") as team:
        team.thread(1).compute("b", 1.0)
    v = View(prog.run()._core)
    entered = [p for k, _, p in v.records(1) if k == ENTER]
    solver = "main/solver/!$omp parallel @loop"
    assert entered == [solver, solver + "/b", solver + "/!$omp implicit barrier @loop",
                       P, P + "/b", P + "/!$omp implicit barrier @loop"]
    worker = {int(ref) for k, ref in zip(v.trace.events(1)["kind"], v.trace.events(1)["ref"]) if k == ENTER}
    master = {int(ref) for k, ref in zip(v.trace.events(0)["kind"], v.trace.events(0)["ref"]) if k == ENTER}
    parallel = {cp for cp in master if v.path(cp).endswith("!$omp parallel @loop")}
    assert len(parallel) == 2 and parallel <= worker


def test_write_and_read_back(tmp_path):
    """The archive reads back as the store (events, thread records, call
    paths, definitions) and analyses identically; Debian's otf2-print
    reads it: one ThreadFork/ThreadJoin per region on the masters, a
    ThreadTeamBegin/End per thread and region, the OpenMP paradigm and
    the region roles Score-P writes."""
    prog = mixed_program()
    mem = prog.run(latency=1e-3)._core
    path = prog.write(tmp_path / "hybrid", latency=1e-3)
    disk = read(path)
    assert_same_events(mem, disk)
    assert_same_callpaths(mem, disk)
    assert_same_definitions(mem, disk)
    for loc in range(mem.n_locations):
        a, b = mem.events(loc), disk.events(loc)
        for col in THREAD_COLUMNS:
            np.testing.assert_array_equal(a[col], b[col], err_msg=f"location {loc}, {col}")
    ours = waitscope.Trace(mem).analyze(delay_model="wait-first", critical_path=True)
    theirs = waitscope.open(path).analyze(delay_model="wait-first", critical_path=True)
    for m in ours.metric_ids:
        np.testing.assert_array_equal(ours.get(m), theirs.get(m), err_msg=m)
    if shutil.which("otf2-print") is None:
        pytest.skip("otf2-print is not installed")
    out = subprocess.run(["otf2-print", path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    kinds = [line.split()[0] for line in out.stdout.splitlines() if line[:1].isupper()]
    # 3 ranks x 2 regions; teams of 3 + 2 threads per rank
    assert kinds.count("THREAD_FORK") == kinds.count("THREAD_JOIN") == 6
    assert kinds.count("THREAD_TEAM_BEGIN") == kinds.count("THREAD_TEAM_END") == 15
    # per rank: 3 critical sections and 3 locks
    assert kinds.count("THREAD_ACQUIRE_LOCK") == kinds.count("THREAD_RELEASE_LOCK") == 18
    defs = subprocess.run(["otf2-print", "-G", path], capture_output=True, text=True)
    assert defs.returncode == 0, defs.stderr
    assert 'OPENMP, Name: "OpenMP" <' in defs.stdout and "Class: THREAD_FORK_JOIN" in defs.stdout
    for role in ("PARALLEL", "IMPLICIT_BARRIER", "BARRIER", "CRITICAL", "CRITICAL_SBLOCK", "WRAPPER"):
        assert f'Role: {role}, Paradigm: "OpenMP"' in defs.stdout, role
    assert 'LOCATION                      4294967298  Name: "OMP thread 1"' in defs.stdout
    assert 'CART_TOPOLOGY                          0  Name: "Process x Thread"' in defs.stdout


def test_threads_without_a_parallel_region(tmp_path):
    """Worker threads that never join a team are defined (Program(n,
    threads=T) has T threads per process) with no events, and their empty
    event files read back; the masters' events are the MPI program's."""
    prog = synth.Program(2, threads=2)
    prog.rank(0).compute("w", 1.0).send(1)
    prog.rank(1).recv(0)
    mem = prog.run()._core
    assert [len(mem.events(i)["kind"]) for i in range(4)] == [13, 0, 11, 0]
    disk = read(prog.write(tmp_path / "t"))
    assert_same_events(mem, disk)
    assert_same_definitions(mem, disk)
    plain = synth.Program(2)
    plain.rank(0).compute("w", 1.0).send(1)
    plain.rank(1).recv(0)
    one = plain.run()._core
    for loc in (0, 1):
        np.testing.assert_array_equal(mem.events(2 * loc)["time"], one.events(loc)["time"])
        np.testing.assert_array_equal(mem.events(2 * loc)["kind"], one.events(loc)["kind"])


# ---- bad programs ----------------------------------------------------------------


def test_bad_statements_raise_value_error():
    prog = synth.Program(1, threads=2)
    r0 = prog.rank(0)
    with pytest.raises(ValueError, match="threads 0 is out of range"):
        synth.Program(2, threads=0)
    with pytest.raises(ValueError, match="num_threads 3 is out of range"):
        r0.parallel("p", num_threads=3)
    with pytest.raises(ValueError, match="one delay per thread of the team \\(2\\), not 1"):
        r0.parallel("p", fork=[0.0])
    with pytest.raises(ValueError, match="fork delay of thread 1"):
        r0.parallel("p", fork=[0.0, -1.0])
    with pytest.raises(ValueError, match="join"):
        r0.parallel("p", join=float("nan"))
    with pytest.raises(ValueError, match="non-empty string"):
        r0.parallel("")
    with pytest.raises(ValueError, match="reserved for OpenMP"):
        r0.compute("!$omp parallel @p", 1.0)
    with r0.parallel("p", num_threads=1) as team:
        with pytest.raises(ValueError, match="thread 1 is not in the team of parallel region 'p'"):
            team.thread(1)
        with pytest.raises(ValueError, match="inside the with block of parallel region 'p'"):
            r0.compute("w", 1.0)
        with pytest.raises(ValueError, match="inside the with block"):
            r0.parallel("q")
        with pytest.raises(ValueError, match="duration"):
            team.thread(0).compute("w", -1.0)
        with pytest.raises(ValueError, match="lock 2147483648 is out of range"):
            team.thread(0).lock(2**31, 1.0)
        with pytest.raises(ValueError, match="critical section's name"):
            team.thread(0).critical(1.0, name="")
    r0.compute("after", 1.0)  # the block is closed
    assert len(r0) == 2 and len(prog._teams) == 1 and len(team.thread(0)) == 0


def test_unequal_barriers_and_open_regions_are_refused():
    prog = synth.Program(1, threads=2)
    with prog.rank(0).parallel("p") as team:
        team.thread(0).barrier()
    with pytest.raises(ValueError, match="thread 1 reaches 0 barrier\\(s\\), thread 0 1"):
        prog.run()
    prog = synth.Program(1, threads=2)
    with prog.rank(0).parallel("p") as team:
        team.thread(1).region("open").__enter__()
    with pytest.raises(ValueError, match="thread 1: region 'open' is entered but never left"):
        prog.run()


def test_core_rejects_malformed_teams():
    """The C executor checks what the Python builder guarantees: each
    parallel region executed once, by one rank; threads doing no MPI; no
    thread operation among a rank's; teams no larger than the processes."""
    prog = synth.Program(2, threads=2)
    with prog.rank(0).parallel("p") as team:
        team.thread(1).compute("w", 1.0)
    packed = prog.pack()

    def run(**changes):
        args = {**packed, **changes}
        return _core.synth_run(**args, latency=0.0, bandwidth=0.0, eager_limit=0, overhead=0.0,
                               resolution=10**9)

    run()  # as packed: runs
    twice = np.vstack([packed["ops"], packed["ops"]])
    with pytest.raises(ValueError, match="executed twice"):
        run(ops=twice, rank_ptr=np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="executed by no rank"):
        run(ops=np.zeros((0, 5), dtype=np.int64), rank_ptr=np.array([0, 0, 0]))
    send = packed["thread_ops"].copy()
    send[0] = [_core.synth_ops["send"], 0, 0, 0, 0]
    with pytest.raises(ValueError, match="cannot be executed by a thread of a parallel region"):
        run(thread_ops=send)
    barrier = packed["ops"].copy()
    barrier[0] = [_core.synth_ops["omp_barrier"], 0, 0, 0, 0]
    with pytest.raises(ValueError, match="belongs to a thread of a parallel region"):
        run(ops=barrier)
    with pytest.raises(ValueError, match="a team of 2 threads"):
        run(threads=1)
