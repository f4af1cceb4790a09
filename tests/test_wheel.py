"""The binary wheel (tools/build_wheel.sh) installs and runs where the OTF2 library is missing.

The test builds the wheel, installs it into a fresh virtual environment
and analyses the bundled trace in a private mount namespace
(``unshare --mount``) in which the system's OTF2 library files are
replaced by empty files (a bind mount of /dev/null over each).  Inside
that namespace it first shows that the OTF2 library cannot be loaded and
that the development install of waitscope (which links the system's OTF2)
fails to import; then the wheel's waitscope must import, load its OTF2 from
the wheel's own waitscope.libs/ (read from /proc/self/maps) and give the
same analysis as the development install outside the namespace.  That
makes the mount namespace: CI runs as root on Debian.

The MPI libraries must not be in the wheel: its MPI extensions link the
system's MPI, as ldd shows after installing.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import waitscope
from waitscope.examples import PING_PONG

ROOT = Path(__file__).resolve().parent.parent
OTF2_FILES = sorted({os.path.realpath(p) for p in glob.glob("/usr/lib/x86_64-linux-gnu/libopen-trace-format2.so*")
                     + glob.glob("/usr/lib/x86_64-linux-gnu/libotf2.so*")})

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                       reason="hiding the system's OTF2 library needs root and unshare (CI has both)"),
    # .ci/sanitize runs the suite again on a sanitizer build of the C core in a scratch copy; the wheel
    # is a build of its own (without sanitizers), tested once in the plain run
    pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                       reason="the wheel is tested in the plain run, not in the sanitizer run"),
]
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD", "PYTHONHOME")}
"""The environment of the fresh install: nothing of the development install leaks into it."""


def hidden(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    """Runs `cmd` in a mount namespace where the system's OTF2 library files are empty."""
    mounts = " && ".join(f"mount --bind /dev/null {f}" for f in OTF2_FILES)
    kw.setdefault("env", CLEAN_ENV)
    return subprocess.run(["unshare", "--mount", "--", "sh", "-c", f'{mounts} && exec "$@"', "sh", *cmd],
                          capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    proc = subprocess.run(["bash", str(ROOT / "tools" / "build_wheel.sh"), str(out)], capture_output=True, text=True,
                          env={**CLEAN_ENV, "PYTHON": sys.executable}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.is_file() and "manylinux" in path.name
    return path


@pytest.fixture(scope="module")
def fresh_venv(wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True, timeout=120,  # type: ignore[attr-defined]
                   env=CLEAN_ENV)
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300, env=CLEAN_ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return venv


def test_wheel_bundles_otf2_but_not_mpi(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    bundled = [n for n in names if n.startswith("waitscope.libs/")]
    assert any("libopen-trace-format2" in n for n in bundled), bundled
    assert not [n for n in bundled if "libmpi" in n or "libopen-rte" in n or "libopen-pal" in n], bundled
    assert "waitscope/_core.cpython-%d%d-x86_64-linux-gnu.so" % sys.version_info[:2] in names
    assert any(n.startswith("waitscope/data/scorep-ping-pong/") for n in names)  # the bundled trace


def test_installed_mpi_extensions_use_the_system_mpi(fresh_venv):
    site = next((fresh_venv / "lib").glob("python3*/site-packages/waitscope"))
    checked = 0
    for ext, lib in (("_mpi_mpich", "libmpich.so"), ("_mpi_openmpi", "libmpi.so")):
        for so in site.glob(f"{ext}.*.so"):
            ldd = subprocess.run(["ldd", str(so)], capture_output=True, text=True, check=True).stdout
            line = next(x for x in ldd.splitlines() if lib in x)
            assert "/usr/lib/" in line or " /lib/" in line, line
            checked += 1
    assert checked >= 1
    # the interposition libraries (LD_PRELOADed into MPI programs) find the wheel's OTF2 through their RPATH
    preload = sorted((site / "lib").glob("libwaitscope-pmpi-*.so"))
    assert preload
    for so in preload:
        ldd = subprocess.run(["ldd", str(so)], capture_output=True, text=True, check=True).stdout
        line = next(x for x in ldd.splitlines() if "libopen-trace-format2" in x)
        assert "/waitscope.libs/" in line and str(fresh_venv) in line, line


def test_wheel_runs_without_the_system_otf2(fresh_venv, tmp_path):
    assert OTF2_FILES, "the system's OTF2 library was not found: the test would prove nothing"
    # the reference, outside the namespace, with the development install
    ref = waitscope.open(PING_PONG).analyze(delay_model="proportional", critical_path=True)
    expected = {m: ref.total(m) for m in ("time", "mpi_latesender", "mpi_latereceiver", "delay_latesender")}
    expected["critical_path"] = ref.critical_path.length

    # 1. the system's OTF2 is gone in the namespace
    probe = hidden([sys._base_executable, "-c", "import ctypes; ctypes.CDLL('libopen-trace-format2.so.10')"])  # type: ignore[attr-defined]
    assert probe.returncode != 0 and "libopen-trace-format2" in probe.stderr, probe.stderr
    # 2. so the development install, linked against it, cannot load
    dev = hidden([sys.executable, "-c", "import waitscope._core"], cwd=tmp_path,
                 env={**CLEAN_ENV, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    assert dev.returncode != 0 and "libopen-trace-format2" in dev.stderr, dev.stderr
    # 3. the wheel's waitscope can, with its own copy of OTF2
    script = textwrap.dedent("""
        import json, sys, waitscope
        from waitscope.examples import PING_PONG
        r = waitscope.open(PING_PONG).analyze(delay_model="proportional", critical_path=True)
        out = {m: r.total(m) for m in ("time", "mpi_latesender", "mpi_latereceiver", "delay_latesender")}
        out["critical_path"] = r.critical_path.length
        maps = [line.split()[-1] for line in open("/proc/self/maps") if "open-trace-format2" in line]
        print(json.dumps({"file": waitscope.__file__, "otf2": sorted(set(maps)), "totals": out}))
    """)
    python = str(fresh_venv / "bin" / "python")
    run = hidden([python, "-c", script], cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["file"].startswith(str(fresh_venv)), got["file"]
    assert len(got["otf2"]) == 1 and "/waitscope.libs/" in got["otf2"][0], got["otf2"]
    assert got["otf2"][0].startswith(str(fresh_venv))
    assert got["totals"] == pytest.approx(expected, rel=1e-12, abs=0)
    # 4. and its command line
    cli = hidden([str(fresh_venv / "bin" / "waitscope"), "analyze", "--quiet", "--json", PING_PONG_IN(fresh_venv)],
                 cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr[-3000:]
    assert json.loads(cli.stdout)["metrics"]


def PING_PONG_IN(venv: Path) -> str:
    """The bundled trace inside the installed wheel."""
    return str(next((venv / "lib").glob("python3*/site-packages/waitscope/data/scorep-ping-pong/traces.otf2")))


def test_wheel_measures_an_mpi_program_without_the_system_otf2(fresh_venv, tmp_path):
    # `waitscope trace` preloads the wheel's interposition library into an MPICH program; the
    # trace it writes (with the wheel's OTF2) is analysed by the wheel's waitscope, all without
    # the system's OTF2 library
    if shutil.which("mpiexec.mpich") is None or shutil.which("mpicc.mpich") is None:
        pytest.fail("MPICH is part of the set-up (.ci/setup installs it)")
    subprocess.run(["make", "-s", "-C", str(ROOT / "examples"), "mpich"], check=True, env=CLEAN_ENV)
    out = tmp_path / "run"
    waitscope_cmd = str(fresh_venv / "bin" / "waitscope")
    traced = hidden([waitscope_cmd, "trace", "-o", str(out), "--", "mpiexec.mpich", "-n", "2",
                     str(ROOT / "examples" / "timestep.mpich"), "-k", "2"], cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr[-3000:]
    assert (out / "traces.otf2").is_file()
    analysed = hidden([waitscope_cmd, "analyze", "--quiet", "--json", str(out / "traces.otf2")], cwd=tmp_path)
    assert analysed.returncode == 0, analysed.stderr[-3000:]
    doc = json.loads(analysed.stdout)
    assert doc["metrics"]["time"]
    assert len(doc["locations"]) == 2
