"""Planning work done in a second process while this one goes on.

`make_plan` plans the same graph twice when DSP packing is allowed (with it and without it,
keeping the better plan: docs/plan.md). The two are independent, so where the machine has a
second core and the process can fork, the second runs in a forked child (`Aside`) while the
parent plans the first; the parent then takes the child's result exactly where it would
have computed it, so the plan is the same either way. ``BBGRAP_HLS_PLAN_JOBS=1`` keeps all of
it in one process.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from bbgrap_hls.errors import BbgrapError

JOBS_ENV = "BBGRAP_HLS_PLAN_JOBS"
"""Environment variable: ``1`` plans in one process only."""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether `Aside` may start a child: not turned off (`JOBS_ENV`), a second core to run it
    on, the fork start method (POSIX), and no other thread in this process but ones marked
    ``fork_safe`` (a forked copy of a threaded process can deadlock on a lock another thread
    held; `bbgrap_hls.progress` marks its tickers, whose locks the child never takes: it
    reports no progress and writes nothing to the parent's streams)."""
    if os.environ.get(JOBS_ENV, "").strip() == "1" or _cores() < 2:
        return False
    me = threading.current_thread()
    if any(t is not me and not getattr(t, "fork_safe", False) for t in threading.enumerate()):
        return False  # (a thread may mark itself ``fork_safe``: the CLI's progress tickers)
    import multiprocessing as mp

    return "fork" in mp.get_all_start_methods()


class Aside:
    """``fn()`` computed in a forked child process, started at once (when `can_fork`), or
    else in this process when `result` asks for it.

    `result` returns ``fn``'s value or raises the tool's error it raised (`BbgrapError`: an
    infeasible plan is an answer, not a failure). When the child cannot start, dies, or
    fails otherwise, ``fn`` runs again here, so that the outcome, and any error with its
    traceback, is the same as without a child. ``portable`` trims the value before it is
    sent back (caches the parent can rebuild).
    """

    def __init__(self, fn: Callable[[], Any], portable: Callable[[Any], Any] | None = None) -> None:
        self.fn = fn
        self.proc = self.conn = None
        if not can_fork():
            return
        try:
            import multiprocessing as mp

            ctx = mp.get_context("fork")
            sys.stdout.flush()  # a forked child must not write the parent's buffered text again
            sys.stderr.flush()
            self.conn, child = ctx.Pipe(duplex=False)
            self.proc = ctx.Process(target=_child, args=(fn, portable, child, os.getpid()), daemon=True)
            self.proc.start()
            child.close()
        except (OSError, ValueError, AssertionError):  # AssertionError: a daemon has no children
            self.close()

    @property
    def started(self) -> bool:
        return self.proc is not None

    def result(self) -> Any:
        status = value = None
        if self.conn is not None:
            try:
                status, value = self.conn.recv()
            except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError):
                status = None  # the child died or sent something this process cannot read
            self.close()
        if status == "ok":
            return value
        if status == "raise":
            raise value
        return self.fn()

    def close(self) -> None:
        """Stop the child (at once if it is still working) and release the pipe."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
            self.proc = None


def detach_child(parent: int) -> None:
    """First steps of a forked helper child (`Aside`'s, gen's report child) of ``parent``.

    - Ctrl-C reaches the whole process group: the parent stops the child, which itself stays
      quiet instead of printing a second traceback (SIGINT ignored).
    - It dies with the parent (Linux ``PR_SET_PDEATHSIG``), and lets go of the parent's
      standard output and error at once (file descriptors 1 and 2 on the null device): a
      caller that reads the parent's output to its end (a test's ``communicate``, a pipe in
      a shell) is never kept waiting by a child that outlived it.
    - The parent's stream objects may be locked by a thread that did not come along (a
      progress ticker writing a line): the child writes nothing through them.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(0)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the child
    try:
        os.dup2(sys.stdout.fileno(), 1)
        os.dup2(sys.stdout.fileno(), 2)
    except OSError:
        pass


def _child(fn: Callable[[], Any], portable: Callable[[Any], Any] | None, conn, parent: int) -> None:
    detach_child(parent)
    try:
        value = fn()
        got = ("ok", portable(value) if portable else value)
    except BbgrapError as e:
        got = ("raise", e)
    except BaseException as e:  # the parent runs fn again and raises with a traceback
        got = ("failed", f"{type(e).__name__}: {e}")
    try:
        try:
            conn.send(got)
        except (pickle.PicklingError, TypeError, AttributeError, ValueError) as e:  # unpicklable: the parent redoes it
            conn.send(("failed", f"{type(e).__name__}: {e}"))
        conn.close()
    except OSError:
        pass  # the parent is gone or stopped listening: nobody waits for this result
