"""The kernel embedded in a C program through its public header alone.

examples/embed.c is compiled against a directory that holds nothing but
csrc/waitscope.h (so it can include nothing else), linked with the
kernel's sources, run on the bundled Score-P ping-pong trace, and every
number it prints is compared with what the Python API computes for the
same trace and options: the cells bitwise (the same kernel), the totals
to rounding (C sums in another order than NumPy).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import waitscope

from conftest import BUNDLED

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"


def kernel_sources() -> list[Path]:
    out = []
    for folder in ("api", "common", "trace", "replay", "analysis"):
        out += sorted((CSRC / folder).glob("*.c"))
    return [p for p in out if not p.name.startswith("transport_mpi")]


@pytest.fixture(scope="module")
def embed(tmp_path_factory) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    config = shutil.which("otf2-config")
    if cc is None or config is None:
        pytest.skip("no C compiler or otf2-config")

    def ask(*args: str) -> list[str]:
        return shlex.split(subprocess.check_output([config, *args], text=True))

    work = tmp_path_factory.mktemp("embed")
    include = work / "include"
    include.mkdir()
    shutil.copy(CSRC / "waitscope.h", include / "waitscope.h")
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{include}", "-c",
                    str(ROOT / "examples" / "embed.c"), "-o", str(work / "embed.o")], check=True)
    exe = work / "embed"
    subprocess.run([cc, "-std=c11", "-O1", "-D_POSIX_C_SOURCE=200809L", f"-I{CSRC}", *ask("--cflags"),
                    str(work / "embed.o"), *map(str, kernel_sources()), *ask("--ldflags"), *ask("--libs"),
                    "-lm", "-lpthread", "-o", str(exe)], check=True)
    return exe


def run(exe: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def test_embedded_kernel_agrees_with_the_python_api(embed):
    out = run(embed, str(BUNDLED))
    assert out.returncode == 0, out.stderr
    lines = [line.split(" ") for line in out.stdout.splitlines()]
    trace = waitscope.open(BUNDLED)
    r = trace.analyze(delay_model="proportional", critical_path=True)

    (version,) = [l[1:] for l in lines if l[0] == "version"]
    assert version == [waitscope.__version__]
    (facts,) = [l[1:] for l in lines if l[0] == "trace"]
    assert [int(x) for x in facts] == [trace.n_locations, trace.n_events, len(trace.callpath_names)]

    metrics = [l[1:] for l in lines if l[0] == "metric"]
    assert [(m[0], m[1]) for m in metrics] == [(m.id, m.unit) for m in r.metrics]
    for metric, unit, total in metrics:
        assert float(total) == pytest.approx(r.total(metric), rel=1e-12, abs=1e-300), metric

    cells = {(l[1], int(l[2]), int(l[3])): float(l[4]) for l in lines if l[0] == "cell"}
    want = {}
    for k, metric in enumerate(m.id for m in r.metrics):
        for c, loc in zip(*np.nonzero(r.cube[k])):
            want[(metric, int(c), int(loc))] = float(r.cube[k, c, loc])
    assert cells == want  # every nonzero cell, bitwise

    names = {int(l[1]): " ".join(l[2:]) for l in lines if l[0] == "callpath"}
    assert [names[i] for i in range(len(names))] == list(trace.callpath_names)

    (path,) = [l[1:] for l in lines if l[0] == "path"]
    assert int(path[0]) == len(r.critical_path.segments) > 0
    assert float(path[1]) == pytest.approx(r.critical_path.length, rel=1e-12)


def test_embedded_kernel_reports_a_missing_archive(embed, tmp_path):
    out = run(embed, str(tmp_path / "nothing-here"))
    assert out.returncode == 1
    assert "ws_open failed: WS_ERR_IO" in out.stderr and "nothing-here" in out.stderr
