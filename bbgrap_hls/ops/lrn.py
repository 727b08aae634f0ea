"""LRN (local response normalisation across channels), a host op.

``y = x / (bias + alpha / size · Σ x²)^beta`` over the channels
``[c - floor((size-1)/2), c + ceil((size-1)/2)]``.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


@register
class LRN(Op):
    kind = "LRN"
    onnx_types = ("LRN",)
    host_only = True

    def parse(self, onnx_node, attrs, graph):
        if "size" not in attrs or int(attrs["size"]) < 1:
            raise self.fail(onnx_node, "the size attribute must be a positive integer")
        if len(graph.tensor(onnx_node.input[0]).shape) < 3:
            raise self.fail(onnx_node, "input needs a channel axis and spatial axes")
        return {"size": int(attrs["size"]), "alpha": float(attrs.get("alpha", 1e-4)),
                "beta": float(attrs.get("beta", 0.75)), "bias": float(attrs.get("bias", 1.0))}

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def run(self, node, inputs):
        x = inputs[0].astype(np.float64)
        a = node.attrs
        lo, hi = (a["size"] - 1) // 2, -(-(a["size"] - 1) // 2)
        c = x.shape[1]
        sq = np.pad(x * x, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
        csum = np.concatenate([np.zeros_like(sq[:, :1]), np.cumsum(sq, axis=1)], axis=1)
        window = csum[:, lo + hi + 1: lo + hi + 1 + c] - csum[:, :c]
        return [(x / (a["bias"] + a["alpha"] / a["size"] * window) ** a["beta"]).astype(np.float32)]
