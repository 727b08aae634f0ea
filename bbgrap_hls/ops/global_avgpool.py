"""GlobalAveragePool: mean over all spatial axes, keeping them as size 1."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


@register
class GlobalAveragePool(Op):
    kind = "GlobalAveragePool"
    onnx_types = ("GlobalAveragePool",)
    hls_kernel = "global_avgpool"
    rtl_module = "global_avgpool"

    def parse(self, onnx_node, attrs, graph):
        x = graph.tensor(onnx_node.input[0])
        if len(x.shape) < 3:
            raise self.fail(onnx_node, f"input {x.shape} has no spatial axes")
        return {}

    def infer(self, node, graph):
        s = graph.shape(node.inputs[0])
        return [s[:2] + (1,) * (len(s) - 2)]

    def run(self, node, inputs):
        x = inputs[0]
        axes = tuple(range(2, x.ndim))
        return [x.astype(np.float64).mean(axis=axes, keepdims=True).astype(np.float32)]
