"""Test programs (waitscope.synth) shared by several tests: random collectives and fixed programs."""

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


def six_ranks(bad_tag: int = 1, send_late: bool = False) -> synth.Program:
    """6 ranks: 0, 2 and 4 send a message to 1, 3 and 5, then all do an allreduce and a barrier.

    bad_tag: the tag of the message 2 -> 3; send_late: 2 -> 3 after the allreduce."""
    p = synth.Program(6)
    for r in range(6):
        p.rank(r).compute("work", 0.1 * (r + 1))
    for a in (0, 2, 4):
        tag = bad_tag if a == 2 else 1
        if not (a == 2 and send_late):
            p.rank(a).send(a + 1, tag=tag, size=8)
            p.rank(a + 1).recv(a, tag=tag)
    for r in range(6):
        p.rank(r).allreduce(size=8)
    if send_late:
        p.rank(2).send(3, tag=bad_tag, size=8)
        p.rank(3).recv(2, tag=bad_tag)
    for r in range(6):
        p.rank(r).barrier()
    return p


def collective_runs(world_first: bool = False, iterations: int = 3, scan: bool = True) -> synth.Program:
    """6 ranks; ranks 0-3 run back-to-back collectives on a sub-communicator
    (barrier, allreduce, bcast and, with `scan`, a scan) and all ranks an
    allreduce and a barrier on the world (the world's first with
    `world_first`)."""
    p = synth.Program(6)
    sub = p.comm([0, 1, 2, 3])
    for it in range(iterations):
        for r in range(6):
            p.rank(r).compute("work", 0.01 * (1 + (r + it) % 4))
        for r in range(6):
            rp = p.rank(r)
            steps = [lambda: rp.allreduce(size=8).barrier()]
            if r < 4:
                def on_sub(rp=rp) -> None:
                    rp.barrier(comm=sub).allreduce(size=8, comm=sub).bcast(root=1, size=8, comm=sub)
                    if scan:
                        rp.scan(size=4, comm=sub)
                steps.append(on_sub)
            for step in (steps if world_first else steps[::-1]):
                step()
    return p


def single_member_comms(iterations: int = 4) -> synth.Program:
    """3 ranks; collectives on communicators of one rank (instances with one
    member, whose keys repeat on every location) between collectives of the
    world and a message."""
    p = synth.Program(3)
    own = [p.comm([r]) for r in range(3)]
    for it in range(iterations):
        for r in range(3):
            p.rank(r).compute("work", 0.01 * (1 + (r + it) % 3))
        for r in range(3):
            p.rank(r).barrier(comm=own[r]).allreduce(size=8, comm=own[r])
        p.rank(0).send(1, size=64)
        p.rank(1).recv(0)
        for r in range(3):
            p.rank(r).allreduce(size=8).bcast(root=0, size=8, comm=own[r])
    return p
