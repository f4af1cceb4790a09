"""The OpenMP part of :mod:`waitscope.synth`: the team of a parallel region
and the builders of its threads (their timing model: the module docstring
of waitscope.synth), and the argument checks the builders share."""
from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Optional, Tuple

import numpy as np

from . import _core

if TYPE_CHECKING:
    from .synth import RankProgram

_OP = _core.synth_ops
_COMPUTE = _OP["compute"]
_ENTER = _OP["enter"]
_LEAVE = _OP["leave"]
_OMP_BARRIER = _OP["omp_barrier"]
_OMP_CRITICAL = _OP["omp_critical"]
_OMP_LOCK = _OP["omp_lock"]

_LOCK_MAX = 2**31 - 1


def _seconds(value: object, what: str) -> float:
    """A duration in seconds: a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be a finite number >= 0, not {value!r}")
    d = float(value)
    if not math.isfinite(d) or d < 0:
        raise ValueError(f"{what} must be a finite number >= 0, not {value!r}")
    return d


def _int(value: object, what: str, low: int = 0, high: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what} must be an integer, not {value!r}")
    v = int(value)
    if v < low or (high is not None and v > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{what} {v} is out of range (must be {bound})")
    return v


class _ThreadRegionBlock:
    """Context manager of :meth:`ThreadProgram.region`."""

    __slots__ = ("_thread", "_region")

    def __init__(self, thread: "ThreadProgram", region: int) -> None:
        self._thread = thread
        self._region = region

    def __enter__(self) -> "ThreadProgram":
        return self._thread

    def __exit__(self, *exc: object) -> None:
        self._thread._ops.extend((_LEAVE, self._region, 0, 0, 0))


class ThreadProgram:
    """The work of one thread in a parallel region; methods append
    operations in program order and return the builder, so calls can be
    chained.  A thread calls no MPI: MPI calls stay with the rank (the
    master thread), outside parallel regions."""

    __slots__ = ("team", "thread", "_ops", "_barriers")

    def __init__(self, team: "Team", thread: int) -> None:
        self.team = team
        self.thread = thread
        self._ops = array("q")  # rows of (kind, a, b, size, 0)
        self._barriers = 0

    def __len__(self) -> int:
        """Number of operations stated so far."""
        return len(self._ops) // 5

    def _optional_region(self, region: Optional[str]) -> int:
        return -1 if region is None else self.team._rank._program._region(region)

    def compute(self, region: str, duration: float) -> "ThreadProgram":
        """Enter `region`, Leave it `duration` seconds later."""
        r = self.team._rank._program._region(region)
        self._ops.extend((_COMPUTE, r, self.team._rank._duration(duration), 0, 0))
        return self

    def region(self, name: str) -> _ThreadRegionBlock:
        """``with thread.region(name):`` encloses the operations of the block in a user region."""
        r = self.team._rank._program._region(name)
        self._ops.extend((_ENTER, r, 0, 0, 0))
        return _ThreadRegionBlock(self, r)

    def barrier(self) -> "ThreadProgram":
        """``#pragma omp barrier``: every thread of the team must reach it."""
        self._ops.extend((_OMP_BARRIER, 0, 0, 0, 0))
        self._barriers += 1
        return self

    def critical(self, duration: float, name: Optional[str] = None, region: Optional[str] = None) -> "ThreadProgram":
        """``#pragma omp critical [(name)]`` holding it `duration` seconds
        (inside a user `region` if given); critical sections of one name
        (the unnamed one by default) exclude each other in the process."""
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"a critical section's name must be a non-empty string or None, not {name!r}")
        prog = self.team._rank._program
        key = prog._criticals.setdefault(name, len(prog._criticals))
        reg = self._optional_region(region)
        self._ops.extend((_OMP_CRITICAL, key, self.team._rank._duration(duration), reg, 0))
        return self

    def lock(self, lock: int, duration: float, region: Optional[str] = None) -> "ThreadProgram":
        """``omp_set_lock`` of lock number `lock` (0 to 2^31-1, one per
        process), held `duration` seconds (inside a user `region` if given),
        then ``omp_unset_lock``."""
        key = _int(lock, "lock", 0, _LOCK_MAX)
        reg = self._optional_region(region)
        self._ops.extend((_OMP_LOCK, key, self.team._rank._duration(duration), reg, 0))
        return self

    def __repr__(self) -> str:
        return f"ThreadProgram(rank={self.team.rank}, region={self.team.name!r}, thread={self.thread}, operations={len(self)})"


class Team:
    """The threads of one parallel region (returned by :meth:`RankProgram.parallel`).

    ``with rank.parallel(...) as team:`` gives the team; the rank's own
    operations stated after the block follow the region's join.
    """

    __slots__ = ("_rank", "index", "name", "size", "_threads", "_row")

    def __init__(self, rank: "RankProgram", index: int, name: str, size: int) -> None:
        self._rank = rank
        #: the region's number in the program (the OTF2 trace does not show it)
        self.index = index
        #: the region's name (Score-P's source location: "!$omp parallel @<name>")
        self.name = name
        #: threads in the team: threads 0..size-1 of the process
        self.size = size
        self._threads = [ThreadProgram(self, i) for i in range(size)]
        self._row: Tuple[int, int, int, int, int] = (size, 0, 0, 0, 0)

    @property
    def rank(self) -> int:
        """The rank whose master thread forks the team."""
        return self._rank.rank

    def thread(self, i: int) -> ThreadProgram:
        """The builder of thread `i` (0: the master thread)."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < self.size:
            raise ValueError(f"thread {i!r} is not in the team of parallel region {self.name!r} on rank "
                             f"{self.rank}: its threads are 0 to {self.size - 1}")
        return self._threads[int(i)]

    def __enter__(self) -> "Team":
        if self._rank._open_team is not None:
            raise ValueError(f"rank {self.rank} is already inside parallel region {self._rank._open_team.name!r}")
        self._rank._open_team = self
        return self

    def __exit__(self, *exc: object) -> None:
        if self._rank._open_team is self:
            self._rank._open_team = None

    def _check_barriers(self) -> None:
        counts = [t._barriers for t in self._threads]
        for i, c in enumerate(counts):
            if c != counts[0]:
                raise ValueError(f"parallel region {self.name!r} on rank {self.rank}: thread {i} reaches {c} "
                                 f"barrier(s), thread 0 {counts[0]}: every thread of a team reaches every barrier")

    def __repr__(self) -> str:
        return f"Team(rank={self.rank}, region={self.name!r}, threads={self.size})"
