"""Unary activations that differ only by their formula.

On the fabric each is a 256-entry int8 lookup table (DESIGN.md, the int8 contract); the
float reference computes in float64 and rounds to float32 once.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from bbgrap_hls.ops.base import Op, register


class UnaryActivation(Op):
    """Base of elementwise activations: same shape out, formula in `f`."""

    hls_kernel = "lut_act"
    rtl_module = "lut_act"
    defaults: ClassVar[dict[str, float]] = {}

    def parse(self, onnx_node, attrs, graph):
        extra = sorted(set(attrs) - set(self.defaults))
        if extra:
            raise self.fail(onnx_node, f"unknown attribute(s) {', '.join(extra)}")
        return {k: float(attrs.get(k, v)) for k, v in self.defaults.items()}

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def f(self, x: np.ndarray, attrs: dict) -> np.ndarray:
        raise NotImplementedError

    def run(self, node, inputs):
        return [self.f(inputs[0].astype(np.float64), node.attrs).astype(np.float32)]


@register
class LeakyRelu(UnaryActivation):
    kind = "LeakyRelu"
    onnx_types = ("LeakyRelu",)
    defaults = {"alpha": 0.01}

    def f(self, x, attrs):
        return np.where(x >= 0, x, attrs["alpha"] * x)


@register
class Sigmoid(UnaryActivation):
    kind = "Sigmoid"
    onnx_types = ("Sigmoid",)

    def f(self, x, attrs):
        return 0.5 * (1.0 + np.tanh(0.5 * x))  # stable for large |x|


@register
class Tanh(UnaryActivation):
    kind = "Tanh"
    onnx_types = ("Tanh",)

    def f(self, x, attrs):
        return np.tanh(x)


@register
class HardSigmoid(UnaryActivation):
    kind = "HardSigmoid"
    onnx_types = ("HardSigmoid",)
    defaults = {"alpha": 0.2, "beta": 0.5}

    def f(self, x, attrs):
        return np.clip(attrs["alpha"] * x + attrs["beta"], 0.0, 1.0)


@register
class HardSwish(UnaryActivation):
    kind = "HardSwish"
    onnx_types = ("HardSwish",)

    def f(self, x, attrs):
        return x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)
