"""Conv: 2-D convolution with groups (depthwise included), strides, pads, dilations."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import out_size, resolve_pads, windows

_IM2COL_ELEMENTS = 1 << 22  # up to 32 MB of float64 windows: one contraction


@register
class Conv(Op):
    kind = "Conv"
    onnx_types = ("Conv",)
    hls_kernel = "conv2d"
    rtl_module = "conv2d"

    def parse(self, onnx_node, attrs, graph):
        x = graph.tensor(onnx_node.input[0])
        w = graph.tensor(onnx_node.input[1])
        if len(x.shape) != 4 or len(w.shape) != 4:
            raise self.fail(onnx_node, f"only 2-D convolution is supported (input {x.shape})")
        if w.data is None:
            raise self.fail(onnx_node, "weights must be constant")
        kernel = tuple(int(k) for k in attrs.get("kernel_shape", w.shape[2:]))
        strides = tuple(int(s) for s in attrs.get("strides", (1, 1)))
        dil = tuple(int(d) for d in attrs.get("dilations", (1, 1)))
        if kernel != tuple(w.shape[2:]):
            raise self.fail(onnx_node, f"kernel_shape {kernel} differs from the weights' {w.shape[2:]}")
        if len(strides) != 2 or len(dil) != 2 or min(strides + dil) < 1:
            raise self.fail(onnx_node, f"strides {strides} and dilations {dil} must be 2 positive integers")
        auto_pad = attrs.get("auto_pad", "NOTSET")
        if isinstance(auto_pad, bytes):
            auto_pad = auto_pad.decode()
        if auto_pad not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
            raise self.fail(onnx_node, f"unknown auto_pad '{auto_pad}'")
        if attrs.get("pads") is not None and (len(attrs["pads"]) != 4 or min(attrs["pads"]) < 0):
            raise self.fail(onnx_node, f"pads {tuple(attrs['pads'])} must be 4 non-negative integers")
        pads = resolve_pads(auto_pad, attrs.get("pads"), x.shape[2:], kernel, strides, dil)
        group = int(attrs.get("group", 1))
        if group < 1 or x.shape[1] != w.shape[1] * group or w.shape[0] % group:
            raise self.fail(onnx_node, f"input has {x.shape[1]} channels, weights {w.shape} expect "
                            f"{w.shape[1]} x group {group} with {w.shape[0]} outputs divisible by the group")
        if len(onnx_node.input) > 2 and onnx_node.input[2]:
            b = graph.tensor(onnx_node.input[2])
            if b.shape != (w.shape[0],):
                raise self.fail(onnx_node, f"bias shape {b.shape}, expected ({w.shape[0]},)")
        for i in range(2):
            if out_size(x.shape[2 + i], kernel[i], strides[i], dil[i], pads[i], pads[i + 2]) < 1:
                raise self.fail(onnx_node, f"kernel {kernel} does not fit input {x.shape} with pads {pads}")
        return {"kernel": kernel, "strides": strides, "dilations": dil, "pads": pads,
                "group": group}

    def infer(self, node, graph):
        n, _, h, w = graph.shape(node.inputs[0])
        cout = graph.shape(node.inputs[1])[0]
        (kh, kw), (sh, sw), (dh, dw) = node.attrs["kernel"], node.attrs["strides"], node.attrs["dilations"]
        p = node.attrs["pads"]
        return [(n, cout, out_size(h, kh, sh, dh, p[0], p[2]), out_size(w, kw, sw, dw, p[1], p[3]))]

    @staticmethod
    def conv(x: np.ndarray, w: np.ndarray, attrs: dict, pad_value=0, acc_dtype=np.float64):
        """Grouped convolution of NCHW ``x`` with OIHW ``w``; no bias. Exact in ``acc_dtype``.

        Small layers copy every window once (im2col) and contract in one product; large
        ones run one batched product per kernel offset (groups as the batch axis) so that
        no window copy of a big input is ever made.
        """
        p, (sh, sw), (dh, dw) = attrs["pads"], attrs["strides"], attrs["dilations"]
        xp = np.pad(x.astype(acc_dtype), ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])),
                    constant_values=pad_value)
        g = attrs["group"]
        n, c = x.shape[:2]
        cout, cin_g, kh, kw = w.shape
        ho = out_size(x.shape[2], kh, sh, dh, p[0], p[2])
        wo = out_size(x.shape[3], kw, sw, dw, p[1], p[3])
        wg = w.astype(acc_dtype).reshape(g, cout // g, cin_g, kh, kw)
        if n * c * ho * wo * kh * kw <= _IM2COL_ELEMENTS:
            win = windows(xp, (kh, kw), (sh, sw), (dh, dw), (ho, wo)).reshape(n, g, cin_g, ho, wo, kh, kw)
            # im2col: (n, g, cin_g·kh·kw, ho·wo); one matmul per (image, group): BLAS for floats
            cols = win.transpose(0, 1, 2, 5, 6, 3, 4).reshape(n, g, cin_g * kh * kw, ho * wo)
            out = np.matmul(wg.reshape(g, cout // g, cin_g * kh * kw), cols)
            return out.reshape(n, cout, ho, wo)
        out = np.zeros((n, g, cout // g, ho * wo), dtype=acc_dtype)
        for i in range(kh):
            for j in range(kw):
                xs = xp[:, :, i * dh: i * dh + (ho - 1) * sh + 1: sh, j * dw: j * dw + (wo - 1) * sw + 1: sw]
                xs = xs.reshape(n, g, cin_g, ho * wo)
                if g == 1:  # one plain product per image: the BLAS path
                    for k in range(n):
                        out[k, 0] += wg[0, :, :, i, j] @ xs[k, 0]
                else:
                    out += np.matmul(wg[:, :, :, i, j], xs)
        return out.reshape(n, cout, ho, wo)

    def run(self, node, inputs):
        x, w = inputs[0], inputs[1]
        y = self.conv(x, w, node.attrs)
        if len(inputs) > 2 and inputs[2] is not None:
            y += inputs[2].reshape(1, -1, 1, 1)
        return [y.astype(np.float32)]

    def macs(self, node, graph):
        """Multiply-accumulates per frame; a lowered ConvTranspose's Conv counts the useful ones
        (``attrs["useful_macs"]``, set by `LowerConvTranspose`), not those on inserted zeros."""
        if "useful_macs" in node.attrs:
            return int(node.attrs["useful_macs"])
        n, cout, ho, wo = graph.shape(node.outputs[0])
        _, cin_g, kh, kw = graph.shape(node.inputs[1])
        return n * cout * ho * wo * cin_g * kh * kw
