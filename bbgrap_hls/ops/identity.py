"""Identity and Dropout (inference: the identity). Both are removed by canonicalisation.

Dropout's mask output and a constant ``training_mode`` of true are refused.
"""

from __future__ import annotations

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import optional_const, refuse_outputs


@register
class Identity(Op):
    kind = "Identity"
    onnx_types = ("Identity",)

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def run(self, node, inputs):
        return [inputs[0]]


@register
class Dropout(Identity):
    kind = "Dropout"
    onnx_types = ("Dropout",)

    def parse(self, onnx_node, attrs, graph):
        refuse_outputs(onnx_node, self, 1, "mask")
        if int(attrs.get("is_test", 1)) == 0 and graph.opset < 7:
            raise self.fail(onnx_node, "is_test=0 (training) is not supported")
        mode = optional_const(graph, onnx_node, 2, self, "training_mode")
        if mode is not None and bool(mode.item()):
            raise self.fail(onnx_node, "training_mode=true is not supported (inference only)")
        return {}

    def params(self, node, graph):
        return 0  # ratio and training_mode are configuration
