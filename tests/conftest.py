"""Shared fixtures: the real Score-P traces and writable copies of them."""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED_DATA = Path(os.environ.get("WAITSCOPE_TEST_DATA", REPO.parent / "shared" / "data"))
BUNDLED = REPO / "pkg" / "waitscope" / "data" / "scorep-ping-pong"


def relative_names(obj) -> list[str]:
    """The call-path names of a trace or result below the program region,
    the root of every call path (Score-P's ProgramBegin):
    'synthetic/main/MPI_Recv' -> 'main/MPI_Recv', the program region
    itself -> ''.  Names stay whole when there is no program region."""
    trace = getattr(obj, "trace", obj)
    root = trace.program_region
    names = obj.callpath_names
    if root is None:
        return list(names)
    return ["" if n == root else n[len(root) + 1:] if n.startswith(root + "/") else n for n in names]


def sanitizer_build() -> bool:
    """Whether waitscope._core is the sanitizer build (.ci/sanitize): only it has the
    allocation-failure switch of csrc/common/alloc.h."""
    from waitscope import _core

    return hasattr(_core, "_alloc_fail_after")


# Tests of the sanitizer build are collected only in it: in a normal build they would be
# skipped, and README's test command must run every test it collects.
collect_ignore = [] if sanitizer_build() else ["test_sanitizer_build.py"]


def _data_dir(name: str) -> Path:
    for candidate in (SHARED_DATA / name, REPO / "pkg" / "waitscope" / "data" / name):
        if (candidate / "traces.otf2").exists():
            return candidate
    pytest.skip(f"trace {name} is not available")


@pytest.fixture(scope="session")
def pingpong_dir() -> Path:
    """The real Score-P ping-pong trace (read-only)."""
    return _data_dir("scorep-ping-pong")


@pytest.fixture(scope="session")
def papi_dir() -> Path:
    """The real Score-P ping-pong trace with PAPI counters (read-only)."""
    return _data_dir("scorep-ping-pong-papi")


def writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = os.path.join(root, name)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    return dst


@pytest.fixture
def pingpong_copy(pingpong_dir: Path, tmp_path: Path) -> Path:
    """A writable copy of the ping-pong trace for corruption tests."""
    return writable_copy(pingpong_dir, tmp_path / "pp")


# ---- the MPI launcher matching mpi4py's MPI ---------------------------------------


@functools.lru_cache(maxsize=None)
def mpi4py_implementation() -> str | None:
    """'mpich' or 'openmpi': the MPI this Python's mpi4py was built against (None without one)."""
    from waitscope._parallel import mpi4py_implementation as ask

    return ask(sys.executable)


def mpi_launcher() -> tuple[list[str], dict[str, str]] | None:
    """The command prefix (``mpiexec.mpich`` or ``mpiexec.openmpi --oversubscribe``) that starts
    processes of mpi4py's MPI, and the environment it needs; None when there is none.
    Never the unqualified ``mpiexec``, which may belong to the other MPI."""
    from waitscope._parallel import LAUNCHERS

    name = mpi4py_implementation()
    if name is None:
        return None
    command, env = LAUNCHERS[name]
    path = shutil.which(command[0])
    return None if path is None else ([path, *command[1:]], dict(env))
