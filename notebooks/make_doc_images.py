#!/usr/bin/env python3
"""Executes the notebooks and saves the figures they show into docs/img/.

    python notebooks/make_doc_images.py                 # all notebooks -> docs/img/*.png
    python notebooks/make_doc_images.py b_wavefront     # only some
    python notebooks/make_doc_images.py --write         # also store the fresh outputs in the notebooks

A code cell whose metadata has the tag ``doc-image:NAME.png`` provides
the image: the PNG it displays (its last one) is written to
``docs/img/NAME.png`` unchanged, so the documentation shows exactly what
the notebook shows.  The notebooks run in a kernel of this Python
interpreter (``sys.executable -m ipykernel_launcher``) with the
waitscope package that this interpreter imports, from a temporary working
directory; needs nbclient, nbformat, ipykernel and matplotlib.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IMAGES = ROOT / "docs" / "img"
TAG = "doc-image:"
KERNEL = "waitscope-notebooks"


def kernel_manager(workdir: Path):
    """A kernel manager that starts this interpreter's ipykernel, importing the same waitscope."""
    import waitscope
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec_dir = workdir / "kernels" / KERNEL
    spec_dir.mkdir(parents=True, exist_ok=True)
    package_parent = str(Path(waitscope.__file__).resolve().parent.parent)
    path = os.pathsep.join([package_parent] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "waitscope notebooks",
        "language": "python",
        "env": {"PYTHONPATH": path, "MPLBACKEND": "module://matplotlib_inline.backend_inline"},
    }))
    specs = KernelSpecManager(kernel_dirs=[str(workdir / "kernels")])
    return KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)


def execute(path: Path, workdir: Path, timeout: int = 300):
    """Runs a notebook top to bottom in `workdir`; returns the executed notebook (raises on errors)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    km = kernel_manager(workdir)
    client = NotebookClient(nb, km=km, timeout=timeout, kernel_name=KERNEL, record_timing=False,
                            resources={"metadata": {"path": str(workdir)}})
    try:
        client.execute()
    finally:  # the client leaves a kernel it did not create running
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    return nb


def doc_images(nb) -> dict[str, bytes]:
    """The PNGs of the cells tagged ``doc-image:NAME.png``, by name."""
    out = {}
    for cell in nb.cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            if not tag.startswith(TAG):
                continue
            pngs = [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
            if not pngs:
                raise RuntimeError(f"the cell tagged {tag!r} shows no PNG")
            out[tag[len(TAG):]] = base64.b64decode(pngs[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks to run (file names or stems; default: all)")
    parser.add_argument("--write", action="store_true", help="store the executed notebooks (with outputs)")
    args = parser.parse_args(argv)
    notebooks = sorted(HERE.glob("*.ipynb"))
    if args.names:
        wanted = {Path(n).stem for n in args.names}
        notebooks = [p for p in notebooks if p.stem in wanted]
        if len(notebooks) != len(wanted):
            parser.error(f"unknown notebooks: {sorted(wanted - {p.stem for p in notebooks})}")
    import nbformat

    IMAGES.mkdir(parents=True, exist_ok=True)
    for path in notebooks:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            nb = execute(path, Path(tmp))
            seconds = time.perf_counter() - start
        for name, png in doc_images(nb).items():
            (IMAGES / name).write_bytes(png)
            print(f"  docs/img/{name}: {len(png) // 1024} KB")
        if args.write:
            nbformat.write(nb, path)
        print(f"{path.name}: {seconds:.1f} s{' (outputs stored)' if args.write else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
