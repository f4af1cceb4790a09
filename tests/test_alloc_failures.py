"""Failure paths that are tested: every kernel allocation can be made to
fail (csrc/common/alloc.h, compiled in with WS_ALLOC_FAILURES only), and
open, load and analyze are run once per allocation with that one and all
later ones failing.  Every run must end in an out-of-memory error or in
the result of the run without failures, never in a crash or a leak.

- In C (tests/c/alloc_failures.c), built here with AddressSanitizer, whose
  leak checker runs at the program's exit: the leak check is exact, as no
  Python is in the process.  Also synthesize + analyze of a small program,
  and the analysis with two threads (ws_analyze_threads).
- In Python, when waitscope._core itself is the sanitizer build
  (.ci/sanitize): MemoryError or the same cube, for every n
  (tests/test_sanitizer_build.py, collected only in that build).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import _core

from conftest import BUNDLED

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"


def kernel_sources() -> list[str]:
    out = []
    for folder in ("api", "common", "trace", "replay", "analysis"):
        out += sorted(str(p) for p in (CSRC / folder).glob("*.c") if not p.name.startswith("transport_mpi"))
    return out


def test_every_allocation_failure_in_c_ends_cleanly(tmp_path):
    cc, config = shutil.which("gcc"), shutil.which("otf2-config")
    if cc is None or config is None:
        pytest.skip("no gcc or otf2-config")
    asan = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(asan) or not os.path.exists(asan):
        pytest.skip("gcc has no AddressSanitizer runtime")

    def ask(*args: str) -> list[str]:
        return shlex.split(subprocess.check_output([config, *args], text=True))

    exe = tmp_path / "alloc_failures"
    subprocess.run([cc, "-std=c11", "-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                    "-DWS_ALLOC_FAILURES", "-DWS_CHECKS", "-D_POSIX_C_SOURCE=200809L", f"-I{CSRC}", *ask("--cflags"),
                    str(ROOT / "tests" / "c" / "alloc_failures.c"), *kernel_sources(), *ask("--ldflags"),
                    *ask("--libs"), "-lm", "-lpthread", "-o", str(exe)], check=True)
    # a clean environment: .ci/sanitize preloads the runtimes into pytest
    # and turns the leak checker off there
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    out = subprocess.run([str(exe), str(BUNDLED)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    lines = re.findall(r"^runs (\d+) nomem (\d+) allocations (\d+)$", out.stdout, re.M)
    assert len(lines) == 2, out.stdout  # the archive, then the synthesized program
    for runs, nomem, total in (map(int, line) for line in lines):
        # one run per allocation (each failing there) and one that reaches the end
        assert runs == total + 1 and total > 50
        assert nomem == total  # every failing allocation is reported as such
    # two threads: every run ended (no hang, no leak: the exit status), most in out-of-memory
    threaded = re.findall(r"^threads runs (\d+) nomem (\d+) allocations (\d+)$", out.stdout, re.M)
    assert len(threaded) == 1, out.stdout
    runs, nomem, total = map(int, threaded[0])
    assert runs == total + 1 and total > 50
    assert nomem >= total // 2, out.stdout
