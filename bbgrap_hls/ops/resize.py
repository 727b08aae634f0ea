"""Resize / Upsample in nearest mode with integer scales: every pixel repeated ``sh × sw``.

Linear mode (bilinear) is parsed here and lowered to its own kind, ``ResizeBilinear``
(ops/resize_linear.py). Accepted in nearest mode: ``mode = "nearest"``, scales (or sizes) that are integers >= 1 on H and W and 1 on
N and C, and a coordinate transformation with a nearest rounding that maps output index
``o`` to input index ``o // s`` on every axis (checked exactly, with rationals, for the
model's sizes: e.g. ``asymmetric`` + ``floor`` as torch's ``nn.Upsample(mode="nearest")``
exports it, or ``half_pixel`` + ``round_prefer_floor``). Anything else (linear, cubic,
non-integer scales, a mapping that is not a plain repetition) is refused with one line
naming the node, the attribute and its value. The loader keeps only the data input.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from bbgrap_hls.ops.base import Op, get_op, register
from bbgrap_hls.ops.resize_linear import parse_linear
from bbgrap_hls.ops.util import optional_const

_ROUND = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_COORD = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
          "tf_half_pixel_for_nn")


def _source(o: int, s: int, n_in: int, coord: str) -> Fraction:
    """The input coordinate of output index ``o`` (scale ``s``, ``n_in`` inputs), exactly."""
    n_out = n_in * s
    if coord in ("half_pixel", "half_pixel_symmetric"):  # symmetric: no offset at integer scales
        return Fraction(2 * o + 1, 2 * s) - Fraction(1, 2)
    if coord == "pytorch_half_pixel":
        return Fraction(2 * o + 1, 2 * s) - Fraction(1, 2) if n_out > 1 else Fraction(0)
    if coord == "align_corners":
        return Fraction(o * (n_in - 1), n_out - 1) if n_out > 1 else Fraction(0)
    if coord == "tf_half_pixel_for_nn":
        return Fraction(2 * o + 1, 2 * s)
    return Fraction(o, s)  # asymmetric


def _nearest(x: Fraction, mode: str) -> int:
    fl = math.floor(x)
    frac = x - fl
    if frac == 0 or mode == "floor":
        return fl
    if mode == "ceil":
        return fl + 1
    if frac == Fraction(1, 2):
        return fl if mode == "round_prefer_floor" else fl + 1
    return fl + (frac > Fraction(1, 2))


def repeats(n_in: int, s: int, coord: str, mode: str) -> bool:
    """Whether nearest resizing by integer ``s`` maps every output ``o`` to input ``o // s``."""
    return all(min(max(_nearest(_source(o, s, n_in, coord), mode), 0), n_in - 1) == o // s
               for o in range(n_in * s))


@register
class Resize(Op):
    kind = "Resize"
    onnx_types = ("Resize", "Upsample")
    hls_kernel = "upsample2d"
    rtl_module = "upsample"

    def parse(self, onnx_node, attrs, graph):
        shape = graph.tensor(onnx_node.input[0]).shape
        rank = len(shape)
        mode = attrs.get("mode", "nearest")
        if mode == "bilinear" and onnx_node.op_type == "Upsample":
            mode = "linear"
        if mode not in ("nearest", "linear"):
            raise self.fail(onnx_node, f"attribute mode = '{mode}': only 'nearest' and 'linear' are supported")
        upsample = onnx_node.op_type == "Upsample"
        if upsample or graph.opset < 11:
            coord, rounding = "asymmetric", "floor"  # Upsample and Resize-10: floor(o / scale)
            if upsample and graph.opset < 9:
                scales, sizes = attrs.get("scales"), None
            else:
                scales, sizes = optional_const(graph, onnx_node, 1, self, "scales"), None
        else:
            coord = attrs.get("coordinate_transformation_mode", "half_pixel")
            rounding = attrs.get("nearest_mode", "round_prefer_floor")
            scales = optional_const(graph, onnx_node, 2, self, "scales")
            sizes = optional_const(graph, onnx_node, 3, self, "sizes")
        if coord not in _COORD and mode == "nearest":
            raise self.fail(onnx_node, f"attribute coordinate_transformation_mode = '{coord}' is not supported")
        if rounding not in _ROUND and mode == "nearest":
            raise self.fail(onnx_node, f"attribute nearest_mode = '{rounding}' is not supported")
        if int(attrs.get("antialias", 0)):
            raise self.fail(onnx_node, f"attribute antialias = {attrs['antialias']} is not supported")
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        axes = [int(a) % rank for a in attrs.get("axes", range(rank))]
        if scales is not None and np.size(scales) == 0:
            scales = None
        if sizes is not None and np.size(sizes) == 0:
            sizes = None
        if (scales is None) == (sizes is None):
            raise self.fail(onnx_node, "exactly one of scales and sizes is required")
        if sizes is not None and policy != "stretch" and len(axes) > 1:
            raise self.fail(onnx_node, f"attribute keep_aspect_ratio_policy = '{policy}' is not supported")
        what, vals = ("scales", scales) if scales is not None else ("sizes", sizes)
        vals = [float(v) for v in np.ravel(vals)]
        if len(vals) != len(axes):
            raise self.fail(onnx_node, f"{what} = {vals}: one value per axis of {axes} expected")
        if mode == "linear":
            return parse_linear(self, onnx_node, attrs, shape, coord, what, vals, axes)
        factor = [1] * rank
        for a, v in zip(axes, vals, strict=True):
            f = v if what == "scales" else v / shape[a]
            if f != int(f) or f < 1:
                raise self.fail(onnx_node, f"{what} = {_fmt(vals)}: nearest resizing needs integer scales >= 1 "
                                f"(axis {a}: {f:g})")
            factor[a] = int(f)
        if rank < 3 or factor[0] != 1 or factor[1] != 1:
            raise self.fail(onnx_node, f"{what} = {_fmt(vals)}: only the spatial axes of an (N, C, ...) tensor "
                            "may be resized")
        for a in range(2, rank):
            if factor[a] > 1 and not repeats(shape[a], factor[a], coord, rounding):
                raise self.fail(onnx_node, f"attribute coordinate_transformation_mode = '{coord}' with nearest_mode "
                                f"= '{rounding}' at scale {factor[a]}: not a repetition of each pixel")
        return {"scales": tuple(factor[2:])}

    def infer(self, node, graph):
        if node.attrs.get("mode") == "linear":
            return get_op("ResizeBilinear").infer(node, graph)
        s = graph.shape(node.inputs[0])
        return [s[:2] + tuple(d * f for d, f in zip(s[2:], node.attrs["scales"], strict=True))]

    def run(self, node, inputs):
        y = inputs[0]
        for a, f in enumerate(node.attrs["scales"]):
            if f > 1:
                y = np.repeat(y, f, axis=2 + a)
        return [np.ascontiguousarray(y)]

    def params(self, node, graph):
        return 0

    def lower(self, node, graph):
        """Keep only the data input (roi, scales and sizes are in the attributes); a linear
        Resize becomes a ``ResizeBilinear`` node (ops/resize_linear.py)."""
        node.inputs = node.inputs[:1]
        if node.attrs.get("mode") == "linear":
            node.op = "ResizeBilinear"
        return [node]

    def fabric_limit(self, node, graph) -> str | None:
        if len(graph.shape(node.inputs[0])) != 4:
            return "only the 2-D upsampling of an (N, C, H, W) tensor streams"
        return None


def _fmt(vals: list[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in vals) + "]"
