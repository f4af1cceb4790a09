"""Builds and runs a small C check of tests/c against some of csrc's
sources, with AddressSanitizer and UndefinedBehaviorSanitizer where gcc
has their runtimes; a check prints "ok" when every expectation held."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"


def run_c_check(tmp_path: Path, check: str, sources: list[str], otf2: bool = False) -> str:
    """Compiles tests/c/<check>.c with csrc/<sources> (with OTF2's headers
    if `otf2`), runs it and returns its output (the test fails if it exits
    with an error)."""
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("no gcc")
    cflags: list[str] = []
    if otf2:
        config = shutil.which("otf2-config")
        if config is None:
            pytest.skip("no otf2-config")
        cflags = shlex.split(subprocess.check_output([config, "--cflags"], text=True))
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    asan = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(asan) or not os.path.exists(asan):
        flags = []
    exe = tmp_path / check
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", *flags, "-D_POSIX_C_SOURCE=200809L",
                    f"-I{CSRC}", *cflags, str(ROOT / "tests" / "c" / f"{check}.c"), *(str(CSRC / s) for s in sources),
                    "-lm", "-o", str(exe)], check=True)
    # a clean environment: .ci/sanitize preloads the runtimes into pytest
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout
