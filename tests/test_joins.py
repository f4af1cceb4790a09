"""Replays executed as joins give the scheduled replays' results, bit for bit.

The passes whose produce side needs no causal order (wait states 2/2, the
synchronization points and the forward delay pass) run by default as
joins: every location produces all its payloads first, then each location
is walked once and consumes (csrc/replay/join.c); a pass with many
collective sites produces only its point-to-point payloads ahead and keeps
the schedule for the collectives.  The private option ``replays`` of
``_core.analyze`` runs every replay scheduled (``"scheduled"``) or every
one that allows it as a full join (``"joins"``); all three must give the
same arrays byte for byte (cube, clock violations, critical path, delay
and wait-state records), in one process and with the threaded transport,
whatever the order of the locations.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

import waitscope
from waitscope import _core

from conftest import BUNDLED, SHARED_DATA
from programs import single_member_comms
from random_programs import random_spliced, random_trace
from test_threads_transport import CONFIGS, assert_same_result

REFS = SHARED_DATA / "scalasca-refs"


def analyze(trace: waitscope.Trace, **options: Any) -> dict[str, Any]:
    return _core.analyze(trace._core, **options)


def assert_joins_equal(trace: waitscope.Trace, what: str, threads=(1, 2)) -> None:
    for config, options in CONFIGS.items():
        expected = analyze(trace, replays="scheduled", **options)
        for n in threads:
            for replays in ("auto", "joins"):
                got = analyze(trace, threads=n, replays=replays, **options)
                assert_same_result(expected, got, f"{what}, {config}, replays={replays} on {n} thread(s)")


def test_bundled_trace():
    assert_joins_equal(waitscope.open(BUNDLED), "bundled trace")


@pytest.mark.parametrize("name", ["nxn", "ls_wrongorder", "chain_longterm"])
def test_scalasca_reference_traces(name):
    path = REFS / name
    if not path.exists():
        pytest.skip(f"{path} is not available")
    assert_joins_equal(waitscope.open(path), name)


@pytest.mark.parametrize("seed", range(10))
def test_random_programs(seed, tmp_path):
    trace = random_trace(tmp_path / "trace", 9700 + seed)
    what = f"random program {seed} ({trace.n_locations} ranks)"
    assert_joins_equal(trace, what)
    # another order of the locations, and a time window
    options = dict(CONFIGS["wait-first"])
    full = analyze(trace, **options)
    start, end = full["path_start"], full["path_end"]
    options["window"] = (start + 0.25 * (end - start), start + 0.75 * (end - start))
    expected = analyze(trace, replays="scheduled", **options)
    for replays in ("auto", "joins"):
        got = analyze(trace, schedule_seed=seed + 5, replays=replays, **options)
        assert_same_result(expected, got, f"{what}, window, seeded, replays={replays}")


@pytest.mark.parametrize("seed", range(3))
def test_random_spliced_traces(seed, tmp_path):
    """Distinct leave times in collectives and broken clocks."""
    rng = random.Random(9800 + seed)
    *_, trace = random_spliced(tmp_path, rng, "spliced")
    assert_joins_equal(trace, f"spliced program {seed}")


def test_progress_reports_the_same_stages():
    trace = waitscope.open(BUNDLED)
    seen: dict[str, list[tuple[str, int, int]]] = {}
    for replays in ("scheduled", "auto", "joins"):
        calls: list[tuple[str, int, int]] = []
        analyze(trace, delay_model="proportional", critical_path=True, replays=replays,
                progress=lambda stage, done, total: calls.append((stage, done, total)))
        seen[replays] = [c for c in calls if c[1] == c[2]]  # the end of every stage
    assert seen["auto"] == seen["scheduled"] == seen["joins"]
    assert [c[0] for c in seen["auto"]][:3] == ["wait states 1/2", "wait states 2/2", "sync points"]


def test_replays_argument_is_checked():
    with pytest.raises(ValueError, match="replays must be 'auto', 'scheduled' or 'joins', got 'fast'"):
        analyze(waitscope.open(BUNDLED), replays="fast")


def test_single_member_communicators(tmp_path):
    """Collectives on communicators of one rank (instances with one member:
    a full join produces and consumes them at their site) between
    collectives of the world and messages."""
    trace = waitscope.open(single_member_comms().write(tmp_path / "trace"))
    assert_joins_equal(trace, "single-member communicators")
