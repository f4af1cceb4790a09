"""Trace.analyze(threads=N): the parallel mode inside one process.

N threads each replay a contiguous block of locations (the parallel
mode's block partition) and exchange payloads through the threaded
transport (csrc/replay/transport_threads.c); the result is gathered on
thread 0 as the parallel mode gathers it on process 0.  The one-thread
analysis is the reference: with any number of threads every array of the
result (cube, clock violations, critical path, delay records and their
vectors, wait-state records) must be bitwise equal to it, and a trace the
replay cannot get through must fail with the same message, not hang.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import waitscope
from waitscope import _core, synth
from waitscope.trace import block_owners

from conftest import BUNDLED, SHARED_DATA
from programs import collective_runs, six_ranks
from random_programs import _Builder, random_spliced, random_trace, splice

REFS = SHARED_DATA / "scalasca-refs"

CONFIGS: dict[str, dict[str, Any]] = {
    "waitstates": {},
    "proportional": {"delay_model": "proportional", "critical_path": True, "records": True, "wait_records": True},
    "wait-first": {"delay_model": "wait-first", "critical_path": True, "records": True, "wait_records": True},
}


def raw(trace: waitscope.Trace, threads: int, **options: Any) -> dict[str, Any]:
    return _core.analyze(trace._core, threads=threads, **options)


def assert_bitwise_equal(expected: Any, got: Any, what: str) -> None:
    """Equal structure, every array equal byte for byte (NaN and -0.0 included)."""
    if isinstance(expected, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(expected), what
        for key in expected:
            assert_bitwise_equal(expected[key], got[key], f"{what}: {key}")
    elif isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), what
        assert got.dtype == expected.dtype and got.shape == expected.shape, what
        if expected.dtype.hasobject:
            assert_bitwise_equal(list(expected.ravel()), list(got.ravel()), what)
        else:
            assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes(), \
                f"{what} is not bitwise equal"
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected), what
        for i, (e, g) in enumerate(zip(expected, got)):
            assert_bitwise_equal(e, g, f"{what}[{i}]")
    elif isinstance(expected, float):
        assert isinstance(got, float) and np.float64(got).tobytes() == np.float64(expected).tobytes(), what
    else:
        assert got == expected, what


def record_rows(records: dict[str, np.ndarray]) -> list[tuple]:
    """Delay records as rows of bit patterns, the vector in place of its offset, sorted.

    The records are a set: their order follows the replay's schedule (one
    process also reorders them with another schedule_seed), and the
    parallel mode concatenates them by process."""
    fields = [f for f in records if f not in ("vector_offset", "vector_length", "vector_callpath", "vector_value")]
    cps, values = records["vector_callpath"], records["vector_value"]
    rows = []
    for i in range(len(records["delayer"])):
        off, n = int(records["vector_offset"][i]), int(records["vector_length"][i])
        vector = tuple(zip(cps[off:off + n].tolist(), values[off:off + n].view(np.int64).tolist()))
        row = tuple(records[f][i:i + 1].view(np.int64)[0].item() for f in fields)
        rows.append(row + (vector,))
    assert sum(len(r[-1]) for r in rows) == len(cps)  # every vector entry belongs to one record
    return sorted(rows)


def assert_same_result(expected: dict[str, Any], got: dict[str, Any], what: str) -> None:
    expected, got = dict(expected), dict(got)
    # the same steps ran; their seconds are measurements, not results
    assert list(got.pop("timings")) == list(expected.pop("timings")), f"{what}: the steps"
    if "records" in expected:
        assert "records" in got, what
        assert record_rows(got.pop("records")) == record_rows(expected.pop("records")), f"{what}: delay records"
    assert_bitwise_equal(expected, got, what)


def assert_threads_equal(trace: waitscope.Trace, what: str, threads=(2, 3), configs=CONFIGS) -> None:
    for config, options in configs.items():
        expected = raw(trace, 1, **options)
        for n in threads:
            assert_same_result(expected, raw(trace, n, **options), f"{what}, {config}, {n} threads")


def test_bundled_trace():
    trace = waitscope.open(BUNDLED)
    assert_threads_equal(trace, "bundled trace", threads=(2, 3, 8))  # 3 and 8 are capped at 2 locations


@pytest.mark.parametrize("name", ["nxn", "ls_wrongorder", "chain_longterm"])
def test_scalasca_reference_traces(name):
    path = REFS / name
    if not path.exists():
        pytest.skip(f"{path} is not available")
    trace = waitscope.open(path)
    assert trace.n_locations >= 3
    assert_threads_equal(trace, name, threads=(2, 3))


@pytest.mark.parametrize("name", ["sp-scorep", "bt-scorep", "cg-scorep", "lu-waitscope", "cg-waitscope"])
def test_real_programs(name):
    """The NAS Parallel Benchmarks' traces (shared data): bit for bit the one-thread result."""
    path = SHARED_DATA / "real-programs" / name
    if not path.exists():
        pytest.skip(f"{path} is not available")
    trace = waitscope.open(path)
    assert_threads_equal(trace, name, threads=(2, 4) if trace.n_locations >= 4 else (2,))


@pytest.mark.parametrize("seed", range(12))
def test_random_programs(seed, tmp_path):
    trace = random_trace(tmp_path / "trace", 9100 + seed)
    what = f"random program {seed} ({trace.n_locations} ranks)"
    assert_threads_equal(trace, what, threads=(2, 3))
    # another schedule on every thread, and a time window: still the one-thread result
    options = dict(CONFIGS["wait-first"])
    full = raw(trace, 1, **options)
    start, end = full["path_start"], full["path_end"]
    options["window"] = (start + 0.3 * (end - start), start + 0.7 * (end - start))
    expected = raw(trace, 1, **options)
    assert_same_result(expected, raw(trace, 2, schedule_seed=seed + 1, **options), f"{what}, window, seeded")


@pytest.mark.parametrize("seed", range(4))
def test_random_spliced_traces(seed, tmp_path):
    """Distinct leave times in collectives and broken clocks."""
    rng = random.Random(9200 + seed)
    *_, trace = random_spliced(tmp_path, rng, "spliced")
    assert_threads_equal(trace, f"spliced program {seed}", threads=(2, 3))


def _late_rank_runs(iterations: int) -> synth.Program:
    """4 ranks; in runs of 5 iterations one rank comes late to every
    collective (barrier, allreduce, bcast, scan, on all ranks or on ranks
    0-1), the others wait; every 7th iteration a ring of messages."""
    p = synth.Program(4)
    sub = p.comm([0, 1])
    for it in range(iterations):
        late = (it // 5) % 4
        for r in range(4):
            p.rank(r).compute("work", 0.01 * (3 if r == late else 1 + r % 2))
        for r in range(4):
            rp = p.rank(r)
            op = it % 4
            if op == 0:
                rp.barrier()
            elif op == 1:
                rp.allreduce(size=8)
            elif op == 2:
                rp.bcast(root=late, size=8)
            else:
                rp.scan(size=8)
            if r < 2:
                rp.barrier(comm=sub).allreduce(size=8, comm=sub)
        if it % 7 == 6:
            sends = [p.rank(r).isend((r + 1) % 4, size=64) for r in range(4)]
            for r in range(4):
                p.rank(r).recv((r + 3) % 4).wait(sends[r])
    return p


def test_members_that_did_not_wait_contribute_ahead(tmp_path):
    """In the backward replay a member that did not wait at a collective
    hands no path over and is charged nothing there, so its contributions
    travel ahead of its position (the waiting members never wait for it):
    the results stay bitwise equal to one thread."""
    path = _late_rank_runs(60).write(tmp_path / "trace")
    assert_threads_equal(waitscope.open(path), "late rank runs", threads=(2, 3, 4))


def test_public_api_threads_argument():
    trace = waitscope.open(BUNDLED)
    one = trace.analyze(delay_model="wait-first", critical_path=True, progress=False)
    for threads in (2, "auto"):
        got = trace.analyze(delay_model="wait-first", critical_path=True, progress=False, threads=threads)
        assert got.cube.tobytes() == one.cube.tobytes()
        assert got.critical_path.segments.tobytes() == one.critical_path.segments.tobytes()
    for bad, exc in ((0, ValueError), (-2, ValueError), ("many", ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(exc, match="threads"):
            trace.analyze(threads=bad, progress=False)
    with pytest.raises(ValueError, match="threads"):
        _core.analyze(trace._core, threads=0)


def test_block_partition_is_the_parallel_modes():
    # the C driver's owner formula, (l * P) // n, is block_owners's
    assert list(block_owners(7, 3)) == [0, 0, 0, 1, 1, 2, 2]
    assert list(block_owners(2, 3)) == [0, 1]


# ---- errors ---------------------------------------------------------------------------


def error_of(trace: waitscope.Trace, threads: int) -> str:
    """The message of the TraceError the analysis raises (run in a thread with a deadline: no hang)."""
    box: list[Any] = []

    def body():
        try:
            raw(trace, threads, **CONFIGS["proportional"])
            box.append(None)
        except waitscope.TraceError as exc:
            box.append(str(exc))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            box.append(exc)

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), f"the analysis with {threads} threads hangs"
    assert box and isinstance(box[0], str), f"{threads} threads: expected a TraceError, got {box!r}"
    return box[0]


@pytest.mark.parametrize("case", ["missing send", "stalled replay", "crossed collectives"])
def test_inconsistent_traces_fail_as_with_one_thread(case, tmp_path):
    if case == "missing send":
        # location 3 receives 2 -> 3 with another tag: neither side matches
        path = splice(tmp_path / "trace", six_ranks(), six_ranks(bad_tag=99), 3)
    elif case == "stalled replay":
        # location 2 sends after the allreduce, location 3 receives before it
        path = splice(tmp_path / "trace", six_ranks(), six_ranks(send_late=True), 2)
    else:
        # location 3 waits in the world's allreduce for 0-2, which wait for 3 in the sub-communicator
        path = splice(tmp_path / "trace", collective_runs(scan=False), collective_runs(world_first=True, scan=False), 3)
    trace = waitscope.open(path)
    expected = error_of(trace, 1)
    if case != "missing send":
        assert "cannot continue" in expected, expected
    for n in (2, 3, 6):
        assert error_of(trace, n) == expected, f"{case}, {n} threads"
    # the trace stays usable: nothing of the failed runs is left behind
    assert error_of(trace, 2) == expected


# ---- progress and interruption ----------------------------------------------------------


def test_progress_runs_on_the_calling_thread(tmp_path):
    rng = random.Random(9300)
    builder = _Builder(rng, max_ranks=6, max_rounds=8)
    path = builder.build().write(tmp_path / "trace")
    trace = waitscope.open(path)
    me = threading.get_ident()
    calls: list[tuple[str, int, int, int]] = []

    def callback(stage: str, done: int, total: int) -> None:
        calls.append((stage, done, total, threading.get_ident()))

    one = trace.analyze(delay_model="proportional", progress=callback, threads=1)
    calls.clear()
    got = trace.analyze(delay_model="proportional", progress=callback, threads=3)
    assert got.cube.tobytes() == one.cube.tobytes()
    assert calls, "the progress callback was never called"
    assert {c[3] for c in calls} == {me}
    assert all(0 <= done <= total for _, done, total, _ in calls)
    stage, done, total, _ = calls[-1]
    assert done == total > 0


def test_a_failing_progress_callback_stops_every_thread(tmp_path):
    rng = random.Random(9301)
    path = _Builder(rng).build().write(tmp_path / "trace")
    trace = waitscope.open(path)

    class Stop(Exception):
        pass

    def callback(stage: str, done: int, total: int) -> None:
        raise Stop(stage)

    for _ in range(3):
        with pytest.raises(Stop):
            trace.analyze(delay_model="proportional", critical_path=True, progress=callback, threads=3)
    # afterwards the trace analyzes normally
    assert trace.analyze(progress=False, threads=3).cube.tobytes() == trace.analyze(progress=False).cube.tobytes()


# ---- command line -------------------------------------------------------------------------


def test_command_line_threads(capsys, tmp_path):
    from waitscope import cli

    path = Path(collective_runs(scan=False).write(tmp_path / "trace"))
    outputs = []
    for extra in ([], ["--threads", "3"], ["--threads", "auto"]):
        assert cli.main(["analyze", str(path), "--quiet", "--delay", "wait-first", "--critical-path", *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] and outputs[1] == outputs[0] and outputs[2] == outputs[0]
    with pytest.raises(SystemExit):
        cli.main(["analyze", str(path), "--threads", "0"])
    assert "--threads" in capsys.readouterr().err


CTRL_C_SCRIPT = r"""
import sys, waitscope
from waitscope import synth
n = 32
p = synth.Program(n)
for it in range(400):
    for r in range(n):
        p.rank(r).compute("work", 0.001 * (1 + (r + it) % 5))
    for r in range(0, n, 2):
        p.rank(r).send(r + 1, tag=1, size=8)
        p.rank(r + 1).recv(r, tag=1)
    for r in range(n):
        p.rank(r).allreduce(size=8)
trace = waitscope.open(p.write(sys.argv[1]))
print("analyzing", flush=True)
while True:  # the analysis takes most of the time: Ctrl-C lands in one
    trace.analyze(delay_model="proportional", critical_path=True, threads=int(sys.argv[2]), progress=False)
"""


@pytest.mark.parametrize("threads", [2, 3])  # 2 threads on 2 cores spin before they sleep, 3 never spin
def test_ctrl_c_stops_a_threaded_analysis(threads, tmp_path):
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT, str(tmp_path / "trace"), str(threads)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "analyzing"
        time.sleep(0.5)
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
            pytest.fail("the threaded analysis did not stop on Ctrl-C")
    assert proc.returncode != 0
    assert err.rstrip().endswith("KeyboardInterrupt"), err


# ---- the hand-off between threads --------------------------------------------------------------


def test_spin_policy(tmp_path):
    """How long a waiting thread (or MPI process) spins before it gives its
    core away (csrc/replay/spin.h), fed with made-up waits by
    tests/c/spin_policy.c: twice the longest short wait while at least 3/4
    of the waits are short, the minimum otherwise."""
    from test_alloc_failures import CSRC, ROOT

    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "spin_policy"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=200809L", f"-I{CSRC}",
                    str(ROOT / "tests" / "c" / "spin_policy.c"), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


# ---- data races -------------------------------------------------------------------------------


def test_no_data_race_under_threadsanitizer(tmp_path):
    """The kernel built with -fsanitize=thread (tests/c/threads_race.c): the
    threaded analyses of a clean trace and of a stalling one report no race."""
    import os
    import re
    import shlex

    from test_alloc_failures import CSRC, ROOT, kernel_sources

    cc, config = shutil.which("gcc"), shutil.which("otf2-config")
    if cc is None or config is None:
        pytest.skip("no gcc or otf2-config")
    tsan = subprocess.run([cc, "-print-file-name=libtsan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(tsan) or not os.path.exists(tsan):
        pytest.skip("gcc has no ThreadSanitizer runtime")

    def ask(*args: str) -> list[str]:
        return shlex.split(subprocess.check_output([config, *args], text=True))

    exe = tmp_path / "threads_race"
    subprocess.run([cc, "-std=c11", "-O1", "-g", "-fsanitize=thread", "-D_POSIX_C_SOURCE=200809L", f"-I{CSRC}",
                    *ask("--cflags"), str(ROOT / "tests" / "c" / "threads_race.c"), *kernel_sources(),
                    *ask("--ldflags"), *ask("--libs"), "-lm", "-lpthread", "-o", str(exe)], check=True)
    stalled = splice(tmp_path / "stalled", collective_runs(scan=False), collective_runs(world_first=True, scan=False), 3)
    clean = Path(collective_runs(scan=False).write(tmp_path / "clean" / "trace")).parent
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    env["TSAN_OPTIONS"] = "halt_on_error=1:exitcode=66"
    out = subprocess.run([str(exe), str(BUNDLED), str(clean), str(stalled)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    lines = re.findall(r" threads (\d) status (\w+) same 1$", out.stdout, re.M)
    assert len(lines) == 9, out.stdout
    assert [status for _, status in lines[-3:]] == ["WS_ERR_MATCH"] * 3


def test_auto_threads_leave_each_thread_many_locations(monkeypatch):
    # "auto": one thread per core, but at least 16 locations per thread
    from waitscope import trace as trace_module
    from waitscope.trace import AUTO_LOCATIONS_PER_THREAD, _check_threads

    monkeypatch.setattr(trace_module, "_usable_cores", lambda: 8)
    assert AUTO_LOCATIONS_PER_THREAD == 16
    assert [_check_threads("auto", n, None, 16) for n in (1, 2, 31, 32, 47, 48, 1024)] == [1, 1, 1, 2, 2, 3, 8]
    # loading has no hand-offs: one thread per core, at most one per location
    assert [_check_threads("auto", n, None) for n in (1, 2, 1024)] == [1, 2, 8]
    # explicit counts are taken as asked (up to one per location)
    assert _check_threads(4, 2, None, 16) == 2


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="the platform has no CPU affinity")
def test_auto_threads_follow_the_cpu_affinity():
    """A process bound to one core (taskset, or an mpiexec that binds) gets
    one thread from "auto", however many cores the machine has; bound to
    every core it may use, one per core.  Run in a fresh interpreter, whose
    affinity the test may change."""
    code = (
        "import os, sys\n"
        "from waitscope.trace import _check_threads, _usable_cores\n"
        "allowed = sorted(os.sched_getaffinity(0))\n"
        "wide = [_usable_cores(), _check_threads('auto', 10**6, None, 16), _check_threads('auto', 10**6, None)]\n"
        "os.sched_setaffinity(0, {allowed[0]})\n"
        "narrow = [_usable_cores(), _check_threads('auto', 10**6, None, 16), _check_threads('auto', 10**6, None)]\n"
        "print(len(allowed), *wide, *narrow)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    allowed, *counts = map(int, out.stdout.split())
    assert counts == [allowed] * 3 + [1, 1, 1]
    # an explicit count is not bound by the affinity
    from waitscope.trace import _check_threads
    assert _check_threads(3, 100, None, 16) == 3


def _delay_cube(trace: waitscope.Trace, threads: int, critical_path: bool) -> dict[str, bytes]:
    r = raw(trace, threads, delay_model="proportional", critical_path=critical_path)
    return {m["id"]: r["cube"][i].tobytes() for i, m in enumerate(r["metrics"])}


@pytest.mark.parametrize("program", ["late rank runs", "random 3", "random 7"])
def test_delay_costs_without_the_path_ahead(program, tmp_path):
    """Without the critical path, a member that waited at a collective may
    send its note ahead too, when no later charge of its location can add
    long-term costs to it (csrc/analysis/points.c, ws_points_mark_final).
    The delay costs must then be those of the analysis with the critical
    path (where such notes wait for the replay), on one thread and on
    several, bit for bit."""
    if program == "late rank runs":
        trace = waitscope.open(_late_rank_runs(40).write(tmp_path / "trace"))
    else:
        trace = random_trace(tmp_path / "trace", 9100 + int(program.split()[1]))
    reference = _delay_cube(trace, 1, critical_path=True)
    for threads in (1, 2, 3):
        got = _delay_cube(trace, threads, critical_path=False)
        assert got.keys() <= reference.keys()
        for metric, cells in got.items():
            assert cells == reference[metric], f"{program}: {metric} on {threads} thread(s)"


def test_wide_program_same_under_every_schedule():
    """2,048 ranks: from 2,048 locations on the scheduler asks the cache for
    the next locations' data ahead (engine.c), which a seeded schedule does
    not do; the results are the same bit for bit, on 1 and 2 threads, and
    satisfy the conservation laws (delay costs == handled waiting, path
    length == wall-clock time)."""
    n = 2048
    prog = synth.Program(n, name="wide")
    for rank in range(n):
        r = prog.rank(rank)
        for it in range(3):
            r.compute("work", 1e-4 * (1 + (rank * 7 + it * 3) % 5))
            r.send((rank + 1) % n, size=64) if rank % 2 == 0 else r.recv((rank - 1) % n)
            r.recv((rank - 1) % n) if rank % 2 == 0 else r.send((rank + 1) % n, size=64)
            r.allreduce(size=8)
    trace = prog.run(latency=2e-6, bandwidth=5e9, mpi_overhead=1e-7)
    options = CONFIGS["proportional"]
    expected = raw(trace, 1, **options)
    assert_same_result(expected, raw(trace, 1, schedule_seed=11, **options), "wide program, seeded schedule")
    assert_same_result(expected, raw(trace, 2, **options), "wide program, 2 threads")
    r = trace.analyze(delay_model="proportional", critical_path=True)
    assert r.handled_waiting() > 0.0
    assert r.total("delay") == pytest.approx(r.handled_waiting(), rel=1e-9)
    assert r.critical_path.length == pytest.approx(r.critical_path.end - r.critical_path.start, rel=1e-9)
