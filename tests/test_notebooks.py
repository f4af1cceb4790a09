"""The notebooks in notebooks/ run top to bottom, and their stored outputs stay small.

Each notebook is executed from a temporary copy (the repository's files are
not rewritten) in a kernel of the interpreter running the tests
(``sys.executable -m ipykernel_launcher``) that imports the same waitscope
package as the tests do.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_BYTES = 300 * 1024
CELL_TIMEOUT = 300
KERNEL = "waitscope-test"


def test_there_are_notebooks():
    names = {p.name for p in NOTEBOOKS}
    assert {"a_tour.ipynb", "b_wavefront.ipynb", "c_imbalance.ipynb", "d_mpmd.ipynb",
            "e_delay_models.ipynb", "f_whatif.ipynb", "g_workflow.ipynb"} <= names, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_small(path):
    size = path.stat().st_size
    assert size < MAX_BYTES, f"{path.name} is {size // 1024} KB with its outputs (limit {MAX_BYTES // 1024} KB)"
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    # stored with outputs, so that it renders on GitHub
    assert any(cell.get("outputs") for cell in nb["cells"] if cell["cell_type"] == "code"), path.name


MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|root|home|tmp)/")
"""Absolute paths of the machine a notebook ran on (e.g. /work/..., /home/user/..., /tmp/...)."""


def machine_paths(nb: dict) -> list[str]:
    """Excerpts of the outputs of notebook `nb` (as JSON) that hold a path of the machine."""
    found = []
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            texts = [output.get("text", ""), output.get("evalue", ""), *output.get("traceback", [])]
            for kind, data in output.get("data", {}).items():
                if not kind.startswith("image/"):
                    texts.append(data)
            for text in texts:
                text = "".join(text) if isinstance(text, list) else str(text)
                found += [f"cell {index}: {text[max(m.start() - 20, 0):m.end() + 40]!r}"
                          for m in MACHINE_PATH.finditer(text)]
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_hold_no_paths_of_the_machine(path):
    found = machine_paths(json.loads(path.read_text()))
    assert not found, f"{path.name} stores paths of the machine it ran on: {found}"


def test_the_path_check_finds_paths():
    assert MACHINE_PATH.search("trace /work/main/pkg/waitscope/data/x/traces.otf2")
    assert MACHINE_PATH.search("'/home/user/x'") and MACHINE_PATH.search("at /tmp/tmpab12/report.cubex")
    assert not MACHINE_PATH.search("trace <waitscope data>/scorep-ping-pong/traces.otf2, 1 ms/work unit")


def _kernel_manager(workdir: Path):
    """A kernel of this interpreter whose sys.path finds the waitscope the tests import."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    import waitscope

    spec = workdir / "kernels" / KERNEL
    spec.mkdir(parents=True)
    package_parent = str(Path(waitscope.__file__).resolve().parent.parent)
    pythonpath = [package_parent] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "waitscope tests",
        "language": "python",
        "env": {"PYTHONPATH": os.pathsep.join(pythonpath),
                "MPLBACKEND": "module://matplotlib_inline.backend_inline"},
    }))
    return KernelManager(kernel_name=KERNEL,
                         kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(workdir / "kernels")]))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")

    work = tmp_path / "run"
    work.mkdir()
    copy = work / path.name
    shutil.copy(path, copy)
    nb = nbformat.read(copy, as_version=4)
    km = _kernel_manager(tmp_path)
    client = nbclient.NotebookClient(nb, km=km, kernel_name=KERNEL, timeout=CELL_TIMEOUT, record_timing=False,
                                     resources={"metadata": {"path": str(work)}})
    start = time.perf_counter()
    try:
        client.execute()  # raises CellExecutionError on the first failing cell
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    seconds = time.perf_counter() - start
    print(f"{path.name}: {seconds:.1f} s")
    errors = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"]
    assert not errors, errors
    # a fresh run shows no paths of this machine either (it runs in a temporary directory)
    assert not machine_paths(json.loads(nbformat.writes(nb))), machine_paths(json.loads(nbformat.writes(nb)))
    # the notebook leaves nothing behind in its working directory
    assert sorted(p.name for p in work.iterdir()) == [path.name]
