"""Wrong arguments get a ValueError/TypeError naming the argument and what is allowed;
the command line checks -o before the analysis and ends quietly on a closed pipe."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import waitscope
from waitscope import cli


@pytest.fixture(scope="module")
def pingpong(pingpong_dir):
    return waitscope.open(pingpong_dir)


# ---- Trace.analyze ----------------------------------------------------------------


@pytest.mark.parametrize("partition, error, message", [
    ([0, 2], ValueError, r"partition values must lie in 0\.\.1 .* got 2 for location 1"),
    ([-1, 0], ValueError, r"partition values must lie in 0\.\.1 .* got -1 for location 0"),
    ([0.0, 1.5], TypeError, r"partition values must be integers \(partition numbers 0\.\.1\), got float64"),
    (["a", "b"], TypeError, r"partition values must be integers"),
    ([0], ValueError, r"partition needs one entry per location \(2\)"),
])
def test_partition_checked(pingpong, partition, error, message):
    with pytest.raises(error, match=message):
        pingpong.analyze(critical_path=True, partition=partition)


def test_valid_partitions_accepted(pingpong):
    for partition in ([0, 1], [1, 1], np.array([1, 0], dtype=np.int64)):
        r = pingpong.analyze(critical_path=True, partition=partition)
        assert list(r.critical_path.partitions) == list(partition)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(critical_path="yes"), TypeError, r"critical_path must be True or False, got 'yes'"),
    (dict(critical_path=1), TypeError, r"critical_path must be True or False, got 1"),
    (dict(delay_records="no"), TypeError, r"delay_records must be True or False"),
    (dict(wait_records=None), TypeError, r"wait_records must be True or False, got None"),
    (dict(delay_model=1), TypeError, r"delay_model must be None, 'proportional' or 'wait-first', got 1 \(int\)"),
    (dict(delay_model="linear"), ValueError, r"delay_model must be None, 'proportional' or 'wait-first', "
                                             r"got 'linear'"),
    (dict(schedule_seed=-1), ValueError, r"schedule_seed must be a non-negative integer, got -1"),
    (dict(schedule_seed=1.5), TypeError, r"schedule_seed must be a non-negative integer, got 1\.5"),
])
def test_analyze_arguments_checked(pingpong, kwargs, error, message):
    with pytest.raises(error, match=message):
        pingpong.analyze(**kwargs)


# ---- pictures ------------------------------------------------------------------------


def test_heatmap_dims_that_drop_ranks(pingpong):
    pytest.importorskip("matplotlib")
    from waitscope import plot

    r = pingpong.analyze()
    with pytest.raises(ValueError, match=r"dims=\(1, 1\) hold 1 ranks, but the trace has 2: ranks 1 would not be "
                                         r"shown; pass dims whose product is at least 2"):
        plot.heatmap(r, "time", dims=(1, 1))
    plot.heatmap(r, "time", dims=(2, 1))  # every rank has a cell


def test_timeline_window_outside_the_run(pingpong):
    pytest.importorskip("matplotlib")
    from waitscope import plot

    r = pingpong.analyze()
    end = max(float(pingpong.events(loc).time[-1]) for loc in range(pingpong.n_locations))
    with pytest.raises(ValueError, match=r"window=\(10, 11\) lies outside the run, which spans .* s to .* s"):
        plot.timeline(pingpong, r, window=(10.0, 11.0))
    with pytest.raises(ValueError, match=r"window=\(-2, -1\) lies outside the run"):
        plot.timeline(pingpong, r, window=(-2.0, -1.0))
    with pytest.raises(ValueError, match=r"window must be \(t0, t1\) with t1 > t0"):
        plot.timeline(pingpong, r, window=(0.2, 0.1))
    plot.timeline(pingpong, r, window=(end - 0.01, end + 1.0))  # overlapping the run: drawn


# ---- Cube report paths ---------------------------------------------------------------


def test_cube_report_with_another_suffix_refused(pingpong, tmp_path):
    r = pingpong.analyze()
    with pytest.raises(ValueError, match=rf"{tmp_path / 'report.txt'}: a Cube report must be named \*\.cubex"):
        r.to_cube(tmp_path / "report.txt")
    assert list(tmp_path.iterdir()) == []


def test_cube_report_in_a_missing_directory(pingpong, tmp_path):
    r = pingpong.analyze()
    with pytest.raises(FileNotFoundError, match=rf"directory {tmp_path / 'nowhere'} does not exist"):
        r.to_cube(tmp_path / "nowhere" / "report.cubex")


# ---- command line ----------------------------------------------------------------------


def _never_analyze(*args, **kwargs):
    raise AssertionError("the analysis ran although -o is wrong")


@pytest.mark.parametrize("output, message", [
    ("report.txt", "report.txt: a Cube report must be named *.cubex (Cube recognises reports by it), "
                   "e.g. {dir}/report.cubex"),
    ("nowhere/report.cubex", "nowhere/report.cubex: cannot write the Cube report: directory {dir}/nowhere "
                             "does not exist"),
])
def test_output_checked_before_the_analysis(pingpong_dir, tmp_path, capsys, monkeypatch, output, message):
    monkeypatch.setattr(waitscope.trace.Trace, "analyze", _never_analyze)
    target = tmp_path / output
    assert cli.main(["analyze", str(pingpong_dir), "-o", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"waitscope: error: -o: {tmp_path}/{message.format(dir=tmp_path)}\n"
    assert not (tmp_path / "report.txt").exists() and not list(tmp_path.glob("*.part"))


def test_output_written_as_named(pingpong_dir, tmp_path, capsys):
    assert cli.main(["analyze", str(pingpong_dir), "-o", str(tmp_path / "r.cubex")]) == 0
    assert (tmp_path / "r.cubex").is_file()
    assert f"Cube report written to {tmp_path / 'r.cubex'}" in capsys.readouterr().out


@pytest.mark.parametrize("top, shown", [("-1", "-1"), ("0", "0"), ("x", "'x'")])
def test_top_must_be_positive(pingpong_dir, capsys, top, shown):
    with pytest.raises(SystemExit) as info:
        cli.main(["analyze", str(pingpong_dir), "--top", top])
    assert info.value.code == 2
    assert f"argument --top: expected a positive integer, got {shown}" in capsys.readouterr().err


def test_closed_pipe_ends_quietly(pingpong_dir):
    """``waitscope info TRACE | head -3``: the reader is gone before waitscope writes;
    no BrokenPipeError traceback, the status a shell shows for SIGPIPE."""
    proc = subprocess.Popen([sys.executable, "-m", "waitscope", "info", str(pingpong_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the interpreter has even started: the first write fails
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141
    assert err == "", err


def test_head_of_info_through_a_shell_pipe(pingpong_dir):
    out = subprocess.run(f"{sys.executable} -m waitscope info {pingpong_dir} | head -3", shell=True,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert len(out.stdout.splitlines()) == 3
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr


def test_interrupt_in_one_process(pingpong_dir, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(waitscope.trace.Trace, "analyze", interrupted)
    import signal

    previous = signal.getsignal(signal.SIGINT)
    try:
        assert cli.main(["analyze", str(pingpong_dir)]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err == "waitscope: interrupted\n"
