"""Command line: ``waitscope diff A B`` and ``waitscope whatif TRACE --balance REGION``.

    waitscope diff A B                    what changed between two runs, and which delays changed with it
    waitscope whatif TRACE --balance R    the predicted effect of balancing region R (Trace.simulate):
                                          run time, waiting per pattern, delay costs before and after

Both analyse with the delay analysis (``--delay``, default proportional),
so that a change of waiting comes with the delay costs that changed with
it (:mod:`waitscope.compare`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from . import open as open_trace
from .compare import _aligned_ranks, compare_rows, format_rows, program_difference, side_by_side
from .result import AnalysisResult


def pop_lines(result: AnalysisResult, ideal: Any = "simulate", why: str = "") -> list[str]:
    """The POP efficiencies as ``waitscope analyze`` prints them (after the summary).

    `ideal` as for :meth:`AnalysisResult.pop_metrics`; `why` says why there is
    no ideal-network run time when `ideal` is None."""
    from . import TraceError

    note = f" (no serialisation and transfer efficiency: {why})" if why and ideal is None else ""
    try:
        pop = result.pop_metrics(ideal)
    except (TraceError, ValueError, NotImplementedError) as exc:
        if ideal is None:
            return ["", f"POP efficiencies: not available ({exc})"]
        # the ideal-network simulation failed: the efficiencies that need none
        pop, note = result.pop_metrics(None), f" (no ideal-network simulation: {exc})"
    over = "" if pop.window is None else f" over the window {pop.window[0]:.6f} s to {pop.window[1]:.6f} s"
    useful = "time outside MPI per location" if pop.hybrid is None else \
        "time outside MPI, the OpenMP runtime and idleness per thread; POP's hybrid model"
    return ["", f"POP efficiencies{over} (useful = {useful}){note}:"] + pop.lines()


OPTIONS = {"balance": "--balance", "scale": "--scale", "network": "--network"}
"""The options of ``waitscope whatif`` for the arguments of Trace.simulate."""


def cli_words(exc: Exception) -> str:
    """The message of an error of Trace.simulate in the command line's words: its options
    (``--balance``) instead of the Python arguments, ``waitscope info`` instead of attributes."""
    from .simulate import UnknownRegion

    if isinstance(exc, UnknownRegion):
        return exc.message(OPTIONS.get(exc.argument, exc.argument), "waitscope info TRACE lists the call paths")
    text = str(exc.args[0]) if exc.args else str(exc)
    argument, sep, rest = text.partition(": ")
    if sep and argument in OPTIONS:
        text = f"{OPTIONS[argument]}: {rest}"
    return text.replace("scale={...}", "--scale REGION=FACTOR")


def cmd_diff(args: argparse.Namespace) -> int:
    results = []
    for path in (args.before, args.after):
        trace = open_trace(path, progress=False)
        results.append(trace.analyze(delay_model=args.delay, progress=False))
    a, b = results
    if args.ranks and not _aligned_ranks(a, b):
        what = "ranks and threads" if a.has_threads or b.has_threads else "MPI ranks"
        print(f"waitscope: error: --ranks: {args.before} has {len(a.location_ranks)} locations, "
              f"{args.after} {len(b.location_ranks)}; they need the same {what}", file=sys.stderr)
        return 2
    different = program_difference(a, b)
    if different is not None:
        print(f"waitscope: warning: {different}", file=sys.stderr)
    print(f"before: {args.before}\nafter:  {args.after}")
    rows = compare_rows(a, b, locations=args.ranks)
    print(format_rows(rows, top=args.top))
    return 0


def _scale(text: str) -> tuple[str, float]:
    name, sep, factor = text.rpartition("=")
    try:
        value = float(factor)
    except ValueError:
        value = -1.0
    if not sep or not name or not value > 0:
        raise argparse.ArgumentTypeError(f"expected REGION=FACTOR with a positive factor, got {text!r}")
    return name, value


def _network(text: str) -> Any:
    if text in ("recorded", "ideal"):
        return text
    parts = text.split(",")
    try:
        lat, bw = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'recorded', 'ideal' or LATENCY,BANDWIDTH (seconds, bytes/s), got {text!r}") from None
    if not (lat >= 0 and bw > 0):
        raise argparse.ArgumentTypeError(f"latency must be >= 0 and bandwidth > 0, got {text!r}")
    return (lat, bw)


def cmd_whatif(args: argparse.Namespace) -> int:
    trace = open_trace(args.trace, progress=False)
    if not hasattr(trace, "simulate"):
        print("waitscope: error: this waitscope has no Trace.simulate", file=sys.stderr)
        return 2
    balance = [r for item in (args.balance or []) for r in item.split(",") if r] or None
    scale = dict(args.scale) if args.scale else None
    if balance is None and scale is None and args.network == "recorded":
        print("waitscope: note: no --balance, --scale or --network: an identity simulation", file=sys.stderr)
    before = trace.analyze(delay_model=args.delay, progress=False)
    try:
        simulated = trace.simulate(balance=balance, scale=scale, network=args.network, progress=False)
    except (KeyError, ValueError) as exc:
        print(f"waitscope: error: {args.trace}: {cli_words(exc)}", file=sys.stderr)
        return 2
    after = simulated.analyze(delay_model=args.delay, progress=False)
    what = []
    if balance:
        what.append("balance " + ", ".join(balance))
    if scale:
        what.append("speed up " + ", ".join(f"{k} x {v:g}" for k, v in scale.items()))
    if args.network != "recorded":
        what.append(f"network {args.network}")
    print(f"waitscope whatif: {args.trace}: {'; '.join(what) or 'identity'}")
    print(side_by_side(before, after, top=args.top, label_before="recorded", label_after="simulated"))
    for label, result in (("recorded", before), ("simulated", after)):
        lines = pop_lines(result)
        lines[1] = lines[1].replace("POP efficiencies", f"POP efficiencies, {label}")
        print("\n".join(lines))
    if args.output:
        written = simulated.write(os.path.join(args.output, "traces.otf2") if not args.output.endswith(".otf2")
                                  else args.output, progress=False)
        print(f"simulated trace written to {written}")
    return 0


def add_parsers(sub: Any) -> None:
    from .cli import _positive_int

    diff = sub.add_parser("diff", help="compare two runs: what changed, and which delay costs changed with it")
    diff.add_argument("before", help="OTF2 anchor file or experiment directory of the first run")
    diff.add_argument("after", help="OTF2 anchor file or experiment directory of the second run")
    diff.add_argument("--delay", choices=["proportional", "wait-first"], default="proportional",
                      help="delay cost model (default proportional)")
    diff.add_argument("--top", type=_positive_int, default=20, help="how many changes to list")
    diff.add_argument("--ranks", action="store_true",
                      help="one row per MPI rank (both runs must have the same ranks; runs with threads: "
                           "one row per thread, aligned by rank and thread)")
    diff.set_defaults(func=cmd_diff)

    whatif = sub.add_parser("whatif", help="predict the effect of balancing or speeding up regions (re-simulated trace)")
    whatif.add_argument("trace", help="OTF2 anchor file or experiment directory")
    whatif.add_argument("--balance", action="append", metavar="REGION",
                        help="region or call path whose work is spread evenly over the ranks (repeatable, or comma-separated)")
    whatif.add_argument("--scale", action="append", type=_scale, metavar="REGION=FACTOR",
                        help="speed up a region or call path by FACTOR (2: twice as fast; repeatable)")
    whatif.add_argument("--network", type=_network, default="recorded", metavar="ideal|LAT,BW",
                        help="'recorded' (default), 'ideal' (instantaneous transfers) or latency,bandwidth in s, B/s")
    whatif.add_argument("--delay", choices=["proportional", "wait-first"], default="proportional",
                        help="delay cost model (default proportional)")
    whatif.add_argument("--top", type=_positive_int, default=5, help="how many call paths to list")
    whatif.add_argument("-o", "--output", metavar="DIR", help="write the simulated trace (OTF2) into DIR")
    whatif.set_defaults(func=cmd_whatif)
