"""Reading ``profile.json`` (the format is in docs/measuring.md): every field
checked, errors as :class:`waitscope.TraceError` naming the file and the
field."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._core import TraceError

PROFILE_FILE = "profile.json"
FORMAT_NAME = "waitscope-profile"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class ProfileEntry:
    """One row of the profile: an MPI function on a call path, a size class and a role.

    The per-rank arrays have one value per rank; ``minimum`` is NaN where
    the rank has no such call.
    """

    callpath: int
    """Index into :attr:`Profile.callpath_names`."""
    function: str
    size_class: int
    """floor(log2(bytes)) of the payload; -1 for 0 bytes or none."""
    root: bool
    collective: bool
    count: np.ndarray
    sum: np.ndarray
    minimum: np.ndarray
    global_min: float | None
    """Collectives: the minimum over all ranks (None for point to point)."""


@dataclass(frozen=True)
class ProfileCalibration:
    """The no-wait durations of one point-to-point category (MPI function,
    size class), measured at MPI_Finalize with the partners each rank had in
    it (docs/measuring.md).  Per-rank arrays; ``samples`` is 0 and the
    durations NaN where a rank measured none."""

    function: str
    size_class: int
    samples: np.ndarray
    minimum: np.ndarray
    median: np.ndarray
    maximum: np.ndarray


# ---- reading and checking the file ----------------------------------------------


class _Checker:
    """Checks the parsed JSON against the format; errors name the file and the field."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, what: str) -> TraceError:
        return TraceError(f"{self.path}: {what}")

    def field(self, obj: dict[str, Any], key: str, where: str = "") -> Any:
        if key not in obj:
            raise self.fail(f"{where}missing field {key!r}")
        return obj[key]

    def integer(self, value: Any, what: str, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{what} must be an integer, not {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(f"{what} must be at least {minimum}, not {value}")
        return value

    def number(self, value: Any, what: str, allow_null: bool = False) -> float:
        if value is None and allow_null:
            return math.nan
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise self.fail(f"{what} must be a non-negative number, not {value!r}")
        return float(value)

    def array(self, value: Any, n: int, what: str, kind: str = "number", allow_null: bool = False) -> np.ndarray:
        if not isinstance(value, list):
            raise self.fail(f"{what} must be a list of {n} values, not {type(value).__name__}")
        if len(value) != n:
            raise self.fail(f"{what} has {len(value)} values for {n} ranks")
        if kind == "integer":
            return np.array([self.integer(v, f"{what}[{i}]", 0) for i, v in enumerate(value)], dtype=np.int64)
        return np.array([self.number(v, f"{what}[{i}]", allow_null) for i, v in enumerate(value)], dtype=np.float64)

    def string(self, value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"{what} must be a string, not {value!r}")
        return value


def _add_ancestors(names: list[str]) -> tuple[list[str], list[int]]:
    """Call paths with their missing ancestors added, parents first; and where each input name went."""
    out: list[str] = []
    index: dict[str, int] = {}

    def add(name: str) -> int:
        if name in index:
            return index[name]
        if "/" in name:
            add(name.rsplit("/", 1)[0])
        index[name] = len(out)
        out.append(name)
        return index[name]

    return out, [add(n) for n in names]


def _parse(path: str, doc: Any) -> dict[str, Any]:
    c = _Checker(path)
    if not isinstance(doc, dict):
        raise c.fail("not a waitscope profile (the top level is not a JSON object)")
    fmt = doc.get("format")
    if fmt != FORMAT_NAME:
        raise c.fail(f"not a waitscope profile (format {fmt!r}, expected {FORMAT_NAME!r})")
    version = c.field(doc, "version")
    if version != FORMAT_VERSION:
        raise c.fail(f"unsupported profile version {version!r} (this waitscope reads version {FORMAT_VERSION})")
    ranks = c.integer(c.field(doc, "ranks"), "ranks", 1)
    raw_paths = c.field(doc, "callpaths")
    if not isinstance(raw_paths, list):
        raise c.fail("callpaths must be a list of names")
    names = [c.string(n, f"callpaths[{i}]") for i, n in enumerate(raw_paths)]
    for i, n in enumerate(names):
        if not n or n.startswith("/") or n.endswith("/") or "//" in n:
            raise c.fail(f"callpaths[{i}] {n!r} is not a call path (names joined by '/')")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise c.fail(f"call path {dup!r} is listed twice")
    callpaths, moved = _add_ancestors(names)
    data: dict[str, Any] = {
        "mpi": c.string(doc.get("mpi", ""), "mpi"),
        "command": c.string(doc.get("command", ""), "command"),
        "ranks": ranks,
        "callpaths": callpaths,
        "execution_time": c.array(c.field(doc, "execution_time"), ranks, "execution_time"),
        "mpi_time": c.array(c.field(doc, "mpi_time"), ranks, "mpi_time"),
    }
    raw_entries = c.field(doc, "entries")
    if not isinstance(raw_entries, list):
        raise c.fail("entries must be a list")
    entries = []
    seen: set[tuple[int, str, int, bool]] = set()
    for k, e in enumerate(raw_entries):
        where = f"entries[{k}]: "
        if not isinstance(e, dict):
            raise c.fail(f"entries[{k}] is not an object")
        cp = c.integer(c.field(e, "callpath", where), f"entries[{k}].callpath", 0)
        if cp >= len(names):
            raise c.fail(f"entries[{k}].callpath {cp} is out of range ({len(names)} call paths)")
        function = c.string(c.field(e, "function", where), f"entries[{k}].function")
        size_class = c.integer(c.field(e, "size_class", where), f"entries[{k}].size_class", -1)
        root, collective = e.get("root", False), e.get("collective", False)
        if not isinstance(root, bool) or not isinstance(collective, bool):
            raise c.fail(f"entries[{k}]: root and collective must be true or false")
        count = c.array(c.field(e, "count", where), ranks, f"entries[{k}].count", "integer")
        total = c.array(c.field(e, "sum", where), ranks, f"entries[{k}].sum")
        minimum = c.array(c.field(e, "min", where), ranks, f"entries[{k}].min", allow_null=True)
        for r in range(ranks):
            if (count[r] > 0) == math.isnan(minimum[r]):
                raise c.fail(f"entries[{k}].min[{r}] must be null exactly where count is 0 "
                             f"(count {count[r]}, min {e['min'][r]!r})")
            if count[r] > 0 and (minimum[r] * count[r] > total[r] * (1 + 1e-9) + 1e-12):
                raise c.fail(f"entries[{k}] rank {r}: count x min exceeds sum ({count[r]} x {minimum[r]} > "
                             f"{total[r]})")
        gmin = e.get("global_min")
        global_min = None if gmin is None else c.number(gmin, f"entries[{k}].global_min")
        key = (cp, function, size_class, root)
        if key in seen:
            raise c.fail(f"entries[{k}] repeats the key (call path {names[cp]!r}, {function}, size class "
                         f"{size_class}, root {root})")
        seen.add(key)
        entries.append(ProfileEntry(callpath=moved[cp], function=function, size_class=size_class, root=root,
                                    collective=collective, count=count, sum=total, minimum=minimum,
                                    global_min=global_min))
    data["entries"] = entries
    data["calibration"] = _calibration(c, doc, ranks)
    return data


def _calibration(c: _Checker, doc: dict[str, Any], ranks: int) -> dict[tuple[str, int], ProfileCalibration] | None:
    """The optional ``calibration`` list (None when the file has none: written
    before the library measured no-wait baselines)."""
    raw = doc.get("calibration")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise c.fail("calibration must be a list")
    out: dict[tuple[str, int], ProfileCalibration] = {}
    for k, e in enumerate(raw):
        where = f"calibration[{k}]"
        if not isinstance(e, dict):
            raise c.fail(f"{where} is not an object")
        function = c.string(c.field(e, "function", where + ": "), f"{where}.function")
        size_class = c.integer(c.field(e, "size_class", where + ": "), f"{where}.size_class", 0)
        samples = c.array(c.field(e, "samples", where + ": "), ranks, f"{where}.samples", "integer")
        values = {name: c.array(c.field(e, name, where + ": "), ranks, f"{where}.{name}", allow_null=True)
                  for name in ("min", "median", "max")}
        for r in range(ranks):
            if (samples[r] > 0) == math.isnan(values["median"][r]):
                raise c.fail(f"{where}.median[{r}] must be null exactly where samples is 0")
            if samples[r] > 0 and not values["min"][r] <= values["median"][r] <= values["max"][r]:
                raise c.fail(f"{where} rank {r}: min <= median <= max does not hold")
        if (function, size_class) in out:
            raise c.fail(f"{where} repeats {function}, size class {size_class}")
        out[(function, size_class)] = ProfileCalibration(function, size_class, samples, values["min"],
                                                         values["median"], values["max"])
    return out


def profile_path(path: str | os.PathLike[str]) -> str | None:
    """The profile file `path` names, or None when it names a trace (or nothing).

    A profile is named by the file itself (``DIR/profile.json``, or any
    ``*.json`` file) or by a directory that holds ``profile.json`` but no
    trace (``traces.otf2``, or the per-rank files of a run cut short), as
    ``waitscope profile`` leaves it.  A directory of ``waitscope trace
    --profile`` holds both and names its trace."""
    target = os.fspath(path)
    if os.path.isdir(target):
        candidate = os.path.join(target, PROFILE_FILE)
        if os.path.isfile(candidate) and not os.path.exists(os.path.join(target, "traces.otf2")) \
                and not os.path.isdir(os.path.join(target, ".waitscope")):
            return candidate
        return None
    if target.endswith(".json") and os.path.isfile(target):
        return target
    return None


def read_profile(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """The file `path` names (``DIR/profile.json`` or the file itself) and its
    checked contents.

    Raises :class:`waitscope.TraceError` naming the file and the problem
    when it is missing, unreadable, truncated or not a valid profile.
    """
    target = os.fspath(path)
    if os.path.isdir(target):
        target = os.path.join(target, PROFILE_FILE)
    try:
        with open(target, "rb") as fh:
            text = fh.read()
    except FileNotFoundError:
        hint = ""
        if os.path.isdir(os.path.dirname(target) or ".") and os.path.exists(
                os.path.join(os.path.dirname(target) or ".", "traces.otf2")):
            hint = " (the directory holds a trace only: run with --profile)"
        raise TraceError(f"{target}: no such file{hint}") from None
    except OSError as exc:
        raise TraceError(f"{target}: cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise TraceError(f"{target}: empty file (the run ended before MPI_Finalize wrote the profile?)")
    try:
        doc = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TraceError(f"{target}: not a waitscope profile (not UTF-8 text: {exc.reason} at byte {exc.start})") \
            from None
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1
        what = "truncated" if truncated else "not valid JSON"
        raise TraceError(f"{target}: {what}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return target, _parse(target, doc)

