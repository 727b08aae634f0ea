"""Integer parameters of each fabric node (``node.attrs["q"]``), from scales and constants.

`category` sorts op kinds into the few integer kernels of the int8 contract; `build_q`
computes one node's parameters once every activation tensor has its `QuantParams`. The
keys of each category are documented in `bbgrap_hls.quant` and docs/numerics.md.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bbgrap_hls.errors import BadInputError, UnsupportedError
from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.ops import get_op
from bbgrap_hls.quant import arith

#: Ops that only move, select or pad int8 values: output scale = input scale.
MOVE_KINDS = frozenset({"MaxPool", "Concat", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                        "Transpose", "Pad", "Identity", "Dropout", "Slice", "GlobalMaxPool", "Resize",
                        "ZeroInsert", "DepthToSpace", "ResizeBilinear"})
#: Ops whose following Relu/Relu6 fuses into the requantisation clamp.
FUSING_KINDS = frozenset({"Conv", "Dense", "ChannelAffine", "Add", "Sub"})
FUSABLE_ACTS = frozenset({"Relu", "Relu6"})


def category(kind: str) -> str | None:
    """The integer kernel family of an op kind, or None when there is none."""
    if kind in ("Conv", "Dense"):
        return "mac"
    if kind == "ChannelAffine":
        return "affine"
    if kind in MOVE_KINDS:
        return "move"
    if kind in ("Add", "Sub"):
        return "add"
    if kind == "Mul":
        return "mul"
    if kind == "AveragePool":
        return "avgpool"
    if kind == "GlobalAveragePool":
        return "gap"
    if kind == "LRN":
        return "lrn"
    if get_op(kind).hls_kernel == "lut_act":
        return "lut"
    return None


def qp(graph: Graph, name: str) -> tuple[float, int]:
    """``(scale, zp)`` of an activation tensor (per tensor)."""
    q = graph.tensors[name].quant
    if q is None:
        raise UnsupportedError(f"tensor '{name}' has no quantisation parameters")
    return float(q.scale), int(q.zp)


def range_params(name: str, lo: float, hi: float, what: str = "calibrated") -> tuple[np.float32, int]:
    """`arith.choose_params` of a tensor's range; a non-finite range is refused naming it."""
    try:
        return arith.choose_params(lo, hi)
    except ValueError:
        hint = ("the float model overflows float32 on the calibration samples"
                if what == "calibrated" else "the model holds Inf or NaN")
        raise BadInputError(f"tensor '{name}': {what} range [{lo:g}, {hi:g}] is not finite "
                            f"({hint})") from None


def clamp_bounds(act: str | None, s_y: float, z_y: int) -> tuple[int, int]:
    """``(lo, hi)`` of the requantisation clamp with an optional fused Relu/Relu6."""
    lo, hi = arith.QMIN, arith.QMAX
    if act in ("Relu", "Relu6"):
        lo = max(lo, z_y)
    if act == "Relu6":
        hi = int(arith.quantize(np.float32(6.0), s_y, z_y))
    return lo, hi


def _mac(node: Node, g: Graph) -> dict:
    s_x, z_x = qp(g, node.inputs[0])
    s_y, z_y = qp(g, node.outputs[0])
    w = g.tensors[node.inputs[1]].data
    if node.attrs.get("qdq"):  # weights of a QDQ model: recover its integers exactly
        from bbgrap_hls.quant.qdq import recover_weights

        w_q, s_w = recover_weights(w, axis=0)
    else:
        w_q, s_w = arith.quantize_weights(w, axis=0)
    has_b = len(node.inputs) > 2 and node.inputs[2]
    b = g.tensors[node.inputs[2]].data if has_b else np.zeros(w.shape[0], np.float32)
    s_b = np.float64(s_x) * s_w.astype(np.float64)
    bias = arith.quantize_bias(b, s_b) - z_x * w_q.reshape(w.shape[0], -1).astype(np.int64).sum(axis=1)
    mult, shift = arith.quantize_multipliers(s_b / s_y)
    lo, hi = clamp_bounds(node.attrs.get("act"), s_y, z_y)
    return {"w": w_q, "w_scale": s_w, "bias": bias, "mult": mult, "shift": shift,
            "zp_in": z_x, "zp_out": z_y, "lo": lo, "hi": hi}


def _affine(node: Node, g: Graph) -> dict:
    """ChannelAffine ``y = a[c]·x + b[c]``: one signed multiplier per channel, bias after it.

    ``y = clamp(zp_out + (((x - zp_in)·mult[c] + bias[c] + 2^(shift-1)) >> shift), lo, hi)``
    with ``mult[c] ≈ a[c]·s_x/s_y·2^shift`` (|mult| < 2^24) and ``bias[c] = round(b[c]/s_y·2^shift)``.
    """
    s_x, z_x = qp(g, node.inputs[0])
    s_y, z_y = qp(g, node.outputs[0])
    a = np.asarray(g.tensors[node.inputs[1]].data, np.float64)
    b = np.asarray(g.tensors[node.inputs[2]].data, np.float64)
    r = np.abs(a) * s_x / s_y
    mult, shift = arith.quantize_multipliers(np.where(r > 0, r, 1.0))
    mult = np.where(r > 0, np.sign(a).astype(np.int64) * mult, 0)
    bias = np.clip(np.rint(b / s_y * np.exp2(shift.astype(np.float64))), -(2.0**62), 2.0**62).astype(np.int64)
    lo, hi = clamp_bounds(node.attrs.get("act"), s_y, z_y)
    return {"mult": mult, "shift": shift, "bias": bias, "zp_in": z_x, "zp_out": z_y, "lo": lo, "hi": hi}


def _lut(node: Node, g: Graph) -> dict:
    s_x, z_x = qp(g, node.inputs[0])
    s_y, z_y = qp(g, node.outputs[0])
    op = get_op(node.op)
    consts = [g.tensors[i].data if i else None for i in node.inputs[1:]]

    def f(x: np.ndarray) -> np.ndarray:
        return op.run(node, [x] + consts)[0]

    return {"lut": arith.build_lut(f, s_x, z_x, s_y, z_y), "zp_in": z_x, "zp_out": z_y}


def _operands(node: Node, g: Graph) -> tuple[list[tuple[float, int]], dict]:
    """Scales/zps of a binary op's operands; constant operands quantised per tensor."""
    params, consts = [], {}
    for k, name in enumerate(node.inputs):
        t = g.tensors[name]
        if t.data is not None:
            s, z = range_params(name, float(np.min(t.data)), float(np.max(t.data)), "constant")
            consts[k] = arith.quantize(t.data, s, z)
            params.append((float(s), z))
        else:
            params.append(qp(g, name))
    return params, consts


def _add(node: Node, g: Graph) -> dict:
    (s_a, z_a), (s_b, z_b) = (p := _operands(node, g))[0]
    s_y, z_y = qp(g, node.outputs[0])
    r_a, r_b = s_a / s_y, s_b / s_y
    m, shift = arith.quantize_multiplier(max(r_a, r_b))
    # saturated like `quantize_multiplier` when a ratio reaches 2^23 (docs/numerics.md)
    m_a, m_b = (min(round(r * 2.0**shift), arith.MAX_MULT) for r in (r_a, r_b))
    if node.op == "Sub":
        m_b = -m_b
    lo, hi = clamp_bounds(node.attrs.get("act"), s_y, z_y)
    return {"mult_a": m_a, "mult_b": m_b, "shift": shift, "zp_a": z_a, "zp_b": z_b,
            "zp_out": z_y, "lo": lo, "hi": hi, "consts": p[1]}


def _mul(node: Node, g: Graph) -> dict:
    (s_a, z_a), (s_b, z_b) = (p := _operands(node, g))[0]
    s_y, z_y = qp(g, node.outputs[0])
    mult, shift = arith.quantize_multiplier(s_a * s_b / s_y)
    return {"mult": mult, "shift": shift, "zp_a": z_a, "zp_b": z_b, "zp_out": z_y,
            "lo": arith.QMIN, "hi": arith.QMAX, "consts": p[1]}


def _avgpool(node: Node, g: Graph) -> dict:
    s_x, z_x = qp(g, node.inputs[0])
    s_y, z_y = qp(g, node.outputs[0])
    kh, kw = node.attrs["kernel"]
    n = np.arange(1, kh * kw + 1, dtype=np.float64)
    mult, shift = arith.quantize_multipliers(s_x / (s_y * n))
    return {"mult": mult, "shift": shift, "zp_in": z_x, "zp_out": z_y}


def _gap(node: Node, g: Graph) -> dict:
    s_x, z_x = qp(g, node.inputs[0])
    s_y, z_y = qp(g, node.outputs[0])
    n = int(np.prod(g.shape(node.inputs[0])[2:]))
    mult, shift = arith.quantize_multiplier(s_x / (s_y * n))
    return {"mult": mult, "shift": shift, "zp_in": z_x, "zp_out": z_y, "count": n}


def _lrn(node: Node, g: Graph) -> dict:
    """LRN: the code-indexed factor table of ``ops.lrn`` (docs/numerics.md, "LRN")."""
    s_x, z_x = qp(g, node.inputs[0])
    s_y, z_y = qp(g, node.outputs[0])
    return get_op("LRN").quant(node, s_x, z_x, s_y, z_y, g.shape(node.inputs[0])[1])


def _move(node: Node, g: Graph) -> dict:
    if node.op in ("Pad", "ZeroInsert"):  # a zero fill is the zero point
        s, z = qp(g, node.inputs[0])
        return {"pad_value": int(arith.quantize(np.float32(node.attrs["value"]), s, z))}
    return {}


BUILDERS: dict[str, Callable[[Node, Graph], dict]] = {
    "mac": _mac, "affine": _affine, "lut": _lut, "add": _add, "mul": _mul,
    "avgpool": _avgpool, "gap": _gap, "move": _move, "lrn": _lrn,
}


def build_q(node: Node, g: Graph) -> dict:
    """``node.attrs["q"]`` for a fabric node (raises UnsupportedError without a kernel)."""
    cat = category(node.op)
    if cat is None:
        raise UnsupportedError(f"node '{node.name}' ({node.op}): no int8 kernel; "
                               "it can only run as a host op")
    return BUILDERS[cat](node, g)
