"""How far a long job has got, on stderr: one module for ``search`` and ``screen``.

What a user reads must be true:

* the total is the job's real size, counted once (a genome's bases, not
  bases x pattern batches): a caller whose tasks each cover part of one unit
  advances by that fraction (a task of one chunk and one of B pattern
  batches: the chunk's bases / B);
* the time left is estimated from finished work only: the rate is the work
  finished in this run over the time this run has taken (work a resumed job
  had saved is shown as done but gives no rate), and until some work has
  finished there is no estimate;
* on a terminal one line is redrawn in place (at most twice a second) and
  erased at the end; anywhere else (a batch job's log) a line is written at
  the start, then every 30 seconds whether or not a task finished, and a
  last one at the end.

Use::

    with open_progress(enabled, total=genome_bases, unit="bp", label="searching") as progress:
        for ...:
            progress.advance(bases_of_finished_task)

or call :meth:`Progress.close` yourself (``ok=False`` when the job failed).
"""
from __future__ import annotations

import sys
import threading
import time

TERMINAL_INTERVAL_S = 0.5
LOG_INTERVAL_S = 30.0
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _scale(value: float) -> tuple[float, str]:
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return scale, prefix
    return 1.0, ""


def format_amount(value: float, unit: str) -> str:
    """4_940_000, "bp" -> "4.94 Mbp"; 12, "pairs" -> "12 pairs"."""
    scale, prefix = _scale(value)
    return f"{value / scale:.3g} {prefix}{unit}"


def format_part(done: float, total: float, unit: str) -> str:
    """1_200_000 of 4_940_000 "bp" -> "1.2 of 4.94 Mbp" (both in the total's prefix)."""
    scale, prefix = _scale(total)
    return f"{done / scale:.3g} of {total / scale:.3g} {prefix}{unit}"


def format_duration(seconds: float) -> str:
    """39.2 -> "0:39"; 3725 -> "1:02:05"."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


class Progress:
    """A job's progress: ``total`` units, :meth:`advance` as work finishes, :meth:`close` at the end.

    ``already_done``: units finished before this run (a resumed job's saved
    tasks). ``stream``, ``interval`` and ``clock`` are there for tests.
    """

    def __init__(self, total: float, *, unit: str, label: str, already_done: float = 0.0, stream=None,
                 interval: float | None = None, clock=time.monotonic):
        self.total = float(total)
        self.unit = unit
        self.label = label
        self.already_done = float(already_done)
        self.done = float(already_done)
        self.stream = sys.stderr if stream is None else stream
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if interval is not None else (
            TERMINAL_INTERVAL_S if self.interactive else LOG_INTERVAL_S)
        self.clock = clock
        self.started = clock()
        self._last_drawn = self.started
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._show(self.line())
        self._ticker = threading.Thread(target=self._tick, name="seqsift-progress", daemon=True)
        self._ticker.start()

    def line(self) -> str:
        """'searching: 1.2 of 4.94 Mbp (24%), 0:12 elapsed, about 0:38 left'."""
        elapsed = self.clock() - self.started
        share = self.done / self.total if self.total else 1.0
        text = (f"{self.label}: {format_part(self.done, self.total, self.unit)} ({share:.0%}), "
                f"{format_duration(elapsed)} elapsed")
        finished_here = self.done - self.already_done
        if finished_here <= 0 or elapsed <= 0:
            return text + ", estimating the time left"
        left = elapsed * (self.total - self.done) / finished_here
        return text + f", about {format_duration(left)} left"

    def advance(self, amount: float) -> None:
        with self._lock:
            self.done = min(self.total, self.done + amount)
        if self.interactive and self.clock() - self._last_drawn >= self.interval:
            self._show(self.line())

    def close(self, ok: bool = True) -> None:
        """Stop the ticking; a log gets a last line (a terminal's line is erased)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._ticker.join()
        if self.interactive:
            self._write("\r\x1b[K")
            return
        elapsed = format_duration(self.clock() - self.started)
        if ok:
            self._show(f"{self.label}: {format_amount(self.total, self.unit)} done in {elapsed}")
        else:
            self._show(f"{self.label}: stopped after {elapsed}, at {format_part(self.done, self.total, self.unit)}")

    def _tick(self) -> None:
        while not self._closed.wait(self.interval):
            self._show(self.line())

    def _show(self, text: str) -> None:
        self._last_drawn = self.clock()
        self._write(f"\r{text}\x1b[K" if self.interactive else text + "\n")

    def _write(self, text: str) -> None:
        with self._lock:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # stderr closed or gone: progress is not worth failing a job
                pass

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, *rest) -> None:
        self.close(ok=exc_type is None)


class NoProgress:
    """What :func:`open_progress` returns when progress is off: the same calls, doing nothing."""

    def advance(self, amount: float) -> None:
        pass

    def close(self, ok: bool = True) -> None:
        pass

    def __enter__(self) -> "NoProgress":
        return self

    def __exit__(self, *exc) -> None:
        pass


def open_progress(enabled: bool, total: float, *, unit: str, label: str, already_done: float = 0.0):
    """A :class:`Progress` on stderr, or a :class:`NoProgress` when ``enabled`` is false or there is no work."""
    if not enabled or total <= 0:
        return NoProgress()
    return Progress(total, unit=unit, label=label, already_done=already_done)
