"""Cube4 reports (``.cubex``) of an analysis result, for CubeGUI and pycubexr.

:func:`write_cube` (or :meth:`waitscope.AnalysisResult.to_cube`) writes the
result cube [metric, call path, location] as a Cube4 report, pure Python:
the standard library and NumPy, no Cube library needed.

Format decisions
----------------
A ``.cubex`` file is a tar archive (ustar headers) holding

``anchor.xml``
    The metadata: ``<cube version="4.4">``, report attributes, the metric
    tree, the program dimension (regions, then the call tree of cnodes)
    and the system dimension (system tree nodes, location groups =
    processes with their MPI rank, Cube type ``process``; locations =
    threads numbered within their process, type ``thread``: every OpenMP
    thread of a hybrid trace, as Scalasca's reports have them), followed
    by the Cartesian topologies of the trace (Score-P's "Process x Thread"
    among them).
``<id>.index`` and ``<id>.data`` for every metric id
    The index file is ``CUBEX.INDEX``, a uint32 endianness mark (1), a
    uint16 version (0), a uint8 format (1 = sparse), a uint32 row count and
    that many uint32 row numbers, ascending.  The data file is
    ``CUBEX.DATA`` followed by one row per listed row number, each row
    holding one value per location in location-id order.  Everything is
    little-endian (the mark tells readers so).  Rows whose values are all
    zero are left out; a metric that is zero everywhere keeps its first row
    (pycubexr needs a non-empty index).

Metric semantics.  Cube4 stores every metric *inclusive along the metric
tree*: the values of a metric contain its sub-metrics, and Cube computes
the exclusive value of a metric (what CubeGUI shows for an expanded metric)
by subtracting its children.  That is how waitscope holds its values too
(``mpi_latesender`` includes ``mpi_latesender_wo``), so they are stored
unchanged.  The metric ``type`` attribute of Cube4 refers to the *call
tree*: ``EXCLUSIVE`` says that the value of a cnode excludes its callees
and that inclusive values are sums over subtrees, which is again what the
cube holds.  Every metric is therefore written with ``type="EXCLUSIVE"``,
and pycubexr's ``cnode_values(cnode)`` returns exactly ``result.get(m)``
per call path while ``convert_to_inclusive=True`` gives
``result.inclusive(m)``.

Row numbers.  For an EXCLUSIVE metric a row number is the position of the
cnode in a depth-first pre-order walk of the call tree (children in the
order of the anchor file).  Cnode ids are assigned in that same order, so
row number = cnode id.  Call paths (``result.callpath_names``) are mapped
to cnodes by that walk; children keep the order of their call-path index.

Data types.  Metrics in seconds are ``DOUBLE``.  Counts (``occ``) and
byte metrics are ``UINT64`` when all their values are non-negative whole
numbers (as they always are), else ``DOUBLE``.

Ids.  Metrics, regions, cnodes, system tree nodes, location groups and
locations are numbered 0..n-1 in the order they appear in ``anchor.xml``
(pre-order), as Cube expects; region ids are the trace's region indices.
Location ids follow a walk of the system tree (a node's processes, each
with its threads, before its child nodes), and the columns of the data
rows follow the location ids.  Where the trace numbers its locations in
that order (``waitscope.synth``, single-node Score-P traces) location id =
location index; otherwise the columns are permuted to match.

Tar layout.  Cube's own tar reader (cubelib) expects a member whose size is
a multiple of 512 bytes to be followed by an extra, empty 512-byte block,
which standard tar does not write.  No member written here has such a size
(data and index files cannot; the anchor gets a trailing newline when it
would), so both readers find the same members.

Known limits of readers: pycubexr accepts only reports with one root of
the call tree and one root of the system tree (Cube itself accepts more).
"""

from __future__ import annotations

import io
import os
import struct
import tarfile
import time
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from .result import AnalysisResult

__all__ = ["write_cube", "CUBE_VERSION"]

CUBE_VERSION = "4.4"
"""Version written in ``<cube version=...>`` (the anchor syntax of Cube 4.4+)."""

INDEX_MARKER = b"CUBEX.INDEX"
DATA_MARKER = b"CUBEX.DATA"
INDEX_FORMAT_SPARSE = 1

_COUNT_UNITS = ("occ", "bytes")

# Region roles as Score-P and Scalasca spell them in Cube reports.
_ROLE_NAMES = {
    "coll_one2all": "one2all",
    "coll_all2one": "all2one",
    "coll_all2all": "all2all",
    "coll_other": "other collective",
    "file_io": "file io",
    "file_io_metadata": "file io metadata",
    "data_transfer": "data transfer",
    "task_wait": "taskwait",
    "task_untied": "untied task",
}

_PARADIGM_NAMES = {"measurement_system": "measurement"}

_LOCATION_TYPES = {"cpu_thread": "thread", "accelerator_stream": "gpu", "metric": "metric"}


def _esc(text: Any) -> str:
    """Text for XML content or a double-quoted attribute (no &apos;: not every reader knows it)."""
    s = str(text)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _role(name: str) -> str:
    return _ROLE_NAMES.get(name, name.replace("_", " "))


def _children(parent: Sequence[int]) -> tuple[list[int], dict[int, list[int]]]:
    """Roots and children (in index order) of a tree given by parent indices."""
    roots: list[int] = []
    kids: dict[int, list[int]] = {}
    n = len(parent)
    for i in range(n):
        p = int(parent[i])
        if 0 <= p < n and p != i:
            kids.setdefault(p, []).append(i)
        else:
            roots.append(i)
    return roots, kids


def _preorder(roots: Iterable[int], kids: dict[int, list[int]]) -> list[int]:
    order: list[int] = []
    stack = list(reversed(list(roots)))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(kids.get(node, [])))
    return order


class _Xml:
    """A line-based writer for the anchor (Cube's scanner wants double quotes)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode("utf-8")


# ---- the system dimension ------------------------------------------------------


class _System:
    """System tree nodes, location groups and the location order of the report."""

    def __init__(self, trace: Any, n_locations: int):
        defs = getattr(trace, "_defs", None) or {}
        locs = defs.get("locations", {})
        self.n_locations = n_locations
        self.loc_rank = np.asarray(locs.get("rank", np.full(n_locations, -1)), dtype=np.int64)[:n_locations]
        self.loc_thread = np.asarray(locs.get("thread", np.zeros(n_locations)), dtype=np.int64)[:n_locations]
        loc_group = np.asarray(locs.get("group", np.full(n_locations, -1)), dtype=np.int64)[:n_locations]
        try:
            locations = list(trace.locations)[:n_locations]
            self.loc_name = [loc.name for loc in locations]
            self.loc_type = [loc.type for loc in locations]
        except Exception:  # pragma: no cover - defensive
            self.loc_name = [""] * n_locations
            self.loc_type = ["cpu_thread"] * n_locations
        groups = [dict(g) for g in defs.get("location_groups", [])]
        nodes = [dict(n) for n in defs.get("system_tree", [])]

        # every location needs a process and every process a system tree node
        fallback_node = -1

        def need_fallback_node() -> int:
            nonlocal fallback_node
            if fallback_node < 0:
                nodes.append({"name": "machine", "class": "machine", "parent": -1})
                fallback_node = len(nodes) - 1
            return fallback_node

        extra_groups: dict[int, int] = {}
        for loc in range(n_locations):
            g = int(loc_group[loc])
            if not 0 <= g < len(groups):
                rank = int(self.loc_rank[loc])
                if rank not in extra_groups:
                    groups.append({"name": f"Process {rank}" if rank >= 0 else "Process",
                                   "system_node": -1})
                    extra_groups[rank] = len(groups) - 1
                loc_group[loc] = extra_groups[rank]
        for g in groups:
            if not 0 <= int(g.get("system_node", -1)) < len(nodes):
                g["system_node"] = need_fallback_node()

        self.nodes = nodes
        self.groups = groups
        node_parent = [int(n.get("parent", -1)) for n in nodes]
        self.node_roots, self.node_kids = _children(node_parent)
        self.node_groups: dict[int, list[int]] = {}
        for gi, g in enumerate(groups):
            self.node_groups.setdefault(int(g["system_node"]), []).append(gi)
        self.group_locs: dict[int, list[int]] = {}
        for loc in range(n_locations):
            self.group_locs.setdefault(int(loc_group[loc]), []).append(loc)

        # the walk of the anchor: a node, its processes (with their
        # threads), then its child nodes; only processes with threads
        self.order: list[int] = []
        for node in _preorder(self.node_roots, self.node_kids):
            for gi in self.node_groups.get(node, []):
                self.order.extend(self.group_locs.get(gi, []))
        self.location_id = np.full(n_locations, -1, dtype=np.int64)
        self.location_id[self.order] = np.arange(len(self.order))

    def group_rank(self, gi: int) -> int:
        ranks = [int(self.loc_rank[loc]) for loc in self.group_locs.get(gi, [])]
        valid = [r for r in ranks if r >= 0]
        return valid[0] if valid else gi

    def write(self, xml: _Xml) -> None:
        ids = {"node": 0, "group": 0}

        def node(n: int) -> None:
            info = self.nodes[n]
            xml(f'<systemtreenode Id="{ids["node"]}">')
            ids["node"] += 1
            xml(f"<name>{_esc(info.get('name', ''))}</name>")
            xml(f"<class>{_esc(info.get('class', '') or 'node')}</class>")
            for gi in self.node_groups.get(n, []):
                locs = self.group_locs.get(gi, [])
                if not locs:
                    continue  # Cube wants at least one location per process
                xml(f'<locationgroup Id="{ids["group"]}">')
                ids["group"] += 1
                xml(f"<name>{_esc(self.groups[gi].get('name', ''))}</name>")
                xml(f"<rank>{self.group_rank(gi)}</rank>")
                xml("<type>process</type>")
                for loc in locs:
                    name = self.loc_name[loc] or f"Thread {int(self.loc_thread[loc])}"
                    xml(f'<location Id="{int(self.location_id[loc])}">')
                    xml(f"<name>{_esc(name)}</name>")
                    xml(f"<rank>{max(int(self.loc_thread[loc]), 0)}</rank>")
                    xml(f"<type>{_LOCATION_TYPES.get(self.loc_type[loc], 'thread')}</type>")
                    xml("</location>")
                xml("</locationgroup>")
            for child in self.node_kids.get(n, []):
                node(child)
            xml("</systemtreenode>")

        for root in self.node_roots:
            node(root)


# ---- the report ----------------------------------------------------------------


def _metric_dtype(unit: str, values: np.ndarray) -> str:
    """UINT64 for counts and bytes that are whole numbers, else DOUBLE."""
    if unit not in _COUNT_UNITS:
        return "DOUBLE"
    whole = np.isfinite(values).all() and (values >= 0).all() and (values < 2.0**63).all() \
        and (np.floor(values) == values).all()
    return "UINT64" if whole else "DOUBLE"


def _index_bytes(rows: np.ndarray) -> bytes:
    return (INDEX_MARKER + struct.pack("<IHB", 1, 0, INDEX_FORMAT_SPARSE)
            + struct.pack("<I", len(rows)) + rows.astype("<u4").tobytes())


def _data_bytes(values: np.ndarray, dtype: str) -> bytes:
    if dtype == "UINT64":
        body = np.rint(values).astype("<u8")
    else:
        body = values.astype("<f8")
    return DATA_MARKER + np.ascontiguousarray(body).tobytes()


def _add(tar: tarfile.TarFile, name: str, payload: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    info.mtime = int(mtime)
    info.mode = 0o644
    info.uname = info.gname = "waitscope"
    tar.addfile(info, io.BytesIO(payload))


def _anchor(result: "AnalysisResult", metric_order: list[int], metric_kids: dict[int, list[int]],
            metric_roots: list[int], dtypes: dict[int, str], cp_order: list[int],
            cp_kids: dict[int, list[int]], cp_roots: list[int], system: _System) -> bytes:
    trace = result._trace
    xml = _Xml()
    xml('<?xml version="1.0" encoding="UTF-8"?>')
    xml(f'<cube version="{CUBE_VERSION}">')
    from . import __version__

    attrs = [("creator", f"waitscope {__version__}"), ("trace", getattr(trace, "path", ""))]
    if result.delay_model:
        attrs.append(("delay model", result.delay_model))
    violations = int(np.sum(result.clock_violations)) if result.clock_violations is not None else 0
    attrs.append(("clock condition violations", str(violations)))
    for key, value in attrs:
        xml(f'<attr key="{_esc(key)}" value="{_esc(value)}"/>')
    xml("<doc>")
    xml("<mirrors>")
    xml("</mirrors>")
    xml("</doc>")

    # metrics: ids in pre-order of the metric tree
    metric_id = {m: i for i, m in enumerate(metric_order)}
    xml("<metrics>")

    def metric(m: int) -> None:
        info = result.metrics[m]
        xml(f'<metric id="{metric_id[m]}" type="EXCLUSIVE">')
        xml(f"<disp_name>{_esc(info.name)}</disp_name>")
        xml(f"<uniq_name>{_esc(info.id)}</uniq_name>")
        xml(f"<dtype>{dtypes[m]}</dtype>")
        xml(f"<uom>{_esc(info.unit)}</uom>")
        xml("<url></url>")
        xml(f"<descr>{_esc(info.description)}</descr>")
        for child in metric_kids.get(m, []):
            metric(child)
        xml("</metric>")

    for root in metric_roots:
        metric(root)
    xml("</metrics>")

    # program: all regions of the trace (id = region index), then the call tree
    xml("<program>")
    regions = list(trace.regions)
    for reg in regions:
        begin = reg.begin_line if reg.begin_line > 0 else -1
        end = reg.end_line if reg.end_line > 0 else -1
        xml(f'<region id="{reg.index}" mod="{_esc(reg.file)}" begin="{begin}" end="{end}">')
        xml(f"<name>{_esc(reg.name)}</name>")
        xml(f"<mangled_name>{_esc(reg.canonical_name or reg.name)}</mangled_name>")
        xml(f"<paradigm>{_esc(_PARADIGM_NAMES.get(reg.paradigm, reg.paradigm))}</paradigm>")
        xml(f"<role>{_esc(_role(reg.role))}</role>")
        xml("<url></url>")
        xml(f"<descr>{_esc(reg.description)}</descr>")
        xml("</region>")
    cnode_id = {cp: i for i, cp in enumerate(cp_order)}
    cp_region = np.asarray(trace.callpath_region)

    # iterative pre-order walk that closes tags on the way back
    for root in cp_roots:
        stack: list[tuple[int, bool]] = [(root, False)]
        while stack:
            cp, done = stack.pop()
            if done:
                xml("</cnode>")
                continue
            xml(f'<cnode id="{cnode_id[cp]}" calleeId="{int(cp_region[cp])}">')
            stack.append((cp, True))
            stack.extend((c, False) for c in reversed(cp_kids.get(cp, [])))
    xml("</program>")

    # system: tree, processes, threads; then the Cartesian topologies
    xml("<system>")
    system.write(xml)
    xml("<topologies>")
    for top in getattr(trace, "cart_topologies", []):
        coords = top.location_coords(system.n_locations)
        dims = np.asarray(top.dims, dtype=np.int64)
        valid = [loc for loc in range(system.n_locations)
                 if system.location_id[loc] >= 0 and (coords[loc] >= 0).all() and (coords[loc] < dims).all()]
        if not valid or not len(dims):
            continue  # Cube wants at least one coordinate per topology
        name = f' name="{_esc(top.name)}"' if top.name else ""
        xml(f'<cart{name} ndims="{len(dims)}">')
        for d in range(len(dims)):
            dim_name = top.dim_names[d] if d < len(top.dim_names) else ""
            attr = f'name="{_esc(dim_name)}" ' if dim_name else ""
            periodic = "true" if d < len(top.periodic) and top.periodic[d] else "false"
            xml(f'<dim {attr}size="{int(dims[d])}" periodic="{periodic}"/>')
        for loc in sorted(valid, key=lambda x: int(system.location_id[x])):
            values = " ".join(str(int(c)) for c in coords[loc])
            xml(f'<coord locId="{int(system.location_id[loc])}">{values}</coord>')
        xml("</cart>")
    xml("</topologies>")
    xml("</system>")
    xml("</cube>")
    return xml.text()


def report_path(path: str | os.PathLike[str]) -> str:
    """The file :func:`write_cube` writes for `path`, checked before any work is done.

    `path` itself when it ends with ".cubex"; ".cubex" appended when its
    name has no suffix (Cube recognises reports by that suffix).  Raises
    ValueError for another suffix (``report.txt`` is neither renamed nor
    written as a file Cube would not open), FileNotFoundError when the
    directory does not exist, PermissionError when it is not writable and
    IsADirectoryError when `path` is a directory; each message names the path.
    """
    target = os.fspath(path)
    if not target.endswith(".cubex"):
        stem, suffix = os.path.splitext(target)
        if suffix and not os.path.isdir(target):
            raise ValueError(f"{target}: a Cube report must be named *.cubex (Cube recognises reports by it), "
                             f"e.g. {stem}.cubex")
        target += ".cubex"
    if os.path.isdir(target):
        raise IsADirectoryError(f"{target}: is a directory, not a Cube report file")
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{target}: cannot write the Cube report: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(f"{target}: cannot write the Cube report: directory {directory} is not writable")
    return target


def write_cube(result: "AnalysisResult", path: str | os.PathLike[str]) -> str:
    """Writes `result` as a Cube4 report; returns the path written.

    ".cubex" is appended to `path` when its name has no suffix; another
    suffix, a missing or read-only directory raise before anything is
    written (:func:`report_path`).
    """
    target = report_path(path)
    trace = result._trace
    cube = np.asarray(result.cube, dtype=np.float64)
    _, n_callpaths, n_locations = cube.shape

    # metric tree (parents missing from the result make roots)
    index = {m.id: i for i, m in enumerate(result.metrics)}
    metric_parent = [index.get(m.parent, -1) if m.parent else -1 for m in result.metrics]
    metric_roots, metric_kids = _children(metric_parent)
    metric_order = _preorder(metric_roots, metric_kids)

    # call tree: cnode id = pre-order position
    cp_roots, cp_kids = _children(np.asarray(result.callpath_parent))
    cp_order = _preorder(cp_roots, cp_kids)
    if len(cp_order) != n_callpaths:  # pragma: no cover - a cycle in the tree
        raise ValueError("the call-path tree is not a forest")

    system = _System(trace, n_locations)
    if len(system.order) != n_locations:  # pragma: no cover - defensive
        raise ValueError("not every location has a place in the system tree")
    loc_order = np.asarray(system.order, dtype=np.int64)
    cp_index = np.asarray(cp_order, dtype=np.int64)

    dtypes: dict[int, str] = {}
    payloads: list[tuple[str, bytes]] = []
    for mid, m in enumerate(metric_order):
        values = cube[m][np.ix_(cp_index, loc_order)]  # [cnode id, location id]
        dtype = _metric_dtype(result.metrics[m].unit, values)
        dtypes[m] = dtype
        rows = np.flatnonzero(np.any(values != 0, axis=1))
        if not len(rows) and n_callpaths:
            rows = np.zeros(1, dtype=np.int64)
        payloads.append((f"{mid}.index", _index_bytes(rows)))
        payloads.append((f"{mid}.data", _data_bytes(values[rows], dtype)))

    anchor = _anchor(result, metric_order, metric_kids, metric_roots, dtypes, cp_order, cp_kids, cp_roots,
                     system)
    if len(anchor) % 512 == 0:
        anchor += b"\n"

    tmp = target + ".part"
    now = time.time()
    try:
        with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
            _add(tar, "anchor.xml", anchor, now)
            for name, payload in payloads:
                _add(tar, name, payload, now)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return target
