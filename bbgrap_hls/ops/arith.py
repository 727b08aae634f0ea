"""Add, Sub, Mul, Div: elementwise with numpy broadcasting; either operand may be constant.

With a per-channel constant the canonicalisation passes turn Add/Mul into a channel
affine; with two activations Add/Sub run as the stream adder and Mul as the stream
multiplier. Div by a constant becomes Mul by its reciprocal; Div of two activations has
no fabric kernel.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


class Binary(Op):
    """Base of the two-operand arithmetic ops (formula in `f`)."""

    def parse(self, onnx_node, attrs, graph):
        if len(onnx_node.input) != 2:
            raise self.fail(onnx_node, f"expected 2 inputs, got {len(onnx_node.input)}")
        if int(attrs.get("broadcast", 0)) or "axis" in attrs:
            raise self.fail(onnx_node, "legacy broadcast/axis attributes (opset < 7) are not supported")
        a, b = (graph.tensor(i).shape for i in onnx_node.input)
        try:
            np.broadcast_shapes(a, b)
        except ValueError:
            raise self.fail(onnx_node, f"shapes {a} and {b} do not broadcast") from None
        return {}

    def infer(self, node, graph):
        return [tuple(np.broadcast_shapes(*(graph.shape(i) for i in node.inputs)))]

    def f(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def run(self, node, inputs):
        a, b = inputs
        y = self.f(np.asarray(a, np.float32), np.asarray(b, np.float32))
        return [np.asarray(y, np.float32)]


@register
class Add(Binary):
    kind = "Add"
    onnx_types = ("Add",)
    hls_kernel = "eltwise_add"
    rtl_module = "eltwise_add"

    def f(self, a, b):
        return a + b


@register
class Sub(Binary):
    kind = "Sub"
    onnx_types = ("Sub",)
    hls_kernel = "eltwise_add"
    rtl_module = "eltwise_add"

    def f(self, a, b):
        return a - b


@register
class Mul(Binary):
    kind = "Mul"
    onnx_types = ("Mul",)
    hls_kernel = "eltwise_mul"
    rtl_module = "eltwise_mul"

    def f(self, a, b):
        return a * b


@register
class Div(Binary):
    kind = "Div"
    onnx_types = ("Div",)

    def f(self, a, b):
        return a / b


@register
class Sum(Op):
    """Sum of n inputs with broadcasting (Sum → Add chains in canonicalisation)."""

    kind = "Sum"
    onnx_types = ("Sum",)
    hls_kernel = "eltwise_add"
    rtl_module = "eltwise_add"

    def parse(self, onnx_node, attrs, graph):
        shapes = [graph.tensor(i).shape for i in onnx_node.input if i]
        if not shapes:
            raise self.fail(onnx_node, "needs at least one input")
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise self.fail(onnx_node, f"shapes {shapes} do not broadcast") from None
        return {}

    def infer(self, node, graph):
        return [tuple(np.broadcast_shapes(*(graph.shape(i) for i in node.inputs if i)))]

    def run(self, node, inputs):
        shape = np.broadcast_shapes(*(x.shape for x in inputs))
        y = np.zeros(shape, np.float32)
        for x in inputs:
            y = y + x.astype(np.float32)  # left to right, in float32 as onnxruntime does
        return [y]
