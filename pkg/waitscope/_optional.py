"""Optional dependencies: importing them with an error that says what to install.

waitscope needs only NumPy; pandas, matplotlib, mpi4py, pycubexr and
Hatchet are extras (``pip install 'waitscope[pandas]'`` and so on, see
pyproject.toml).  A feature that needs one calls :func:`require`, whose
ImportError names the feature, the package and the command that installs
it, instead of a bare ``ModuleNotFoundError: No module named 'pandas'``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# module -> (what pip installs, the extra of waitscope that includes it)
PACKAGES = {
    "pandas": ("pandas", "pandas"),
    "matplotlib": ("matplotlib", "plot"),
    "pycubexr": ("pycubexr", "cube"),
    "hatchet": ("llnl-hatchet", "hatchet"),
    "thicket": ("llnl-thicket", "thicket"),
}


def install_hint(module: str) -> str:
    """The command that installs `module` (``python -m pip install pandas``, or the extra)."""
    package, extra = PACKAGES.get(module, (module, None))
    more = f" (or python -m pip install 'waitscope[{extra}]')" if extra else ""
    return f"python -m pip install {package}{more}"


def require(module: str, feature: str) -> ModuleType:
    """Imports `module` for `feature` (e.g. ``"AnalysisResult.to_pandas"``).

    Raises ImportError saying that `feature` needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{feature} needs {module}, which is not installed: {install_hint(module)}",
                          name=module) from exc
