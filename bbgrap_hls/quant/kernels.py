"""Integer kernels of the reference: one function per kernel family of `build.category`.

Each takes the node, its input arrays (int8 activations, constants as stored in the
graph) and the int8 graph, and returns int8 outputs computed from ``node.attrs["q"]``
with the formulas of docs/numerics.md. Op classes' ``run_int8`` methods call these.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.ops import get_op
from bbgrap_hls.ops.conv import Conv
from bbgrap_hls.ops.dense import flatten_input
from bbgrap_hls.quant import arith
from bbgrap_hls.quant.build import category

Arrays = list[np.ndarray]


def _i64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.int64)


#: Integers up to 2^53 in magnitude are exact in float64 (53-bit significand).
FLOAT64_EXACT = 1 << 53


def float_sum_bound(x_abs: int, w_abs: int, taps: int) -> int:
    """An upper bound of ``|s|`` for every partial sum ``s`` a product of ``taps``-long dot
    products of operands ``|x| <= x_abs``, ``|w| <= w_abs`` can form, in any order.

    Why float64 BLAS is exact below `FLOAT64_EXACT`: each product ``x·w`` is an integer of
    magnitude at most ``x_abs·w_abs`` (int8: 128·128 = 2^14), exactly representable; every
    intermediate value a matrix product forms (however the library blocks, reorders, splits
    over threads or fuses with FMA) is the exact sum of a subset of one output's products,
    so its magnitude is at most ``taps·x_abs·w_abs``. When that bound is below 2^53, every
    operand and every exact result of each addition (or FMA) is an integer the float64
    format represents, and IEEE 754 round-to-nearest returns a representable exact result
    unchanged: no step rounds, the float64 sum equals the integer sum. For int8 operands
    this holds up to 2^39 taps (a conv's ``cin/group · kh · kw``); a real layer has at most
    some 10^5.
    """
    return int(taps) * int(x_abs) * int(w_abs)


def _exact_in_float(x_abs: int, w_abs: int, taps: int, limit: int) -> bool:
    return float_sum_bound(x_abs, w_abs, taps) < limit


def conv_acc(x: np.ndarray, q: dict, attrs: dict, limit: int = FLOAT64_EXACT) -> np.ndarray:
    """``bias' + Σ x_q · w_q`` with padding filled by ``zp_in`` (int64 accumulator).

    The sum runs as a float64 matrix product (BLAS) when `float_sum_bound` stays below
    ``limit`` (2^53, always true for int8 operands: the result is then exact), else as an
    int64 one (numpy's integer matmul, no BLAS: some 50× slower on large layers). The tests
    pass a small ``limit`` to take the integer path.
    """
    w = np.asarray(q["w"])
    _, cin_g, kh, kw = w.shape
    x_abs = max(int(np.abs(_i64(x)).max(initial=0)), abs(int(q["zp_in"])))  # the pad value counts
    w_abs = int(np.abs(_i64(w)).max(initial=0))
    if _exact_in_float(x_abs, w_abs, cin_g * kh * kw, limit):
        acc = Conv.conv(x, w, attrs, pad_value=q["zp_in"], acc_dtype=np.float64).astype(np.int64)
    else:
        acc = Conv.conv(_i64(x), _i64(w), attrs, pad_value=q["zp_in"], acc_dtype=np.int64)
    return acc + _i64(q["bias"]).reshape(1, -1, 1, 1)


def dense_acc(x: np.ndarray, q: dict, attrs: dict, limit: int = FLOAT64_EXACT) -> np.ndarray:
    """``bias' + x_q · w_qᵀ`` (int64), input flattened in the weight's column order; float64
    BLAS when exact, as `conv_acc`."""
    xf = flatten_input(_i64(x), attrs.get("in_layout", "NC"))
    w = _i64(q["w"])
    if _exact_in_float(int(np.abs(xf).max(initial=0)), int(np.abs(w).max(initial=0)), w.shape[1], limit):
        acc = (xf.astype(np.float64) @ w.T.astype(np.float64)).astype(np.int64)
    else:
        acc = xf @ w.T
    return acc + _i64(q["bias"])


def run_mac(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """Conv / Dense: accumulate, then requantise per output channel (axis 1)."""
    q = node.attrs["q"]
    acc = conv_acc(inputs[0], q, node.attrs) if node.op == "Conv" else dense_acc(inputs[0], q, node.attrs)
    cs = arith.channel_shape(acc.ndim)
    return [arith.requantize(acc, q["mult"].reshape(cs), q["shift"].reshape(cs), q["zp_out"], q["lo"], q["hi"])]


def run_affine(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """ChannelAffine: ``(x - zp_in)·mult[c] + bias[c]``, rounded by ``shift[c]`` once."""
    q, x = node.attrs["q"], _i64(inputs[0])
    cs = arith.channel_shape(x.ndim)
    prod = (x - q["zp_in"]) * _i64(q["mult"]).reshape(cs) + _i64(q["bias"]).reshape(cs)
    y = arith.shift_round(prod, _i64(q["shift"]).reshape(cs)) + q["zp_out"]
    return [np.clip(y, q["lo"], q["hi"]).astype(np.int8)]


def run_lut(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """Unary activation: ``y = lut[x + 128]``."""
    return [arith.apply_lut(inputs[0], node.attrs["q"]["lut"])]


def _binary_operands(node: Node, inputs: Arrays) -> tuple[np.ndarray, np.ndarray]:
    consts = node.attrs["q"].get("consts", {})
    a, b = (consts[k] if k in consts else inputs[k] for k in range(2))
    return _i64(a), _i64(b)


def run_add(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """Add/Sub: both operands onto the output scale in one rounding (common shift)."""
    q = node.attrs["q"]
    a, b = _binary_operands(node, inputs)
    acc = (a - q["zp_a"]) * q["mult_a"] + (b - q["zp_b"]) * q["mult_b"]
    y = arith.shift_round(acc, q["shift"]) + q["zp_out"]
    return [np.clip(y, q["lo"], q["hi"]).astype(np.int8)]


def run_mul(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """Mul: ``acc = (a - z_a)(b - z_b)``, requantised once."""
    q = node.attrs["q"]
    a, b = _binary_operands(node, inputs)
    acc = (a - q["zp_a"]) * (b - q["zp_b"])
    return [arith.requantize(acc, q["mult"], q["shift"], q["zp_out"], q["lo"], q["hi"])]


def run_avgpool(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """AveragePool: ``acc = Σ (x_q - z_x)`` over the window, requantised by ``1/count``."""
    q, a = node.attrs["q"], node.attrs
    op = get_op("AveragePool")
    x = _i64(inputs[0]) - q["zp_in"]
    acc = op.win(op.padded(x, a, 0), a).sum(axis=(4, 5))
    p, (h, w) = a["pads"], x.shape[2:]
    if a["count_include_pad"]:
        mask = np.ones((1, 1, h + p[0] + p[2], w + p[1] + p[3]), np.int64)
    else:
        mask = np.pad(np.ones((1, 1, h, w), np.int64), ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    count = op.win(op.padded(mask, dict(a, pads=(0, 0, 0, 0)), 0), a).sum(axis=(4, 5))
    mult, shift = q["mult"][count - 1], q["shift"][count - 1]
    return [arith.requantize(acc, mult, shift, q["zp_out"])]


def run_gap(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """GlobalAveragePool: ``acc = Σ (x_q - z_x)`` over H·W, requantised by ``1/(H·W)``."""
    q, x = node.attrs["q"], _i64(inputs[0])
    acc = (x - q["zp_in"]).sum(axis=tuple(range(2, x.ndim)), keepdims=True)
    return [arith.requantize(acc, q["mult"], q["shift"], q["zp_out"])]


def run_move(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """MaxPool/Concat/layout/Pad: the float op on the int8 values (exact: values only move).

    Pad and ZeroInsert fill with the quantised pad value (the zero point for a zero fill).
    """
    op = get_op(node.op)
    if node.op in ("Pad", "ZeroInsert"):
        node = Node(node.name, node.op, node.inputs, node.outputs,
                    dict(node.attrs, value=node.attrs["q"]["pad_value"]))
    ins = [x.astype(np.float32) if x is not None and x.dtype == np.int8 else x for x in inputs]
    return [np.asarray(y).astype(np.int8) for y in op.run(node, ins)]


KERNELS: dict[str, Callable[[Node, Arrays, Graph], Arrays]] = {
    "mac": run_mac, "affine": run_affine, "lut": run_lut, "add": run_add, "mul": run_mul,
    "avgpool": run_avgpool, "gap": run_gap, "move": run_move,
}


def run_node_int8(node: Node, inputs: Arrays, graph: Graph) -> Arrays:
    """Run one fabric node of an int8 graph with its kernel family."""
    return KERNELS[category(node.op)](node, inputs, graph)
