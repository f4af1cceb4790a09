"""Delay analysis: seed 004's worked examples (Tables 3.1-3.3) as kernel
calls and as whole generated traces, conservation on random programs."""

from __future__ import annotations

import random
from fractions import Fraction as F

import numpy as np
import pytest

import waitscope
from waitscope import _core, synth
from conftest import relative_names

MODELS = ("proportional", "wait-first")


def kernel(model, gamma_s, gamma_l, delta, waits):
    short, long_, prop_s, prop_l = _core.delay_kernel(model, gamma_s, gamma_l, delta, waits)
    return short, long_, prop_s + prop_l


def close(values, expected):
    np.testing.assert_allclose(values, [float(x) for x in expected], rtol=0, atol=1e-12)


# ---- the kernel of one synchronization interval (seed 004 section 3.4) ----

def test_table_3_1_case_1():
    # B: difference profile {R2: 1} (f cancels against C), wait state R2 = 2,
    # incoming gamma_s = 1 from C, gamma_l = 0.
    s, l, p = kernel("proportional", 1.0, 0.0, [1.0], [2.0])
    close(s, [F(1, 3)]), close(l, [0]), close(p, [F(2, 3)])
    s, l, p = kernel("wait-first", 1.0, 0.0, [1.0], [2.0])
    close(s, [0]), close(p, [1])
    # A: profile {f: 3, g: 2} against B's {f: 2}: delta {f: 1, g: 2}, gamma_s = 2
    s, l, p = kernel("proportional", 2.0, 2 / 3, [1.0, 2.0], [])
    close(s, [F(2, 3), F(4, 3)]), close(l, [F(2, 9), F(4, 9)])
    s, l, p = kernel("wait-first", 2.0, 1.0, [1.0, 2.0], [])
    close(s, [F(2, 3), F(4, 3)]), close(l, [F(1, 3), F(2, 3)])


def test_table_3_2_case_2_1():
    for model in MODELS:
        s, l, p = kernel(model, 3.0, 0.0, [1.0], [2.0])
        close(s, [1]), close(p, [2])
        s, l, p = kernel(model, 2.0, 2.0, [1.0, 2.0], [])
        close(s, [F(2, 3), F(4, 3)]), close(l, [F(2, 3), F(4, 3)])


def test_table_3_3_case_2_2():
    s, l, p = kernel("proportional", 3.0, 0.0, [1.0, 2.0], [2.0])
    close(s, [F(3, 5), F(6, 5)]), close(p, [F(6, 5)])
    s, l, p = kernel("proportional", 2.0, 1.2, [1.0, 2.0], [])
    close(l, [F(2, 5), F(4, 5)])
    s, l, p = kernel("wait-first", 3.0, 0.0, [1.0, 2.0], [2.0])
    close(s, [F(1, 3), F(2, 3)]), close(p, [2])
    s, l, p = kernel("wait-first", 2.0, 2.0, [1.0, 2.0], [])
    close(l, [F(2, 3), F(4, 3)])


@pytest.mark.parametrize("model", MODELS)
def test_kernel_distributes_everything(model):
    rng = random.Random(7)
    for _ in range(500):
        n, m = rng.randint(1, 6), rng.randint(0, 4)
        delta = [rng.random() * 3 for _ in range(n)]
        waits = [rng.random() * 2 for _ in range(m)]
        gs = rng.random() * (sum(delta) + sum(waits))
        gl = rng.random() * 5
        s, l, p = kernel(model, gs, gl, delta, waits)
        assert (s >= 0).all() and (l >= 0).all() and (p >= 0).all()
        assert abs(s.sum() + l.sum() + p.sum() - (gs + gl)) < 1e-12 * (1 + gs + gl)


def test_kernel_without_carrier():
    with pytest.raises(ValueError):
        _core.delay_kernel("proportional", 1.0, 0.0, [0.0], [])


# ---- the same three timelines as generated traces --------------------------
#
# A = rank 0, B = rank 1, C = rank 2; latency 0, bandwidth 1e6 B/s so that a
# 1e6-byte message needs 1 s after its send starts; all ranks enter MPI_Init
# at 0 and leave it at 0, which is the first common synchronization point.

def chain(case: str):
    prog = synth.Program(3)
    a, b, c = prog.rank(0), prog.rank(1), prog.rank(2)
    # A: f 3, g 2, then the send to B at t=5
    a.compute("f", 3).compute("g", 2).send(1, tag=1, size=10**6)
    if case == "3.1":
        # B: f 2, x 1, receive at 3: waits 2 until A's send at 5; the
        # message arrives at 6 (R2 holds 1 s that is not waiting); send at 6
        b.compute("f", 2).compute("x", 1).recv(0, tag=1).send(2, tag=2, size=0)
        # C: f 2, g 2, x 1, receive at 5: waits 1 until B's send at 6
        c.compute("f", 2).compute("g", 2).compute("x", 1).recv(1, tag=2)
        return prog.run(latency=0.0, bandwidth=1e6)
    if case == "3.2":
        # B: f 2, x 1, receive at 3 (waits 2, message at 5 with no
        # transfer time), f 1 more, send at 6; C waits 3 (from 3 to 6)
        b.compute("f", 2).compute("x", 1).recv(0, tag=1).compute("f", 1).send(2, tag=2, size=0)
        c.compute("f", 2).compute("x", 1).recv(1, tag=2)
        return prog.run(latency=0.0, bandwidth=None)
    # 3.3: B: f 2, x 1, receive at 3 (waits 2, message at 6: R2 holds 1),
    # g 2, send at 8; C: f 2, x 1, z 2, receive at 5, waits 3
    b.compute("f", 2).compute("x", 1).recv(0, tag=1).compute("g", 2).send(2, tag=2, size=0)
    c.compute("f", 2).compute("x", 1).compute("z", 2).recv(1, tag=2)
    return prog.run(latency=0.0, bandwidth=1e6)


def costs(r, metric, rank):
    values = r.get(metric)[:, rank]
    names = relative_names(r)
    return {names[i]: float(v) for i, v in enumerate(values) if v != 0}


EXPECTED = {
    # case: model: (B short, A short, A long) as {call path: value}
    "3.1": {
        "proportional": ({"main/MPI_Recv": F(1, 3)}, {"main/f": F(2, 3), "main/g": F(4, 3)},
                         {"main/f": F(2, 9), "main/g": F(4, 9)}),
        "wait-first": ({}, {"main/f": F(2, 3), "main/g": F(4, 3)}, {"main/f": F(1, 3), "main/g": F(2, 3)}),
    },
    "3.2": {
        model: ({"main/f": F(1)}, {"main/f": F(2, 3), "main/g": F(4, 3)}, {"main/f": F(2, 3), "main/g": F(4, 3)})
        for model in MODELS
    },
    "3.3": {
        "proportional": ({"main/MPI_Recv": F(3, 5), "main/g": F(6, 5)}, {"main/f": F(2, 3), "main/g": F(4, 3)},
                         {"main/f": F(2, 5), "main/g": F(4, 5)}),
        "wait-first": ({"main/MPI_Recv": F(1, 3), "main/g": F(2, 3)}, {"main/f": F(2, 3), "main/g": F(4, 3)},
                       {"main/f": F(2, 3), "main/g": F(4, 3)}),
    },
}


def assert_costs(got, expected):
    assert set(got) == set(expected), (got, expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(float(value), abs=1e-9), key


@pytest.mark.parametrize("case", ["3.1", "3.2", "3.3"])
@pytest.mark.parametrize("model", MODELS)
def test_chain_of_late_senders(case, model):
    r = chain(case).analyze(delay_model=model)
    b_short, a_short, a_long = EXPECTED[case][model]
    assert_costs(costs(r, "delay_latesender", 1), b_short)
    assert_costs(costs(r, "delay_latesender", 0), a_short)
    assert_costs(costs(r, "delay_latesender_longterm", 0), a_long)
    assert costs(r, "delay_latesender_longterm", 1) == {}
    assert costs(r, "delay_latesender", 2) == {} and costs(r, "delay_latesender_longterm", 2) == {}
    # everything waited (2 at B, plus C's wait) is charged somewhere
    assert r.total("delay") == pytest.approx(r.handled_waiting(), rel=1e-12)


def test_chain_through_an_archive(tmp_path):
    """The same numbers when the trace goes through an OTF2 file."""
    trace = chain("3.3")
    path = trace.write(tmp_path / "chain")
    r = waitscope.open(path).analyze(delay_model="proportional")
    assert_costs(costs(r, "delay_latesender", 1), EXPECTED["3.3"]["proportional"][0])
    assert_costs(costs(r, "delay_latesender_longterm", 0), EXPECTED["3.3"]["proportional"][2])


def test_delay_vector_is_signed():
    """d = t_s - w_s - t_r per call path, non-positive entries included
    (hand-worked from the case 3.2 timelines: intervals start at MPI_Init,
    left by every rank at 0, and hold only computation)."""
    r = chain("3.2").analyze(delay_model="wait-first", delay_records=True)
    rec = r.delay_records
    (i,) = np.flatnonzero((rec["waiter_rank"] == 1) & (rec["delayer_rank"] == 0))
    names, values = r.delay_vector(int(i))
    # A: f 3, g 2 (no waiting); B: f 2, x 1 before its receive
    assert dict(zip(names, values)) == pytest.approx({"synthetic/main/f": 1.0, "synthetic/main/g": 2.0, "synthetic/main/x": -1.0}, abs=1e-12)
    # the costs still come from the positive part only: delta = {f: 1, g: 2}
    assert rec["short_cost"][i] == pytest.approx(2.0)
    assert costs(r, "delay_latesender", 0) == pytest.approx({"main/f": 2 / 3, "main/g": 4 / 3})


def test_classification_of_the_chain():
    # B's wait (2) is direct and propagates to C; C's wait (3, case 2.1) is
    # partly indirect: the part charged to B's wait state R2, i.e. 2.
    r = chain("3.2").analyze(delay_model="proportional")
    ls = r.by_location("mpi_latesender")
    assert ls == pytest.approx([0, 2, 3])
    assert r.by_location("mpi_wait_indirect_latesender") == pytest.approx([0, 0, 2])
    assert r.by_location("mpi_wait_direct_latesender") == pytest.approx([0, 2, 1])
    assert r.by_location("mpi_wait_propagating_ls") == pytest.approx([0, 2, 0])
    assert r.by_location("mpi_wait_terminal_ls") == pytest.approx([0, 0, 3])
    for m in ("mpi_latesender",):
        total = r.get(m)
        np.testing.assert_allclose(r.get("mpi_wait_direct_latesender") + r.get("mpi_wait_indirect_latesender"),
                                   total, atol=1e-12)
        np.testing.assert_allclose(r.get("mpi_wait_propagating_ls") + r.get("mpi_wait_terminal_ls"), total,
                                   atol=1e-12)


def test_delay_records_follow_the_chain():
    r = chain("3.1").analyze(delay_model="proportional", delay_records=True)
    rec = r.delay_records
    assert len(rec) == 2
    # backward order: first C -> B, then B -> A
    assert list(rec["waiter_rank"]) == [2, 1] and list(rec["delayer_rank"]) == [1, 0]
    assert list(rec["pattern"]) == ["latesender", "latesender"]
    assert rec["wait"] == pytest.approx([1, 2])
    assert rec["short_cost"] == pytest.approx([1 / 3, 2])
    assert rec["propagated"] == pytest.approx([2 / 3, 0])
    assert rec["longterm_in"] == pytest.approx([0, 2 / 3])
    assert rec["long_cost"] == pytest.approx([0, 2 / 3])
    # the signed delay vector d = t_s - w_s - t_r of B's wait for A, worked
    # out by hand: since MPI_Init (left by all at 0) A spent f 3, g 2 and did
    # not wait; B spent f 2, x 1: d = {f: 3 - 2, g: 2 - 0, x: 0 - 1}.  The
    # negative entry is kept (the difference profile drops it).
    names, values = r.delay_vector(1)
    assert dict(zip(names, values)) == pytest.approx({"synthetic/main/f": 1.0, "synthetic/main/g": 2.0, "synthetic/main/x": -1.0})
    short, long_ = r.delay_vectors()
    assert short.sum(axis=0) == pytest.approx([2, 1 / 3, 0])
    assert long_.sum(axis=0) == pytest.approx([2 / 3, 0, 0])


# ---- conservation on random programs ----------------------------------------

def random_program(rng: random.Random) -> synth.Program:
    n = rng.randint(2, 6)
    prog = synth.Program(n)
    subs = [prog.comm(sorted(rng.sample(range(n), k=rng.randint(2, n)))) for _ in range(2)]
    regions = ["a", "b", "c"]
    for rnd in range(rng.randint(3, 10)):
        for r in range(n):
            prog.rank(r).compute(rng.choice(regions), rng.choice([0, 0.5, 1, 2, 3]) * rng.random())
        kind = rng.choice(["pair", "ssend", "nonblocking", "collective", "subcollective"])
        if kind in ("pair", "ssend"):
            a, b = rng.sample(range(n), 2)
            builder = prog.rank(a).ssend if kind == "ssend" else prog.rank(a).send
            builder(b, tag=rnd, size=rng.choice([8, 100_000]))
            prog.rank(b).recv(a, tag=rnd)
        elif kind == "nonblocking":
            for r in range(n):
                q1 = prog.rank(r).isend((r + 1) % n, tag=1000 + rnd, size=rng.choice([8, 100_000]))
                q2 = prog.rank(r).irecv((r - 1) % n, tag=1000 + rnd)
                prog.rank(r).waitall([q1, q2])
        else:
            comm = rng.choice(subs) if kind == "subcollective" else None
            members = comm.ranks if comm is not None else list(range(n))
            op = rng.choice(["barrier", "bcast", "reduce", "allreduce", "alltoall", "gather", "scatter", "scan"])
            root = rng.randrange(len(members))
            for r in members:
                b = prog.rank(r)
                if op in ("bcast", "reduce", "gather", "scatter"):
                    getattr(b, op)(root, 8, comm=comm)
                elif op == "barrier":
                    b.barrier(comm=comm)
                else:
                    getattr(b, op)(8, comm=comm)
    return prog


@pytest.mark.parametrize("model", MODELS)
def test_conservation_on_random_programs(model):
    rng = random.Random(2026 if model == "proportional" else 2027)
    checked = 0
    for _ in range(150):
        prog = random_program(rng)
        trace = prog.run(latency=rng.choice([0.0, 1e-3]), bandwidth=rng.choice([None, 1e6]))
        r = trace.analyze(delay_model=model)
        waited = r.handled_waiting()
        charged = r.total("delay")
        # conservation: what is not charged is undistributed (the waiting an
        # interval does not explain; in the proportional model also the
        # part of a point-to-point wait beyond the delayer's excess and
        # waiting), never negative, and never more than waited
        assert r.undistributed >= 0.0
        assert abs(charged + r.undistributed - waited) <= 1e-9 * max(waited, 1e-300), (waited, charged)
        delay_ids = [m for m in r.metric_ids if m.startswith("delay") or m.startswith("mpi_wait_")]
        for m in delay_ids:
            assert (r.get(m) >= -1e-12).all(), m
        # short + long per class sum up to the class aggregates and the root
        for cls in ("latesender", "latereceiver", "barrier", "n2n", "12n", "n21"):
            np.testing.assert_allclose(
                r.get(f"delay_{cls}") + r.get(f"delay_{cls}_longterm"), r.get(f"delay_{cls}_aggregate"), atol=1e-12)
        checked += waited > 0
    assert checked > 100


def test_models_agree_when_nothing_propagates():
    # a single late sender: nothing to propagate, both models charge the
    # sender's excess computation alike
    prog = synth.Program(2)
    prog.rank(0).compute("work", 3).send(1, tag=0, size=8)
    prog.rank(1).compute("work", 1).recv(0, tag=0)
    trace = prog.run()
    for model in MODELS:
        r = trace.analyze(delay_model=model)
        assert costs(r, "delay_latesender", 0) == {"main/work": pytest.approx(2.0)}
        assert r.total("delay_latesender_longterm") == 0.0


# ---- documented differences from Scalasca 2.6 (docs/metrics.md) --------------


def _bcast_then_barrier(work0: float, work1: float) -> waitscope.Trace:
    """Rank 0 prepares 0.5 s and broadcasts; rank 1 waits for it (Late
    Broadcast: the broadcast is a synchronization point) and, with latency
    1 s, leaves MPI_Bcast 1 s after the root.  Optional work, then a barrier."""
    prog = synth.Program(2)
    prog.rank(0).compute("prep", 0.5)
    for rank, w in enumerate([work0, work1]):
        b = prog.rank(rank).bcast(root=0, size=8)
        if w:
            b.compute("work", w)
        b.barrier()
    return prog.run(latency=1.0, resolution=1000)


@pytest.mark.parametrize("model", MODELS)
def test_waiting_born_in_the_opening_collective_stays_undistributed(model):
    # rank 0 waits 1 s in the barrier; the interval since the broadcast holds
    # nothing of rank 1 (its MPI_Bcast ends when the data arrives, 1 s after
    # the root left: no completion time after the earliest end of the
    # members that synchronize).  As in Scalasca 2.6 the waiting is charged
    # to nothing: it is undistributed, so costs + undistributed = waiting.
    r = _bcast_then_barrier(0.0, 0.0).analyze(delay_model=model)
    assert r.by_location("mpi_barrier_wait") == pytest.approx([1.0, 0.0])
    assert r.total("delay_barrier") == 0.0
    assert r.undistributed == pytest.approx(1.0)
    # the Late Broadcast (0.5 s) goes to the root's preparation
    assert r.get("delay_12n")[r.callpath_index("main/prep")] == pytest.approx([0.5, 0.0])
    assert r.total("delay") + r.undistributed == pytest.approx(r.handled_waiting())


@pytest.mark.parametrize("model", MODELS)
def test_collective_scale_is_not_capped(model):
    # work 1.0 s on rank 0, 1.2 s on rank 1 after the broadcast: rank 0 waits
    # 1.2 s at the barrier, rank 1's excess is 0.2 s of work.  The whole
    # 1.2 s are charged to it (Viehhauser 2023 eq. 2.4), as Scalasca 2.6 does
    # for collectives (it caps the scale for point-to-point waiting only).
    r = _bcast_then_barrier(1.0, 1.2).analyze(delay_model=model)
    assert r.by_location("mpi_barrier_wait") == pytest.approx([1.2, 0.0])
    assert r.get("delay_barrier")[r.callpath_index("main/work")] == pytest.approx([0.0, 1.2])
    assert r.total("delay_barrier") == pytest.approx(1.2)


def _capped_late_sender() -> waitscope.Trace:
    """Rank 0 prepares 0.3 s and broadcasts; rank 1, in MPI_Bcast from 0.1 s,
    gets the data 0.1 s (the latency) after the root left at 0.4 s.  Then
    rank 0 works y 0.2 s and receives from rank 1 at 0.6 s; rank 1 works y
    0.5 s and sends at 1.0 s: a Late Sender of 0.4 s, of which rank 1's
    excess in the interval since the broadcast is 0.3 s of y."""
    p = synth.Program(2)
    p.rank(0).compute("prep", 0.3).bcast(0, size=8).compute("y", 0.2).recv(1)
    p.rank(1).bcast(0, size=8).compute("y", 0.5).send(0, size=8)
    return p.run(latency=0.1, mpi_overhead=0.0, resolution=1000)


@pytest.mark.parametrize("model", MODELS)
def test_point_to_point_scale_is_capped_in_the_proportional_model(model):
    # Proportional model (as Scalasca 2.6): the short-term scale
    # wait / (excess + waiting) = 0.4 / 0.3 is capped at 1, y is charged its
    # excess 0.3 s and the other 0.1 s of the wait is undistributed.  The
    # wait-first model (Viehhauser 2023 eqs. 3.1-3.9) charges all 0.4 s.
    r = _capped_late_sender().analyze(delay_model=model)
    assert r.total("mpi_latesender") == pytest.approx(0.4)
    assert r.total("mpi_latebroadcast") == pytest.approx(0.3)
    assert r.get("delay_12n", "prep") == pytest.approx([0.3, 0.0])
    charged = 0.3 if model == "proportional" else 0.4
    assert r.get("delay_latesender", "y") == pytest.approx([0.0, charged])
    assert r.undistributed == pytest.approx(0.4 - charged, abs=1e-12)
    assert r.total("delay") + r.undistributed == pytest.approx(r.handled_waiting())


def test_capped_kernel():
    # the kernel alone: wait 2 against excess 0.5 and a wait of 0.5 of the delayer
    s, l, p = kernel("proportional", 2.0, 0.0, [0.5], [0.5])
    close(s, [1.0]), close(p, [1.0])
    short, long_, prop_s, prop_l = _core.delay_kernel("proportional", 2.0, 0.0, [0.5], [0.5], cap=True)
    close(short, [0.5]), close(prop_s, [0.5])
    # below the cap nothing changes
    short, long_, prop_s, prop_l = _core.delay_kernel("proportional", 0.5, 1.0, [0.5], [0.5], cap=True)
    close(short, [0.25]), close(prop_s, [0.25]), close(long_, [0.5]), close(prop_l, [0.5])


# ---- collective wait states classified (Böhme, Wolf, Geimer 2012) ------------


def test_barrier_wait_caused_by_a_late_sender_is_indirect():
    # rank 0 works 3 s and sends to rank 1, which waits 2 s (Late Sender);
    # rank 1 then meets rank 2 (work 1 s) in a barrier of {1, 2}: rank 2
    # waits 2 s, all of it caused by rank 1's waiting (indirect), and it
    # ends the chain (terminal).  Rank 1's Late Sender propagated only into
    # a collective wait: mpi_wait_propagating_ls counts propagation into
    # point-to-point waits only (as Scalasca 2.6), so it stays terminal.
    prog = synth.Program(3)
    sub = prog.comm([1, 2], name="sub")
    prog.rank(0).compute("work", 3).send(1, tag=0, size=8)
    prog.rank(1).compute("work", 1).recv(0, tag=0).barrier(comm=sub)
    prog.rank(2).compute("work", 1).barrier(comm=sub)
    r = prog.run(latency=0.0, resolution=1000).analyze(delay_model="proportional")
    bar = r.callpath_index("main/MPI_Barrier")
    assert r.get("mpi_barrier_wait")[bar] == pytest.approx([0, 0, 2])
    assert r.get("mpi_wait_indirect_collective")[bar] == pytest.approx([0, 0, 2])
    assert r.total("mpi_wait_direct_collective") == pytest.approx(0)
    assert r.get("mpi_wait_terminal_collective")[bar] == pytest.approx([0, 0, 2])
    assert r.total("mpi_wait_propagating_collective") == pytest.approx(0)
    assert r.total("mpi_wait_propagating_ls") == pytest.approx(0)
    assert r.get("delay_barrier_longterm")[r.callpath_index("main/work")] == pytest.approx([2, 0, 0])



def test_indirect_barrier_waiting_of_several_instances_reaches_each_instance():
    # Three rounds in regions r1, r2, r3, each ending in a barrier of
    # {1, 2} (latency 0, so each round starts when its barrier ends):
    #   r1: rank 0 works 3 s and sends to rank 1; rank 1 works 1 s and waits
    #       for it 2 s (Late Sender); rank 2 works 1 s and waits 2 s in the
    #       barrier, all of it caused by rank 1's waiting (indirect).
    #   r2: rank 0 works 0.5 s and sends (at 3.5 s); rank 1 works 1 s and
    #       receives at once (4 s); rank 2 works 2 s: rank 1 waits 1 s in
    #       the barrier [4, 5], for rank 2's work (direct).
    #   r3: rank 0 works 4 s and sends (at 7.5 s); rank 1 works 1 s and
    #       waits 1.5 s for it; rank 2 works 1 s and waits 1.5 s in the
    #       barrier, indirect again.
    # Rank 1, the delayer of r1 and r3, hands each waiter the indirect part
    # of its own instance: 2 s under r1, 1.5 s under r3.
    prog = synth.Program(3)
    sub = prog.comm([1, 2], name="sub")
    for name, (w0, w1, w2) in zip(("r1", "r2", "r3"), ((3, 1, 1), (0.5, 1, 2), (4, 1, 1))):
        with prog.rank(0).region(name):
            prog.rank(0).compute("work", w0).send(1, tag=0, size=8)
        with prog.rank(1).region(name):
            prog.rank(1).compute("work", w1).recv(0, tag=0).barrier(comm=sub)
        with prog.rank(2).region(name):
            prog.rank(2).compute("work", w2).barrier(comm=sub)
    trace = prog.run(latency=0.0, resolution=1000)
    for threads in (1, 2):
        r = trace.analyze(delay_model="proportional", threads=threads)
        for name, wait, indirect in (("r1", [0, 0, 2], [0, 0, 2]), ("r2", [0, 1, 0], [0, 0, 0]),
                                     ("r3", [0, 0, 1.5], [0, 0, 1.5])):
            bar = r.callpath_index(f"main/{name}/MPI_Barrier")
            assert r.get("mpi_barrier_wait")[bar] == pytest.approx(wait)
            assert r.get("mpi_wait_indirect_collective")[bar] == pytest.approx(indirect)
        assert r.total("mpi_wait_direct_collective") == pytest.approx(1)


@pytest.mark.parametrize("members", [[1, 2, 3], [3, 1, 2], [2, 3, 1]])
def test_indirect_barrier_waiting_reaches_every_waiter_in_any_member_order(members):
    # as above with two waiters: ranks 2 and 3 (work 1 s) each wait 2 s for
    # rank 1 in the barrier, all of it caused by rank 1's Late Sender.  The
    # delayer hands the indirect parts back in member order, which is not
    # location order for [3, 1, 2] and [2, 3, 1].
    prog = synth.Program(4)
    sub = prog.comm(members, name="sub")
    prog.rank(0).compute("work", 3).send(1, tag=0, size=8)
    prog.rank(1).compute("work", 1).recv(0, tag=0).barrier(comm=sub)
    prog.rank(2).compute("work", 1).barrier(comm=sub)
    prog.rank(3).compute("work", 1).barrier(comm=sub)
    trace = prog.run(latency=0.0, resolution=1000)
    for threads in (1, 2):
        r = trace.analyze(delay_model="proportional", threads=threads)
        bar = r.callpath_index("main/MPI_Barrier")
        assert r.get("mpi_barrier_wait")[bar] == pytest.approx([0, 0, 2, 2])
        assert r.get("mpi_wait_indirect_collective")[bar] == pytest.approx([0, 0, 2, 2])
        assert r.total("mpi_wait_direct_collective") == pytest.approx(0)


def test_barrier_wait_that_delays_a_receive_is_propagating():
    # ranks 0 (work 3 s) and 1 (work 1 s) meet in a barrier of {0, 1}: rank 1
    # waits 2 s, caused by rank 0's work (direct).  Rank 1 then sends to rank
    # 2, whose receive (entered at 1 s) waits 2 s: rank 1's barrier wait
    # propagated (propagating), rank 2's Late Sender is indirect.
    prog = synth.Program(3)
    sub = prog.comm([0, 1], name="sub")
    prog.rank(0).compute("work", 3).barrier(comm=sub)
    prog.rank(1).compute("work", 1).barrier(comm=sub).send(2, tag=0, size=8)
    prog.rank(2).compute("work", 1).recv(1, tag=0)
    r = prog.run(latency=0.0, resolution=1000).analyze(delay_model="proportional")
    bar = r.callpath_index("main/MPI_Barrier")
    assert r.get("mpi_wait_direct_collective")[bar] == pytest.approx([0, 2, 0])
    assert r.total("mpi_wait_indirect_collective") == pytest.approx(0)
    assert r.get("mpi_wait_propagating_collective")[bar] == pytest.approx([0, 2, 0])
    assert r.total("mpi_wait_terminal_collective") == pytest.approx(0)
    assert r.get("mpi_wait_indirect_latesender")[r.callpath_index("main/MPI_Recv")] == pytest.approx([0, 0, 2])
    assert r.get("delay_latesender_longterm")[r.callpath_index("main/work")] == pytest.approx([2, 0, 0])


@pytest.mark.parametrize("model", MODELS)
def test_classification_splits_every_handled_wait_on_random_programs(model):
    rng = random.Random(77 if model == "proportional" else 78)
    for _ in range(60):
        prog = random_program(rng)
        r = prog.run(latency=rng.choice([0.0, 1e-3]), bandwidth=rng.choice([None, 1e6])).analyze(delay_model=model)
        coll = sum(r.get(m) for m in ("mpi_barrier_wait", "mpi_wait_nxn", "mpi_latebroadcast", "mpi_earlyreduce"))
        for a, b in (("direct", "indirect"), ("propagating", "terminal")):
            got = r.get(f"mpi_wait_{a}_collective") + r.get(f"mpi_wait_{b}_collective")
            np.testing.assert_allclose(got, coll, rtol=1e-9, atol=1e-12)
        for m in ("mpi_wait_indirect_collective", "mpi_wait_propagating_collective"):
            assert np.all(r.get(m) >= -1e-12) and np.all(r.get(m) <= coll + 1e-9), m
        handled = r.handled_waiting()
        assert r.total("waitstates_direct_vs_indirect") == pytest.approx(handled, rel=1e-9, abs=1e-12)
        assert r.total("waitstates_propagating_vs_terminal") == pytest.approx(handled, rel=1e-9, abs=1e-12)


def test_collective_classification_in_the_tree_and_the_cube_report(tmp_path):
    import tarfile

    prog = synth.Program(2)
    prog.rank(0).compute("work", 2).barrier()
    prog.rank(1).compute("work", 1).barrier()
    r = prog.run(latency=0.0, resolution=1000).analyze(delay_model="proportional")
    names = ("direct", "indirect", "propagating", "terminal")
    for kind in names:
        assert f"mpi_wait_{kind}_collective" in r.metric_children(f"mpi_wait_{kind}")
    assert r.by_location("mpi_wait_direct_collective") == pytest.approx([0, 1])
    assert r.by_location("mpi_wait_terminal_collective") == pytest.approx([0, 1])
    path = tmp_path / "report.cubex"
    r.to_cube(str(path))
    with tarfile.open(path) as t:
        anchor = t.extractfile("anchor.xml").read().decode()
    for kind in names:
        assert f"<uniq_name>mpi_wait_{kind}_collective</uniq_name>" in anchor


def test_long_barrier_chain():
    """70,007 barriers on 2 ranks: more sites per location than the size
    from which the delay analysis builds its site records in the place of
    the wait states' (points.c, SITES_IN_PLACE_FROM = 65,536).  In each
    iteration the late rank computes 3 ms and the other 1 ms, the late rank
    alternating in blocks of 7 iterations starting with rank 0 (rank 0 late
    in 35,007 iterations, rank 1 in 35,000).  Worked out by hand: the other
    rank waits 2 ms at each barrier, all of it caused by the late rank's
    excess work in the same interval (short-term, nothing propagates), and
    the critical path runs through the late rank's work, 3 ms an iteration."""
    iterations, late = 70_007, np.array([35_007, 35_000])
    prog = synth.Program(2)
    for it in range(iterations):
        for rank in (0, 1):
            prog.rank(rank).compute("work", 0.003 if (it // 7) % 2 == rank else 0.001).barrier()
    trace = prog.run()
    r = trace.analyze(delay_model="proportional", critical_path=True)
    work = r.callpath_index("main/work")
    np.testing.assert_allclose(r.by_location("mpi_barrier_wait"), 0.002 * late[::-1], rtol=1e-9)
    np.testing.assert_allclose(r.get("delay_barrier")[work], 0.002 * late, rtol=1e-9)
    assert r.total("delay_barrier_longterm") == 0.0 and r.undistributed == 0.0
    assert r.total("delay") == pytest.approx(r.handled_waiting(), rel=1e-12)
    assert r.critical_path.length == pytest.approx(0.003 * iterations, rel=1e-9)
    np.testing.assert_allclose(r.get("critical_path")[work], 0.003 * late, rtol=1e-9)
    assert trace.analyze(delay_model="proportional", critical_path=True, threads=2).cube.tobytes() == r.cube.tobytes()
