"""`info --json` and `analyze --json` follow the schema documented in docs/json.md,
and their values equal the Python API's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import cli, export
from trace_facts import path_span

ROOT = Path(__file__).resolve().parent.parent


def _schema() -> dict[str, dict[str, tuple[str, str]]]:
    """section -> key -> (type, in) from the tables of docs/json.md."""
    text = (ROOT / "docs" / "json.md").read_text()
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|(?: (both|analyze) \|)?", section, re.M)
        out[title] = {key: (kind.strip(), where or "") for key, kind, where in rows}
    return out


SCHEMA = _schema()


def _check_type(value, kind: str, where: str) -> None:
    if " or null" in kind and value is None:
        return
    kind = kind.replace(" or null", "")
    if kind.startswith("list of"):
        assert isinstance(value, list), where
        inner = kind[len("list of "):]
        simple = {"integers": "integer", "numbers": "number", "strings": "string", "booleans": "boolean",
                  "integer lists": "list of integers"}
        if inner in simple:
            for item in value:
                _check_type(item, simple[inner], where)
        return
    checks = {
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
    }
    if kind in checks:
        assert checks[kind](value), f"{where}: {value!r} is not {kind}"
    else:  # a documented object ([clock](#clock), object: metric id -> ...)
        assert isinstance(value, dict), f"{where}: {value!r} is not an object"


def _conforms(obj: dict, section: str, where: str) -> None:
    table = SCHEMA[section]
    assert set(obj) == set(table), f"{where}: keys {sorted(obj)} differ from docs/json.md {section}: {sorted(table)}"
    for key, (kind, _) in table.items():
        _check_type(obj[key], kind, f"{where}.{key}")


def _validate(doc: dict, analysis: bool) -> None:
    top = {k: v for k, v in SCHEMA["Document"].items() if analysis or v[1] == "both"}
    assert set(doc) == set(top), sorted(set(doc) ^ set(top))
    for key, (kind, _) in top.items():
        _check_type(doc[key], kind, key)
    _conforms(doc["clock"], "clock", "clock")
    for i, loc in enumerate(doc["locations"]):
        _conforms(loc, "location", f"locations[{i}]")
    for i, top_ in enumerate(doc["topologies"]):
        _conforms(top_, "topology", f"topologies[{i}]")
    for i, cp in enumerate(doc["callpaths"]):
        _conforms(cp, "callpath", f"callpaths[{i}]")
    if not analysis:
        return
    for mid, metric in doc["metrics"].items():
        _conforms(metric, "metric", f"metrics.{mid}")
        for k, row in enumerate(metric["values"]):
            _conforms(row, "value row", f"metrics.{mid}.values[{k}]")
    if doc["delay"] is not None:
        _conforms(doc["delay"], "delay", "delay")
    if doc["critical_path"] is not None:
        _conforms(doc["critical_path"], "critical path", "critical_path")
        for k, seg in enumerate(doc["critical_path"]["segments"]):
            _conforms(seg, "segment", f"critical_path.segments[{k}]")
    if analysis and doc.get("pop") is not None:
        _conforms(doc["pop"], "pop", "pop")
        pop = doc["pop"]
        # PE = LB * CommE, both from the useful times and the run time
        assert abs(pop["parallel_efficiency"] - pop["load_balance"] * pop["communication_efficiency"]) < 1e-12
        assert abs(pop["parallel_efficiency"] - pop["useful_mean"] / pop["runtime"]) < 1e-12


def _run(capsys, *args: str) -> dict:
    assert cli.main(list(args)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def test_the_schema_is_documented():
    assert {"Document", "clock", "location", "topology", "callpath", "metric", "value row", "delay",
            "critical path", "segment", "pop"} <= set(SCHEMA)
    assert len(SCHEMA["Document"]) == 16 and SCHEMA["Document"]["metrics"][1] == "analyze"


def test_info_json(pingpong_dir: Path, capsys) -> None:
    doc = _run(capsys, "info", str(pingpong_dir), "--json")
    _validate(doc, analysis=False)
    trace = waitscope.open(pingpong_dir)
    clock = trace.clock
    assert doc["waitscope_version"] == waitscope.__version__
    assert doc["clock"]["resolution"] == clock["resolution"] == 2095197216
    assert doc["run_length"] == pytest.approx(clock["length"] / clock["resolution"])
    assert f"length {doc['run_length']:.6f} s" in trace.summary()  # what the text shows
    assert doc["events"] == trace.n_events == sum(loc["events"] for loc in doc["locations"])
    assert [loc["rank"] for loc in doc["locations"]] == [0, 1]
    assert [cp["name"] for cp in doc["callpaths"]] == trace.callpath_names
    assert [cp["parent"] for cp in doc["callpaths"]] == [int(p) for p in trace.callpath_parent]
    assert doc["callpaths"][4]["region"] == doc["callpaths"][4]["name"].split("/")[-1]
    assert doc["topologies"] == [{"name": "Process x Thread", "dim_names": ["Process", "Thread"], "dims": [2, 1],
                                  "periodic": [False, False], "locations": [0, 1], "coords": [[0, 0], [1, 0]]}]
    assert "topology 'Process x Thread': 2 Process x 1 Thread" in trace.summary()


@pytest.mark.parametrize("options", [[], ["--delay", "wait-first", "--critical-path"]], ids=["waits", "all"])
def test_analyze_json(pingpong_dir: Path, capsys, options: list[str]) -> None:
    doc = _run(capsys, "analyze", str(pingpong_dir), "--json", *options)
    _validate(doc, analysis=True)
    info = _run(capsys, "info", str(pingpong_dir), "--json")
    assert {k: doc[k] for k in info} == info  # the same keys, the same values
    trace = waitscope.open(pingpong_dir)
    r = trace.analyze(delay_model="wait-first" if options else None, critical_path=bool(options))
    assert list(doc["metrics"]) == r.metric_ids
    for mid, metric in doc["metrics"].items():
        m = r.metric(mid)
        assert (metric["name"], metric["unit"], metric["parent"], metric["description"]) == \
            (m.name, m.unit, m.parent, m.description)
        assert metric["total"] == r.total(mid)
        assert metric["by_location"] == list(r.by_location(mid))
        assert metric["by_callpath"] == list(r.by_callpath(mid))
        dense = np.zeros((len(doc["callpaths"]), len(doc["locations"])))
        for row in metric["values"]:
            assert any(row["by_location"])
            dense[row["callpath"]] = row["by_location"]
        assert np.array_equal(dense, r.get(mid)), mid
    late = doc["metrics"]["mpi_latereceiver"]
    send = r.callpath_index("MPI_Send")
    assert [row["callpath"] for row in late["values"]] == [send]
    assert doc["clock_violations"] == [int(x) for x in r.clock_violations]
    useful = doc["metrics"]["comp"]["by_location"]  # time outside MPI per location
    assert doc["pop"]["useful_max"] == max(useful)
    assert doc["pop"]["load_balance"] == pytest.approx(np.mean(useful) / max(useful), rel=1e-12)
    assert doc["pop"]["communication_efficiency"] == pytest.approx(max(useful) / doc["run_length"], rel=1e-12)
    if not options:
        assert doc["delay"] is None and doc["critical_path"] is None
        return
    assert doc["delay"] == {"model": "wait-first", "short_term": float(r.delay_short.sum()),
                            "long_term": float(r.delay_long.sum()), "handled_waiting": r.handled_waiting(),
                            "undistributed": r.undistributed}
    assert doc["delay"]["handled_waiting"] == pytest.approx(
        doc["metrics"]["delay"]["total"] + doc["delay"]["undistributed"], rel=1e-12)
    cp = doc["critical_path"]
    path = r.critical_path
    assert cp["length"] == path.length and cp["start"] == path.start and cp["end"] == path.end
    # the path runs from MPI_Init's Enter to the latest Enter of MPI_Finalize
    assert cp["length"] == pytest.approx(path_span(r.trace), rel=1e-12) and cp["length"] < doc["run_length"]
    assert [(s["location"], s["rank"], s["callpath"], s["start"], s["end"]) for s in cp["segments"]] == \
        [tuple(x.item() for x in s) for s in path.segments]
    assert cp["imbalance"] == list(path.imbalance)
    assert sum(s["end"] - s["start"] for s in cp["segments"]) == pytest.approx(cp["length"])


def test_python_documents_equal_the_command_line(pingpong_dir: Path, capsys) -> None:
    trace = waitscope.open(pingpong_dir)
    assert json.loads(json.dumps(export.trace_document(trace))) == _run(capsys, "info", str(pingpong_dir), "--json")
    doc = export.analysis_document(trace.analyze())
    assert json.loads(json.dumps(doc)) == _run(capsys, "analyze", str(pingpong_dir), "--json")
