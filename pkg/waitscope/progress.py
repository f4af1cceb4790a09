"""Progress reports of long work: loading events and each replay of an analysis.

``waitscope.open``, ``Trace.load`` and ``Trace.analyze`` take ``progress=``:

* ``"auto"`` (the default): in Jupyter, a progress bar once the work has
  taken more than :data:`NOTEBOOK_DELAY` seconds (nothing for quick work);
  elsewhere nothing;
* ``True`` or ``"bar"``: at once, a bar in Jupyter, a text line on stderr
  elsewhere;
* ``"text"``: a text line (stderr; in Jupyter an output line that updates);
* ``False`` or ``None``: nothing;
* a callable ``f(stage, done, total)``: called with the stage's name, the
  events done and the events of the stage (at most every 0.2 s and at
  the end of each stage); raising an exception stops the work.  A replay
  counts the events it visits: all of them, or in the sparse passes
  (forward wait states, sync points) only the synchronizing ones.

The stages are ``load``, then ``wait states 1/2``, ``wait states 2/2``
and, with a delay model or the critical path, ``sync points`` and one
backward replay named for what it computes (``critical path
(backward)``, ``delay causes (backward)`` or ``delay causes + critical
path (backward)``) and, with a delay model when some waiting is indirect,
``delay (forward)``.  Every stage gets a line (or bar) of its own.

A bar in Jupyter is an ipywidgets progress bar when ipywidgets is
installed, else a tqdm bar when tqdm is installed, else a text line that
updates in place; none of them is needed.

In the parallel mode (``open(..., comm=...)``) rank 0 reports for all
processes: the others send their counts to it, and it shows the sums.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO

NOTEBOOK_DELAY = 1.0
"""Seconds of work after which ``progress="auto"`` shows a bar in Jupyter."""

ACCEPTED = '"auto", True, "bar", "text", False, None or a callable f(stage, done, total)'

Callback = Callable[[str, int, int], Any]


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except Exception:  # pragma: no cover - a broken IPython
        return False
    return ip is not None and getattr(ip, "kernel", None) is not None


STAGE_WIDTH = 40
"""Columns of the stage's name in a text line."""


def _line(stage: str, done: int, total: int, seconds: float) -> str:
    share = f"{100.0 * done / total:5.1f} %" if total else "       "
    return f"{stage:<{STAGE_WIDTH}} {done:>12,d} of {total:>12,d} events {share} {seconds:7.1f} s"


class Reporter:
    """Receives ``(stage, done, total)`` reports; :meth:`close` ends the display."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, stage: str, done: int, total: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Ends the last line; nothing more is shown."""

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class TextLine(Reporter):
    """One line per stage on a stream: updated in place on a terminal (carriage
    return); otherwise (a pipe, a batch job's log) written at the end of the
    stage, and every `interval` seconds while a long stage runs."""

    def __init__(self, stream: TextIO | None = None, interval: float = 10.0) -> None:
        super().__init__()
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.stage: str | None = None
        self.open_line = False
        self.last_line = time.monotonic()

    def _tty(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):
            return False

    def __call__(self, stage: str, done: int, total: int) -> None:
        text = _line(stage, done, total, self.elapsed())
        if self._tty():
            if stage != self.stage and self.open_line:
                self.stream.write("\n")
            self.stream.write("\r" + text)
            self.open_line = True
        elif done >= total or time.monotonic() - self.last_line >= self.interval:
            self.stream.write(text + "\n")
            self.last_line = time.monotonic()
        self.stage = stage
        self.stream.flush()

    def close(self) -> None:
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False


class NotebookText(Reporter):
    """In Jupyter, without ipywidgets and tqdm: one output line per stage, updated in place."""

    def __init__(self) -> None:
        super().__init__()
        self.stage: str | None = None
        self.handle: Any = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        from IPython.display import display

        text = _line(stage, done, total, self.elapsed())
        if stage != self.stage or self.handle is None:
            self.handle = display(_Plain(text), display_id=True)
            self.stage = stage
        else:
            self.handle.update(_Plain(text))


class _Plain:
    """Plain text for IPython's display (no quotes, unlike a str)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class WidgetBar(Reporter):
    """An ipywidgets progress bar per stage."""

    def __init__(self, widgets: Any) -> None:
        super().__init__()
        self.widgets = widgets
        self.stage: str | None = None
        self.bar: Any = None
        self.label: Any = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage or self.bar is None:
            from IPython.display import display

            self.bar = self.widgets.IntProgress(min=0, max=max(int(total), 1), description="")
            self.label = self.widgets.Label()
            display(self.widgets.HBox([self.widgets.Label(value=stage), self.bar, self.label]))
            self.stage = stage
        self.bar.max = max(int(total), 1)
        self.bar.value = min(int(done), self.bar.max)
        share = f"{100.0 * done / total:.0f} %" if total else ""
        self.label.value = f"{done:,d} of {total:,d} events {share}, {self.elapsed():.1f} s"
        if done >= total:
            self.bar.bar_style = "success"


class TqdmBar(Reporter):
    """A tqdm bar per stage (its text bar: Jupyter without ipywidgets)."""

    def __init__(self, tqdm: Any) -> None:
        super().__init__()
        self.tqdm = tqdm
        self.stage: str | None = None
        self.bar: Any = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage or self.bar is None:
            if self.bar is not None:
                self.bar.close()
            self.bar = self.tqdm(total=int(total), desc=stage, unit=" events", unit_scale=True, leave=True)
            self.stage = stage
        self.bar.update(int(done) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def notebook_bar() -> Reporter:
    """The best bar Jupyter can show here: ipywidgets, tqdm or a text line."""
    try:
        import ipywidgets

        return WidgetBar(ipywidgets)
    except ImportError:
        pass
    try:
        # tqdm's text bar: without ipywidgets, tqdm.auto falls back to it too, but warns
        # (TqdmWarning "IProgress not found") into the notebook's output
        from tqdm.std import tqdm

        return TqdmBar(tqdm)
    except ImportError:
        pass
    return NotebookText()


class Delayed(Reporter):
    """Forwards reports to another reporter once the work has taken `delay` seconds."""

    def __init__(self, inner: Reporter, delay: float) -> None:
        super().__init__()
        self.inner = inner
        self.delay = delay

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.elapsed() >= self.delay:
            self.inner.started = self.started
            self.inner(stage, done, total)

    def close(self) -> None:
        self.inner.close()


class FromCallable(Reporter):
    def __init__(self, callback: Callback) -> None:
        super().__init__()
        self.callback = callback

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.callback(stage, done, total)


def reporter(progress: Any, argument: str = "progress") -> Reporter | None:
    """The reporter for a ``progress=`` value (see the module docstring); ValueError for others."""
    if progress is None or progress is False:
        return None
    if isinstance(progress, Reporter):
        return progress
    if callable(progress):
        return FromCallable(progress)
    notebook = in_notebook()
    if progress == "auto":
        return Delayed(notebook_bar(), NOTEBOOK_DELAY) if notebook else None
    if progress is True or progress == "bar":
        return notebook_bar() if notebook else TextLine()
    if progress == "text":
        return NotebookText() if notebook else TextLine()
    raise ValueError(f"{argument} must be {ACCEPTED}; got {progress!r}")


class Reporting:
    """``with Reporting(progress) as callback:`` the callback for the C core, closed at the end.

    A Reporter passed in is used as it is and not closed (its owner closes it).  With a
    communicator of several processes (collective), rank 0's `progress` decides for all,
    and rank 0 reports the sums of all processes (:class:`Parallel`); `local_events` is
    this process's share of the work (its events), used to estimate the shares that
    have not been reported yet.
    """

    def __init__(self, progress: Any, comm: Any = None, local_events: int = 0, synchronized: bool = True) -> None:
        self.owned = not isinstance(progress, Reporter)
        self.reporter = reporter(progress)
        self.parallel: Parallel | None = None
        if comm is not None and comm.Get_size() > 1:
            root = comm.Get_rank() == 0
            wanted = comm.bcast(self.reporter is not None if root else None, root=0)
            if wanted:
                events = comm.allgather(int(local_events))
                self.parallel = Parallel(comm, self.reporter if root else None, events, synchronized)

    def __enter__(self) -> Callback | None:
        return self.parallel if self.parallel is not None else self.reporter

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.parallel is not None:
                self.parallel.finish()
        finally:
            if self.owned and self.reporter is not None:
                self.reporter.close()


class Parallel(Reporter):
    """Rank 0 reports for all processes.

    The other processes send their reports to rank 0 (non-blocking, on a
    duplicate of the communicator); rank 0 shows per stage the sum of the
    work done and of the stage's work over all processes.  A process that
    has not reported on the stage yet counts with an estimate of its share
    (its events, scaled like rank 0's).  With `synchronized` stages (the
    replays, which end together), every process has ended a stage when
    rank 0 has: rank 0 then waits up to :attr:`END_WAIT` seconds for their
    last reports, so that the line ends with the exact sums.  Otherwise
    (loading) a stage counts as ended when every process said so, at the
    latest in :meth:`finish`, which every process must call.
    """

    TAG = 1
    END_WAIT = 0.5

    def __init__(self, comm: Any, inner: Reporter | None, events: list[int], synchronized: bool = True) -> None:
        super().__init__()
        self.synchronized = synchronized
        self.comm = comm.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.inner = inner
        self.events = events
        self.requests: list[Any] = []
        self.last_sent = 0.0
        self.stage: str | None = None
        self.reports: dict[str, dict[int, tuple[int, int]]] = {}
        self.shown: tuple[str, int, int] | None = None
        self.finished = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.rank != 0:
            now = time.monotonic()
            if stage != self.stage or done >= total or now - self.last_sent >= 0.2:
                self.requests.append(self.comm.isend((stage, int(done), int(total)), dest=0, tag=self.TAG))
                self.last_sent, self.stage = now, stage
            return
        self.reports.setdefault(stage, {})[0] = (int(done), int(total))
        while self.comm.iprobe(tag=self.TAG):
            self._receive()
        if self.synchronized and done >= total:  # every process ended the stage: wait for their last reports
            deadline = time.monotonic() + self.END_WAIT
            while not self._ended(stage) and time.monotonic() < deadline:
                if self.comm.iprobe(tag=self.TAG):
                    self._receive()
                else:
                    time.sleep(0.0005)
        self._show(stage)

    def _show(self, stage: str) -> None:
        if self.inner is not None:
            self.inner.started = self.started
            self.shown = (stage, *self.summed(stage))
            self.inner(*self.shown)

    def _ended(self, stage: str) -> bool:
        got = self.reports.get(stage, {})
        return len(got) == self.size and all(d >= t for d, t in got.values())

    def summed(self, stage: str) -> tuple[int, int]:
        """(done, total) of `stage` over all processes, as far as rank 0 knows."""
        got = self.reports.get(stage, {})
        own_done, own_total = got[0]
        ratio = own_total / self.events[0] if self.events[0] else 1.0
        done = total = 0
        for rank in range(self.size):
            if rank in got:
                done += got[rank][0]
                total += got[rank][1]
            else:
                total += round(self.events[rank] * ratio)
        if own_done >= own_total and (self.synchronized or self._ended(stage)):
            done = total  # every process ended the stage
        return done, total

    def _receive(self) -> None:
        from mpi4py import MPI

        status = MPI.Status()
        message = self.comm.recv(source=MPI.ANY_SOURCE, tag=self.TAG, status=status)
        if message is None:
            self.finished += 1
        else:
            stage, done, total = message
            self.reports.setdefault(stage, {})[status.Get_source()] = (int(done), int(total))

    def finish(self) -> None:
        """Collective: every report has reached rank 0; frees the communicator."""
        try:
            if self.rank != 0:
                from mpi4py import MPI

                self.requests.append(self.comm.isend(None, dest=0, tag=self.TAG))
                MPI.Request.Waitall(self.requests)
            else:
                while self.finished < self.size - 1:
                    self._receive()
                last = next(reversed(self.reports), None) if self.reports else None
                if last is not None and 0 in self.reports[last] and self.shown != (last, *self.summed(last)):
                    self._show(last)  # with every report in
        finally:
            self.comm.Free()
