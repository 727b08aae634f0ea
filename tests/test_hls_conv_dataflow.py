"""bb::conv2d / bb::conv2d_mmv as DATAFLOW regions (window generator ∥ MVU).

Bit-exactness is tested by tests/test_hls_kernels.py and tests/test_hls_mmv.py; this
checks that both kernels compile with the HLS pragmas switched on (BB_FORCE_HLS_PRAGMAS)
and that the pragmas the schedule relies on reach the compiler.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.test_hls_kernels import hls_dir

pytestmark = pytest.mark.csim  # needs g++

SRC = """#include "bbgrap.h"
struct P { static constexpr int H = 6, W = 5, C = 4, CO = 12, KH = 3, KW = 3, SH = 1, SW = 1, DH = 1, DW = 1,
  PT = 1, PL = 1, PB = 1, PR = 1, SIMD = 2, PE = 2, ZP_IN = 3, ZP_OUT = -7, LO = -100, HI = 120, M = 3; };
static bb::Word<4> w[6 * 18];
static int32_t bias[2][6], mult[2][6], shift[2][6];
void one(bb::Stream<2>& in, bb::Stream<2>& out, int f) { bb::conv2d<P>(in, out, w, bias, mult, shift, f); }
void mmv(bb::Stream<2>& in, bb::Stream<12>& out, int f) { bb::conv2d_mmv<P>(in, out, w, bias, mult, shift, f); }
"""

FLAGS = ["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-DBB_FORCE_HLS_PRAGMAS"]


def test_conv_dataflow_pragmas(tmp_path):
    src = tmp_path / "c.cpp"
    src.write_text(SRC)
    # unknown pragmas and loop labels are expected with the pragmas on (g++ knows neither)
    r = subprocess.run(FLAGS + ["-Wno-unknown-pragmas", "-Wno-unused-label", "-I", str(hls_dir()), "-c", str(src),
                                "-o", str(tmp_path / "c.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run(FLAGS + ["-E", "-I", str(hls_dir()), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    text = r.stdout
    body = text[text.index("void conv2d("):text.index("void conv_mvu_mmv(")]
    assert "#pragma HLS DATAFLOW" in body
    assert re.search(r"#pragma HLS STREAM variable = win depth = WIN_DEPTH", body)
    assert re.search(r"conv_swg<P>\(in, win, frames\);\s*conv_mvu<P>\(win, out,", body)
    mmv_body = text[text.index("void conv2d_mmv("):]
    assert "#pragma HLS DATAFLOW" in mmv_body
    assert re.search(r"conv_swg<P>\(in, win, frames\);\s*conv_mvu_mmv<P>\(win, out,", mmv_body)
