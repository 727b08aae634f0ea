"""MatMul with a constant 2-D weight as second input (a dense layer without bias).

The activation is 2-D ``(N, K)`` or N-D ``(1, ..., 1, T, K)`` with batch dimensions of 1.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


@register
class MatMul(Op):
    kind = "MatMul"
    onnx_types = ("MatMul",)
    hls_kernel = "dense"
    rtl_module = "dense"

    def parse(self, onnx_node, attrs, graph):
        a = graph.tensor(onnx_node.input[0])
        b = graph.tensor(onnx_node.input[1])
        if b.data is None:
            raise self.fail(onnx_node, "the second input (weights) must be a constant")
        if a.data is not None:
            raise self.fail(onnx_node, "the first input must be an activation")
        if len(b.shape) != 2:
            raise self.fail(onnx_node, f"weights must be 2-D, got {b.shape}")
        if len(a.shape) < 2 or any(d != 1 for d in a.shape[:-2]):
            raise self.fail(onnx_node, f"activation {a.shape} must be 2-D or have batch dimensions of 1")
        if a.shape[-1] != b.shape[0]:
            raise self.fail(onnx_node, f"A {a.shape} and B {b.shape} do not chain")
        return {}

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])[:-1] + graph.shape(node.inputs[1])[1:]]

    def run(self, node, inputs):
        return [(inputs[0].astype(np.float64) @ inputs[1].astype(np.float64)).astype(np.float32)]

    def macs(self, node, graph):
        a = graph.shape(node.inputs[0])
        return int(np.prod(a, dtype=np.int64)) * graph.shape(node.inputs[1])[1]
