"""Command line: ``waitscope trace`` and ``waitscope profile`` measure an MPI run.

    waitscope trace [-o DIR] [--profile] [--no-openmp] -- COMMAND [ARGS...]
    waitscope profile [-o DIR] -- COMMAND [ARGS...]

COMMAND (usually ``mpiexec.mpich -n 4 ./app``) runs with the waitscope
interposition library preloaded (``LD_PRELOAD``; the environment comes
from :func:`waitscope.pmpi.environment` with the MPI that
:func:`waitscope.pmpi.detect_mpi` finds for the command).  The library
writes the OTF2 trace to ``DIR/traces.otf2`` (``WAITSCOPE_TRACE_DIR``) and
the wait-state profile to ``DIR/profile.json`` (``WAITSCOPE_PROFILE_DIR``).
The command's exit status is returned unchanged (128 + N when a signal N
ended it).  A run cut short before MPI_Finalize leaves per-rank files,
which :func:`waitscope.pmpi.finish_trace` assembles into an archive that
names the ranks cut short.  Afterwards one line each says where the
measurement is and what it holds, or that the run was cut short.  A trace
records the program's OpenMP threads through the OpenMP tools interface
(a GCC-compiled program runs on LLVM's libomp for it) unless
``--no-openmp``; a line says whether OpenMP was recorded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from typing import Any, Mapping, Sequence, TextIO

from . import TraceError, pmpi

TRACE_DEFAULT = "waitscope-trace"
PROFILE_DEFAULT = "waitscope-profile"
# what a measurement leaves in its directory (OTF2 archive and profile)
MEASUREMENT_FILES = ("traces.otf2", "traces.def", "traces", "profile.json", ".waitscope", ".waitscope-unseen",
                     "MANIFEST.md")
# where a process that never saw an MPI call leaves its note (csrc/pmpi/unseen.c)
UNSEEN = ".waitscope-unseen"


class MeasureError(Exception):
    """A measurement cannot start (no library, bad directory, no command)."""


def prepare(command: Sequence[str], trace_dir: str | None, profile_dir: str | None,
            environ: Mapping[str, str], openmp: bool = True, buffer: str | None = None) -> dict[str, str]:
    """The environment to run `command` under the measurement.

    :func:`waitscope.pmpi.detect_mpi` picks the MPI (``WAITSCOPE_MPI``
    overrides) and :func:`waitscope.pmpi.environment` preloads its library
    and names the output directories.  Raises MeasureError when the package
    has no interposition library, the MPI cannot be told or its library was
    not built.
    """
    if buffer is not None:
        try:
            pmpi.buffer_bytes(buffer)
        except ValueError:
            raise MeasureError(f"--buffer {buffer}: expected a size such as 16M, 64MiB or 1G (at most 64G)") from None
    try:
        mpi = pmpi.detect_mpi(list(command))
    except ValueError as exc:
        raise MeasureError(f"cannot tell which MPI runs {' '.join(command)!r}: {exc}") from None
    try:
        return dict(pmpi.environment(list(command), trace_dir=trace_dir, profile_dir=profile_dir, mpi=mpi,
                                     base=environ, openmp=openmp, buffer=buffer))
    except (ValueError, OSError) as exc:
        raise MeasureError(f"no interposition library for {mpi}: {exc}") from None


def finish_trace(trace_dir: str) -> str | None:
    """Assembles the trace of a run cut short from its per-rank files
    (:func:`waitscope.pmpi.finish_trace`); None, or a line saying why it failed."""
    if not pmpi.pending(trace_dir):
        return None
    try:
        pmpi.finish_trace(trace_dir)
    except (TraceError, OSError) as exc:
        return f"the per-rank files of the run in {trace_dir} could not be assembled into a trace: {exc}"
    return None


def prepare_directory(path: str, force: bool) -> None:
    """Creates the output directory; refuses one holding an earlier measurement unless `force`."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise MeasureError(f"{path} exists and is not a directory")
    old = [name for name in MEASUREMENT_FILES if os.path.lexists(os.path.join(path, name))]
    if old and not force:
        raise MeasureError(f"{path} already holds a measurement ({', '.join(old)}); choose another -o DIR "
                           "or add --force to replace it")
    for name in old:
        target = os.path.join(path, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        else:
            os.remove(target)
    os.makedirs(path, exist_ok=True)


def run_command(command: Sequence[str], env: Mapping[str, str]) -> int:
    """Runs the command; its exit status, 128 + N when signal N ended it (as a shell reports it)."""
    try:
        proc = subprocess.Popen(list(command), env=dict(env))
    except OSError as exc:
        raise MeasureError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:  # the terminal's Ctrl-C reached the command too; wait for it to end
            continue
    return 128 - code if code < 0 else code


def _size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def _event_file_ranks(trace_dir: str) -> list[str]:
    """Names of the per-location event files that exist (without the .evt suffix)."""
    folder = os.path.join(trace_dir, "traces")
    if not os.path.isdir(folder):
        return []
    names = [f[:-4] for f in os.listdir(folder) if f.endswith(".evt")]
    return sorted(names, key=lambda s: (len(s), s))


def describe_trace(trace_dir: str, status: int) -> tuple[bool, str]:
    """(complete, one line) about the trace in `trace_dir` after a run that ended with `status`."""
    from . import TraceError, open as open_trace

    anchor = os.path.join(trace_dir, "traces.otf2")
    if not os.path.exists(anchor):
        files = _event_file_ranks(trace_dir)
        have = f"; event files exist for locations {', '.join(files)}" if files else ""
        return False, (f"the run was cut short (exit status {status}): no trace definitions were written to "
                       f"{anchor}, the ranks did not all reach MPI_Finalize{have}")
    try:
        trace = open_trace(anchor)
    except TraceError as exc:
        return False, f"the run was cut short (exit status {status}): {exc}"
    events = int(trace.n_events)
    size = _size(os.path.join(trace_dir, "traces")) + _size(os.path.join(trace_dir, "traces.def")) + _size(anchor)
    per_event = f", {size / events:.1f} bytes/event" if events else ""
    ranks = sorted({loc.rank for loc in trace.locations})
    threads = len(trace.locations) - len(ranks)
    with_threads = f" (and {threads} OpenMP threads)" if threads else ""
    line = (f"trace written to {anchor}: {len(ranks)} ranks{with_threads}, {events:,} events, {size / 1e6:.2f} MB"
            f"{per_event}; analyze it with: waitscope analyze {anchor}")
    if trace.openmp_recording:
        line += f"\nwaitscope: OpenMP {trace.openmp_recording}"
    return True, line


def describe_profile(profile_dir: str, status: int) -> tuple[bool, str]:
    """(complete, one line) about the profile in `profile_dir`."""
    from . import TraceError
    from .profile import PROFILE_FILE, open_profile

    path = os.path.join(profile_dir, PROFILE_FILE)
    if not os.path.exists(path):
        return False, (f"the run was cut short (exit status {status}): no profile was written to {path} "
                       "(rank 0 writes it in MPI_Finalize)")
    try:
        profile = open_profile(path)
        waits = profile.estimated_waiting()
    except TraceError as exc:
        return False, f"the profile is not usable: {exc}"
    return True, (f"profile written to {path}: {profile.ranks} ranks, {profile.n_calls:,} MPI calls; "
                  f"estimated waiting: {waits}; the estimates per call path: waitscope analyze {path}")


def unseen_notes(directory: str) -> list[dict[str, Any]]:
    """The notes of the processes that ran with the library but never saw
    MPI_Init: executable, whether MPI was initialised all the same, the
    MPI libraries they had loaded."""
    folder = os.path.join(directory, UNSEEN)
    notes = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        note: dict[str, Any] = {"exe": "?", "initialized": False, "loaded": [], "threads": 0, "level": ""}
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, _, value = line.rstrip("\n").partition("\t")
                    if key == "exe":
                        note["exe"] = value
                    elif key == "initialized":
                        note["initialized"] = value == "1"
                    elif key == "loaded":
                        note["loaded"].append(value)
                    elif key == "threads":
                        note["threads"] = int(value) if value.isdigit() else 1
                    elif key == "level":
                        note["level"] = value
        except OSError:
            continue
        notes.append(note)
    return notes


def _symbols(path: str, defined: bool) -> set[str]:
    """Dynamic symbols of an ELF file (nm -D), defined ones or undefined ones."""
    try:
        out = subprocess.run(["nm", "-D", "--defined-only" if defined else "--undefined-only", path],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.split()}


def _mpi_symbol(name: str) -> bool:
    return name.lower().startswith(("mpi_", "pmpi_"))


def _static_mpi(exe: str) -> str | None:
    """The MPI function an executable defines itself (its MPI linked in statically), if any."""
    try:
        out = subprocess.run(["nm", "--defined-only", exe], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = {line.split()[-1] for line in out.splitlines() if len(line.split()) == 3 and line.split()[1] in "TtWw"}
    return next((n for n in ("MPI_Init", "PMPI_Init", "mpi_init_", "MPI_Init_thread") if n in names), None)


def _listing(names: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def describe_unseen(directory: str, status: int, library: str | None) -> str | None:
    """One line for a run in which no process saw an MPI call, from the notes
    the processes left (None when there are none): whether MPI was
    initialised past the library, which calls of the program the library
    does not wrap, an MPI linked in statically."""
    notes = unseen_notes(directory)
    if not notes:
        return None
    threads = [n for n in notes if n["threads"]]
    if threads:
        n = threads[0]
        ended = f" (the command ended with {_status_text(status)})" if status else ""
        return (f"nothing was recorded{ended}: {n['threads']} rank{'s' if n['threads'] != 1 else ''} of "
                f"{n['exe']} called MPI from more than one thread (MPI was initialised with {n['level']}); waitscope "
                "records the MPI calls of one thread per process, the one that initialised MPI, and a trace or "
                "profile without the other threads' calls would be wrong")
    exes = sorted({n["exe"] for n in notes})
    loaded = sorted({os.path.basename(p) for n in notes for p in n["loaded"]})
    ended = f" (the command ended with {_status_text(status)})" if status else ""
    processes = f"{len(notes)} process{'es' if len(notes) != 1 else ''} of {_listing(exes, 2)}"
    exe = exes[0]
    static = _static_mpi(exe) if os.path.isfile(exe) else None
    if static:
        return (f"no MPI call was seen in the {processes}{ended}: {exe} has its MPI linked in statically (it "
                f"defines {static} itself), so its calls never reach the preloaded library; nothing was recorded. "
                "Link it with the shared MPI library to measure it")
    initialised = sum(1 for n in notes if n["initialized"])
    if initialised:
        wrapped = _symbols(library, defined=True) if library else set()
        calls = sorted(s for s in _symbols(exe, defined=False) if _mpi_symbol(s) and s not in wrapped)
        through = (f"{_listing(calls)}, which {'is' if len(calls) == 1 else 'are'} not wrapped" if calls
                   else "calls the library does not wrap")
        return (f"no MPI call was seen in the {processes}{ended}: MPI was initialised in {initialised} of them, but "
                f"the program calls MPI through {through}; nothing was recorded"
                + (f" (MPI libraries loaded: {_listing(loaded)})" if loaded else ""))
    return (f"no MPI call was seen in the {processes}{ended}, and none of them initialised the MPI library the "
            "measurement wraps: the program does not use MPI, or uses another MPI than "
            f"{os.path.basename(library) if library else 'the one detected'}; nothing was recorded"
            + (f" (MPI libraries loaded: {_listing(loaded)})" if loaded else ""))


def describe_callpaths(command: Sequence[str], env: Mapping[str, str]) -> str:
    """One line: how the trace's call paths were made and what that means for
    the time of the user's functions (docs/pmpi.md)."""
    is_launcher, _ = pmpi._launcher(command[0]) if command else (False, None)
    program = pmpi._program(command[1:] if is_launcher else command[:1])
    instrumented = bool(program) and "__cyg_profile_func_enter" in _symbols(program, defined=False)
    if instrumented and env.get("WAITSCOPE_CALLPATH") != "stack":
        return ("call paths: exact, from the -finstrument-functions hooks the program was compiled with: "
                "every function's time is its own")
    if program and os.path.basename(program).startswith("python"):
        return ("call paths: the Python frames at each MPI call (file:function) and the mpi4py method called: the "
                "computation between two MPI calls is charged to the Python functions both calls share (a Python "
                "program is not sampled)")
    sampling = env.get("WAITSCOPE_SAMPLING", "5")
    try:
        period = int(sampling)
    except ValueError:
        period = 5
    if period > 0:
        return (f"call paths: from the call stack at each MPI call and from samples of it every {period} ms of "
                "CPU time between them: computation is charged to the functions the samples saw (computation "
                f"shorter than {period} ms may stay with the functions around it), never to a function only the "
                "next MPI call shows")
    return ("call paths: from the call stack at each MPI call, without samples: the computation between two MPI "
            "calls is charged to the functions both calls share, never to a function only the later call shows")


def _status_text(status: int) -> str:
    """'status N', or 'signal N (SIGNAME)' for 128 + N."""
    try:
        return f"signal {status - 128} ({signal.Signals(status - 128).name})" if status > 128 else f"status {status}"
    except ValueError:
        return f"status {status}"


def _command(args: argparse.Namespace) -> list[str]:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise MeasureError("no command to run: waitscope trace [-o DIR] [--profile] -- COMMAND [ARGS...]")
    return command


def measure(command: Sequence[str], trace_dir: str | None, profile_dir: str | None, force: bool = False,
            environ: Mapping[str, str] | None = None, out: TextIO | None = None, openmp: bool = True,
            buffer: str | None = None) -> int:
    """Runs `command` under the measurement and reports; returns its exit status."""
    environ = os.environ if environ is None else environ
    out = sys.stderr if out is None else out
    env = prepare(command, trace_dir, profile_dir, environ, openmp=openmp, buffer=buffer)
    for d in {d for d in (trace_dir, profile_dir) if d is not None}:
        prepare_directory(d, force)
    status = run_command(command, env)
    complete = True
    # nothing written at all: the processes' notes may say why
    nothing = ((trace_dir is None or not any(os.path.exists(os.path.join(trace_dir, f))
                                             for f in ("traces.otf2", ".waitscope")))
               and (profile_dir is None or not os.path.exists(os.path.join(profile_dir, "profile.json"))))
    library = next((p for p in env.get("LD_PRELOAD", "").split(":") if "libwaitscope-pmpi" in p), None)
    unseen = None
    for d in {d for d in (trace_dir, profile_dir) if d is not None}:
        line = describe_unseen(d, status, library) if nothing else None
        unseen = unseen or line
        shutil.rmtree(os.path.join(d, UNSEEN), ignore_errors=True)  # a diagnosis only
    if unseen:
        print(f"waitscope: {unseen}", file=out)
        return status
    if trace_dir is not None:
        problem = finish_trace(trace_dir)
        if problem:
            print(f"waitscope: {problem}", file=out)
        ok, line = describe_trace(trace_dir, status)
        complete &= ok
        print(f"waitscope: {line}", file=out)
        if ok:
            print(f"waitscope: {describe_callpaths(command, env)}", file=out)
    if profile_dir is not None:
        ok, line = describe_profile(profile_dir, status)
        complete &= ok
        print(f"waitscope: {line}", file=out)
    if status != 0 and complete:
        print(f"waitscope: note: the command ended with {_status_text(status)}", file=out)
    return status


def cmd_trace(args: argparse.Namespace) -> int:
    trace_dir = args.output_dir or TRACE_DEFAULT
    return _run(args, trace_dir, trace_dir if args.profile else None)


def cmd_profile(args: argparse.Namespace) -> int:
    return _run(args, None, args.output_dir or PROFILE_DEFAULT)


def _run(args: argparse.Namespace, trace_dir: str | None, profile_dir: str | None) -> int:
    try:
        return measure(_command(args), trace_dir, profile_dir, force=args.force,
                       openmp=not getattr(args, "no_openmp", False), buffer=getattr(args, "buffer", None))
    except MeasureError as exc:
        print(f"waitscope: error: {exc}", file=sys.stderr)
        return 2


def add_parsers(sub: Any) -> None:
    """Adds ``trace`` and ``profile`` to the subcommands of the ``waitscope`` parser."""
    trace = sub.add_parser(
        "trace", help="run an MPI program with the trace library preloaded (OTF2 trace; --profile also the profile)",
        description="Runs COMMAND (e.g. mpiexec.mpich -n 4 ./app) with the waitscope interposition library "
                    "preloaded and writes an OTF2 trace to DIR/traces.otf2. The exit status is the command's.")
    trace.add_argument("-o", "--output-dir", metavar="DIR", help=f"where to write (default: ./{TRACE_DEFAULT})")
    trace.add_argument("--profile", action="store_true",
                       help="also write the wait-state profile of the same run (DIR/profile.json)")
    trace.add_argument("--force", action="store_true", help="replace an earlier measurement in DIR")
    trace.add_argument("--no-openmp", action="store_true",
                       help="do not record the program's OpenMP threads (by default they are recorded through the "
                            "OpenMP tools interface; a program built with GCC's libgomp runs on LLVM's libomp for it)")
    trace.add_argument("--buffer", metavar="SIZE",
                       help="memory per process for its events before they go to its file (e.g. 16M, 64M; "
                            "default 1.25M; WAITSCOPE_BUFFER)")
    trace.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    trace.set_defaults(func=cmd_trace)

    profile = sub.add_parser(
        "profile", help="run an MPI program with the profiling library preloaded (wait-state profile)",
        description="Runs COMMAND with the waitscope interposition library preloaded and writes the wait-state "
                    "profile (the estimates of Mao et al., EuroMPI/ASIA 2014, which need no trace) to DIR/profile.json. "
                    "The exit status is the "
                    "command's.")
    profile.add_argument("-o", "--output-dir", metavar="DIR", help=f"where to write (default: ./{PROFILE_DEFAULT})")
    profile.add_argument("--force", action="store_true", help="replace an earlier measurement in DIR")
    profile.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    profile.set_defaults(func=cmd_profile)
