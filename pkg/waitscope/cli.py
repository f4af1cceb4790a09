"""Command line: ``waitscope info|analyze|demo``.

    waitscope info TRACE             locations, regions, call paths, events
    waitscope analyze TRACE          wait-state report (add --delay, --critical-path, -o report.cubex,
                                     --perfetto out.json)
    waitscope comm TRACE             communication matrix and message sizes
    waitscope demo                   the main job on a halo exchange with one slow rank
    waitscope diff A B               what changed between two runs (cli_whatif.py)
    waitscope whatif TRACE --balance REGION   predicted effect of balancing a region (cli_whatif.py)
    waitscope trace -- COMMAND       run an MPI program and trace it (cli_measure.py)
    waitscope profile -- COMMAND     run an MPI program and profile its wait states

Started by ``mpiexec -n N`` (N > 1), ``analyze`` runs in the parallel mode
(``comm=MPI.COMM_WORLD``: every process loads and replays its block of
locations); only rank 0 prints.  When the parallel mode is unavailable
(mpi4py missing or built against another MPI) it stops with an error that
names the command that fixes it.  Other commands run on rank 0 alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
from typing import Any, Mapping, Sequence

from . import __version__, open as open_trace
from .examples import PING_PONG
from .export import analysis_document, trace_document
from .profile import ESTIMATED_METRICS as ESTIMATED
from .progress import Reporter, TextLine
from .trace import Trace

BUNDLED_TRACE = PING_PONG

# Number of processes and rank of an MPI launch, as the process managers
# tell them: MPICH's hydra (and Intel MPI), Open MPI, MVAPICH.
MPI_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
MPI_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")


def _first_int(names: Sequence[str], environ: Mapping[str, str]) -> int | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def mpi_launch_size(environ: Mapping[str, str] | None = None) -> int:
    """Processes of the MPI launch that started this process (1 without one)."""
    return _first_int(MPI_SIZE_VARIABLES, os.environ if environ is None else environ) or 1


def mpi_launch_rank(environ: Mapping[str, str] | None = None) -> int:
    """This process's rank in its MPI launch (0 without one)."""
    return _first_int(MPI_RANK_VARIABLES, os.environ if environ is None else environ) or 0


def world_comm(environ: Mapping[str, str] | None = None) -> Any:
    """``MPI.COMM_WORLD`` under an MPI launch of more than one process, else None.

    Raises :class:`waitscope._parallel.ParallelModeUnavailable` (naming the
    command that fixes it) when started by mpiexec with several processes
    but mpi4py or the extension for its MPI cannot be loaded: quietly
    analysing on one process would waste the other processes and hide
    the broken set-up."""
    size = mpi_launch_size(environ)
    if size <= 1:
        return None
    from ._parallel import ParallelModeUnavailable, mpi_module

    try:
        mpi_module()
    except ParallelModeUnavailable as exc:
        raise ParallelModeUnavailable(
            f"started with {size} MPI processes, but the parallel mode is unavailable: {exc}") from exc
    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_size() != size:  # e.g. Open MPI's mpiexec, mpi4py built with MPICH
        from ._parallel import LAUNCHERS, implementation

        name = implementation(MPI.Get_library_version())
        right = " ".join(LAUNCHERS[name][0]) if name in LAUNCHERS else "the mpiexec of mpi4py's MPI"
        raise ParallelModeUnavailable(
            f"started by a launcher of {size} processes, but MPI.COMM_WORLD has {MPI.COMM_WORLD.Get_size()}: "
            f"the launcher belongs to another MPI than mpi4py's ({name or 'unknown'}); start it with {right}")
    return MPI.COMM_WORLD


def _rank(args: argparse.Namespace) -> int:
    """Rank of this process in the parallel mode (0 in one process)."""
    comm = getattr(args, "comm", None)
    return 0 if comm is None else int(comm.Get_rank())


def _progress(args: argparse.Namespace) -> Reporter | None:
    """A text line per stage on stderr, on rank 0, which reports for all processes.

    Shown when stderr is a terminal, and always in the parallel mode: mpiexec
    hands the processes pipes, not the terminal (a batch job's log then gets a
    line per stage).  --quiet and --json turn it off."""
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
    parallel = getattr(args, "comm", None) is not None
    return TextLine(sys.stderr) if not quiet and _rank(args) == 0 and (sys.stderr.isatty() or parallel) else None


def _close(progress: Reporter | None) -> None:
    if progress is not None:
        progress.close()


def _profile_document(profile: Any) -> dict[str, Any]:
    """``info --json`` of a wait-state profile (docs/json.md, "profile")."""
    est = profile.estimates()
    return {"profile": profile.path, "command": profile.command, "mpi": profile.mpi, "ranks": profile.ranks,
            "mpi_calls": profile.n_calls, "run_length": profile.run_length,
            "execution_time": [float(x) for x in profile.execution_time],
            "mpi_time": [float(x) for x in profile.mpi_time],
            "callpaths": list(profile.callpath_names),
            "estimates": {m: est.total(m) for m in ("time", "comp", "mpi") + ESTIMATED}}


def cmd_info(args: argparse.Namespace) -> int:
    from .profile import Profile

    progress = _progress(args)
    trace = open_trace(args.trace, progress=progress)
    _close(progress)
    if isinstance(trace, Profile):
        if args.json:
            print(json.dumps(_profile_document(trace), indent=1))
        else:
            print(trace.summary())
            print(f"  a wait-state profile (no events); its estimates per call path: waitscope analyze {trace.path}")
        return 0
    if args.json:
        print(json.dumps(trace_document(trace), indent=1))
    else:
        print(trace.summary())
    return 0


TRACE_OPTIONS = (("delay", "--delay"), ("critical_path", "--critical-path"), ("window", "--window"),
                 ("clock_correction", "--clock-correction"), ("perfetto", "--perfetto"), ("json", "--json"))
"""Options of ``analyze`` that need a trace's events (a profile refuses them)."""


def analyze_profile(args: argparse.Namespace, path: str) -> int:
    """``waitscope analyze`` of a wait-state profile: its estimates as a report."""
    from .cli_whatif import pop_lines
    from .profile import open_profile

    if _rank(args) != 0:
        return 0  # under mpiexec rank 0 reads the (small) profile alone
    given = [option for attribute, option in TRACE_OPTIONS if getattr(args, attribute, None)]
    if given:
        return _error(args, f"{', '.join(given)}: {path} is a wait-state profile, which has no events; "
                            "this needs a trace (waitscope trace instead of waitscope profile)")
    profile = open_profile(path)
    try:
        result = profile.estimates(getattr(args, "method", None) or "seed")
    except ValueError as exc:
        return _error(args, f"--method: {exc}")
    print(f"waitscope {__version__}: {path}")
    print(f"wait-state profile of {profile.command or 'an MPI program'}: {profile.ranks} ranks, "
          f"{len(profile.callpath_names)} call paths, {profile.n_calls:,} MPI calls ({profile.mpi.split(chr(10))[0]})")
    if getattr(args, "metric", None):
        from .report import metric_table

        ids = _metric_ids(args, result)
        if ids is None:
            return 2
        print()
        print("\n\n".join(metric_table(result, mid, top=args.top or 10, inclusive=args.inclusive) for mid in ids))
    else:
        print(result.summary(top=args.top or 5))
        print("\n".join(pop_lines(result, None, "a profile has no events to simulate on an ideal network")))
    if getattr(args, "output", None):
        try:
            written = result.to_cube(args.output)
        except OSError as exc:
            print(f"waitscope: error: cannot write {args.output}: {exc}", file=sys.stderr)
            return 2
        print(f"Cube report written to {written}")
    return 0


def _event_counts(trace: Trace) -> Any:
    """Events per location of the whole trace (collective in the parallel mode)."""
    counts = trace.event_counts()
    if trace.comm is None:
        return counts
    from mpi4py import MPI

    return trace.comm.allreduce(counts, op=MPI.SUM)


def _check_output(args: argparse.Namespace) -> bool:
    """Checks ``-o`` before the analysis runs (False: refused, with one line on stderr)."""
    if not getattr(args, "output", None):
        return True
    from .cube import report_path

    try:
        args.output = report_path(args.output)
    except (ValueError, OSError) as exc:
        if _rank(args) == 0:
            print(f"waitscope: error: -o: {exc}", file=sys.stderr)
        return False
    return True


def format_timings(timings: dict[str, float]) -> str:
    """The steps of an analysis and their seconds (AnalysisResult.timings), a line each."""
    lines = ["analysis steps (seconds):"]
    lines += [f"  {step:<18s}{seconds:9.3f}" for step, seconds in timings.items()]
    lines.append(f"  {'all steps':<18s}{sum(timings.values()):9.3f}")
    return "\n".join(lines)


def _error(args: argparse.Namespace, message: str) -> int:
    """One line on stderr (by rank 0 under mpiexec); the exit status of bad input."""
    if _rank(args) == 0:
        print(f"waitscope: error: {message}", file=sys.stderr)
    return 2


def _window_error(trace: Trace, window: tuple[float, float] | None) -> str | None:
    """Why --window cannot be analysed (it lies outside the run), or None."""
    if window is None:
        return None
    start, end = trace.time_span
    if max(start, window[0]) < min(end, window[1]):
        return None
    return (f"--window {window[0]:g}:{window[1]:g} lies outside the run, which spans {start:.6g} s to {end:.6g} s "
            "(seconds from the start of the trace)")


def ideal_runtime(trace: Trace, window: tuple[float, float] | None) -> tuple[float | None, str]:
    """The run time on an ideal network (of the window's piece of execution with `window`)
    for the POP efficiencies: (seconds, "") or (None, why not).

    Simulates ``trace.simulate(network="ideal")``; in the parallel mode every
    process must call this (the simulation and the reductions are collective)."""
    from . import TraceError
    from .pop import ideal_span

    comm = trace.comm
    try:
        ideal = trace.simulate(network="ideal", progress=False)
    except (TraceError, ValueError, NotImplementedError) as exc:
        return None, str(exc)
    if window is None:
        return float(ideal.run_length), ""
    start, end = trace.time_span
    span = (max(start, window[0]), min(end, window[1]))
    try:
        lo, hi = ideal_span(trace, ideal, span)
    except ValueError:
        lo, hi = float("inf"), float("-inf")  # no events here (parallel mode: maybe on other processes)
    if comm is not None:
        from mpi4py import MPI

        lo = comm.allreduce(lo, op=MPI.MIN)
        hi = comm.allreduce(hi, op=MPI.MAX)
    if not lo < hi:
        return None, "no events of the window in the ideal-network run"
    return hi - lo, ""


def _metric_ids(args: argparse.Namespace, result: Any) -> list[str] | None:
    """The metrics --metric names, resolved (None: a name is unknown; the error is printed)."""
    from . import _metrics

    ids = []
    for key in args.metric:
        try:
            ids.append(result.metrics[_metrics.resolve(result.metrics, key, "analyze --json lists")].id)
        except (KeyError, ValueError) as exc:
            _error(args, f"--metric: {exc.args[0] if exc.args else exc}")
            return None
    return ids


def cmd_analyze(args: argparse.Namespace) -> int:
    from .profile import profile_path

    if not _check_output(args):
        return 2
    profile = profile_path(args.trace)
    if profile is not None:
        return analyze_profile(args, profile)
    if getattr(args, "method", None):
        return _error(args, f"--method: {args.trace} is a trace; the method of the estimates applies to a wait-state "
                            "profile (profile.json)")
    threads = getattr(args, "threads", "auto")
    if threads not in (1, "auto") and getattr(args, "comm", None) is not None:
        return _error(args, "--threads: not under mpiexec (the processes divide the work)")
    progress = _progress(args)
    trace = open_trace(args.trace, comm=getattr(args, "comm", None), progress=progress, threads=threads)
    window = getattr(args, "window", None)
    problem = _window_error(trace, window)
    if problem is not None:
        _close(progress)
        return _error(args, problem)
    perfetto = getattr(args, "perfetto", None)
    result = trace.analyze(delay_model=args.delay, critical_path=args.critical_path, progress=progress,
                           clock_correction=getattr(args, "clock_correction", None),
                           window=getattr(args, "window", None), threads=threads,
                           wait_records=bool(perfetto), delay_records=bool(perfetto and args.delay))
    counts = _event_counts(trace)
    metrics = getattr(args, "metric", None)
    # the POP efficiencies of the text report need the run on an ideal network
    # (collective in the parallel mode: every process simulates its share)
    ideal, why = (None, "") if args.json or metrics else ideal_runtime(trace, window)
    _close(progress)
    if result is None:  # parallel mode: rank 0 has the result and reports
        return 0
    if getattr(args, "timings", False):
        print(format_timings(result.timings), file=sys.stderr)
    if args.json:
        print(json.dumps(analysis_document(result, counts), indent=1))
    elif metrics:
        from .report import metric_table

        ids = _metric_ids(args, result)
        if ids is None:
            return 2
        print(f"waitscope {__version__}: {trace.path}")
        for line in _window_note(result):
            print(line)
        print()
        for mid in ids:
            if mid != ids[0]:
                print()
            print(metric_table(result, mid, top=args.top if args.top is not None else 10,
                               inclusive=args.inclusive))
    else:
        print(f"waitscope {__version__}: {trace.path}")
        print(f"{trace.n_locations} locations, {int(counts.sum())} events, {len(trace.callpath_names)} call paths, "
              f"clock {trace.clock['resolution']} ticks/s")
        beside = os.path.join(os.path.dirname(os.path.abspath(trace.path)), "profile.json")
        if os.path.isfile(beside):
            print(f"the wait-state profile of the same run is beside it: waitscope analyze {beside}")
        print(result.summary(top=args.top if args.top is not None else 5))
        from .cli_whatif import pop_lines

        print("\n".join(pop_lines(result, ideal, why)))
    if getattr(args, "output", None) and result is not None:
        try:
            written = result.to_cube(args.output)
        except OSError as exc:
            print(f"waitscope: error: cannot write {args.output}: {exc}", file=sys.stderr)
            return 2
        print(f"Cube report written to {written}", file=sys.stderr if args.json else sys.stdout)
    if perfetto and result is not None:
        try:
            written = result.to_perfetto(perfetto, window=getattr(args, "window", None))
        except OSError as exc:
            print(f"waitscope: error: cannot write {perfetto}: {exc}", file=sys.stderr)
            return 2
        print(f"Perfetto trace written to {written} (open it in https://ui.perfetto.dev)",
              file=sys.stderr if args.json else sys.stdout)
    return 0


def _window_note(result: Any) -> list[str]:
    from .report import _window_lines

    return _window_lines(result)


def cmd_comm(args: argparse.Namespace) -> int:
    """The communication matrix and the message-size histogram of a trace."""
    from .comm import format_matrix

    trace = open_trace(args.trace, progress=_progress(args))
    matrix = trace.comm_matrix(kind=args.kind, collectives=args.collectives)
    sizes = trace.message_sizes()
    if args.json:
        doc = {"kind": args.kind, "collectives": args.collectives, "matrix": matrix.tolist(),
               "message_sizes": [{k: int(row[k]) for k in sizes.dtype.names} for row in sizes]}
        print(json.dumps(doc, indent=1))
        return 0
    what = "bytes" if args.kind == "bytes" else "messages"
    print(f"{what} sent, point-to-point{' and collectives' if args.collectives else ''}: rows send, columns receive")
    print(format_matrix(matrix, args.kind))
    if len(sizes):
        print("\nmessage sizes (point-to-point)")
        for row in sizes:
            label = "0 bytes" if row["log2_class"] < 0 else f"[{row['low']}, {row['high']}) bytes"
            print(f"  {label:>28}  {int(row['count']):>10} messages  {int(row['bytes']):>14} bytes")
    return 0


DEMO_NETWORK = {"latency": 1e-5, "bandwidth": 1e9}
"""The network of the demo's run: 10 µs latency, 1 GB/s."""


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job on a program with a known imbalance: analysis, culprit, what-if, Cube report, pictures."""
    from . import examples
    from .cli_whatif import pop_lines
    from .compare import side_by_side
    from .report import culprit, culprit_line

    out = os.path.abspath(args.output_dir)
    trace_dir = os.path.join(out, "trace")
    print("waitscope demo: a 2D halo exchange on 4 x 4 ranks (waitscope.examples.halo_exchange). Every time step")
    print("each rank computes fluxes and an update, exchanges halos with its neighbours (MPI_Irecv, MPI_Isend,")
    print("MPI_Waitall) and joins an MPI_Allreduce. One rank has more work than the others: which one, what does")
    print("its extra work cost, and what would balancing it gain?")
    print(f"writing into {out} (choose the directory with -o DIR)\n")
    os.makedirs(out, exist_ok=True)
    anchor = examples.halo_exchange().write(trace_dir, **DEMO_NETWORK)
    trace = open_trace(anchor, progress=False)
    result = trace.analyze(delay_model="proportional", critical_path=True, progress=False)
    print(f"$ waitscope analyze {trace_dir} --delay proportional --critical-path --top 3")
    print(result.summary(top=3))
    print("\n".join(pop_lines(result)))

    found = culprit(result)
    written = [("the trace, OTF2", anchor)]
    after = None
    if found is not None:
        region = trace.region_names[int(trace.callpath_region[found.callpath])]
        print(f"\nthe culprit (from the delay costs): {culprit_line(result)}.")
        print(f"\n$ waitscope whatif {trace_dir} --balance {region}")
        simulated = trace.simulate(balance=region, progress=False)
        after = simulated.analyze(delay_model="proportional", progress=False)
        print(side_by_side(result, after, top=3, label_before="recorded", label_after="balanced"))
        gain = result.run_length - after.run_length
        print(f"\nbalancing {region} would make the run {gain:.6f} s shorter ({100 * gain / result.run_length:.1f} %): "
              f"{result.run_length:.6f} s -> {after.run_length:.6f} s")
    written.append(("Cube report (CubeGUI, pycubexr)", result.to_cube(os.path.join(out, "report.cubex"))))
    try:
        from . import plot
    except ImportError:
        from ._optional import install_hint

        print(f"\nThe pictures need matplotlib: {install_hint('matplotlib')}", file=sys.stderr)
    else:
        fig = plot.heatmaps(result, ["mpi_latesender", "mpi_wait_nxn", "delay_short", "delay_long"], share=True,
                            shared_scale=False)
        fig.suptitle("where ranks wait (Late Sender, Wait at N x N) and whose delays caused the waiting (short- and "
                     "long-term delay costs), as shares of the run time")
        path = os.path.join(out, "heatmap.png")
        fig.savefig(path, dpi=100)
        written.append(("heatmap of waiting time and delay costs on the process grid", path))
        path = os.path.join(out, "timeline.png")
        plot.timeline(trace, result, window=(0.0, result.run_length / 3)).savefig(path, dpi=100)
        written.append(("timeline of the first steps with wait states and the critical path", path))
        if after is not None:
            path = os.path.join(out, "whatif.png")
            plot.whatif(result, after, "mpi_wait_nxn", labels=("recorded", f"{region} balanced")).savefig(path, dpi=100)
            written.append(("Wait at N x N per rank, recorded and balanced", path))
    print("\nwritten:")
    for what, path in written:
        print(f"  {path}  ({what})")
    print(f"\nnext: the same on your own program: waitscope trace -- mpiexec -n 4 ./app, then "
          f"waitscope analyze waitscope-trace --delay proportional --critical-path")
    return 0


def _positive_int(text: str) -> int:
    """argparse type of counts such as --top: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _threads(text: str) -> "int | str":
    """argparse type of --threads: a positive integer or 'auto'."""
    return "auto" if text == "auto" else _positive_int(text)


def _window(text: str) -> tuple[float, float]:
    """argparse type of --window: START:END in seconds, START < END."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, end = float(parts[0]), float(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END in seconds (e.g. 1.5:3), got {text!r}") from None
    if not (math.isfinite(start) and math.isfinite(end)) or not start < end:
        raise argparse.ArgumentTypeError(f"expected finite START < END in seconds, got {text!r}")
    return start, end


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="waitscope", description="Finds why parallel MPI programs wait.")
    parser.add_argument("--version", action="version", version=f"waitscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="summarise a trace: locations, regions, call paths, events")
    info.add_argument("trace", help="OTF2 anchor file or experiment directory (or a wait-state profile: profile.json)")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.set_defaults(func=cmd_info)

    analyze = sub.add_parser("analyze", help="wait-state analysis of a trace")
    analyze.add_argument("trace", help="OTF2 anchor file or experiment directory; a wait-state profile "
                                       "(profile.json, or the directory of waitscope profile) gives its estimates")
    analyze.add_argument("--delay", choices=["proportional", "wait-first"], default=None,
                         help="add the delay analysis with this cost model")
    analyze.add_argument("--critical-path", action="store_true", help="add the critical-path analysis")
    analyze.add_argument("--clock-correction", choices=["clc"], default=None,
                         help="correct the timestamps with the controlled logical clock before the analysis")
    analyze.add_argument("--window", type=_window, metavar="START:END", default=None,
                         help="report only the part of the run between START and END seconds (trace time)")
    analyze.add_argument("--threads", type=_threads, default="auto", metavar="N|auto",
                         help="read and replay with N threads (default auto: one per core this process may run on, "
                              "with at least 16 locations and 250,000 events each, as many as the free memory "
                              "holds; one under mpiexec); the same result as one thread")
    analyze.add_argument("--json", action="store_true", help="machine-readable output")
    analyze.add_argument("--top", type=_positive_int, default=None, metavar="N",
                         help="how many call paths each table lists (default 5; with --metric 10)")
    analyze.add_argument("--metric", action="append", metavar="M",
                         help="print only the top call paths of metric M, as cube_stat -m M -t N does (repeatable; "
                              "M: a metric id such as mpi_latesender, a display name such as 'Late Sender', "
                              "or a unique prefix)")
    analyze.add_argument("--inclusive", action="store_true",
                         help="with --metric: values including the call paths below (default: exclusive)")
    analyze.add_argument("--method", choices=["seed", "calibrated"], default=None,
                         help="a wait-state profile's estimates: measured against the fastest call of each kind "
                              "(seed, the default: Mao et al. 2014) or against the no-wait durations measured at "
                              "MPI_Finalize (calibrated: also finds a static imbalance)")
    analyze.add_argument("--quiet", action="store_true", help="no progress output")
    analyze.add_argument("--timings", action="store_true",
                         help="print the seconds of each step of the analysis on stderr")
    analyze.add_argument("-o", "--output", metavar="REPORT.cubex",
                         help="also write the result as a Cube4 report (for CubeGUI, pycubexr)")
    analyze.add_argument("--perfetto", metavar="OUT.json",
                         help="also write the trace with its wait states, messages and critical path as "
                              "Chrome/Perfetto trace-event JSON (ui.perfetto.dev, chrome://tracing)")
    analyze.set_defaults(func=cmd_analyze)

    comm = sub.add_parser("comm", help="communication matrix (sender x receiver rank) and message sizes")
    comm.add_argument("trace", help="OTF2 anchor file or experiment directory")
    comm.add_argument("--kind", choices=["bytes", "count"], default="bytes", help="bytes (default) or messages")
    comm.add_argument("--collectives", action="store_true",
                      help="add the collectives by their recorded bytes (see waitscope.comm)")
    comm.add_argument("--json", action="store_true", help="machine-readable output")
    comm.set_defaults(func=cmd_comm)

    demo = sub.add_parser("demo", help="the main job on a halo exchange with one slow rank: the report, the "
                                       "culprit, the what-if gain; writes the trace, a Cube report and pictures "
                                       "into ./waitscope-demo (-o DIR)")
    demo.add_argument("-o", "-d", "--output-dir", metavar="DIR", default="waitscope-demo",
                      help="(default: ./waitscope-demo in the current directory) where the trace, the Cube "
                           "report and the pictures go; created if missing")
    demo.set_defaults(func=cmd_demo)

    from .cli_measure import add_parsers as add_measure_parsers

    add_measure_parsers(sub)  # trace, profile

    from .cli_whatif import add_parsers as add_whatif_parsers

    add_whatif_parsers(sub)  # diff, whatif
    return parser


def _quiet_broken_pipe() -> None:
    """After the reader of stdout went away (``waitscope info T | head``): no
    traceback, and no second error when Python flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file (e.g. captured by a test)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    from . import TraceError
    from ._parallel import ParallelModeUnavailable

    args = build_parser().parse_args(argv)
    try:
        args.comm = world_comm() if args.func is cmd_analyze else None
    except ParallelModeUnavailable as exc:
        if mpi_launch_rank() == 0:
            print(f"waitscope: error: {exc}", file=sys.stderr)
        return 2
    if args.comm is None and mpi_launch_rank() != 0:
        return 0  # info or demo started by mpiexec: rank 0 works alone
    if args.comm is not None and getattr(args, "clock_correction", None) is not None:
        # the correction needs every location in one process
        if _rank(args) == 0:
            print("waitscope: error: --clock-correction needs all locations in one process; "
                  "it is not available under mpiexec", file=sys.stderr)
        return 2
    if args.comm is not None and getattr(args, "perfetto", None):
        # the timeline needs every location's events in one process
        if _rank(args) == 0:
            print("waitscope: error: --perfetto needs all locations in one process; "
                  "it is not available under mpiexec", file=sys.stderr)
        return 2
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except TraceError as exc:
        if _rank(args) == 0:  # every process raises the same error
            print(f"waitscope: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 141  # as a shell reports a process ended by SIGPIPE
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's and mpiexec's Ctrl-C both arrive
        if _rank(args) == 0:  # mpiexec passes Ctrl-C to every process: one line for all
            print("waitscope: interrupted", file=sys.stderr)
        if args.comm is not None:
            # messages of the stopped replay are still in flight: MPI_Finalize would
            # complain about them (or wait); end the process as Ctrl-C means
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
