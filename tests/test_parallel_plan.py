"""`search.parallel.Aside`: planning work in a forked second process gives what planning it
in one process gives (value, tool errors, other failures), and `make_plan` with it makes the
same plan as without it."""

from __future__ import annotations

import os
import time

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import make_plan
from bbgrap_hls.search.parallel import JOBS_ENV, Aside, can_fork
from tests import models

needs_fork = pytest.mark.skipif(not can_fork(), reason="no second core or no fork here")


@needs_fork
def test_the_value_comes_from_the_child():
    parent = os.getpid()
    aside = Aside(lambda: os.getpid())
    assert aside.started
    assert aside.result() not in (parent, None)


@needs_fork
def test_a_tool_error_in_the_child_is_raised_here():
    def fn():
        raise InfeasibleError("core 0 is short by 3 DSP")

    aside = Aside(fn)
    with pytest.raises(InfeasibleError, match="short by 3 DSP"):
        aside.result()


@needs_fork
def test_a_child_that_dies_or_fails_otherwise_is_redone_here():
    parent = os.getpid()

    def dies():
        if os.getpid() != parent:
            os._exit(3)
        return "here"

    assert Aside(dies).result() == "here"

    def fails():
        if os.getpid() != parent:
            raise RuntimeError("in the child")
        raise ValueError("in the parent")

    with pytest.raises(ValueError, match="in the parent"):  # the parent's own traceback
        Aside(fails).result()


@needs_fork
def test_close_stops_a_child_still_working():
    aside = Aside(lambda: time.sleep(60))
    t = time.monotonic()
    aside.close()
    assert time.monotonic() - t < 10 and not aside.started


def test_without_fork_the_work_runs_here(monkeypatch):
    monkeypatch.setenv(JOBS_ENV, "1")
    aside = Aside(lambda: os.getpid())
    assert not aside.started and aside.result() == os.getpid()


@needs_fork
@pytest.mark.parametrize("name,board", [("resnet8", "u250"), ("mobilenet_v1", "zcu102")])
def test_make_plan_is_the_same_with_the_second_process(tmp_path, monkeypatch, name, board):
    """The plan without packing made in the child is taken as if made here: the same plan
    (stable JSON) with and without the child; the child is used (its progress line)."""
    g = canonicalize(load_model(models.save(getattr(models, name)(), tmp_path / "m.onnx")))
    said: list[str] = []
    kw = dict(baselines=False, offchip_weights=board == "zcu102")
    forked = make_plan(g, load_board(board), progress=said.append, **kw)
    assert any("second process" in s for s in said)
    monkeypatch.setenv(JOBS_ENV, "1")
    said.clear()
    alone = make_plan(g, load_board(board), progress=said.append, **kw)
    assert not any("second process" in s for s in said)
    assert forked.to_json(stable=True) == alone.to_json(stable=True)


@needs_fork
def test_no_child_beside_another_thread_unless_it_is_marked_fork_safe():
    """A thread that may hold a lock at the fork keeps planning in one process; the CLI's
    progress tickers (`bbgrap_hls.progress`, marked ``fork_safe``) do not."""
    import threading

    from bbgrap_hls import progress

    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert not can_fork()
        other.fork_safe = True
        assert can_fork()
    finally:
        stop.set()
        other.join()
    with progress.task("planning (test)", ticker=True) as t:
        assert t._thread is None or t._thread.fork_safe  # quiet mode starts no ticker
        assert can_fork()


@needs_fork
def test_tables_built_in_the_child_are_the_ones_built_here(tmp_path, monkeypatch):
    """`prefetch.prefetch` builds about half the missing tables, and the off-chip blocks'
    one-input-slot rows (`Table.extra`, with ``extras``), in a forked child: the problem's
    tables and extra rows are the same, row for row, as those built in one process (the
    caches cleared before each), and cached before any program asks for them."""
    import numpy as np

    from bbgrap_hls.search import build_problem, parallel, prefetch, tables

    g = canonicalize(load_model(models.save(models.resnet8(), tmp_path / "m.onnx")))
    board = load_board("u250")
    built: list = []
    started = []  # per Aside prefetch made: whether its child started

    class Watched(parallel.Aside):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            started.append(self.started)

    monkeypatch.setattr(parallel, "Aside", Watched)  # (prefetch imports it when it runs)
    monkeypatch.setattr(prefetch, "PREFETCH_ASIDE", 2)
    for jobs in ("", "1"):
        monkeypatch.setenv(JOBS_ENV, jobs)
        tables._TABLES.clear()
        tables._EXTRAS.clear()
        prob = build_problem(g, board, offchip_weights=True, extras=True)
        keys = [tables._extra_key(u.table.extra_key) for u in prob.units if u.table.extra_key is not None]
        assert keys and all(k in tables._EXTRAS for k in keys)  # built with the tables
        assert any(tables._EXTRAS[k] is not None for k in keys)
        built.append([t for u in prob.units for t in (u.table, *u.split_tables.values(), *u.part_tables.values())]
                     + [tables._EXTRAS[k] for k in keys if tables._EXTRAS[k] is not None])
    assert started[0] and not started[-1]  # the first build used a child, the second did not
    assert len(built[0]) == len(built[1])
    for a, b in zip(*built, strict=True):
        for f in ("pe", "simd", "ii", "res", "ddr", "mmv", "lut", "lutw", "lutrq", "padded", "uram", "in1", "stage"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f


def test_prefetch_halves_split_the_work_evenly_in_order(monkeypatch):
    """`prefetch._halves`: every job once, each half in the jobs' order, the halves' estimated
    work within the largest job of each other (longest first to the lighter half)."""
    from bbgrap_hls.search import prefetch

    jobs = [(False, k) for k in range(40)]
    work = {k: float((k * 37) % 23 + 1) for k in range(40)}
    monkeypatch.setattr(prefetch, "_work", lambda job: work[job[1]])
    a, b = prefetch._halves(jobs)
    assert sorted(a + b) == jobs and not set(a) & set(b)
    assert a == sorted(a) and b == sorted(b)
    wa, wb = sum(work[k] for _, k in a), sum(work[k] for _, k in b)
    assert abs(wa - wb) <= max(work.values())


@needs_fork
def test_a_child_lets_go_of_the_output_and_dies_with_its_parent():
    """A parent that dies (or is killed) with its child still working: whoever reads the
    parent's output to its end is not kept waiting, and no child is left running."""
    import subprocess
    import sys

    code = ("import os, time\n"
            "from bbgrap_hls.search.parallel import Aside\n"
            "a = Aside(lambda: time.sleep(60))\n"
            "assert a.started\n"
            "print(a.proc.pid, flush=True)\n"
            "time.sleep(0.5)\n"
            "os._exit(0)\n")  # no clean-up: the child outlives it unless it dies with it
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - t0 < 20  # (without the fix: the child's 60 s)
    child = int(out.stdout.split()[0])
    for _ in range(50):
        try:
            state = open(f"/proc/{child}/stat").read().split(")")[-1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"child {child} still running after its parent died")
