"""Constant folding while loading: nodes whose value the static graph already knows.

Exporters compute shapes at run time (``Shape → Gather → Unsqueeze → Concat → Reshape``,
``Div`` of a channel count by the group count, ``ConstantOfShape`` weights...). With static
shapes all of that is constant: the loader folds it here, node by node, so that the IR
only holds real layers. The common shape-arithmetic ops have direct numpy versions (fast
on models with thousands of them); any other all-constant node is evaluated by the onnx
package's reference evaluator at the model's opset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph, Tensor
from bbgrap_hls.ops.qdq import fold_dequantize

#: Largest constant a fold may build (VGG-19's first dense weight has 1.0e8 elements).
MAX_CONST_ELEMENTS = 1 << 28


def _attrs(on: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in on.attribute}


def _axes(on: onnx.NodeProto, values: list, opset: int, since: int) -> list[int] | None:
    """Axes from the attribute (before opset ``since``) or the second input."""
    if opset < since:
        axes = _attrs(on).get("axes")
    else:
        axes = values[1] if len(values) > 1 else None
    return None if axes is None else [int(a) for a in np.asarray(axes).ravel()]


def _unsqueeze(on, v, opset):
    x, axes = v[0], _axes(on, v, opset, 13)
    rank = x.ndim + len(axes)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        x = np.expand_dims(x, a)
    return [x]


def _squeeze(on, v, opset):
    axes = _axes(on, v, opset, 13)
    return [np.squeeze(v[0]) if axes is None else np.squeeze(v[0], tuple(axes))]


def _gather(on, v, opset):
    return [np.take(v[0], v[1].astype(np.int64), axis=int(_attrs(on).get("axis", 0)))]


def _concat(on, v, opset):
    return [np.concatenate([x for x in v if x is not None], axis=int(_attrs(on)["axis"]))]


def _constant_of_shape(on, v, opset):
    t = _attrs(on).get("value")
    fill = numpy_helper.to_array(t) if t is not None else np.zeros(1, np.float32)
    return [np.full(tuple(int(d) for d in v[0]), fill.reshape(-1)[0], dtype=fill.dtype)]


def _cast(on, v, opset):
    to = helper.tensor_dtype_to_np_dtype(int(_attrs(on)["to"]))
    return [v[0].astype(to)]


def _div(on, v, opset):
    a, b = v
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":  # ONNX integer Div truncates
        return [(np.trunc(a / b)).astype(np.result_type(a, b))]
    return [a / b]


def _binary(f):
    return lambda on, v, opset: [np.asarray(f(v[0], v[1]))]


_FAST: dict[str, Callable[[onnx.NodeProto, list, int], list[np.ndarray]]] = {
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Gather": _gather,
    "Concat": _concat,
    "ConstantOfShape": _constant_of_shape,
    "Cast": _cast,
    "Div": _div,
    "Mul": _binary(np.multiply),
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Identity": lambda on, v, opset: [v[0]],
    "DequantizeLinear": fold_dequantize,  # the onnx evaluator has it only from opset 19
}


# Op types that the frontend accepts only when their value is static (shape arithmetic).
FOLD_ONLY = frozenset({
    "Constant", "ConstantOfShape", "Shape", "Size", "Gather", "Slice", "Cast", "Range", "Expand",
    "Equal", "Where", "Floor", "Ceil", "ReduceProd", "Min", "Max", "Neg", "Sqrt", "Tile",
})


def fold_node(on: onnx.NodeProto, graph: Graph) -> bool:
    """Fold ``on`` into constant tensors of ``graph`` when its value is static.

    Returns True when folded (the node then disappears from the IR).
    """
    values: list[np.ndarray]
    if on.op_type == "Constant":
        values = _run_reference(on, [], graph.opset)
    elif on.op_type == "Shape":
        shape = np.array(graph.tensor(on.input[0]).shape, dtype=np.int64)
        a = _attrs(on)
        values = [shape[a.get("start", 0): a.get("end", len(shape))]]
    elif on.op_type == "Size":
        values = [np.array(graph.tensor(on.input[0]).size, dtype=np.int64)]
    elif on.input and all(not i or graph.tensors[i].data is not None for i in on.input):
        ins = [graph.tensors[i].data if i else None for i in on.input]
        _check_size(on, ins)
        fast = _FAST.get(on.op_type)
        try:
            values = fast(on, ins, graph.opset) if fast else None
        except Exception:  # unusual attributes: let the reference evaluator decide
            values = None
        if values is None:
            values = _run_reference(on, ins, graph.opset)
    else:
        return False
    for out, v in zip(on.output, values, strict=False):
        if out:
            v = np.asarray(v)
            graph.tensors[out] = Tensor(out, tuple(v.shape), str(v.dtype), v)
    return True


def _check_size(on: onnx.NodeProto, ins: list) -> None:
    """Refuse a fold whose result size comes from model values and exceeds the loader's
    limit, before numpy tries to allocate it (a hostile ConstantOfShape/Expand/Tile)."""
    try:
        if on.op_type == "ConstantOfShape":
            n = int(np.prod(np.asarray(ins[0], dtype=np.float64)))
        elif on.op_type == "Expand":
            n = int(np.prod(np.asarray(np.broadcast_shapes(ins[0].shape, tuple(int(d) for d in ins[1])), np.float64)))
        elif on.op_type == "Tile":
            n = int(np.prod(np.asarray(ins[0].shape, np.float64) * np.asarray(ins[1], np.float64)))
        else:
            return
    except (ValueError, TypeError, IndexError):
        return  # malformed: the evaluator reports it
    if n > MAX_CONST_ELEMENTS:
        raise BadInputError(f"node '{on.name}' ({on.op_type}): constant of {n} elements is too large "
                            f"(limit {MAX_CONST_ELEMENTS})")


def _run_reference(on: onnx.NodeProto, values: list, opset: int) -> list[np.ndarray]:
    """Evaluate one node with onnx's reference evaluator, inside a model of ``opset``."""
    from onnx.reference import ReferenceEvaluator

    try:
        ins = [helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype), None)
               for i, v in zip(on.input, values, strict=False) if i]
        outs = [helper.make_empty_tensor_value_info(o) for o in on.output if o]
        g = helper.make_graph([on], "fold", ins, outs)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        ev = ReferenceEvaluator(m)
        feeds = {i: np.asarray(v) for i, v in zip(on.input, values, strict=False) if i}
        return list(ev.run(None, feeds))
    except Exception as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise BadInputError(f"node '{on.name}' ({on.op_type}): cannot fold constant: {msg}") from None
