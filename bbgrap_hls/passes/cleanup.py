"""Passes that remove operations which compute nothing, or nothing at run time."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ir import Graph, Node, Tensor
from bbgrap_hls.ops import get_op
from bbgrap_hls.passes.base import Pass, build, bypass, const_input, drop, position, replace, sole_reader

SHAPE_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


class RemoveIdentity(Pass):
    """Remove nodes whose output equals their input.

    Identity; Dropout in inference (its output is its input; kept when the mask output
    is read or ``training_mode`` is a true constant); Reshape/Flatten/Squeeze/Unsqueeze
    whose output shape equals the input shape (a reshape to the same shape moves no
    element); Transpose by the identity permutation; Concat and Sum of one input;
    ChannelAffine with a = 1, b = 0. Each is the identity function, so dropping it and
    reading its input instead cannot change a value.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if self._is_identity(graph, node):
                changed |= bypass(graph, node, node.inputs[0], node.outputs[0])
        return changed

    @staticmethod
    def _is_identity(graph: Graph, node: Node) -> bool:
        if not node.inputs or not node.inputs[0]:
            return False
        x = node.inputs[0]
        if node.op == "Identity":
            return True
        if node.op == "Dropout":
            mode = const_input(graph, node, 2)
            training = bool(mode is not None and np.asarray(mode).reshape(-1)[0])
            training |= bool(node.attrs.get("training_mode", False))
            mask_read = len(node.outputs) > 1 and node.outputs[1] and (
                node.outputs[1] in graph.outputs or any(node.outputs[1] in n.inputs for n in graph.nodes))
            return not training and not mask_read
        if node.op in SHAPE_OPS:
            return graph.shape(x) == graph.shape(node.outputs[0])
        if node.op == "Transpose":
            perm = node.attrs.get("perm")
            rank = len(graph.shape(x))
            return perm is None and rank <= 1 or perm is not None and list(perm) == list(range(rank))
        if node.op in ("Concat", "Sum"):
            return len([i for i in node.inputs if i]) == 1
        if node.op == "ChannelAffine":
            a, b = const_input(graph, node, 1), const_input(graph, node, 2)
            return a is not None and b is not None and bool(np.all(a == 1) and np.all(b == 0))
        return False


class FoldConstants(Pass):
    """Replace every node whose inputs are all constant by constant outputs.

    The values come from the op's own float reference (``run``), the same code that
    would compute them at run time, so the graph computes the same values; the node
    just no longer runs per frame. Host ops are folded too (their value is fixed).
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            ins = [i for i in node.inputs if i]
            if not ins or any(graph.tensors[i].data is None for i in ins):
                continue
            values = get_op(node.op).run(node, [graph.tensors[i].data if i else None for i in node.inputs])
            for name, v in zip(node.outputs, values, strict=False):
                v = np.asarray(v)
                graph.tensors[name] = Tensor(name, tuple(v.shape), str(v.dtype), v)
            drop(graph, node)
            changed = True
        return changed


class LowerShapeOps(Pass):
    """Rewrite Flatten, Squeeze and Unsqueeze as Reshape; merge a Reshape of a Reshape.

    All four kinds only reinterpret the same elements in the same row-major order under
    a new static shape, so one kind (Reshape to a constant shape) says the same, and two
    reshapes in a row equal one reshape to the final shape (the intermediate must have
    no other reader). Later passes then match a single kind, and a pair that restores
    the original shape (Unsqueeze then Squeeze) becomes a same-shape Reshape that
    `RemoveIdentity` drops.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        producer = graph.producers()
        for node in list(graph.nodes):
            src = node.inputs[0] if node.inputs else ""
            first = producer.get(src)
            merge = (node.op in SHAPE_OPS and first is not None and first.op in SHAPE_OPS
                     and position(graph, first) >= 0 and sole_reader(graph, src) is node)
            if node.op not in ("Flatten", "Squeeze", "Unsqueeze") and not merge:
                continue
            if merge:
                drop(graph, first)
                graph.tensors.pop(src, None)
                src = first.inputs[0]
            shape = np.array(graph.shape(node.outputs[0]), dtype=np.int64)
            target = graph.add_const(f"{node.name}_shape", shape)
            new = build(graph, "Reshape", [src, target], [node.outputs[0]], node.name)
            replace(graph, node, new)
            producer[node.outputs[0]] = new
            changed = True
        return changed
