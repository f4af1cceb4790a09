"""The set-up: README's two commands are what CI runs, and the build finds each MPI.

.ci/run reads README's commands with .ci/readme_commands.py and runs them in
a clean environment; these tests check that the reading finds the commands
a new user sees, and that .ci/setup and setup.py do what README says.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


readme_commands = _load(REPO / ".ci" / "readme_commands.py", "readme_commands")


def test_readme_starts_with_the_two_commands():
    first_block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    assert readme_commands.readme_commands(README) == [line for line in first_block.splitlines() if line]
    assert readme_commands.command("demo", README) == ".ci/setup plot && .venv/bin/waitscope demo"
    assert readme_commands.command("test", README) == ".ci/setup test && .venv/bin/python -m pytest -q tests"


def test_readme_commands_use_the_venv_only():
    """No bare python3/pip/waitscope: after .ci/setup everything comes from .venv."""
    for command in readme_commands.readme_commands(README):
        words = [w for part in command.split("&&") for w in part.split()[:1]]
        assert all(w == ".ci/setup" or w.startswith(".venv/bin/") for w in words), command


def test_ci_runs_readmes_commands():
    """.ci/run executes the commands it reads from README (not a copy of them), in a clean
    environment whose PATH has only the system's directories, then the sanitizer run."""
    run = (REPO / ".ci" / "run").read_text()
    assert 'demo=$(readme_command demo)' in run and 'clean_env bash -c "$demo"' in run
    assert 'test=$(readme_command test)' in run and 'clean_env PYTEST_ADDOPTS=-rs bash -c "$test"' in run
    assert "env -i PATH=/usr/bin:/bin" in run
    assert "rm -rf .venv" in run  # a clean virtual environment every time
    assert run.rstrip().endswith(".ci/sanitize")
    out = subprocess.run([sys.executable, str(REPO / ".ci" / "readme_commands.py"), "test"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == readme_commands.command("test", README)


def test_ci_allows_no_skipped_test():
    """.ci/run fails on any skipped test of README's test command (no reason is exempt)."""
    run = (REPO / ".ci" / "run").read_text()
    assert 'unexpected=$(grep -E "^SKIPPED" .ci-test-output.txt || true)' in run
    assert "grep -v" not in run
    # what makes that possible: the sanitizer build's tests are collected only in that build
    from conftest import collect_ignore, sanitizer_build

    assert collect_ignore == ([] if sanitizer_build() else ["test_sanitizer_build.py"])
    assert (REPO / "tests" / "test_sanitizer_build.py").is_file()


def test_readme_commands_reading_rejects_a_readme_without_them():
    with pytest.raises(SystemExit, match="no ```sh block"):
        readme_commands.readme_commands("# waitscope\n\nno commands\n")
    with pytest.raises(SystemExit, match="expected one test command"):
        readme_commands.command("test", "```sh\n.ci/setup plot\n```\n")


def test_setup_script_uses_debians_python_and_hides_no_failure():
    setup = (REPO / ".ci" / "setup").read_text()
    assert "SYSTEM_PYTHON=/usr/bin/python3" in setup and '"$SYSTEM_PYTHON" -m venv' in setup
    assert "set -euo pipefail" in setup
    assert "MPICC=mpicc.mpich" in setup and "--no-binary=mpi4py" in setup
    for package in ("libotf2-trace-dev", "otf2-tools", "mpich", "libmpich-dev", "openmpi-bin", "libopenmpi-dev",
                    "python3-venv", "python3-dev", "python3-pip"):
        assert re.search(rf"(^|\s){re.escape(package)}(\s|\")", setup), package
    for line in setup.splitlines():
        if "apt-get" in line or "pip install" in line:
            assert ">/dev/null" not in line and "|| true" not in line, line
    sanitize = (REPO / ".ci" / "sanitize").read_text()
    assert 'PY="$PWD/.venv/bin/python"' in sanitize and not re.search(r"^\s*python3 ", sanitize, re.M)


# ---- setup.py: one parallel-mode extension per MPI ---------------------------------------


@pytest.fixture(scope="module")
def setup_py():
    """setup.py as a module (its setup() call runs only as a script)."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        return _load(REPO / "setup.py", "waitscope_setup_py")
    finally:
        os.chdir(cwd)


MPICH_SHOW = "gcc -Wl,-z,relro -I/usr/include/x86_64-linux-gnu/mpich -L/usr/lib/x86_64-linux-gnu -lmpich"
OPENMPI_SHOW = ("gcc -I/usr/lib/x86_64-linux-gnu/openmpi/include -I/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi "
                "-L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi")


def test_mpi_identified_from_the_compiler_line(setup_py):
    assert setup_py._implementation_of(MPICH_SHOW) == "mpich"
    assert setup_py._implementation_of(OPENMPI_SHOW) == "openmpi"
    assert setup_py._implementation_of("gcc -lfoo") is None


def test_mpi_implementations_found_here(setup_py, monkeypatch):
    found = setup_py.mpi_implementations()
    for name, wrapper in (("mpich", "mpicc.mpich"), ("openmpi", "mpicc.openmpi")):
        if shutil.which(wrapper):
            assert found[name] == shutil.which(wrapper)
    for name, mpicc in found.items():  # each wrapper really builds with the MPI it is filed under
        assert setup_py._implementation_of(setup_py._mpicc_show(mpicc)) == name
    names = [e.name for e in setup_py.extensions()]
    assert names == ["waitscope._core"] + [f"waitscope._mpi_{n}" for n in sorted(found)]
    monkeypatch.setenv("WAITSCOPE_NO_MPI", "1")
    assert setup_py.mpi_implementations() == {}


def test_plain_mpicc_is_filed_under_its_mpi(setup_py, monkeypatch, tmp_path):
    """Only a plain mpicc (no Debian wrappers): identified by what -show prints."""
    fake = tmp_path / "mpicc"
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = --showme ] && echo '{OPENMPI_SHOW}' && exit 0\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert setup_py.mpi_implementations() == {"openmpi": str(fake)}


def test_mpi_library_version_names_the_implementation():
    from waitscope._parallel import implementation

    assert implementation("MPICH Version:\t4.0.2\nMPICH Release date: ...") == "mpich"
    assert implementation("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4") == "openmpi"
    assert implementation("Intel(R) MPI Library 2021.6 for Linux* OS") is None


# ---- a cluster's modules: otf2-config and mpicc found on PATH ---------------------------------------

# What `mpicc -show` prints for an MPICH 4 built into a module's prefix: it links -lmpi, as Open MPI
# does, and the prefix need not say "mpich".
MODULE_MPICH_SHOW = "gcc -I/apps/mpi/4.1/include -L/apps/mpi/4.1/lib -Wl,-rpath -Wl,/apps/mpi/4.1/lib -lmpi"


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_module_otf2_config_gives_flags_and_a_run_path(setup_py, monkeypatch, tmp_path):
    _script(tmp_path, "otf2-config", 'case "$1" in --cflags) echo -I/apps/otf2/3.0/include;;\n'
                                     '--ldflags) echo -L/apps/otf2/3.0/lib;; --libs) echo -lotf2;; esac\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    cflags, ldflags = setup_py.otf2_flags()
    assert cflags == ["-I/apps/otf2/3.0/include"]
    assert ldflags == ["-L/apps/otf2/3.0/lib", "-lotf2", "-Wl,-rpath,/apps/otf2/3.0/lib"]
    # the system's folders get no run path
    assert setup_py.rpath_flags(["-L/usr/lib/x86_64-linux-gnu", "-L/usr/lib64", "-L/lib/", "-lotf2"]) == []
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SystemExit, match="otf2-config tool, which were not found on PATH"):
        setup_py.otf2_flags()


def test_module_mpicc_is_filed_under_the_mpi_its_header_names(setup_py, monkeypatch, tmp_path):
    # -show alone would file this MPICH under Open MPI (-lmpi); its mpi.h defines MPICH_VERSION
    _script(tmp_path, "mpicc", f'[ "$1" = -show ] && echo "{MODULE_MPICH_SHOW}" && exit 0\n'
                               '[ "$1" = -E ] && echo "#define MPICH_VERSION \\"4.1\\"" && exit 0\nexit 1\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    assert setup_py._implementation_of(MODULE_MPICH_SHOW) == "openmpi"  # the guess from the libraries
    assert setup_py.mpi_implementations() == {"mpich": str(tmp_path / "mpicc")}
    compile_flags, link_flags = setup_py.mpi_flags(str(tmp_path / "mpicc"))
    assert compile_flags == ["-I/apps/mpi/4.1/include"]
    assert link_flags[-1] == "-Wl,-rpath,/apps/mpi/4.1/lib" and "-lmpi" in link_flags


def test_real_mpi_headers_name_their_implementation(setup_py):
    # .ci/setup installs both of Debian's MPI compiler wrappers
    assert setup_py._implementation_of_headers(shutil.which("mpicc.mpich")) == "mpich"
    assert setup_py._implementation_of_headers(shutil.which("mpicc.openmpi")) == "openmpi"
