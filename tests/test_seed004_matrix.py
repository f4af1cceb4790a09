"""Seed 004's test matrix with exact values (section 3.5, Figures 3.6-3.10):
every wait-state pattern besides Late Sender (tests/test_delay.py has the
late-sender chain) -- Late Receiver, barrier, N x N, 1-to-N and N-to-1 --
in the minimal two-process case and in cases 1, 2.1 and 2.2 (section 3.4,
Tables 3.1-3.3), with both delay-cost models, as whole generated traces.

The chain of seed 004: A = rank 0 is delayed by its computation; B = rank 1
waits for A at the pattern's operation X1 (on a communicator of A and B);
B, delayed by that wait and its own work, makes C = rank 2 wait at X2 (on
a communicator of B and C).  Every process leaves MPI_Init at 0, the
first common synchronization point.

The programs are built so that the result does not depend on interval
conventions (whether an MPI call's own time belongs to an interval, how
much of a previous synchronization call counts): latency, transfer time
and MPI overhead are zero, so every MPI call lasts exactly its waiting
time.  Where seed 004's timelines let B's receive R2 hold 1 s that is not
waiting (cases 1 and 2.2), B computes that second in a region `r` after
X1 instead, so the cost the seed puts on R2 lands on `r` here.

Expected values, worked out by hand from seed 004 (eqs. 2.1-2.6 for the
proportional model, 3.1-3.9 for wait-first) -- B's interval with C runs
from MPI_Init to X2, A's with B from MPI_Init to X1:

case 1    A: f 3, g 2, X1 at 5.  B: f 2, x 1, X1 at 3 (waits 2), r 1, X2 at 6.
          C: f 2, g 2, x 1, X2 at 5 (waits 1).
          B vs C: delta = {r: 1} (f, x cancel; X1 is all waiting), B's wait 2.
            proportional: scale 1 / (1 + 2): B short {r: 1/3}, 2/3 propagates.
            wait-first: 1 <= 2: nothing local, 1 propagates.
          A vs B: delta = {f: 1, g: 2}, wait 2: A short {f: 2/3, g: 4/3};
            long-term 2/3 (or 1) in the same proportion:
            proportional {f: 2/9, g: 4/9}, wait-first {f: 1/3, g: 2/3}.
case 2.1  A as above.  B: f 2, x 1, X1 at 3 (waits 2), f 1, X2 at 6.
          C: f 2, x 1, X2 at 3 (waits 3).
          B vs C: delta = {f: 1}, B's wait 2, incoming 3 = 1 + 2: both models
            B short {f: 1}, 2 propagates; A long {f: 2/3, g: 4/3}.
case 2.2  A as above.  B: f 2, x 1, X1 at 3 (waits 2), r 1, g 2, X2 at 8.
          C: f 2, x 1, z 2, X2 at 5 (waits 3).
          B vs C: delta = {r: 1, g: 2}, B's wait 2, incoming 3.
            proportional: scale 3 / (3 + 2): B short {r: 3/5, g: 6/5},
              6/5 propagates: A long {f: 2/5, g: 4/5}.
            wait-first: 3 - 2 = 1 on the computation: B short {r: 1/3, g: 2/3},
              2 propagates: A long {f: 2/3, g: 4/3}.
minimal   two processes (Figure 3.6): A: f 2, X at 2.  B: f 1, X at 1 (waits 1).
          delta = {f: 1}: A short {f: 1}, nothing long-term, both models.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from waitscope import synth
from conftest import relative_names

MODELS = ("proportional", "wait-first")
PATTERNS = ("latereceiver", "barrier", "n2n", "12n", "n21")

# the wait-state metric of each pattern (where the waiting is)
WAIT_METRIC = {
    "latereceiver": "mpi_latereceiver",
    "barrier": "mpi_barrier_wait",
    "n2n": "mpi_wait_nxn",
    "12n": "mpi_latebroadcast",
    "n21": "mpi_earlyreduce",
}

# the MPI function holding the waiting, as a call-path leaf
WAIT_CALL = {"latereceiver": "MPI_Ssend", "barrier": "MPI_Barrier", "n2n": "MPI_Allreduce", "12n": "MPI_Bcast",
             "n21": "MPI_Reduce"}


def sync(pattern: str, waiter: synth.RankProgram, delayer: synth.RankProgram, comm: synth.Comm, tag: int) -> None:
    """The pattern's operation in which `waiter` waits for `delayer` (both
    members of the two-rank communicator `comm`).  Call it when the waiter's
    program has reached the operation; the delayer's part is appended to
    the delayer's program at the same time."""
    w, d = comm.rank_of(waiter.rank), comm.rank_of(delayer.rank)
    if pattern == "latereceiver":
        # the sender waits in its synchronous send for the late receive
        waiter.ssend(delayer.rank, tag=tag, size=8)
        delayer.recv(waiter.rank, tag=tag)
    elif pattern == "barrier":
        waiter.barrier(comm=comm)
        delayer.barrier(comm=comm)
    elif pattern == "n2n":
        waiter.allreduce(8, comm=comm)
        delayer.allreduce(8, comm=comm)
    elif pattern == "12n":
        # late broadcast: the root is the late one
        waiter.bcast(d, 8, comm=comm)
        delayer.bcast(d, 8, comm=comm)
    elif pattern == "n21":
        # early reduce: the root waits for the late member
        waiter.reduce(w, 8, comm=comm)
        delayer.reduce(w, 8, comm=comm)
    else:
        raise ValueError(pattern)


def chain(pattern: str, case: str):
    prog = synth.Program(3)
    a, b, c = prog.rank(0), prog.rank(1), prog.rank(2)
    ab, bc = prog.comm([0, 1], name="AB"), prog.comm([1, 2], name="BC")
    a.compute("f", 3).compute("g", 2)
    b.compute("f", 2).compute("x", 1)
    sync(pattern, b, a, ab, tag=1)                       # X1: B waits from 3 to 5
    if case == "1":
        b.compute("r", 1)                                # X2 at 6
        c.compute("f", 2).compute("g", 2).compute("x", 1)  # X2 at 5: waits 1
    elif case == "2.1":
        b.compute("f", 1)                                # X2 at 6
        c.compute("f", 2).compute("x", 1)                # X2 at 3: waits 3
    elif case == "2.2":
        b.compute("r", 1).compute("g", 2)                # X2 at 8
        c.compute("f", 2).compute("x", 1).compute("z", 2)  # X2 at 5: waits 3
    else:
        raise ValueError(case)
    sync(pattern, c, b, bc, tag=2)
    return prog.run(latency=0.0, bandwidth=None, mpi_overhead=0.0)


def minimal(pattern: str):
    prog = synth.Program(2)
    a, b = prog.rank(0), prog.rank(1)
    a.compute("f", 2)
    b.compute("f", 1)
    sync(pattern, b, a, prog.world, tag=1)
    return prog.run(latency=0.0, bandwidth=None, mpi_overhead=0.0)


def costs(r, metric, rank):
    values = r.get(metric)[:, rank]
    names = relative_names(r)
    return {names[i]: float(v) for i, v in enumerate(values) if v != 0}


def assert_costs(got, expected, what):
    assert set(got) == set(expected), (what, got, expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(float(value), abs=1e-12), (what, key)


A_SHORT = {"main/f": F(2, 3), "main/g": F(4, 3)}

EXPECTED = {
    # case: model: (B short, A long)
    "1": {
        "proportional": ({"main/r": F(1, 3)}, {"main/f": F(2, 9), "main/g": F(4, 9)}),
        "wait-first": ({}, {"main/f": F(1, 3), "main/g": F(2, 3)}),
    },
    "2.1": {model: ({"main/f": F(1)}, {"main/f": F(2, 3), "main/g": F(4, 3)}) for model in MODELS},
    "2.2": {
        "proportional": ({"main/r": F(3, 5), "main/g": F(6, 5)}, {"main/f": F(2, 5), "main/g": F(4, 5)}),
        "wait-first": ({"main/r": F(1, 3), "main/g": F(2, 3)}, {"main/f": F(2, 3), "main/g": F(4, 3)}),
    },
}

C_WAIT = {"1": 1, "2.1": 3, "2.2": 3}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("case", ["1", "2.1", "2.2"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_chain(pattern, case, model):
    r = chain(pattern, case).analyze(delay_model=model)
    call = WAIT_CALL[pattern]
    # the wait states: B waits 2 at X1, C waits at X2
    assert_costs(costs(r, WAIT_METRIC[pattern], 1), {f"main/{call}": 2}, "B's wait")
    assert_costs(costs(r, WAIT_METRIC[pattern], 2), {f"main/{call}": C_WAIT[case]}, "C's wait")
    assert costs(r, WAIT_METRIC[pattern], 0) == {}
    b_short, a_long = EXPECTED[case][model]
    short, long_ = f"delay_{pattern}", f"delay_{pattern}_longterm"
    assert_costs(costs(r, short, 0), A_SHORT, "A short")
    assert_costs(costs(r, long_, 0), a_long, "A long")
    assert_costs(costs(r, short, 1), b_short, "B short")
    assert costs(r, long_, 1) == {}
    assert costs(r, short, 2) == {} and costs(r, long_, 2) == {}
    # all waiting (2 at B, C's) is charged, to this pattern's metrics only
    assert r.total("delay") == pytest.approx(2 + C_WAIT[case], abs=1e-12)
    assert r.total(short) + r.total(long_) == pytest.approx(2 + C_WAIT[case], abs=1e-12)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_minimal_two_processes(pattern, model):
    r = minimal(pattern).analyze(delay_model=model)
    assert_costs(costs(r, WAIT_METRIC[pattern], 1), {f"main/{WAIT_CALL[pattern]}": 1}, "B's wait")
    assert_costs(costs(r, f"delay_{pattern}", 0), {"main/f": 1}, "A short")
    assert r.total(f"delay_{pattern}_longterm") == 0.0
    assert costs(r, f"delay_{pattern}", 1) == {}
    assert r.total("delay") == pytest.approx(1.0, abs=1e-12)
