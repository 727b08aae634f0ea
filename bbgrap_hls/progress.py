"""Progress of long steps: calibration, search, builds, simulated cycles.

One small front over tqdm, so that the rest of the code says *what* is progressing and
this module decides *how* it shows:

- on a terminal (stderr is a TTY): a tqdm bar on stderr, shown once a step has run for
  `DELAY` seconds (quick steps stay silent) and cleared when it ends;
- otherwise (a pipe, a log file, a test's captured stderr): a plain line every
  `PLAIN_EVERY` seconds, the first after `PLAIN_DELAY` seconds, and a closing "done"
  line only if one was printed, so quick steps print nothing;
- quiet (``bbgrap-hls --quiet``, `set_quiet`): nothing.

A step is a `Task` used as a context manager::

    with progress.task("calibrating", total=n, unit="sample") as t:
        for ...:
            t.update(1)

Steps without a count (a g++ or Verilator build) pass ``ticker=True`` to show their
elapsed time, or a ``poll`` callable that a background thread calls every `TICK`
seconds, returning ``(done, total)`` or ``(done, total, note)`` (the simulation's cycle
counter and frames out), a note alone (the build's phase) or None when it knows nothing
new.
Bars are written to the raw stream under the CLI's `bbgrap_hls.safetext.SafeStream`:
their cursor control is ours, never text from a model.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

#: seconds a step runs before anything about it shows
DELAY = 2.0
#: seconds before the first plain line and between plain lines, when stderr is not a terminal
#: (a log needs fewer lines than a bar gets redraws)
PLAIN_DELAY = 5.0
PLAIN_EVERY = 10.0
#: seconds between polls of a ``poll`` callable or ticks of a ``ticker`` task
TICK = 0.25

#: what a ``poll`` callable returns: (done, total), (done, total, note), a note, or None
Poll = tuple | str | None

_settings = {"quiet": False, "prefix": "bbgrap-hls"}


def set_quiet(quiet: bool = True) -> None:
    """Silence (or restore) every progress display of this process."""
    _settings["quiet"] = bool(quiet)


def is_quiet() -> bool:
    """True when progress is silenced."""
    return bool(_settings["quiet"])


def set_prefix(prefix: str) -> None:
    """What plain lines start with (the CLI sets ``bbgrap-hls COMMAND``)."""
    _settings["prefix"] = prefix


def _stream() -> TextIO:
    err = sys.stderr
    return getattr(err, "raw", err)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


def _secs(s: float) -> str:
    s = int(round(s))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


class Task:
    """One long step's progress (see the module docstring); thread-safe."""

    def __init__(self, desc: str, total: int | None = None, unit: str = "it", *, ticker: bool = False,
                 poll: Callable[[], Poll] | None = None) -> None:
        self.desc = desc
        self.total = total
        self.unit = unit
        self.done = 0
        self.note = ""
        self._poll = poll
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._last_line = None  # monotonic time of the last plain line
        self._stop = threading.Event()
        self._bar = None
        self._stream = _stream()
        self._mode = "quiet" if is_quiet() else ("bar" if _isatty(self._stream) else "plain")
        if self._mode == "bar":
            from tqdm import tqdm

            # no tqdm monitor thread: with only this module's tickers beside it, planning may
            # fork a second process (`bbgrap_hls.search.parallel.can_fork`)
            tqdm.monitor_interval = 0

            # a terminal of unknown size (a bare pty) says 0 x 0, and tqdm hides a bar below row 0
            sized = _columns(self._stream) > 0
            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self._stream, delay=DELAY, leave=False,
                             dynamic_ncols=sized, ncols=None if sized else 100, nrows=None if sized else 24,
                             mininterval=TICK, bar_format="{desc}: {elapsed}{postfix}" if total is None else None,
                             unit_scale=total is not None and total >= 10_000)  # 184k/809k, 12/40
        self._thread = None
        if self._mode != "quiet" and (ticker or poll is not None):
            self._thread = threading.Thread(target=self._tick, name=f"progress {desc}", daemon=True)
            # it only writes this task's lines: a forked child that never reports progress and
            # writes nothing to these streams is safe beside it (`search.parallel.can_fork`)
            self._thread.fork_safe = True
            self._thread.start()

    def __enter__(self) -> Task:
        return self

    def __exit__(self, *exc) -> None:
        self.close(ok=exc[0] is None)

    def update(self, advance: int = 0, *, done: int | None = None, total: int | None = None,
               note: str | None = None) -> None:
        """Advance by ``advance`` or set ``done``; optionally change the total or the note."""
        with self._lock:
            if total is not None and total != self.total:
                self.total = total
                if self._bar is not None:
                    self._bar.total = total
            new = self.done + advance if done is None else done
            step, self.done = new - self.done, new
            if note is not None and note != self.note:
                self.note = note
                if self._bar is not None:
                    self._bar.set_postfix_str(note, refresh=False)
            if self._bar is not None:
                self._bar.update(step)
            elif self._mode == "plain":
                self._plain()

    def _plain(self, closing: bool = False) -> None:
        now = time.monotonic()
        el = now - self._t0
        if closing:
            if self._last_line is not None:
                self._write(f"{self.desc}: done in {_secs(el)}")
            return
        if el < PLAIN_DELAY or (self._last_line is not None and now - self._last_line < PLAIN_EVERY):
            return
        self._last_line = now
        parts = [f"{self.desc}:"]
        if self.total:
            parts.append(f"{self.done:,}/{self.total:,} {self.unit} ({100 * self.done / self.total:.0f} %),")
            eta = el * (self.total - self.done) / self.done if 0 < self.done <= self.total else None
            parts.append(_secs(el) + (f", ETA {_secs(eta)}" if eta is not None else ""))
        else:
            if self.done:
                parts.append(f"{self.done:,} {self.unit},")
            parts.append(_secs(el))
        if self.note:
            parts.append(f"({self.note})")
        self._write(" ".join(parts))

    def _write(self, line: str) -> None:
        try:
            self._stream.write(f"{_settings['prefix']}: {line}\n")
            self._stream.flush()
        except (OSError, ValueError):  # a closed stream never stops the work
            pass

    def _tick(self) -> None:
        while not self._stop.wait(TICK):
            got = None
            if self._poll is not None:
                try:
                    got = self._poll()
                except Exception:  # a progress source never stops the work
                    got = None
            if isinstance(got, str):
                self.update(note=got)
            elif got is not None:
                self.update(done=got[0], total=got[1], note=got[2] if len(got) > 2 else None)
            else:
                self.update(0)

    def close(self, ok: bool = True) -> None:
        """End the display (a bar is cleared; a plain display says how long it took)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            elif self._mode == "plain" and ok:
                self._plain(closing=True)
            self._mode = "quiet"


def task(desc: str, total: int | None = None, unit: str = "it", *, ticker: bool = False,
         poll: Callable[[], Poll] | None = None) -> Task:
    """A `Task` for one long step (a context manager); see the module docstring."""
    return Task(desc, total, unit, ticker=ticker, poll=poll)


def plan_callback(t: Task) -> Callable[[str], None]:
    """A ``progress`` callback for `bbgrap_hls.search.make_plan` that notes each phase on ``t``.

    Use (the plan command does; gen can do the same around its ``make_plan`` call)::

        with progress.task("planning", ticker=True) as t:
            plan = make_plan(..., progress=progress.plan_callback(t))
    """
    return lambda msg: t.update(note=msg)
