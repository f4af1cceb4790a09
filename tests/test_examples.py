"""Every Python example in README.md and docs/*.md runs as written.

Convention (stated in README.md and docs/index.md): examples open the
bundled Score-P trace ``waitscope.examples.PING_PONG``, so nothing is
substituted; the ```python blocks of one file run in order in one
namespace (later blocks use the ``trace`` and ``r`` of earlier ones), in a
temporary working directory.  A block preceded by the line
``<!-- example: run under mpiexec -n N -->`` runs on its own as a script
under ``mpiexec.mpich -n N``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import mpi_launcher  # tests/ is on sys.path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"(?:<!-- example: run under mpiexec -n (\d+) -->\n)?```python\n(.*?)```", re.S)


def _blocks(path: Path) -> list[tuple[int | None, int, str]]:
    """(mpiexec processes or None, line number, code) of every python block."""
    text = path.read_text()
    return [(int(m.group(1)) if m.group(1) else None, text.count("\n", 0, m.start(2)) + 1, m.group(2))
            for m in BLOCK.finditer(text)]


def test_the_documents_have_examples():
    counted = {p.name: len(_blocks(p)) for p in DOCUMENTS}
    assert counted["README.md"] >= 1 and counted["index.md"] >= 8, counted
    # the pattern finds every block that is marked as Python
    for path in DOCUMENTS:
        assert path.read_text().count("```python") == len(_blocks(path)), path.name


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if _blocks(p)], ids=lambda p: p.name)
def test_examples_run_as_written(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict[str, object] = {"__name__": "__example__"}
    for processes, line, code in _blocks(path):
        if processes is not None:
            continue  # test_mpiexec_examples
        try:
            exec(compile(code, f"{path.name}:{line}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            raise AssertionError(f"the example at {path.name} line {line} fails: {exc!r}\n{code}") from exc


def _mpiexec_examples() -> list[tuple[str, int, int, str]]:
    return [(p.name, line, n, code) for p in DOCUMENTS for n, line, code in _blocks(p) if n is not None]


@pytest.mark.parametrize("name,line,processes,code", _mpiexec_examples(), ids=lambda v: str(v)[:20])
def test_mpiexec_examples(name: str, line: int, processes: int, code: str, tmp_path: Path):
    launcher = mpi_launcher()
    assert launcher is not None, "the parallel mode needs mpi4py and the mpiexec of its MPI"
    mpiexec, launch_env = launcher
    script = tmp_path / "example.py"
    script.write_text(code)
    env = dict(os.environ, MPLBACKEND="Agg", **launch_env)
    run = subprocess.run([*mpiexec, "-n", str(processes), sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"the example at {name} line {line} fails under mpiexec:\n{run.stderr}"
    assert run.stdout.strip(), "the example prints its summary on rank 0"


def test_examples_name_call_paths_as_users_type_them():
    """README's first example names `main/MPI_Recv` of a trace whose call paths are
    `ping-pong.otf2/int main(int, char**)/...` (the program region, then main)."""
    import waitscope
    from waitscope.examples import PING_PONG

    r = waitscope.open(PING_PONG).analyze()
    full = r.callpath_names.index("ping-pong.otf2/int main(int, char**)/MPI_Recv")
    for key in ("main/MPI_Recv", "MPI_Recv", "int main(int, char**)/MPI_Recv",
                "ping-pong.otf2/int main(int, char**)/MPI_Recv", full):
        assert r.callpath_index(key) == full, key
    assert list(r.get("mpi_latesender", "main/MPI_Recv")) == list(r.get("mpi_latesender")[full])
