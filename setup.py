"""Build of the waitscope C extensions.

waitscope._core needs OTF2, found through `otf2-config` (Debian package
libotf2-trace-dev).  waitscope._mpi, the parallel mode, is built only when
an MPI compiler wrapper (`mpicc`) is found; without it the package works
in one process.  Set WAITSCOPE_SANITIZE=1 to build with AddressSanitizer
and UBSan, WAITSCOPE_NO_MPI=1 to skip the MPI part.
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup

MPI_ONLY = {os.path.join("csrc", "replay", "transport_mpi.c"), os.path.join("csrc", "python", "py_mpi.c")}


def otf2_flags():
    config = shutil.which("otf2-config")
    if config is None:
        sys.exit(
            "waitscope needs the OTF2 library and its otf2-config tool, which were not found.\n"
            "On Debian/Ubuntu install them with:  apt-get install libotf2-trace-dev otf2-tools"
        )

    def ask(*args):
        return shlex.split(subprocess.check_output([config, *args], text=True))

    return ask("--cflags"), ask("--ldflags") + ask("--libs")


def mpi_flags():
    """Compile and link flags of the MPI library, from `mpicc -show`."""
    if os.environ.get("WAITSCOPE_NO_MPI"):
        return None
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        return None
    try:
        words = shlex.split(subprocess.check_output([mpicc, "-show"], text=True))[1:]
    except (OSError, subprocess.CalledProcessError):
        return None
    compile_flags = [w for w in words if w.startswith(("-I", "-D"))]
    link_flags = [w for w in words if w.startswith(("-L", "-l", "-Wl"))]
    return compile_flags, link_flags


def numpy_include():
    import numpy

    return numpy.get_include()


def sources(*folders):
    out = []
    for folder in folders:
        out += sorted(glob.glob(os.path.join("csrc", folder, "*.c")))
    return [s for s in out if s not in MPI_ONLY]


headers = sorted(glob.glob(os.path.join("csrc", "**", "*.h"), recursive=True))
otf2_cflags, otf2_ldflags = otf2_flags()
common_compile = ["-std=c11", "-Wall", "-Wextra", "-O2", "-D_POSIX_C_SOURCE=200809L"]
common_link = []
if os.environ.get("WAITSCOPE_SANITIZE"):
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    common_compile += san
    common_link += san
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]

extensions = [
    Extension(
        "waitscope._core",
        sources=sources("common", "trace", "replay", "analysis", "report", "python"),
        depends=headers,
        include_dirs=["csrc", numpy_include()],
        extra_compile_args=common_compile + otf2_cflags,
        extra_link_args=common_link + otf2_ldflags,
        define_macros=macros,
    )
]

mpi = mpi_flags()
if mpi is not None:
    mpi_compile, mpi_link = mpi
    extensions.append(
        Extension(
            "waitscope._mpi",
            sources=[
                os.path.join("csrc", "common", "error.c"),
                os.path.join("csrc", "common", "util.c"),
                os.path.join("csrc", "trace", "trace.c"),
                os.path.join("csrc", "replay", "transport_local.c"),
                os.path.join("csrc", "replay", "transport_mpi.c"),
                os.path.join("csrc", "python", "py_mpi.c"),
            ],
            depends=headers,
            include_dirs=["csrc", numpy_include()],
            extra_compile_args=common_compile + mpi_compile,
            extra_link_args=common_link + mpi_link,
            define_macros=macros,
        )
    )

setup(ext_modules=extensions)
