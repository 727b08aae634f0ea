"""QuantizeLinear and DequantizeLinear: the Q/DQ pairs of a pre-quantised (QDQ) model.

They exist so that a QDQ model loads and its float reference is exact (their ``run`` is
the ONNX semantics). They never reach the fabric: `bbgrap_hls.quant.qdq` reads their
scales and zero points into the int8 graph and removes them. Constant DequantizeLinear
nodes (weights, biases) are folded by the frontend and never become nodes.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


class _QDQ(Op):
    """Shared parsing: constant scale and zero point, ``axis`` for per-axis parameters."""

    def parse(self, onnx_node, attrs, graph):
        ins = list(onnx_node.input)
        if len(ins) < 2 or not ins[1]:
            raise self.fail(onnx_node, "the scale input is required")
        for i, what in ((1, "scale"), (2, "zero point")):
            if i < len(ins) and ins[i] and graph.tensor(ins[i]).data is None:
                raise self.fail(onnx_node, f"{what} '{ins[i]}' must be a constant")
        extra = sorted(set(attrs) - {"axis", "saturate", "block_size", "output_dtype"})
        if extra:
            raise self.fail(onnx_node, f"unknown attribute(s) {', '.join(extra)}")
        if int(attrs.get("block_size", 0)):
            raise self.fail(onnx_node, "blocked quantisation (block_size) is not supported")
        rank = len(graph.tensor(ins[0]).shape)
        axis = int(attrs.get("axis", 1))
        return {"axis": axis + rank if axis < 0 else axis}

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def params(self, node, graph):
        return 0  # scale and zero point are quantisation parameters, not weights

    @staticmethod
    def qparams(inputs: list, rank: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
        """Scale and zero point shaped to broadcast over a rank-``rank`` input."""
        s = np.asarray(inputs[1], np.float32)
        z = inputs[2] if len(inputs) > 2 and inputs[2] is not None else np.zeros((), np.uint8)
        z = np.asarray(z)
        if s.size == 1:  # per tensor (a scalar or a 1-element vector)
            return s.reshape(()), z.reshape(())
        if s.ndim == 1 and rank > 0:
            shape = [1] * rank
            shape[axis] = -1
            s, z = s.reshape(shape), z.reshape(shape) if z.ndim == 1 else z
        return s, z


@register
class QuantizeLinear(_QDQ):
    kind = "QuantizeLinear"
    onnx_types = ("QuantizeLinear",)

    def run(self, node, inputs):
        x = np.asarray(inputs[0], np.float32)
        s, z = self.qparams(inputs, x.ndim, node.attrs["axis"])
        info = np.iinfo(z.dtype)
        q = np.rint(x / s).astype(np.int64) + z.astype(np.int64)
        return [np.clip(q, info.min, info.max).astype(z.dtype)]


@register
class DequantizeLinear(_QDQ):
    kind = "DequantizeLinear"
    onnx_types = ("DequantizeLinear",)

    def run(self, node, inputs):
        x = np.asarray(inputs[0])
        s, z = self.qparams(inputs, x.ndim, node.attrs["axis"])
        return [((x.astype(np.int64) - z.astype(np.int64)).astype(np.float32) * s).astype(np.float32)]


def fold_dequantize(onnx_node, values: list, opset: int) -> list[np.ndarray]:
    """Constant folding of a DequantizeLinear of constants (weights, biases).

    The signature of the frontend's fast folders (``frontend.fold._FAST``): onnx's
    reference evaluator only implements DequantizeLinear from opset 19.
    """
    axis = 1
    for a in onnx_node.attribute:
        if a.name == "axis":
            axis = int(a.i)
    x = np.asarray(values[0])
    axis = axis + x.ndim if axis < 0 else axis
    return DequantizeLinear().run(_FoldNode(axis), [x] + list(values[1:]))


class _FoldNode:
    """The attributes `DequantizeLinear.run` reads, for `fold_dequantize`."""

    def __init__(self, axis: int):
        self.attrs = {"axis": axis}
