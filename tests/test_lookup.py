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
