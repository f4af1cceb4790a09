"""progress=: accepted values, a line per stage (the critical path's own), Jupyter's
bar after a second, and rank 0 reporting for all processes under mpiexec."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import waitscope
from waitscope import progress, synth

from conftest import mpi_launcher  # tests/ is on sys.path


def _program(n: int = 2) -> synth.Program:
    p = synth.Program(n)
    for r in range(n):
        p.rank(r).compute("work", 1.0 + r).barrier()
    p.rank(0).send(1)
    p.rank(1).recv(0)
    return p


def _chain() -> synth.Program:
    # rank 1 waits 2 s for rank 0's message (enters its receive at 1 s, the
    # send comes at 3 s) and then sends on to rank 2, which has waited since
    # 1 s as well: rank 2's 2 s are all caused by rank 1's waiting (indirect)
    p = synth.Program(3)
    p.rank(0).compute("work", 3).send(1)
    p.rank(1).compute("work", 1).recv(0).send(2)
    p.rank(2).compute("work", 1).recv(1)
    return p


def test_accepted_values(monkeypatch: pytest.MonkeyPatch):
    assert progress.reporter(None) is None and progress.reporter(False) is None
    assert progress.reporter("auto") is None  # outside Jupyter: quiet
    assert isinstance(progress.reporter(True), progress.TextLine)
    assert isinstance(progress.reporter("bar"), progress.TextLine)
    assert isinstance(progress.reporter("text"), progress.TextLine)
    for bad in ("yes", 1, 0.5):
        with pytest.raises(ValueError, match="progress must be \"auto\", True, \"bar\", \"text\", False, None"):
            progress.reporter(bad)
    trace = _program().run()
    with pytest.raises(ValueError, match="progress must be"):
        trace.analyze(progress="loud")


@pytest.mark.parametrize("options,backward", [
    ({"critical_path": True}, "critical path (backward)"),
    ({"delay_model": "proportional"}, "delay causes (backward)"),
    ({"delay_model": "wait-first", "critical_path": True}, "delay causes + critical path (backward)"),
])
def test_stages_name_what_they_compute(options, backward):
    trace = _program(3).run()
    seen: list[tuple[str, int, int]] = []
    trace.analyze(progress=lambda *report: seen.append(report), **options)
    stages = list(dict.fromkeys(stage for stage, _, _ in seen))
    # no wait here is indirect (the barrier's is caused by work, the message does not wait):
    # nothing for the forward delay pass to return (test_delay_forward_only_with_indirect_waiting)
    expected = ["wait states 1/2", "wait states 2/2", "sync points", backward]
    assert stages == expected
    finals = {stage: (done, total) for stage, done, total in seen if done == total}
    assert set(finals) == set(stages)  # every stage reports its end
    # done counts the events the replay visits: the synchronizing ones (here the barrier's and
    # the messages' records, Init and Finalize), in every pass, also for the critical path (its
    # pieces between them are cut afterwards)
    assert all(0 < total <= trace.n_events for _, total in finals.values())
    assert 0 < finals["wait states 1/2"][1] < trace.n_events
    assert finals[backward] == finals["wait states 1/2"]


@pytest.mark.parametrize("model", ["proportional", "wait-first"])
@pytest.mark.parametrize("threads", [1, 2])
def test_delay_forward_only_with_indirect_waiting(model, threads):
    # the forward pass returns the indirect part of each wait state to the waiting side; with
    # none anywhere it would add nothing, and it is not run
    seen: list[tuple[str, int, int]] = []
    r = _chain().run(latency=0.0, resolution=1000).analyze(delay_model=model, threads=threads,
                                                          progress=lambda *report: seen.append(report))
    assert r.get("mpi_wait_indirect_latesender").sum(axis=0) == pytest.approx([0, 0, 2])
    assert r.total("mpi_latesender") == pytest.approx(4)
    assert "delay (forward)" in {stage for stage, _, _ in seen}
    seen.clear()
    r = _program(3).run().analyze(delay_model=model, threads=threads, progress=lambda *report: seen.append(report))
    assert r.total("mpi_barrier_wait") == pytest.approx(3)  # ranks 0 and 1 wait 2 s and 1 s for rank 2
    assert r.total("mpi_wait_indirect_latesender") == 0 and r.total("mpi_wait_indirect_collective") == 0
    assert r.total("mpi_wait_direct_collective") == pytest.approx(3)
    assert "delay (forward)" not in {stage for stage, _, _ in seen}


def test_text_line_per_stage():
    pipe = io.StringIO()
    line = progress.TextLine(pipe)
    _program().run().analyze(critical_path=True, progress=line)
    line.close()
    lines = pipe.getvalue().splitlines()  # not a terminal: one line per finished stage, no carriage returns
    assert [x[:progress.STAGE_WIDTH].strip() for x in lines] == ["wait states 1/2", "wait states 2/2",
                                                                 "sync points", "critical path (backward)"]
    assert "\r" not in pipe.getvalue() and all("100.0 %" in x for x in lines)


def test_delayed_reports_only_after_the_delay():
    seen: list[tuple[str, int, int]] = []
    inner = progress.FromCallable(lambda *r: seen.append(r))
    late = progress.Delayed(inner, delay=3600.0)
    late("load", 1, 2)
    assert seen == []
    late.started -= 3601.0
    late("load", 2, 2)
    assert seen == [("load", 2, 2)]


def test_tqdm_and_widget_bars_when_installed(monkeypatch: pytest.MonkeyPatch):
    """The optional bars, driven through stand-ins of tqdm and ipywidgets."""
    made = []

    class FakeTqdm:
        def __init__(self, total, desc, **kw):
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            made.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True

    bar = progress.TqdmBar(FakeTqdm)
    for report in (("a", 5, 10), ("a", 10, 10), ("b", 3, 4)):
        bar(*report)
    bar.close()
    assert [(m.desc, m.n, m.total, m.closed) for m in made] == [("a", 10, 10, True), ("b", 3, 4, True)]

    class Widget:
        def __init__(self, *args, **kw):
            self.__dict__.update(kw)
            self.value = args[0] if args else kw.get("value")

    widgets = type("widgets", (), {"IntProgress": Widget, "Label": Widget, "HBox": Widget})
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(obj))
    bar = progress.WidgetBar(widgets)
    bar("wait states 1/2", 50, 200)
    bar("wait states 1/2", 200, 200)
    assert len(shown) == 1 and bar.bar.value == 200 and bar.bar.max == 200 and bar.bar.bar_style == "success"
    assert bar.label.value.startswith("200 of 200 events 100 %")


def test_notebook_shows_a_bar_after_a_second(tmp_path: Path):
    """In a real Jupyter kernel: a line per stage that updates in place, only for work over the delay."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from test_notebooks import KERNEL, _kernel_manager

    nb = nbformat.v4.new_notebook()
    setup = textwrap.dedent("""
        import sys
        sys.modules["ipywidgets"] = sys.modules["tqdm"] = None  # the fallback without the optional packages
        import waitscope
        from waitscope import progress, synth
        p = synth.Program(2)
        p.rank(0).compute("work", 2.0).send(1)
        p.rank(1).recv(0)
        trace = p.run()
        assert progress.in_notebook()
    """)
    nb.cells = [nbformat.v4.new_code_cell(setup),
                nbformat.v4.new_code_cell("r = trace.analyze(critical_path=True)   # quick: nothing shown"),
                nbformat.v4.new_code_cell("progress.NOTEBOOK_DELAY = 0.0\nr = trace.analyze(critical_path=True)"),
                nbformat.v4.new_code_cell("r = trace.analyze(progress=False)")]
    km = _kernel_manager(tmp_path)
    client = nbclient.NotebookClient(nb, km=km, kernel_name=KERNEL, timeout=120,
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    assert nb.cells[1].outputs == [] and nb.cells[3].outputs == []
    lines = [o["data"]["text/plain"] for o in nb.cells[2].outputs]
    assert [x[:progress.STAGE_WIDTH].strip() for x in lines] == ["wait states 1/2", "wait states 2/2",
                                                                 "sync points", "critical path (backward)"]
    assert all("100.0 %" in x for x in lines)  # updated in place to the stage's end
    assert all(o["output_type"] == "display_data" for o in nb.cells[2].outputs)


MPI_SCRIPT = textwrap.dedent("""
    import json, sys
    from mpi4py import MPI
    import waitscope
    comm = MPI.COMM_WORLD
    seen = []
    record = (lambda *r: seen.append(r)) if comm.rank == 0 else None
    trace = waitscope.open(sys.argv[1], comm=comm, progress=record)
    local = trace.n_events
    r = trace.analyze(delay_model="proportional", critical_path=True, progress=record)
    if comm.rank == 0:
        print(json.dumps({"seen": seen, "local": local}))
""")


def test_rank_0_reports_for_all_processes(tmp_path: Path):
    launcher = mpi_launcher()
    assert launcher is not None, "the parallel mode needs mpi4py and the mpiexec of its MPI"
    mpiexec, launch_env = launcher
    path = _program(4).write(tmp_path / "four")
    total = waitscope.open(path).n_events
    script = tmp_path / "script.py"
    script.write_text(MPI_SCRIPT)
    run = subprocess.run([*mpiexec, "-n", "2", sys.executable, str(script), str(path)], capture_output=True,
                         text=True, timeout=300, env=dict(os.environ, **launch_env))
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["local"] < total  # rank 0 holds only its share ...
    finals = {stage: (done, n) for stage, done, n in got["seen"] if done == n}
    # ... but reports the work of all processes: that of the analysis in one process
    one: list[tuple[str, int, int]] = []
    waitscope.open(path, progress=lambda *r: one.append(r)).analyze(
        delay_model="proportional", critical_path=True, progress=lambda *r: one.append(r))
    expected = {stage: (done, n) for stage, done, n in one if done == n}
    assert finals == expected
    assert finals["load"] == (total, total)
    assert list(dict.fromkeys(s for s, _, _ in got["seen"])) == list(dict.fromkeys(s for s, _, _ in one))


def test_tqdm_without_ipywidgets_gives_its_text_bar_without_a_warning(monkeypatch: pytest.MonkeyPatch):
    # tqdm comes with the test extra (Thicket needs it); tqdm.auto would warn "IProgress not found"
    import warnings

    import tqdm

    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    for name in [m for m in sys.modules if m.startswith("tqdm.auto") or m.startswith("tqdm.autonotebook")]:
        monkeypatch.delitem(sys.modules, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bar = progress.notebook_bar()
    assert isinstance(bar, progress.TqdmBar) and bar.tqdm is tqdm.std.tqdm
