"""The critical path walked in one place is the path of the backward replay, bit for bit.

Between processes or threads the backward replay of the delay analysis
would make every member that waited at a collective wait for the answer
to "do I hold the path?" before it may write its note.  There the replay
leaves the path out and records where it could move; process 0 then walks
those records in causal order with the replay's rules (path_walk.c).  The
private option ``path_walk`` of ``_core.analyze`` forces the walk
(``"always"``, also in one process) or the path in the replay's notes
(``"never"``); the default walks only where collectives would wait for
it.  Every choice must give the same arrays byte for byte: the critical
path, its profile and imbalance, and the delay costs (the walk lets the
notes of the waiting members go ahead).
"""
from __future__ import annotations

import random
from typing import Any

import pytest

import waitscope
from waitscope import _core, synth

from conftest import BUNDLED, SHARED_DATA
from programs import single_member_comms
from random_programs import random_spliced, random_trace
from test_critical_path import L, RES, expect_path
from test_threads_transport import assert_same_result

REFS = SHARED_DATA / "scalasca-refs"

CONFIGS: dict[str, dict[str, Any]] = {
    "path only": {"critical_path": True},
    "proportional": {"delay_model": "proportional", "critical_path": True, "records": True, "wait_records": True},
    "wait-first": {"delay_model": "wait-first", "critical_path": True, "records": True},
}


def analyze(trace: waitscope.Trace, **options: Any) -> dict[str, Any]:
    return _core.analyze(trace._core, **options)


def assert_walk_equal(trace: waitscope.Trace, what: str, threads=(1, 2, 3), window: bool = False) -> None:
    for config, options in CONFIGS.items():
        options = dict(options)
        expected = analyze(trace, path_walk="never", **options)
        if window:
            start, end = expected["path_start"], expected["path_end"]
            options["window"] = (start + 0.25 * (end - start), start + 0.75 * (end - start))
            expected = analyze(trace, path_walk="never", **options)
        for n in threads:
            for walk in ("always", "auto"):
                got = analyze(trace, threads=n, path_walk=walk, **options)
                assert_same_result(expected, got, f"{what}, {config}, path_walk={walk} on {n} thread(s)")


def alternating_barriers(n_iterations: int = 4) -> synth.Program:
    """Two ranks; in iteration i rank i % 2 works 2 s and the other 1 s, then both enter a barrier."""
    prog = synth.Program(2)
    for it in range(n_iterations):
        for rank in range(2):
            prog.rank(rank).compute("work", 2.0 if rank == it % 2 else 1.0).barrier()
    return prog


def test_alternating_barriers_by_hand():
    #   MPI_Init [0,0.25]; iteration i: the late rank works [s, s+2], the other [s, s+1] and waits
    #   [s+1, s+2] in the barrier, which both leave at s+2+L (s = 0.25, 2.5, 4.75, 7.0)
    #   MPI_Finalize: both enter at 9.25, the path ends on rank 0 (the lower location).
    # Backwards: the owner holds its barrier after its wait, then the path goes to the rank it
    # waited for, which holds its work; every barrier changes the owner.
    expected = [(0, "main/MPI_Init", 0, 0.25), (0, "main/work", 0.25, 2.25), (1, "main/MPI_Barrier", 2.25, 2.5),
                (1, "main/work", 2.5, 4.5), (0, "main/MPI_Barrier", 4.5, 4.75), (0, "main/work", 4.75, 6.75),
                (1, "main/MPI_Barrier", 6.75, 7.0), (1, "main/work", 7.0, 9.0), (0, "main/MPI_Barrier", 9.0, 9.25)]
    trace = alternating_barriers().run(latency=L, resolution=RES)
    for threads in (1, 2):
        for model in (None, "proportional"):
            r = trace.analyze(critical_path=True, delay_model=model, threads=threads)
            expect_path(r, expected)
            # the waiting of every barrier is caused by the other rank's extra second of work
            assert r.total("mpi_barrier_wait") == pytest.approx(4.0)
    assert_walk_equal(trace, "alternating barriers")


@pytest.mark.parametrize("resolution", [10**9, 10**4])
def test_alternating_barriers_and_messages(resolution):
    """A path moving at every barrier and message (coarse clocks: ties)."""
    prog = synth.Program(3)
    for it in range(30):
        late = it % 3
        for rank in range(3):
            prog.rank(rank).compute("work", 0.002 * (3 if rank == late else 1 + rank))
        prog.rank(late).send((late + 1) % 3, size=64)
        prog.rank((late + 1) % 3).recv(late)
        for rank in range(3):
            prog.rank(rank).barrier()
    trace = prog.run(latency=1e-4, resolution=resolution)
    assert_walk_equal(trace, f"alternating barriers and messages, {resolution} ticks/s", window=True)


def test_bundled_trace():
    assert_walk_equal(waitscope.open(BUNDLED), "bundled trace")


@pytest.mark.parametrize("name", sorted(p.name for p in REFS.iterdir() if p.is_dir() and p.name != "tools")
                         if REFS.exists() else [])
def test_scalasca_reference_traces(name):
    assert_walk_equal(waitscope.open(REFS / name), name, threads=(1, 2))


@pytest.mark.parametrize("seed", range(12))
def test_random_programs(seed, tmp_path):
    trace = random_trace(tmp_path / "trace", 9700 + seed)
    assert_walk_equal(trace, f"random program {seed} ({trace.n_locations} ranks)", window=seed % 3 == 0)


@pytest.mark.parametrize("seed", range(4))
def test_random_spliced_traces(seed, tmp_path):
    """Distinct leave times in collectives and broken clocks."""
    rng = random.Random(9800 + seed)
    *_, trace = random_spliced(tmp_path, rng, "spliced")
    assert_walk_equal(trace, f"spliced program {seed}")


def test_single_member_communicators(tmp_path):
    """Instances of one member, whose keys repeat on every location."""
    trace = waitscope.open(single_member_comms().write(tmp_path / "trace"))
    assert_walk_equal(trace, "single-member communicators")


def test_path_walk_argument_is_checked():
    with pytest.raises(ValueError, match="path_walk must be 'auto', 'never' or 'always', got 'often'"):
        analyze(waitscope.open(BUNDLED), critical_path=True, path_walk="often")
