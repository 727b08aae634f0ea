"""MaxPool and AveragePool over 2-D windows (kernel, strides, pads, auto_pad, ceil_mode,
dilations). MaxPool's Indices output is refused; AveragePool honours count_include_pad.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import pool_shape, refuse_outputs, resolve_pads, windows


class Pool(Op):
    """Shared attribute parsing and windowing of the 2-D pooling ops."""

    extra_attrs: tuple[str, ...] = ()

    def parse(self, onnx_node, attrs, graph):
        x = graph.tensor(onnx_node.input[0])
        if len(x.shape) != 4:
            raise self.fail(onnx_node, f"only 2-D pooling is supported (input {x.shape})")
        if "kernel_shape" not in attrs:
            raise self.fail(onnx_node, "the kernel_shape attribute is required")
        known = {"kernel_shape", "strides", "pads", "auto_pad", "ceil_mode", "dilations",
                 "storage_order", *self.extra_attrs}
        extra = sorted(set(attrs) - known)
        if extra:
            raise self.fail(onnx_node, f"unknown attribute(s) {', '.join(extra)}")
        kernel = tuple(int(k) for k in attrs["kernel_shape"])
        strides = tuple(int(s) for s in attrs.get("strides", (1, 1)))
        dil = tuple(int(d) for d in attrs.get("dilations", (1, 1)))
        if any(len(t) != 2 or min(t) < 1 for t in (kernel, strides, dil)):
            raise self.fail(onnx_node, f"kernel {kernel}, strides {strides}, dilations {dil} "
                            "must be 2 positive integers each")
        auto_pad = attrs.get("auto_pad", "NOTSET")
        if auto_pad not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
            raise self.fail(onnx_node, f"unknown auto_pad '{auto_pad}'")
        if attrs.get("pads") is not None and (len(attrs["pads"]) != 4 or min(attrs["pads"]) < 0):
            raise self.fail(onnx_node, f"pads {tuple(attrs['pads'])} must be 4 non-negative integers")
        pads = tuple(int(p) for p in resolve_pads(auto_pad, attrs.get("pads"), x.shape[2:],
                                                  kernel, strides, dil))
        if any(pads[i] >= (kernel[i % 2] - 1) * dil[i % 2] + 1 for i in range(4)):
            raise self.fail(onnx_node, f"pads {pads} must be smaller than the kernel {kernel}")
        ceil = bool(attrs.get("ceil_mode", 0))
        out = pool_shape(x.shape[2:], kernel, strides, dil, pads, ceil)
        if min(out) < 1:
            raise self.fail(onnx_node, f"kernel {kernel} does not fit input {x.shape} with pads {pads}")
        return {"kernel": kernel, "strides": strides, "dilations": dil, "pads": pads,
                "ceil_mode": ceil, "out_hw": out}

    def infer(self, node, graph):
        n, c = graph.shape(node.inputs[0])[:2]
        return [(n, c) + tuple(node.attrs["out_hw"])]

    @staticmethod
    def padded(x: np.ndarray, attrs: dict, value: float) -> np.ndarray:
        """``x`` padded by the explicit pads plus the overhang of ceil-mode windows."""
        p, (ho, wo) = attrs["pads"], attrs["out_hw"]
        need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in
                zip((ho, wo), attrs["strides"], attrs["kernel"], attrs["dilations"], strict=False)]
        end = [max(p[2 + i], need[i] - x.shape[2 + i] - p[i]) for i in range(2)]
        return np.pad(x, ((0, 0), (0, 0), (p[0], end[0]), (p[1], end[1])), constant_values=value)

    def win(self, xp: np.ndarray, attrs: dict) -> np.ndarray:
        return windows(xp, attrs["kernel"], attrs["strides"], attrs["dilations"], attrs["out_hw"])


@register
class MaxPool(Pool):
    kind = "MaxPool"
    onnx_types = ("MaxPool",)
    hls_kernel = "maxpool"
    rtl_module = "maxpool"

    def parse(self, onnx_node, attrs, graph):
        refuse_outputs(onnx_node, self, 1, "Indices")
        return super().parse(onnx_node, attrs, graph)

    def run(self, node, inputs):
        x = inputs[0]
        xp = self.padded(x, node.attrs, -np.inf)
        return [self.win(xp, node.attrs).max(axis=(4, 5)).astype(x.dtype)]


@register
class AveragePool(Pool):
    kind = "AveragePool"
    onnx_types = ("AveragePool",)
    hls_kernel = "avgpool"
    rtl_module = "avgpool"
    extra_attrs = ("count_include_pad",)

    def parse(self, onnx_node, attrs, graph):
        out = super().parse(onnx_node, attrs, graph)
        out["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
        return out

    def run(self, node, inputs):
        x = inputs[0].astype(np.float64)
        a, p = node.attrs, node.attrs["pads"]
        total = self.win(self.padded(x, a, 0.0), a).sum(axis=(4, 5))
        # Which padded positions a window counts: the input, plus the explicit pads when
        # count_include_pad (never the ceil-mode overhang beyond the pads).
        h, w = x.shape[2:]
        mask = np.ones((1, 1, h + p[0] + p[2], w + p[1] + p[3]) if a["count_include_pad"] else (1, 1, h, w))
        if not a["count_include_pad"]:
            mask = np.pad(mask, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
        shifted = dict(a, pads=(0, 0, 0, 0))
        count = self.win(self.padded(mask, shifted, 0.0), a).sum(axis=(4, 5))
        return [(total / count).astype(np.float32)]
