"""Every Python example in README.md and docs/*.md runs as written.

Convention (stated in README.md and docs/index.md): examples open the
bundled Score-P trace ``waitscope.examples.PING_PONG``, so nothing is
substituted; the ```python blocks of one file run in order in one
namespace (later blocks use the ``trace`` and ``r`` of earlier ones), in a
temporary working directory.  A block preceded by the line
``<!-- example: run under mpiexec -n N -->`` runs on its own as a script
under ``mpiexec.mpich -n N``.

The hybrid MPI+OpenMP example programs (examples/hybrid.c, hybrid.f90) run
in their self-check mode: the waiting they inject is what their headers
work out by hand.
"""

from __future__ import annotations

import os
import re
import shutil
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


# ---- the hybrid MPI+OpenMP examples: the waiting they inject by construction ----------

EXAMPLES = ROOT / "examples"

HYBRID_INJECTED = {  # seconds, 2 ranks x 2 threads, by hand (examples/hybrid.c's header)
    "omp_ibarrier_wait": 0.360, "omp_ebarrier_wait": 0.300, "omp_lock_contention_critical": 0.192,
    "omp_idle_threads": 1.020, "mpi_latesender": 0.270, "mpi_barrier_wait": 0.0,
}


def _hybrid_figures(stdout: str, label: str) -> dict[str, float]:
    """The values of the line ``hybrid-LABEL METRIC=SECONDS ...`` of the self-check."""
    line = next((l for l in stdout.splitlines() if l.startswith(f"hybrid-{label} ")), None)
    assert line is not None, stdout
    return {k: float(v) for k, v in (item.split("=") for item in line.split()[1:])}


def _hybrid_deviations(stdout: str) -> list[str]:
    """What in a self-check run is off the design: the waiting by the metrics' definitions
    from the threads' stamps ("expected") more than 3 % from the injected, or more than 2 ms
    where none is injected (MPI_Barrier); the time in the OpenMP constructs ("measured",
    which adds the waiting threads' wake-ups) more than 5 %.  Not the time in MPI calls: a
    rank spins in MPI_Recv, and when other work on the machine deschedules it the call
    returns late, which the Late Sender (send's entry less the receive's) does not count."""
    injected, expected, measured = (_hybrid_figures(stdout, k) for k in ("injected", "expected", "measured"))
    off = []
    for metric, value in injected.items():
        checked = [("expected", expected[metric], 0.03)]
        if metric.startswith("omp_"):
            checked.append(("measured", measured[metric], 0.05))
        for name, got, rel in checked:
            if abs(got - value) > (rel * value if value else 0.002):
                off.append(f"{metric} {name} {got:.6f} s, injected {value:.6f} s")
    return off


@pytest.mark.parametrize("program", ["hybrid", "hybrid_f"])
@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_hybrid_example_waits_as_designed(mpi: str, program: str):
    """examples/hybrid.c and hybrid.f90, 2 ranks x 2 OpenMP threads, self-check mode: the
    waiting the program's own clocks find is what its header works out by hand.  This checks
    the programs' design (their timing on this shared two-core machine), not waitscope.  A run
    is repeated (at most three runs) when other work on the machine delays a deadline."""
    from waitscope._parallel import LAUNCHERS

    compiler = f"mpifort.{mpi}" if program == "hybrid_f" else f"mpicc.{mpi}"
    if shutil.which(compiler) is None or shutil.which(LAUNCHERS[mpi][0][0]) is None:
        pytest.skip(f"{compiler} or {LAUNCHERS[mpi][0][0]} is not installed")
    binary = f"{program}.{mpi}"
    subprocess.run(["make", "-s", "-C", str(EXAMPLES), binary], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "OMP_PROC_BIND", "OMP_PLACES")}
    env.update(LAUNCHERS[mpi][1], OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive", HYBRID_CHECK="1")
    runs = []
    for _ in range(3):
        run = subprocess.run([*LAUNCHERS[mpi][0], "-n", "2", str(EXAMPLES / binary)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert _hybrid_figures(run.stdout, "injected") == pytest.approx(HYBRID_INJECTED, abs=1e-9), run.stdout
        assert sum(l.startswith("hybrid-location ") for l in run.stdout.splitlines()) == 4, run.stdout
        runs.append(_hybrid_deviations(run.stdout))
        if not runs[-1]:
            break
    assert not runs[-1], "\n".join(f"run {i + 1}: " + "; ".join(r) for i, r in enumerate(runs))


def test_hybrid_example_needs_two_ranks():
    """With another number of ranks the hybrid example stops with a non-zero status."""
    from waitscope._parallel import LAUNCHERS

    if shutil.which("mpicc.mpich") is None or shutil.which("mpiexec.mpich") is None:
        pytest.skip("MPICH is not installed")
    subprocess.run(["make", "-s", "-C", str(EXAMPLES), "hybrid.mpich"], check=True)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    run = subprocess.run([*LAUNCHERS["mpich"][0], "-n", "1", str(EXAMPLES / "hybrid.mpich")], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "needs 2 MPI ranks" in run.stderr
