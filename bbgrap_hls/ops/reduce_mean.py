"""ReduceMean over constant axes (attribute, or input from opset 18), with keepdims.

Over the spatial axes of an NCHW tensor it is a global average pool (the canonicalisation
passes rewrite it so); other axes run only in the float reference.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import norm_axis, optional_const


@register
class ReduceMean(Op):
    kind = "ReduceMean"
    onnx_types = ("ReduceMean",)
    hls_kernel = "global_avgpool"
    rtl_module = "global_avgpool"

    def parse(self, onnx_node, attrs, graph):
        rank = len(graph.tensor(onnx_node.input[0]).shape)
        if graph.opset >= 18:
            if "axes" in attrs:
                raise self.fail(onnx_node, f"opset {graph.opset} takes axes as an input, not an attribute")
            axes = optional_const(graph, onnx_node, 1, self, "axes")
        else:
            axes = attrs.get("axes")
        if axes is None or len(axes) == 0:
            if int(attrs.get("noop_with_empty_axes", 0)):
                raise self.fail(onnx_node, "noop_with_empty_axes with no axes is an identity: not supported")
            axes = range(rank)
        fail = lambda m: self.fail(onnx_node, m)  # noqa: E731
        norm = sorted({norm_axis(a, rank, fail) for a in np.asarray(axes).ravel().tolist()})
        return {"axes": tuple(norm), "keepdims": bool(attrs.get("keepdims", 1))}

    def infer(self, node, graph):
        s, axes = graph.shape(node.inputs[0]), node.attrs["axes"]
        if node.attrs["keepdims"]:
            return [tuple(1 if i in axes else d for i, d in enumerate(s))]
        return [tuple(d for i, d in enumerate(s) if i not in axes)]

    def run(self, node, inputs):
        y = inputs[0].astype(np.float64).mean(axis=node.attrs["axes"], keepdims=node.attrs["keepdims"])
        return [np.asarray(y, np.float32)]

    def params(self, node, graph):
        return 0  # the axes input is configuration
