"""Measuring unmodified MPI programs with the interposition library.

``pip install`` builds ``waitscope/lib/libwaitscope-pmpi-<mpi>.so`` once for
every MPI found (``mpich``, ``openmpi``).  Preloaded into an MPI program
(``LD_PRELOAD``), the library wraps the MPI calls through the PMPI
interface and, as the environment asks, writes an OTF2 trace
(``WAITSCOPE_TRACE_DIR``) and/or the wait-state profile
(``WAITSCOPE_PROFILE_DIR``).  This module finds the right library for a
command line and prepares the environment to run it with.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from . import _core

__all__ = ["MPIS", "library_path", "available", "detect_mpi", "environment", "finish_trace", "openmp_runtime",
           "llvm_openmp"]

MPIS = ("mpich", "openmpi")

_LAUNCHERS = {
    "mpiexec.mpich": "mpich",
    "mpirun.mpich": "mpich",
    "mpiexec.hydra": "mpich",
    "mpiexec.openmpi": "openmpi",
    "mpirun.openmpi": "openmpi",
    "orterun": "openmpi",
    "prterun": "openmpi",
}


def _lib_dir() -> Path:
    return Path(__file__).resolve().parent / "lib"


def library_path(mpi: str) -> str:
    """Path of the interposition library built for ``mpi`` ("mpich" or "openmpi").

    Raises ValueError for an unknown MPI name and FileNotFoundError when the
    library was not built (that MPI's compiler wrapper, ``mpicc.<mpi>``, was
    not found when waitscope was installed)."""
    if mpi not in MPIS:
        raise ValueError(f"unknown MPI {mpi!r}: expected one of {', '.join(MPIS)}")
    path = _lib_dir() / f"libwaitscope-pmpi-{mpi}.so"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: the interposition library for {mpi} was not built; install the MPI's development "
            f"package (mpicc.{mpi}) and reinstall waitscope"
        )
    return str(path)


def available() -> list[str]:
    """The MPIs an interposition library was built for."""
    return [m for m in MPIS if (_lib_dir() / f"libwaitscope-pmpi-{m}.so").is_file()]


_NAMES = {"mpich": "MPICH", "openmpi": "Open MPI"}


def _from_name(name: str) -> str | None:
    base = os.path.basename(name)
    if base in _LAUNCHERS:
        return _LAUNCHERS[base]
    for suffix, mpi in ((".mpich", "mpich"), (".openmpi", "openmpi")):
        if base.endswith(suffix):
            return mpi
    return None


def _launcher(first: str) -> tuple[bool, str | None]:
    """(whether ``first`` is an MPI launcher, the MPI it belongs to or None):
    by its name, or a bare ``mpiexec``/``mpirun`` through its symlinks."""
    base = os.path.basename(first)
    if base in _LAUNCHERS:
        return True, _LAUNCHERS[base]
    if not base.startswith(("mpiexec", "mpirun")):
        return False, None
    mpi = _from_name(base)
    if not mpi:
        found = shutil.which(first) or first
        mpi = _from_name(os.path.realpath(found)) if os.path.exists(found) else None
    return True, mpi


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _program(args: Sequence[str]) -> str | None:
    """The program a launcher's arguments start: the first that names an
    executable ELF file (directly or on PATH); None if there is none (a
    script, an interpreter's argument...)."""
    for arg in args:
        if arg == ":":  # MPMD: the first program decides
            break
        if arg.startswith("-"):
            continue
        path = arg if "/" in arg else shutil.which(arg)
        if path and os.path.isfile(path) and _is_elf(path):
            return os.path.realpath(path)
    return None


def _from_ldd(executable: str) -> tuple[str | None, str | None]:
    """(the MPI an ELF file links, the library's name) from ``ldd``, which
    follows the libraries it needs to theirs; (None, None) if it links none."""
    for name, resolved in _ldd_names(executable):
        if not name.startswith(("libmpich.so", "libmpi.so")):  # the C library, which the others need
            continue
        if name.startswith(("libmpich.so", "libmpi.so.12")) or "/mpich/" in resolved:
            return "mpich", name
        return "openmpi", name
    return None, None


# OpenMP runtimes by the name a program links them with
_OPENMP_RUNTIMES = ("libgomp.so", "libomp.so", "libiomp5.so")
# where Debian and others install LLVM's OpenMP runtime
_LLVM_OPENMP = ("/usr/lib/x86_64-linux-gnu/libomp.so.5", "/usr/lib/aarch64-linux-gnu/libomp.so.5",
                "/usr/lib64/libomp.so", "/usr/lib/libomp.so.5", "/usr/local/lib/libomp.so")


def _ldd_names(executable: str) -> list[tuple[str, str]]:
    try:
        out = subprocess.run(["ldd", executable], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    pairs = []
    for line in out.splitlines():
        name = line.strip().split(" ")[0]
        resolved = line.split("=>")[1].strip().split(" ")[0] if "=>" in line else name
        pairs.append((name, resolved))
    return pairs


def openmp_runtime(command: Sequence[str]) -> str | None:
    """The OpenMP runtime the command's program links (``libgomp.so.1``,
    ``libomp.so.5``, ...: its name as ``ldd`` shows it), None if it links
    none (the program on the command line is found as for
    :func:`detect_mpi`)."""
    if not command:
        return None
    is_launcher, _ = _launcher(command[0])
    program = _program(command[1:] if is_launcher else command[:1])
    for name, _resolved in _ldd_names(program) if program else []:
        if name.startswith(_OPENMP_RUNTIMES):
            return name
    return None


def llvm_openmp() -> str | None:
    """Path of LLVM's OpenMP runtime (``libomp.so.5``), which has the OpenMP
    tools interface (OMPT) the tracer records OpenMP through, and runs
    GCC-compiled programs too (its libgomp compatibility); None if it is
    not installed (Debian: ``apt-get install libomp5``)."""
    for path in _LLVM_OPENMP:
        if os.path.isfile(path):
            return path
    return None


def detect_mpi(command: Sequence[str]) -> str:
    """Which MPI a command line runs with: "mpich" or "openmpi".

    ``WAITSCOPE_MPI`` overrides.  Otherwise the program decides: the first
    executable ELF file on the command line (after the launcher's options),
    by the libmpi it links (``ldd``).  A program that links none (a Python
    interpreter, a script) is run with the launcher's MPI
    (``mpiexec.mpich``, ``mpiexec.hydra``, ``mpirun.mpich`` -> mpich;
    ``mpiexec.openmpi``, ``orterun``, ``mpirun.openmpi`` -> openmpi; a bare
    ``mpiexec``/``mpirun`` through its symlinks).  Raises ValueError when
    it cannot tell, and when the program links one MPI and the launcher is
    the other's: such a run starts every rank on its own (an
    MPI_COMM_WORLD of one), which no library can measure."""
    forced = os.environ.get("WAITSCOPE_MPI")
    if forced:
        if forced not in MPIS:
            raise ValueError(f"WAITSCOPE_MPI={forced!r}: expected one of {', '.join(MPIS)}")
        return forced
    if not command:
        raise ValueError("empty command line")
    first = command[0]
    is_launcher, launcher_mpi = _launcher(first)
    program = _program(command[1:] if is_launcher else command[:1])
    program_mpi, library = _from_ldd(program) if program else (None, None)
    if program_mpi and launcher_mpi and program_mpi != launcher_mpi:
        raise ValueError(
            f"{program} is linked with {_NAMES[program_mpi]} ({library}), but {first} is "
            f"{_NAMES[launcher_mpi]}'s launcher: every rank would start on its own, as a one-process "
            f"MPI_COMM_WORLD, and the measurement would be meaningless. Run it with {_NAMES[program_mpi]}'s "
            f"launcher (mpiexec.{program_mpi}), or rebuild it with mpicc.{launcher_mpi} / mpifort.{launcher_mpi}"
        )
    if program_mpi:
        return program_mpi
    if launcher_mpi:
        return launcher_mpi
    if is_launcher:
        raise ValueError(f"{first}: cannot tell which MPI this launcher belongs to; set WAITSCOPE_MPI")
    raise ValueError(
        f"{first}: cannot tell which MPI the command uses (not a known launcher, no libmpi linked); "
        "set WAITSCOPE_MPI=mpich or WAITSCOPE_MPI=openmpi"
    )


def environment(
    command: Sequence[str],
    trace_dir: str | os.PathLike[str] | None = None,
    profile_dir: str | os.PathLike[str] | None = None,
    callpath: str | None = None,
    mpi: str | None = None,
    base: Mapping[str, str] | None = None,
    openmp: bool = True,
    buffer: str | int | None = None,
) -> dict[str, str]:
    """The environment to run ``command`` with the library preloaded.

    ``callpath`` is "stack" or "instrument" (``WAITSCOPE_CALLPATH``; by
    default the mode follows the program).  The trace goes to
    ``trace_dir/traces.otf2``, the profile to ``profile_dir/profile.json``.
    A trace records the program's OpenMP threads through the OpenMP tools
    interface (OMPT) unless ``openmp`` is false (``WAITSCOPE_OPENMP=off``):
    a program linked with GCC's libgomp, which has no such interface, then
    runs on LLVM's libomp (:func:`llvm_openmp`, preloaded) where it is
    installed.  ``buffer`` is the size of the window of each event file a
    process keeps in memory (``WAITSCOPE_BUFFER``: bytes, or a size such as
    "16M", "64MiB", "1G"; by default 1.25 MiB): see :func:`buffer_bytes`.
    The launcher passes the environment on to the ranks (Open MPI and MPICH
    both forward it on one machine; for several machines use the
    launcher's option to export ``LD_PRELOAD`` and the ``WAITSCOPE_*``
    variables)."""
    if trace_dir is None and profile_dir is None:
        raise ValueError("give a trace directory, a profile directory or both")
    if callpath not in (None, "stack", "instrument"):
        raise ValueError(f"callpath={callpath!r}: expected 'stack' or 'instrument'")
    if buffer is not None:
        buffer_bytes(buffer)
    lib = library_path(mpi or detect_mpi(command))
    env = dict(os.environ if base is None else base)
    # after what is preloaded already (a sanitizer runtime must stay first);
    # any preloaded library still comes before libmpi
    preload = env.get("LD_PRELOAD", "")
    runtime = openmp_runtime(command) if trace_dir is not None and openmp else None
    llvm = llvm_openmp() if runtime and runtime.startswith("libgomp") else None
    if llvm and llvm not in preload.split(":"):
        preload = (preload + ":" if preload else "") + llvm
    env["LD_PRELOAD"] = (preload + ":" if preload else "") + lib
    for key in ("WAITSCOPE_TRACE_DIR", "WAITSCOPE_PROFILE_DIR", "WAITSCOPE_CALLPATH", "WAITSCOPE_OPENMP"):
        env.pop(key, None)
    if buffer is not None:
        env["WAITSCOPE_BUFFER"] = str(buffer)
    if not openmp:
        env["WAITSCOPE_OPENMP"] = "off"
    if trace_dir is not None:
        env["WAITSCOPE_TRACE_DIR"] = os.path.abspath(os.fspath(trace_dir))
    if profile_dir is not None:
        env["WAITSCOPE_PROFILE_DIR"] = os.path.abspath(os.fspath(profile_dir))
    if callpath is not None:
        env["WAITSCOPE_CALLPATH"] = callpath
    return env


_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kKmMgG]?)(?:i?[bB])?\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_WINDOW_ALIGN = 512 * 40  # whole pages of 40-byte records


def buffer_bytes(size: str | int) -> int:
    """The bytes of the event-file window a traced process keeps in memory
    for a size given as ``WAITSCOPE_BUFFER`` is ("16M", "64MiB", "1G",
    "1048576"): rounded down to a whole number of pages holding whole
    records, at least 20 KiB.  Raises ValueError naming the size when it
    cannot be read or is above 64 GiB."""
    m = _SIZE.match(str(size))
    value = float(m.group(1)) * _UNITS[m.group(2).lower()] if m else 0.0
    if not m or value <= 0 or value > 64 * (1 << 30):
        raise ValueError(f"buffer={size!r}: expected a size such as 16M, 64MiB or 1G (at most 64G)")
    return max(_WINDOW_ALIGN, int(value) // _WINDOW_ALIGN * _WINDOW_ALIGN)


def pending(trace_dir: str | os.PathLike[str]) -> bool:
    """Whether ``trace_dir`` holds per-rank files that were not unified yet
    (the run was cut short before MPI_Finalize)."""
    return (Path(trace_dir) / ".waitscope").is_dir()


def finish_trace(trace_dir: str | os.PathLike[str]) -> int:
    """Builds ``trace_dir/traces.otf2`` from the per-rank files of a run that
    did not reach MPI_Finalize (crash, MPI_Abort, killed) and returns the
    number of ranks that were cut short; 0 when there is nothing to do.
    The archive names those ranks; :func:`waitscope.open` refuses it unless
    ``allow_partial=True``."""
    if not pending(trace_dir):
        return 0
    return int(_core.pmpi_unify(os.fspath(trace_dir)))
