"""DepthToSpace: each pixel's ``b²·M`` channels spread over a ``b × b`` block of ``M``-channel pixels.

Both ONNX modes in the float and int8 references (values only move); the fabric streams the
``DCR`` mode (``depth2space.sv``): channel ``(i·b + j)·M + m`` of input pixel ``(h, w)`` is
channel ``m`` of output pixel ``(h·b + i, w·b + j)``, so each output pixel's ``M`` channels are
one contiguous run of the input pixel's. ``CRD`` (channel ``m·b² + i·b + j``) is refused at
planning with one line. A lowered ConvTranspose whose kernel equals its stride (no pads, no
output padding: the U-Net up-convolution) uses it after a 1×1 Conv (`LowerConvTranspose`).
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


@register
class DepthToSpace(Op):
    kind = "DepthToSpace"
    onnx_types = ("DepthToSpace",)
    hls_kernel = "depth2space"
    rtl_module = "depth2space"

    def parse(self, onnx_node, attrs, graph):
        shape = graph.tensor(onnx_node.input[0]).shape
        if len(shape) != 4:
            raise self.fail(onnx_node, f"only an (N, C, H, W) input is supported (input {shape})")
        if "blocksize" not in attrs:
            raise self.fail(onnx_node, "attribute blocksize is required")
        b = int(attrs["blocksize"])
        mode = attrs.get("mode", "DCR")
        if b < 1 or shape[1] % (b * b):
            raise self.fail(onnx_node, f"attribute blocksize = {b}: {shape[1]} channels are not a multiple of "
                            f"blocksize² = {b * b}")
        if mode not in ("DCR", "CRD"):
            raise self.fail(onnx_node, f"attribute mode = '{mode}' is not supported")
        return {"blocksize": b, "mode": mode}

    def infer(self, node, graph):
        n, c, h, w = graph.shape(node.inputs[0])
        b = node.attrs["blocksize"]
        return [(n, c // (b * b), h * b, w * b)]

    def run(self, node, inputs):
        x = inputs[0]
        n, c, h, w = x.shape
        b = node.attrs["blocksize"]
        m = c // (b * b)
        if node.attrs["mode"] == "DCR":
            y = x.reshape(n, b, b, m, h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, m, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return [np.ascontiguousarray(y.reshape(n, m, h * b, w * b))]

    def params(self, node, graph):
        return 0

    def fabric_limit(self, node, graph) -> str | None:
        if node.attrs["mode"] != "DCR":
            return f"attribute mode = '{node.attrs['mode']}': only 'DCR' streams"
        return None
