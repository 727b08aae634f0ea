"""Softmax, a host op. Opset < 13 flattens to 2-D at ``axis`` (default 1); opset 13 on
normalises along ``axis`` alone (default -1)."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import norm_axis


@register
class Softmax(Op):
    kind = "Softmax"
    onnx_types = ("Softmax",)
    host_only = True

    def parse(self, onnx_node, attrs, graph):
        rank = len(graph.tensor(onnx_node.input[0]).shape)
        legacy = graph.opset < 13
        axis = norm_axis(attrs.get("axis", 1 if legacy else -1), rank, lambda m: self.fail(onnx_node, m))
        return {"axis": axis, "flatten": legacy}

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def run(self, node, inputs):
        x = inputs[0].astype(np.float64)
        axis = node.attrs["axis"]
        if node.attrs["flatten"]:
            y = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
            axes: int | tuple = 1
        else:
            y, axes = x, axis
        e = np.exp(y - y.max(axis=axes, keepdims=True))
        return [(e / e.sum(axis=axes, keepdims=True)).reshape(x.shape).astype(np.float32)]
