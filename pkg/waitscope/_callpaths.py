"""Finding a call path by what a user types: a full path or a unique suffix.

Call-path names are region names joined by ``/`` from the root, as Score-P
names them and Cube shows them: the program region (the executable's name)
first, e.g. ``lu.W.x/int main(int, char**)/MPI_Recv``.  A key given as text
is resolved in three steps; the first step with exactly one match wins, a
step with several matches is ambiguous:

1. the full name, exactly, or the name below the program region
   (``int main(int, char**)/MPI_Recv``);
2. the whole path, component by component from the root or from below the
   program region;
3. a suffix of the path: the key's components match the path's last ones
   (``MPI_Recv``, ``main/MPI_Recv``).

The program region (Score-P's ProgramBegin) is the root of every call path
of a trace that has one: an artificial region of the measurement system.

A key component matches a region name when it equals the name, or the
function name inside a C/C++ signature: the name without its parameter
list and return type (``int main(int, char**)`` -> ``main``,
``void ns::Solver::step(double)`` -> ``ns::Solver::step``), or the last
part of a qualified name (``step``).  Components are never matched partly:
``Recv`` does not match ``MPI_Recv``.
"""

from __future__ import annotations

import difflib
import re
from typing import Sequence

_QUALIFIERS = re.compile(r"(\s*(const|volatile|noexcept|override|final|&&|&))*\s*$")


def _strip_parameters(name: str) -> str:
    """`name` without a trailing balanced parameter list and its qualifiers ('' when there is none)."""
    body = _QUALIFIERS.sub("", name)
    if not body.endswith(")"):
        return ""
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        if body[i] == ")":
            depth += 1
        elif body[i] == "(":
            depth -= 1
            if depth == 0:
                return body[:i].strip()
    return ""


def function_name(region: str) -> str:
    """The function name inside a C/C++ signature (the region name itself otherwise)."""
    name = _strip_parameters(region.strip())
    if not name:
        return region.strip()
    # drop the return type: everything up to the last space, '*' or '&' outside template brackets
    depth, cut = 0, 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0 and ch in " *&":
            cut = i + 1
    return name[cut:] or name


def component_names(region: str) -> set[str]:
    """Every spelling of a path component that matches `region`."""
    names = {region}
    func = function_name(region)
    names.add(func)
    if "::" in func:
        names.add(func.rsplit("::", 1)[1])
    return names


def _split(path: str) -> list[str]:
    return path.split("/")


def _matches(key: list[str], components: list[str]) -> bool:
    return all(k in component_names(c) for k, c in zip(key, components))


def short_name(path: str) -> str:
    """The path with every component reduced to its function name (``main/MPI_Recv``)."""
    return "/".join(function_name(c) for c in _split(path))


def resolve(names: Sequence[str], key: str, root: str | None = None,
            listing: str = "callpath_names lists") -> int:
    """Index of the call path `key` names (see the module docstring); `root`:
    the program region's name when it is the root of every call path.

    Raises KeyError naming the closest call paths when nothing matches
    (ending ``(<listing> all N)``: where the user finds every call path),
    and ValueError naming the candidates when the key is ambiguous.
    """
    if not isinstance(key, str):
        raise TypeError(f"call path must be an index or a name (str), not {type(key).__name__}")
    exact = [i for i, n in enumerate(names) if n == key or (root is not None and n == root + "/" + key)]
    if len(exact) == 1:
        return exact[0]
    wanted = [k.strip() for k in _split(key.strip().strip("/"))]
    split = [_split(n) for n in names]
    skip = 1 if root is not None and wanted[0] != root else 0
    whole = [i for i, c in enumerate(split) if len(c) == len(wanted) + skip and _matches(wanted, c[skip:])]
    if len(whole) == 1:
        return whole[0]
    if len(whole) > 1:
        _ambiguous(names, key, whole)
    suffix = [i for i, c in enumerate(split) if len(c) >= len(wanted) and _matches(wanted, c[len(c) - len(wanted):])]
    if len(suffix) == 1:
        return suffix[0]
    if len(suffix) > 1:
        _ambiguous(names, key, suffix)
    raise KeyError(unknown_message(names, key, listing))


def _ambiguous(names: Sequence[str], key: str, candidates: list[int]) -> None:
    shown = ", ".join(repr(names[i]) for i in candidates[:8])
    more = f" and {len(candidates) - 8} more" if len(candidates) > 8 else ""
    raise ValueError(f"call path {key!r} is ambiguous: it matches {shown}{more}; give more of the path")


def closest(names: Sequence[str], key: str, n: int = 3) -> list[str]:
    """The `n` call paths whose full or short names are most like `key`."""
    spellings: dict[str, str] = {}
    for name in names:
        spellings.setdefault(name, name)
        spellings.setdefault(short_name(name), name)
        spellings.setdefault(_split(name)[-1], name)
        spellings.setdefault(function_name(_split(name)[-1]), name)
    out: list[str] = []
    for match in difflib.get_close_matches(key, list(spellings), n=4 * n, cutoff=0.5):
        if spellings[match] not in out:
            out.append(spellings[match])
    return out[:n]


def unknown_message(names: Sequence[str], key: str, listing: str = "callpath_names lists") -> str:
    near = closest(names, key)
    hint = f"; closest: {', '.join(repr(n) for n in near)}" if near else ""
    return f"unknown call path {key!r}{hint} ({listing} all {len(names)})"
