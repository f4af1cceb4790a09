"""AnalysisResult.timings: the seconds of each step of the analysis that ran.

Which steps run follows from the options (analyze.c): the wait states
alone are matching and the wait-state passes; a delay model or the
critical path add the synchronization points, the delay analysis's points
and the backward replay; the critical path adds its walk and its pieces, a
delay model the forward pass; both add the derived metrics.  A step's
seconds are measured where it runs: time spent in a progress callback
called from inside a step counts to that step.
"""

from __future__ import annotations

import math
import time

import pytest

import waitscope

from conftest import BUNDLED

WAIT_STATES = ["matching", "wait states"]
SETUP = ["sync points", "delay points", "backward replay"]


@pytest.mark.parametrize(
    "options, steps",
    [
        ({}, WAIT_STATES),
        ({"critical_path": True}, WAIT_STATES + SETUP + ["path walk", "path pieces", "derived metrics"]),
        ({"delay_model": "proportional"}, WAIT_STATES + SETUP + ["delay forward", "derived metrics"]),
        ({"delay_model": "wait-first", "critical_path": True},
         WAIT_STATES + SETUP + ["path walk", "delay forward", "path pieces", "derived metrics"]),
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_the_steps_that_ran_in_order(options, steps, threads):
    trace = waitscope.open(BUNDLED, progress=False)
    start = time.perf_counter()
    result = trace.analyze(progress=False, threads=threads, **options)
    wall = time.perf_counter() - start
    assert list(result.timings) == steps
    assert all(math.isfinite(s) and s >= 0.0 for s in result.timings.values())
    # the steps follow one another inside the one call
    assert sum(result.timings.values()) <= wall


def test_a_pause_inside_a_step_counts_to_that_step():
    # The progress callback runs on the analysing thread (one thread), at
    # least at the end of each stage: a pause there is inside the step
    # that runs the stage.
    trace = waitscope.open(BUNDLED, progress=False)
    pause = 0.25
    paused: set[str] = set()

    def progress(stage: str, done: int, total: int) -> None:
        if stage in ("wait states 1/2", "delay causes + critical path (backward)") and stage not in paused:
            paused.add(stage)
            time.sleep(pause)

    plain = trace.analyze(delay_model="proportional", critical_path=True, progress=False).timings
    slowed = trace.analyze(delay_model="proportional", critical_path=True, progress=progress).timings
    assert paused == {"wait states 1/2", "delay causes + critical path (backward)"}
    assert slowed["wait states"] >= pause
    assert slowed["backward replay"] >= pause
    # the others got none of it (they take milliseconds on this trace)
    for step in ("matching", "delay points", "path pieces", "derived metrics"):
        assert slowed[step] < pause / 2, (step, slowed[step], plain[step])
