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
from setuptools.command.build_ext import build_ext

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


def mpi_implementations():
    """The MPI compiler wrappers found on this machine: {"mpich": path, "openmpi": path}.

    Debian installs both MPIs side by side with suffixed wrappers; the
    unqualified `mpicc` may point to either and is not used here."""
    found = {}
    for name in ("mpich", "openmpi"):
        path = shutil.which("mpicc." + name)
        if path is not None:
            found[name] = path
    return found


PMPI_SOURCES = sorted(glob.glob(os.path.join("csrc", "pmpi", "*.c"))) + [
    os.path.join("csrc", "common", "error.c"),
    os.path.join("csrc", "common", "util.c"),
    os.path.join("csrc", "trace", "trace.c"),
    os.path.join("csrc", "trace", "otf2_reader.c"),
    os.path.join("csrc", "trace", "otf2_writer.c"),
]


class build_ext_with_pmpi(build_ext):
    """Builds the extensions, then the LD_PRELOAD interposition library
    (csrc/pmpi) once per MPI found, with that MPI's compiler wrapper:
    waitscope/lib/libwaitscope-pmpi-<mpi>.so.  The library is a plain
    shared object: it links OTF2 and the MPI, never Python."""

    def run(self):
        super().run()
        if os.environ.get("WAITSCOPE_NO_MPI"):
            return
        outdirs = {os.path.join(self.build_lib, "waitscope", "lib")}
        if self.inplace or getattr(self, "editable_mode", False):
            outdirs.add(os.path.join("pkg", "waitscope", "lib"))
        for name, mpicc in mpi_implementations().items():
            for outdir in sorted(outdirs):
                os.makedirs(outdir, exist_ok=True)
                target = os.path.join(outdir, "libwaitscope-pmpi-%s.so" % name)
                if not self.force and os.path.exists(target) and all(
                    os.path.getmtime(target) >= os.path.getmtime(f) for f in PMPI_SOURCES + headers
                ):
                    continue
                # never sanitizer flags: the library is preloaded into MPI
                # programs and launchers (its unification code is sanitized
                # as part of waitscope._core)
                cmd = [mpicc, "-shared", "-fPIC", "-fvisibility=hidden", "-o", target, *PMPI_SOURCES,
                       "-Icsrc", *PMPI_COMPILE, *otf2_cflags, *otf2_ldflags, "-ldl", "-lm"]
                self.announce("building %s" % target, level=2)
                subprocess.check_call(cmd)


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
PMPI_COMPILE = list(common_compile)
if os.environ.get("WAITSCOPE_SANITIZE"):
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    common_compile += san
    common_link += san
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]

extensions = [
    Extension(
        "waitscope._core",
        sources=sources("common", "trace", "replay", "analysis", "report", "python")
        + [os.path.join("csrc", "pmpi", "unify.c"), os.path.join("csrc", "pmpi", "rankfiles.c")],
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

setup(ext_modules=extensions, cmdclass={"build_ext": build_ext_with_pmpi})
