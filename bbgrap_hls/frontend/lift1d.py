"""1-D models (Conv1d, MaxPool1d, AvgPool1d over (N, C, L)) run as 2-D with W = 1.

The hardware, the cost model and the kernels know 2-D windows over NCHW tensors that
stream channels-innermost. A rank-3 activation (N, C, L) is the same stream as the rank-4
tensor (N, C, L, 1): L pixels of C channels. So the loader *lifts* such tensors: the IR
holds them with a trailing unit dimension, and the nodes that touch them get 2-D
attributes (kernel ``[k] → [k, 1]``, strides, dilations, pads ``[a, b] → [a, 0, b, 0]``),
constants broadcast against them get a trailing 1, and a Concat's negative axis is moved.
The values are exactly those of the 1-D model.

Which tensors: the rank-3 activations of a model that has a 1-D Conv or pool, as long as
every node that reads or writes them is one this module knows how to lift (`_LIFTABLE`);
a fixpoint drops every tensor touching any other node (e.g. a Transpose or Reshape), and
that node is then parsed as written (an unsupported 1-D Conv is refused as before). A
lifted graph input keeps its data: `reference.check_inputs` accepts the (N, C, L) array
for the (N, C, L, 1) input. A lifted graph *output* is held as (N, C, L, 1); the graph
records its declared (N, C, L) shape (`Graph.output_shapes`), which `run` and the API's
`predict` give back (the generated design's streams and `csim -o` stay (N, C·L) / flat).
"""

from __future__ import annotations

import onnx
from onnx import helper

from bbgrap_hls.ir import Graph

_WINDOW = {"Conv", "MaxPool", "AveragePool"}
_ELEMENTWISE = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish", "Identity",
                "Dropout", "BatchNormalization", "Add", "Sub", "Mul", "Div", "Sum", "QuantizeLinear",
                "DequantizeLinear", "Elu", "Selu", "PRelu"}
_LIFTABLE = _WINDOW | _ELEMENTWISE | {"GlobalAveragePool", "GlobalMaxPool", "Concat", "Flatten"}


def lift_plan(model: onnx.ModelProto) -> set[str]:
    """Names of the rank-3 activations to lift (empty when the model has no 1-D window op)."""
    g = model.graph
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # shape inference is a best effort here: no lifting without it
        return set()
    rank: dict[str, int] = {}
    for vi in list(inferred.graph.value_info) + list(g.input) + list(g.output):
        if vi.type.tensor_type.HasField("shape"):
            rank[vi.name] = len(vi.type.tensor_type.shape.dim)
    consts = {i.name for i in g.initializer} | {o for n in g.node if n.op_type == "Constant" for o in n.output}
    for n in g.node:  # computed from constants only (folded by the loader): constants too
        if n.input and all(i in consts for i in n.input if i):
            consts.update(o for o in n.output if o)
    if not any(n.op_type in _WINDOW and rank.get(n.input[0]) == 3 for n in g.node if n.input):
        return set()
    cand = {t for t, r in rank.items() if r == 3 and t not in consts}
    producer = {o: n for n in g.node for o in n.output if o}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for i in n.input:
            if i:
                readers.setdefault(i, []).append(n)

    def ok(n: onnx.NodeProto) -> bool:
        if n.op_type not in _LIFTABLE:
            return False
        ins = [i for i in n.input if i and i not in consts]
        outs = [o for o in n.output if o]
        if n.op_type == "Flatten":
            return _int_attr(n, "axis", 1) == 1 and ins[0] in cand
        if n.op_type in ("BatchNormalization", "Dropout", "QuantizeLinear", "DequantizeLinear"):
            outs, ins = outs[:1], ins[:1]  # statistics / mask outputs, scale/zero-point inputs
        return all(i in cand for i in ins) and all(o in cand for o in outs)

    changed = True
    while changed:
        changed = False
        for t in list(cand):
            p = producer.get(t)
            if (p is not None and not ok(p)) or not all(ok(r) for r in readers.get(t, [])):
                cand.discard(t)
                changed = True
    return cand


def _int_attr(n: onnx.NodeProto, name: str, default: int) -> int:
    for a in n.attribute:
        if a.name == name:
            return int(helper.get_attribute_value(a))
    return default


def lift_node(on: onnx.NodeProto, lifted: set[str], graph: Graph) -> None:
    """Rewrite ``on`` in place for its lifted inputs: 2-D window attributes, a Conv's
    weights ``(Co, C/g, k) → (Co, C/g, k, 1)``, constants broadcast against a lifted tensor
    with a trailing 1 (new constants; the originals may have other readers)."""
    if not any(i in lifted for i in on.input):
        return
    if on.op_type in _WINDOW:
        _lift_window_attrs(on)
    elif on.op_type == "Concat":
        for a in on.attribute:
            if a.name == "axis" and a.i < 0:
                a.i -= 1  # -1 of (N, C, L) is -2 of (N, C, L, 1)
    if on.op_type not in ("Conv", "Add", "Sub", "Mul", "Div", "Sum", "PRelu"):
        return
    for k, name in enumerate(on.input):
        if k == 0 and on.op_type == "Conv" or not name or name in lifted:
            continue
        c = graph.tensors[name].data if name in graph.tensors else None
        if c is None or c.ndim < 1 or c.size <= 1 or (on.op_type == "Conv" and k == 2):
            continue  # activations, scalars and the Conv bias stay
        on.input[k] = graph.add_const(f"{name}_2d", c.reshape(c.shape + (1,)))


def _lift_window_attrs(on: onnx.NodeProto) -> None:
    new = []
    for a in on.attribute:
        v = helper.get_attribute_value(a)
        if a.name in ("kernel_shape", "strides", "dilations") and len(v) == 1:
            new.append(helper.make_attribute(a.name, [int(v[0]), 1]))
        elif a.name == "pads" and len(v) == 2:
            new.append(helper.make_attribute(a.name, [int(v[0]), 0, int(v[1]), 0]))
        else:
            new.append(a)
    del on.attribute[:]
    on.attribute.extend(new)
