"""Test vectors: the golden int8 values of the fabric's inputs and outputs, NHWC order."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.codegen.ports import Design
from bbgrap_hls.ir import Graph


def to_stream_order(a: np.ndarray) -> np.ndarray:
    """An (N, C, H, W) or (N, C) int8 array as N frames of NHWC bytes, shape (N, elems)."""
    a = np.asarray(a)
    if a.ndim == 4:
        a = a.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(a.reshape(a.shape[0], -1)).astype(np.int8)


def golden(g: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor of the integer reference (int8 codes for fabric tensors)."""
    from bbgrap_hls.quant.execute import quantize_inputs, run_int8

    q = quantize_inputs(g, feeds)
    env = run_int8(g, q, keep=True)
    env.update(q)
    return env


def vectors(design: Design, env: dict[str, np.ndarray]) -> dict[str, bytes]:
    """``{file name: bytes}`` of the input and expected output vectors."""
    out = {}
    for t, ident, _ in design.inputs:
        out[f"in_{ident}.bin"] = to_stream_order(env[t]).tobytes()
    for t, ident, _ in design.outputs:
        out[f"expect_{ident}.bin"] = to_stream_order(env[t]).tobytes()
    return out
