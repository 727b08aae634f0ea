"""Relu6: min(max(x, 0), 6) (canonical only: `ClipToRelu6` makes it from Clip(0, 6)).

Fused into the producer's requantisation when it follows one (the clamp's ``lo`` rises
to the zero point, ``hi`` falls to the code of 6), else a lookup table.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


@register
class Relu6(Op):
    kind = "Relu6"
    onnx_types = ()
    hls_kernel = "lut_act"
    rtl_module = "lut_act"

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def run(self, node, inputs):
        x = inputs[0]
        return [np.clip(x, 0, 6).astype(x.dtype)]
