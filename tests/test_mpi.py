"""The parallel mode under mpiexec: the same results as the embedded mode.

Every test launches ``mpiexec -n N python ...`` as a subprocess with a
timeout (a hang fails the test instead of blocking the suite).  The
parallel side is tests/mpi_worker.py: rank 0 writes its results with
np.savez and the test compares them here with ``waitscope.open(path)
.analyze(...)`` in this process.

Equality: identical metric ids, call-path names, critical-path segments,
delay records (compared as sorted rows with their delay vectors) and
wait-state records (identical arrays: both modes sort them by location,
event and metric), and every cube value bitwise equal (sums over
locations are formed in location order in both modes, see ws_ordered_sum
in csrc/analysis).

The machine may have fewer cores than N: MPICH busy-polls, so runs with 3
and 4 processes use few, small traces.
"""
from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pytest

import waitscope
from waitscope import cli, progress, synth
from waitscope.trace import block_owners

from conftest import SHARED_DATA, mpi4py_implementation, mpi_launcher  # tests/ is on sys.path
from programs import collective_runs, random_collective, six_ranks
from random_programs import splice


def _importable(name: str) -> bool:
    """Whether a module is installed, without importing it (mpi4py.MPI would start MPI here)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


LAUNCHER = mpi_launcher()
"""mpiexec of the MPI that mpi4py uses, and the environment it needs."""
if LAUNCHER is None or not _importable(f"waitscope._mpi_{mpi4py_implementation()}"):
    pytest.skip("the parallel mode needs mpi4py, the mpiexec of its MPI and waitscope._mpi_<that MPI>",
                allow_module_level=True)

from mpi_worker import CONFIGS, records_as_rows, result_arrays  # noqa: E402  (tests/ is on sys.path)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "mpi_worker.py"
TIMEOUT = 120.0
"""Seconds any mpiexec run may take before the test fails as a hang."""
QUICK = 30.0
"""Seconds within which a failing parallel run must have ended."""

HANG_SIGNS = re.compile(r"unexpected tag-receive|not matched|bad termination|killed|timed? ?out|\bhang", re.I)
"""Output that suggests a hang or an unclean end (UCX's unmatched messages at MPI_Finalize, hydra's kills)."""


# ---- running mpiexec -----------------------------------------------------------


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def _env() -> dict[str, str]:
    """The environment of the subprocesses: this process's waitscope first, one thread per BLAS."""
    env = dict(os.environ)
    package_root = str(Path(waitscope.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    if LAUNCHER is not None:
        env.update(LAUNCHER[1])
    return env


def run(command: list[str], timeout: float = TIMEOUT, env: dict[str, str] | None = None) -> Run:
    """Runs a command in its own session; kills the whole session when it takes too long."""
    started = time.monotonic()
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env or _env(), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(command)} did not end within {timeout} s (a hang?)\n"
                    f"stdout:\n{out}\nstderr:\n{err}")
    return Run(proc.returncode, out, err, time.monotonic() - started)


def mpiexec(n: int, *command: str, timeout: float = TIMEOUT) -> Run:
    return run([*LAUNCHER[0], "-n", str(n), *command], timeout=timeout)


def worker(n: int, mode: str, out: Path, traces: Iterable[Path]) -> Run:
    out.mkdir(parents=True, exist_ok=True)
    r = mpiexec(n, sys.executable, str(WORKER), mode, str(out), *(str(t) for t in traces))
    if mode != "error":
        assert r.returncode == 0, f"mpiexec -n {n} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


# ---- traces ----------------------------------------------------------------------


def mpi_program(rng: random.Random, n: int, rounds: int) -> synth.Program:
    """A random deadlock-free program: disjoint pairs (send or ssend), rings of
    isend/irecv, fan-ins of blocking receives and collectives on the world
    and on two sub-communicators, with eager and rendezvous sizes."""
    prog = synth.Program(n)
    subs = [prog.comm(sorted(rng.sample(range(n), k=rng.randint(2, n)))) for _ in range(2)]
    for rnd in range(rounds):
        for r in range(n):
            prog.rank(r).compute(rng.choice("abc"), rng.choice([0, 0.5, 1, 2, 3]) * rng.random())
        kind = rng.choice(["pairs", "ssend", "ring", "fan-in", "collective", "subcollective"])
        size = rng.choice([8, 100_000])
        if kind in ("pairs", "ssend"):
            perm = rng.sample(range(n), n)
            for a, b in zip(perm[0::2], perm[1::2]):
                (prog.rank(a).ssend if kind == "ssend" else prog.rank(a).send)(b, tag=rnd, size=size)
                prog.rank(b).recv(a, tag=rnd)
        elif kind == "ring":
            k = rng.randrange(1, n)
            for r in range(n):
                recv = prog.rank(r).irecv((r - k) % n, tag=rnd)
                send = prog.rank(r).isend((r + k) % n, tag=rnd, size=size)
                prog.rank(r).waitall([recv, send] if rng.random() < 0.5 else [send, recv])
        elif kind == "fan-in":
            root = rng.randrange(n)
            for s in rng.sample([r for r in range(n) if r != root], k=min(n - 1, rng.randint(1, 8))):
                prog.rank(s).send(root, tag=rnd, size=size)
                prog.rank(root).recv(s, tag=rnd)
        else:
            comm = rng.choice(subs) if kind == "subcollective" else None
            random_collective(prog, rng, n, comm, ["barrier", "bcast", "reduce", "allreduce", "alltoall",
                                                   "allgather", "gather", "scatter", "scan"])
    return prog


def write_program(directory: Path, n: int, seed: int, rounds: int = 30) -> Path:
    rng = random.Random(seed)
    prog = mpi_program(rng, n, rounds)
    return Path(prog.write(directory, latency=rng.choice([0.0, 1e-3]), bandwidth=rng.choice([None, 1e6])))


SIZES = (4, 7, 13, 100, 256)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory, pingpong_dir: Path) -> dict[str, Path]:
    """Generated traces by name ('r13': 13 ranks, ...) and the real one ('pingpong')."""
    root = tmp_path_factory.mktemp("mpi-traces")
    out = {f"r{n}": write_program(root / f"r{n}", n, seed=1000 + n) for n in SIZES}
    for n, seed in ((5, 1), (9, 2), (17, 3), (31, 4), (64, 5), (150, 6)):
        out[f"r{n}-s{seed}"] = write_program(root / f"r{n}-s{seed}", n, seed=seed, rounds=20)
    out["pingpong"] = pingpong_dir / "traces.otf2"
    # real programs (NAS Parallel Benchmarks), when the shared data is there
    for name in ("sp-scorep", "cg-scorep", "lu-waitscope"):
        path = SHARED_DATA / "real-programs" / name / "traces.otf2"
        if path.exists():
            out[name] = path
    return out


_EMBEDDED: dict[tuple[str, str], dict[str, np.ndarray]] = {}


def embedded(path: Path, config: str) -> dict[str, np.ndarray]:
    """The embedded mode's result of a trace and configuration (cached)."""
    key = (str(path), config)
    if key not in _EMBEDDED:
        _EMBEDDED[key] = result_arrays(waitscope.open(path).analyze(**CONFIGS[config]))
    return _EMBEDDED[key]


# ---- comparisons -----------------------------------------------------------------


def assert_values_equal(expected: np.ndarray, got: np.ndarray, metric_ids: list[str], what: str) -> None:
    """Every value bitwise equal."""
    assert got.shape == expected.shape, what
    for m, metric in enumerate(metric_ids):
        if not np.array_equal(expected[m], got[m]):
            diff = np.abs(expected[m] - got[m])
            scale = np.maximum(np.abs(expected[m]), np.abs(got[m]))
            rel = float(np.max(np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)))
            pytest.fail(f"{what}: {metric} is not bitwise equal (largest relative difference {rel:.3g})")


def assert_same_result(expected: dict[str, Any], got: dict[str, Any], what: str) -> None:
    assert list(got) == list(expected), what
    metric_ids = [str(m) for m in expected["metric_ids"]]
    assert [str(m) for m in got["metric_ids"]] == metric_ids, what
    assert [str(c) for c in got["callpath_names"]] == [str(c) for c in expected["callpath_names"]], what
    assert_values_equal(expected["cube"], got["cube"], metric_ids, what)
    assert np.array_equal(got["clock_violations"], expected["clock_violations"]), what
    if "segments" in expected:
        assert np.array_equal(got["segments"], expected["segments"]), f"{what}: critical-path segments"
        assert np.array_equal(got["path_bounds"], expected["path_bounds"]), f"{what}: critical-path bounds"
    if "records" in expected:
        assert len(got["records"]) == len(expected["records"]), f"{what}: number of delay records"
        assert records_as_rows(got) == records_as_rows(expected), f"{what}: delay records"
    if "wait_states" in expected:
        assert len(expected["wait_states"]) > 0, what
        assert np.array_equal(got["wait_states"], expected["wait_states"]), f"{what}: wait-state records"


# ---- results equal the embedded mode's ------------------------------------------

RUNS = {
    1: ["r4", "r7", "r13", "r100", "r256", "pingpong"],
    2: ["r4", "r7", "r13", "r100", "r256", "pingpong", "r5-s1", "r9-s2", "r17-s3", "r31-s4", "r64-s5",
        "r150-s6", "sp-scorep", "cg-scorep", "lu-waitscope"],
    3: ["r7", "r100", "r256", "pingpong"],  # pingpong's 2 locations leave process 2 without any
    4: ["r4", "r13", "r256", "pingpong"],
}


@pytest.mark.parametrize("n", sorted(RUNS))
def test_results_equal_the_embedded_mode(n, traces, tmp_path):
    names = [name for name in RUNS[n] if name in traces]
    worker(n, "compare", tmp_path, [traces[name] for name in names])
    for i, name in enumerate(names):
        for config in CONFIGS:
            got = dict(np.load(tmp_path / f"{i}-{config}.npz"))
            assert_same_result(embedded(traces[name], config), got, f"{name}, {config}, {n} processes")


@pytest.mark.parametrize("n", [2, 3])
def test_every_process_keeps_its_share(n, traces, tmp_path):
    names = ["r13", "pingpong"]
    worker(n, "share", tmp_path, [traces[name] for name in names])
    for i, name in enumerate(names):
        for config in CONFIGS:
            what = f"{name}, {config}, {n} processes"
            expected = embedded(traces[name], config)
            shares = [dict(np.load(tmp_path / f"{i}-{config}-r{rank}.npz")) for rank in range(n)]
            n_locations = expected["cube"].shape[2]
            owner = block_owners(n_locations, n)
            metric_ids = [str(m) for m in expected["metric_ids"]]
            for rank, share in enumerate(shares):
                mine = owner == rank
                assert np.array_equal(share["owner"], owner), what
                assert list(share["loaded"]) == list(np.flatnonzero(mine)), what
                assert_values_equal(expected["cube"][:, :, mine], share["cube"][:, :, mine], metric_ids,
                                    f"{what}: process {rank}'s own locations")
                assert not share["cube"][:, :, ~mine].any(), f"{what}: process {rank} has values of others"
                assert not share["clock_violations"][~mine].any(), what
            total = sum(share["cube"] for share in shares)
            assert_values_equal(expected["cube"], total, metric_ids, f"{what}: sum of the shares")
            assert np.array_equal(sum(s["clock_violations"] for s in shares), expected["clock_violations"]), what
            if "segments" in expected:
                pieces = np.sort(np.concatenate([s["segments"] for s in shares]), order=["start", "end"])
                assert np.array_equal(pieces, expected["segments"]), f"{what}: critical-path pieces"
                for rank, share in enumerate(shares):
                    assert (owner[share["segments"]["location"]] == rank).all(), what
            if "records" in expected:
                rows = sorted(row for s in shares for row in records_as_rows(s))
                assert rows == records_as_rows(expected), f"{what}: delay records"
            if "wait_states" in expected:
                # each process has the records of its own locations; in process order they are all
                for rank, share in enumerate(shares):
                    assert (owner[share["wait_states"]["location"]] == rank).all(), what
                pieces = np.concatenate([s["wait_states"] for s in shares])
                assert np.array_equal(pieces, expected["wait_states"]), f"{what}: wait-state records"


# ---- errors: every process raises, all exit at once -------------------------------


def _messages(r: Run, out: Path, n: int) -> dict[int, str]:
    """rank -> 'ok' or the TraceError message, from the worker's error mode (one trace)."""
    messages: dict[int, str] = {}
    for rank in range(n):
        report = out / f"error-r{rank}.txt"
        assert report.exists(), f"process {rank} did not report:\n{r.stdout}\n{r.stderr}"
        messages[rank] = report.read_text().rstrip("\n")
    return messages


def assert_failed_cleanly(r: Run, out: Path, n: int) -> dict[int, str]:
    """Every process raised TraceError, mpiexec ended soon with a non-zero status, nothing hints at a hang."""
    messages = _messages(r, out, n)
    for rank, text in messages.items():
        assert text.startswith("TraceError: "), f"process {rank}: {text}"
    assert r.returncode != 0
    assert r.seconds < QUICK, f"the failing run took {r.seconds:.1f} s"
    sign = HANG_SIGNS.search(r.stdout + r.stderr)
    assert sign is None, f"{sign.group(0)!r} in the output:\n{r.stdout}\n{r.stderr}"
    return {rank: text[len("TraceError: "):] for rank, text in messages.items()}


def embedded_error(path: Path) -> str:
    with pytest.raises(waitscope.TraceError) as info:
        waitscope.open(path).analyze(**CONFIGS["proportional"])
    return str(info.value)


@pytest.mark.parametrize("n", [2, 3])
def test_corrupted_event_file_of_another_process(n, tmp_path):
    path = Path(six_ranks().write(tmp_path / "trace")).parent
    evt = path / "traces" / "3.evt"
    evt.write_bytes(evt.read_bytes()[: evt.stat().st_size // 2])
    assert block_owners(6, n)[3] != 0  # the file belongs to another process than rank 0
    messages = assert_failed_cleanly(worker(n, "error", tmp_path / "out", [path]), tmp_path / "out", n)
    # (which error OTF2 meets in a cut file may vary between runs: only the file and location are certain)
    for text in messages.values():
        assert "traces/3.evt" in text and "location 3" in text, text
    assert messages[0].startswith(f"analysis process {block_owners(6, n)[3]}: "), messages[0]


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("case", ["missing send", "stalled replay"])
def test_inconsistent_trace(n, case, tmp_path):
    # Location 3 (of process 1) from a run where it receives the message
    # 2 -> 3 with another tag: neither the send nor the receive has a
    # match, which the process of location 3 finds.  Or location 2 from a
    # run where it sends the message after the allreduce, while location 3
    # receives it before: the forward replay stalls on every process
    # (location 3 waits for the message, the others in the allreduce).
    assert block_owners(6, n)[3] == 1
    if case == "missing send":
        path = splice(tmp_path / "trace", six_ranks(), six_ranks(bad_tag=99), 3)
    else:
        path = splice(tmp_path / "trace", six_ranks(), six_ranks(send_late=True), 2)
    expected = embedded_error(path)
    messages = assert_failed_cleanly(worker(n, "error", tmp_path / "out", [path]), tmp_path / "out", n)
    assert messages[0] == expected
    if case == "stalled replay":
        assert set(messages.values()) == {expected}  # every process reports the same deadlock


@pytest.mark.parametrize("n", [2, 3])
def test_runs_of_collectives_equal_the_embedded_mode(n, tmp_path):
    """Between processes, a location's contributions to consecutive sites of
    one communicator travel ahead in batches, and the critical path is
    walked on process 0 (most of its possible moves are at collectives
    spanning processes, csrc/analysis/path_walk.c): the results stay
    bitwise equal."""
    path = Path(collective_runs(iterations=40).write(tmp_path / "trace"))
    worker(n, "compare", tmp_path, [path])
    for config in CONFIGS:
        got = dict(np.load(tmp_path / f"0-{config}.npz"))
        assert_same_result(embedded(path, config), got, f"collective runs, {config}, {n} processes")


@pytest.mark.parametrize("n", [2, 3])
def test_crossed_collectives_stall_as_in_the_embedded_mode(n, tmp_path):
    # Location 3 from a run where ranks 0-3 enter the world's collectives
    # before the sub-communicator's: location 3 waits in the world's
    # allreduce for 0-2, which wait in the sub-communicator's barrier for 3.
    # Contributions sent ahead must not let the replay pass that.
    path = splice(tmp_path / "trace", collective_runs(), collective_runs(world_first=True), 3)
    expected = embedded_error(path)
    assert "cannot continue" in expected, expected
    messages = assert_failed_cleanly(worker(n, "error", tmp_path / "out", [path]), tmp_path / "out", n)
    assert set(messages.values()) == {expected}


# ---- the command line under mpiexec ----------------------------------------------


def progress_line(stage: str, events: int) -> str:
    """A finished stage's progress line without its seconds."""
    return f"{stage:<{progress.STAGE_WIDTH}} {events:>12,d} of {events:>12,d} events 100.0 %"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "waitscope", *args]


def _embedded_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert cli.main(list(args)) == 0
    return capsys.readouterr().out


def test_command_line_under_mpiexec(traces, capsys, tmp_path):
    path = str(traces["r13"])
    options = ["analyze", "--delay", "proportional", "--critical-path", path]
    text = mpiexec(2, *_cli(*options))
    assert text.returncode == 0, text.stderr
    assert text.stdout == _embedded_cli(capsys, *options)  # printed once, by rank 0
    # progress: mpiexec gives the processes pipes, not the terminal, so rank 0 writes a line
    # per stage, with the events of all processes (those of one process's whole analysis)
    one: list[tuple[str, int, int]] = []
    waitscope.open(path, progress=lambda *r: one.append(r)).analyze(
        delay_model="proportional", critical_path=True, progress=lambda *r: one.append(r))
    expected = [progress_line(stage, n) for stage, done, n in one if done == n]
    assert [re.sub(r" +[0-9.]+ s$", "", line) for line in text.stderr.splitlines()] == expected
    assert mpiexec(2, *_cli(*options, "--quiet")).stderr == ""

    report = tmp_path / "report.cubex"
    js = mpiexec(2, *_cli(*options, "--json", "-o", str(report)))
    assert js.returncode == 0, js.stderr
    assert report.is_file() and js.stderr == f"Cube report written to {report}\n"  # by rank 0
    got, expected = json.loads(js.stdout), json.loads(_embedded_cli(capsys, *options, "--json"))
    assert set(got["metrics"]) == set(expected["metrics"])
    assert got == expected


def test_window_report_under_mpiexec(traces, capsys):
    # the POP efficiencies over a window need the ideal-network simulation and the window's
    # piece of execution in it, from every process's locations: the same report as one process
    path = str(traces["r13"])
    span = waitscope.open(path).time_span
    window = f"{span[0] + 0.3 * (span[1] - span[0])}:{span[0] + 0.6 * (span[1] - span[0])}"
    text = mpiexec(2, *_cli("analyze", "--quiet", "--window", window, path))
    assert text.returncode == 0, text.stderr
    assert text.stdout == _embedded_cli(capsys, "analyze", "--quiet", "--window", window, path)
    assert "POP efficiencies over the window" in text.stdout
    assert re.search(r"transfer efficiency +[0-9]+\.[0-9]{2} %", text.stdout)
    outside = mpiexec(2, *_cli("analyze", "--quiet", "--window", f"{span[1] + 1}:{span[1] + 2}", path))
    assert outside.returncode == 2 and outside.stdout == ""
    assert outside.stderr.count("lies outside the run") == 1  # rank 0 only


def test_console_script_under_mpiexec(traces, capsys):
    script = shutil.which("waitscope", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the waitscope console script is not installed next to this Python")
    path = str(traces["pingpong"])
    r = mpiexec(2, script, "analyze", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == _embedded_cli(capsys, "analyze", path)


def test_command_line_error_under_mpiexec(tmp_path):
    path = Path(six_ranks().write(tmp_path / "trace")).parent
    evt = path / "traces" / "4.evt"
    evt.write_bytes(evt.read_bytes()[:40])
    r = mpiexec(2, *_cli("analyze", str(path)))
    assert r.returncode == 2
    assert r.seconds < QUICK
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("waitscope: error: "), r.stderr  # rank 0 only
    # (no progress line: loading did not end on every process)
    assert "traces/4.evt" in lines[0] and "location 4" in lines[0]


def test_clock_correction_needs_one_process(tmp_path):
    # the correction needs every location in one process: under mpiexec the
    # command line refuses it (rank 0 says why, once) instead of loading
    path = Path(six_ranks().write(tmp_path / "trace")).parent
    r = mpiexec(2, *_cli("analyze", "--clock-correction", "clc", str(path)))
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert lines == ["waitscope: error: --clock-correction needs all locations in one process; "
                     "it is not available under mpiexec"], r.stderr


def test_mpi_launch_detection():
    assert cli.mpi_launch_size({}) == 1 and cli.mpi_launch_rank({}) == 0
    assert cli.mpi_launch_size({"PMI_SIZE": "4", "PMI_RANK": "3"}) == 4
    assert cli.mpi_launch_rank({"PMI_SIZE": "4", "PMI_RANK": "3"}) == 3
    assert cli.mpi_launch_size({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1"}) == 2
    assert cli.mpi_launch_rank({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1"}) == 1
    assert cli.world_comm({"PMI_SIZE": "1", "PMI_RANK": "0"}) is None  # one process: as without MPI


@pytest.mark.parametrize("rank", [0, 1])
def test_command_line_without_the_parallel_mode(rank, pingpong_dir):
    """Started by mpiexec with two processes, but mpi4py cannot be imported: every
    process stops with status 2, rank 0 says why and names the command that builds mpi4py."""
    path = str(pingpong_dir)
    code = ("import sys; sys.modules['mpi4py'] = None; from waitscope.cli import main; "
            f"sys.exit(main(['analyze', {path!r}]))")
    env = _env()
    env.update(PMI_SIZE="2", PMI_RANK=str(rank))
    r = run([sys.executable, "-c", code], env=env)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    if rank == 0:
        assert r.stderr.startswith("waitscope: error: started with 2 MPI processes, but the parallel mode "
                                   "is unavailable"), r.stderr
        assert "MPICC=mpicc.mpich python -m pip install --no-binary=mpi4py mpi4py" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    else:
        assert r.stderr == ""


def test_command_line_without_the_extension_for_mpi4pys_mpi(pingpong_dir):
    """mpi4py works but waitscope was built without the extension for its MPI: the
    error names the missing module and the rebuild command."""
    path = str(pingpong_dir)
    name = mpi4py_implementation()
    code = (f"import sys; sys.modules['waitscope._mpi_{name}'] = None; from waitscope.cli import main; "
            f"sys.exit(main(['analyze', {path!r}]))")
    r = mpiexec(2, sys.executable, "-c", code)
    assert r.returncode != 0
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr  # rank 0 only
    assert f"waitscope._mpi_{name}" in lines[0] and "pip install --no-build-isolation ." in lines[0]


def test_parallel_extension_matches_mpi4py():
    """The extension the parallel mode loads links the MPI library mpi4py uses."""
    code = ("from mpi4py import MPI; from waitscope._parallel import mpi_module; "
            "print(mpi_module().__file__)")
    r = mpiexec(1, sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    module = r.stdout.strip()
    assert os.path.basename(module).startswith(f"_mpi_{mpi4py_implementation()}.")
    ldd = subprocess.run(["ldd", module], capture_output=True, text=True).stdout
    expected = {"mpich": "libmpich.so", "openmpi": "libmpi.so.40"}[mpi4py_implementation()]
    other = {"mpich": "libmpi.so.40", "openmpi": "libmpich.so"}[mpi4py_implementation()]
    assert expected in ldd and other not in ldd, ldd


# ---- Ctrl-C under mpiexec ----------------------------------------------------------

_INTERRUPTIBLE_CLI = """
import os, sys, time
from waitscope import cli, progress

ready, trace = sys.argv[1], sys.argv[2]
calls = []
report = progress.Parallel.__call__

def slow_progress(self, stage, done, total):
    # the real analysis, slowed down at each progress report (every process
    # reports in the parallel mode), so that Ctrl-C finds every process
    # inside the replay
    if not calls:
        open(os.path.join(ready, "started-" + rank), "w").close()
    calls.append(stage)
    time.sleep(0.5)
    report(self, stage, done, total)

progress.Parallel.__call__ = slow_progress
# rank 0's progress shows nothing: stderr holds only what the interruption prints
cli._progress = lambda args: progress.FromCallable(lambda *line: None)
rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
end = os._exit

def recorded_exit(status):  # the status this process ends with, for the test to read
    mine = os.path.join(ready, "status-" + rank)
    with open(mine + ".part", "w") as f:
        f.write(str(status))
    os.replace(mine + ".part", mine)  # the file appears with its content
    # hydra kills the other processes as soon as one ends with a failure: on a
    # loaded machine a process could be killed before it has handled its own
    # SIGINT and recorded its status, so each waits a moment for the others'
    deadline = time.monotonic() + 10
    while (not all(os.path.exists(os.path.join(ready, f"status-{r}")) for r in range(size))
           and time.monotonic() < deadline):
        time.sleep(0.01)
    end(status)

os._exit = recorded_exit
code = cli.main(["analyze", trace, "--delay", "proportional", "--critical-path"])
recorded_exit(code)
"""


def test_ctrl_c_under_mpiexec_ends_every_process(tmp_path):
    """Ctrl-C on the terminal (SIGINT to mpiexec and its processes) during the parallel
    analysis: every process ends with status 130, one line on stderr, nothing printed that
    suggests an unclean end (unmatched messages at MPI_Finalize).

    MPICH 4.0's mpiexec itself then reports 130, or now and then 0 although every
    process ended with 130 (a race in hydra after it forwarded the signal): the
    processes' own statuses are read from files they write as they end."""
    p = synth.Program(2)
    for _ in range(2000):
        p.rank(0).compute("a", 0.001).send(1, size=8)
        p.rank(1).compute("b", 0.0005).recv(0)
    path = Path(p.write(tmp_path / "trace")).parent
    ready = tmp_path / "ready"
    ready.mkdir()
    command = [*LAUNCHER[0], "-n", "2", sys.executable, "-c", _INTERRUPTIBLE_CLI, str(ready), str(path)]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while len(list(ready.glob("started-*"))) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the analysis ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        out, err = proc.communicate(timeout=QUICK)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the processes did not end after Ctrl-C\nstdout:\n{out}\nstderr:\n{err}")
    statuses = {f.name: f.read_text() for f in ready.glob("status-*") if not f.name.endswith(".part")}
    assert statuses == {"status-0": "130", "status-1": "130"}, (statuses, out, err)
    assert proc.returncode in (130, 0), (proc.returncode, out, err)
    assert err == "waitscope: interrupted\n", err
    assert "Traceback" not in out and "waitscope" not in out, out
    sign = HANG_SIGNS.search(out + err)
    assert sign is None, f"{sign.group(0)!r} in the output:\n{out}\n{err}"


def test_launcher_of_another_mpi(pingpong_dir):
    """Started by the other MPI's mpiexec (on Debian the unqualified one may be it): each
    process is a singleton of mpi4py's MPI; waitscope says so instead of analysing twice."""
    from waitscope._parallel import LAUNCHERS

    mine = mpi4py_implementation()
    other = next(name for name in LAUNCHERS if name != mine)
    command, extra_env = LAUNCHERS[other]
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed")
    env = _env()
    env.update(extra_env)
    r = run([*command, "-n", "2", *_cli("analyze", str(pingpong_dir))], env=env)
    assert r.returncode != 0
    assert r.stdout.count("waitscope") == 0, r.stdout  # no analysis printed
    expected = (f"waitscope: error: started by a launcher of 2 processes, but MPI.COMM_WORLD has 1: the launcher "
                f"belongs to another MPI than mpi4py's ({mine}); start it with {' '.join(LAUNCHERS[mine][0])}")
    assert (r.stdout + r.stderr).count(expected) == 1, r.stdout + r.stderr
