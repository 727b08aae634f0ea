"""QDQ models taken as they are: read QuantizeLinear/DequantizeLinear pairs, drop them.

A model written by onnxruntime's ``quantize_static`` (QuantFormat.QDQ, QInt8) carries
every activation as ``x → QuantizeLinear(s, z) → DequantizeLinear(s, z) → readers``; its
weights and biases are ``DequantizeLinear`` of int8/int32 constants, which the frontend
folds into float constants ``w_q · s_w`` (exactly representable). `strip_qdq` records
``x``'s ``(s, z)`` and rewires the readers to ``x``; the quantiser then re-derives the
weights with the same symmetric per-channel rule (``s_w = max|w| / 127``), which gives
back the model's int8 weights and int32 biases exactly (docs/numerics.md, "QDQ models").

Supported schemes: int8 activations per tensor (uint8 activations are shifted by 128,
which is exact), int8 symmetric weights (per channel or per tensor), int32 biases.
Refused with one line naming the tensor: int16/uint16/int4/float8 types, per-axis
activation parameters, uint8 weights with a non-zero zero point (`check_qdq_model` on the
ONNX file, since the frontend folds weight DequantizeLinear nodes away).
"""

from __future__ import annotations

import os

import numpy as np

from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph


def is_qdq(graph: Graph) -> bool:
    """True when the graph still holds QuantizeLinear nodes (a QDQ model)."""
    return any(n.op == "QuantizeLinear" for n in graph.nodes)


def _qparams(graph: Graph, node) -> tuple[float, int]:
    """Per-tensor ``(scale, zp)`` of an activation Q node as int8; refuses other schemes."""
    x = node.inputs[0]
    s = graph.tensors[node.inputs[1]].data
    z = graph.tensors[node.inputs[2]].data if len(node.inputs) > 2 and node.inputs[2] else np.zeros((), np.uint8)
    if np.asarray(s).size != 1:
        raise UnsupportedError(f"tensor '{x}': per-axis activation quantisation "
                               f"({np.asarray(s).size} scales) is not supported; use per-tensor")
    z = np.asarray(z)
    if z.dtype == np.uint8:
        zp = int(z.item()) - 128
    elif z.dtype == np.int8:
        zp = int(z.item())
    else:
        raise UnsupportedError(f"tensor '{x}': {z.dtype} activation quantisation is not supported "
                               "(int8 or uint8 only)")
    scale = float(np.asarray(s, np.float32).item())
    if not (np.isfinite(scale) and scale > 0):
        raise UnsupportedError(f"tensor '{x}': QuantizeLinear scale {scale:g} must be finite and > 0")
    return scale, zp


def strip_qdq(graph: Graph) -> dict[str, tuple[float, int]]:
    """Remove every Q→DQ pair from ``graph`` (in place); returns tensor -> ``(scale, zp)``.

    The tensor that a QuantizeLinear reads takes its parameters; readers of the matching
    DequantizeLinear read that tensor instead. A DequantizeLinear whose output is a graph
    output gives its name to the tensor, so output names do not change.
    """
    fixed: dict[str, tuple[float, int]] = {}
    consumers = graph.consumers()
    drop: set[str] = set()
    for node in graph.nodes:
        if node.op != "QuantizeLinear":
            continue
        x, qout = node.inputs[0], node.outputs[0]
        params = _qparams(graph, node)
        if x in fixed and fixed[x] != params:
            params = fixed[x]  # two Q of one tensor: the first wins
        fixed[x] = params
        drop.add(node.name)
        for reader in consumers.get(qout, []):
            if reader.op != "DequantizeLinear":
                raise UnsupportedError(f"tensor '{qout}': QuantizeLinear output read by "
                                       f"{reader.op} node '{reader.name}' (only DequantizeLinear)")
            drop.add(reader.name)
            y = reader.outputs[0]
            if y in graph.outputs and x not in graph.inputs:
                _rename(graph, x, y)
                fixed[y] = fixed.pop(x)
                x = y
            else:
                graph.replace_uses(y, x)
        if qout in graph.outputs:
            raise UnsupportedError(f"tensor '{qout}': int8 graph outputs are not supported; "
                                   "end the model with DequantizeLinear")
    for node in graph.nodes:
        if node.op == "DequantizeLinear" and node.name not in drop:
            raise UnsupportedError(f"tensor '{node.inputs[0]}': DequantizeLinear of an activation "
                                   "that no QuantizeLinear produced")
    graph.nodes = [n for n in graph.nodes if n.name not in drop]
    graph.remove_unused()
    return fixed


def _rename(graph: Graph, old: str, new: str) -> None:
    """Give tensor ``old`` the name ``new`` (whose own tensor is being removed)."""
    for n in graph.nodes:
        n.inputs = [new if i == old else i for i in n.inputs]
        n.outputs = [new if o == old else o for o in n.outputs]
    graph.outputs = [new if o == old else o for o in graph.outputs]
    t = graph.tensors.pop(old)
    t.name = new
    graph.tensors[new] = t


def recover_weights(w: np.ndarray, axis: int = 0, tol: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """The int8 weights and per-channel scales behind folded ``w = w_q · s`` (symmetric).

    For each output channel, the largest ``k <= 127`` for which ``w / (max|w| / k)`` is all
    integers (within ``tol``) gives ``s = max|w| / k``: ``k = 127`` for onnxruntime's
    weights, smaller for reduced-range or QAT weights. A multiple of the true ``k`` may win
    (``2·w_q`` at ``s/2``), which represents the same products exactly.
    """
    w = np.asarray(w, np.float64)
    wc = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    amax = np.abs(wc).max(axis=1)
    scale = np.ones(len(wc))
    q = np.zeros(wc.shape, np.int64)
    for c in range(len(wc)):
        if amax[c] == 0:
            continue
        for k in range(127, 0, -1):
            r = wc[c] * (k / amax[c])
            if np.all(np.abs(r - np.rint(r)) < tol):
                break
        else:  # not on any grid: plain symmetric quantisation
            k, r = 127, wc[c] * (127 / amax[c])
        scale[c], q[c] = amax[c] / k, np.rint(r)
    q = np.moveaxis(q.reshape(np.moveaxis(w, axis, 0).shape), 0, axis)
    return q.astype(np.int8), scale.astype(np.float32)


def check_qdq_model(path: str | os.PathLike) -> None:
    """Refuse QDQ schemes we do not support, naming the tensor (reads the ONNX file).

    Checks what the folded graph no longer shows: the integer type of every
    DequantizeLinear input (weights included) and the zero points of uint8 weights.
    """
    import onnx  # here, not at the top: the RTL testbenches import this package (sim/golden.py)
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            continue
        zname = node.input[2] if len(node.input) > 2 else ""
        x = node.input[0]
        if x in inits:
            elem = inits[x].data_type
        elif zname in inits:
            elem = inits[zname].data_type
        else:
            elem = onnx.TensorProto.UINT8
        is_weight = node.op_type == "DequantizeLinear" and x in inits
        ok = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8) + ((onnx.TensorProto.INT32,) if is_weight else ())
        if elem not in ok:
            name = onnx.TensorProto.DataType.Name(elem).lower()
            raise UnsupportedError(f"tensor '{x}': {name} quantisation is not supported "
                                   "(int8 weights and activations, int32 biases)")
        if is_weight and elem == onnx.TensorProto.UINT8 and zname in inits:
            if np.any(numpy_helper.to_array(inits[zname]) != 0):
                raise UnsupportedError(f"tensor '{x}': uint8 weights with a non-zero zero point are "
                                       "not supported (use symmetric int8 weights)")
        scale = node.input[1]
        if not is_weight and scale in inits and int(np.prod(inits[scale].dims)) > 1:
            raise UnsupportedError(f"tensor '{x}': per-axis activation quantisation is not supported")
