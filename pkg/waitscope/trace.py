"""Traces: definitions, call paths and per-location event columns.

A :class:`Trace` wraps the C core's store.  Event columns are read-only
NumPy arrays that keep the trace alive: zero-copy views, or copies where
the store keeps a compact form (times as clock ticks).
"""

from __future__ import annotations

import builtins
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from . import _core
from ._names import (
    COLLECTIVE_OPS,
    EVENT_KINDS,
    LOCATION_TYPES,
    PARADIGMS,
    REGION_ROLES,
    name_of,
)
from .progress import Reporting

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from .profile import Profile
    from .result import AnalysisResult


@dataclass(frozen=True)
class Location:
    """One stream of events (a thread of an MPI process)."""

    index: int
    id: int
    name: str
    rank: int
    """Rank of its process (the MPI rank of the process's MPI thread)."""
    process: str
    thread: int
    """Position among the locations of its process (0: the master thread)."""
    type: str
    n_records: int
    """Event records the definitions announce (including kinds the store skips)."""
    mpi_rank: int = -1
    """Its own MPI rank; -1 for a thread that is no MPI location (an OpenMP worker)."""


@dataclass(frozen=True)
class Region:
    """A code region (function, MPI call, loop, ...)."""

    index: int
    id: int
    name: str
    canonical_name: str
    description: str
    role: str
    paradigm: str
    file: str
    begin_line: int
    end_line: int

    @property
    def is_mpi(self) -> bool:
        return self.paradigm == "mpi"


@dataclass(frozen=True)
class Communicator:
    index: int
    name: str
    size: int
    locations: np.ndarray
    """Location index of each communicator rank (empty for self communicators)."""
    parent: int
    is_self: bool


@dataclass(frozen=True)
class CartTopology:
    """A Cartesian process topology defined in the trace."""

    name: str
    comm: int
    dim_names: tuple[str, ...]
    dims: tuple[int, ...]
    periodic: tuple[bool, ...]
    coords: np.ndarray
    """Coordinates per communicator rank, shape (ranks, len(dims)); -1 where undefined."""
    locations: np.ndarray
    """Location index of each communicator rank."""

    def location_coords(self, n_locations: int) -> np.ndarray:
        """Coordinates per location, shape (n_locations, len(dims)); -1 where none."""
        out = np.full((n_locations, len(self.dims)), -1, dtype=np.int64)
        valid = self.locations >= 0
        out[self.locations[valid]] = self.coords[valid]
        return out


class Events:
    """The events of one location as columns (read-only NumPy arrays).

    ``time`` (seconds since the clock's global offset), ``kind`` (see
    :data:`waitscope.EVENT_KINDS`), ``ref`` (call path for enter/leave,
    else a row of the message, request or collective table) and the side
    tables ``msg_*``, ``req_*``, ``coll_*``.  Columns the store holds as
    the arrays have them are zero-copy views (``kind``, ``ref``, the
    event columns of the side tables); ``time`` (kept as clock ticks) and
    side-table columns kept narrower than their dtype are read-only copies,
    made when :meth:`Trace.events` is called.
    """

    def __init__(self, trace: "Trace", location: int, columns: dict[str, Any]):
        self._trace = trace
        self.location = location
        self.n_skipped: int = columns.pop("n_skipped")
        self.columns: dict[str, np.ndarray] = columns
        for key, value in columns.items():
            setattr(self, key, value)

    time: np.ndarray
    kind: np.ndarray
    ref: np.ndarray

    def __len__(self) -> int:
        return len(self.columns["time"])

    @property
    def callpath(self) -> np.ndarray:
        """Call path of every event (the innermost open region's call path)."""
        return self._trace._core.event_callpaths(self.location)

    def kind_names(self) -> np.ndarray:
        names = np.array([""] + [EVENT_KINDS.get(i, "?") for i in range(1, max(EVENT_KINDS) + 1)], dtype=object)
        return names[self.columns["kind"]]


class Trace:
    """An OTF2 trace: definitions, the call-path tree and event columns."""

    def __init__(self, core: Any, comm: Any = None, owner: np.ndarray | None = None):
        self._core = core
        self._comm = comm
        self._owner = owner
        self._simulation: dict[str, Any] | None = None
        self._defs = core.definitions()
        self._refresh_callpaths()

    @property
    def comm(self) -> Any:
        """The mpi4py communicator of the parallel mode (None in one process)."""
        return self._comm

    @property
    def owner(self) -> np.ndarray | None:
        """Parallel mode: the process (rank in ``comm``) that holds each location."""
        return self._owner

    # ---- definitions -----------------------------------------------------

    @property
    def path(self) -> str:
        return self._defs["path"]

    @property
    def cut_short_ranks(self) -> list[int]:
        """Ranks whose measurement ended before MPI_Finalize (a crash, MPI_Abort
        or a killed process): their events stop early and the regions they had
        open are closed at their last event.  Empty for a complete run."""
        return list(self._defs.get("cut_short_ranks", []))

    @property
    def openmp_recording(self) -> str | None:
        """How ``waitscope trace`` recorded the program's OpenMP threads:
        "recorded through OMPT (<runtime>)", or "not recorded: <why>" when
        the program's OpenMP runtime has no tools interface or recording
        was turned off; None for a trace of a program without OpenMP or
        written by another tool (Score-P says nothing of the kind)."""
        return self._defs.get("openmp_recording")

    @property
    def clock(self) -> dict[str, int]:
        """Clock properties: ticks per second, global offset, length, realtime."""
        return dict(self._defs["clock"])

    @property
    def run_length(self) -> float:
        """Wall-clock length of the run in seconds: the clock's length, else the span of the loaded events."""
        clock = self._defs["clock"]
        if clock["resolution"] and clock["length"]:
            return float(clock["length"]) / float(clock["resolution"])
        starts = [float(self.events(loc).time[0]) for loc in self.loaded_locations if len(self.events(loc).time)]
        ends = [float(self.events(loc).time[-1]) for loc in self.loaded_locations if len(self.events(loc).time)]
        return max(ends) - min(starts) if starts else 0.0

    @property
    def time_span(self) -> tuple[float, float]:
        """(start, end) of the run in seconds of the event times: from the clock's
        offset (0) to its length, else the span of the loaded events."""
        clock = self._defs["clock"]
        if clock["resolution"] and clock["length"]:
            return 0.0, float(clock["length"]) / float(clock["resolution"])
        times = [self.events(loc).time for loc in self.loaded_locations]
        times = [t for t in times if len(t)]
        if not times:
            return 0.0, 0.0
        return min(float(t[0]) for t in times), max(float(t[-1]) for t in times)

    @property
    def strings(self) -> list[str]:
        return self._defs["strings"]

    def _string(self, index: int) -> str:
        return self._defs["strings"][index] if index >= 0 else ""

    @property
    def locations(self) -> list[Location]:
        d = self._defs["locations"]
        groups = self._defs["location_groups"]
        out = []
        for i in range(len(d["otf2_id"])):
            g = int(d["group"][i])
            out.append(
                Location(
                    index=i,
                    id=int(d["otf2_id"][i]),
                    name=self._string(int(d["name"][i])),
                    rank=int(d["rank"][i]),
                    process=groups[g]["name"] if 0 <= g < len(groups) else "",
                    thread=int(d["thread"][i]),
                    type=name_of(LOCATION_TYPES, int(d["type"][i])),
                    n_records=int(d["n_records"][i]),
                    mpi_rank=int(d["mpi_rank"][i]),
                )
            )
        return out

    @property
    def n_locations(self) -> int:
        return self._core.n_locations

    @property
    def location_ranks(self) -> np.ndarray:
        """Rank of the process of every location, in location order (the
        threads of an MPI+OpenMP process share their process's rank)."""
        return self._defs["locations"]["rank"].copy()

    @property
    def location_threads(self) -> np.ndarray:
        """Thread number of every location within its process, in location
        order (0: the master thread; all 0 in a trace without threads)."""
        return np.asarray(self._defs["locations"]["thread"], dtype=np.int64).copy()

    @property
    def has_threads(self) -> bool:
        """Whether some process of the trace has more than one location
        (OpenMP or POSIX threads: a hybrid trace)."""
        return bool(np.any(self._defs["locations"]["thread"] != 0))

    @property
    def regions(self) -> list[Region]:
        d = self._defs["regions"]
        return [
            Region(
                index=i,
                id=int(d["otf2_id"][i]),
                name=self._string(int(d["name"][i])),
                canonical_name=self._string(int(d["canonical_name"][i])),
                description=self._string(int(d["description"][i])),
                role=name_of(REGION_ROLES, int(d["role"][i])),
                paradigm=name_of(PARADIGMS, int(d["paradigm"][i])),
                file=self._string(int(d["source_file"][i])),
                begin_line=int(d["begin_line"][i]),
                end_line=int(d["end_line"][i]),
            )
            for i in range(len(d["otf2_id"]))
        ]

    @property
    def region_names(self) -> list[str]:
        d = self._defs["regions"]
        return [self._string(int(i)) for i in d["name"]]

    @property
    def communicators(self) -> list[Communicator]:
        return [
            Communicator(
                index=i,
                name=c["name"],
                size=int(c["size"]),
                locations=c["locations"],
                parent=int(c["parent"]),
                is_self=bool(c["is_self"]),
            )
            for i, c in enumerate(self._defs["comms"])
        ]

    @property
    def system_tree(self) -> list[dict[str, Any]]:
        """System tree nodes: name, class and parent index (-1 for roots)."""
        return [dict(n) for n in self._defs["system_tree"]]

    @property
    def cart_topologies(self) -> list[CartTopology]:
        comms = self._defs["comms"]
        out = []
        for k in self._defs["cart_topologies"]:
            out.append(
                CartTopology(
                    name=k["name"],
                    comm=int(k["comm"]),
                    dim_names=tuple(k["dim_names"]),
                    dims=tuple(int(x) for x in k["dims"]),
                    periodic=tuple(bool(x) for x in k["periodic"]),
                    coords=k["coords"],
                    locations=comms[int(k["comm"])]["locations"],
                )
            )
        return out

    @property
    def cart_topology(self) -> CartTopology | None:
        """The application's Cartesian topology, if the trace defines one.

        Score-P also records a "Process x Thread" topology of the
        measurement system; an application topology is preferred.
        """
        tops = self.cart_topologies
        if not tops:
            return None
        app = [t for t in tops if not t.name.startswith("Process x Thread")]
        return (app or tops)[0]

    # ---- call paths ------------------------------------------------------

    def _refresh_callpaths(self) -> None:
        parent, region = self._core.callpaths()
        self._cp_parent = parent
        self._cp_region = region
        names = self.region_names
        full: list[str] = []
        for i in range(len(parent)):
            p = int(parent[i])
            own = names[int(region[i])]
            full.append(own if p < 0 else f"{full[p]}/{own}")
        self._cp_names = full
        # the program region, when it is the root of every call path
        roots = {int(region[i]) for i in range(len(parent)) if int(parent[i]) < 0}
        regions = self._defs["regions"]
        self._program_root = None
        if len(roots) == 1:
            r = roots.pop()
            if (name_of(REGION_ROLES, int(regions["role"][r])) == "artificial"
                    and name_of(PARADIGMS, int(regions["paradigm"][r])) == "measurement_system"):
                self._program_root = names[r]

    @property
    def program_region(self) -> str | None:
        """The name of the program region, the root of every call path as
        Score-P records it (its ProgramBegin) and Cube shows it; None when
        the trace has no program region."""
        return self._program_root

    @property
    def callpath_parent(self) -> np.ndarray:
        """Parent of every call path (-1 for roots)."""
        return self._cp_parent

    @property
    def callpath_region(self) -> np.ndarray:
        """Region index of every call path."""
        return self._cp_region

    @property
    def callpath_names(self) -> list[str]:
        """Region names joined by '/' from the root, e.g. 'app.x/main/MPI_Recv'
        (the root is the program region, :attr:`program_region`)."""
        return self._cp_names

    def callpath_index(self, callpath: int | str) -> int:
        """Index of a call path given by index, full name or unique suffix such as
        ``"main/MPI_Recv"`` (as :meth:`AnalysisResult.callpath_index`)."""
        from . import _callpaths

        if isinstance(callpath, (int, np.integer)) and not isinstance(callpath, bool):
            if not 0 <= int(callpath) < len(self._cp_names):
                raise IndexError(f"call path {callpath} out of range ({len(self._cp_names)} call paths)")
            return int(callpath)
        return _callpaths.resolve(self._cp_names, callpath, self._program_root)

    # ---- events ----------------------------------------------------------

    def load(self, locations: Iterable[int] | None = None, progress: Any = "auto",
             threads: int | str = "auto") -> "Trace":
        """Reads the events of the given locations (all by default).

        Only those locations' event files are opened.  `progress`: see
        :mod:`waitscope.progress`.  ``threads=N`` reads with N threads of
        this process, each with its own OTF2 reader over a contiguous block
        of the locations; ``"auto"`` (the default) uses one per core this
        process may run on (its CPU affinity: one under ``taskset -c 0`` or
        an ``mpiexec`` that binds each process to a core), but leaves each
        at least 250,000 events to read.  The store is
        the same as with one thread, column for column, and so is an error
        (the first failing location in order).
        """
        locs = None if locations is None else np.asarray(list(locations), dtype=np.int64)
        per_location = self._defs["locations"]["n_records"]
        records = int(np.sum(per_location if locs is None else per_location[locs]))
        n_locations = (len(locs) if locs is not None else 0) or self.n_locations
        n_threads = _check_threads(threads, n_locations, None, n_events=records)
        with Reporting(progress) as callback:
            self._core.load(locs, callback, n_threads)
        self._defs = self._core.definitions()
        self._refresh_callpaths()
        return self

    @property
    def loaded_locations(self) -> np.ndarray:
        return np.flatnonzero(self._defs["locations"]["loaded"])

    @property
    def n_events(self) -> int:
        """Number of events stored over all loaded locations."""
        return self._core.n_events

    def event_counts(self) -> np.ndarray:
        """Events stored per location (0 where not loaded)."""
        return self._defs["locations"]["n_events"].copy()

    def events(self, location: int) -> Events:
        """The event columns of one location (see :class:`Events`)."""
        return Events(self, location, self._core.events(int(location)))

    def messages(self, location: int) -> dict[str, np.ndarray]:
        """Point-to-point message records of a location.

        Columns: event, time, kind ('send', 'isend', 'recv', 'irecv'),
        peer (rank in the communicator), partner (location index), comm,
        tag, bytes.
        """
        ev = self._core.events(int(location))
        events = ev["msg_event"]
        comms = self._defs["comms"]
        peer = ev["msg_peer"].astype(np.int64)
        comm = ev["msg_comm"].astype(np.int64)
        partner = np.full(len(peer), -1, dtype=np.int64)
        for c in np.unique(comm):
            sel = comm == c
            info = comms[int(c)]
            if info["is_self"]:
                partner[sel] = int(location)
            else:
                partner[sel] = info["locations"][peer[sel]]
        kinds = np.array([EVENT_KINDS[int(k)] for k in ev["kind"][events]], dtype=object)
        return {
            "event": events,
            "time": ev["time"][events],
            "kind": kinds,
            "peer": peer,
            "partner": partner,
            "comm": comm,
            "tag": ev["msg_tag"],
            "bytes": ev["msg_bytes"],
        }

    def collectives(self, location: int) -> dict[str, np.ndarray]:
        """Collective operation records (at MpiCollectiveEnd) of a location."""
        ev = self._core.events(int(location))
        events = ev["coll_event"]
        root = ev["coll_root"].astype(np.int64)
        root[root == 0xFFFFFFFF] = -1
        return {
            "event": events,
            "time": ev["time"][events],
            "op": np.array([name_of(COLLECTIVE_OPS, int(o)) for o in ev["coll_op"]], dtype=object),
            "comm": ev["coll_comm"].astype(np.int64),
            "root": root,
            "sent": ev["coll_sent"],
            "received": ev["coll_received"],
        }

    def thread_events(self, location: int) -> dict[str, np.ndarray]:
        """Thread records (OpenMP and POSIX threads) of a location.

        Columns: event, time, kind ('thread_fork', 'thread_team_begin',
        'thread_acquire_lock', ...), comm (the thread team or contingent,
        -1 for none), model (paradigm of forks, joins and locks), a (the
        requested threads of a fork, the lock id, or the creating thread of
        a task), b (the acquisition order of a lock, a task's generation
        number, or a thread's sequence count), as OTF2 defines them.
        """
        ev = self._core.events(int(location))
        events = ev["thr_event"]
        comm = ev["thr_comm"].astype(np.int64)
        comm[comm == 0xFFFFFFFF] = -1
        return {
            "event": events,
            "time": ev["time"][events],
            "kind": np.array([EVENT_KINDS[int(k)] for k in ev["kind"][events]], dtype=object),
            "comm": comm,
            "model": np.array([name_of(PARADIGMS, int(m)) if m else "" for m in ev["thr_model"]], dtype=object),
            "a": ev["thr_a"],
            "b": ev["thr_b"],
        }

    def comm_matrix(self, kind: str = "bytes", window: Sequence[float] | None = None,
                    collectives: bool = False) -> np.ndarray:
        """Sender x receiver matrix of the point-to-point messages, indexed by rank.

        ``kind="bytes"`` (the bytes the send records carry) or ``"count"``
        (number of messages).  `window` = (start, end) in seconds keeps the
        messages sent inside it; ``collectives=True`` adds the collectives
        by their recorded bytes (split as :mod:`waitscope.comm` describes).
        In the parallel mode every process must call; the counts of all
        processes' locations are summed and every process gets them.
        """
        from .comm import comm_matrix

        return comm_matrix(self, kind=kind, window=window, collectives=collectives)

    def message_sizes(self, window: Sequence[float] | None = None) -> np.ndarray:
        """Histogram of point-to-point message sizes in classes floor(log2 bytes).

        A structured array: log2_class, low, high (the class's bytes are
        [low, high)), count, bytes; class -1 holds the empty messages.
        In the parallel mode every process must call (see :meth:`comm_matrix`).
        """
        from .comm import message_sizes

        return message_sizes(self, window=window)

    def to_pandas(self, location: int | Sequence[int] | None = None) -> "pandas.DataFrame":
        """Events as a pandas DataFrame, for one location, several, or all loaded.

        Columns: location, rank, time, event, callpath, region, partner,
        comm, tag, bytes, op, root (NaN/-1/None where not applicable).
        """
        from . import _optional

        pd = _optional.require("pandas", "Trace.to_pandas")
        if location is None:
            locs = [int(x) for x in self.loaded_locations]
        elif np.ndim(location) == 0:
            locs = [int(location)]  # type: ignore[arg-type]
        else:
            locs = [int(x) for x in location]  # type: ignore[union-attr]
        ranks = self._defs["locations"]["rank"]
        region_names = np.array(self.region_names, dtype=object)
        cp_names = np.array(self.callpath_names, dtype=object)
        frames = []
        for loc in locs:
            ev = self.events(loc)
            n = len(ev)
            cps = ev.callpath
            partner = np.full(n, -1, dtype=np.int64)
            comm = np.full(n, -1, dtype=np.int64)
            tag = np.full(n, -1, dtype=np.int64)
            nbytes = np.full(n, -1, dtype=np.int64)
            op = np.full(n, None, dtype=object)
            root = np.full(n, -1, dtype=np.int64)
            m = self.messages(loc)
            partner[m["event"]] = m["partner"]
            comm[m["event"]] = m["comm"]
            tag[m["event"]] = m["tag"]
            nbytes[m["event"]] = m["bytes"].astype(np.int64)
            c = self.collectives(loc)
            comm[c["event"]] = c["comm"]
            op[c["event"]] = c["op"]
            root[c["event"]] = c["root"]
            valid = cps >= 0
            cp_col = np.full(n, None, dtype=object)
            reg_col = np.full(n, None, dtype=object)
            cp_col[valid] = cp_names[cps[valid]]
            reg_col[valid] = region_names[self._cp_region[cps[valid]]]
            frames.append(
                pd.DataFrame(
                    {
                        "location": np.full(n, loc, dtype=np.int64),
                        "rank": np.full(n, int(ranks[loc]), dtype=np.int64),
                        "time": np.asarray(ev.time),
                        "event": pd.Categorical(ev.kind_names()),
                        "callpath": cp_col,
                        "region": reg_col,
                        "partner": partner,
                        "comm": comm,
                        "tag": tag,
                        "bytes": nbytes,
                        "op": op,
                        "root": root,
                    }
                )
            )
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)

    def summary(self) -> str:
        """A short text summary: locations, regions, call paths, events."""
        lines = [f"trace {self.path}"]
        clock = self.clock
        lines.append(f"  clock: {clock['resolution']} ticks/s, length {self.run_length:.6f} s")
        lines.append(f"  locations: {self.n_locations}  regions: {len(self.region_names)}"
                     f"  call paths: {len(self.callpath_names)}  events: {self.n_events}")
        counts = self.event_counts()
        locations = self.locations
        threaded = any(loc.thread for loc in locations)
        for loc in locations[:16]:
            where = f"rank {loc.rank}, thread {loc.thread}" if threaded else f"rank {loc.rank}"
            lines.append(
                f"  location {loc.index}: {where}, {loc.process} / {loc.name}: "
                f"{int(counts[loc.index])} events"
            )
        if self.n_locations > 16:
            lines.append(f"  ... {self.n_locations - 16} more locations")
        for top in self.cart_topologies:
            shape = " x ".join(f"{n} {name}" if name else str(n) for n, name in zip(top.dims, top.dim_names))
            lines.append(f"  topology {top.name!r}: {shape}")
        lines.append("  call paths:")
        for name in self.callpath_names[:40]:
            lines.append(f"    {name}")
        if len(self.callpath_names) > 40:
            lines.append(f"    ... {len(self.callpath_names) - 40} more")
        return "\n".join(lines)

    def analyze(
        self,
        delay_model: str | None = None,
        critical_path: bool = False,
        delay_records: bool = False,
        partition: Sequence[int] | np.ndarray | None = None,
        progress: Any = "auto",
        schedule_seed: int = 0,
        keep_share: bool = False,
        wait_records: bool = False,
        clock_correction: str | None = None,
        window: tuple[float, float] | None = None,
        threads: int | str = "auto",
        reproduce_scalasca: bool = False,
    ) -> "AnalysisResult | None":
        """Replays the trace and returns the wait-state analysis.

        ``delay_model`` ("proportional" or "wait-first") adds the delay
        analysis; ``critical_path=True`` adds the critical-path analysis.
        ``delay_records=True`` keeps every delay calculation
        (:attr:`AnalysisResult.delay_records`), ``wait_records=True`` every
        wait-state instance (:attr:`AnalysisResult.wait_states`).
        The C core releases the GIL while it runs; Ctrl-C stops it.
        ``schedule_seed`` permutes the order in which the in-process
        scheduler visits locations (the results do not depend on it).
        ``progress`` reports the replays: ``"auto"`` (a bar in Jupyter when
        the work takes more than a second), ``True``/``"bar"``, ``"text"``,
        ``False``/``None`` or a callable ``f(stage, done, total)``; see
        :mod:`waitscope.progress` (in the parallel mode rank 0 reports for all).

        In the parallel mode (``open(..., comm=...)``) every process of the
        communicator must call this; the complete result is returned on
        rank 0 and None elsewhere, unless ``keep_share=True``: then every
        process returns its own share (the metrics of its locations, its
        pieces of the critical path, delay records and wait-state records).

        ``clock_correction="clc"`` analyzes the timestamps corrected with
        the controlled logical clock (see :meth:`correct_clocks`) and leaves
        the trace's own timestamps unchanged.

        ``window=(start, end)`` (seconds, as the trace's event times) reports
        the part of the run inside the window: times, wait states, delay
        costs and the critical path are clipped to it, visits and counts
        are those of the events in ``start <= t < end``; the replays still
        see the whole trace, so causes outside the window explain waiting
        inside it (docs/metrics.md, "Time windows").

        ``threads=N`` replays with N threads of this process, each over a
        contiguous block of locations (as the parallel mode distributes
        them over processes), connected by an in-memory transport; the
        result is the same, bit for bit, as with one thread.
        ``threads="auto"`` (the default) uses one thread per core this
        process may run on (its CPU affinity), but leaves each at least 16
        locations and 250,000 events: with fewer, almost every
        synchronization is a hand-off between threads, which costs about
        what it gains (a 2-rank trace gains nothing from a second thread).
        It stays with fewer threads when 80 % of the memory the system has
        available would not hold each further thread's state (about 9
        bytes per event each, on top of the 22 of one thread), with one
        thread when ``delay_records`` or
        ``wait_records`` are asked for (their order follows the threads'
        schedule; with one thread it is always the same), and in the
        parallel mode (there, use more processes).

        ``reproduce_scalasca=True`` gives the values the Scalasca 2.6 trace
        analyzer reports, the four defects of its analysis that
        docs/metrics.md documents included (a critical path longer than the
        run where clocks disagree, lost long-term delay costs at
        collectives, wrong-order Late Senders charged to another call path,
        a negative completion time after a Late Receiver): for comparing
        with Scalasca's reports, not for analysing a program.
        """
        from .result import AnalysisResult

        _check_flags(critical_path=critical_path, delay_records=delay_records, keep_share=keep_share,
                     wait_records=wait_records, reproduce_scalasca=reproduce_scalasca)
        _check_delay_model(delay_model)
        if isinstance(schedule_seed, (bool, np.bool_)) or not isinstance(schedule_seed, (int, np.integer)):
            raise TypeError(f"schedule_seed must be a non-negative integer, got {schedule_seed!r}")
        if schedule_seed < 0:
            raise ValueError(f"schedule_seed must be a non-negative integer, got {schedule_seed}")
        part = None if partition is None else _check_partition(partition, self.n_locations)
        win = _check_window(window)
        if threads == "auto" and (delay_records or wait_records):
            threads = 1  # records in one order, run after run
        n_threads = _check_threads(threads, self.n_locations, self._comm, AUTO_LOCATIONS_PER_THREAD,
                                   n_events=self.n_events, bytes_per_event=AUTO_ANALYSIS_BYTES)
        if clock_correction is not None:
            _check_clock_correction(clock_correction, self._comm)
            kept = _core.correct_clocks(self._core, clock_correction, keep_original=True)["original"]
            try:
                return self.analyze(delay_model=delay_model, critical_path=critical_path,
                                    delay_records=delay_records, partition=partition, progress=progress,
                                    schedule_seed=schedule_seed, wait_records=wait_records, window=window,
                                    threads=n_threads, reproduce_scalasca=reproduce_scalasca)
            finally:
                _core.set_times(self._core, kept)
        if self._comm is not None:
            from ._parallel import mpi_module

            with Reporting(progress, self._comm, self.n_events) as callback:
                raw = mpi_module().analyze(self._core, self._comm, self._owner, delay_model=delay_model,
                                           critical_path=critical_path, records=delay_records, partition=part,
                                           progress=callback, keep_share=keep_share, wait_records=wait_records,
                                           window=win, scalasca_compat=reproduce_scalasca)
            if raw is not None:
                raw["window"] = win
            return None if raw is None else AnalysisResult(self, raw)
        with Reporting(progress) as callback:
            raw = _core.analyze(self._core, delay_model=delay_model, critical_path=critical_path,
                                records=delay_records, partition=part, progress=callback,
                                schedule_seed=int(schedule_seed), wait_records=wait_records, window=win,
                                threads=n_threads, scalasca_compat=reproduce_scalasca)
        raw["window"] = win
        return AnalysisResult(self, raw)

    def correct_clocks(self, method: str = "clc") -> dict[str, float]:
        """Restores the clock condition of the loaded events in place.

        ``"clc"``: the controlled logical clock (Rabenseifner 1997, with the
        collective operations of Becker et al. 2009).  A receive must not
        complete before its send started, a collective member must not
        leave before the members it needs entered (see
        :attr:`AnalysisResult.clock_violations`).  Timestamps only move
        forward, jumps are amortized before and after, the order on every
        location is kept, and a trace without violations is not changed.
        Returns ``n_jumps`` (events moved to restore the condition),
        ``n_moved`` (events changed at all) and ``max_shift`` (seconds).
        Needs every location loaded in this process (not the parallel mode).
        """
        _check_clock_correction(method, self._comm)
        stats = _core.correct_clocks(self._core, method)
        return {k: stats[k] for k in ("n_jumps", "n_moved", "max_shift")}

    def simulate(self, balance: str | Sequence[str] | None = None, scale: dict[str, float] | None = None,
                 network: str | tuple[float, float] = "recorded", mode: str = "model", progress: Any = "auto",
                 **realtime: Any) -> "Trace":
        """A new trace with the timestamps this one would have under a hypothesis.

        ``balance``: a region or call-path name (or a list): every rank's
        i-th visit of that call path gets the mean work of the i-th visits
        (work: the non-MPI time inside the visit), so the total stays.
        ``scale``: ``{region or call path: speed-up}`` divides its time by
        the factor (2: twice as fast; of an MPI call: its non-waiting time).  ``network``: ``"recorded"``
        keeps each MPI operation's recorded non-waiting time, ``"ideal"``
        makes every transfer instantaneous, ``(latency_s, bandwidth_Bps)``
        costs latency + bytes / bandwidth per transfer.  Every event,
        message, request and collective stays as recorded; only times
        change, following MPI's semantics (docs/simulate.md).  The result
        is an in-memory trace that ``analyze``, ``write`` and the plots
        accept; in the parallel mode every process calls this and gets its
        share, again a parallel-mode trace.  ``mode="realtime"`` re-enacts
        the changed trace with real MPI operations under ``mpiexec`` and
        records it (:mod:`waitscope.reenact`).
        """
        from .simulate import simulate

        return simulate(self, balance=balance, scale=scale, network=network, mode=mode, progress=progress,
                        **realtime)

    @property
    def simulation(self) -> dict[str, Any] | None:
        """For a trace made by :meth:`simulate`: its hypothesis and counts
        (``sync_sends``: sends treated as synchronous, ``balanced_visits``)."""
        return self._simulation

    def write(self, path: str | os.PathLike[str], progress: Any = "auto") -> str:
        """Writes the loaded trace as an OTF2 archive; returns the anchor path."""
        target = os.fspath(path)
        with Reporting(progress) as callback:
            self._core.write(target, callback)
        return target if target.endswith(".otf2") else os.path.join(target, "traces.otf2")

    def __repr__(self) -> str:
        return f"<waitscope.Trace {self.path!r}: {self.n_locations} locations, {self.n_events} events>"


DELAY_MODELS = ("proportional", "wait-first")
"""The values of ``analyze(delay_model=...)`` besides None."""


def _check_flags(**flags: Any) -> None:
    """TypeError naming the argument unless each flag is True or False."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}")


def _check_window(window: Any) -> tuple[float, float] | None:
    """The analysis window as two floats start < end, or None."""
    if window is None:
        return None
    if isinstance(window, (str, bytes)) or not hasattr(window, "__len__") or len(window) != 2:
        raise TypeError(f"window must be None or (start, end) in seconds, got {window!r}")
    values = []
    for name, value in zip(("start", "end"), window):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"window {name} must be a number of seconds, got {value!r}")
        if not np.isfinite(value):
            raise ValueError(f"window {name} must be finite, got {value!r}")
        values.append(float(value))
    if not values[0] < values[1]:
        raise ValueError(f"window start ({values[0]!r}) must be before its end ({values[1]!r})")
    return values[0], values[1]


def _check_delay_model(delay_model: Any) -> None:
    if delay_model is None:
        return
    if not isinstance(delay_model, str):
        raise TypeError(f"delay_model must be None, 'proportional' or 'wait-first', got {delay_model!r} "
                        f"({type(delay_model).__name__})")
    if delay_model not in DELAY_MODELS:
        raise ValueError(f"delay_model must be None, 'proportional' or 'wait-first', got {delay_model!r}")


def _check_partition(partition: Any, n_locations: int) -> np.ndarray:
    """The partition as int32, one integer in 0..n_locations-1 per location."""
    values = np.asarray(partition)
    if values.ndim != 1 or len(values) != n_locations:
        raise ValueError(f"partition needs one entry per location ({n_locations}), got shape {values.shape}")
    if values.dtype.kind not in "iu":
        example = f" such as {values.flat[0].item()!r}" if values.size else ""
        raise TypeError(f"partition values must be integers (partition numbers 0..{n_locations - 1}), got "
                        f"{values.dtype} values{example}")
    bad = np.flatnonzero((values < 0) | (values >= max(n_locations, 1)))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"partition values must lie in 0..{n_locations - 1} (one partition number per "
                         f"location), got {int(values[i])} for location {i}")
    return values.astype(np.int32)


def _check_clock_correction(method: str, comm: Any) -> None:
    """The correction method must be known, and every location's events in this process."""
    if method != "clc":
        raise ValueError(f"clock_correction: unknown method {method!r} (known: 'clc')")
    if comm is not None:
        raise ValueError("clock_correction: the correction needs every location's events in one process; "
                         "it is not available in the parallel mode (open the trace without comm)")


# threads="auto" in the analysis gives each thread at least this many
# locations: with fewer, nearly every synchronization is a hand-off between
# threads, and two threads replay the 2-location barrier trace of
# bench/bench_decode.py no faster than one (the full analysis: 1.00-1.24 s
# against 0.79-1.07 s; 1024 locations: 1.6-1.75 x faster).
AUTO_LOCATIONS_PER_THREAD = 16
#: ``threads="auto"``: at least this many events per thread
AUTO_EVENTS_PER_THREAD = 250_000
#: the analysis's peak above the store, bytes per event: with one thread,
#: and for each further thread (its mailboxes over all messages during
#: pass 1, and its buffers; the 2,048-rank stencil of bench/bench_large.py:
#: 14.0 with one thread, 14.8 with two; the 1,024-rank stencil of
#: bench_memory.py: 15.2 with one)
AUTO_ANALYSIS_BYTES = (16, 4)
#: the share of the available memory ``threads="auto"`` plans to use
AUTO_MEMORY_SHARE = 0.8


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        with builtins.open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system
    has one (a process that ``taskset`` or ``mpiexec`` bound to one core
    gets one thread), else ``os.cpu_count()``."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13 on: the affinity
    if count is not None:
        return count() or 1
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _check_threads(threads: Any, n_locations: int, comm: Any, auto_per_thread: int = 1,
                   n_events: int | None = None, bytes_per_event: tuple[int, int] | None = None) -> int:
    """The number of threads ``threads`` asks for (see Trace.analyze and
    Trace.load); ``"auto"`` means one per usable core, at least
    ``auto_per_thread`` locations and (if ``n_events`` is given)
    AUTO_EVENTS_PER_THREAD events per thread, and, with
    ``bytes_per_event`` (one thread's bytes per event, each further
    thread's), no more threads than the available memory holds; one in
    the parallel mode (``comm``)."""
    if isinstance(threads, str):
        if threads != "auto":
            raise ValueError(f"threads must be a positive integer or 'auto', got {threads!r}")
        if comm is not None:
            return 1
        n = min(_usable_cores(), max(1, n_locations // auto_per_thread))
        if n_events is not None:
            n = min(n, max(1, n_events // AUTO_EVENTS_PER_THREAD))
        if bytes_per_event is not None and n_events is not None and n > 1:
            available = _available_memory()
            first, each = bytes_per_event
            while (available is not None and n > 1
                   and n_events * (first + each * (n - 1)) > AUTO_MEMORY_SHARE * available):
                n -= 1
    elif isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be a positive integer or 'auto', got {threads!r}")
    else:
        n = int(threads)
        if n < 1:
            raise ValueError(f"threads must be a positive integer or 'auto', got {n}")
    n = max(1, min(n, n_locations, 2**31 - 1))
    if n > 1 and comm is not None:
        raise ValueError("threads > 1 is not available in the parallel mode (comm=...): use more processes")
    return n


def block_owners(n_locations: int, n_processes: int, groups: np.ndarray | None = None,
                 n_groups: int = 0) -> np.ndarray:
    """The process holding each location: contiguous blocks of (nearly) equal
    size; with `groups` (the location group of every location) when there
    are fewer groups (`n_groups`) than locations (the threads of MPI+OpenMP
    processes), by group, so that a process's threads stay together (as the
    C core's ws_block_owners)."""
    if groups is not None and 0 < n_groups < n_locations:
        groups = np.asarray(groups, dtype=np.int64)
        if np.all((groups >= 0) & (groups < n_groups)):
            return ((groups * n_processes) // n_groups).astype(np.uint32)
    locs = np.arange(n_locations, dtype=np.int64)
    return ((locs * n_processes) // max(n_locations, 1)).astype(np.uint32)


def _agree(comm: Any, message: str | None) -> None:
    """Raises the same TraceError on every process if any of them failed."""
    messages = comm.allgather(message)
    for rank, text in enumerate(messages):
        if text is not None:
            raise _core.TraceError(text if rank == comm.Get_rank() else f"analysis process {rank}: {text}")


def _open_parallel(path: str, comm: Any, progress: Any, threads: int | str = "auto") -> Trace:
    from ._parallel import mpi_module

    _mpi = mpi_module()  # raises ParallelModeUnavailable naming the command that fixes it
    core, error = None, None
    try:
        core = _core.open(path)
    except _core.TraceError as exc:
        error = str(exc)
    _agree(comm, error)
    defs = core.definitions()
    owner = block_owners(core.n_locations, comm.Get_size(), defs["locations"]["group"],
                         len(defs["location_groups"]))
    mine = np.flatnonzero(owner == comm.Get_rank())
    records = int(np.sum(defs["locations"]["n_records"][mine]))
    # "auto": one thread, as many processes as cores already share the work
    n_threads = 1 if threads == "auto" else _check_threads(threads, max(len(mine), 1), None, n_events=records)
    with Reporting(progress, comm, records, synchronized=False) as callback:
        try:
            if len(mine):
                core.load(mine.astype(np.int64), callback, n_threads)
        except _core.TraceError as exc:
            error = str(exc)
    _agree(comm, error)
    _mpi.unify_callpaths(core, comm, owner)
    return Trace(core, comm=comm, owner=owner)


def _check_complete(trace: Trace, allow_partial: bool) -> None:
    cut = trace.cut_short_ranks
    if cut and not allow_partial:
        ranks = ", ".join(str(r) for r in cut)
        raise _core.TraceError(
            f"{trace.path}: the run was cut short: rank{'s' if len(cut) > 1 else ''} {ranks} never reached "
            "MPI_Finalize (crash, MPI_Abort or killed), so the trace ends early there; "
            "open(..., allow_partial=True) reads it anyway"
        )


def open(path: str | os.PathLike[str], locations: Iterable[int] | None = None, comm: Any = None,
         load: bool = True, progress: Any = "auto", clock_correction: str | None = None,
         allow_partial: bool = False, threads: int | str = "auto") -> "Trace | Profile":
    """Opens an OTF2 trace (anchor file ``traces.otf2`` or experiment directory).

    A wait-state profile opens too (``profile.json``, or a directory with
    one and no trace, as ``waitscope profile`` writes it): the result is
    then a :class:`waitscope.Profile`, whose ``analyze()`` gives its
    wait-state estimates and ``summary()`` describes it (see
    :func:`waitscope.profile.profile_path`).

    Reads the definitions and, unless ``load=False``, the events of the
    given locations (all by default).

    With ``comm`` (an mpi4py communicator, e.g. ``MPI.COMM_WORLD``) every
    process of the communicator reads the definitions and the events of
    its own block of locations only; :meth:`Trace.analyze` then replays
    with MPI messages between the processes.

    ``threads=N`` reads the events with N threads of this process, each
    with its own OTF2 reader over a contiguous block of the locations
    (``"auto"``, the default: one per core this process may run on, its
    CPU affinity, with at least 250,000 events each; with ``comm``,
    threads per process, one with ``"auto"``);
    the store is the same as with one thread, column for column.

    `progress` reports the loading (see :mod:`waitscope.progress`).
    ``clock_correction="clc"`` corrects the timestamps of the loaded
    events with the controlled logical clock (:meth:`Trace.correct_clocks`);
    it needs every location loaded and is not available with ``comm``.

    A trace of a run that was cut short (some ranks never reached
    MPI_Finalize: a crash, MPI_Abort) is refused with a TraceError naming
    those ranks unless ``allow_partial=True``; :attr:`Trace.cut_short_ranks`
    names them.  A directory the interposition library left without an
    archive (the run died before MPI_Finalize) is unified first.

    Raises :class:`waitscope.TraceError` naming the file and the problem.
    """
    _check_threads(threads, 2**31 - 1, None)  # a bad value fails before any file (or process) is involved
    from .profile import open_profile, profile_path

    profile = profile_path(path)
    if profile is not None:
        for name, value, default in (("comm", comm, None), ("locations", locations, None),
                                     ("clock_correction", clock_correction, None)):
            if value is not default:
                raise ValueError(f"{name}: {profile} is a wait-state profile, which has no events to distribute "
                                 f"or correct; open it without {name}")
        return open_profile(profile)
    if clock_correction is not None:
        _check_clock_correction(clock_correction, comm)
        if not load or locations is not None:
            raise ValueError("clock_correction needs the events of every location (load=True, locations=None)")
    from . import pmpi

    if comm is None and os.path.isdir(path) and pmpi.pending(path) and not os.path.exists(os.path.join(path, "traces.otf2")):
        pmpi.finish_trace(path)
    if comm is not None:
        trace = _open_parallel(os.fspath(path), comm, progress, threads)
        _check_complete(trace, allow_partial)
        return trace
    core = _core.open(os.fspath(path))
    trace = Trace(core)
    _check_complete(trace, allow_partial)
    if load:
        trace.load(locations, progress, threads)
    if clock_correction is not None:
        trace.correct_clocks(clock_correction)
    return trace
