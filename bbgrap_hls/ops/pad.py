"""Pad in constant mode: pads and value from attributes (opset < 11) or constant inputs.

Negative pads crop. Zero padding in front of a Conv is merged into the Conv's own pads by
the canonicalisation passes; other pads run only in the float reference.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import norm_axis, optional_const


@register
class Pad(Op):
    kind = "Pad"
    onnx_types = ("Pad",)

    def parse(self, onnx_node, attrs, graph):
        s = graph.tensor(onnx_node.input[0]).shape
        rank = len(s)
        mode = attrs.get("mode", "constant")
        if mode != "constant":
            raise self.fail(onnx_node, f"mode '{mode}' is not supported (only 'constant')")
        if graph.opset < 11:
            pads, value, axes = attrs.get("pads"), float(attrs.get("value", 0.0)), None
        else:
            pads = optional_const(graph, onnx_node, 1, self, "pads")
            v = optional_const(graph, onnx_node, 2, self, "constant_value")
            if v is not None and v.size != 1:
                raise self.fail(onnx_node, f"constant_value must be a scalar, got shape {v.shape}")
            value = 0.0 if v is None else float(v.item())
            axes = optional_const(graph, onnx_node, 3, self, "axes")
        if pads is None:
            raise self.fail(onnx_node, "pads are required")
        pads = [int(p) for p in np.asarray(pads).ravel()]
        fail = lambda m: self.fail(onnx_node, m)  # noqa: E731
        axes = list(range(rank)) if axes is None else [norm_axis(a, rank, fail) for a in axes.ravel()]
        if len(pads) != 2 * len(axes):
            raise self.fail(onnx_node, f"{len(pads)} pads for {len(axes)} axes (need 2 per axis)")
        begin, end = [0] * rank, [0] * rank
        for k, a in enumerate(axes):
            begin[a], end[a] = pads[k], pads[k + len(axes)]
        shape = tuple(d + b + e for d, b, e in zip(s, begin, end, strict=False))
        if min(shape) < 1:
            raise self.fail(onnx_node, f"pads {pads} crop shape {s} to nothing")
        return {"begin": tuple(begin), "end": tuple(end), "value": value, "shape": shape}

    def infer(self, node, graph):
        return [node.attrs["shape"]]

    def run(self, node, inputs):
        x, a = inputs[0], node.attrs
        grow = [(max(b, 0), max(e, 0)) for b, e in zip(a["begin"], a["end"], strict=False)]
        y = np.pad(x, grow, constant_values=a["value"])
        crop = tuple(slice(-min(b, 0), y.shape[i] + min(e, 0))
                     for i, (b, e) in enumerate(zip(a["begin"], a["end"], strict=False)))
        return [np.ascontiguousarray(y[crop])]

    def params(self, node, graph):
        return 0  # pads and value are configuration
