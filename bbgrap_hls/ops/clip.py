"""Clip: ``min(max(x, lo), hi)``; bounds from attributes (opset < 11) or constant inputs.

An omitted bound is infinite. The canonicalisation passes turn Clip(0, 6) into Relu6; any
other Clip is a lookup-table activation on the fabric.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import optional_const


@register
class Clip(Op):
    kind = "Clip"
    onnx_types = ("Clip",)
    hls_kernel = "lut_act"
    rtl_module = "lut_act"

    def parse(self, onnx_node, attrs, graph):
        if graph.opset < 11:
            lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
        else:
            if "min" in attrs or "max" in attrs:
                raise self.fail(onnx_node, f"opset {graph.opset} takes min/max as inputs, not attributes")
            lo_v = optional_const(graph, onnx_node, 1, self, "min")
            hi_v = optional_const(graph, onnx_node, 2, self, "max")
            for v, what in ((lo_v, "min"), (hi_v, "max")):
                if v is not None and v.size != 1:
                    raise self.fail(onnx_node, f"{what} must be a scalar, got shape {v.shape}")
            lo = -np.inf if lo_v is None else lo_v.item()
            hi = np.inf if hi_v is None else hi_v.item()
        lo, hi = float(lo), float(hi)
        if lo > hi:
            raise self.fail(onnx_node, f"min {lo} is above max {hi}")
        return {"min": lo, "max": hi}

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def run(self, node, inputs):
        x = inputs[0]
        return [np.minimum(np.maximum(x, node.attrs["min"]), node.attrs["max"]).astype(x.dtype)]

    def params(self, node, graph):
        return 0  # the bounds are attributes of the activation, not weights
