"""Relu: max(x, 0). Fused into the producer's requantisation when it follows one."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


@register
class Relu(Op):
    kind = "Relu"
    onnx_types = ("Relu",)
    hls_kernel = "lut_act"
    rtl_module = "lut_act"

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def run(self, node, inputs):
        return [np.maximum(inputs[0], 0).astype(inputs[0].dtype)]
