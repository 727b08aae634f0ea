"""BatchNormalization in inference form: ``y = scale · (x - mean) / sqrt(var + eps) + B``.

The canonicalisation passes fold it into the preceding Conv/Gemm or turn it into a
channel affine. Training mode and the running-statistics outputs are refused.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import refuse_outputs


@register
class BatchNormalization(Op):
    kind = "BatchNormalization"
    onnx_types = ("BatchNormalization",)
    hls_kernel = "channel_affine"
    rtl_module = "channel_affine"

    def parse(self, onnx_node, attrs, graph):
        x = graph.tensor(onnx_node.input[0])
        if len(onnx_node.input) != 5:
            raise self.fail(onnx_node, f"expected 5 inputs, got {len(onnx_node.input)}")
        if int(attrs.get("training_mode", 0)):
            raise self.fail(onnx_node, "training_mode=1 is not supported (inference only)")
        if int(attrs.get("spatial", 1)) != 1:
            raise self.fail(onnx_node, "spatial=0 (per-pixel statistics) is not supported")
        refuse_outputs(onnx_node, self, 1, "training statistics")
        if len(x.shape) < 2:
            raise self.fail(onnx_node, f"input {x.shape} has no channel axis")
        for i, what in zip(onnx_node.input[1:], ("scale", "B", "mean", "var"), strict=False):
            t = graph.tensor(i)
            if t.data is None:
                raise self.fail(onnx_node, f"{what} must be a constant")
            if t.shape != (x.shape[1],):
                raise self.fail(onnx_node, f"{what} has shape {t.shape}, expected ({x.shape[1]},)")
        return {"epsilon": float(attrs.get("epsilon", 1e-5))}

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    @staticmethod
    def affine(node, scale, bias, mean, var) -> tuple[np.ndarray, np.ndarray]:
        """Per-channel ``(a, b)`` with ``y = a · x + b`` (float64)."""
        a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + node.attrs["epsilon"])
        return a, bias.astype(np.float64) - a * mean.astype(np.float64)

    def run(self, node, inputs):
        x = inputs[0]
        a, b = self.affine(node, *inputs[1:5])
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return [(x * a.reshape(shape) + b.reshape(shape)).astype(np.float32)]
