"""Small helpers shared by op modules (padding arithmetic, windows)."""

from __future__ import annotations

import numpy as np


def resolve_pads(
    auto_pad: str, pads: list[int] | None, in_hw: tuple[int, ...], kernel: tuple[int, ...],
    strides: tuple[int, ...], dilations: tuple[int, ...],
) -> tuple[int, ...]:
    """Explicit pads (begin..., end...) for ONNX ``auto_pad`` / ``pads`` attributes."""
    nd = len(in_hw)
    if auto_pad in ("", "NOTSET"):
        return tuple(pads) if pads else (0,) * (2 * nd)
    if auto_pad == "VALID":
        return (0,) * (2 * nd)
    begin, end = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations, strict=False):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        if auto_pad == "SAME_UPPER":
            begin.append(small)
            end.append(big)
        else:  # SAME_LOWER
            begin.append(big)
            end.append(small)
    return tuple(begin + end)


def out_size(size: int, k: int, s: int, d: int, pb: int, pe: int, ceil: bool = False) -> int:
    """Output length of a window op along one axis."""
    span = size + pb + pe - ((k - 1) * d + 1)
    return (-(-span // s) if ceil else span // s) + 1


def windows(x: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int],
            dilations: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """All windows of an already padded NCHW array: shape (N, C, Ho, Wo, kh, kw)."""
    n, c = x.shape[:2]
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, out_hw
    st = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, ho, wo, kh, kw),
        (st[0], st[1], st[2] * sh, st[3] * sw, st[2] * dh, st[3] * dw), writeable=False)


def norm_axis(axis: int, rank: int, fail) -> int:
    """``axis`` in ``[0, rank)``; ``fail(msg)`` builds the error for an out-of-range axis."""
    a = int(axis)
    if not -rank <= a < rank:
        raise fail(f"axis {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def optional_const(graph, onnx_node, index: int, op, what: str) -> np.ndarray | None:
    """Value of the node's constant input ``index``; None when omitted.

    Raises the op's error when the input is present but not a constant (a value the
    static graph must know, such as a shape, axes or pads).
    """
    if len(onnx_node.input) <= index or not onnx_node.input[index]:
        return None
    value = graph.const(onnx_node.input[index])
    if value is None:
        raise op.fail(onnx_node, f"{what} (input {index}, '{onnx_node.input[index]}') must be a constant")
    return np.asarray(value)


def refuse_outputs(onnx_node, op, first_extra: int, what: str) -> None:
    """Refuse optional outputs from index ``first_extra`` on (the loader blanks unused ones)."""
    used = [o for o in onnx_node.output[first_extra:] if o]
    if used:
        raise op.fail(onnx_node, f"the {what} output ('{used[0]}') is not supported")


def pool_shape(in_hw, kernel, strides, dilations, pads, ceil: bool) -> tuple[int, ...]:
    """Output spatial shape of a pooling window; with ``ceil`` the last window must start
    inside the input or its begin padding (the ONNX / PyTorch rule)."""
    nd = len(in_hw)
    out = []
    for i in range(nd):
        o = out_size(in_hw[i], kernel[i], strides[i], dilations[i], pads[i], pads[i + nd], ceil)
        if ceil and (o - 1) * strides[i] >= in_hw[i] + pads[i]:
            o -= 1
        out.append(o)
    return tuple(out)
