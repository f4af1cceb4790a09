"""Loads the parallel mode's extension that matches the MPI mpi4py uses.

setup.py builds one extension per MPI library it finds
(``waitscope._mpi_mpich`` with mpicc.mpich, ``waitscope._mpi_openmpi`` with
mpicc.openmpi).  Debian installs both MPIs side by side, and a process must
not load two MPI libraries: :func:`mpi_module` asks mpi4py which MPI it was
built against (``MPI.Get_library_version()``) and imports that one.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from types import ModuleType

MPI4PY_INSTALL = "MPICC=mpicc.mpich python -m pip install --no-binary=mpi4py mpi4py"
"""The command that builds mpi4py from source against Debian's MPICH (the
binary wheel on PyPI cannot load Debian's MPI libraries)."""

REBUILD = "python -m pip install --no-build-isolation ."
"""Rebuilds waitscope (and its per-MPI extensions) after an MPI was installed."""


class ParallelModeUnavailable(ImportError):
    """The parallel mode cannot run here: mpi4py or the matching extension is missing."""


def implementation(library_version: str) -> str | None:
    """'mpich' or 'openmpi' from an ``MPI_Get_library_version`` string, None for others."""
    text = library_version.lower()
    if "mpich" in text:  # MPICH and its derivatives (Intel MPI, MVAPICH) report MPICH
        return "mpich"
    if "open mpi" in text:
        return "openmpi"
    return None


def mpi_module() -> ModuleType:
    """The extension ``waitscope._mpi_<implementation>`` for the MPI that mpi4py uses.

    Raises :class:`ParallelModeUnavailable` with the command that fixes it when
    mpi4py cannot be imported (missing, or a binary wheel that cannot load the
    system's MPI) or waitscope was built without that MPI.
    """
    try:
        from mpi4py import MPI
    except (ImportError, OSError, RuntimeError) as exc:
        raise ParallelModeUnavailable(
            f"the parallel mode needs mpi4py built against the system MPI, and importing mpi4py.MPI "
            f"failed ({exc}); install it with: {MPI4PY_INSTALL}"
        ) from exc
    version = MPI.Get_library_version()
    name = implementation(version)
    if name is None:
        first_line = version.strip().splitlines()[0] if version.strip() else "unknown"
        raise ParallelModeUnavailable(
            f"mpi4py uses an MPI that waitscope does not build for ({first_line}); "
            f"use MPICH or Open MPI, e.g. {MPI4PY_INSTALL}"
        )
    try:
        return importlib.import_module(f"waitscope._mpi_{name}")
    except ImportError as exc:
        raise ParallelModeUnavailable(
            f"mpi4py uses {name}, but waitscope was built without waitscope._mpi_{name} ({exc}); "
            f"install the {name} compiler (Debian: apt-get install "
            f"{'libmpich-dev' if name == 'mpich' else 'libopenmpi-dev'}) and rebuild: {REBUILD}"
        ) from exc


LAUNCHERS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "mpich": (("mpiexec.mpich",), {}),
    # Open MPI refuses root without these, and more processes than cores without --oversubscribe
    "openmpi": (("mpiexec.openmpi", "--oversubscribe"),
                {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}),
}
"""Debian's launcher of each MPI, its options and the environment it needs."""


def mpi4py_implementation(python: str = sys.executable) -> str | None:
    """'mpich' or 'openmpi': the MPI that `python`'s mpi4py was built against (None without a
    working mpi4py).  Asked in a subprocess without MPI_Init, so that the caller does not
    start MPI (a parent that launches mpiexec must not)."""
    code = ("import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; "
            "print(MPI.Get_library_version())")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return implementation(out.stdout) if out.returncode == 0 else None


def launcher(python: str = sys.executable) -> tuple[list[str], dict[str, str]] | None:
    """The command prefix that starts processes of the MPI `python`'s mpi4py uses
    (``mpiexec.mpich`` or ``mpiexec.openmpi --oversubscribe``) and the environment
    variables it needs; None when there is none.  Never the unqualified ``mpiexec``,
    which on Debian may belong to the other MPI."""
    name = mpi4py_implementation(python)
    if name is None:
        return None
    command, env = LAUNCHERS[name]
    path = shutil.which(command[0])
    return None if path is None else ([path, *command[1:]], dict(env))
