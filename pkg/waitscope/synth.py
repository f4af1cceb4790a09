"""Synthetic MPI and MPI+OpenMP programs: state a program per rank, execute it, get a trace.

This is the factory for analysis tests.  A :class:`Program` holds one list
of operations per rank; :meth:`Program.run` executes it in C with MPI's
blocking semantics and a simple, exact cost model and returns an in-memory
trace (:class:`waitscope._core.Trace`) whose definitions look like the
ones Score-P writes; :meth:`Program.write` also writes it as an OTF2
archive::

    from waitscope import synth
    prog = synth.Program(nranks=2)
    prog.rank(0).compute("work", 2.0).send(1, tag=0, size=8)
    prog.rank(1).recv(0, tag=0)
    trace = prog.run(latency=1e-6)

Every rank is wrapped like Score-P records an MPI program: ProgramBegin at
t = 0, Enter ``main``, Enter/Leave ``MPI_Init``, the rank's operations,
Enter/Leave ``MPI_Finalize``, Leave ``main``, ProgramEnd (the last three
at the same time).  ``MPI_Init`` and ``MPI_Finalize`` behave like world
barriers but have no collective records, as in Score-P traces.

Timing model
------------
Times are integer clock ticks.  Every duration is converted once with
``llround(d * resolution)``: L = latency, o = mpi_overhead, d of a
compute, and x = size / bandwidth of a message (x = 0 when bandwidth is
None).  A rank's clock only moves forward; each operation starts (Enters)
at the time the previous one ended.

``compute(R, d)``
    Enter R at t, Leave at t + d.
``region(R)``
    Enter R when the ``with`` block starts, Leave when it ends (no time).
``send`` (standard mode)
    Enter at t and the MpiSend record at t.  Eager (size <= eager_limit):
    Leave at t + o.  Rendezvous (size > eager_limit): Leave at
    max(t, receiver's post time) + L + x + o.
``ssend``
    Always rendezvous.
``recv``
    Enter at t_r.  The message arrives at a = t_s + L + x for an eager send
    and at a = max(t_s, t_r) + L + x for a rendezvous one, t_s being the
    send's Enter time.  MpiRecv record and Leave at max(t_r, a) + o.
``isend``
    Enter at t, MpiIsend record at t, Leave at t + o.  The request
    completes at t + o (eager) or max(t, receiver's post time) + L + x
    (rendezvous).
``irecv``
    Enter at t, MpiIrecvRequest record at t, Leave at t + o; its post
    time is t.  It completes at the arrival a (as for recv, with t_r = t).
``wait`` / ``waitall``
    Enter at t_w; Leave at max(t_w, completion of all requests) + o.  Just
    before the Leave (at the Leave time) one MpiIsendComplete or MpiIrecv
    record per request, in the order given.
``barrier``, ``allreduce``, ``alltoall``, ``allgather`` (and MPI_Init/Finalize)
    Every member leaves at max(enter times) + L + o.
``bcast``, ``scatter``
    The root leaves at t_root + o; the others at max(t_i, t_root + L) + o.
``reduce``, ``gather``
    The root leaves at max(all enter times) + L + o; the others at t_i + o.
``scan``
    Member i (in communicator order) leaves at max(enter times of members
    0..i) + L + o.

A "post time" is the Enter time of a receive (recv or irecv) or of a send.
Collectives are recorded as Enter, MpiCollectiveBegin (enter time),
MpiCollectiveEnd (leave time; OTF2 collective type, communicator, root as
a communicator rank for rooted collectives and undefined otherwise), Leave.
With ``size`` bytes per rank and n members, the byte counts of
MpiCollectiveEnd (sent, received) are: barrier (0, 0); bcast and scatter
root (n*size, size), others (0, size); reduce and gather root
(size, n*size), others (size, 0); allreduce, alltoall, allgather
(n*size, n*size); scan member i ((n-i)*size, (i+1)*size).

Matching and errors
-------------------
Messages match like in MPI without wildcards: the n-th send from s to d
with tag T on a communicator matches the n-th receive by d from s with tag
T on it.  The k-th collective call of every member of a communicator is
one collective; all members must call the same operation (and root).
Peers and roots are ranks *within* the communicator used.  A program that
cannot execute (a receive without a matching send, a collective that some
member does not call or calls in another order, a wait on an unknown or
already completed request, a deadlock) raises :class:`TraceError` whose
message names the rank, the operation index (0-based, among that rank's
operations) and the problem.  Invalid arguments (ranks out of range,
negative durations or sizes, unknown communicators) raise ``ValueError``
at the call that states them.

Requests
--------
``isend``/``irecv`` return a :class:`Request`; its ``id`` is the 1-based
number of the rank's non-blocking operations and is also the OTF2 request
id.  ``wait``/``waitall`` also accept such ids as plain integers.

Definitions
-----------
Clock properties (offset 0, the given resolution), paradigm MPI, system
tree machine "synthetic" -> node "node0", per rank a location group
"MPI Rank <r>" (process) with one location "Master thread" (CPU thread;
OTF2 location id = rank), regions ``main`` and the user regions (user
functions) and one region per MPI function used (paradigm MPI, the region
role Score-P gives it, source file "MPI"), groups COMM_LOCATIONS (all
locations), COMM_GROUP of the world, COMM_SELF and one COMM_GROUP per
sub-communicator, communicators MPI_COMM_WORLD, MPI_COMM_SELF and the
sub-communicators (parent MPI_COMM_WORLD), and Cartesian topologies.

OpenMP
------
``Program(nranks, threads=T)`` gives every process T OpenMP threads
(default 1: an MPI program, exactly as above).  Thread 0, the master, is
the rank: it makes the MPI calls, outside parallel regions.  A rank forks
parallel regions whose work is stated per thread.  OpenMP example::

    prog = synth.Program(2, threads=2)
    r0 = prog.rank(0)
    r0.compute("serial", 1.0)
    with r0.parallel("loop", fork=[0.0, 0.5], join=0.25) as team:
        team.thread(0).compute("work", 1.0).barrier().compute("more", 0.5)
        team.thread(1).compute("work", 2.0).barrier().critical(0.25).lock(7, 0.5)
    r0.send(1, tag=0)
    prog.rank(1).recv(0, tag=0)
    result = prog.run().analyze(delay_model="proportional")
    result.by_location("omp_ebarrier_wait")  # [1.5, 0, 0, 0]: the master waits for thread 1
    result.by_location("omp_ibarrier_wait")  # [0.25, 0, 0, 0]
    result.by_location("mpi_latesender")     # [0, 0, 4.5, 0]

(locations: rank 0's master and thread 1, rank 1's master and thread 1).
Times are ticks as above; t is the rank's time when it reaches the region.

``rank.parallel(name, num_threads=None, fork=0.0, join=0.0, barrier=0.0)``
    A team of threads 0..num_threads-1 (default: all T; the others idle).
    The master's ThreadFork (requested threads: the team's size) at t;
    thread i's ThreadTeamBegin and Enter of "!$omp parallel @<name>" at
    t + fork[i] (``fork``: one delay for every thread, or one per thread);
    the thread's operations; then the implicit barrier "!$omp implicit
    barrier @<name>": each thread Enters it when done, all Leave it at the
    latest Enter + ``barrier``, then Leave the parallel region and end the
    team (ThreadTeamEnd) at that time E.  The master's ThreadJoin at
    E + ``join``, where the rank continues.  ``with rank.parallel(...) as
    team:`` refuses the rank's own operations inside the block.
``team.thread(i).compute(R, d)``, ``with team.thread(i).region(R):``
    As on a rank.
``thread.barrier()``
    "!$omp barrier @<name>".  Every thread of the team reaches the same
    number of barriers; the k-th of every thread is one barrier: each
    Enters it at its time, all Leave it at the latest Enter + ``barrier``.
``thread.critical(d, name=None, region=None)``
    Enter "!$omp critical @<name>" at the entry time e; acquisition at
    a = max(e, the section's last release): ThreadAcquireLock and Enter
    "!$omp critical sblock @<name>" at a; the work (inside the user region
    ``region`` if given) until a + d; Leave of the sblock,
    ThreadReleaseLock and Leave of the critical construct at a + d.
    Sections of one ``name`` (None: the unnamed one) share one lock.
``thread.lock(k, d, region=None)``
    omp_set_lock of lock k (0 <= k < 2^31): Enter omp_set_lock at the entry
    e, ThreadAcquireLock and its Leave at a = max(e, lock k's last
    release), the work until a + d, then Enter omp_unset_lock,
    ThreadReleaseLock and Leave at a + d.

A region's threads run until they need each other.  Critical sections and
locks are acquired in the order of their entries (ties: the lower thread
number): the threads run until each is done, at a barrier or at an entry;
the earliest entry acquires; with none pending, all are at the same
barrier.  A parallel region waits for nothing outside its process.  Lock
ids are numbered per process from 0 in the order of first acquisition
(critical sections and locks alike), acquisition orders per lock from 1
over the whole run, as Score-P records them.  Worker threads have events
only in their teams; their regions have the master's call path at the
fork as parent (``main/!$omp parallel @loop/work``), as the OTF2 reader
builds them.  Bad statements raise ``ValueError``: a thread outside the
team, ``num_threads`` above T, a ``fork`` list of another length, threads
reaching different numbers of barriers, the rank's operations inside
its ``with`` block, a region left open in a thread.

Hybrid definitions, as Score-P writes them: location groups "MPI Rank
<r>" holding the master (OTF2 id r) and "OMP thread <k>" (id k << 32 | r),
the MPI locations group of the masters only; paradigm OpenMP; a
COMM_LOCATIONS group "OpenMP" of every location; per team that occurs (a
rank's first n threads) a COMM_GROUP of paradigm OpenMP and its
communicator (name "", the master as rank 0); the groups
PROCESSXTHREADS_GROUP_LOCATIONS / PROCESSXTHREADS_GROUP, the communicator
"Process x Threads CPU Locations" and on it the Cartesian topology
"Process x Thread" (dimensions "Process" and "Thread", thread k of rank r
at (r, k)), the first topology; regions of paradigm OpenMP with the roles
PARALLEL, IMPLICIT_BARRIER, BARRIER, CRITICAL, CRITICAL_SBLOCK, and
omp_set_lock / omp_unset_lock (role WRAPPER, source file "OMP").
"""
from __future__ import annotations

import math
import os
from array import array
from typing import TYPE_CHECKING, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._synth_threads import Team, ThreadProgram, _int, _seconds

if TYPE_CHECKING:
    from .trace import Trace

__all__ = ["Program", "RankProgram", "Team", "ThreadProgram", "Comm", "Request", "TraceError"]

#: raised when a program cannot be executed (same class as waitscope._core.TraceError)
TraceError = _core.TraceError

_OP = _core.synth_ops
_COMPUTE = _OP["compute"]
_ENTER = _OP["enter"]
_LEAVE = _OP["leave"]
_SEND = _OP["send"]
_SSEND = _OP["ssend"]
_RECV = _OP["recv"]
_ISEND = _OP["isend"]
_IRECV = _OP["irecv"]
_WAIT = _OP["wait"]
_WAITALL = _OP["waitall"]
_PARALLEL = _OP["parallel"]

_TAG_MAX = 2**32 - 1


class Comm:
    """A communicator of a :class:`Program` (MPI_COMM_WORLD or a sub-communicator).

    ``ranks[i]`` is the world rank of communicator rank ``i``.
    """

    __slots__ = ("index", "ranks", "name", "_program", "_rank_of")

    def __init__(self, program: "Program", index: int, ranks: Tuple[int, ...], name: str) -> None:
        self._program = program
        self.index = index
        self.ranks = ranks
        self.name = name
        self._rank_of = {w: i for i, w in enumerate(ranks)}

    @property
    def size(self) -> int:
        """Number of ranks in the communicator."""
        return len(self.ranks)

    def rank_of(self, world_rank: int) -> Optional[int]:
        """The communicator rank of a world rank, or None if it is not a member."""
        return self._rank_of.get(world_rank)

    def __repr__(self) -> str:
        return f"Comm({self.name!r}, size={self.size})"


class Request:
    """Handle of a non-blocking operation (returned by isend/irecv)."""

    __slots__ = ("rank", "id")

    def __init__(self, rank: int, id: int) -> None:
        self.rank = rank
        self.id = id

    def __repr__(self) -> str:
        return f"Request(rank={self.rank}, id={self.id})"


class _RegionBlock:
    """Context manager of :meth:`RankProgram.region`."""

    __slots__ = ("_rank", "_region")

    def __init__(self, rank: "RankProgram", region: int) -> None:
        self._rank = rank
        self._region = region

    def __enter__(self) -> "RankProgram":
        return self._rank

    def __exit__(self, *exc: object) -> None:
        self._rank._add((_LEAVE, self._region, 0, 0, 0))


class RankProgram:
    """The operations of one rank; methods append operations in program order.

    Methods that do not create a request return the builder itself, so calls
    can be chained.
    """

    __slots__ = ("_program", "rank", "_ops", "_durations", "_requests", "_n_started", "_open_team")

    def __init__(self, program: "Program", rank: int) -> None:
        self._program = program
        self.rank = rank
        self._ops = array("q")  # rows of (kind, a, b, size, comm)
        self._durations = array("d")
        self._requests = array("q")
        self._n_started = 0
        self._open_team: Optional[Team] = None  # the team of an open ``with rank.parallel(...)`` block

    def __len__(self) -> int:
        """Number of operations stated so far."""
        return len(self._ops) // 5

    # ---- helpers --------------------------------------------------------
    def _add(self, row: Tuple[int, int, int, int, int]) -> None:
        """Appends an operation row, unless a ``with rank.parallel(...)`` block is open."""
        if self._open_team is not None:
            raise ValueError(
                f"rank {self.rank} is inside the with block of parallel region {self._open_team.name!r}: state "
                f"the threads' work with team.thread(i); the rank's own operations follow the block")
        self._ops.extend(row)

    def _duration(self, value: object, what: str = "duration") -> int:
        """Stores a duration of this rank; returns its index."""
        d = _seconds(value, what)
        self._durations.append(d)
        return len(self._durations) - 1

    def _comm(self, comm: Optional[Comm]) -> Tuple[Comm, int]:
        """The communicator and this rank's rank in it."""
        c = self._program.world if comm is None else comm
        if not isinstance(c, Comm) or c._program is not self._program:
            raise ValueError(f"unknown communicator {comm!r}")
        me = c._rank_of.get(self.rank)
        if me is None:
            raise ValueError(f"rank {self.rank} is not a member of {c.name}")
        return c, me

    def _p2p(self, kind: int, peer: int, tag: int, size: int, comm: Optional[Comm]) -> None:
        c, _ = self._comm(comm)
        peer = _int(peer, "peer rank", 0, c.size - 1)
        tag = _int(tag, "tag", 0, _TAG_MAX)
        size = _int(size, "message size")
        self._add((kind, peer, tag, size, c.index))

    def _collective(self, name: str, root: Optional[int], size: int, comm: Optional[Comm]) -> "RankProgram":
        c, _ = self._comm(comm)
        a = -1 if root is None else _int(root, "root", 0, c.size - 1)
        size = _int(size, "size")
        self._add((_OP[name], a, 0, size, c.index))
        return self

    def _request_entry(self, request: Union[Request, int]) -> int:
        if isinstance(request, Request):
            if request.rank == self.rank:
                return request.id
            # another rank's request: the executor reports it
            return -1 - ((request.rank << 32) | request.id)
        return _int(request, "request id")

    # ---- computation and regions ---------------------------------------
    def compute(self, region: str, duration: float) -> "RankProgram":
        """Enter `region`, Leave it `duration` seconds later."""
        r = self._program._region(region)
        d = float(duration)
        if not math.isfinite(d) or d < 0:
            raise ValueError(f"duration must be a finite number >= 0, not {duration!r}")
        self._add((_COMPUTE, r, len(self._durations), 0, 0))
        self._durations.append(d)
        return self

    def region(self, name: str) -> _RegionBlock:
        """``with rank.region(name):`` encloses the operations of the block in a user region."""
        r = self._program._region(name)
        self._add((_ENTER, r, 0, 0, 0))
        return _RegionBlock(self, r)

    # ---- OpenMP ---------------------------------------------------------
    def parallel(
        self,
        name: str,
        num_threads: Optional[int] = None,
        fork: Union[float, Sequence[float]] = 0.0,
        join: float = 0.0,
        barrier: float = 0.0,
    ) -> "Team":
        """An OpenMP parallel region of `num_threads` threads (default: all
        the program's threads), forked by this rank's master thread.

        `fork` is the delay from the master's fork to each thread's start
        (one number for all, or one per thread), `join` the delay from the
        region's end to the master's join, `barrier` the overhead of every
        barrier of the region (explicit and implicit), all in seconds.
        State each thread's work with the returned team's ``thread(i)``;
        ``with rank.parallel(...) as team:`` keeps the rank's own
        operations out of the block.
        """
        prog = self._program
        if not isinstance(name, str) or not name or "\0" in name:
            raise ValueError(f"a parallel region's name must be a non-empty string, not {name!r}")
        size = prog.threads if num_threads is None else _int(num_threads, "num_threads", 1, prog.threads)
        delays = [fork] * size if isinstance(fork, (int, float, np.integer, np.floating)) else list(fork)
        if len(delays) != size:
            raise ValueError(f"fork needs one delay per thread of the team ({size}), not {len(delays)}")
        delays = [_seconds(x, f"the fork delay of thread {i}") for i, x in enumerate(delays)]
        join_s, barrier_s = _seconds(join, "join"), _seconds(barrier, "barrier")
        team = Team(self, len(prog._teams), name, size)
        self._add((_PARALLEL, team.index, 0, 0, 0))
        first = len(self._durations)
        self._durations.extend(delays)
        team._row = (size, prog._parallel_name(name), first, self._duration(join_s), self._duration(barrier_s))
        prog._teams.append(team)
        return team

    # ---- point-to-point -------------------------------------------------
    def send(self, dest: int, tag: int = 0, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Send of `size` bytes to `dest` (a rank of `comm`, default world)."""
        self._p2p(_SEND, dest, tag, size, comm)
        return self

    def ssend(self, dest: int, tag: int = 0, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Ssend: a synchronous (always rendezvous) send."""
        self._p2p(_SSEND, dest, tag, size, comm)
        return self

    def recv(self, source: int, tag: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Recv from `source`; the size is the matching send's."""
        self._p2p(_RECV, source, tag, 0, comm)
        return self

    def isend(self, dest: int, tag: int = 0, size: int = 0, comm: Optional[Comm] = None) -> Request:
        """MPI_Isend; returns the request to wait for."""
        self._p2p(_ISEND, dest, tag, size, comm)
        self._n_started += 1
        return Request(self.rank, self._n_started)

    def irecv(self, source: int, tag: int = 0, comm: Optional[Comm] = None) -> Request:
        """MPI_Irecv; returns the request to wait for."""
        self._p2p(_IRECV, source, tag, 0, comm)
        self._n_started += 1
        return Request(self.rank, self._n_started)

    def wait(self, request: Union[Request, int]) -> "RankProgram":
        """MPI_Wait for one request."""
        entry = self._request_entry(request)
        self._add((_WAIT, len(self._requests), 1, 0, 0))
        self._requests.append(entry)
        return self

    def waitall(self, requests: Iterable[Union[Request, int]]) -> "RankProgram":
        """MPI_Waitall for the requests (completion records in this order)."""
        entries = [self._request_entry(q) for q in requests]
        self._add((_WAITALL, len(self._requests), len(entries), 0, 0))
        self._requests.extend(entries)
        return self

    # ---- collectives ----------------------------------------------------
    def barrier(self, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Barrier."""
        return self._collective("barrier", None, 0, comm)

    def bcast(self, root: int = 0, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Bcast of `size` bytes from `root` (a rank of `comm`)."""
        return self._collective("bcast", root, size, comm)

    def scatter(self, root: int = 0, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Scatter of `size` bytes per rank from `root`."""
        return self._collective("scatter", root, size, comm)

    def reduce(self, root: int = 0, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Reduce of `size` bytes to `root`."""
        return self._collective("reduce", root, size, comm)

    def gather(self, root: int = 0, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Gather of `size` bytes per rank to `root`."""
        return self._collective("gather", root, size, comm)

    def allreduce(self, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Allreduce of `size` bytes."""
        return self._collective("allreduce", None, size, comm)

    def alltoall(self, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Alltoall with `size` bytes per pair."""
        return self._collective("alltoall", None, size, comm)

    def allgather(self, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Allgather of `size` bytes per rank."""
        return self._collective("allgather", None, size, comm)

    def scan(self, size: int = 0, comm: Optional[Comm] = None) -> "RankProgram":
        """MPI_Scan of `size` bytes."""
        return self._collective("scan", None, size, comm)

    def __repr__(self) -> str:
        return f"RankProgram(rank={self.rank}, operations={len(self)})"


class Program:
    """An MPI program of `nranks` ranks (MPI_COMM_WORLD is implicit).

    `name` names the program as Score-P does: written archives define the
    program region (role ARTIFICIAL, paradigm MEASUREMENT_SYSTEM, canonical
    name "/synthetic/<name>") and name ProgramBegin with it.

    `threads` is the number of OpenMP threads of every process (1: MPI
    only); their work is stated per parallel region (:meth:`RankProgram.parallel`).
    """

    def __init__(self, nranks: int, name: str = "synthetic", threads: int = 1) -> None:
        self.nranks = _int(nranks, "nranks", 1, 2**32 - 3)
        #: OpenMP threads per process (thread 0 is the master, which calls MPI)
        self.threads = _int(threads, "threads", 1, 2**31 - 1)
        if self.nranks * self.threads > 2**32 - 3:
            raise ValueError(f"{self.nranks} ranks of {self.threads} threads are too many locations")
        self._teams: List[Team] = []
        self._parallel_names: Dict[str, int] = {}
        self._criticals: Dict[Optional[str], int] = {}
        if not isinstance(name, str) or not name or "\0" in name:
            raise ValueError(f"name must be a non-empty string, not {name!r}")
        #: the program's name: Score-P's program region (canonical name
        #: "/synthetic/<name>") that names ProgramBegin in written archives
        self.name = name
        self.world = Comm(self, 0, tuple(range(self.nranks)), "MPI_COMM_WORLD")
        self._comms: List[Comm] = [self.world]
        self._carts: List[Tuple[int, Tuple[int, ...], Tuple[int, ...], str]] = []
        self._regions: Dict[str, int] = {}
        self._ranks: List[Optional[RankProgram]] = [None] * self.nranks

    def _region(self, name: str) -> int:
        r = self._regions.get(name)
        if r is None:
            if not isinstance(name, str) or not name:
                raise ValueError(f"a region name must be a non-empty string, not {name!r}")
            if name.startswith("MPI_"):
                raise ValueError(f"region name {name!r}: names starting with 'MPI_' are reserved for MPI functions")
            if name.startswith("!$omp"):
                raise ValueError(f"region name {name!r}: names starting with '!$omp' are reserved for OpenMP constructs")
            r = self._regions[name] = len(self._regions)
        return r

    def _parallel_name(self, name: str) -> int:
        return self._parallel_names.setdefault(name, len(self._parallel_names))

    def comm(self, ranks: Sequence[int], name: Optional[str] = None) -> Comm:
        """A sub-communicator of the world: communicator rank i is world rank ``ranks[i]``."""
        members = tuple(_int(r, "rank", 0, self.nranks - 1) for r in ranks)
        if not members:
            raise ValueError("a communicator needs at least one rank")
        if len(set(members)) != len(members):
            raise ValueError("a communicator lists a rank twice")
        index = len(self._comms)
        c = Comm(self, index, members, str(name) if name is not None else f"Comm {index}")
        self._comms.append(c)
        return c

    def cart(
        self,
        dims: Sequence[int],
        periods: Optional[Sequence[bool]] = None,
        comm: Optional[Comm] = None,
        name: Optional[str] = None,
    ) -> None:
        """Defines a Cartesian topology on `comm` (default world), row-major like MPI_Cart_create.

        The last dimension varies fastest; communicator ranks beyond the
        product of `dims` get no coordinates.
        """
        c = self.world if comm is None else comm
        if not isinstance(c, Comm) or c._program is not self:
            raise ValueError(f"unknown communicator {comm!r}")
        d = tuple(_int(x, "dimension size", 1) for x in dims)
        if not 1 <= len(d) <= 8:
            raise ValueError("a Cartesian topology needs 1 to 8 dimensions")
        p = tuple(bool(x) for x in periods) if periods is not None else (False,) * len(d)
        if len(p) != len(d):
            raise ValueError("periods must have one entry per dimension")
        if math.prod(d) > c.size:
            raise ValueError(f"a {'x'.join(map(str, d))} topology needs more ranks than {c.name} has ({c.size})")
        self._carts.append((c.index, d, tuple(int(x) for x in p), name or f"Cartesian topology {len(self._carts)}"))

    def rank(self, r: int) -> RankProgram:
        """The builder of world rank `r` (always the same object for a rank)."""
        r = _int(r, "rank", 0, self.nranks - 1)
        b = self._ranks[r]
        if b is None:
            b = self._ranks[r] = RankProgram(self, r)
        return b

    def ranks(self) -> Iterator[RankProgram]:
        """The builders of all ranks, in rank order."""
        return (self.rank(r) for r in range(self.nranks))

    # ---- execution ------------------------------------------------------
    def pack(self) -> Dict[str, object]:
        """The program as the arrays `waitscope._core.synth_run` takes."""
        n = self.nranks
        parts_ops: List[np.ndarray] = []
        parts_dur: List[np.ndarray] = []
        parts_req: List[np.ndarray] = []
        rank_ptr = np.zeros(n + 1, dtype=np.int64)
        dur_ptr = np.zeros(n + 1, dtype=np.int64)
        req_ptr = np.zeros(n + 1, dtype=np.int64)
        for r, b in enumerate(self._ranks):
            if b is not None:
                if len(b._ops):
                    parts_ops.append(np.frombuffer(b._ops, dtype=np.int64))
                if len(b._durations):
                    parts_dur.append(np.frombuffer(b._durations, dtype=np.float64))
                if len(b._requests):
                    parts_req.append(np.frombuffer(b._requests, dtype=np.int64))
                rank_ptr[r + 1] = len(b._ops) // 5
                dur_ptr[r + 1] = len(b._durations)
                req_ptr[r + 1] = len(b._requests)
        np.cumsum(rank_ptr, out=rank_ptr)
        np.cumsum(dur_ptr, out=dur_ptr)
        np.cumsum(req_ptr, out=req_ptr)

        def cat(parts: List[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        subs = self._comms[1:]
        comm_ptr = np.zeros(len(subs) + 1, dtype=np.int64)
        comm_ptr[1:] = np.cumsum([c.size for c in subs], dtype=np.int64)
        members = [w for c in subs for w in c.ranks]
        thread_ptr = [0]
        parts_thread: List[np.ndarray] = []
        for team in self._teams:
            team._check_barriers()
            for th in team._threads:
                thread_ptr.append(thread_ptr[-1] + len(th))
                if len(th):
                    parts_thread.append(np.frombuffer(th._ops, dtype=np.int64))
        return dict(
            nranks=n,
            rank_ptr=rank_ptr,
            ops=cat(parts_ops, np.int64).reshape(-1, 5),
            dur_ptr=dur_ptr,
            durations=cat(parts_dur, np.float64),
            req_ptr=req_ptr,
            requests=cat(parts_req, np.int64),
            regions=list(self._regions),
            comm_ptr=comm_ptr,
            comm_members=np.asarray(members, dtype=np.int64),
            comm_names=[c.name for c in subs],
            carts=list(self._carts),
            threads=self.threads,
            teams=np.asarray([t._row for t in self._teams], dtype=np.int64).reshape(-1, 5),
            thread_ptr=np.asarray(thread_ptr, dtype=np.int64),
            thread_ops=cat(parts_thread, np.int64).reshape(-1, 5),
            parallel_names=list(self._parallel_names),
        )

    def run(
        self,
        latency: float = 0.0,
        bandwidth: Optional[float] = None,
        eager_limit: int = 65536,
        mpi_overhead: float = 0.0,
        resolution: int = 10**9,
        progress: Optional[Callable[[str, int, int], object]] = None,
    ) -> "Trace":
        """Executes the program and returns the in-memory :class:`waitscope.Trace`.

        `latency` and `mpi_overhead` are seconds, `bandwidth` bytes per
        second (None: transfers take no time), `eager_limit` bytes,
        `resolution` clock ticks per second.  `progress(stage, done, total)`
        is called now and then for long runs.
        """
        latency = float(latency)
        mpi_overhead = float(mpi_overhead)
        if not math.isfinite(latency) or latency < 0:
            raise ValueError(f"latency must be a finite number >= 0, not {latency!r}")
        if not math.isfinite(mpi_overhead) or mpi_overhead < 0:
            raise ValueError(f"mpi_overhead must be a finite number >= 0, not {mpi_overhead!r}")
        if bandwidth is None:
            bw = 0.0
        else:
            bw = float(bandwidth)
            if not bw > 0:
                raise ValueError(f"bandwidth must be > 0 bytes/s or None, not {bandwidth!r}")
        eager = _int(eager_limit, "eager_limit", 0, 2**64 - 1)
        res = _int(resolution, "resolution", 1, 2**53)
        from .trace import Trace

        return Trace(self._execute(latency, bw, eager, mpi_overhead, res, progress))

    def _execute(self, latency: float, bandwidth: float, eager: int, overhead: float, resolution: int,
                 progress: Optional[Callable[[str, int, int], object]]) -> "_core.Trace":
        return _core.synth_run(
            **self.pack(),
            latency=latency,
            bandwidth=bandwidth,
            eager_limit=eager,
            overhead=overhead,
            resolution=resolution,
            progress=progress,
            name=self.name,
        )

    def write(self, path: Union[str, "os.PathLike[str]"], **params: object) -> str:
        """Runs the program (parameters as for :meth:`run`) and writes an OTF2 archive.

        `path` is an anchor file ("dir/traces.otf2") or a directory (then
        "dir/traces.otf2" is written).  Returns the anchor file's path.
        """
        p = os.fspath(path)
        trace = self.run(**params)  # type: ignore[arg-type]
        trace.write(p)
        return p if p.endswith(".otf2") else os.path.join(p, "traces.otf2")

    def __repr__(self) -> str:
        n_ops = sum(len(b) for b in self._ranks if b is not None)
        threads = f", threads={self.threads}" if self.threads > 1 else ""
        return f"Program(nranks={self.nranks}{threads}, operations={n_ops}, communicators={len(self._comms)})"
