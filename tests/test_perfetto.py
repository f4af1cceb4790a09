"""Perfetto / Chrome trace-event export (waitscope.perfetto, AnalysisResult.to_perfetto).

The expected values come from elsewhere than the exporter: the number of
messages from the programs as written (one per send), the waiting time
from the analysis cube, the critical path's length from its end minus its
start, the delay costs from the delay metrics (the costs of all records
add up to them).  `validate` checks the trace-event format's rules that
the viewers rely on.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest

import waitscope
from waitscope import synth
from waitscope.examples import PING_PONG
from waitscope.perfetto import SUMMARY_PID, pid_of, tid_of

PHASES = set("BEXsfMC")
META_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}
WAIT_METRICS = (
    "mpi_latesender", "mpi_latereceiver", "mpi_barrier_wait", "mpi_barrier_completion", "mpi_wait_nxn",
    "mpi_nxn_completion", "mpi_latebroadcast", "mpi_earlyreduce", "mpi_earlyscan", "mpi_finalize_wait",
    "mpi_init_completion",
)


def validate(doc: dict) -> dict:
    """Checks the trace-event rules; returns facts: flows by id, slices bound by flows."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    stacks: dict[tuple, list] = defaultdict(list)
    last_ts: dict[tuple, float] = {}
    complete: dict[tuple, list] = defaultdict(list)
    flows: dict[int, dict[str, dict]] = defaultdict(dict)
    bound: dict[tuple[int, str], str] = {}
    for e in doc["traceEvents"]:
        ph = e["ph"]
        assert ph in PHASES, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if ph == "M":
            assert e["name"] in META_NAMES, e
            key = "name" if e["name"].endswith("_name") else "sort_index"
            assert key in e["args"], e
            continue
        assert isinstance(e["ts"], (int, float)) and np.isfinite(e["ts"]) and e["ts"] >= 0, e
        thread = (e["pid"], e["tid"])
        if ph in "BEsf":  # a thread's stack events are in time order
            assert e["ts"] >= last_ts.get(thread, -np.inf), e
            last_ts[thread] = e["ts"]
        if ph == "B":
            assert isinstance(e["name"], str) and e["name"], e
            stacks[thread].append(e)
        elif ph == "E":
            assert stacks[thread], f"E without an open B: {e}"
            begin = stacks[thread].pop()
            assert e["ts"] >= begin["ts"], (begin, e)
        elif ph == "X":
            assert e["dur"] >= 0, e
            complete[thread].append((e["ts"], e["ts"] + e["dur"]))
        elif ph in "sf":
            assert isinstance(e["id"], int), e
            assert ph not in flows[e["id"]], f"flow id {e['id']} has two {ph!r} events"
            flows[e["id"]][ph] = e
            if ph == "f":
                assert e.get("bp") == "e", e  # bound to the enclosing slice
            # both ends bind to the slice open on their thread
            assert stacks[thread], f"flow event outside any slice: {e}"
            bound[(e["id"], ph)] = stacks[thread][-1]["name"]
        elif ph == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    owner: dict[int, int] = {}
    for e in doc["traceEvents"]:  # Perfetto keeps 0 for the idle process and takes a tid as system-wide
        assert e["pid"] > 0 and e["tid"] > 0, e
        assert owner.setdefault(e["tid"], e["pid"]) == e["pid"], f"tid {e['tid']} in two processes"
    for thread, stack in stacks.items():
        assert not stack, f"unclosed slices on {thread}: {[b['name'] for b in stack]}"
    for thread, spans in complete.items():  # complete slices of a track nest
        open_: list[float] = []
        for a, b in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ and open_[-1] <= a + 1e-9:
                open_.pop()
            assert not open_ or b <= open_[-1] + 1e-9, f"overlapping slices on {thread}: {(a, b)}"
            open_.append(b)
    for fid, pair in flows.items():
        assert set(pair) == {"s", "f"}, f"flow {fid} is not paired: {pair}"
        assert pair["s"]["cat"] == pair["f"]["cat"] and pair["s"]["name"] == pair["f"]["name"]
    return {"flows": flows, "bound": bound}


def events(doc: dict, ph: str, cat: str | None = None) -> list[dict]:
    return [e for e in doc["traceEvents"] if e["ph"] == ph and (cat is None or e.get("cat") == cat)]


def exchange_program(n_iter: int = 4) -> tuple[synth.Program, int]:
    """Ranks 0..3: a ring of blocking and non-blocking messages with unequal work; returns (program, messages)."""
    prog = synth.Program(4)
    n_msgs = 0
    for it in range(n_iter):
        for r in range(4):
            rp = prog.rank(r).compute("work", 0.1 * (r + 1) + 0.05 * it)
            right, left = (r + 1) % 4, (r - 1) % 4
            if r % 2 == 0:
                rp.send(right, tag=it, size=1024).recv(left, tag=it)
            else:
                rp.recv(left, tag=it).send(right, tag=it, size=1024)
            n_msgs += 1
            reqs = [rp.irecv(left, tag=100 + it), rp.isend(right, tag=100 + it, size=8)]
            n_msgs += 1
            rp.waitall(reqs)
            rp.barrier()
    prog.rank(0).compute("work", 0.3)
    for r in range(4):
        prog.rank(r).allreduce(size=8)
    return prog, n_msgs


@pytest.fixture(scope="module")
def analysed():
    prog, n_msgs = exchange_program()
    trace = prog.run(latency=0.002, mpi_overhead=0.0005, resolution=10**6)
    result = trace.analyze(delay_model="proportional", critical_path=True, delay_records=True, wait_records=True)
    return trace, result, n_msgs


def test_one_flow_per_message_bound_to_mpi_calls(analysed, tmp_path):
    _, result, n_msgs = analysed
    doc = json.loads(open(result.to_perfetto(tmp_path / "t.json")).read())
    facts = validate(doc)
    assert len(facts["flows"]) == n_msgs == 32
    assert len(events(doc, "s")) == len(events(doc, "f")) == n_msgs
    # each arrow leaves a send call and ends in the receive or wait call that completes it
    for (fid, ph), name in facts["bound"].items():
        leaf = name.rsplit("/", 1)[-1]
        assert leaf in (("MPI_Send", "MPI_Isend") if ph == "s" else ("MPI_Recv", "MPI_Waitall")), (fid, ph, name)


def test_wait_slices_sum_to_the_metrics(analysed, tmp_path):
    _, result, _ = analysed
    doc = json.loads(open(result.to_perfetto(tmp_path / "t.json")).read())
    waits = events(doc, "X", "wait")
    assert waits
    per_metric: dict[str, float] = defaultdict(float)
    for e in waits:
        per_metric[e["name"]] += e["dur"]
        assert e["args"]["wait_s"] * 1e6 == pytest.approx(e["dur"], abs=1e-3)
    for metric in WAIT_METRICS:
        assert per_metric.get(metric, 0.0) == pytest.approx(result.total(metric) * 1e6, abs=1e-3), metric
    assert result.total("mpi_latesender") > 0 and result.total("mpi_barrier_wait") > 0
    # the costs caused by each wait state add up to the delay metrics
    short = sum(e["args"]["delay_short_s"] for e in waits)
    long_ = sum(e["args"]["delay_long_s"] for e in waits)
    assert short == pytest.approx(float(result.delay_short.sum()), rel=1e-9, abs=1e-12)
    assert long_ == pytest.approx(float(result.delay_long.sum()), rel=1e-9, abs=1e-12)
    assert short > 0


def test_critical_path_track_has_the_path_length(analysed, tmp_path):
    _, result, _ = analysed
    doc = json.loads(open(result.to_perfetto(tmp_path / "t.json")).read())
    validate(doc)
    path = events(doc, "X", "critical_path")
    cp = result.critical_path
    assert len(path) == len(cp.segments)
    assert sum(e["dur"] for e in path) == pytest.approx((cp.end - cp.start) * 1e6, abs=1e-3)
    assert {e["pid"] for e in path} == {SUMMARY_PID}  # a process of its own
    names = {e["pid"]: e["args"]["name"] for e in events(doc, "M") if e["name"] == "process_name"}
    assert names == {1: "rank 0", 2: "rank 1", 3: "rank 2", 4: "rank 3", SUMMARY_PID: "critical path"}


def test_waiting_counter_follows_the_wait_states(analysed, tmp_path):
    trace, result, _ = analysed
    doc = json.loads(open(result.to_perfetto(tmp_path / "t.json")).read())
    counter = [(e["ts"], e["args"]["waiting"]) for e in events(doc, "C") if e["name"] == "waiting locations"]
    assert counter and counter[-1][1] == 0
    values = [v for _, v in counter]
    assert min(values) >= 0 and max(values) <= trace.n_locations
    # the integral of the counter is the time the locations spend waiting (overlaps counted once)
    w = result.wait_states
    covered = 0.0
    for loc in range(trace.n_locations):
        grid = np.zeros(0)
        sel = w[w["location"] == loc]
        spans = sorted(zip(sel["start"], sel["end"]))
        end = -np.inf
        for a, b in spans:
            a = max(a, end)
            if b > a:
                covered += b - a
            end = max(end, b)
        del grid
    integral = sum((t1 - t0) * v for (t0, v), (t1, _) in zip(counter, counter[1:]))
    assert integral == pytest.approx(covered * 1e6, rel=1e-9)


def test_messages_in_flight_counter(analysed, tmp_path):
    # the integral of the counter is the summed transfer time of the messages (receive minus send)
    trace, result, n_msgs = analysed
    doc = validate_load(result, tmp_path / "m.json")
    counter = [(e["ts"], e["args"]["messages"]) for e in events(doc, "C") if e["name"] == "messages in flight"]
    assert counter[-1][1] == 0 and min(v for _, v in counter) >= 0
    integral = sum((t1 - t0) * v for (t0, v), (t1, _) in zip(counter, counter[1:]))
    transfer = 0.0
    for loc in range(trace.n_locations):
        m = trace.messages(loc)
        transfer -= float(m["time"][np.isin(m["kind"], ("send", "isend"))].sum())
        transfer += float(m["time"][np.isin(m["kind"], ("recv", "irecv"))].sum())
    assert transfer > 0
    assert integral == pytest.approx(transfer * 1e6, rel=1e-9)
    # every message counts: the counter steps up once per send
    ups = sum(max(v1 - v0, 0) for (_, v0), (_, v1) in zip([(0, 0)] + counter, counter))
    assert ups <= n_msgs


def test_window_splits_conserve_wait_and_path(analysed, tmp_path):
    trace, result, _ = analysed
    cp = result.critical_path
    mid = (cp.start + cp.end) / 2
    whole = validate_load(result, tmp_path / "whole.json")
    first = validate_load(result, tmp_path / "a.json", window=(0.0, mid))
    second = validate_load(result, tmp_path / "b.json", window=(mid, cp.end + 1.0))

    def total(doc, cat):
        return sum(e["dur"] for e in events(doc, "X", cat))

    for cat in ("wait", "critical_path"):
        assert total(first, cat) + total(second, cat) == pytest.approx(total(whole, cat), abs=1e-3)
        assert 0 < total(first, cat) < total(whole, cat)
    # every message lies in one half or crosses the middle
    n_first, n_second = len(events(first, "s")), len(events(second, "s"))
    assert n_first + n_second <= len(events(whole, "s"))
    assert n_first > 0 and n_second > 0
    for doc, (t0, t1) in ((first, (0.0, mid)), (second, (mid, cp.end + 1.0))):
        ts = [e["ts"] for e in doc["traceEvents"] if e["ph"] != "M"]
        assert min(ts) >= t0 * 1e6 - 1e-6 and max(ts) <= t1 * 1e6 + 1e-6
    # a window over the whole run is the whole file
    full = validate_load(result, tmp_path / "full.json", window=(-1.0, cp.end + 10.0))
    assert [e for e in full["traceEvents"] if e["ph"] != "M"] == [
        e for e in whole["traceEvents"] if e["ph"] != "M"]


def validate_load(result, path, **kw) -> dict:
    doc = json.loads(open(result.to_perfetto(path, **kw)).read())
    validate(doc)
    return doc


def test_location_subset(analysed, tmp_path):
    trace, result, _ = analysed
    doc = validate_load(result, tmp_path / "sub.json", locations=[1, 2])
    region_threads = {e["tid"] for e in events(doc, "B")}
    assert region_threads == {tid_of(1), tid_of(2)} == {2, 3}
    # messages between ranks 1 and 2 only: 1 -> 2 twice per iteration
    assert len(events(doc, "s")) == 8
    waits = events(doc, "X", "wait")
    assert {e["pid"] for e in waits} == {pid_of(1, 1), pid_of(2, 2)} == {2, 3}
    assert sum(e["dur"] for e in waits) == pytest.approx(
        sum(result.by_location(m)[[1, 2]].sum() for m in WAIT_METRICS) * 1e6, abs=1e-3)


def test_overlapping_intervals_get_lanes_of_their_own():
    # the analysis lets one call wait only once (docs/metrics.md), but the
    # exporter does not rely on it: intervals that overlap go to further tracks
    from waitscope.perfetto import _lanes

    start = np.array([0.0, 1.0, 1.5, 3.0, 3.0, 2.0])
    end = np.array([2.0, 1.2, 4.0, 3.0, 5.0, 3.0])
    # in start order: (0,2)->0, (1,1.2)->1, (1.5,4)->1 (after 1.2), (2,3)->0, (3,3)->0, (3,5)->0
    assert _lanes(start, end).tolist() == [0, 1, 1, 0, 0, 0]
    start = np.array([0.0, 0.5, 0.7])
    end = np.array([1.0, 2.0, 0.9])
    assert _lanes(start, end).tolist() == [0, 1, 2]


def test_a_waitall_waits_once(tmp_path):
    # rank 0 waits in one MPI_Waitall for two late messages: one Late Sender, of the later one
    prog = synth.Program(3)
    r0 = prog.rank(0)
    reqs = [r0.irecv(1, tag=0), r0.irecv(2, tag=0)]
    r0.waitall(reqs)
    prog.rank(1).compute("work", 1.0).send(0, tag=0, size=8)
    prog.rank(2).compute("work", 2.0).send(0, tag=0, size=8)
    result = prog.run(resolution=1000).analyze(wait_records=True)
    doc = validate_load(result, tmp_path / "o.json")
    waits = [e for e in events(doc, "X", "wait") if e["name"] == "mpi_latesender"]
    assert [(e["ts"], e["dur"], e["args"]["partner_rank"]) for e in waits] == [(0.0, 2e6, 2)]
    assert len(events(doc, "s")) == 2


def test_without_records_only_regions_and_messages(tmp_path):
    prog, n_msgs = exchange_program(1)
    result = prog.run(resolution=1000).analyze()
    doc = validate_load(result, tmp_path / "plain.json")
    assert not events(doc, "X")
    assert {e["name"] for e in events(doc, "C")} == {"messages in flight"}
    assert len(events(doc, "s")) == n_msgs


def test_bad_arguments(analysed, tmp_path):
    _, result, _ = analysed
    with pytest.raises(ValueError, match="window"):
        result.to_perfetto(tmp_path / "x.json", window=(2.0, 1.0))
    with pytest.raises(ValueError, match="window"):
        result.to_perfetto(tmp_path / "x.json", window="abc")
    with pytest.raises(ValueError, match="location 9"):
        result.to_perfetto(tmp_path / "x.json", locations=[9])
    with pytest.raises(TypeError, match="locations"):
        result.to_perfetto(tmp_path / "x.json", locations=["a"])
    with pytest.raises(FileNotFoundError, match="no-such-dir"):
        result.to_perfetto(tmp_path / "no-such-dir" / "x.json")


def test_cli_writes_a_valid_file_of_the_bundled_trace(tmp_path):
    out = tmp_path / "pp.json"
    proc = subprocess.run([sys.executable, "-m", "waitscope", "analyze", PING_PONG, "--quiet", "--critical-path",
                           "--delay", "proportional", "--perfetto", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Perfetto trace written" in proc.stdout
    doc = json.loads(out.read_text())
    facts = validate(doc)
    trace = waitscope.open(PING_PONG)
    n_sends = sum(int(np.isin(trace.messages(loc)["kind"], ("send", "isend")).sum()) for loc in range(trace.n_locations))
    assert len(facts["flows"]) == n_sends > 0
    result = trace.analyze(wait_records=True)
    assert sum(e["dur"] for e in events(doc, "X", "wait")) == pytest.approx(
        sum(result.total(m) for m in WAIT_METRICS) * 1e6, abs=1e-3)


def test_region_slices_are_the_visits_of_the_call_paths(analysed, tmp_path):
    # the nesting of the slices spells the call paths, and their durations add up to each call
    # path's inclusive time per location
    trace, result, _ = analysed
    doc = validate_load(result, tmp_path / "r.json")
    inclusive = result.inclusive("time")
    got = np.zeros_like(inclusive)
    visits = np.zeros_like(inclusive)
    stacks: dict[int, list] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "B":
            stacks[e["tid"]].append(e)
        elif e["ph"] == "E":
            path = "/".join(b["name"] for b in stacks[e["tid"]])
            begin = stacks[e["tid"]].pop()
            cp = result.callpath_names.index(path)
            got[cp, e["tid"] - 1] += e["ts"] - begin["ts"]  # tid = location + 1
            visits[cp, e["tid"] - 1] += 1
    assert np.allclose(got, inclusive * 1e6, atol=1e-3)
    assert np.array_equal(visits, result.get("visits"))


def test_cli_refuses_perfetto_under_mpiexec(tmp_path):
    # the timeline needs every location's events in one process: a clear error, no partial file
    from conftest import mpi_launcher  # tests/ is on sys.path

    launcher = mpi_launcher()
    assert launcher is not None, "the parallel mode needs mpi4py and the mpiexec of its MPI"
    mpiexec, env = launcher
    out = tmp_path / "x.json"
    run = subprocess.run([*mpiexec, "-n", "2", sys.executable, "-m", "waitscope", "analyze", PING_PONG, "--quiet",
                          "--perfetto", str(out)], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    assert "--perfetto needs all locations in one process" in run.stderr
    assert run.stderr.count("--perfetto needs") == 1  # rank 0 alone says it
    assert not out.exists()


def test_window_keeps_each_wait_states_own_delay_costs(tmp_path):
    # a steady ring: every iteration has wait states of the same length, so a delay record could be
    # matched to the instance of another iteration; in a window each slice keeps the costs it has
    # in the whole run
    prog = synth.Program(4)
    for i in range(12):
        for r in range(4):
            rp = prog.rank(r).compute("work", 0.25 * (1 + r % 2))
            reqs = [rp.irecv((r - 1) % 4, tag=i), rp.isend((r + 1) % 4, tag=i, size=64)]
            rp.waitall(reqs)
    result = prog.run(latency=0.0625, resolution=1024).analyze(
        delay_model="proportional", delay_records=True, wait_records=True)
    whole = validate_load(result, tmp_path / "whole.json")
    t0, t1 = 1.0, 2.0
    part = validate_load(result, tmp_path / "part.json", window=(t0, t1))
    key = lambda e: (e["pid"], e["ts"], e["name"])  # noqa: E731
    full = {key(e): e["args"] for e in events(whole, "X", "wait")}
    inner = [e for e in events(part, "X", "wait") if t0 * 1e6 < e["ts"] and e["ts"] + e["dur"] < t1 * 1e6]
    assert inner and any(e["args"]["delay_short_s"] > 0 for e in inner)
    for e in inner:
        assert e["args"] == full[key(e)]
    # and the whole run's slices carry every record's costs once
    assert sum(a["delay_short_s"] for a in full.values()) == pytest.approx(float(result.delay_short.sum()))
