"""Off-chip weights on the HLS path: the kernel (hw/hls/conv_offchip.h) against the integer
reference, and gen + csim end to end on a plan that keeps weights in board memory.

The kernel cases reuse tests/test_hls_kernels.py's numpy models: the same conv/dense layer,
its weights laid out as the off-chip image (the on-chip ROM's words back to back, after
other layers' beats), every case two frames.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from bbgrap_hls.codegen.fold import wide_words
from tests.test_hls_kernels import FRAMES, _conv_case, _dense_case, assert_bit_exact, run_cases

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]
BEAT = 64  # bb::DDR_BEAT


def _offchip(case, off_beats: int, uram: int, rng):
    """Turn an on-chip conv/dense case into its off-chip twin: the weights as a byte image
    (``off_beats`` beats of other data first, the words, padding to a whole beat)."""
    words = wide_words(case.consts.pop("w")).astype(np.int8)
    pad = -words.size % BEAT
    img = np.concatenate([rng.integers(-128, 128, off_beats * BEAT, dtype=np.int8), words.reshape(-1),
                          rng.integers(-128, 128, pad, dtype=np.int8)])
    case.consts = {"img": img, **case.consts}
    case.decls = re.sub(r"; \};$", f", OFF = {off_beats}, URAM = {uram}; }};", case.decls)
    kern = "conv2d_offchip" if "bb::conv2d<P>" in case.body else "dense_offchip"
    case.body = (f"  bb::{kern}<P>(in0, out, reinterpret_cast<const bb::Word<bb::DDR_BEAT>*>(img), "
                 f"bias, mult, shift, {FRAMES});")
    case.name += "_offchip"
    return case


def offchip_cases():
    rng = np.random.default_rng(77)
    return [
        # padded and strided, a tall kernel; pe·simd = 6 bytes a word (many words a beat)
        _offchip(_conv_case("conv_stride_pads", rng, 7, 6, 4, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 2, 3),
                 3, 0, rng),
        # 3x3 "same" conv, dilated, words of exactly one beat
        _offchip(_conv_case("conv_dilated", rng, 8, 7, 8, 16, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 8, 8),
                 0, 1, rng),
        # words wider than a beat (pe·simd = 128), a grouped conv (block-diagonal weights)
        _offchip(_conv_case("conv_wide", rng, 5, 5, 16, 16, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 16, 8, group=2),
                 1, 0, rng),
        # 1x1, one fold (NF = 1: no prefetch)
        _offchip(_conv_case("conv1x1", rng, 4, 4, 8, 16, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 4, 16), 0, 0, rng),
        _offchip(_dense_case("dense", rng, 48, 10, 12, 5), 2, 0, rng),
        _offchip(_dense_case("dense_wide", rng, 96, 8, 96, 2), 0, 0, rng),
    ]


@pytest.fixture(scope="module")
def kernel_outputs(tmp_path_factory):
    return run_cases(offchip_cases(), tmp_path_factory.mktemp("offchip"), "off-chip kernel")


@pytest.mark.parametrize("name", [c.name for c in offchip_cases()])
def test_offchip_kernel_bit_exact(kernel_outputs, name):
    assert_bit_exact(name, *kernel_outputs[name])
