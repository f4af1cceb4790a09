"""threads="auto", the default of open, load and analyze: how many threads
it picks, and that the results are those of one thread.

The rule (docs/index.md, "Using more cores"): one thread per usable core,
but at least 16 locations and 250,000 events per analysing thread (and
250,000 events per reading thread), no more threads than the available
memory holds (80 % of it: 16 bytes per event for the first thread, 4 for
each further one),
one thread when delay or wait-state records are asked for, and one in
the parallel mode.  The counts below are worked out from that rule.
"""
from __future__ import annotations

import numpy as np
import pytest

import waitscope
from waitscope import synth, trace as trace_module
from waitscope.trace import AUTO_ANALYSIS_BYTES, AUTO_LOCATIONS_PER_THREAD, _check_threads

GIB = 1 << 30


@pytest.fixture
def four_cores(monkeypatch):
    monkeypatch.setattr(trace_module, "_usable_cores", lambda: 4)
    monkeypatch.setattr(trace_module, "_available_memory", lambda: 64 * GIB)


def analysis_threads(n_locations: int, n_events: int) -> int:
    return _check_threads("auto", n_locations, None, AUTO_LOCATIONS_PER_THREAD, n_events=n_events,
                          bytes_per_event=AUTO_ANALYSIS_BYTES)


def test_auto_leaves_each_thread_enough_locations_and_events(four_cores) -> None:
    assert analysis_threads(2, 10**7) == 1            # the 2-rank barrier trace
    assert analysis_threads(1024, 10**7) == 4         # the stencil: one per core
    assert analysis_threads(40, 10**7) == 2           # 40 // 16
    assert analysis_threads(1024, 600_000) == 2       # 600,000 // 250,000
    assert analysis_threads(1024, 100_000) == 1
    # reading: every location may be a thread's, 250,000 events each
    assert _check_threads("auto", 2, None, n_events=10**7) == 2
    assert _check_threads("auto", 64, None, n_events=300_000) == 1
    # the parallel mode divides the work over processes
    assert _check_threads("auto", 1024, object(), AUTO_LOCATIONS_PER_THREAD, n_events=10**7) == 1


def test_auto_takes_no_more_threads_than_memory_holds(monkeypatch) -> None:
    monkeypatch.setattr(trace_module, "_usable_cores", lambda: 4)
    n = 5 * 10**8
    # 16 + 4 (n - 1) bytes per event: 2 threads need 10 GB, 80 % of 12.5; 3 need 12 GB, 80 % of 15;
    # 4 need 14 GB, 80 % of 17.5
    for available, expected in ((10 * 10**9, 1), (12.4 * 10**9, 1), (12.6 * 10**9, 2), (14.9 * 10**9, 2),
                                (15.1 * 10**9, 3), (17.4 * 10**9, 3), (17.6 * 10**9, 4)):
        monkeypatch.setattr(trace_module, "_available_memory", lambda a=available: a)
        assert analysis_threads(2048, n) == expected, available
    monkeypatch.setattr(trace_module, "_available_memory", lambda: None)  # no /proc/meminfo: not limited
    assert analysis_threads(2048, n) == 4


def test_explicit_counts_are_kept(four_cores) -> None:
    assert _check_threads(3, 1024, None, AUTO_LOCATIONS_PER_THREAD, n_events=10) == 3
    with pytest.raises(ValueError, match="positive integer or 'auto'"):
        _check_threads("many", 4, None)


def _ring(n: int, iterations: int) -> waitscope.Trace:
    p = synth.Program(n)
    for r in range(n):
        rank = p.rank(r)
        for i in range(iterations):
            rank.compute("work", 1e-5 * (1 + (r * 7 + i) % 5))
            reqs = [rank.irecv((r - 1) % n, tag=0), rank.isend((r + 1) % n, tag=0, size=64)]
            rank.waitall(reqs)
            if i % 10 == 9:
                rank.allreduce(size=8)
    return p.run()


def test_default_analysis_is_that_of_one_thread(four_cores, monkeypatch) -> None:
    trace = _ring(64, 700)  # 64 locations, 556,032 events: 2 threads (250,000 events each)
    seen: list[int] = []
    real = trace_module._core.analyze

    def spy(*args, **kwargs):
        seen.append(kwargs["threads"])
        return real(*args, **kwargs)

    monkeypatch.setattr(trace_module._core, "analyze", spy)
    default = trace.analyze(delay_model="proportional", critical_path=True)
    one = trace.analyze(delay_model="proportional", critical_path=True, threads=1)
    assert trace.n_events == 556_032
    assert seen == [2, 1]
    assert default.cube.tobytes() == one.cube.tobytes()
    # records: one thread, so the same order as ever
    with_records = trace.analyze(delay_model="proportional", delay_records=True, wait_records=True)
    assert seen[-1] == 1
    again = trace.analyze(delay_model="proportional", delay_records=True, wait_records=True, threads=1)
    assert len(with_records.delay_records) > 0
    assert with_records.delay_records.tobytes() == again.delay_records.tobytes()
    assert np.asarray(with_records.wait_states).tobytes() == np.asarray(again.wait_states).tobytes()


def test_default_load_is_that_of_one_thread(pingpong_dir) -> None:
    default = waitscope.open(pingpong_dir)
    one = waitscope.open(pingpong_dir, threads=1)
    for loc in range(default.n_locations):
        a, b = default.events(loc), one.events(loc)
        for key, column in a.columns.items():
            assert np.array_equal(column, b.columns[key]), key
