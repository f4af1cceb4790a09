"""One Trace used from several threads: work that only reads the store
(analyze, write, clock correction, the column views) may run at once;
loading changes the store and is refused, with a RuntimeError naming the
operation, while any other work on the same trace runs, and vice versa.

The conflicts are made deterministic: the first thread's progress callback
(which runs while that thread's work is under way, the GIL released
around it) starts the second thread and waits for it.
"""

from __future__ import annotations

import threading

import numpy as np

import waitscope
from waitscope import _core

from conftest import BUNDLED


def in_other_thread(fn) -> list[str]:
    """Runs fn in a new thread and returns ["ran"] or [the RuntimeError's message]."""
    out: list[str] = []

    def body():
        try:
            fn()
            out.append("ran")
        except RuntimeError as exc:
            out.append(str(exc))

    t = threading.Thread(target=body)
    t.start()
    t.join()
    return out


def test_nothing_else_runs_on_a_trace_while_it_loads():
    core = _core.open(str(BUNDLED))
    seen: list[str] = []
    attempts = {
        "analyze": lambda: _core.analyze(core),
        "events": lambda: core.events(0),
        "definitions": lambda: core.definitions(),
        "load": lambda: core.load(None, None),
        "correct_clocks": lambda: _core.correct_clocks(core),
    }

    def progress(stage, done, total):
        if not seen:
            for op in attempts.values():
                seen.extend(in_other_thread(op))

    core.load(None, progress)
    assert len(seen) == len(attempts)
    for name, message in zip(attempts, seen):
        assert f"Trace.{name}: another thread is loading" in message, message
    # once loading is done, everything works again
    assert core.n_events == 120
    _core.analyze(core)


def test_readers_share_a_trace_and_keep_loading_out():
    trace = waitscope.open(BUNDLED)
    core = trace._core
    want = trace.analyze(delay_model="proportional").cube
    seen: list[str] = []
    results = []

    def progress(stage, done, total):
        if not seen:
            # another analysis (a reader) runs alongside ...
            seen.extend(in_other_thread(lambda: results.append(
                _core.analyze(core, delay_model="proportional"))))
            # ... loading (a writer) does not
            seen.extend(in_other_thread(lambda: core.load(None, None)))

    got = _core.analyze(core, delay_model="proportional", progress=progress)
    assert seen[0] == "ran"
    assert "Trace.load: another thread is reading" in seen[1], seen[1]
    for r in (got, results[0]):
        np.testing.assert_array_equal(np.asarray(r["cube"]), want)
