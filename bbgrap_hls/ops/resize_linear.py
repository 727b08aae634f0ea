"""Bilinear Resize / Upsample with integer scales on H and W (``mode = "linear"``).

Accepted: ``mode = "linear"`` (Resize-11+, or ``"linear"``/``"bilinear"`` of Upsample and
Resize-10, which are ``asymmetric``), an (N, C, H, W) input, scales (or sizes) that are
integers >= 1 on H and W and 1 on N and C, and ``coordinate_transformation_mode`` one of
``half_pixel`` / ``pytorch_half_pixel`` (torch ``align_corners=False``, TF2), ``align_corners``
(torch ``align_corners=True``), ``asymmetric`` (TF1 ``resize_bilinear``, ONNX Upsample) or
``half_pixel_symmetric`` (equal to ``half_pixel`` at integer scales). Refused with one line
naming node, attribute and value: other modes and coordinate transformations, non-integer or
channel scales, ``antialias``, ``exclude_outside``. Source coordinates outside the input are
clamped to its border, as onnxruntime does.

Resize.lower turns a linear Resize into this kind (``ResizeBilinear``), so the op keeps its
own cost block, kernels and int8 reference. Int8 (docs/numerics.md): a move op (output shares
the input's scale; the weights sum to one, so the zero point cancels) with per-axis weights
``round_half_up(frac · 2^8)``: ``y = (Σ wy_i·wx_j·x_ij + 2^15) >> 16`` (exact for the dyadic
weights of half_pixel and asymmetric at scales up to 128).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from bbgrap_hls.ops.base import Op, register

#: fractional bits of each axis's weights (``w0 + w1 = 2^FRAC``)
FRAC = 8
COORDS = ("half_pixel", "pytorch_half_pixel", "half_pixel_symmetric", "align_corners", "asymmetric")


def source(o: int, s: int, n_in: int, coord: str) -> Fraction:
    """The exact input coordinate of output index ``o`` (integer scale ``s``), before clamping."""
    n_out = n_in * s
    if coord in ("half_pixel", "half_pixel_symmetric"):
        return Fraction(2 * o + 1, 2 * s) - Fraction(1, 2)
    if coord == "pytorch_half_pixel":
        return Fraction(2 * o + 1, 2 * s) - Fraction(1, 2) if n_out > 1 else Fraction(0)
    if coord == "align_corners":
        return Fraction(o * (n_in - 1), n_out - 1) if n_out > 1 else Fraction(0)
    return Fraction(o, s)  # asymmetric


def taps(n_in: int, s: int, coord: str) -> np.ndarray:
    """Integer taps of one axis: rows ``(i0, i1, w0, w1)`` per output index, ``w0 + w1 = 2^FRAC``,
    ``i1 = i0`` wherever ``w1 = 0`` (the hardware then needs only row ``i0``)."""
    one = 1 << FRAC
    rows = []
    for o in range(n_in * s):
        x = min(max(source(o, s, n_in, coord), Fraction(0)), Fraction(n_in - 1))  # clamp at the borders
        i0 = math.floor(x)
        w1 = math.floor((x - i0) * one + Fraction(1, 2))  # round half up
        i1 = min(i0 + 1, n_in - 1) if w1 else i0
        rows.append((i0, i1, one - w1, w1))
    return np.array(rows, np.int64)


def _matrix(n_in: int, s: int, coord: str) -> np.ndarray:
    """The exact float interpolation matrix of one axis (n_out x n_in)."""
    a = np.zeros((n_in * s, n_in))
    for o in range(n_in * s):
        x = min(max(source(o, s, n_in, coord), Fraction(0)), Fraction(n_in - 1))
        i0 = math.floor(x)
        f = float(x - i0)
        a[o, i0] += 1 - f
        if f:
            a[o, i0 + 1] += f
    return a


def parse_linear(op: Op, onnx_node, attrs, shape, coord: str, what: str, vals: list[float], axes: list[int]) -> dict:
    """Node attributes of a linear Resize (``Resize.parse`` has read scales or sizes)."""
    rank = len(shape)
    if coord not in COORDS:
        raise op.fail(onnx_node, f"attribute coordinate_transformation_mode = '{coord}' is not supported "
                      f"with mode 'linear' (supported: {', '.join(COORDS)})")
    if int(attrs.get("exclude_outside", 0)):
        raise op.fail(onnx_node, f"attribute exclude_outside = {attrs['exclude_outside']} is not supported")
    if rank != 4:
        raise op.fail(onnx_node, f"mode = 'linear' on a rank-{rank} input: only (N, C, H, W) is supported")
    factor = [1] * rank
    for a, v in zip(axes, vals, strict=True):
        f = v if what == "scales" else v / shape[a]
        if f != int(f) or f < 1:
            raise op.fail(onnx_node, f"{what} = [{', '.join(f'{u:g}' for u in vals)}]: linear resizing needs "
                          f"integer scales >= 1 (axis {a}: {f:g})")
        factor[a] = int(f)
    if factor[0] != 1 or factor[1] != 1:
        raise op.fail(onnx_node, f"{what} = [{', '.join(f'{u:g}' for u in vals)}]: only the spatial axes of an "
                      "(N, C, H, W) tensor may be resized")
    return {"scales": tuple(factor[2:]), "mode": "linear", "coord": coord}


@register
class ResizeBilinear(Op):
    kind = "ResizeBilinear"
    onnx_types = ()
    hls_kernel = "bilinear2d"
    rtl_module = "bilinear"
    cost_block = "bilinear"

    def infer(self, node, graph):
        s = graph.shape(node.inputs[0])
        return [s[:2] + tuple(d * f for d, f in zip(s[2:], node.attrs["scales"], strict=True))]

    def axis_taps(self, node, shape) -> tuple[np.ndarray, np.ndarray]:
        """``taps`` of H and W for an input of ``shape`` (N, C, H, W)."""
        (sh, sw), coord = node.attrs["scales"], node.attrs["coord"]
        return taps(shape[2], sh, coord), taps(shape[3], sw, coord)

    def run(self, node, inputs):
        x = inputs[0]
        (sh, sw), coord = node.attrs["scales"], node.attrs["coord"]
        ah, aw = _matrix(x.shape[2], sh, coord), _matrix(x.shape[3], sw, coord)
        y = np.einsum("oh,nchw,pw->ncop", ah, x.astype(np.float64), aw)
        return [y.astype(x.dtype)]

    def run_int8(self, node, inputs, graph):
        """``y = (Σ wy·wx·x + 2^(2·FRAC−1)) >> 2·FRAC`` on the codes (one shared scale)."""
        x = inputs[0].astype(np.int64)
        th, tw = self.axis_taps(node, x.shape)
        v = th[:, 2, None] * x[:, :, th[:, 0], :] + th[:, 3, None] * x[:, :, th[:, 1], :]  # (N, C, HO, W)
        acc = tw[:, 2] * v[..., tw[:, 0]] + tw[:, 3] * v[..., tw[:, 1]]  # (N, C, HO, WO)
        y = (acc + (1 << (2 * FRAC - 1))) >> (2 * FRAC)
        return [y.astype(np.int8)]

    def params(self, node, graph):
        return 0

    def macs(self, node, graph):
        return 0
