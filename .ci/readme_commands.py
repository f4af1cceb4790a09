"""Prints the set-up commands of README.md: the lines of its first ```sh block.

    python3 .ci/readme_commands.py            all of them, one a line
    python3 .ci/readme_commands.py demo|test  the one that runs the demo / the tests

.ci/run runs exactly these lines, so README's commands are what CI runs.
Standard library only: it runs before any set-up, with Debian's python3.
"""
from __future__ import annotations

import pathlib
import re
import sys

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def readme_commands(text: str) -> list[str]:
    """The non-empty lines of the first ```sh block (comments removed)."""
    match = re.search(r"^```sh\n(.*?)^```", text, re.M | re.S)
    if match is None:
        raise SystemExit(f"{README}: no ```sh block with the set-up commands")
    lines = [line.split(" #", 1)[0].strip() for line in match.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def command(kind: str, text: str) -> str:
    """The README command that runs the tests ("test", the one with pytest) or the demo."""
    found = [c for c in readme_commands(text) if ("pytest" in c) == (kind == "test")]
    if len(found) != 1:
        raise SystemExit(f"{README}: expected one {kind} command in the first ```sh block, found {found}")
    return found[0]


if __name__ == "__main__":
    text = README.read_text(encoding="utf-8")
    if len(sys.argv) > 1:
        print(command(sys.argv[1], text))
    else:
        print("\n".join(readme_commands(text)))
