"""ConvTranspose (2-D, groups, strides, dilations, pads, output padding) and ZeroInsert.

ConvTranspose is held as its own node by the frontend (``inspect`` counts its useful MACs);
canonicalisation (`bbgrap_hls.passes.conv_transpose.LowerConvTranspose`) rewrites it as a
`ZeroInsert` followed by an ordinary `Conv` (docs/numerics.md, "ConvTranspose"):

- ZeroInsert puts ``s − 1`` zero pixels between neighbouring input pixels along each axis
  (stride ``s``) and, where a Conv pad would exceed its window's span, zero rows/columns
  around the result (``pads``); in int8 a zero pixel is the input's zero point.
- the Conv has stride 1, the same dilation, the kernel flipped in H and W with input and
  output channels swapped per group, and pads ``d·(k − 1) − p`` at the start and
  ``d·(k − 1) − p + output_padding`` at the end.

The float reference `ConvTranspose.run` is a direct scatter of every input pixel times the
kernel (independent of that rewrite, so the pass's test compares two implementations).
Pads larger than ``d·(k − 1)`` (a crop of the full output) are refused with one line.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register


def _ints(v, n: int, default: int) -> tuple[int, ...]:
    return tuple(int(x) for x in v) if v is not None else (default,) * n


@register
class ConvTranspose(Op):
    kind = "ConvTranspose"
    onnx_types = ("ConvTranspose",)

    def parse(self, onnx_node, attrs, graph):
        x = graph.tensor(onnx_node.input[0])
        w = graph.tensor(onnx_node.input[1])
        if len(x.shape) != 4 or len(w.shape) != 4:
            raise self.fail(onnx_node, f"only 2-D transposed convolution is supported (input {x.shape})")
        if w.data is None:
            raise self.fail(onnx_node, "weights must be constant")
        group = int(attrs.get("group", 1))
        if group < 1 or x.shape[1] != w.shape[0] or w.shape[0] % group:
            raise self.fail(onnx_node, f"attribute group = {group}: input has {x.shape[1]} channels, weights "
                            f"{w.shape} expect {w.shape[0]} divisible by the group")
        kernel = _ints(attrs.get("kernel_shape"), 2, 0) if "kernel_shape" in attrs else tuple(w.shape[2:])
        if kernel != tuple(w.shape[2:]):
            raise self.fail(onnx_node, f"attribute kernel_shape = {list(kernel)} differs from the weights' "
                            f"{list(w.shape[2:])}")
        strides = _ints(attrs.get("strides"), 2, 1)
        dil = _ints(attrs.get("dilations"), 2, 1)
        outpad = _ints(attrs.get("output_padding"), 2, 0)
        for what, v, lo in (("strides", strides, 1), ("dilations", dil, 1), ("output_padding", outpad, 0)):
            if len(v) != 2 or min(v) < lo:
                raise self.fail(onnx_node, f"attribute {what} = {list(v)}: 2 integers >= {lo} expected")
        for i in range(2):
            if outpad[i] >= max(strides[i], dil[i]):
                raise self.fail(onnx_node, f"attribute output_padding = {list(outpad)}: must be smaller than "
                                f"the stride or the dilation ({strides[i]}, {dil[i]})")
        if len(onnx_node.input) > 2 and onnx_node.input[2]:
            b = graph.tensor(onnx_node.input[2])
            if b.shape != (w.shape[1] * group,):
                raise self.fail(onnx_node, f"bias shape {b.shape}, expected ({w.shape[1] * group},)")
        auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
        if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
            raise self.fail(onnx_node, f"attribute auto_pad = '{auto_pad}' is not supported")
        span = [(k - 1) * d + 1 for k, d in zip(kernel, dil, strict=True)]
        full = [s * (n - 1) + op + sp for s, n, op, sp in zip(strides, x.shape[2:], outpad, span, strict=True)]
        out_shape = attrs.get("output_shape")
        if out_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            if out_shape is None:  # SAME: the output is the input times the stride
                out_shape = [n * s for n, s in zip(x.shape[2:], strides, strict=True)]
            out_shape = [int(v) for v in out_shape][-2:]
            if len(out_shape) != 2 or min(out_shape) < 1:
                raise self.fail(onnx_node, f"attribute output_shape = {list(attrs.get('output_shape'))}: "
                                "2 positive spatial sizes expected")
            total = [f - o for f, o in zip(full, out_shape, strict=True)]
            # a larger output (negative padding): onnxruntime and the ONNX reference agree only for
            # an explicit output_shape without auto_pad, up to stride - 1 more (as output padding)
            explicit = attrs.get("output_shape") is not None and auto_pad == "NOTSET"
            if min(total) < 0 and not (explicit and all(t > -s for t, s in zip(total, strides, strict=True))):
                what = "output_shape" if attrs.get("output_shape") is not None else "auto_pad"
                val = list(attrs["output_shape"]) if what == "output_shape" else f"'{auto_pad}'"
                raise self.fail(onnx_node, f"attribute {what} = {val}: an output larger than the full "
                                f"transposed convolution ({full}) is not supported")
            if auto_pad == "SAME_UPPER":
                begin = [t // 2 for t in total]
            else:  # NOTSET and SAME_LOWER put the larger half first (ONNX, onnxruntime)
                begin = [t - t // 2 for t in total]
            begin = [max(b, 0) for b in begin]  # a larger output grows at the end (both do so)
            pads = (begin[0], begin[1], total[0] - begin[0], total[1] - begin[1])
        elif auto_pad == "VALID":
            pads = (0, 0, 0, 0)
        else:
            pads = _ints(attrs.get("pads"), 4, 0)
            if len(pads) != 4 or min(pads) < 0:
                raise self.fail(onnx_node, f"attribute pads = {list(pads)}: 4 non-negative integers expected")
        for i in range(2):
            if pads[i] > span[i] - 1 or pads[i + 2] > span[i] - 1 + outpad[i]:
                raise self.fail(onnx_node, f"attribute pads = {list(pads)}: a transposed-conv pad larger than "
                                f"dilation*(kernel-1) (= {span[i] - 1}) crops the output; not supported")
            if full[i] - pads[i] - pads[i + 2] < 1:
                raise self.fail(onnx_node, f"attribute pads = {list(pads)}: empty output")
        return {"kernel": kernel, "strides": strides, "dilations": dil, "pads": pads,
                "output_padding": outpad, "group": group}

    def infer(self, node, graph):
        n, _, h, w = graph.shape(node.inputs[0])
        a = node.attrs
        _, m_g, kh, kw = graph.shape(node.inputs[1])
        sizes = []
        for i, (size, k) in enumerate(((h, kh), (w, kw))):
            sizes.append(a["strides"][i] * (size - 1) + a["output_padding"][i] + (k - 1) * a["dilations"][i] + 1
                         - a["pads"][i] - a["pads"][i + 2])
        return [(n, m_g * a["group"], sizes[0], sizes[1])]

    def run(self, node, inputs):
        """Scatter: output pixel ``(i·s + a·d − p_top, j·s + b·d − p_left)`` receives input pixel
        ``(i, j)`` times tap ``(a, b)``, for every tap; accumulated in float64."""
        x, w = inputs[0].astype(np.float64), inputs[1].astype(np.float64)
        a = node.attrs
        g = a["group"]
        n, c, h, wd = x.shape
        _, m_g, kh, kw = w.shape
        (sh, sw), (dh, dw), p = a["strides"], a["dilations"], a["pads"]
        ho = sh * (h - 1) + a["output_padding"][0] + (kh - 1) * dh + 1 - p[0] - p[2]
        wo = sw * (wd - 1) + a["output_padding"][1] + (kw - 1) * dw + 1 - p[1] - p[3]
        xg = x.reshape(n, g, c // g, h * wd)
        wg = w.reshape(g, c // g, m_g, kh, kw)
        y = np.zeros((n, g, m_g, ho, wo))
        for i in range(kh):
            rows = np.arange(h) * sh + i * dh - p[0]
            rk = (rows >= 0) & (rows < ho)
            for j in range(kw):
                cols = np.arange(wd) * sw + j * dw - p[1]
                ck = (cols >= 0) & (cols < wo)
                # (g, m_g, c_g) @ (n, g, c_g, h·w) -> (n, g, m_g, h, w)
                part = np.matmul(wg[:, :, :, i, j].transpose(0, 2, 1), xg).reshape(n, g, m_g, h, wd)
                y[:, :, :, rows[rk][:, None], cols[ck][None, :]] += part[:, :, :, rk][:, :, :, :, ck]
        y = y.reshape(n, g * m_g, ho, wo)
        if len(inputs) > 2 and inputs[2] is not None:
            y += inputs[2].astype(np.float64).reshape(1, -1, 1, 1)
        return [y.astype(np.float32)]

    def macs(self, node, graph):
        """Useful MACs: every input pixel times every tap (the lowered Conv does ``s_h·s_w``
        times as many, most of them on inserted zeros)."""
        n, c, h, w = graph.shape(node.inputs[0])
        _, m_g, kh, kw = graph.shape(node.inputs[1])
        return n * c * h * w * m_g * kh * kw

    def conv_form(self, node, graph) -> tuple[dict, tuple[int, int, int, int], np.ndarray]:
        """The equivalent ``(conv attrs, zero-insert pads, conv weights)``: stride 1, the same
        dilation, the kernel flipped with in/out channels swapped per group; each Conv pad
        ``d·(k−1) − p`` (end: ``+ output_padding``) up to the window's span, the rest of it
        as zero rows/columns of the ZeroInsert."""
        a = node.attrs
        w = graph.const(node.inputs[1])
        g = a["group"]
        c, m_g, kh, kw = w.shape
        wc = w.reshape(g, c // g, m_g, kh, kw).transpose(0, 2, 1, 3, 4).reshape(g * m_g, c // g, kh, kw)
        wc = np.ascontiguousarray(wc[:, :, ::-1, ::-1])
        p, op = a["pads"], a["output_padding"]
        span = [(k - 1) * d for k, d in zip((kh, kw), a["dilations"], strict=True)]
        need = (span[0] - p[0], span[1] - p[1], span[0] - p[2] + op[0], span[1] - p[3] + op[1])
        conv_pads = tuple(min(v, span[i % 2]) for i, v in enumerate(need))
        extra = tuple(v - cp for v, cp in zip(need, conv_pads, strict=True))
        attrs = {"kernel": (kh, kw), "strides": (1, 1), "dilations": tuple(a["dilations"]), "pads": conv_pads,
                 "group": g}
        return attrs, extra, wc


@register
class ZeroInsert(Op):
    """Zero pixels between the input's pixels (``factor − 1`` per gap along H and W) and
    ``pads`` zero rows/columns around them (top, left, bottom, right): the upsampling half
    of a lowered ConvTranspose. Created by the canonicalisation, never read from ONNX.
    Attributes: ``factor`` (sh, sw), ``pads`` (4 non-negative integers), ``value`` (the
    fill: 0.0 in float; the int8 reference fills with the zero point, ``q["pad_value"]``)."""

    kind = "ZeroInsert"
    hls_kernel = "zeroinsert2d"
    rtl_module = "zeroinsert"

    def infer(self, node, graph):
        n, c, h, w = graph.shape(node.inputs[0])
        (sh, sw), p = node.attrs["factor"], node.attrs["pads"]
        return [(n, c, p[0] + (h - 1) * sh + 1 + p[2], p[1] + (w - 1) * sw + 1 + p[3])]

    def run(self, node, inputs):
        x = inputs[0]
        n, c, h, w = x.shape
        (sh, sw), p = node.attrs["factor"], node.attrs["pads"]
        y = np.full((n, c, p[0] + (h - 1) * sh + 1 + p[2], p[1] + (w - 1) * sw + 1 + p[3]),
                    node.attrs.get("value", 0.0), dtype=x.dtype)
        y[:, :, p[0]: p[0] + (h - 1) * sh + 1: sh, p[1]: p[1] + (w - 1) * sw + 1: sw] = x
        return [y]

    def params(self, node, graph):
        return 0

    def fabric_limit(self, node, graph) -> str | None:
        if len(graph.shape(node.inputs[0])) != 4:
            return "only an (N, C, H, W) tensor streams"
        return None
