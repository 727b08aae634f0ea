"""Concat along one axis (the channel axis in inception-style blocks)."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import norm_axis


@register
class Concat(Op):
    kind = "Concat"
    onnx_types = ("Concat",)
    hls_kernel = "concat"
    rtl_module = "concat"

    def parse(self, onnx_node, attrs, graph):
        shapes = [graph.tensor(i).shape for i in onnx_node.input if i]
        if not shapes:
            raise self.fail(onnx_node, "needs at least one input")
        if "axis" not in attrs:
            raise self.fail(onnx_node, "the axis attribute is required")
        rank = len(shapes[0])
        axis = norm_axis(attrs["axis"], rank, lambda m: self.fail(onnx_node, m))
        for s in shapes:
            if len(s) != rank or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]:
                raise self.fail(onnx_node, f"input shapes {shapes} differ outside axis {axis}")
        return {"axis": axis}

    def infer(self, node, graph):
        shapes = [graph.shape(i) for i in node.inputs if i]
        a = node.attrs["axis"]
        return [shapes[0][:a] + (sum(s[a] for s in shapes),) + shapes[0][a + 1:]]

    def run(self, node, inputs):
        return [np.concatenate([x for x in inputs if x is not None], axis=node.attrs["axis"])]
