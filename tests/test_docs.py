"""The documentation stays true: every metric is documented, linked pages exist (README's
commands are the ones CI runs: tests/test_setup.py)."""

from __future__ import annotations

import re
from pathlib import Path

import waitscope
from waitscope import synth

ROOT = Path(__file__).resolve().parent.parent


def _all_metric_ids() -> list[str]:
    p = synth.Program(2)
    p.rank(0).compute("w", 1.0).send(1)
    p.rank(1).recv(0)
    r = p.run().analyze(delay_model="proportional", critical_path=True)
    return r.metric_ids


def test_every_metric_is_in_the_reference():
    text = (ROOT / "docs" / "metrics.md").read_text()
    ids = _all_metric_ids()
    assert len(ids) > 90
    missing = [m for m in ids if f"`{m}`" not in text and not re.search(rf"`{m}\b", text)]
    assert not missing, f"docs/metrics.md does not mention {missing}"


def test_documented_pages_exist():
    readme = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\(((?:docs|notebooks)/[^)#]+)\)", readme):
        assert (ROOT / link).exists(), link
    assert waitscope.__version__
