"""Programs for the wait-state tests: random deadlock-free synthetic
programs (_Builder) with random run parameters, and archives assembled
from the event files of several runs of one program (spliced), which have
distinct leave times of collectives and broken clocks.

The executor synchronizes every collective exactly (all members leave
together) and never lets a receive end before its send starts.  Traces
with distinct leave times or broken clocks are built from whole, valid
OTF2 files: the same program (same records per location, same
definitions) is run with different durations or latencies, and location
i's event file is taken from run pick[i].  Nothing is edited byte-wise.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import waitscope
from waitscope import synth

RES = 1000  # default ticks per second of spliced() runs, as in the hand-worked tests


def spliced(tmp_path: Path, name: str, runs, pick) -> waitscope.Trace:
    """runs: [(program, run parameters)]; location i comes from runs[pick[i]]."""
    dirs = []
    for k, (prog, params) in enumerate(runs):
        params = dict(params)
        params.setdefault("resolution", RES)
        dirs.append(Path(prog.write(tmp_path / f"{name}-src{k}", **params)).parent)
    heads = [waitscope.open(d, load=False) for d in dirs]
    for h in heads[1:]:  # same definitions, same record counts
        assert h.region_names == heads[0].region_names
        assert [l.n_records for l in h.locations] == [l.n_records for l in heads[0].locations]
    # the global definitions of the longest run (its clock length covers all)
    longest = max(range(len(dirs)), key=lambda k: heads[k].clock["length"])
    out = tmp_path / name
    shutil.copytree(dirs[longest], out)
    for loc, k in enumerate(pick):
        for ext in ("evt", "def"):
            shutil.copyfile(dirs[k] / "traces" / f"{loc}.{ext}", out / "traces" / f"{loc}.{ext}")
    return waitscope.open(out)


def _sync_program(op: str, durations) -> synth.Program:
    prog = synth.Program(len(durations))
    for rank, d in enumerate(durations):
        rp = prog.rank(rank).compute("work", d)
        if op == "barrier":
            rp.barrier()
        else:
            getattr(rp, op)(size=8)
    return prog


class _Builder:
    """A random deadlock-free program, built in rounds.

    Every round gives each rank some computation and then one communication
    step whose messages are all sent and received (and requests completed)
    inside the round, in an order that cannot deadlock whatever the sizes
    (where a blocking order needs a send not to wait, its size is eager).
    """

    SIZES = (0, 8, 100, 4096, 100_000)

    def __init__(self, rng: random.Random, max_ranks: int = 6, max_rounds: int = 8):
        self.rng = rng
        self.n = n = rng.randint(2, max_ranks)
        self.max_rounds = max_rounds
        self.eager = rng.choice([0, 64, 65536])
        self.prog = synth.Program(n)
        self.comms = [self.prog.world]
        for _ in range(rng.randint(0, 2)):
            self.comms.append(self.prog.comm(rng.sample(range(n), rng.randint(1, n))))
        self.tag = 0

    def size(self, eager_only: bool = False) -> int:
        sizes = [s for s in self.SIZES if s <= self.eager] if eager_only else self.SIZES
        return self.rng.choice(sizes)

    def new_tag(self) -> int:
        self.tag += 1
        return self.tag

    # ---- steps: each returns {rank: [operation, ...]} ----------------------
    # operations: ("send"|"ssend", peer, tag, size), ("recv", peer, tag),
    # ("isend", key, peer, tag, size), ("irecv", key, peer, tag),
    # ("wait", key), ("waitall", [keys]), ("coll", name, root, size, comm),
    # ("compute", region, d)

    def step_pairs(self):
        rng, ops = self.rng, {}
        ranks = list(range(self.n))
        rng.shuffle(ranks)
        for a, b in zip(ranks[0::2], ranks[1::2]):
            t1, t2 = self.new_tag(), self.new_tag()
            variant = rng.choice(["blocking", "nonblocking", "isend-recv", "waitall-both"])
            if variant == "blocking":
                ops[a] = [(rng.choice(["send", "ssend"]), b, t1, self.size()), ("recv", b, t2)]
                ops[b] = [("recv", a, t1), (rng.choice(["send", "ssend"]), a, t2, self.size())]
            elif variant == "nonblocking":
                for me, peer, out_tag, in_tag in ((a, b, t1, t2), (b, a, t2, t1)):
                    first = [("irecv", "r", peer, in_tag), ("isend", "s", peer, out_tag, self.size())]
                    rng.shuffle(first)
                    keys = ["r", "s"]
                    rng.shuffle(keys)
                    done = [("waitall", keys)] if rng.random() < 0.5 else [("wait", k) for k in keys]
                    ops[me] = first + [("compute", "work", rng.uniform(0, 1e-3))] + done
            elif variant == "isend-recv":
                ops[a] = [("isend", "s", b, t1, self.size()), ("compute", "work", rng.uniform(0, 1e-3)),
                          ("wait", "s")]
                ops[b] = [("recv", a, t1)]
            else:  # one Waitall completes a send and a receive of a late partner
                ops[a] = [("isend", "s", b, t1, self.size()), ("irecv", "r", b, t2), ("waitall", ["s", "r"])]
                ops[b] = [("recv", a, t1), ("compute", "work", rng.uniform(0, 1e-3)),
                          ("send", a, t2, self.size())]
        return ops

    def step_fan_in(self):
        """Several senders to one receiver, received in a random order."""
        rng = self.rng
        dst = rng.randrange(self.n)
        others = [r for r in range(self.n) if r != dst]
        senders = rng.sample(others, rng.randint(1, len(others)))
        msgs = []  # (sender, index, tag)
        for s in senders:
            for i in range(rng.randint(1, 2)):
                msgs.append((s, i, self.new_tag()))
        order = msgs[:]
        rng.shuffle(order)
        ops = {dst: []}
        nonblocking = rng.random() < 0.4
        for s in senders:
            mine = [m for m in msgs if m[0] == s]
            ops[s] = []
            for (_, i, tag) in mine:
                # with blocking receives, a message received after a later
                # message of the same sender must not wait for its receive
                later_first = any(o[0] == s and o[1] > i and order.index(o) < order.index((s, i, tag))
                                  for o in msgs)
                eager_only = later_first and not nonblocking
                kind = "send" if eager_only else rng.choice(["send", "ssend", "isend"])
                if kind == "isend":
                    key = f"s{i}"
                    ops[s] += [("isend", key, dst, tag, self.size()), ("wait", key)]
                else:
                    ops[s].append((kind, dst, tag, self.size(eager_only)))
        if nonblocking:
            keys = []
            for (s, i, tag) in order:
                keys.append(f"r{s}_{i}")
                ops[dst].append(("irecv", keys[-1], s, tag))
            ops[dst].append(("compute", "work", rng.uniform(0, 1e-3)))
            ops[dst].append(("waitall", keys))
        else:
            ops[dst] += [("recv", s, tag) for (s, i, tag) in order]
        return ops

    def step_chain(self):
        perm = list(range(self.n))
        self.rng.shuffle(perm)
        tag = self.new_tag()
        ops = {r: [] for r in perm}
        for prev, cur in zip(perm, perm[1:]):
            ops[prev].append((self.rng.choice(["send", "ssend"]), cur, tag, self.size()))
            ops[cur].append(("recv", prev, tag))
        # each rank receives (from prev) before it sends (to next)
        for r in perm:
            ops[r].sort(key=lambda op: op[0] != "recv")
        return ops

    def step_ring(self):
        n, ops = self.n, {}
        right_tag, left_tag = self.new_tag(), self.new_tag()
        for r in range(n):
            right, left = (r + 1) % n, (r - 1) % n
            first = [("irecv", "a", left, right_tag), ("irecv", "b", right, left_tag),
                     ("isend", "c", right, right_tag, self.size()), ("isend", "d", left, left_tag, self.size())]
            self.rng.shuffle(first)
            keys = ["a", "b", "c", "d"]
            self.rng.shuffle(keys)
            ops[r] = first + [("waitall", keys)]
        return ops

    def step_collective(self):
        rng = self.rng
        comm = rng.choice(self.comms)
        name = rng.choice(["barrier", "bcast", "scatter", "reduce", "gather", "allreduce", "alltoall",
                           "allgather", "scan"])
        root = rng.randrange(comm.size) if name in ("bcast", "scatter", "reduce", "gather") else None
        size = rng.choice([0, 8, 1000])
        return {w: [("coll", name, root, size, comm)] for w in comm.ranks}

    def emit(self, rp: synth.RankProgram, ops) -> None:
        reqs = {}
        for op in ops:
            kind = op[0]
            if kind in ("send", "ssend"):
                getattr(rp, kind)(op[1], tag=op[2], size=op[3])
            elif kind == "recv":
                rp.recv(op[1], tag=op[2])
            elif kind == "isend":
                reqs[op[1]] = rp.isend(op[2], tag=op[3], size=op[4])
            elif kind == "irecv":
                reqs[op[1]] = rp.irecv(op[2], tag=op[3])
            elif kind == "wait":
                rp.wait(reqs.pop(op[1]))
            elif kind == "waitall":
                rp.waitall([reqs.pop(k) for k in op[1]])
            elif kind == "compute":
                rp.compute(op[1], op[2])
            else:
                _, name, root, size, comm = op
                kw = dict(size=size, comm=comm) if name != "barrier" else dict(comm=comm)
                if root is not None:
                    kw["root"] = root
                getattr(rp, name)(**kw)
        assert not reqs

    def build(self) -> synth.Program:
        rng = self.rng
        steps = [self.step_pairs, self.step_fan_in, self.step_chain, self.step_ring, self.step_collective]
        for _ in range(rng.randint(1, self.max_rounds)):
            for r in range(self.n):
                if rng.random() < 0.7:
                    d = 0.0 if rng.random() < 0.3 else rng.uniform(0, 2e-3)
                    self.prog.rank(r).compute(rng.choice(["work", "calc"]), d)
            ops = rng.choice(steps)()
            nested = rng.random() < 0.3
            for r, rank_ops in ops.items():
                rp = self.prog.rank(r)
                if nested:
                    with rp.region("solver"):
                        self.emit(rp, rank_ops)
                else:
                    self.emit(rp, rank_ops)
        return self.prog


def random_run_params(rng: random.Random, eager: int) -> dict:
    return dict(
        latency=rng.choice([0.0, 1e-6, 5e-5, 3e-4]),
        mpi_overhead=rng.choice([0.0, 0.0, 1e-6, 2e-5]),
        bandwidth=rng.choice([None, 1e8, 1e9]),
        eager_limit=eager,
        # coarse clocks make many times equal (ties are edge cases)
        resolution=rng.choice([10**9, 10**6, 10**5]),
    )


def random_trace(path: Path, seed: int) -> waitscope.Trace:
    """The random program of `seed`, run with random parameters, written to
    `path` and opened."""
    rng = random.Random(seed)
    builder = _Builder(rng)
    return waitscope.open(builder.build().write(path, **random_run_params(rng, builder.eager)))


def random_spliced(tmp_path, rng: random.Random, name: str):
    """A random program run twice with different costs, its locations picked from either run.

    Returns (program, runs, pick, trace); the trace has distinct leave
    times in collectives and broken clocks."""
    builder = _Builder(rng)
    prog = builder.build()
    resolution = rng.choice([10**9, 10**6])
    runs = []
    for _ in range(2):
        params = random_run_params(rng, builder.eager)
        params["resolution"] = resolution
        runs.append((prog, params))
    pick = [rng.randrange(2) for _ in range(builder.n)]
    return prog, runs, pick, spliced(tmp_path, name, runs, pick)


def splice(out: Path, base: synth.Program, other: synth.Program, location: int) -> Path:
    """An archive of `base` whose location's files come from `other` (same definitions, valid OTF2)."""
    a = Path(base.write(out.parent / f"{out.name}-a")).parent
    b = Path(other.write(out.parent / f"{out.name}-b")).parent
    shutil.copytree(a, out)
    for ext in ("evt", "def"):
        shutil.copyfile(b / "traces" / f"{location}.{ext}", out / "traces" / f"{location}.{ext}")
    return out
