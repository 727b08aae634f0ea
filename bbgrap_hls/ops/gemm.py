"""Gemm: ``Y = alpha · A · B' + beta · C`` with a constant ``B`` (a dense layer).

``transA`` must be 0 (the activation streams as rows); ``transB`` selects ``B`` stored
as ``(K, N)`` (0) or ``(N, K)`` (1, PyTorch's Linear). The canonicalisation passes turn
it into a Dense op.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


@register
class Gemm(Op):
    kind = "Gemm"
    onnx_types = ("Gemm",)
    hls_kernel = "dense"
    rtl_module = "dense"

    def parse(self, onnx_node, attrs, graph):
        a = graph.tensor(onnx_node.input[0])
        b = graph.tensor(onnx_node.input[1])
        if int(attrs.get("transA", 0)) != 0:
            raise self.fail(onnx_node, "transA=1 is not supported (the activation must be A)")
        if b.data is None:
            raise self.fail(onnx_node, "B (the weights) must be a constant")
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise self.fail(onnx_node, f"A {a.shape} and B {b.shape} must be 2-D")
        trans_b = int(attrs.get("transB", 0))
        k, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
        if a.shape[1] != k:
            raise self.fail(onnx_node, f"A {a.shape} and B {b.shape} (transB={trans_b}) do not chain")
        if len(onnx_node.input) > 2 and onnx_node.input[2]:
            c = graph.tensor(onnx_node.input[2])
            try:
                if np.broadcast_shapes(c.shape, (a.shape[0], n)) != (a.shape[0], n):
                    raise ValueError
            except ValueError:
                raise self.fail(onnx_node, f"C {c.shape} does not broadcast to {(a.shape[0], n)}") from None
        return {"alpha": float(attrs.get("alpha", 1.0)), "beta": float(attrs.get("beta", 1.0)),
                "transB": trans_b}

    def infer(self, node, graph):
        b = graph.shape(node.inputs[1])
        return [(graph.shape(node.inputs[0])[0], b[0] if node.attrs["transB"] else b[1])]

    def run(self, node, inputs):
        a, b = inputs[0].astype(np.float64), inputs[1].astype(np.float64)
        if node.attrs["transB"]:
            b = b.T
        y = node.attrs["alpha"] * (a @ b)
        if len(inputs) > 2 and inputs[2] is not None:
            y = y + node.attrs["beta"] * inputs[2].astype(np.float64)
        return [y.astype(np.float32)]

    def macs(self, node, graph):
        m, k = graph.shape(node.inputs[0])
        return m * k * graph.shape(node.outputs[0])[1]
