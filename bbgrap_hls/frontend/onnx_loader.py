"""Load an ONNX file into a `Graph`.

Steps: read and check the protobuf; fix dynamic input dimensions from ``--input-shape``;
lift a 1-D model's (N, C, L) activations to (N, C, L, 1) (`lift1d`);
walk the nodes in order, folding every node whose inputs are all constant (shape
arithmetic as exporters write it: Shape, Gather, Unsqueeze, Concat, Slice, ...) with the
onnx package's reference evaluator, and turning every other node into an IR node through
its op's ``parse`` and ``infer`` (and its ``lower``, when it has one: Split becomes one Slice
per output, Slice and Resize drop their constant inputs). Unknown op types are collected
and refused together.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from bbgrap_hls.errors import BadInputError, UnsupportedError
from bbgrap_hls.frontend.fold import FOLD_ONLY, fold_node
from bbgrap_hls.frontend.lift1d import lift_node, lift_plan
from bbgrap_hls.ir import Graph, Node, Tensor
from bbgrap_hls.ops import ONNX_TYPES

MIN_OPSET, MAX_ELEMENTS = 7, 1 << 26
#: Refused before any work: more nodes than any network we target (the loader is not
#: linear in the node count), so a hostile model cannot hang or exhaust memory.
MAX_NODES = 10_000
_ELEM_DTYPES = {
    onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.FLOAT16: "float16", onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.INT32: "int32", onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8", onnx.TensorProto.BOOL: "bool",
}


def parse_input_shapes(specs: list[str] | None) -> dict[str, tuple[int, ...]]:
    """Parse ``name=1x3x224x224`` strings (``--input-shape``) into a dict."""
    out: dict[str, tuple[int, ...]] = {}
    for spec in specs or []:
        name, sep, dims = spec.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or min(shape) <= 0:
            raise BadInputError(f"--input-shape '{spec}': expected NAME=DxDx... with positive integers")
        out[name] = shape
    return out


def _read(path: str | os.PathLike) -> onnx.ModelProto:
    p = Path(path)
    if not p.exists():
        raise BadInputError(f"{p}: no such file")
    if p.is_dir():
        raise BadInputError(f"{p}: is a folder, expected an ONNX model file")
    try:
        model = onnx.load(str(p))
    except Exception as e:  # protobuf raises several types for garbage
        msg = str(e).splitlines()[0] if str(e) else ""
        raise BadInputError(f"{p}: not an ONNX model, or a truncated one ({type(e).__name__}: {msg})") from None
    if len(model.graph.node) > MAX_NODES:
        raise BadInputError(f"{p}: {len(model.graph.node)} nodes, more than the {MAX_NODES} supported")
    if not model.graph.node and not model.graph.input:
        raise BadInputError(f"{p}: not an ONNX model (empty or truncated file)")
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise BadInputError(f"{p}: ONNX checker: {str(e).splitlines()[0]}") from None
    return model


def _opset(model: onnx.ModelProto, path: Any) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            v = int(o.version)
            if v < MIN_OPSET or v > onnx.defs.onnx_opset_version():
                raise BadInputError(f"{path}: opset {v} is outside the supported range "
                                    f"{MIN_OPSET}..{onnx.defs.onnx_opset_version()}")
            return v
    raise BadInputError(f"{path}: the model imports no default-domain opset")

#: Element types of constants: those numpy holds natively (no float8, int4, bfloat16...).
_INIT_TYPES = frozenset({
    onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BOOL,
    onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT16, onnx.TensorProto.UINT16,
    onnx.TensorProto.INT32, onnx.TensorProto.UINT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT64,
})


def _type_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type {elem_type}"


def _value_shape(vi: onnx.ValueInfoProto) -> tuple[list[int | str], str]:
    tt = vi.type.tensor_type
    dims: list[int | str] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or "?")
    return dims, _ELEM_DTYPES.get(tt.elem_type, f"type{tt.elem_type}")


def load_model(path: str | os.PathLike, input_shapes: dict[str, tuple[int, ...]] | None = None) -> Graph:
    """Read an ONNX file into a `Graph` (no canonicalisation yet).

    Args:
        path: the model file.
        input_shapes: fixed shapes for inputs with dynamic dimensions.

    Raises:
        BadInputError: unreadable model, dynamic dimensions left, bad shapes.
        UnsupportedError: op types without an op kind (all named at once).
    """
    graph, unsupported = load_partial(path, input_shapes)
    if unsupported:
        raise UnsupportedError(unsupported_message(path, unsupported))
    for o in graph.outputs:
        if o not in graph.tensors:
            raise BadInputError(f"{path}: graph output '{o}' is never produced")
    return graph


def unsupported_message(path: str | os.PathLike, unsupported: dict[str, str]) -> str:
    """The one-line refusal naming every unsupported op type with its first node."""
    listing = ", ".join(f"{t} (first at node '{n}')" for t, n in sorted(unsupported.items()))
    return f"{path}: unsupported operators: {listing}"


def load_partial(path: str | os.PathLike, input_shapes: dict[str, tuple[int, ...]] | None = None,
                 ) -> tuple[Graph, dict[str, str]]:
    """Like `load_model`, but keep going past unsupported op types.

    Returns:
        The graph of every node that could be loaded (nodes reading an unsupported node's
        output are left out, so graph outputs may be missing), and the unsupported op
        types, each with the name of its first node (empty when all is supported).
    """
    model = _read(path)
    opset = _opset(model, path)
    g = model.graph
    input_shapes = dict(input_shapes or {})
    lifted = lift_plan(model)  # 1-D window models run as 2-D (frontend/lift1d.py)
    tensors: dict[str, Tensor] = {}
    for init in g.initializer:
        if init.data_type not in _INIT_TYPES:
            raise UnsupportedError(f"{path}: constant '{init.name}' has element type "
                                   f"{_type_name(init.data_type)} (not supported)")
        arr = numpy_helper.to_array(init)
        tensors[init.name] = Tensor(init.name, tuple(arr.shape), str(arr.dtype), arr)
    inputs: list[str] = []
    for vi in g.input:
        if vi.name in tensors:
            continue  # old exporters list initializers as inputs too
        dims, dtype = _value_shape(vi)
        if dtype not in ("float32", "float64", "float16"):
            raise UnsupportedError(f"{path}: input '{vi.name}' has element type "
                                   f"{_type_name(vi.type.tensor_type.elem_type)}; only float inputs are supported")
        if vi.name in input_shapes:
            shape = input_shapes.pop(vi.name)
            if len(shape) != len(dims) or any(isinstance(d, int) and d != s for d, s in zip(dims, shape, strict=False)):
                raise BadInputError(f"--input-shape {vi.name}: {shape} does not fit the model's {tuple(dims)}")
        elif any(not isinstance(d, int) for d in dims):
            raise BadInputError(f"{path}: input '{vi.name}' has dynamic dimensions {tuple(dims)}; "
                                f"fix them with --input-shape {vi.name}=" + "x".join(
                                    str(d) if isinstance(d, int) else "N" for d in dims))
        else:
            shape = tuple(int(d) for d in dims)
        if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            raise BadInputError(f"{path}: input '{vi.name}' shape {shape} is too large (limit {MAX_ELEMENTS} elements)")
        if vi.name in lifted:
            shape = (*shape, 1)  # a 1-D model's (N, C, L) input streams as (N, C, L, 1)
        tensors[vi.name] = Tensor(vi.name, shape, dtype)
        inputs.append(vi.name)
    if input_shapes:
        raise BadInputError(f"--input-shape names no model input: {', '.join(sorted(input_shapes))}")
    graph = Graph(g.name or Path(path).stem, inputs, [o.name for o in g.output], tensors, [], opset)

    # Optional outputs nobody reads (MaxPool Indices, Dropout mask, BatchNormalization
    # statistics) are blanked so that ops refuse only the ones a model really uses.
    read = {i for on in g.node for i in on.input} | {o.name for o in g.output}
    for on in g.node:
        for j in range(1, len(on.output)):
            if on.output[j] not in read:
                on.output[j] = ""
    unsupported: dict[str, str] = {}
    for k, on in enumerate(g.node):
        name = on.name or f"{on.op_type}_{k}"
        if graph.fresh_name(name) != name:
            name = graph.fresh_name(name)
        on.name = name
        if on.domain not in ("", "ai.onnx"):
            unsupported.setdefault(f"{on.domain}.{on.op_type}", name)
            continue
        if any(i and i not in graph.tensors for i in on.input):
            missing = [i for i in on.input if i and i not in graph.tensors]
            if unsupported:  # downstream of an unsupported node: only collect its type
                if on.op_type not in ONNX_TYPES and on.op_type not in FOLD_ONLY:
                    unsupported.setdefault(on.op_type, name)
                continue
            raise BadInputError(f"node '{name}' ({on.op_type}) reads undefined tensor '{missing[0]}'")
        if fold_node(on, graph):
            continue
        lift_node(on, lifted, graph)
        op = ONNX_TYPES.get(on.op_type)
        if op is None:
            unsupported.setdefault(on.op_type, name)
            continue
        attrs = {a.name: _attr(a) for a in on.attribute}
        node = Node(name, op.kind, list(on.input), list(on.output), {})
        node.attrs = op.parse(on, attrs, graph)
        node.host = op.host_only
        shapes = op.infer(node, graph)
        node.outputs = [o for o in on.output if o]
        if len(shapes) != len(node.outputs):
            raise BadInputError(f"node '{name}' ({on.op_type}): {len(node.outputs)} outputs used, "
                                f"the op produces {len(shapes)}")
        for out, shape in zip(node.outputs, shapes, strict=False):
            if min(shape, default=1) < 1 or int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
                raise BadInputError(f"node '{name}' ({on.op_type}): output shape {tuple(shape)} "
                                    f"is empty or too large (limit {MAX_ELEMENTS} elements)")
            tensors[out] = Tensor(out, tuple(int(s) for s in shape))
        lower = getattr(op, "lower", None)  # an op the IR holds as other nodes (Split: Slices)
        graph.nodes.extend(lower(node, graph) if lower else [node])
    for o in graph.outputs:  # a lifted 1-D output keeps its declared (N, C, L) shape for `run`
        t = tensors.get(o)
        if o in lifted and t is not None and len(t.shape) == 4 and t.shape[-1] == 1:
            graph.output_shapes[o] = t.shape[:-1]
    return graph, unsupported


def _attr(a: onnx.AttributeProto) -> Any:
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
    if isinstance(v, onnx.TensorProto):
        return numpy_helper.to_array(v)
    return v
