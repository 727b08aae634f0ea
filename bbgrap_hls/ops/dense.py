"""Dense: a fully connected layer, ``y = x · Wᵀ + b`` (canonical only, no ONNX type).

`LowerGemm` makes it from Gemm and MatMul with a constant weight. Inputs: ``x`` (N, C),
``W`` constant (Co, C), ``b`` constant (Co,). ``attrs["in_layout"]`` says in which order
the C input elements of one frame arrive:

- ``"NC"`` (default): ``x`` is (N, C) and column ``k`` of ``W`` multiplies ``x[:, k]``.
- ``"NHWC"``: ``x`` is an NCHW tensor (N, Ch, H, W) with ``C = Ch·H·W`` that reaches the
  layer without the Flatten/Reshape of the model (`FoldFlattenIntoDense` removed it).
  Activations stream channels innermost, so column ``(h·W + w)·Ch + c`` of ``W``
  multiplies ``x[:, c, h, w]``: the weight columns were permuted from the model's CHW
  order to HWC order when the Flatten was folded. The float reference transposes ``x``
  the same way, so its result equals the original Flatten + Gemm exactly (same products,
  same sums).
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register

LAYOUTS = ("NC", "NHWC")


def flatten_input(x: np.ndarray, layout: str) -> np.ndarray:
    """The (N, C) matrix a Dense multiplies, in the order its weight columns expect."""
    if layout == "NHWC":
        return x.transpose(0, 2, 3, 1).reshape(x.shape[0], -1)
    return x.reshape(x.shape[0], -1)


@register
class Dense(Op):
    kind = "Dense"
    onnx_types = ()
    hls_kernel = "dense"
    rtl_module = "dense"

    def infer(self, node, graph):
        x = graph.shape(node.inputs[0])
        w = graph.tensor(node.inputs[1])
        layout = node.attrs.get("in_layout", "NC")
        if layout not in LAYOUTS:
            raise self.fail(node, f"in_layout '{layout}' is not one of {LAYOUTS}")
        want_rank = 4 if layout == "NHWC" else 2
        if len(x) != want_rank:
            raise self.fail(node, f"in_layout {layout} needs a rank-{want_rank} input, got {x}")
        if w.data is None or len(w.shape) != 2:
            raise self.fail(node, f"weight must be a constant (Co, C) matrix, got {w.shape}")
        c = int(np.prod(x[1:], dtype=np.int64))
        if w.shape[1] != c:
            raise self.fail(node, f"input {x} has {c} elements per frame, weight {w.shape} expects {w.shape[1]}")
        if len(node.inputs) > 2 and node.inputs[2]:
            b = graph.shape(node.inputs[2])
            if b != (w.shape[0],):
                raise self.fail(node, f"bias shape {b}, expected ({w.shape[0]},)")
        return [(x[0], w.shape[0])]

    def run(self, node, inputs):
        x = flatten_input(inputs[0], node.attrs.get("in_layout", "NC"))
        y = x.astype(np.float64) @ inputs[1].astype(np.float64).T
        if len(inputs) > 2 and inputs[2] is not None:
            y += inputs[2].astype(np.float64)
        return [y.astype(np.float32)]

    def macs(self, node, graph):
        co, c = graph.shape(node.inputs[1])
        return graph.shape(node.inputs[0])[0] * c * co
