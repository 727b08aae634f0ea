"""codegen.rtl_layers.pack (the $readmemh words of the RTL twin's memories): the vectorised
path for whole-byte lanes against lane-by-lane integer arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from bbgrap_hls.codegen.rtl_layers import pack


def _words(rows, bits: int) -> list[int]:
    mask = (1 << bits) - 1
    out = []
    for row in np.asarray(rows).tolist():
        w = 0
        for i, v in enumerate(row):
            w |= (int(v) & mask) << (i * bits)
        out.append(w)
    return out


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (3, 64), (0, 4)])
def test_pack_matches_lane_arithmetic(bits, shape):
    rng = np.random.default_rng(bits * 100 + shape[1])
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    a = rng.integers(lo, hi, size=shape, dtype=np.int64, endpoint=True)
    if a.size:
        a.flat[0], a.flat[-1] = lo, hi  # the extremes
    assert pack(a, bits) == _words(a, bits)
    if bits == 8:
        assert pack(a.astype(np.int8), 8) == _words(a, 8)


def test_pack_other_widths_and_objects():
    a = np.array([[1, -1, 3], [7, 0, -8]])
    assert pack(a, 4) == _words(a, 4)  # not whole bytes: the lane loop
    big = np.array([[(1 << 63) + 5, 3]], dtype=object)  # 64-bit words as Python ints
    assert pack(big, 64) == _words(big, 64)


def test_pack_of_views():
    """Transposed, strided and broadcast arrays (as the codegen passes bias rows) pack as copies do."""
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, size=(6, 4), dtype=np.int64)
    for v in (a.T, a[::2], a[:, ::-1], np.broadcast_to(np.arange(3, dtype=np.int64), (5, 3))):
        for bits in (8, 32, 64):
            assert pack(v, bits) == _words(np.array(v), bits)
