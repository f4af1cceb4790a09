"""Build of the waitscope C extensions.

waitscope._core needs OTF2, found through the first `otf2-config` on PATH
(Debian package libotf2-trace-dev, or a cluster's module); libraries outside
the system's folders get a run path, so no LD_LIBRARY_PATH is needed later.
The parallel mode is built once per MPI library found
(see mpi_implementations): waitscope._mpi_mpich with mpicc.mpich,
waitscope._mpi_openmpi with mpicc.openmpi, or with the plain `mpicc` on PATH
(a module's), filed under the MPI its mpi.h names; at run time waitscope loads the
one matching the MPI that mpi4py uses.  Without MPI the package works in
one process.  The LD_PRELOAD interposition library (csrc/pmpi) is built
once per MPI found too: waitscope/lib/libwaitscope-pmpi-<mpi>.so.  Set
WAITSCOPE_SANITIZE=1 to build with AddressSanitizer
and UBSan (and the allocation-failure switch of csrc/common/alloc.h), WAITSCOPE_NO_MPI=1 to skip the MPI part.
"""
import copy
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

MPI_ONLY = {os.path.join("csrc", "replay", "transport_mpi.c"), os.path.join("csrc", "replay", "transport_mpi_coll.c"),
            os.path.join("csrc", "python", "py_mpi.c")}


SYSTEM_LIB_DIR = re.compile(r"^/(usr/)?lib(32|64)?(/[A-Za-z0-9_]+-linux-gnu[A-Za-z0-9_]*)?/?$")
"""Library folders the dynamic loader searches anyway (no run path needed for them)."""


def rpath_flags(link_flags):
    """A run path (-Wl,-rpath,DIR) for every -LDIR of `link_flags` outside the system's folders:
    a library from a cluster's module (OTF2, MPI) is then found at run time without
    LD_LIBRARY_PATH, after the module is unloaded too."""
    dirs = [w[2:] for w in link_flags if w.startswith("-L") and len(w) > 2]
    return ["-Wl,-rpath," + d for d in dict.fromkeys(dirs) if not SYSTEM_LIB_DIR.match(os.path.normpath(d))]


def otf2_flags():
    """Compile and link flags of OTF2, from the first otf2-config on PATH (Debian's, or a
    module's: `module load otf2` puts its otf2-config first)."""
    config = shutil.which("otf2-config")
    if config is None:
        sys.exit(
            "waitscope needs the OTF2 library and its otf2-config tool, which were not found on PATH.\n"
            "On Debian/Ubuntu install them with:  apt-get install libotf2-trace-dev otf2-tools\n"
            "On a cluster load its module (module load otf2), or put the bin folder of an OTF2\n"
            "installation first on PATH (export PATH=$HOME/otf2/bin:$PATH), then pip install again."
        )

    def ask(*args):
        return shlex.split(subprocess.check_output([config, *args], text=True))

    ldflags = ask("--ldflags") + ask("--libs")
    return ask("--cflags"), ldflags + rpath_flags(ldflags)


MPI_COMPILERS = (("mpich", "mpicc.mpich"), ("openmpi", "mpicc.openmpi"))
"""The MPI compiler wrappers Debian installs side by side, by implementation."""


def _mpicc_show(mpicc):
    """The command line `mpicc` runs (MPICH: -show, Open MPI: --showme), or None."""
    for option in ("-show", "--showme"):
        try:
            out = subprocess.run([mpicc, option], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout
    return None


def _implementation_of_headers(mpicc):
    """'mpich' or 'openmpi' from the macros the wrapper's mpi.h defines (None if it cannot tell):
    MPICH (and Intel MPI, MVAPICH) define MPICH_VERSION, Open MPI OMPI_MAJOR_VERSION."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "which_mpi.c")
        with open(source, "w") as f:
            f.write("#include <mpi.h>\n")
        try:
            out = subprocess.run([mpicc, "-E", "-dM", source], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
    if out.returncode != 0:
        return None
    defined = {line.split()[1] for line in out.stdout.splitlines() if line.startswith("#define ") and
               len(line.split()) > 1}
    if "OMPI_MAJOR_VERSION" in defined:
        return "openmpi"
    if "MPICH_VERSION" in defined:
        return "mpich"
    return None


def _implementation_of(show):
    """'mpich' or 'openmpi' from the libraries an `mpicc -show` line links."""
    words = shlex.split(show)
    if "-lmpich" in words or any("mpich" in w for w in words if w.startswith("-I")):
        return "mpich"
    if any("openmpi" in w for w in words) or "-lmpi" in words:
        return "openmpi"
    return None


def mpi_implementations():
    """The MPI libraries this machine can build against: implementation -> compiler wrapper.

    E.g. {"mpich": "/usr/bin/mpicc.mpich", "openmpi": "/usr/bin/mpicc.openmpi"}, only
    those found.  Debian's qualified wrappers come first; a plain `mpicc` is added
    for the implementation its -show/--showme line links, unless already found.
    WAITSCOPE_NO_MPI=1 gives {}.
    """
    if os.environ.get("WAITSCOPE_NO_MPI"):
        return {}
    found = {}
    for name, wrapper in MPI_COMPILERS:
        path = shutil.which(wrapper)
        if path is not None and _mpicc_show(path) is not None:
            found[name] = path
    plain = shutil.which("mpicc")
    if plain is not None:
        show = _mpicc_show(plain)
        # the header says which MPI it is; the libraries of the -show line only guess (a module's
        # MPICH 4 links -lmpi, as Open MPI does)
        name = None if show is None else (_implementation_of_headers(plain) or _implementation_of(show))
        if name is not None and name not in found:
            found[name] = plain
    return found


def mpi_flags(mpicc):
    """Compile and link flags of the MPI library of one compiler wrapper."""
    words = shlex.split(_mpicc_show(mpicc) or "")[1:]
    compile_flags = [w for w in words if w.startswith(("-I", "-D"))]
    link_flags = [w for w in words if w.startswith(("-L", "-l", "-Wl"))]
    return compile_flags, link_flags + rpath_flags(link_flags)


def headers():
    return sorted(glob.glob(os.path.join("csrc", "**", "*.h"), recursive=True))


COMMON_COMPILE = ["-std=c11", "-Wall", "-Wextra", "-O2", "-D_POSIX_C_SOURCE=200809L"]

PMPI_SOURCES = sorted(glob.glob(os.path.join("csrc", "pmpi", "*.c"))) + [
    os.path.join("csrc", "common", "alloc.c"),
    os.path.join("csrc", "common", "error.c"),
    os.path.join("csrc", "common", "util.c"),
    os.path.join("csrc", "trace", "trace.c"),
    os.path.join("csrc", "trace", "event_columns.c"),
    os.path.join("csrc", "trace", "otf2_check.c"),
    os.path.join("csrc", "trace", "otf2_errors.c"),
    os.path.join("csrc", "trace", "otf2_definitions.c"),
    os.path.join("csrc", "trace", "otf2_events.c"),
    os.path.join("csrc", "trace", "otf2_writer.c"),
    os.path.join("csrc", "trace", "otf2_write_events.c"),
    os.path.join("csrc", "trace", "otf2_threads.c"),
    os.path.join("csrc", "trace", "otf2_rows.c"),
]


class build_ext_with_pmpi(build_ext):
    """Builds the extensions, then the LD_PRELOAD interposition library
    (csrc/pmpi) once per MPI found, with that MPI's compiler wrapper:
    waitscope/lib/libwaitscope-pmpi-<mpi>.so.  The library is a plain
    shared object: it links OTF2 and the MPI, never Python."""

    def build_extension(self, ext):
        # a build folder per extension: the MPI modules compile the same
        # sources with different MPI headers, and with --parallel they are
        # built at once, in threads sharing this command (hence a copy of
        # it, not a changed build_temp)
        worker = copy.copy(self)
        worker.build_temp = os.path.join(self.build_temp, ext.name)
        super(build_ext_with_pmpi, worker).build_extension(ext)

    def run(self):
        super().run()
        outdirs = {os.path.join(self.build_lib, "waitscope", "lib")}
        if self.inplace or getattr(self, "editable_mode", False):
            outdirs.add(os.path.join("pkg", "waitscope", "lib"))
        otf2_cflags, otf2_ldflags = otf2_flags()
        inputs = PMPI_SOURCES + headers()
        for name, mpicc in sorted(mpi_implementations().items()):
            for outdir in sorted(outdirs):
                os.makedirs(outdir, exist_ok=True)
                target = os.path.join(outdir, "libwaitscope-pmpi-%s.so" % name)
                if not self.force and os.path.exists(target) and all(
                    os.path.getmtime(target) >= os.path.getmtime(f) for f in inputs
                ):
                    continue
                # never sanitizer flags: the library is preloaded into MPI
                # programs and launchers (its unification code is sanitized
                # as part of waitscope._core)
                cmd = [mpicc, "-shared", "-fPIC", "-fvisibility=hidden", "-o", target, *PMPI_SOURCES,
                       "-Icsrc", *COMMON_COMPILE, *otf2_cflags, *otf2_ldflags, "-ldl", "-lm"]
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


def extensions():
    """waitscope._core and one waitscope._mpi_<implementation> per MPI library found."""
    depends = headers()
    otf2_cflags, otf2_ldflags = otf2_flags()
    common_compile = list(COMMON_COMPILE)
    common_link = []
    macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
    if os.environ.get("WAITSCOPE_SANITIZE"):
        san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
        common_compile += san
        common_link += san
        # the allocation-failure switch of the tests (csrc/common/alloc.h)
        macros.append(("WS_ALLOC_FAILURES", "1"))
        # invariant checks (WS_CHECK, csrc/common/error.h)
        macros.append(("WS_CHECKS", "1"))

    out = [
        Extension(
            "waitscope._core",
            sources=sources("api", "common", "trace", "replay", "analysis", "python")
            + [os.path.join("csrc", "pmpi", f) for f in ("unify.c", "unify_threads.c", "unify_teams.c", "rankfiles.c", "manifest.c")],
            depends=depends,
            include_dirs=["csrc", numpy_include()],
            extra_compile_args=common_compile + otf2_cflags,
            extra_link_args=common_link + otf2_ldflags,
            define_macros=macros,
        )
    ]

    for implementation, mpicc in sorted(mpi_implementations().items()):
        mpi_compile, mpi_link = mpi_flags(mpicc)
        module = f"_mpi_{implementation}"
        out.append(
            Extension(
                f"waitscope.{module}",
                sources=[
                    os.path.join("csrc", "common", "alloc.c"),
                    os.path.join("csrc", "common", "error.c"),
                    os.path.join("csrc", "common", "util.c"),
                    os.path.join("csrc", "replay", "transport_local.c"),
                    os.path.join("csrc", "replay", "transport_mpi.c"),
                    os.path.join("csrc", "replay", "transport_mpi_coll.c"),
                    os.path.join("csrc", "python", "py_mpi.c"),
                ],
                depends=depends,
                include_dirs=["csrc", numpy_include()],
                extra_compile_args=common_compile + mpi_compile,
                extra_link_args=common_link + mpi_link,
                define_macros=macros + [("WS_MPI_MODULE", module)],
            )
        )
    return out


if __name__ == "__main__":
    setup(ext_modules=extensions(), cmdclass={"build_ext": build_ext_with_pmpi})
