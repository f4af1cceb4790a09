"""``waitscope trace`` / ``waitscope profile``: environment, exit status,
directories and the report after the run.

The interposition library's part (writing the measurement into the
directories named by WAITSCOPE_TRACE_DIR / WAITSCOPE_PROFILE_DIR) is
played here by a small Python command that writes a synthetic trace and a
profile there, and waitscope.pmpi's environment by a fake that names the
directories; tests/test_measure.py runs the real library on real MPI
programs.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from waitscope import cli, cli_measure

WRITER = textwrap.dedent("""
    import json, os, sys
    from waitscope import synth
    p = synth.Program(nranks=2)
    p.rank(0).compute("work", 0.5).send(1, tag=0, size=8)
    p.rank(1).recv(0, tag=0)
    if os.environ.get("WAITSCOPE_TRACE_DIR"):
        p.write(os.environ["WAITSCOPE_TRACE_DIR"])
    if os.environ.get("WAITSCOPE_PROFILE_DIR"):
        doc = {"format": "waitscope-profile", "version": 1, "mpi": "test", "command": "writer", "ranks": 2,
               "callpaths": ["main", "main/MPI_Recv"], "execution_time": [0.5, 0.5], "mpi_time": [0.0, 0.5],
               "entries": [{"callpath": 1, "function": "MPI_Recv", "size_class": 3, "root": False,
                            "collective": False, "count": [0, 1], "sum": [0.0, 0.5], "min": [None, 0.5],
                            "global_min": None}]}
        with open(os.path.join(os.environ["WAITSCOPE_PROFILE_DIR"], "profile.json"), "w") as fh:
            json.dump(doc, fh)
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
""")


@pytest.fixture
def fake_library(monkeypatch, tmp_path):
    """Stands in for waitscope.pmpi's environment: the output directories,
    and the library's path in TEST_WOULD_PRELOAD instead of LD_PRELOAD."""
    lib = tmp_path / "libfake.so"
    lib.write_text("")

    def prepare(command, trace_dir, profile_dir, environ, openmp=True, buffer=None):
        env = dict(environ)
        if buffer is not None:
            env["WAITSCOPE_BUFFER"] = buffer
        for key, value in (("WAITSCOPE_TRACE_DIR", trace_dir), ("WAITSCOPE_PROFILE_DIR", profile_dir)):
            env.pop(key, None)
            if value is not None:
                env[key] = os.path.abspath(value)
        env["TEST_WOULD_PRELOAD"] = str(lib)
        return env

    monkeypatch.setattr(cli_measure, "prepare", prepare)
    return lib


def writer(tmp_path: Path) -> list[str]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return [sys.executable, str(script)]


def test_trace_and_profile_are_written_and_reported(fake_library, tmp_path, capsys):
    out = tmp_path / "m"
    code = cli.main(["trace", "-o", str(out), "--profile", "--", *writer(tmp_path)])
    assert code == 0
    err = capsys.readouterr().err
    assert f"trace written to {out / 'traces.otf2'}: 2 ranks" in err
    assert "bytes/event" in err and "waitscope analyze" in err
    assert f"profile written to {out / 'profile.json'}: 2 ranks, 1 MPI calls" in err
    assert "cut short" not in err


def test_profile_only_and_default_directory(fake_library, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["profile", *writer(tmp_path)])  # without "--" too
    assert code == 0
    assert (tmp_path / "waitscope-profile" / "profile.json").exists()
    assert not (tmp_path / "waitscope-profile" / "traces.otf2").exists()
    err = capsys.readouterr().err
    assert "profile written to waitscope-profile/profile.json" in err
    # the profile's estimate: one call of 0.5 s is its own minimum: no waiting
    assert "no waiting" in err


def test_exit_status_passes_through(fake_library, tmp_path, capsys):
    code = cli.main(["trace", "-o", str(tmp_path / "a"), "--", *writer(tmp_path), "7"])
    assert code == 7
    err = capsys.readouterr().err
    assert "trace written" in err and "ended with status 7" in err


def test_run_cut_short_says_so(fake_library, tmp_path, capsys):
    out = tmp_path / "b"
    code = cli.main(["trace", "-o", str(out), "--profile", "--", "sh", "-c", "kill -TERM $$"])
    assert code == 128 + 15
    err = capsys.readouterr().err
    assert "the run was cut short (exit status 143): no trace definitions" in err
    assert "no profile was written" in err
    (out / "traces").mkdir()
    for rank in (0, 2):
        (out / "traces" / f"{rank}.evt").write_bytes(b"")
    ok, line = cli_measure.describe_trace(str(out), 1)
    assert not ok and "event files exist for locations 0, 2" in line


def test_unreadable_trace_is_reported_not_raised(fake_library, tmp_path):
    out = tmp_path / "c"
    out.mkdir()
    (out / "traces.otf2").write_text("not an anchor")
    ok, line = cli_measure.describe_trace(str(out), 0)
    assert not ok and "cut short" in line and "traces.otf2" in line


def test_earlier_measurement_is_kept_unless_forced(fake_library, tmp_path, capsys):
    out = tmp_path / "d"
    assert cli.main(["profile", "-o", str(out), "--", *writer(tmp_path)]) == 0
    capsys.readouterr()
    assert cli.main(["profile", "-o", str(out), "--", *writer(tmp_path)]) == 2
    assert "already holds a measurement (profile.json)" in capsys.readouterr().err
    assert cli.main(["profile", "-o", str(out), "--force", "--", *writer(tmp_path)]) == 0


def test_child_sees_the_measurement_environment(fake_library, tmp_path, capfd):
    code = cli.main(["trace", "-o", str(tmp_path / "e"), "--", sys.executable, "-c",
                     "import os; print(os.environ['WAITSCOPE_TRACE_DIR'], os.environ['TEST_WOULD_PRELOAD'])"])
    assert code == 0
    out = capfd.readouterr().out
    assert out.split() == [str(tmp_path / "e"), str(fake_library)]
    code = cli.main(["trace", "--buffer", "16M", "-o", str(tmp_path / "b"), "--", sys.executable, "-c",
                     "import os; print(os.environ['WAITSCOPE_BUFFER'])"])
    assert code == 0
    assert capfd.readouterr().out.split() == ["16M"]


def test_no_command_and_missing_program(fake_library, tmp_path, capsys):
    assert cli.main(["trace", "-o", str(tmp_path / "f"), "--"]) == 2
    assert "no command to run" in capsys.readouterr().err
    assert cli.main(["trace", "-o", str(tmp_path / "g"), "--", str(tmp_path / "nonexistent")]) == 2
    assert "cannot run" in capsys.readouterr().err


def test_output_path_that_is_a_file(fake_library, tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert cli.main(["profile", "-o", str(target), "--", "true"]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_without_the_interposition_library(tmp_path, capsys, monkeypatch):
    """A waitscope built where no MPI compiler was found has no library: the
    command says so and makes no directory."""
    from waitscope import pmpi

    monkeypatch.setattr(pmpi, "_lib_dir", lambda: tmp_path / "no-lib")
    monkeypatch.setenv("WAITSCOPE_MPI", "mpich")
    assert cli.main(["trace", "-o", str(tmp_path / "h"), "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "no interposition library for mpich" in err and "was not built" in err
    assert not (tmp_path / "h").exists()
