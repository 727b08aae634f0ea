"""Reference executors: run a `Graph` node by node on numpy arrays.

`run_float` is the float reference (each op's ``run``); it must agree with onnxruntime.
The integer reference lives with quantisation (`bbgrap_hls.quant`).
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph
from bbgrap_hls.ops import get_op


def check_feeds(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validate input arrays against the graph's inputs (names, shapes, finite values)."""
    out = {}
    for name in graph.inputs:
        if name not in feeds:
            raise BadInputError(f"input '{name}' is missing (have: {', '.join(sorted(feeds)) or 'none'})")
        x = graph.held_input(name, feeds[name])  # an input held in pixel blocks (passes/stem.py)
        want = graph.tensors[name].shape
        if x.shape != want:
            # the batch dimension left out, or a 1-D model's (N, C, L) for its lifted
            # (N, C, L, 1) input (frontend/lift1d.py), or both
            if x.size == int(np.prod(want)) and x.shape in (want[1:], want[:-1], want[1:-1]):
                x = x.reshape(want)
            else:
                raise BadInputError(f"input '{name}': shape {x.shape}, the model expects {want}")
        if x.dtype.kind not in "fiu":
            raise BadInputError(f"input '{name}': dtype {x.dtype}, expected a numeric array")
        if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
            raise BadInputError(f"input '{name}': contains NaN or Inf")
        out[name] = x.astype(np.float32)
    return out


def run_float(graph: Graph, feeds: dict[str, np.ndarray], keep: bool = False) -> dict[str, np.ndarray]:
    """Run the float reference.

    Args:
        graph: the graph (any stage before quantisation).
        feeds: input name -> array.
        keep: return every intermediate tensor, not only the graph outputs.
    """
    env: dict[str, np.ndarray] = dict(check_feeds(graph, feeds))
    for name, t in graph.tensors.items():
        if t.data is not None:
            env[name] = t.data
    for node in graph.nodes:
        ins = [env[i] if i else None for i in node.inputs]
        outs = get_op(node.op).run(node, ins)
        for name, v in zip(node.outputs, outs, strict=False):
            env[name] = v
    if keep:
        return env
    return {o: env[o] for o in graph.outputs}
