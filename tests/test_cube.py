"""Cube4 reports: round trips through pycubexr and the rules Cube's own reader sets.

Three traces: the real Score-P ping-pong, a generated program analysed with
delay and critical-path metrics, and a generated program with Cartesian
topologies (one on a sub-communicator).
"""

from __future__ import annotations

import json
import struct
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import cli, synth

ATOL = 1e-12


# ---- the three traces --------------------------------------------------------

def delay_program() -> synth.Program:
    """Imbalanced iterations with nested regions, p2p and collectives."""
    prog = synth.Program(4)
    for it in range(3):
        for r in range(4):
            b = prog.rank(r)
            with b.region("iteration"):
                b.compute("solve", 0.5 + 0.3 * ((r + it) % 4))
                with b.region("exchange"):
                    if r % 2 == 0:
                        b.send(r + 1, tag=it, size=100_000).recv(r + 1, tag=100 + it)
                    else:
                        b.recv(r - 1, tag=it).compute("pack", 0.1 * r).send(r - 1, tag=100 + it, size=8)
                b.allreduce(8)
        prog.rank(0).compute("io", 0.4)
        for r in range(4):
            prog.rank(r).barrier()
    return prog


def cart_program() -> synth.Program:
    prog = synth.Program(6)
    odd = prog.comm([1, 3, 5], name="odd ranks")
    prog.cart((2, 3), periods=(True, False), name="grid")
    prog.cart((3,), comm=odd, name="odd line")
    for r in range(6):
        prog.rank(r).compute("work", 0.2 * (r + 1))
    for r in (1, 3, 5):
        prog.rank(r).allreduce(64, comm=odd).bcast(0, 16, comm=odd)
    for r in range(6):
        prog.rank(r).compute("more", 0.1).barrier()
    return prog


@pytest.fixture(params=["pingpong", "delay", "cart"])
def case(request, pingpong_dir):
    if request.param == "pingpong":
        trace = waitscope.open(pingpong_dir)
        return trace, trace.analyze()
    if request.param == "delay":
        trace = delay_program().run(latency=1e-3, bandwidth=1e6)
        return trace, trace.analyze(delay_model="proportional", critical_path=True)
    trace = cart_program().run(latency=1e-4)
    return trace, trace.analyze()


@pytest.fixture
def report(case, tmp_path):
    trace, result = case
    return trace, result, Path(result.to_cube(tmp_path / "report.cubex"))


# ---- helpers -----------------------------------------------------------------

def anchor_of(path: Path) -> ET.Element:
    with tarfile.open(path) as tar:
        return ET.fromstring(tar.extractfile("anchor.xml").read())


def expected_parent(result, metric):
    ids = set(result.metric_ids)
    return metric.parent if metric.parent in ids else None


def callpath_of_cnodes(result, roots):
    """Maps pycubexr cnodes onto call paths by tree structure and region."""
    trace = result._trace
    parent = np.asarray(result.callpath_parent)
    region = np.asarray(trace.callpath_region)
    mapping = {}

    def match(cnode, candidates):
        hits = [cp for cp in candidates if int(region[cp]) == cnode.callee_region_id]
        assert len(hits) == 1, (cnode, candidates)
        mapping[cnode.id] = hits[0]
        kids = [int(c) for c in np.flatnonzero(parent == hits[0])]
        assert len(cnode.get_children()) == len(kids)
        for child in cnode.get_children():
            match(child, kids)

    top = [int(c) for c in np.flatnonzero(parent < 0)]
    assert len(roots) == len(top)
    for root in roots:
        match(root, top)
    return mapping


# ---- round trip through pycubexr ---------------------------------------------

def test_round_trip_through_pycubexr(report):
    pycubexr = pytest.importorskip("pycubexr")
    trace, result, path = report
    with pycubexr.CubexParser(path) as cube:
        # metric tree: uniq names, parents, units, names, descriptions
        metrics = {m.name: m for m in cube.all_metrics()}
        assert set(metrics) == set(result.metric_ids)
        parent_of = {}

        def walk(children, parent):
            for m in children:
                parent_of[m.name] = parent
                walk(m.childs, m.name)

        walk(cube.get_metrics(), None)
        for m in result.metrics:
            got = metrics[m.id]
            assert parent_of[m.id] == expected_parent(result, m), m.id
            assert got.units == m.unit and got.display_name == m.name and got.description == m.description
            assert got.metric_type == "EXCLUSIVE"
            assert got.data_type == ("UINT64" if m.unit in ("occ", "bytes") else "DOUBLE")

        # call tree: names and parents
        cnodes = cube.all_cnodes()
        assert len(cnodes) == len(result.callpath_names)
        cp_of = callpath_of_cnodes(result, cube.get_root_cnodes())
        for cnode in cnodes:
            cp = cp_of[cnode.id]
            names = []
            node = cnode
            while node is not None:
                names.append(cube.get_region(node).name)
                node = node.parent
            assert "/".join(reversed(names)) == result.callpath_names[cp]
            p = int(result.callpath_parent[cp])
            assert (cnode.parent is None and p < 0) or cp_of[cnode.parent.id] == p

        # system tree: machine -> nodes -> processes (rank) -> threads
        roots = cube._anchor_result.system_tree_nodes
        assert [r.name for r in roots] == [n["name"] for n in trace.system_tree if n["parent"] < 0]
        groups = roots[0].all_location_groups()
        rank_of_location = [int(g.rank) for g in groups for _ in g.all_locations()]
        np.testing.assert_array_equal(rank_of_location, result.location_ranks)
        locations = cube.get_locations()
        assert [loc.id for loc in locations] == list(range(trace.n_locations))
        assert [loc.name for loc in locations] == [loc.name for loc in trace.locations]
        assert [int(loc.rank) for loc in locations] == [loc.thread for loc in trace.locations]
        assert [g.name for g in groups] == list(dict.fromkeys(loc.process for loc in trace.locations))

        # values: exclusive along the call tree as stored; inclusive as pycubexr sums them
        for mi, mid in enumerate(result.metric_ids):
            values = cube.get_metric_values(metrics[mid])
            inclusive = result.inclusive(mid)
            for cnode in cnodes:
                cp = cp_of[cnode.id]
                got = np.asarray(values.cnode_values(cnode), dtype=np.float64)
                np.testing.assert_allclose(got, result.cube[mi, cp], rtol=0, atol=ATOL, err_msg=mid)
                got_incl = np.asarray(values.cnode_values(cnode, convert_to_inclusive=True), dtype=np.float64)
                np.testing.assert_allclose(got_incl, inclusive[cp], rtol=1e-12, atol=ATOL, err_msg=mid)


def test_metric_tree_view_as_cube_shows_it(report):
    """Cube's exclusive metric value (stored minus the children) is what waitscope's tree implies."""
    pycubexr = pytest.importorskip("pycubexr")
    _, result, path = report
    with pycubexr.CubexParser(path) as cube:
        for m in cube.all_metrics():
            own = np.asarray(cube.get_metric_values(m).values, dtype=np.float64)
            kids = [np.asarray(cube.get_metric_values(c).values, dtype=np.float64) for c in m.childs]
            if not kids:
                continue
            # compare whole-metric totals: exclusive = inclusive - sum(children)
            exclusive = own.sum() - sum(k.sum() for k in kids)
            expected = result.total(m.name) - sum(result.total(c.name) for c in m.childs)
            assert exclusive == pytest.approx(expected, abs=1e-9), m.name


# ---- topologies ----------------------------------------------------------------

def test_topologies(report):
    trace, _, path = report
    anchor = anchor_of(path)
    carts = anchor.find("system").find("topologies").findall("cart")
    expected = [t for t in trace.cart_topologies if (t.location_coords(trace.n_locations) >= 0).all(axis=1).any()]
    assert [c.get("name") for c in carts] == [t.name for t in expected]
    for cart, top in zip(carts, expected):
        dims = cart.findall("dim")
        assert int(cart.get("ndims")) == len(top.dims)
        assert [int(d.get("size")) for d in dims] == list(top.dims)
        assert [d.get("periodic") == "true" for d in dims] == list(top.periodic)
        assert [d.get("name") for d in dims] == list(top.dim_names)
        got = {int(c.get("locId")): [int(x) for x in c.text.split()] for c in cart.findall("coord")}
        want = top.location_coords(trace.n_locations)
        assert got == {loc: list(want[loc]) for loc in range(trace.n_locations) if (want[loc] >= 0).all()}


def test_cart_program_topologies_are_written(tmp_path):
    trace = cart_program().run()
    anchor = anchor_of(Path(trace.analyze().to_cube(tmp_path / "c")))
    carts = {c.get("name"): c for c in anchor.iter("cart")}
    assert set(carts) == {"grid", "odd line"}
    grid = {int(c.get("locId")): c.text for c in carts["grid"].findall("coord")}
    assert grid == {0: "0 0", 1: "0 1", 2: "0 2", 3: "1 0", 4: "1 1", 5: "1 2"}
    assert [d.get("periodic") for d in carts["grid"].findall("dim")] == ["true", "false"]
    line = {int(c.get("locId")): c.text for c in carts["odd line"].findall("coord")}
    assert line == {1: "0", 3: "1", 5: "2"}


# ---- the rules of Cube's own reader (cubelib) ---------------------------------

def cubelib_members(raw: bytes) -> dict[str, tuple[int, int]]:
    """Members as cubelib's tar reader finds them: it expects an extra empty
    block after a member whose size is a multiple of 512."""
    members = {}
    pos = 0
    while pos + 512 <= len(raw):
        header = raw[pos:pos + 512]
        name = header[:100].split(b"\0")[0].decode()
        size_field = header[124:136].split(b"\0")[0].strip()
        size = int(size_field, 8) if size_field else 0
        if name:
            members[name] = (pos + 512, size)
        pos = pos + 512 if size == 0 else pos + 512 + (size // 512 + 1) * 512
    return members


def test_layout_follows_cubelib(report):
    trace, result, path = report
    raw = path.read_bytes()
    found = cubelib_members(raw)
    with tarfile.open(path) as tar:
        standard = {m.name: (m.offset_data, m.size) for m in tar.getmembers()}
    assert found == standard
    n_metrics = len(result.metric_ids)
    assert set(found) == {"anchor.xml"} | {f"{i}.{k}" for i in range(n_metrics) for k in ("index", "data")}
    for _, size in found.values():
        assert size % 512 != 0

    start, size = found["anchor.xml"]
    text = raw[start:start + size].decode("utf-8")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<cube version="4.4">\n')
    anchor = ET.fromstring(text)
    assert [c.tag for c in anchor if c.tag != "attr"] == ["doc", "metrics", "program", "system"]

    # ids: 0..n-1 in document order
    metric_ids = [int(m.get("id")) for m in anchor.iter("metric")]
    assert metric_ids == list(range(n_metrics))
    regions = anchor.find("program").findall("region")
    assert sorted(int(r.get("id")) for r in regions) == list(range(len(trace.regions)))
    cnode_ids = [int(c.get("id")) for c in anchor.iter("cnode")]
    assert cnode_ids == list(range(len(result.callpath_names)))
    assert all(0 <= int(c.get("calleeId")) < len(regions) for c in anchor.iter("cnode"))
    for group in anchor.iter("locationgroup"):
        assert group.findall("location") and group.findtext("type") == "process"
    assert [int(loc.get("Id")) for loc in anchor.iter("location")] == list(range(trace.n_locations))
    for cart in anchor.iter("cart"):
        sizes = [int(d.get("size")) for d in cart.findall("dim")]
        assert cart.findall("coord")
        for coord in cart.findall("coord"):
            values = [int(x) for x in coord.text.split()]
            assert len(values) == len(sizes) and all(0 <= v < s for v, s in zip(values, sizes))

    # index and data files
    dtypes = {int(m.get("id")): m.findtext("dtype") for m in anchor.iter("metric")}
    n_cnodes, n_locations = len(cnode_ids), trace.n_locations
    for mid in range(n_metrics):
        start, size = found[f"{mid}.index"]
        index = raw[start:start + size]
        assert index[:11] == b"CUBEX.INDEX"
        endian, version, fmt, n_rows = struct.unpack("<IHBI", index[11:22])
        assert (endian, version, fmt) == (1, 0, 1)
        rows = np.frombuffer(index[22:], dtype="<u4")
        assert len(rows) == n_rows >= 1
        assert (np.diff(rows.astype(np.int64)) > 0).all() and rows.max() < n_cnodes
        start, size = found[f"{mid}.data"]
        assert raw[start:start + 10] == b"CUBEX.DATA"
        assert size == 10 + n_rows * n_locations * 8
        assert dtypes[mid] in ("DOUBLE", "UINT64")


def test_time_per_location_as_cube_dump_shows_it(report):
    """What ``cube_dump -m time`` prints (CubeLib is packaged neither by Debian nor by PyPI, so
    pycubexr reads the report here): the time of every call path and location, which summed over
    the call tree is each location's time from its first Enter to its last Leave in the trace."""
    pycubexr = pytest.importorskip("pycubexr")
    from waitscope import _core

    trace, result, path = report
    span = []
    for loc in range(trace.n_locations):
        events = trace.events(loc)
        kind, time = np.asarray(events.kind), np.asarray(events.time)
        span.append(time[kind == _core.EV_LEAVE].max() - time[kind == _core.EV_ENTER].min())
    with pycubexr.CubexParser(path) as cube:
        metric = cube.get_metric_by_name("time")
        values = cube.get_metric_values(metric)
        roots = cube.get_root_cnodes()
        per_location = sum(np.asarray(values.cnode_values(root, convert_to_inclusive=True), dtype=np.float64)
                           for root in roots)
    np.testing.assert_allclose(per_location, span, rtol=1e-12, atol=1e-12)


# ---- API and command line -----------------------------------------------------

def test_suffix_is_added(tmp_path):
    result = cart_program().run().analyze()
    assert result.to_cube(tmp_path / "plain") == str(tmp_path / "plain.cubex")
    assert result.to_cube(tmp_path / "named.cubex") == str(tmp_path / "named.cubex")
    assert (tmp_path / "plain.cubex").exists() and (tmp_path / "named.cubex").exists()
    assert not list(tmp_path.glob("*.part"))


def test_cli_writes_the_report(pingpong_dir, tmp_path, capsys):
    target = tmp_path / "out.cubex"
    assert cli.main(["analyze", str(pingpong_dir), "--quiet", "-o", str(target)]) == 0
    assert target.exists()
    assert f"Cube report written to {target}" in capsys.readouterr().out
    # with --json the note goes to stderr and stdout stays JSON
    assert cli.main(["analyze", str(pingpong_dir), "--json", "--output", str(tmp_path / "j")]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert "Cube report written to" in captured.err and (tmp_path / "j.cubex").exists()


def test_cli_reports_unwritable_target(pingpong_dir, tmp_path, capsys):
    assert cli.main(["analyze", str(pingpong_dir), "--quiet", "-o", str(tmp_path / "no" / "such" / "r")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_locations_follow_the_system_tree(tmp_path):
    """Processes on two nodes, interleaved: location ids follow the tree, values follow the ids."""
    pycubexr = pytest.importorskip("pycubexr")
    trace = cart_program().run(latency=1e-4)
    result = trace.analyze()
    defs = trace._defs
    defs["system_tree"] = [dict(n) for n in defs["system_tree"]] + [{"name": "node1", "class": "node", "parent": 0}]
    defs["location_groups"] = [dict(g, system_node=(1 if i % 2 == 0 else 2))
                               for i, g in enumerate(defs["location_groups"])]
    order = [0, 2, 4, 1, 3, 5]
    path = result.to_cube(tmp_path / "two-nodes")
    anchor = anchor_of(Path(path))
    nodes = anchor.find("system").find("systemtreenode").findall("systemtreenode")
    assert [n.findtext("name") for n in nodes] == ["node0", "node1"]
    assert [[int(g.findtext("rank")) for g in n.findall("locationgroup")] for n in nodes] == [[0, 2, 4], [1, 3, 5]]
    cart = next(c for c in anchor.iter("cart") if c.get("name") == "grid")
    grid = {int(c.get("locId")): c.text for c in cart.findall("coord")}
    assert grid == {0: "0 0", 1: "0 2", 2: "1 1", 3: "0 1", 4: "1 0", 5: "1 2"}
    with pycubexr.CubexParser(path) as cube:
        cp_of = callpath_of_cnodes(result, cube.get_root_cnodes())
        for mi, mid in enumerate(result.metric_ids):
            values = cube.get_metric_values(cube.get_metric_by_name(mid))
            for cnode in cube.all_cnodes():
                got = np.asarray(values.cnode_values(cnode), dtype=np.float64)
                np.testing.assert_allclose(got, result.cube[mi, cp_of[cnode.id]][order], rtol=0, atol=ATOL)
