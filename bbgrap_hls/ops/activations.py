"""Unary activations that differ only by their formula.

On the fabric each is a 256-entry int8 lookup table (DESIGN.md, the int8 contract); the
float reference computes in float64 and rounds to float32 once.
"""

from __future__ import annotations

import math
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


# -- smooth and thresholded activations (ONNX definitions; each a 256-entry LUT on the fabric)

_erf = np.frompyfunc(math.erf, 1, 1)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)  # log(1 + e^x) without overflow


@register
class Elu(UnaryActivation):
    kind = "Elu"
    onnx_types = ("Elu",)
    defaults = {"alpha": 1.0}

    def f(self, x, attrs):
        return np.where(x < 0, attrs["alpha"] * np.expm1(np.minimum(x, 0.0)), x)


@register
class Selu(UnaryActivation):
    kind = "Selu"
    onnx_types = ("Selu",)
    defaults = {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}

    def f(self, x, attrs):
        return attrs["gamma"] * np.where(x > 0, x, attrs["alpha"] * np.expm1(np.minimum(x, 0.0)))


@register
class Celu(UnaryActivation):
    kind = "Celu"
    onnx_types = ("Celu",)
    defaults = {"alpha": 1.0}

    def parse(self, onnx_node, attrs, graph):
        out = super().parse(onnx_node, attrs, graph)
        if out["alpha"] == 0:
            raise self.fail(onnx_node, "alpha=0 is not allowed (Celu divides by it)")
        return out

    def f(self, x, attrs):
        a = attrs["alpha"]
        return np.maximum(x, 0.0) + np.minimum(0.0, a * np.expm1(np.minimum(x, 0.0) / a))


@register
class Gelu(UnaryActivation):
    """Gelu (opset 20): ``approximate="none"`` (erf) or ``"tanh"``."""

    kind = "Gelu"
    onnx_types = ("Gelu",)

    def parse(self, onnx_node, attrs, graph):
        extra = sorted(set(attrs) - {"approximate"})
        if extra:
            raise self.fail(onnx_node, f"unknown attribute(s) {', '.join(extra)}")
        approx = attrs.get("approximate", "none")
        if approx not in ("none", "tanh"):
            raise self.fail(onnx_node, f"approximate='{approx}' is not 'none' or 'tanh'")
        return {"approximate": approx}

    def f(self, x, attrs):
        if attrs["approximate"] == "tanh":
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


@register
class Softplus(UnaryActivation):
    kind = "Softplus"
    onnx_types = ("Softplus",)

    def f(self, x, attrs):
        return _softplus(x)


@register
class Softsign(UnaryActivation):
    kind = "Softsign"
    onnx_types = ("Softsign",)

    def f(self, x, attrs):
        return x / (1.0 + np.abs(x))


@register
class Mish(UnaryActivation):
    kind = "Mish"
    onnx_types = ("Mish",)

    def f(self, x, attrs):
        return x * np.tanh(_softplus(x))


@register
class Swish(UnaryActivation):
    """Swish (opset 24): ``x·sigmoid(alpha·x)``; SiLU at ``alpha = 1``. Also what
    `passes.arith.FuseSwish` makes of torch's SiLU export ``Mul(x, Sigmoid(x))``."""

    kind = "Swish"
    onnx_types = ("Swish",)
    defaults = {"alpha": 1.0}

    def f(self, x, attrs):
        return x * (0.5 * (1.0 + np.tanh(0.5 * attrs["alpha"] * x)))


@register
class ThresholdedRelu(UnaryActivation):
    kind = "ThresholdedRelu"
    onnx_types = ("ThresholdedRelu",)
    defaults = {"alpha": 1.0}

    def f(self, x, attrs):
        return np.where(x > attrs["alpha"], x, 0.0)
