"""The numbers the store keeps and their names are declared once, in C
(csrc/trace/trace.h, OTF2's own headers, csrc/analysis/names.c), and
Python takes them from waitscope._core.  One test per table: the Python
table is the C one, and it agrees with a source read independently here
(the text of OTF2's installed headers and of the kernel's headers, or
otf2-print's output for the bundled trace).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import _core, _names, result

from conftest import BUNDLED

CSRC = Path(__file__).resolve().parent.parent / "csrc"
OTF2_INCLUDE = Path("/usr/include/otf2")


def header_enum(paths, prefix: str) -> dict[int, str]:
    """{value: lower-case name without prefix} of `PREFIX_NAME = value` lines in C headers."""
    out = {}
    for path in paths:
        for name, value in re.findall(rf"\b{prefix}([A-Z0-9_]+)\s*=\s*(\d+)", path.read_text()):
            out[int(value)] = name.lower()
    if not out:
        pytest.skip(f"no {prefix}* enumeration found in {paths}")
    return out


def otf2_enum(enum: str, prefix: str) -> dict[int, str]:
    """The enumerators of `enum <enum>_enum { ... }` in OTF2's installed headers."""
    if not OTF2_INCLUDE.is_dir():
        pytest.skip("OTF2's headers are not installed")
    for path in sorted(OTF2_INCLUDE.glob("*.h")):
        body = re.search(rf"enum\s+{enum}_enum\s*\{{(.*?)\}};", path.read_text(), re.S)
        if body:
            return {int(v): n.lower() for n, v in re.findall(rf"\b{prefix}([A-Z0-9_]+)\s*=\s*(\d+)", body.group(1))}
    pytest.skip(f"enum {enum} not found in OTF2's headers")


def dense(table: dict[int, str]) -> tuple[str, ...]:
    assert sorted(table) == list(range(len(table)))
    return tuple(table[i] for i in range(len(table)))


def test_region_roles():
    assert _names.REGION_ROLES == _core.names["region_roles"]
    assert _names.REGION_ROLES == dense(otf2_enum("OTF2_RegionRole", "OTF2_REGION_ROLE_"))


def test_paradigms():
    assert _names.PARADIGMS == _core.names["paradigms"]
    assert _names.PARADIGMS == dense(otf2_enum("OTF2_Paradigm", "OTF2_PARADIGM_"))
    assert _names.PARADIGMS[4] == "mpi"


def test_collective_ops():
    assert _names.COLLECTIVE_OPS == _core.names["collective_ops"]
    assert _names.COLLECTIVE_OPS == dense(otf2_enum("OTF2_CollectiveOp", "OTF2_COLLECTIVE_OP_"))


def test_location_types():
    assert _names.LOCATION_TYPES == _core.names["location_types"]
    assert _names.LOCATION_TYPES == dense(otf2_enum("OTF2_LocationType", "OTF2_LOCATION_TYPE_"))


def test_event_kinds():
    declared = header_enum([CSRC / "trace" / "trace.h"], "WS_EV_")
    declared = {v: n for v, n in declared.items() if n != "kind_count"}
    assert waitscope.EVENT_KINDS == _names.EVENT_KINDS == declared
    assert _core.names["event_kinds"][0] is None  # 0 is no kind
    for value, name in declared.items():
        assert getattr(_core, "EV_" + name.upper()) == value


def test_otf2_record_names():
    """otf2-print's record name of every event of the bundled trace, in order."""
    assert _names.OTF2_RECORD_NAMES == {k: v for k, v in enumerate(_core.names["otf2_records"]) if v}
    assert set(_names.OTF2_RECORD_NAMES) == set(_names.EVENT_KINDS)
    if shutil.which("otf2-print") is None:
        pytest.skip("otf2-print is not installed")
    text = subprocess.run(["otf2-print", str(BUNDLED / "traces.otf2")], capture_output=True, text=True,
                          check=True).stdout
    printed: dict[int, list[str]] = {}
    for name, loc in re.findall(r"^([A-Z_]+)\s+(\d+)\s+\d+", text, re.M):
        printed.setdefault(int(loc), []).append(name)
    trace = waitscope.open(BUNDLED)
    # ProgramBegin and ProgramEnd are stored as the Enter and Leave of the
    # program region (the root of every call path)
    as_stored = {"PROGRAM_BEGIN": "ENTER", "PROGRAM_END": "LEAVE"}
    for loc in range(trace.n_locations):
        kinds = trace.events(loc).kind
        assert [_names.OTF2_RECORD_NAMES[int(k)] for k in kinds] == [as_stored.get(n, n) for n in printed[loc]]


def test_message_kinds():
    """The kinds whose events own the rows of the message table."""
    assert _names.MESSAGE_KINDS == _core.MESSAGE_KINDS
    assert {_names.EVENT_KINDS[k] for k in _names.MESSAGE_KINDS} == {"send", "isend", "recv", "irecv"}
    trace = waitscope.open(BUNDLED)
    for loc in range(trace.n_locations):
        ev = trace.events(loc)
        is_message = np.isin(ev.kind, _names.MESSAGE_KINDS)
        np.testing.assert_array_equal(np.flatnonzero(is_message), ev.msg_event)
        np.testing.assert_array_equal(ev.ref[is_message], np.arange(len(ev.msg_event)))


def test_wait_classes():
    declared = header_enum([CSRC / "analysis" / "analysis.h"], "WS_WAIT_")
    declared.pop(max(declared))  # WS_WAIT_CLASS_COUNT
    assert result.WAIT_CLASSES == _names.WAIT_CLASSES == _core.names["wait_classes"]
    assert len(_names.WAIT_CLASSES) == len(declared)
    # the short names of the delay records, by the enumerators they stand for
    spelled = {"nxn": "n2n", "12n": "12n", "n21": "n21"}
    assert _names.WAIT_CLASSES == tuple(spelled.get(declared[i], declared[i]) for i in range(len(declared)))
