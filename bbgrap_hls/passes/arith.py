"""Passes that rewrite elementwise arithmetic and reductions into the canonical kinds."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.passes.base import Pass, axes_of, build, make, replace
from bbgrap_hls.passes.linear import affine_of

F32_MAX = float(np.finfo(np.float32).max)


class LowerArithmetic(Pass):
    """Rewrite Sub, Div and Sum with Add and Mul; put the constant of Add/Mul second.

    ``x - c → x + (-c)`` (negation is exact); ``c - x → (x·(-1)) + c``; ``x - y →
    x + y·(-1)``; ``x / c → x·(1/c)`` (one extra float rounding: not bit-exact in float,
    well inside the float tolerance, and the int8 path requantises anyway);
    ``Sum(x1..xk) → ((x1 + x2) + ...) + xk``; ``Add(c, x) → Add(x, c)`` and the same for
    Mul (both commute). Div by an activation is left alone (not supported downstream).
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            new = self._lower(graph, node)
            if new is not None:
                replace(graph, node, *new)
                changed = True
        return changed

    def _lower(self, graph: Graph, node: Node) -> list[Node] | None:
        ins, out, name = node.inputs, node.outputs[:1], node.name
        if node.op in ("Add", "Mul") and len(ins) == 2 and graph.const(ins[0]) is not None \
                and graph.const(ins[1]) is None:
            return [build(graph, node.op, [ins[1], ins[0]], out, name)]
        if node.op == "Sub" and len(ins) == 2:
            x, y = ins
            cx, cy = graph.const(x), graph.const(y)
            if cx is not None and cy is not None:
                return None  # FoldConstants' business
            if cy is not None:
                return [build(graph, "Add", [x, graph.add_const(f"{name}_neg", -cy)], out, name)]
            # y is an activation: negate it, then add x (an activation or a constant)
            minus1 = graph.add_const(f"{name}_minus1", np.array(-1.0, dtype=np.float32))
            t = graph.fresh_name(f"{name}_neg")
            mul = build(graph, "Mul", [y, minus1], [t], graph.fresh_name(f"{name}_negate"))
            return [mul, build(graph, "Add", [t, x], out, name)]
        if node.op == "Div" and len(ins) == 2:
            c = graph.const(ins[1])
            if c is None or graph.const(ins[0]) is not None or not np.issubdtype(c.dtype, np.floating):
                return None
            inv = graph.add_const(f"{name}_inv", (1.0 / c.astype(np.float64)).astype(c.dtype))
            return [build(graph, "Mul", [ins[0], inv], out, name)]
        if node.op == "Sum" and len([i for i in ins if i]) > 1:
            terms = [i for i in ins if i]
            nodes, acc = [], terms[0]
            for k, t in enumerate(terms[1:], start=1):
                last = k == len(terms) - 1
                dst = out[0] if last else graph.fresh_name(f"{name}_sum{k}")
                nodes.append(build(graph, "Add", [acc, t], [dst], name if last else graph.fresh_name(f"{name}_add{k}")))
                acc = dst
            return nodes
        return None


class ClipToRelu6(Pass):
    """Clip(0, 6) → Relu6 and Clip(0, no upper bound) → Relu.

    Same function: ``min(max(x, 0), 6)`` and ``max(x, 0)`` (an upper bound of +inf or
    float32 max clips nothing of a finite input). The bounds are read from the constant
    min/max inputs (opset ≥ 11) or attributes (older opsets). Other Clips stay Clip.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op != "Clip":
                continue
            lo, hi = self._bound(graph, node, 1, "min", -np.inf), self._bound(graph, node, 2, "max", np.inf)
            if lo is None or hi is None or lo != 0:
                continue
            if hi == 6:
                new = make(graph, "Relu6", node.inputs[:1], node.outputs[:1], node.name)
            elif hi >= F32_MAX:
                new = build(graph, "Relu", node.inputs[:1], node.outputs[:1], node.name)
            else:
                continue
            replace(graph, node, new)
            changed = True
        return changed

    @staticmethod
    def _bound(graph: Graph, node: Node, k: int, attr: str, default: float) -> float | None:
        if k < len(node.inputs) and node.inputs[k]:
            v = graph.const(node.inputs[k])
            return None if v is None else float(np.asarray(v).reshape(-1)[0])
        v = node.attrs.get(attr)
        return default if v is None else float(v)


class FuseSwish(Pass):
    """``Mul(x, Sigmoid(x))`` → ``Swish(x)`` (SiLU, as torch exports it) and
    ``Mul(x, HardSigmoid(x))`` with ONNX's ``alpha = 1/6, beta = 0.5`` → ``HardSwish(x)``.

    Same function up to float rounding (the product rounds once instead of twice). On the
    fabric the pair was a lookup table, a fork, a FIFO as deep as the table's latency and a
    multiplier with its requantiser; the fused op is one lookup table (an int8 function of one
    int8 input is a 256-entry table), with one rounding instead of two (the sigmoid's int8
    output is gone). Either operand order; a Sigmoid with other readers stays for them. A QDQ
    model's pair is not matched (its Mul reads DequantizeLinear outputs), so its prescribed
    intermediate scale is kept.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        producers = graph.producers()
        for node in list(graph.nodes):
            if node.op != "Mul" or len(node.inputs) != 2 or node.inputs[0] == node.inputs[1]:
                continue
            for x, s in (node.inputs, node.inputs[::-1]):
                gate = producers.get(s)
                kind = self._fused(gate, x)  # the gate has x's shape, so the product has it too
                if kind is not None:
                    new = make(graph, kind, [x], node.outputs[:1], node.name,
                               {"alpha": 1.0} if kind == "Swish" else None)
                    replace(graph, node, new)
                    producers[node.outputs[0]] = new
                    changed = True
                    break
        return changed

    @staticmethod
    def _fused(gate: Node | None, x: str) -> str | None:
        """The fused kind when ``gate`` is a sigmoid of ``x`` (None otherwise)."""
        if gate is None or gate.inputs[:1] != [x]:
            return None
        if gate.op == "Sigmoid":
            return "Swish"
        if gate.op == "HardSigmoid" and abs(gate.attrs["alpha"] - 1.0 / 6.0) < 1e-7 \
                and gate.attrs["beta"] == 0.5:
            return "HardSwish"
        return None


class ReduceMeanToGlobalPool(Pass):
    """ReduceMean over axes (2, 3) of an NCHW tensor → GlobalAveragePool.

    Both compute the mean of each channel's H·W values. With ``keepdims = 0`` the
    (N, C, 1, 1) pool result is followed by a Reshape to (N, C): the same elements in
    the same order, which `FoldFlattenIntoDense` then removes in front of a Dense.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op != "ReduceMean" or len(graph.shape(node.inputs[0])) != 4:
                continue
            if axes_of(graph, node, 4) != (2, 3):
                continue
            x, y = node.inputs[0], node.outputs[0]
            n, c = graph.shape(x)[:2]
            if int(node.attrs.get("keepdims", 1)):
                replace(graph, node, build(graph, "GlobalAveragePool", [x], [y], node.name))
            else:
                t = graph.fresh_name(f"{node.name}_pool")
                pool = build(graph, "GlobalAveragePool", [x], [t], node.name)
                shape = graph.add_const(f"{node.name}_shape", np.array([n, c], dtype=np.int64))
                flat = build(graph, "Reshape", [t, shape], [y], graph.fresh_name(f"{node.name}_flat"))
                replace(graph, node, pool, flat)
            changed = True
        return changed


class LowerChannelAffine(Pass):
    """BatchNormalization, or Mul/Add by a per-channel constant, → ChannelAffine.

    Runs after `FoldBatchNorm`, so these are the affines with no Conv/Dense before them
    (after a Concat, an Add, the graph input...). ``y = x·a[c] + b[c]`` is the same
    function written with the two constant vectors the hardware block holds
    (BatchNormalization: ``a = gamma/sqrt(var+eps)``, ``b = beta - mean·a``, one float
    rounding different from the four-step formula).
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op not in ("BatchNormalization", "Mul", "Add"):
                continue
            acts = graph.act_inputs(node)
            if len(acts) != 1:
                continue
            ab = affine_of(graph, node, graph.shape(acts[0]))
            if ab is None:
                continue
            a = graph.add_const(f"{node.name}_a", ab[0].astype(np.float32))
            b = graph.add_const(f"{node.name}_b", ab[1].astype(np.float32))
            replace(graph, node, make(graph, "ChannelAffine", [acts[0], a, b], node.outputs[:1], node.name))
            changed = True
        return changed
