"""LRN (local response normalisation across channels), a fabric op.

``y = x / (bias + alpha / size · Σ x²)^beta`` over the channels
``[c - floor((size-1)/2), c + ceil((size-1)/2)]`` (clipped to the tensor's channels).

Int8 (docs/numerics.md, "LRN"): with ``d = q - zp_x`` the window's integer sum of squares
``S = Σ d²`` is coded as a small float (`code`: the leading-one position and the next
``MBITS`` bits), a table indexed by the code holds ``T = round(2^F · s_x/s_y · g(S_rep))`` with
``g(S) = (bias + alpha/size · s_x² · S)^(-beta)`` at the bucket's midpoint, and
``y = clamp(zp_y + ((d·T + 2^(F-1)) >> F), -128, 127)``. The op file holds the contract's
integer helpers (`code`, `table`, `lrn_int8`) that the quantiser, codegen and tests share.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register

#: mantissa bits of the code of S (buckets of relative width <= 2^-MBITS)
MBITS = 6
#: largest window the kernels take (S < 2^22: a 22-bit prefix sum)
MAX_SIZE = 63
#: table entries are unsigned with at most this many bits (the RTL's 9 × 16-bit product)
TABLE_BITS = 16
#: the most |q - zp| can be for int8 codes
DMAX = 255


def window(size: int) -> tuple[int, int]:
    """Channels before and after ``c`` in the window: ``(floor((size-1)/2), ceil((size-1)/2))``."""
    return (size - 1) // 2, size // 2


def code(s: np.ndarray | int, m: int = MBITS) -> np.ndarray:
    """Table index of sums of squares ``s >= 0``: ``t = max(bitlen(s) - 1 - m, 0)``,
    ``index = t·2^m + (s >> t)`` (exact below ``2^(m+1)``, then ``2^m`` buckets per octave)."""
    s = np.asarray(s, np.int64)
    bl = np.zeros_like(s)
    v = s.copy()
    while np.any(v):  # bit length, exactly in integers
        nz = v > 0
        bl[nz] += 1
        v >>= 1
    t = np.maximum(bl - 1 - m, 0)
    return t * (1 << m) + (s >> t)


def bucket(idx: int, m: int = MBITS) -> tuple[int, int]:
    """``(first, last)`` sum of squares coded as ``idx`` (inverse of `code`)."""
    if idx < 2 << m:
        return idx, idx
    t = (idx >> m) - 1
    mant = idx - t * (1 << m)
    return mant << t, ((mant + 1) << t) - 1


def table_len(size: int, c: int, m: int = MBITS) -> int:
    """Entries of the table: codes of ``0 .. min(size, C)·255²``."""
    return int(code(min(size, c) * DMAX * DMAX, m)) + 1


def table(attrs: dict, c: int, s_x: float, s_y: float, m: int = MBITS) -> tuple[np.ndarray, int]:
    """``(T, F)``: ``T[i] = round_half_up(2^F · s_x/s_y · g(midpoint of bucket i))`` (int64, below
    ``2^TABLE_BITS``) and the largest ``F <= 40`` that keeps ``T[0]`` (the largest) in range."""
    n = table_len(attrs["size"], c, m)
    lo_hi = np.array([bucket(i, m) for i in range(n)], np.float64)
    rep = (lo_hi[:, 0] + lo_hi[:, 1]) / 2
    k = attrs["alpha"] / attrs["size"] * float(s_x) ** 2
    ratio = float(s_x) / float(s_y) * (attrs["bias"] + k * rep) ** (-attrs["beta"])
    f = 40
    while f > 0 and np.floor(ratio[0] * 2.0**f + 0.5) >= 1 << TABLE_BITS:
        f -= 1
    t = np.floor(ratio * 2.0**f + 0.5).astype(np.int64)
    return np.minimum(t, (1 << TABLE_BITS) - 1), f


def lrn_int8(x: np.ndarray, q: dict) -> np.ndarray:
    """The int8 contract on codes ``x`` (N, C, ...) with the node's parameters ``q``."""
    d = x.astype(np.int64) - q["zp_in"]
    before, after = q["before"], q["after"]
    c = d.shape[1]
    pre = np.concatenate([np.zeros_like(d[:, :1]), np.cumsum(d * d, axis=1)], axis=1)  # P[0..C]
    ch = np.arange(c)
    s = pre[:, np.minimum(ch + after + 1, c)] - pre[:, np.maximum(ch - before, 0)]
    t = np.asarray(q["table"], np.int64)[code(s, q["mbits"])]
    f = q["shift"]
    y = q["zp_out"] + ((d * t + (1 << (f - 1) if f else 0)) >> f)
    return np.clip(y, -128, 127).astype(np.int8)


@register
class LRN(Op):
    kind = "LRN"
    onnx_types = ("LRN",)
    hls_kernel = "lrn"
    rtl_module = "lrn"
    cost_block = "lrn"

    def parse(self, onnx_node, attrs, graph):
        if "size" not in attrs:
            raise self.fail(onnx_node, "attribute size is required")
        a = {"size": int(attrs["size"]), "alpha": float(attrs.get("alpha", 1e-4)),
             "beta": float(attrs.get("beta", 0.75)), "bias": float(attrs.get("bias", 1.0))}
        if not 1 <= a["size"] <= MAX_SIZE:
            raise self.fail(onnx_node, f"attribute size = {a['size']} is not supported (1 .. {MAX_SIZE})")
        # the kernel's table needs a positive, non-increasing factor: bias > 0, alpha >= 0, beta >= 0
        if not a["bias"] > 0:
            raise self.fail(onnx_node, f"attribute bias = {a['bias']:g} is not supported (must be > 0)")
        for key in ("alpha", "beta"):
            if not a[key] >= 0:
                raise self.fail(onnx_node, f"attribute {key} = {a[key]:g} is not supported (must be >= 0)")
        if len(graph.tensor(onnx_node.input[0]).shape) < 3:
            raise self.fail(onnx_node, "input needs a channel axis and spatial axes")
        return a

    def infer(self, node, graph):
        return [graph.shape(node.inputs[0])]

    def run(self, node, inputs):
        x = inputs[0].astype(np.float64)
        a = node.attrs
        lo, hi = window(a["size"])
        c = x.shape[1]
        sq = np.pad(x * x, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
        csum = np.concatenate([np.zeros_like(sq[:, :1]), np.cumsum(sq, axis=1)], axis=1)
        win = csum[:, lo + hi + 1: lo + hi + 1 + c] - csum[:, :c]
        return [(x / (a["bias"] + a["alpha"] / a["size"] * win) ** a["beta"]).astype(np.float32)]

    def run_int8(self, node, inputs, graph):
        return [lrn_int8(inputs[0], node.attrs["q"])]

    def quant(self, node, s_x: float, z_x: int, s_y: float, z_y: int, c: int) -> dict:
        """``node.attrs["q"]`` of the int8 contract (bbgrap_hls.quant.build, category ``lrn``)."""
        t, f = table(node.attrs, c, s_x, s_y)
        before, after = window(node.attrs["size"])
        return {"zp_in": z_x, "zp_out": z_y, "table": t, "shift": f, "mbits": MBITS,
                "before": before, "after": after}

    def params(self, node, graph):
        return 0
