"""ChannelAffine: ``y = x · a[c] + b[c]`` per channel (canonical only, no ONNX type).

`LowerChannelAffine` makes it from a BatchNormalization, or a Mul/Add by a per-channel
(or scalar) constant, that has no Conv/Dense before it to fold into. Inputs: ``x``
(N, C) or (N, C, H, W), ``a`` and ``b`` constants of shape (C,). The channel axis is 1,
as everywhere in the NCHW graph.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


def channel_view(v: np.ndarray, rank: int) -> np.ndarray:
    """A (C,) vector shaped to broadcast along axis 1 of a rank-``rank`` tensor."""
    return v.reshape((1, -1) + (1,) * (rank - 2))


@register
class ChannelAffine(Op):
    kind = "ChannelAffine"
    onnx_types = ()
    hls_kernel = "channel_affine"
    rtl_module = "channel_affine"

    def infer(self, node, graph):
        x = graph.shape(node.inputs[0])
        if len(x) < 2:
            raise self.fail(node, f"input {x} has no channel axis")
        for name in node.inputs[1:3]:
            t = graph.tensor(name)
            if t.data is None or t.shape != (x[1],):
                raise self.fail(node, f"'{name}' must be a constant of shape ({x[1]},), got {t.shape}")
        return [x]

    def run(self, node, inputs):
        x, a, b = inputs[:3]
        y = x * channel_view(a, x.ndim) + channel_view(b, x.ndim)
        return [y.astype(np.float32)]
