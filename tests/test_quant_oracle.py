"""The integer Conv/Dense kernels against implementations that share no code with them.

`quant.kernels` accumulates with `ops.conv.Conv.conv` (im2col or per-offset products),
which other tests also use as their model; here the accumulator and the requantised
codes are checked against (a) onnxruntime's ConvInteger / MatMulInteger on a one-node
model built here and (b) plain Python loops over output and kernel positions, with the
requantisation done in Python's unbounded integers (docs/numerics.md, "Requantisation").
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from bbgrap_hls.ir import Node
from bbgrap_hls.quant import arith, kernels


def _ort_run(op: str, x: np.ndarray, w: np.ndarray, zx: int, attrs: dict) -> np.ndarray:
    """onnxruntime's ConvInteger / MatMulInteger: ``Σ (x - zx)·w`` in int32. Its CPU kernels
    take uint8 activations: ``x + 128`` with zero point ``zx + 128`` is the same integers."""
    xu = (x.astype(np.int16) + 128).astype(np.uint8)
    ins = [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape)),
           helper.make_tensor_value_info("w", TensorProto.INT8, list(w.shape))]
    zp = helper.make_tensor("zx", TensorProto.UINT8, [], [zx + 128])
    node = helper.make_node(op, ["x", "w", "zx"], ["y"], **attrs)
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", TensorProto.INT32, None)], [zp])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": xu, "w": w})[0].astype(np.int64)


def _conv_loop(x, w, zx: int, strides, pads, dilations, group: int) -> list:
    """``Σ (x - zx)·w`` by explicit loops; a position outside the input reads ``zx`` (0 after
    the subtraction). Python ints, nested lists [n][co][i][j]."""
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = strides, dilations, pads
    ho = (h + pt + pb - (dh * (kh - 1) + 1)) // sh + 1
    wo = (wd + pl + pr - (dw * (kw - 1) + 1)) // sw + 1
    xs, ws = x.tolist(), w.tolist()
    out = [[[[0] * wo for _ in range(ho)] for _ in range(co)] for _ in range(n)]
    for b in range(n):
        for o in range(co):
            c0 = (o // (co // group)) * cg  # first input channel of this output's group
            for i in range(ho):
                for j in range(wo):
                    s = 0
                    for ci in range(cg):
                        for u in range(kh):
                            for v in range(kw):
                                r, q = i * sh - pt + u * dh, j * sw - pl + v * dw
                                xv = xs[b][c0 + ci][r][q] if 0 <= r < h and 0 <= q < wd else zx
                                s += (xv - zx) * ws[o][ci][u][v]
                    out[b][o][i][j] = s
    return out


def _requant(acc: int, m: int, s: int, zp: int, lo: int, hi: int) -> int:
    """The contract in unbounded ints: ``clamp(zp + floor((acc·M + 2^(S-1)) / 2^S), lo, hi)``."""
    return min(hi, max(lo, zp + (acc * m + (1 << (s - 1))) // (1 << s)))


def _mac_params(rng, co: int, k: int, zx: int, w: np.ndarray, real=(1e-4, 3e-3)) -> dict:
    b_q = rng.integers(-20000, 20000, co)
    ms = [arith.quantize_multiplier(r) for r in rng.uniform(*real, co)]
    return {"w": w, "b_q": b_q, "bias": b_q - zx * w.reshape(co, -1).astype(np.int64).sum(1),
            "mult": np.array([m for m, _ in ms]), "shift": np.array([s for _, s in ms]),
            "zp_in": zx, "zp_out": -5, "lo": -5, "hi": 120}


# (cin, cout, hw, kernel, strides, pads (t, l, b, r), dilations, group)
CONV_CASES = {
    "pad_zp": (3, 5, (7, 7), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "stride_asym_pad": (4, 6, (9, 8), (3, 2), (2, 2), (2, 0, 1, 1), (1, 1), 1),
    "groups": (6, 4, (6, 6), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "depthwise_stride": (5, 5, (8, 8), (3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 5),
    "depthwise_mult": (3, 6, (6, 7), (3, 3), (1, 1), (0, 2, 2, 0), (1, 1), 3),
    "dilation": (3, 4, (9, 9), (3, 3), (1, 2), (2, 2, 2, 2), (2, 3), 1),
    "pointwise": (8, 3, (4, 5), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "wide_pad": (2, 3, (4, 4), (5, 5), (1, 1), (3, 3, 3, 3), (1, 1), 1),  # windows all-pad
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("zx", [-128, 37])
def test_conv_kernel_against_convinteger_and_loops(case, zx):
    cin, co, (h, wd), k, strides, pads, dil, group = CONV_CASES[case]
    rng = np.random.default_rng(sorted(CONV_CASES).index(case) * 256 + zx + 128)
    x = rng.integers(-128, 128, (2, cin, h, wd)).astype(np.int8)
    w = rng.integers(-127, 128, (co, cin // group) + k).astype(np.int8)
    q = _mac_params(rng, co, k[0] * k[1], zx, w)
    attrs = {"kernel": k, "strides": strides, "dilations": dil, "pads": pads, "group": group}
    acc = kernels.conv_acc(x, q, attrs) - q["b_q"].reshape(1, -1, 1, 1)  # Σ (x - zx)·w
    loop = np.array(_conv_loop(x.astype(np.int64), w.astype(np.int64), zx, strides, pads, dil, group))
    theirs = _ort_run("ConvInteger", x, w, zx, {"strides": list(strides), "pads": list(pads),
                                                 "dilations": list(dil), "group": group,
                                                 "kernel_shape": list(k)})
    assert np.array_equal(loop, theirs)  # the two oracles agree with each other
    assert acc.shape == loop.shape and np.array_equal(acc, loop)
    y = kernels.run_mac(Node("c", "Conv", ["x", "w"], ["y"], dict(attrs, q=q)), [x, None], None)[0]
    want = [[[[_requant(a + int(q["b_q"][o]), int(q["mult"][o]), int(q["shift"][o]), -5, -5, 120)
               for a in row] for row in ch] for o, ch in enumerate(img)] for img in loop.tolist()]
    assert y.dtype == np.int8 and y.tolist() == want


@pytest.mark.parametrize("layout", ["NC", "NCHW", "NHWC"])
def test_dense_kernel_against_matmulinteger_and_loops(layout):
    rng = np.random.default_rng(7)
    zx, co = 19, 9
    x = rng.integers(-128, 128, (3, 12) if layout == "NC" else (3, 3, 2, 2)).astype(np.int8)
    w = rng.integers(-127, 128, (co, 12)).astype(np.int8)
    q = _mac_params(rng, co, 12, zx, w, real=(1e-3, 2e-2))
    cols = x.reshape(3, 12) if layout != "NHWC" else np.moveaxis(x, 1, -1).reshape(3, 12)
    loop = [[sum((int(cols[b, k]) - zx) * int(w[o, k]) for k in range(12)) for o in range(co)] for b in range(3)]
    theirs = _ort_run("MatMulInteger", np.ascontiguousarray(cols), np.ascontiguousarray(w.T), zx, {})
    assert theirs.tolist() == loop
    attrs = {"in_layout": layout} if layout != "NC" else {}
    acc = kernels.dense_acc(x, q, attrs) - q["b_q"]
    assert acc.tolist() == loop
    y = kernels.run_mac(Node("d", "Dense", ["x", "w"], ["y"], dict(attrs, q=q)), [x, None], None)[0]
    want = [[_requant(a + int(q["b_q"][o]), int(q["mult"][o]), int(q["shift"][o]), -5, -5, 120)
             for o, a in enumerate(row)] for row in loop]
    assert y.tolist() == want


@pytest.mark.parametrize("group", [1, 4])
def test_large_conv_kernel_against_convinteger(group):
    """A layer past ``Conv.conv``'s im2col limit (its per-kernel-offset path) against
    onnxruntime only (too big for Python loops)."""
    rng = np.random.default_rng(8 + group)
    zx, co = -3, 8
    x = rng.integers(-128, 128, (1, 32, 128, 128)).astype(np.int8)
    w = rng.integers(-127, 128, (co, 32 // group, 3, 3)).astype(np.int8)
    q = _mac_params(rng, co, 9, zx, w)
    attrs = {"kernel": (3, 3), "strides": (1, 1), "dilations": (1, 1), "pads": (1, 1, 1, 1), "group": group}
    acc = kernels.conv_acc(x, q, attrs) - q["b_q"].reshape(1, -1, 1, 1)
    theirs = _ort_run("ConvInteger", x, w, zx, {"pads": [1, 1, 1, 1], "group": group, "kernel_shape": [3, 3]})
    assert np.array_equal(acc, theirs)
