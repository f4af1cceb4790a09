"""Example programs from the papers behind waitscope, as :mod:`waitscope.synth` programs.

The notebooks in ``notebooks/`` and the scenario tests build their traces
with these functions.  They return a :class:`waitscope.synth.Program`
(:func:`chain` together with its run parameters);
``program.run(latency=...)`` executes it and gives the in-memory
:class:`waitscope.Trace`.  Durations are seconds.

* :func:`chain` -- Viehhauser (Master's thesis, RWTH Aachen, 2023), Tables
  3.1-3.3: a chain of two Late Senders A -> B -> C whose delay costs the
  thesis works out by hand;
* :func:`sweep3d` -- Böhme et al. (ICPP 2010), section V-A: a Sweep3D-like pipelined
  wavefront on a 2D process grid, with extra work on the border ranks;
* :func:`imbalance_benchmark` -- Böhme et al. (IPDPS 2012), section IV-A: the synthetic
  load-imbalance benchmark (work() + barrier; balanced, static, dynamic
  and mixed imbalance with the same total work);
* :func:`mpmd` -- Böhme et al. (IPDPS 2012), section IV-D: an MPMD program in the style of
  ddcMD, a large "particle" and a small "mesh" partition exchanging data
  every step;
* :func:`zeusmp` -- Böhme et al. (ICPP 2010), sections V-B and VI: a Zeus-MP/2-like
  stencil code on a 3D process grid with an overloaded central block and
  four non-blocking halo-exchange phases per time step;
* :func:`halo_exchange` -- the program of ``waitscope demo``: a 2D halo
  exchange in which one rank computes more than the others.

:data:`PING_PONG` is the path of the bundled Score-P trace, :data:`HALO2D`
the directory of a measurement made with ``waitscope trace --profile`` (a
trace and a profile of the same run), :data:`OMP_IMBALANCE` a Score-P trace of
a hybrid MPI+OpenMP program.
"""

from __future__ import annotations

import os
from typing import Tuple

from . import synth

__all__ = [
    "PING_PONG",
    "HALO2D",
    "OMP_IMBALANCE",
    "chain",
    "CHAIN_CASES",
    "sweep3d",
    "SWEEP_OCTANTS",
    "imbalance_benchmark",
    "imbalance_work_time",
    "IMBALANCE_SCENARIOS",
    "mpmd",
    "mpmd_particle_work",
    "zeusmp",
    "zeusmp_central",
    "zeusmp_layer",
    "ZEUSMP_REGIONS",
    "ZEUSMP_OVERLOAD",
    "halo_exchange",
    "HALO_REGIONS",
]


PING_PONG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "scorep-ping-pong", "traces.otf2")
"""Anchor file of the bundled real Score-P trace: two ranks exchanging 1 MiB messages
(from the pipit project's test data; see ``data/NOTICE.md``).  The examples in
README.md and docs/ open it, so that they run as written."""

OMP_IMBALANCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "scorep-omp-imbalance",
                             "traces.otf2")
"""Anchor file of a bundled real Score-P 7.1 trace of a hybrid MPI+OpenMP program
(``data/scorep-omp-imbalance/omp_imbalance.c``: 2 ranks x 2 OpenMP threads, 4
iterations of a parallel region in which thread 1 works 80 ms longer than the
master (implicit-barrier waiting), serial work of the master and an MPI_Send to
rank 1, which waits 80 ms as a Late Sender).  See ``data/NOTICE.md``."""

HALO2D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "halo2d-run")
"""Directory of a bundled measurement: ``waitscope trace --profile -- mpiexec.mpich -n 2
./halo2d -k 20 -x 4 -m wait`` (examples/halo2d.c: a 2 x 1 halo exchange, 20
iterations of 1 ms work, one rank 4 ms slower per iteration in turn, so 80 ms
of Late Sender waiting in MPI_Wait), holding ``traces.otf2`` and
``profile.json`` of the same run."""


# ---- seed 004: the worked examples ----------------------------------------------------

CHAIN_CASES = ("3.1", "3.2", "3.3")
"""The cases of the worked examples of Viehhauser 2023 (Tables 3.1, 3.2 and 3.3)."""


def chain(case: str) -> Tuple[synth.Program, dict]:
    """A worked example of Viehhauser 2023 (Master's thesis, RWTH Aachen): `case`
    ("3.1", "3.2" or "3.3", its Tables 3.1-3.3) as a program of 3 ranks.

    A = rank 0, B = rank 1, C = rank 2; times are in units of seconds.  A
    computes f for 3 and g for 2 and sends to B at t = 5.  B computes f
    for 2 and x for 1, then receives from A (a Late Sender of 2), works on
    and sends to C, which waits for it too (a second Late Sender that B's
    waiting propagates).  The message from A carries 10**6 bytes; the
    returned run parameters (bandwidth 10**6 B/s in cases 3.1 and 3.3)
    make its transfer take 1 s, which B spends in MPI_Recv without
    waiting: the thesis's "R2" entry of B's profile.

    * 3.1: B sends to C right after the receive; C computes f 2, g 2, x 1.
    * 3.2: no transfer time; B computes f for 1 more; C computes f 2, x 1.
    * 3.3: B computes g for 2 after the receive; C computes f 2, x 1, z 2.

    Returns ``(program, run_parameters)``: ``program.run(**run_parameters)``
    gives the trace.
    """
    if case not in CHAIN_CASES:
        raise ValueError(f"case must be one of {CHAIN_CASES}, not {case!r}")
    prog = synth.Program(3)
    a, b, c = prog.rank(0), prog.rank(1), prog.rank(2)
    a.compute("f", 3).compute("g", 2).send(1, tag=1, size=10**6)
    if case == "3.1":
        b.compute("f", 2).compute("x", 1).recv(0, tag=1).send(2, tag=2, size=0)
        c.compute("f", 2).compute("g", 2).compute("x", 1).recv(1, tag=2)
        return prog, {"latency": 0.0, "bandwidth": 1e6}
    if case == "3.2":
        b.compute("f", 2).compute("x", 1).recv(0, tag=1).compute("f", 1).send(2, tag=2, size=0)
        c.compute("f", 2).compute("x", 1).recv(1, tag=2)
        return prog, {"latency": 0.0, "bandwidth": None}
    b.compute("f", 2).compute("x", 1).recv(0, tag=1).compute("g", 2).send(2, tag=2, size=0)
    c.compute("f", 2).compute("x", 1).compute("z", 2).recv(1, tag=2)
    return prog, {"latency": 0.0, "bandwidth": 1e6}


# ---- seed 000 V-A: Sweep3D-like wavefront -----------------------------------------------

SWEEP_OCTANTS = ((1, 1), (-1, -1), (1, -1), (-1, 1))
"""(row step, column step) of the sweeps: from the NW, SE, NE and SW corners."""


def sweep3d(px: int, py: int, repeats: int = 2, blocks: int = 4, work: float = 1e-3,
            border_extra: float = 0.3e-3, region: str = "sweep") -> synth.Program:
    """A Sweep3D-like wavefront on a `py` x `px` process grid (Böhme et al., ICPP 2010, section V-A).

    Rank ``row * px + col`` sits at (row, col); the program defines the
    Cartesian topology ``cart((py, px))``, so coordinate 0 is the row and
    coordinate 1 the column (as MPI_Cart_create with row-major ranks).
    Draw it with ``plot.heatmap(..., transpose=True)`` to get rows
    vertically and columns horizontally.

    Each sweep starts at a corner and runs towards the opposite one,
    pipelined over `blocks` blocks.  Per block every rank (Listing 1 of the
    paper) receives from its upstream east/west neighbour, then from its
    upstream north/south neighbour (blocking MPI_Recv), computes `region`
    for `work` seconds (`work + border_extra` on the outer ring of the
    grid), then sends downstream east/west and north/south (8 bytes,
    eager).  The sweeps come from the four corners in turn
    (:data:`SWEEP_OCTANTS`), `repeats` times.
    """
    prog = synth.Program(px * py)
    prog.cart((py, px))

    def rank(row: int, col: int) -> int:
        return row * px + col

    tag = 0
    for _ in range(repeats):
        for dr, dc in SWEEP_OCTANTS:
            for _ in range(blocks):
                tag += 1
                for row in range(py):
                    for col in range(px):
                        b = prog.rank(rank(row, col))
                        if 0 <= col - dc < px:
                            b.recv(rank(row, col - dc), tag=tag)
                        if 0 <= row - dr < py:
                            b.recv(rank(row - dr, col), tag=tag)
                        border = row in (0, py - 1) or col in (0, px - 1)
                        b.compute(region, work + (border_extra if border else 0.0))
                        if 0 <= col + dc < px:
                            b.send(rank(row, col + dc), tag=tag, size=8)
                        if 0 <= row + dr < py:
                            b.send(rank(row + dr, col), tag=tag, size=8)
    return prog


# ---- seed 001 IV-A: the synthetic load-imbalance benchmark ------------------------------

IMBALANCE_SCENARIOS = ("balanced", "static", "dynamic", "mixed")
"""The scenarios of the benchmark of Böhme et al., IPDPS 2012 (section IV-A, Fig. 5)."""


def imbalance_work_time(scenario: str, iteration: int, rank: int, ranks: int = 32, iterations: int = 320,
                        work: float = 50e-3, peak: float = 62.5e-3) -> float:
    """Duration of work() of `rank` in `iteration` of :func:`imbalance_benchmark`.

    * balanced: `work` everywhere;
    * static: rank p always works ``work + (peak - work) * (2p / (ranks - 1) - 1)``
      (from ``2 work - peak`` on rank 0 to `peak` on the last rank);
    * dynamic: in iteration i rank ``i mod ranks`` works `peak`, the others
      share the rest equally, ``(ranks * work - peak) / (ranks - 1)``;
    * mixed: as dynamic, but rank 0 is the overloaded one in the first
      half of the iterations and rank 1 in the second half.

    Every iteration has the same total work ``ranks * work``, and in the
    imbalanced scenarios its slowest rank needs `peak`.
    """
    other = (ranks * work - peak) / (ranks - 1)
    if scenario == "balanced":
        return work
    if scenario == "static":
        return work + (peak - work) * (2 * rank / (ranks - 1) - 1)
    if scenario == "dynamic":
        return peak if rank == iteration % ranks else other
    if scenario == "mixed":
        overloaded = 0 if iteration < iterations // 2 else 1
        return peak if rank == overloaded else other
    raise ValueError(f"scenario must be one of {IMBALANCE_SCENARIOS}, not {scenario!r}")


def imbalance_benchmark(scenario: str, ranks: int = 32, iterations: int = 320, work: float = 50e-3,
                        peak: float = 62.5e-3) -> synth.Program:
    """The synthetic load-imbalance benchmark of Böhme et al. (IPDPS 2012, section IV-A).

    `ranks` ranks run `iterations` iterations of ``work()`` (region
    "work", durations from :func:`imbalance_work_time`) followed by
    MPI_Barrier.  With the defaults and ``run(latency=0.0)`` the balanced
    scenario takes 320 x 50 ms = 16 s and the imbalanced ones 320 x
    62.5 ms = 20 s, 25 % longer with the same total work (32 x 16 s of
    work()), as in the paper.
    """
    if scenario not in IMBALANCE_SCENARIOS:
        raise ValueError(f"scenario must be one of {IMBALANCE_SCENARIOS}, not {scenario!r}")
    prog = synth.Program(ranks)
    for rank in range(ranks):
        b = prog.rank(rank)
        for it in range(iterations):
            b.compute("work", imbalance_work_time(scenario, it, rank, ranks, iterations, work, peak)).barrier()
    return prog


# ---- seed 001 IV-D: MPMD partitions (ddcMD) ----------------------------------------------

def mpmd_particle_work(mesh_work: float, n_particle: int = 12, n_mesh: int = 4,
                       work_per_step: float = 48e-3) -> float:
    """The average particle work per step that keeps the total at `work_per_step`:
    ``(work_per_step - n_mesh * mesh_work) / n_particle``."""
    particle = (work_per_step - n_mesh * mesh_work) / n_particle
    if particle < 0:
        raise ValueError(f"mesh_work {mesh_work} leaves no work for the particle ranks")
    return particle


def mpmd(mesh_work: float, n_particle: int = 12, n_mesh: int = 4, steps: int = 20, work_per_step: float = 48e-3,
         particle_spread: float = 0.0) -> synth.Program:
    """An MPMD program in the style of ddcMD (Böhme et al., IPDPS 2012, section IV-D).

    Ranks ``0 .. n_particle-1`` form the "particle" partition, the next
    `n_mesh` ranks the "mesh" partition; every mesh rank serves
    ``n_particle // n_mesh`` consecutive particle ranks (`n_particle` must
    be a multiple of `n_mesh`).  Per step every
    mesh rank computes "mesh" for `mesh_work` and sends 64 bytes to each of
    its particle ranks; every particle rank computes "particle", receives
    from its mesh rank, and all ranks meet in an MPI_Allreduce.

    The work per step over all ranks is `work_per_step`: the particle
    ranks work :func:`mpmd_particle_work` on average.  `particle_spread`
    imbalances the particle partition statically: particle rank k works
    ``p * (1 + particle_spread * (2k / (n_particle - 1) - 1))``, from
    ``p (1 - spread)`` to ``p (1 + spread)`` with the same average ``p``.
    Moving `mesh_work` up moves work from the particle to the mesh
    partition, as ddcMD's mesh size and screening length do.
    """
    if n_mesh < 1 or n_particle < n_mesh or n_particle % n_mesh:
        raise ValueError(f"n_particle ({n_particle}) must be a positive multiple of n_mesh ({n_mesh})")
    p = mpmd_particle_work(mesh_work, n_particle, n_mesh, work_per_step)
    per_mesh = n_particle // n_mesh
    prog = synth.Program(n_particle + n_mesh)
    spread = [particle_spread * (2 * k / max(n_particle - 1, 1) - 1) for k in range(n_particle)]
    for step in range(steps):
        for m in range(n_mesh):
            b = prog.rank(n_particle + m)
            b.compute("mesh", mesh_work)
            for k in range(per_mesh):
                b.send(m * per_mesh + k, tag=step, size=64)
        for k in range(n_particle):
            prog.rank(k).compute("particle", p * (1 + spread[k])).recv(n_particle + k // per_mesh, tag=step)
        for rank in range(n_particle + n_mesh):
            prog.rank(rank).allreduce(size=8)
    return prog


# ---- seed 000 V-B / VI: Zeus-MP/2 ---------------------------------------------------------

ZEUSMP_REGIONS = ("lorentz", "i_loop", "j_loop", "k_loop")
"""The computational regions of :func:`zeusmp`, in program order: ``lorentz``
before the first communication phase, the three loops of ``hsmoc`` before
the second, third and fourth (Böhme et al., ICPP 2010, section V-B)."""

ZEUSMP_OVERLOAD = {"lorentz": 0.6, "i_loop": 0.3, "j_loop": 0.2, "k_loop": 0.2}
"""Default extra work of the central block, as a fraction of `work`, per region."""


def zeusmp_central(grid: Tuple[int, int, int], central: int) -> Tuple[Tuple[int, int], ...]:
    """Per dimension the half-open coordinate range ``[lo, hi)`` of the central block:
    `central` processes wide (at most the grid's extent), centred in the grid."""
    out = []
    for n in grid:
        c = min(central, n)
        lo = (n - c) // 2
        out.append((lo, lo + c))
    return tuple(out)


def zeusmp_layer(grid: Tuple[int, int, int], central: int, rank: int) -> int:
    """Distance of `rank` from the central block of :func:`zeusmp`: 0 inside it,
    1 for a process that touches it across a face (the next layer), and so on
    (the number of halo exchanges a delay needs to arrive: the Manhattan
    distance in the process grid)."""
    coords = _grid_coords(grid, rank)
    return sum(max(lo - c, 0, c - (hi - 1)) for c, (lo, hi) in zip(coords, zeusmp_central(grid, central)))


def _grid_coords(grid: Tuple[int, int, int], rank: int) -> Tuple[int, int, int]:
    """Row-major coordinates of `rank` (as MPI_Cart_create numbers the ranks)."""
    nx, ny, nz = grid
    return (rank // (ny * nz), (rank // nz) % ny, rank % nz)


def zeusmp(grid: Tuple[int, int, int] = (6, 6, 6), steps: int = 4, work: float = 10e-3, central: int = 4,
           overload: "dict[str, float] | None" = None, size: int = 4096,
           balanced: Tuple[str, ...] = ()) -> synth.Program:
    """A Zeus-MP/2-like program (Böhme et al., ICPP 2010, sections V-B and VI).

    Zeus-MP/2 decomposes a 3D domain regularly over a 3D process grid and
    exchanges halos with the face neighbours in four communication phases
    per time step, with non-blocking point-to-point operations.  In the
    paper's MHD blast-wave run, the processes of the central region of the
    domain compute more than the outer ones; the delay analysis finds the
    excess in ``lorentz()`` and three loops of ``hsmoc()``.

    Parameters
    ----------
    grid
        The process grid ``(nx, ny, nz)``; rank ``(x * ny + y) * nz + z``
        sits at ``(x, y, z)`` (row-major, as MPI_Cart_create numbers them);
        the program defines this Cartesian topology (not periodic).
    steps
        Time steps of the main loop.
    work
        Seconds every process computes in each of the four regions per step.
    central
        Edge length (in processes) of the overloaded central block, centred
        in the grid (:func:`zeusmp_central`).  The default 4 in a 6 x 6 x 6
        grid makes 64 central processes (56 on the border of the block, 8
        inside it), 96 in the next layer (:func:`zeusmp_layer` = 1), 48 in
        the second and 8 in the third.  The paper ran 512 processes:
        ``grid=(8, 8, 8)`` (analysed in about a second).
    overload
        ``{region: fraction}``: inside the central block a region takes
        ``work * (1 + fraction)`` (default :data:`ZEUSMP_OVERLOAD`).
    size
        Bytes of every halo message (4096: below the eager limit, so sends
        never wait for their receiver).
    balanced
        Regions whose work is spread evenly instead: every process computes
        the mean over all processes of that region's work (the total work
        stays the same).  ``zeusmp(balanced=("lorentz",))`` is the program
        the paper's what-if analysis (section VI) predicts by balancing
        lorentz in the trace of ``zeusmp()``.

    Per step and region ``r`` (in :data:`ZEUSMP_REGIONS` order) each
    process computes ``r``, then, inside the region ``comm<k>`` (k = 1..4,
    so that the waiting of each phase has a call path of its own), posts
    MPI_Irecv from and MPI_Isend to each existing face neighbour (x-, x+,
    y-, y+, z-, z+) and completes them with one MPI_Waitall.  Regions
    ``lorentz`` and ``comm1`` run directly in ``main``; ``i_loop`` to
    ``comm4`` inside ``hsmoc``.
    """
    nx, ny, nz = (int(g) for g in grid)
    if min(nx, ny, nz) < 1:
        raise ValueError(f"grid must have three positive extents, not {grid!r}")
    if central < 1:
        raise ValueError(f"central must be at least 1, not {central}")
    extra = dict(ZEUSMP_OVERLOAD if overload is None else overload)
    unknown = (set(extra) | set(balanced)) - set(ZEUSMP_REGIONS)
    if unknown:
        raise ValueError(f"unknown regions {sorted(unknown)}; the regions are {ZEUSMP_REGIONS}")
    if any(not f >= 0 for f in extra.values()):
        raise ValueError(f"overload fractions must be >= 0, not {extra}")
    n = nx * ny * nz
    box = zeusmp_central((nx, ny, nz), central)
    inside = [all(lo <= c < hi for c, (lo, hi) in zip(_grid_coords((nx, ny, nz), r), box)) for r in range(n)]
    n_inside = sum(inside)

    def duration(region: str, rank: int) -> float:
        f = extra.get(region, 0.0)
        if region in balanced:
            return work * (1 + f * n_inside / n)
        return work * (1 + f) if inside[rank] else work

    prog = synth.Program(n, name="zeusmp")
    prog.cart((nx, ny, nz))
    strides = (ny * nz, nz, 1)
    for rank in range(n):
        b = prog.rank(rank)
        coords = _grid_coords((nx, ny, nz), rank)
        neighbours = []
        for dim, extent in enumerate((nx, ny, nz)):
            for step in (-1, 1):
                if 0 <= coords[dim] + step < extent:
                    neighbours.append(rank + step * strides[dim])

        def phase(t: int, k: int) -> None:
            region = ZEUSMP_REGIONS[k]
            b.compute(region, duration(region, rank))
            with b.region(f"comm{k + 1}"):
                reqs = [b.irecv(p, tag=4 * t + k) for p in neighbours]
                reqs += [b.isend(p, tag=4 * t + k, size=size) for p in neighbours]
                b.waitall(reqs)

        for t in range(steps):
            phase(t, 0)
            with b.region("hsmoc"):
                for k in (1, 2, 3):
                    phase(t, k)
    return prog


# ---- the demo's program: a halo exchange with one slow rank ---------------------------------

HALO_REGIONS = ("compute_fluxes", "update")
"""The computational regions of :func:`halo_exchange`, in program order."""


def halo_exchange(grid: Tuple[int, int] = (4, 4), steps: int = 10, work: float = 10e-3, slow: int = 5,
                  extra: float = 0.8, size: int = 8192, balanced: bool = False) -> synth.Program:
    """A 2D halo exchange in which one rank computes more than the others
    (``waitscope demo`` analyses it).

    The ranks form the Cartesian grid `grid` (row-major, as MPI_Cart_create
    numbers them: rank ``x * ny + y`` at ``(x, y)``).  Each of `steps` time
    steps, inside the region ``timestep``, every rank computes
    ``compute_fluxes`` for `work` seconds (rank `slow` for ``work * (1 +
    extra)``) and ``update`` for ``work / 4``, exchanges halos of `size`
    bytes with its (up to four) neighbours inside ``exchange_halos``
    (MPI_Irecv, MPI_Isend, one MPI_Waitall) and joins an MPI_Allreduce of
    8 bytes (the time step's residual).

    The neighbours of the slow rank wait for its halos (Late Sender in
    MPI_Waitall), their neighbours for theirs (the waiting propagates),
    and everybody waits in the allreduce: each step takes ``work * extra``
    longer than it would balanced.  ``balanced=True`` gives every rank
    the mean work of ``compute_fluxes`` instead (the total work stays),
    the program a what-if of balancing ``compute_fluxes`` predicts.
    """
    nx, ny = (int(g) for g in grid)
    if min(nx, ny) < 1:
        raise ValueError(f"grid must have two positive extents, not {grid!r}")
    n = nx * ny
    if not 0 <= slow < n:
        raise ValueError(f"slow must be a rank of the grid (0 to {n - 1}), not {slow}")
    if not extra >= 0:
        raise ValueError(f"extra must be >= 0, not {extra}")
    prog = synth.Program(n, name="halo_exchange")
    prog.cart((nx, ny))
    mean = work * (1 + extra / n)
    for rank in range(n):
        b = prog.rank(rank)
        x, y = divmod(rank, ny)
        neighbours = [(x + dx) * ny + (y + dy) for dx, dy in ((-1, 0), (1, 0), (0, -1), (0, 1))
                      if 0 <= x + dx < nx and 0 <= y + dy < ny]
        fluxes = mean if balanced else work * (1 + extra) if rank == slow else work
        for t in range(steps):
            with b.region("timestep"):
                b.compute("compute_fluxes", fluxes)
                b.compute("update", work / 4)
                with b.region("exchange_halos"):
                    reqs = [b.irecv(p, tag=t) for p in neighbours]
                    reqs += [b.isend(p, tag=t, size=size) for p in neighbours]
                    b.waitall(reqs)
                b.allreduce(8)
    return prog
