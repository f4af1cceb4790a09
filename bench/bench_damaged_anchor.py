"""How long a damaged anchor takes to be refused: waitscope.open against libotf2 alone.

The anchor of the bundled ping-pong trace gets a property count of N (it
holds 5); libotf2 (`otf2-print`, the baseline) reads that many properties
before it notices the file's end, waitscope checks the count against the
anchor's size first (csrc/trace/otf2_check.c).

    python bench/bench_damaged_anchor.py [--counts 1000000 100000000 1000000000] [--timeout 120]
"""
from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import waitscope
from waitscope.cli import BUNDLED_TRACE


def damaged_copy(directory: Path, count: int) -> Path:
    shutil.copytree(Path(BUNDLED_TRACE).parent, directory)
    anchor = directory / "traces.otf2"
    anchor.chmod(0o644)
    data = bytearray(anchor.read_bytes())
    i = data.index(b"\x05\x00\x00\x00OTF2::")  # the property count, then the first name
    data[i:i + 4] = count.to_bytes(4, "little")
    anchor.write_bytes(bytes(data))
    return anchor


def libotf2_seconds(anchor: Path, timeout: float) -> str:
    tool = shutil.which("otf2-print")
    if tool is None:
        return "otf2-print not installed"
    started = time.perf_counter()
    try:
        subprocess.run([tool, str(anchor)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s (stopped)"
    return f"{time.perf_counter() - started:.3f} s"


def waitscope_seconds(anchor: Path) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        waitscope.open(anchor)
    except waitscope.TraceError as exc:
        return time.perf_counter() - started, str(exc).split(": ", 1)[1][:60]
    return time.perf_counter() - started, "opened (!)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1_000_000, 100_000_000, 1_000_000_000])
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    print(f"{'properties announced':>22}  {'libotf2 (otf2-print)':>22}  {'waitscope.open':>15}  message")
    with tempfile.TemporaryDirectory() as tmp:
        for i, count in enumerate(args.counts):
            anchor = damaged_copy(Path(tmp) / str(i), count)
            seconds, message = waitscope_seconds(anchor)
            print(f"{count:>22,d}  {libotf2_seconds(anchor, args.timeout):>22}  {seconds:>13.6f} s  {message}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"(this process's peak RSS: {peak / 1024:.0f} MiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
