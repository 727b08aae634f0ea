"""Passes around the linear layers: Gemm/MatMul to Dense, affine folding, Flatten folding."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.passes.base import Pass, const_input, drop, make, per_channel, replace, set_const, sole_reader


class LowerGemm(Pass):
    """Turn Gemm and MatMul with a constant weight into one `Dense` (y = x·Wᵀ + b).

    Gemm computes ``alpha·A'·B' + beta·C``; with ``A`` a 2-D activation (transA = 0) and
    ``B`` constant this is a Dense with ``W = alpha·B'ᵀ`` and ``b = beta·C`` (C must be
    the same for every row). MatMul of a 2-D activation by a constant (C, Co) matrix is a
    Dense with ``W = Bᵀ`` and a zero bias. The same products are summed; only ``alpha``
    and ``beta`` are applied to the constants instead of the result (float rounding).
    Anything else (two activations, transA, rank > 2) is left alone.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op not in ("Gemm", "MatMul"):
                continue
            x = node.inputs[0]
            b = const_input(graph, node, 1)
            if b is None or b.ndim != 2 or len(graph.shape(x)) != 2 or graph.tensors[x].is_const:
                continue
            if node.op == "MatMul":
                w, bias = b.T, np.zeros(b.shape[1])
            else:
                a = node.attrs
                if int(a.get("transA", 0)):
                    continue
                w = b if int(a.get("transB", 0)) else b.T
                if float(a.get("alpha", 1.0)) != 1.0:
                    w = w.astype(np.float64) * float(a["alpha"])
                c = const_input(graph, node, 2)
                if c is None and len(node.inputs) > 2 and node.inputs[2]:
                    continue  # an activation as C
                rows = np.broadcast_to(np.zeros(1) if c is None else c, graph.shape(node.outputs[0]))
                if not np.all(rows == rows[:1]):
                    continue  # a bias that differs per row is no Dense bias
                bias = rows[0].astype(np.float64) * float(a.get("beta", 1.0))
            wt = graph.add_const(f"{node.name}_W", np.ascontiguousarray(w, dtype=np.float32))
            bt = graph.add_const(f"{node.name}_b", bias.astype(np.float32))
            replace(graph, node, make(graph, "Dense", [x, wt, bt], node.outputs[:1], node.name))
            changed = True
        return changed


def affine_of(graph: Graph, node: Node, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(a, b)`` with ``node(x) = x·a[c] + b[c]`` on an input of ``shape``, or None.

    Recognised: BatchNormalization (inference form), ChannelAffine, and Mul/Add with
    one activation and one per-channel (or scalar) constant that keeps the shape.
    """
    c = shape[1] if len(shape) >= 2 else 0
    if node.op in ("BatchNormalization", "ChannelAffine") and graph.shape(node.outputs[0]) != shape:
        return None
    if node.op == "BatchNormalization":
        vals = [const_input(graph, node, k) for k in range(1, 5)]
        if any(v is None for v in vals) or len(node.outputs) > 1 and any(node.outputs[1:]):
            return None
        gamma, beta, mean, var = (v.astype(np.float64).reshape(-1) for v in vals)
        a = gamma / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
        return a, beta - mean * a
    if node.op == "ChannelAffine":
        return const_input(graph, node, 1).astype(np.float64), const_input(graph, node, 2).astype(np.float64)
    if node.op in ("Mul", "Add") and len(node.inputs) == 2:
        acts = graph.act_inputs(node)
        k = 1 if node.inputs[0] in acts else 0
        v = const_input(graph, node, k)
        if len(acts) != 1 or v is None or graph.shape(node.outputs[0]) != shape:
            return None
        vec = per_channel(v, shape)
        if vec is None:
            return None
        return (vec, np.zeros(c)) if node.op == "Mul" else (np.ones(c), vec)
    return None


class FoldBatchNorm(Pass):
    """Fold a per-channel affine that follows a Conv, Dense or ChannelAffine into it.

    The affine is a BatchNormalization (``a = gamma/sqrt(var+eps)``, ``b = beta - mean·a``),
    a Mul or Add by a per-channel constant (so a decomposed BatchNormalization, Mul then
    Add, folds in two steps), or a ChannelAffine. When the producer's output has no other
    reader and is no graph output, ``affine(conv(x)) = conv'(x)`` with output channel
    ``o``'s weights scaled by ``a[o]`` and bias ``b0[o]·a[o] + b[o]``: the identity
    ``a·(Σ w·x + b0) + b = Σ (a·w)·x + (a·b0 + b)``, exact up to float rounding.
    """

    HOSTS = ("Conv", "Dense", "ChannelAffine")

    def apply(self, graph: Graph) -> bool:
        changed = False
        consumers = graph.consumers()
        gone: set[int] = set()  # ids of folded nodes (a ChannelAffine may fold into a Conv)
        for prod in list(graph.nodes):
            while id(prod) not in gone and prod.op in self.HOSTS and self._fold_next(graph, prod, consumers, gone):
                changed = True
        return changed

    def _fold_next(self, graph: Graph, prod: Node, consumers: dict[str, list[Node]], gone: set[int]) -> bool:
        y = prod.outputs[0]
        nxt = sole_reader(graph, y, consumers)
        if nxt is None or nxt.op not in ("Mul", "Add") and nxt.inputs[0] != y:
            return False  # Mul/Add may read y on either side; BatchNormalization only as x
        ab = affine_of(graph, nxt, graph.shape(y))
        if ab is None:
            return False
        a, b = ab
        if prod.op == "ChannelAffine":
            a0, b0 = (const_input(graph, prod, k).astype(np.float64) for k in (1, 2))
            set_const(graph, prod, 1, (a0 * a).astype(np.float32), f"{prod.name}_a", consumers)
            set_const(graph, prod, 2, (b0 * a + b).astype(np.float32), f"{prod.name}_b", consumers)
        else:
            w = const_input(graph, prod, 1).astype(np.float64)
            b0 = const_input(graph, prod, 2)
            b0 = np.zeros(w.shape[0]) if b0 is None else b0.astype(np.float64)
            scale = a.reshape((-1,) + (1,) * (w.ndim - 1))
            set_const(graph, prod, 1, (w * scale).astype(np.float32), f"{prod.name}_W", consumers)
            set_const(graph, prod, 2, (b0 * a + b).astype(np.float32), f"{prod.name}_B", consumers)
        # the producer now writes the affine's output tensor (keeps graph output names)
        out = nxt.outputs[0]
        prod.outputs[0] = out
        graph.tensors.pop(y, None)
        consumers.pop(y, None)
        drop(graph, nxt)
        gone.add(id(nxt))
        return True


class FoldFlattenIntoDense(Pass):
    """Remove a Reshape from (N, C, H, W) to (N, C·H·W) whose only readers are Dense layers.

    In hardware the activation streams in NHWC order (channels innermost), so the Dense
    sees the elements of a frame in (h, w, c) order and the Reshape moves nothing: it
    disappears. Each reading Dense gets its weight columns permuted from the model's CHW
    order to HWC order and ``attrs["in_layout"] = "NHWC"``; its float reference
    transposes the 4-D input the same way, so every product ``W[o, k]·x[k]`` is the same
    pair as before and the sums are equal. (`LowerShapeOps` has already rewritten
    Flatten as Reshape.)
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op != "Reshape" or node.outputs[0] in graph.outputs:
                continue
            x, y = node.inputs[0], node.outputs[0]
            xs, ys = graph.shape(x), graph.shape(y)
            if len(xs) != 4 or ys != (xs[0], xs[1] * xs[2] * xs[3]):
                continue
            dense = [n for n in graph.nodes if y in n.inputs]
            if not dense or any(d.op != "Dense" or d.inputs[0] != y or d.inputs.count(y) != 1
                                or d.attrs.get("in_layout", "NC") != "NC" for d in dense):
                continue
            _, c, h, w = xs
            for d in dense:
                wm = const_input(graph, d, 1)
                hwc = wm.reshape(wm.shape[0], c, h, w).transpose(0, 2, 3, 1).reshape(wm.shape[0], -1)
                set_const(graph, d, 1, hwc, f"{d.name}_W")
                d.attrs["in_layout"] = "NHWC"
                d.inputs[0] = x
            drop(graph, node)
            graph.tensors.pop(y, None)
            changed = True
        return changed


class FoldPadIntoConv(Pass):
    """Remove a zero Pad of the spatial axes whose only readers are convolutions.

    Exporters write 'same' padding of TensorFlow models (asymmetric for even strides) as a
    Pad node before a Conv with ``pads = 0``. Zero-padding the input and then padding it
    again in the Conv is one convolution whose pads are the sums, so each reader's pads grow
    by the Pad's and the Pad (a block of its own in hardware: one more pass over the frame)
    disappears. In int8 the padded value is the input's zero point either way. Kept: a
    non-zero value, padding of the batch or channel axes, negative pads (crops), and pads
    a window would not reach (a side wider than the kernel's span minus one).
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op != "Pad" or node.outputs[0] in graph.outputs:
                continue
            a = node.attrs
            begin, end = a["begin"], a["end"]
            if (a["value"] != 0.0 or len(begin) != 4 or any(begin[:2]) or any(end[:2])
                    or min(begin) < 0 or min(end) < 0):
                continue
            y = node.outputs[0]
            convs = [n for n in graph.nodes if y in n.inputs]
            if not convs or any(c.op != "Conv" or c.inputs[0] != y or c.inputs.count(y) != 1 for c in convs):
                continue
            add = (begin[2], begin[3], end[2], end[3])
            new = []
            for c in convs:
                (kh, kw), (dh, dw) = c.attrs["kernel"], c.attrs["dilations"]
                span = ((kh - 1) * dh, (kw - 1) * dw, (kh - 1) * dh, (kw - 1) * dw)
                pads = tuple(int(p) + q for p, q in zip(c.attrs["pads"], add, strict=True))
                if any(p > s for p, s in zip(pads, span, strict=True)):
                    break
                new.append(pads)
            else:
                for c, pads in zip(convs, new, strict=True):
                    c.attrs["pads"] = pads
                    c.inputs[0] = node.inputs[0]
                drop(graph, node)
                graph.tensors.pop(y, None)
                changed = True
        return changed
