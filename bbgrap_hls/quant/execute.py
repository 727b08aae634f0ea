"""The integer reference executor (the golden model) and its input/output helpers.

`run_int8` runs an int8 graph node by node: fabric nodes with their integer kernels
(the op's ``run_int8`` when it defines one, else `kernels.run_node_int8`), host ops in
float on dequantised values. `compare` measures agreement with the float reference.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph
from bbgrap_hls.ops import Op, get_op
from bbgrap_hls.quant import arith
from bbgrap_hls.quant.kernels import run_node_int8
from bbgrap_hls.reference import check_feeds


def _params(graph: Graph, name: str) -> tuple[np.ndarray, np.ndarray]:
    q = graph.tensors[name].quant
    if q is None:
        raise BadInputError(f"tensor '{name}' has no quantisation parameters: quantise the graph first")
    return q.scale, q.zp


def quantize_inputs(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Input arrays as int8: int8 arrays are taken as raw codes, others quantised.

    Float inputs are validated (shape, NaN/Inf) and quantised with the input tensor's
    parameters, as the host does before streaming a frame in.
    """
    out = {}
    raw = {k: v for k, v in feeds.items() if np.asarray(v).dtype == np.int8}
    floats = check_feeds(graph, {k: v for k, v in feeds.items() if k not in raw}
                         | {k: np.zeros(graph.tensors[k].shape, np.float32) for k in raw if k in graph.tensors})
    for name in graph.inputs:
        if name in raw:
            x = graph.held_input(name, raw[name])
            want = graph.tensors[name].shape
            if x.shape != want:
                if x.shape != want[1:] or want[0] != 1:
                    raise BadInputError(f"input '{name}': shape {x.shape}, the model expects {want}")
                x = x.reshape(want)
            out[name] = x
        else:
            s, z = _params(graph, name)
            out[name] = arith.quantize(floats[name], s, z)
    return out


def dequantize_outputs(graph: Graph, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Raw outputs as float32: int8 ones dequantised with their tensor's parameters."""
    out = {}
    for name, v in outputs.items():
        if v.dtype == np.int8:
            s, z = _params(graph, name)
            out[name] = arith.dequantize(v, s, z)
        else:
            out[name] = np.asarray(v, np.float32)
    return out


def run_int8(graph: Graph, feeds: dict[str, np.ndarray], keep: bool = False) -> dict[str, np.ndarray]:
    """Run the integer reference on an int8 graph (`bbgrap_hls.quant.quantize`'s result).

    Args:
        graph: the int8 graph.
        feeds: input name -> float array (quantised here) or int8 array (raw codes).
        keep: return every tensor, not only the graph outputs.

    Returns:
        Output name -> int8 codes for fabric outputs, float32 for host-op outputs
        (`dequantize_outputs` turns them all into floats).
    """
    env: dict[str, np.ndarray] = dict(quantize_inputs(graph, feeds))
    for name, t in graph.tensors.items():
        if t.data is not None:
            env[name] = t.data
    for node in graph.nodes:
        op = get_op(node.op)
        if node.host:
            ins = [None if not i else _to_float(graph, i, env[i]) for i in node.inputs]
            outs = op.run(node, ins)
        else:
            ins = [None if not i else _to_int8(graph, i, env[i]) for i in node.inputs]
            if type(op).run_int8 is not Op.run_int8:
                outs = op.run_int8(node, ins, graph)
            else:
                outs = run_node_int8(node, ins, graph)
        for name, v in zip(node.outputs, outs, strict=False):
            env[name] = v
    return env if keep else {o: env[o] for o in graph.outputs}


def _to_float(graph: Graph, name: str, v: np.ndarray) -> np.ndarray:
    if v.dtype == np.int8 and graph.tensors[name].data is None:
        s, z = _params(graph, name)
        return arith.dequantize(v, s, z)
    return v


def _to_int8(graph: Graph, name: str, v: np.ndarray) -> np.ndarray:
    t = graph.tensors[name]
    if t.data is None and v.dtype != np.int8:  # a host op's float output read by the fabric
        s, z = _params(graph, name)
        return arith.quantize(v, s, z)
    return v


def compare(reference: np.ndarray, test: np.ndarray) -> dict[str, float]:
    """Agreement of ``test`` with ``reference`` (float arrays of the same shape).

    Returns ``cosine`` similarity, ``sqnr_db`` (10·log10 of signal over error power),
    ``max_abs_err`` and, for outputs with a class axis (rank 2, more than one class),
    ``top1`` (fraction of rows whose argmax agrees).
    """
    r = np.asarray(reference, np.float64).ravel()
    t = np.asarray(test, np.float64).ravel()
    err = r - t
    nr, nt = np.linalg.norm(r), np.linalg.norm(t)
    cos = float(r @ t / (nr * nt)) if nr > 0 and nt > 0 else float(nr == nt)
    pe = float(np.mean(err**2))
    sqnr = float("inf") if pe == 0 else 10 * np.log10(max(float(np.mean(r**2)), 1e-300) / pe)
    out = {"cosine": cos, "sqnr_db": sqnr, "max_abs_err": float(np.max(np.abs(err), initial=0.0))}
    ref = np.asarray(reference)
    if ref.ndim == 2 and ref.shape[1] > 1:
        out["top1"] = float(np.mean(np.argmax(ref, 1) == np.argmax(np.asarray(test), 1)))
    return out
