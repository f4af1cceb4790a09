"""Build of the waitscope C extension.

OTF2 is found through `otf2-config` (Debian package libotf2-trace-dev).
Set WAITSCOPE_SANITIZE=1 to build with AddressSanitizer and UBSan.
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup


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


def numpy_include():
    import numpy

    return numpy.get_include()


def sources(*folders):
    out = []
    for folder in folders:
        out += sorted(glob.glob(os.path.join("csrc", folder, "*.c")))
    return out


otf2_cflags, otf2_ldflags = otf2_flags()
extra_compile = ["-std=c11", "-Wall", "-Wextra", "-O2", "-D_POSIX_C_SOURCE=200809L"] + otf2_cflags
extra_link = list(otf2_ldflags)
if os.environ.get("WAITSCOPE_SANITIZE"):
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    extra_compile += san
    extra_link += san

core = Extension(
    "waitscope._core",
    sources=sources("common", "trace", "replay", "analysis", "report", "python"),
    include_dirs=["csrc", numpy_include()],
    extra_compile_args=extra_compile,
    extra_link_args=extra_link,
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
)

setup(ext_modules=[core])
