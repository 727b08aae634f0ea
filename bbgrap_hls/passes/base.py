"""The pass interface and the small graph edits that passes share.

A pass is a class with an imperative name. ``apply(graph)`` edits the graph in place and
says whether it changed anything (the pipeline runs to a fixed point on that answer);
``run(graph)`` is the safe public form: it edits a copy, tidies it (unused nodes and
tensors dropped, nodes in topological order) and returns it.

Nodes of ONNX kinds that a pass creates (Add, Mul, Relu, Reshape, GlobalAveragePool)
are built through their op's own ``parse`` and ``infer`` from an ONNX NodeProto, so
their attributes have exactly the form the frontend gives them.
"""

from __future__ import annotations

from dataclasses import replace as dc_replace
from typing import Any

import numpy as np
from onnx import helper

from bbgrap_hls.ir import Graph, Node, Tensor
from bbgrap_hls.ops import ONNX_TYPES, REGISTRY


class Pass:
    """Base class of a graph pass; subclasses implement `apply`."""

    def apply(self, graph: Graph) -> bool:
        """Edit ``graph`` in place; True when something changed."""
        raise NotImplementedError

    def run(self, graph: Graph) -> Graph:
        """A rewritten copy of ``graph`` (the argument is left untouched)."""
        g = copy_graph(graph)
        self.apply(g)
        tidy(g)
        return g


def copy_graph(graph: Graph) -> Graph:
    """A copy of ``graph`` for passes to edit, like ``Graph.copy`` but cheaper.

    Nodes, tensors, lists and attribute dicts are new objects; constant arrays are
    shared, because passes never write into an array: they put a new `Tensor` in its
    place (`set_const`, ``graph.add_const``). ``copy.deepcopy`` costs about a second on
    DenseNet-121 and doubles the memory of VGG-19's 548 MB of weights.
    """
    tensors = {k: dc_replace(t) for k, t in graph.tensors.items()}
    nodes = [dc_replace(n, inputs=list(n.inputs), outputs=list(n.outputs), attrs=dict(n.attrs))
             for n in graph.nodes]
    return Graph(graph.name, list(graph.inputs), list(graph.outputs), tensors, nodes, graph.opset,
                 dict(graph.output_shapes), dict(graph.input_blocks),
                 dict(graph.input_patches))


def tidy(graph: Graph) -> None:
    """Drop what nobody reads and restore topological order."""
    graph.remove_unused()
    graph.toposort()


# -- building nodes ------------------------------------------------------------------
def build(graph: Graph, op_type: str, inputs: list[str], outputs: list[str], name: str,
          **attrs: Any) -> Node:
    """A node of ONNX type ``op_type`` parsed like the frontend would; new outputs get tensors.

    The caller puts the node into ``graph.nodes`` (see `replace`). Output
    tensors that do not exist yet are created from the op's shape inference.
    """
    op = ONNX_TYPES[op_type]
    proto = helper.make_node(op_type, inputs, outputs, name=name, **attrs)
    node = Node(name, op.kind, list(inputs), list(outputs), {})
    node.attrs = op.parse(proto, dict(attrs), graph)
    node.host = op.host_only
    for out, shape in zip(outputs, op.infer(node, graph), strict=False):
        if out not in graph.tensors:
            graph.tensors[out] = Tensor(out, tuple(int(s) for s in shape))
    return node


def make(graph: Graph, kind: str, inputs: list[str], outputs: list[str], name: str,
         attrs: dict[str, Any] | None = None) -> Node:
    """A node of a canonical-only kind (Dense, Relu6, ChannelAffine); new outputs get tensors."""
    op = REGISTRY[kind]
    node = Node(name, kind, list(inputs), list(outputs), dict(attrs or {}))
    node.host = op.host_only
    for out, shape in zip(outputs, op.infer(node, graph), strict=False):
        if out not in graph.tensors:
            graph.tensors[out] = Tensor(out, tuple(int(s) for s in shape))
    return node


def position(graph: Graph, node: Node) -> int:
    """Index of ``node`` in the node list, by identity (-1 when absent).

    Identity, not ``==``: dataclass equality compares every field, which is slow and
    would call two nodes with equal fields the same node.
    """
    return next((k for k, n in enumerate(graph.nodes) if n is node), -1)


def drop(graph: Graph, node: Node) -> None:
    """Remove ``node`` from the node list (its tensors stay until `tidy`)."""
    del graph.nodes[position(graph, node)]


def replace(graph: Graph, old: Node, *new: Node) -> None:
    """Put ``new`` where ``old`` was (``old`` leaves the graph)."""
    k = position(graph, old)
    graph.nodes[k:k + 1] = list(new)


def bypass(graph: Graph, node: Node, src: str, dst: str) -> bool:
    """Remove ``node``, whose output ``dst`` carries the same values as its input ``src``.

    Readers of ``dst`` read ``src`` instead. When ``dst`` is a graph output, its name is
    kept (callers compare outputs by name): the producer of ``src`` writes ``dst``
    directly. That is impossible when ``src`` is a graph input, a graph output or a
    constant; the node then stays and the result is False.
    """
    if dst in graph.outputs:
        producer = next((n for n in graph.nodes if src in n.outputs), None)
        if producer is None or src in graph.outputs:
            return False
        producer.outputs = [dst if o == src else o for o in producer.outputs]
        for n in graph.nodes:
            n.inputs = [dst if i == src else i for i in n.inputs]
        graph.tensors.pop(src, None)
    else:
        graph.replace_uses(dst, src)
    drop(graph, node)
    return True


# -- constants -----------------------------------------------------------------------
def const_input(graph: Graph, node: Node, k: int) -> np.ndarray | None:
    """The value of input ``k`` when it exists and is constant, else None."""
    if k >= len(node.inputs) or not node.inputs[k]:
        return None
    return graph.const(node.inputs[k])


def readers(graph: Graph, tensor: str) -> list[Node]:
    """Nodes that read ``tensor``."""
    return [n for n in graph.nodes if tensor in n.inputs]


def sole_reader(graph: Graph, tensor: str, consumers: dict[str, list[Node]] | None = None) -> Node | None:
    """The one node reading ``tensor`` when it has exactly one reader and is no graph output.

    ``consumers`` (from ``graph.consumers()``, kept up to date by the caller) avoids a
    scan of every node.
    """
    if tensor in graph.outputs:
        return None
    rs = readers(graph, tensor) if consumers is None else consumers.get(tensor, [])
    return rs[0] if len(rs) == 1 and rs[0].inputs.count(tensor) == 1 else None


def set_const(graph: Graph, node: Node, k: int, value: np.ndarray, base: str,
              consumers: dict[str, list[Node]] | None = None) -> None:
    """Make input ``k`` of ``node`` the constant ``value``.

    The tensor is edited in place when ``node`` is its only reader; otherwise (a shared
    weight, or no input yet) a new constant named after ``base`` is added.
    """
    value = np.ascontiguousarray(value)
    name = node.inputs[k] if k < len(node.inputs) else ""
    if name and graph.tensors[name].is_const and sole_reader(graph, name, consumers) is node:
        graph.tensors[name] = Tensor(name, tuple(value.shape), str(value.dtype), value)
        return
    new = graph.add_const(base, value)
    while len(node.inputs) <= k:
        node.inputs.append("")
    node.inputs[k] = new


def per_channel(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """``value`` as a (C,) vector when it broadcasts along axis 1 only of ``shape``.

    ``shape`` is an activation's (N, C) or (N, C, H, W) shape. A scalar counts (it is
    repeated). Returns None when ``value`` varies along another axis or would enlarge
    the result by broadcasting.
    """
    v = np.asarray(value)
    if len(shape) not in (2, 4) or v.ndim > len(shape):
        return None
    full = (1,) * (len(shape) - v.ndim) + v.shape
    c = shape[1]
    if any(d != 1 for k, d in enumerate(full) if k != 1) or full[1] not in (1, c):
        return None
    return np.broadcast_to(v.reshape(-1), (c,)).astype(np.float64)


def axes_of(graph: Graph, node: Node, rank: int) -> tuple[int, ...] | None:
    """A reduce/squeeze node's ``axes`` (attribute or constant second input), normalised.

    Returns None when the axes are not known (a non-constant input), () when absent.
    """
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        axes = graph.const(node.inputs[1])
        if axes is None:
            return None
    if axes is None:
        return ()
    return tuple(sorted(int(a) % rank for a in np.asarray(axes).reshape(-1)))
