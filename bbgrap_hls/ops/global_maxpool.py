"""GlobalMaxPool: maximum over all spatial axes, keeping them as size 1."""

from __future__ import annotations

from bbgrap_hls.ops.base import Op, register


@register
class GlobalMaxPool(Op):
    kind = "GlobalMaxPool"
    onnx_types = ("GlobalMaxPool",)
    hls_kernel = "global_maxpool"
    rtl_module = "gmaxpool"

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
        return [x.max(axis=tuple(range(2, x.ndim)), keepdims=True)]
