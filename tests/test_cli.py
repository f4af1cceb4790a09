"""The command line: info, analyze (text, --json, progress), demo, errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import cli, examples, progress, synth


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_json(pingpong_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "info", str(pingpong_dir), "--json")
    assert code == 0
    info = json.loads(out)
    trace = waitscope.open(pingpong_dir)
    assert info["events"] == trace.n_events
    assert [loc["rank"] for loc in info["locations"]] == [0, 1]
    assert sum(loc["events"] for loc in info["locations"]) == trace.n_events
    assert "ping-pong.otf2/int main(int, char**)/MPI_Send" in [cp["name"] for cp in info["callpaths"]]  # schema: tests/test_json.py


def test_analyze_json_equals_the_api(pingpong_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "analyze", str(pingpong_dir), "--json", "--delay", "wait-first",
                             "--critical-path")
    assert code == 0 and err == ""  # --json: no progress, nothing else on stderr
    got = json.loads(out)
    r = waitscope.open(pingpong_dir).analyze(delay_model="wait-first", critical_path=True)
    assert set(got["metrics"]) == set(r.metric_ids)
    for m in r.metric_ids:
        assert got["metrics"][m]["total"] == r.total(m)
        assert got["metrics"][m]["by_location"] == list(r.by_location(m))
    # conservation is visible in the output too
    handled = sum(got["metrics"][m]["total"] for m in ("mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait",
                                                         "mpi_wait_nxn", "mpi_latebroadcast", "mpi_earlyreduce"))
    assert got["metrics"]["delay"]["total"] + got["delay"]["undistributed"] == pytest.approx(handled, rel=1e-12)


def test_analyze_text_summary(pingpong_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "analyze", str(pingpong_dir), "--delay", "proportional", "--critical-path")
    assert code == 0
    assert err == ""  # stderr is not a terminal here: no progress
    r = waitscope.open(pingpong_dir).analyze(delay_model="proportional", critical_path=True)
    assert f"  mpi_latereceiver (Late Receiver): {r.total('mpi_latereceiver'):.6f} s" in out
    assert out.count("\n") > 40  # the metric tree, MPI time, patterns, delay and critical path (tests/test_report.py)
    assert "delay costs (proportional model)" in out
    assert f"critical path: {r.critical_path.length:.6f} s" in out


def _long_trace(tmp: Path) -> Path:
    """Two ranks, 110,000 message exchanges: ~1.1 million events (progress reports come per 2^20)."""
    p = synth.Program(2)
    a, b = p.rank(0), p.rank(1)
    for _ in range(110_000):
        a.compute("work", 1e-6).send(1)
        b.recv(0)
    return Path(p.write(tmp / "long"))


def test_analyze_timings_on_stderr(pingpong_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --timings adds the steps on stderr and changes nothing on stdout
    _, plain, _ = run_cli(capsys, "analyze", str(pingpong_dir), "--delay", "proportional", "--critical-path")
    code, out, err = run_cli(capsys, "analyze", str(pingpong_dir), "--delay", "proportional", "--critical-path",
                             "--timings")
    assert code == 0 and out == plain
    lines = err.splitlines()
    assert lines[0] == "analysis steps (seconds):"
    steps = [line[:20].strip() for line in lines[1:]]
    assert steps == ["matching", "wait states", "sync points", "delay points", "backward replay", "path walk",
                     "delay forward", "path pieces", "derived metrics", "all steps"]
    seconds = [float(line[20:]) for line in lines[1:]]
    assert all(s >= 0.0 for s in seconds)
    assert seconds[-1] == pytest.approx(sum(seconds[:-1]), abs=0.005)  # each rounded to the millisecond
    # with --json the document stays alone on stdout
    code, out, err = run_cli(capsys, "analyze", str(pingpong_dir), "--json", "--timings")
    assert code == 0 and json.loads(out)["metrics"]
    assert [line[:20].strip() for line in err.splitlines()[1:]] == ["matching", "wait states", "all steps"]


def test_progress_on_a_terminal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(_long_trace(tmp_path))
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert cli.main(["analyze", trace, "--critical-path"]) == 0
    shown = terminal.getvalue()
    stages = ("load", "wait states 1/2", "wait states 2/2", "sync points", "critical path (backward)")
    lines = shown.split("\n")
    assert lines[-1] == ""  # the last line is ended
    # every stage updates a line of its own (carriage returns within it) and ends at 100 %
    width = progress.STAGE_WIDTH
    assert [line.split("\r")[-1][:width].strip() for line in lines[:-1]] == list(stages)
    for line in lines[:-1]:
        last = line.split("\r")[-1]
        done, total = (int(x.replace(",", "")) for x in last[width:].split(" events")[0].split(" of "))
        assert done == total > 0 and " 100.0 %" in last, last
    # quiet on request, and when stderr is no terminal
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert cli.main(["analyze", trace, "--quiet"]) == 0
    assert terminal.getvalue() == ""
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    assert cli.main(["analyze", trace]) == 0
    assert pipe.getvalue() == ""
    capsys.readouterr()


def test_demo_finds_the_culprit_and_the_gain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "demo"
    code, out, _ = run_cli(capsys, "demo", "-o", str(out_dir))
    assert code == 0
    assert f"writing into {out_dir} (choose the directory with -o DIR)" in out
    # the program: 4 x 4 ranks, 10 steps; rank 5 computes its fluxes 8 ms longer per step (10 ms x 0.8),
    # so its four neighbours (ranks 1, 4, 6, 9) wait 8 ms for its halo every step: 4 x 8 ms x 10
    assert "  mpi_latesender (Late Sender): 0.320000 s" in out
    culprit = next(line for line in out.splitlines() if line.startswith("the culprit"))
    assert "main/timestep/compute_fluxes, whose delays caused" in culprit and culprit.endswith("on rank 5.")
    # the what-if's prediction is the run of the balanced program (every rank the mean work)
    recorded = examples.halo_exchange().run(**cli.DEMO_NETWORK).run_length
    balanced = examples.halo_exchange(balanced=True).run(**cli.DEMO_NETWORK).run_length
    assert recorded - balanced == pytest.approx(10 * 8e-3 * 15 / 16, rel=1e-6)  # 10 steps of the excess over the mean
    assert (f"balancing compute_fluxes would make the run {recorded - balanced:.6f} s shorter "
            f"({100 * (recorded - balanced) / recorded:.1f} %): {recorded:.6f} s -> {balanced:.6f} s") in out
    assert "serialisation efficiency 100.00 %" in out  # all five POP efficiencies
    # written: the trace, which waitscope analyze reads as the demo did, a Cube report and pictures
    trace_dir = out_dir / "trace"
    assert f"  {trace_dir / 'traces.otf2'}  (" in out
    r = waitscope.open(trace_dir).analyze(delay_model="proportional", critical_path=True)
    assert r.total("mpi_latesender") == pytest.approx(0.32, rel=1e-9)
    report = out_dir / "report.cubex"
    assert f"  {report}  (" in out
    pycubexr = pytest.importorskip("pycubexr")
    with pycubexr.CubexParser(str(report)) as cube:
        values = cube.get_metric_values(cube.get_metric_by_name("mpi_latesender"))
        total = sum(sum(values.cnode_values(c)) for c in cube.all_cnodes())
    assert total == pytest.approx(0.32, rel=1e-9)
    pytest.importorskip("matplotlib")
    from matplotlib import image

    for name in ("heatmap.png", "timeline.png", "whatif.png"):
        picture = out_dir / name
        assert f"  {picture}  (" in out
        pixels = image.imread(picture)
        assert pixels.ndim == 3 and pixels.shape[0] > 100
        assert len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 20  # not blank


def test_errors_exit_2_and_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing" / "traces.otf2"
    code, out, err = run_cli(capsys, "analyze", str(missing))
    assert code == 2 and out == ""
    assert err.startswith("waitscope: error: ") and str(tmp_path / "nothing") in err
    code, _, err = run_cli(capsys, "analyze", str(cli.BUNDLED_TRACE), "-o", str(tmp_path / "no" / "dir" / "r"))
    assert code == 2 and "cannot write" in err


def test_demo_says_where_it_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["demo", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "-o DIR" in help_text and "default: ./waitscope-demo in the current directory" in help_text
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "demo")
    assert code == 0
    assert f"writing into {tmp_path / 'waitscope-demo'} (choose the directory with -o DIR)" in out
    assert (tmp_path / "waitscope-demo" / "report.cubex").is_file()


# ---- the text report: --metric/--top, POP with its simulation, --window ------------------------


def _relay(tmp: Path) -> str:
    """Rank 0 computes 1 s and sends; rank 1 receives, then computes 1 s. Latency 0.5 s (also of
    MPI_Init and MPI_Finalize, which synchronise): the run takes 3.5 s, on an ideal network 2 s."""
    p = synth.Program(2)
    p.rank(0).compute("work", 1.0).send(1)
    p.rank(1).recv(0).compute("work", 1.0)
    return p.write(str(tmp / "relay"), latency=0.5)


def _pop_values(out: str) -> dict[str, float]:
    values = {}
    for name in ("parallel efficiency", "load balance", "communication efficiency", "serialisation efficiency",
                 "transfer efficiency"):
        line = next(x for x in out.splitlines() if x.strip().startswith(name))
        values[name] = float(line.split(name)[1].split("%")[0])
    return values


def test_analyze_prints_all_five_pop_efficiencies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _relay(tmp_path)
    code, out, err = run_cli(capsys, "analyze", path)
    assert code == 0, err
    # useful 1 s on each rank; run 3.5 s; ideal network: 1 s + 1 s one after the other = 2 s
    assert _pop_values(out) == pytest.approx({
        "parallel efficiency": 100 / 3.5, "load balance": 100.0, "communication efficiency": 100 / 3.5,
        "serialisation efficiency": 50.0, "transfer efficiency": 100 * 2 / 3.5}, abs=0.006)
    assert "run time on an ideal network 2.000000 s" in out


def test_pop_over_the_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _relay(tmp_path)
    code, out, err = run_cli(capsys, "analyze", path, "--window", "0.5:2")
    assert code == 0, err
    assert "window 0.500000 s to 2.000000 s: the metrics of this part of the run only (1.500000 s)" in out
    # in the window rank 0 computes 1 s, rank 1 nothing (it waits for the message until 2 s):
    # LB = 0.5 / 1, CommE = 1 / 1.5 s.  On the ideal network the window's piece of work runs from
    # 0 to 1.25 s: rank 0's window end (2 s) lies a quarter into MPI_Finalize (1.5 s to 3.5 s
    # recorded, 1 s to 2 s ideal); rank 1's at its receive's end (ideal 1 s).
    assert _pop_values(out) == pytest.approx({
        "parallel efficiency": 100 / 3, "load balance": 50.0, "communication efficiency": 100 / 1.5,
        "serialisation efficiency": 80.0, "transfer efficiency": 100 * 1.25 / 1.5}, abs=0.006)
    assert "POP efficiencies over the window 0.500000 s to 2.000000 s" in out
    # a window reaching beyond the run counts the part inside it
    code, out, _ = run_cli(capsys, "analyze", path, "--window", "2:100")
    assert code == 0 and "(1.500000 s; inside the run 2.000000 s to 3.500000 s)" in out
    assert "max useful time / window length 1.500000 s" in out


def test_window_outside_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _relay(tmp_path)
    code, out, err = run_cli(capsys, "analyze", path, "--window", "100:200")
    assert code == 2 and out == ""
    assert err == "waitscope: error: --window 100:200 lies outside the run, which spans 0 s to 3.5 s " \
                  "(seconds from the start of the trace)\n"
    r = waitscope.open(path).analyze(window=(100.0, 200.0))
    with pytest.raises(ValueError, match="lies outside the run, which spans 0 s to 3.5 s"):
        r.pop_metrics(ideal=None)


def test_metric_and_top(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _relay(tmp_path)
    code, out, err = run_cli(capsys, "analyze", path, "--metric", "Late Sender", "--metric", "time", "--top", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == ""
    # rank 1 enters MPI_Recv at 0.5 s (end of MPI_Init), rank 0 its send at 1.5 s: Late Sender 1 s
    # (the transfer, 1.5 s to 2 s, is no waiting)
    assert lines[2].startswith("mpi_latesender (Late Sender): 1.000000 s (")
    assert lines[3].split() == ["value", "%", "time", "min", "mean", "max", "rank", "call", "path"]
    assert lines[4].split()[0] == "1.000000" and lines[4].split()[-2] == "1"
    assert lines[4].endswith("main/MPI_Recv")
    time_rows = out.split("time (Time): ")[1].splitlines()[2:]
    assert len(time_rows) == 2  # --top 2
    # time: MPI_Finalize 2 x 1.5 s and 0.5 s (rank 1: 3 s to 3.5 s; rank 0: 1.5 s to 3.5 s) = 2.5 s,
    # work 2 s, MPI_Recv 1.5 s, MPI_Init 2 x 0.5 s
    assert [float(r.split()[0]) for r in time_rows] == [2.5, 2.0]
    assert time_rows[0].endswith("main/MPI_Finalize") and time_rows[1].endswith("main/work")
    assert "POP" not in out and "metric tree" not in out
    # an unknown metric names the option and the closest metrics
    code, out, err = run_cli(capsys, "analyze", path, "--metric", "late_sendr")
    assert code == 2 and out == ""
    assert err.startswith("waitscope: error: --metric: unknown metric 'late_sendr'; closest: 'mpi_latesender' "
                          "(Late Sender)")
    assert "metric_ids" not in err and "(analyze --json lists all" in err
