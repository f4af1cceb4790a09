"""Pieces of random test programs (waitscope.synth) shared by several tests."""

from __future__ import annotations

import random
from typing import Any, Sequence

from waitscope import synth

ROOTED = ("bcast", "reduce", "gather", "scatter")


def random_collective(prog: synth.Program, rng: random.Random, n: int, comm: Any, ops: Sequence[str]) -> None:
    """One collective, drawn from `ops`, on `comm` (None: all `n` ranks), with a random root."""
    members = comm.ranks if comm is not None else range(n)
    op = rng.choice(list(ops))
    root = rng.randrange(len(members))
    for r in members:
        b = prog.rank(r)
        if op == "barrier":
            b.barrier(comm=comm)
        elif op in ROOTED:
            getattr(b, op)(root, 8, comm=comm)
        else:
            getattr(b, op)(8, comm=comm)
