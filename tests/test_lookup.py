"""Metric lookups that forgive: ids, display names, unique prefixes, and suggestions for typos."""

from __future__ import annotations

import numpy as np
import pytest

from waitscope import synth


@pytest.fixture(scope="module")
def result():
    p = synth.Program(2)
    p.rank(0).compute("work", 2.0).send(1)
    p.rank(1).compute("work", 0.5).recv(0)
    return p.run(latency=0.0).analyze(delay_model="proportional")


def test_metric_by_id_name_or_prefix(result):
    late = result.get("mpi_latesender")
    assert late.sum() == pytest.approx(1.5)  # rank 1 enters MPI_Recv at 0.5 s, the send at 2 s
    for key in ("Late Sender", "late sender", "late_sender", "LATESENDER", "latesender", "mpi_latesend"):
        assert result.metric(key).id == "mpi_latesender", key
        assert np.array_equal(result.get(key), late), key
    # a display name shared by several trees names the time hierarchy's metric
    assert result.metric("Late Sender").parent == "mpi_point2point"
    assert result.total("Computation") == pytest.approx(2.5)
    assert result.metric("delay costs").id == "delay"
    assert result.metric("Direct vs. Indirect").id == "waitstates_direct_vs_indirect"
    # a prefix that matches a metric and its own sub-metrics names the metric
    assert result.metric("mpi_latesen").id == "mpi_latesender"  # not mpi_latesender_wo
    with pytest.raises(ValueError, match="'mpi_lswo' is ambiguous: it matches 'mpi_lswo_different'"):
        result.metric("mpi_lswo")  # two siblings
    assert result.metric("waitstates_dir").id == "waitstates_direct_vs_indirect"


def test_ambiguous_and_unknown_metrics(result):
    with pytest.raises(ValueError, match=r"metric 'Collective' is ambiguous: it matches 'mpi_sync_collective'"):
        result.metric("Collective")
    with pytest.raises(ValueError, match="'mpi_latesender' .*'mpi_latereceiver'.*give the id"):
        result.get("late")
    with pytest.raises(KeyError) as info:
        result.get("late_sendr")
    message = info.value.args[0]
    assert message.startswith("unknown metric 'late_sendr'; closest: 'mpi_latesender' (Late Sender)")
    assert message.endswith(f"(metric_ids lists all {len(result.metric_ids)})")
    assert "mpi_barrier_wait" not in message  # no list of every metric
    with pytest.raises(KeyError, match="unknown metric 'xyzzy' \\(metric_ids lists all"):
        result.total("xyzzy")
    with pytest.raises(TypeError, match="a metric is given by its id or name"):
        result.get(3)  # type: ignore[arg-type]


# ---- optional dependencies -----------------------------------------------------------------------


def _without(module: str, code: str) -> str:
    """stdout of `code` run in a fresh Python in which `module` cannot be imported."""
    import subprocess
    import sys

    prelude = f"import sys; sys.modules[{module!r}] = None\n"
    out = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_missing_pandas_says_what_to_install():
    code = ("import waitscope\nfrom waitscope.examples import PING_PONG\n"
            "t = waitscope.open(PING_PONG); r = t.analyze()\n"
            "for f in (lambda: r.to_pandas(), lambda: t.to_pandas(0), lambda: waitscope.compare(r, r)):\n"
            "    try:\n        f()\n    except ImportError as e:\n        print(type(e).__name__, e.name, e)\n")
    lines = _without("pandas", code).splitlines()
    hint = "which is not installed: python -m pip install pandas (or python -m pip install 'waitscope[pandas]')"
    assert lines == [f"ImportError pandas AnalysisResult.to_pandas needs pandas, {hint}",
                     f"ImportError pandas Trace.to_pandas needs pandas, {hint}",
                     f"ImportError pandas waitscope.compare needs pandas, {hint}"]


def test_missing_hatchet_says_what_to_install():
    code = ("import waitscope\nfrom waitscope.examples import PING_PONG\n"
            "try:\n    waitscope.open(PING_PONG).analyze().to_hatchet()\nexcept ImportError as e:\n    print(e)\n")
    assert _without("hatchet", code) == ("AnalysisResult.to_hatchet needs Hatchet, which is not installed: "
                                         "python -m pip install llnl-hatchet (or python -m pip install "
                                         "'waitscope[hatchet]')")


# ---- labelled arrays: delay vectors and the critical-path profile ---------------------------------


@pytest.fixture(scope="module")
def relay():
    """Rank 0 works 2 s and sends, rank 1 works 0.5 s and receives: rank 1 waits 1.5 s
    (Late Sender), all of it caused by rank 0's extra work (a short-term delay cost)."""
    p = synth.Program(2)
    p.rank(0).compute("work", 2.0).send(1)
    p.rank(1).compute("work", 0.5).recv(0)
    return p.run(latency=0.0).analyze(delay_model="proportional", critical_path=True)


def test_delay_vectors_are_labelled(relay):
    short, long_ = relay.delay_vectors()
    assert short.column_name == "rank" and short.ranks.tolist() == [0, 1] and short.locations is None
    assert short.callpaths == relay.callpath_names
    assert short.row("work").tolist() == pytest.approx([1.5, 0.0])
    assert long_.row("main/work").tolist() == [0.0, 0.0]
    # still an array: sums, arithmetic, indexing as before
    assert float(short.sum()) == pytest.approx(1.5)
    assert (short * 2).callpaths == relay.callpath_names  # same shape: labels kept
    assert type(short.sum(axis=0)) is np.ndarray and type(short[0]) is np.ndarray  # labels would not fit
    frame = short.to_pandas(nonzero=True)
    work = next(n for n in relay.callpath_names if n.endswith("main/work"))
    assert list(frame.index) == [work] and frame.index.name == "callpath" and frame.columns.name == "rank"
    assert frame.loc[work, 0] == pytest.approx(1.5)


def test_critical_path_profile_is_labelled(relay):
    import pickle

    profile = relay.critical_path.profile
    assert profile.column_name == "location" and profile.locations.tolist() == [0, 1]
    # the path runs through rank 0's work (2 s), not rank 1's (0.5 s)
    assert profile.row("work").tolist() == pytest.approx([2.0, 0.0])
    assert np.array_equal(profile, relay.get("critical_path"))
    assert relay.critical_path.by_callpath.tolist() == pytest.approx(np.asarray(profile).sum(axis=1).tolist())
    copy = pickle.loads(pickle.dumps(profile))
    assert copy.callpaths == profile.callpaths and copy.locations.tolist() == [0, 1]
    with pytest.raises(KeyError, match="unknown call path 'wrok'; closest: .*work"):
        profile.row("wrok")


# ---- messages in the words of the interface they come through ---------------------------------------


def test_simulate_names_the_argument_meant(tmp_path):
    p = synth.Program(2)
    p.rank(0).compute("work", 1.0).send(1)
    p.rank(1).recv(0)
    trace = p.run(latency=0.0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'balance_region' \(did you mean 'balance'\?\); "
                                        r"it takes balance, scale, network, mode, progress"):
        trace.simulate(balance_region="work")
    with pytest.raises(TypeError, match="'output' is an argument of mode='realtime' only"):
        trace.simulate(balance="work", output=str(tmp_path))
    with pytest.raises(ValueError, match=r"^balance: unknown region or call path 'wrok'; closest: '[^']*main/work' "
                                         r"\(trace.region_names and trace.callpath_names list them\)$"):
        trace.simulate(balance="wrok")


def test_whatif_errors_name_the_options(tmp_path, capsys):
    from waitscope import cli

    p = synth.Program(2)
    p.rank(0).compute("work", 1.0).send(1)
    p.rank(1).recv(0)
    path = p.write(str(tmp_path / "t"), latency=0.0)
    assert cli.main(["whatif", path, "--balance", "wrok"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"waitscope: error: {path}: --balance: unknown region or call path 'wrok'; closest: ")
    assert err.endswith("main/work' (waitscope info TRACE lists the call paths)\n")
    assert "callpath_names" not in err and "region_names" not in err
    assert cli.main(["whatif", path, "--balance", "MPI_Recv"]) == 2
    err = capsys.readouterr().err
    assert "--balance: " in err and "is an MPI call" in err and "(--scale REGION=FACTOR changes MPI calls)" in err
    assert "scale={" not in err
    assert cli.main(["whatif", path, "--scale", "nothing=2"]) == 2
    assert "--scale: unknown region or call path 'nothing'" in capsys.readouterr().err
