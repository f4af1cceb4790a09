"""The command line: info, analyze (text, --json, progress), demo, errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

import waitscope
from waitscope import cli, progress, synth


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


def test_demo_writes_report_and_pictures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "demo"
    code, out, _ = run_cli(capsys, "demo", "-o", str(out_dir))
    assert code == 0
    assert f"writing into {out_dir} (choose the directory with -o DIR)" in out.splitlines()[1]
    report = out_dir / "report.cubex"
    assert f"  {report}  (" in out  # says where
    assert report.is_file()
    r = waitscope.open(cli.BUNDLED_TRACE).analyze(delay_model="proportional", critical_path=True)
    pycubexr = pytest.importorskip("pycubexr")
    with pycubexr.CubexParser(str(report)) as cube:
        metric = cube.get_metric_by_name("mpi_latereceiver")
        values = cube.get_metric_values(metric)
        total = sum(sum(values.cnode_values(c)) for c in cube.all_cnodes())
    assert total == pytest.approx(r.total("mpi_latereceiver"), rel=1e-12)
    pytest.importorskip("matplotlib")
    from matplotlib import image

    for name in ("heatmap.png", "timeline.png"):
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
