"""The documentation stays true: every metric is documented, README's commands are the ones CI runs."""

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


def test_readme_commands_and_ci_agree():
    readme = (ROOT / "README.md").read_text().splitlines()
    block = readme[readme.index("```sh") + 1:readme.index("```sh") + 3]
    assert block[0].endswith("waitscope demo"), block
    test_command = block[1].split("&&")[-1].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines(), (test_command, "not run by .ci/run")


def test_documented_pages_exist():
    readme = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\(((?:docs|notebooks)/[^)#]+)\)", readme):
        assert (ROOT / link).exists(), link
    assert waitscope.__version__
