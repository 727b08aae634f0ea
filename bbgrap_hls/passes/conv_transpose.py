"""Lower ConvTranspose to a zero-insertion upsampler and an ordinary Conv, or, when its kernel
equals its stride, to a 1×1 Conv and a DepthToSpace (sub-pixel form)."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.ops import get_op
from bbgrap_hls.passes.base import Pass, make, replace, sole_reader


def _sub_pixel(node: Node, graph: Graph) -> bool:
    """Whether the sub-pixel form applies: one stride ``s >= 2`` on both axes, no dilation, one
    group, and the output inside the ``(H + t − 1)·s`` rows of the phase convolution
    (``t = ceil(k/s)``; output padding past it would need windows wholly in padding)."""
    a = node.attrs
    s = tuple(a["strides"])
    if s[0] != s[1] or s[0] < 2 or tuple(a["dilations"]) != (1, 1) or a["group"] != 1:
        return False
    _, _, ho, wo = graph.shape(node.outputs[0])
    _, _, h, w = graph.shape(node.inputs[0])
    p = a["pads"]
    return all(p[i] + size <= (n + -(-k // s[0]) - 1) * s[0]
               for i, (size, n, k) in enumerate(((ho, h, a["kernel"][0]), (wo, w, a["kernel"][1]))))


class LowerConvTranspose(Pass):
    """Replace each ConvTranspose by `ZeroInsert` → `Conv` (`ConvTranspose.conv_form`), or by
    `Conv` 1×1 → `DepthToSpace` (DCR) when its kernel equals its stride.

    A transposed convolution with stride ``s`` is the convolution, at stride 1 with the
    kernel flipped and in/out channels swapped per group, of its input with ``s − 1`` zeros
    inserted between neighbouring pixels and ``d·(k−1) − p`` zeros around them (plus the
    output padding at the end): every output pixel sums the same products of input pixels
    and taps, so the result is the same up to float summation order. The Conv keeps the
    ConvTranspose's name and output; the ZeroInsert (``<name>_zeros``) is left out when
    the stride is 1 and the Conv's own pads cover the border. In int8 the inserted pixels
    are the input's zero point, so the Conv's ``-z_x·Σw`` bias term makes them exact zeros.
    That Conv computes ``s_h·s_w`` times the useful MACs, most on inserted zeros; it records
    the ConvTranspose's (``useful_macs``) for inspect and the roofline.

    Kernel = stride ``s`` (no pads, output padding, dilation or groups; the U-Net
    up-convolution): output pixel ``(y·s + i, x·s + j)`` is input pixel ``(y, x)`` times tap
    ``(i, j)`` alone, so a 1×1 Conv with ``s²·M`` outputs (output ``(i·s + j)·M + m`` = tap
    ``(i, j)`` of channel ``m``, the bias repeated) followed by DepthToSpace (DCR, block ``s``)
    gives the same products with no zero: the sub-pixel form, exactly the useful MACs. The
    Conv is ``<name>`` and writes ``<name>_phases``; the DepthToSpace writes the output.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op != "ConvTranspose":
                continue
            op = get_op("ConvTranspose")
            if _sub_pixel(node, graph):
                replace(graph, node, *self._sub_pixel_nodes(graph, node))
                changed = True
                continue
            attrs, extra, wc = op.conv_form(node, graph)
            attrs["useful_macs"] = op.macs(node, graph)  # inspect and the roofline count these
            x = node.inputs[0]
            new = []
            if tuple(node.attrs["strides"]) != (1, 1) or any(extra):
                z = graph.fresh_name(f"{node.name}_zeros")
                zi = make(graph, "ZeroInsert", [x], [z], z,
                          {"factor": tuple(node.attrs["strides"]), "pads": extra, "value": 0.0})
                new.append(zi)
                x = z
            wt = graph.add_const(f"{node.name}_W", wc)
            ins = [x, wt] + ([node.inputs[2]] if len(node.inputs) > 2 and node.inputs[2] else [])
            new.append(make(graph, "Conv", ins, node.outputs[:1], node.name, attrs))
            replace(graph, node, *new)
            changed = True
        return changed

    @staticmethod
    def _sub_pixel_nodes(graph: Graph, node: Node) -> list[Node]:
        """Conv ``t×t`` (pads ``t − 1``) with ``s²·M`` outputs → DepthToSpace → crop (a Slice of
        ``pads``, left out when there is nothing to crop): output pixel ``o = q·s + r − p`` takes
        taps ``r + s·u`` of input pixels ``q − u`` (the kernel zero-padded to ``t·s`` taps), so
        phase ``r`` is a ``t``-tap convolution over the input."""
        from bbgrap_hls.ops.slice import slice_node

        w = graph.const(node.inputs[1])  # (C, M, kh, kw)
        c, m, kh, kw = w.shape
        s = node.attrs["strides"][0]
        th, tw = -(-kh // s), -(-kw // s)
        wp = np.zeros((c, m, th * s, tw * s), w.dtype)
        wp[:, :, :kh, :kw] = w
        # W[(i·s + j)·M + m, c, u, v] = wp[c, m, i + s·(th−1−u), j + s·(tw−1−v)]
        wc = wp.reshape(c, m, th, s, tw, s)[:, :, ::-1, :, ::-1, :].transpose(3, 5, 1, 0, 2, 4)
        wc = np.ascontiguousarray(wc.reshape(s * s * m, c, th, tw))
        ins = [node.inputs[0], graph.add_const(f"{node.name}_W", wc)]
        if len(node.inputs) > 2 and node.inputs[2]:
            ins.append(graph.add_const(f"{node.name}_b", np.tile(graph.const(node.inputs[2]), s * s)))
        t = graph.fresh_name(f"{node.name}_phases")
        conv = make(graph, "Conv", ins, [t], node.name,
                    {"kernel": (th, tw), "strides": (1, 1), "dilations": (1, 1),
                     "pads": (th - 1, tw - 1, th - 1, tw - 1), "group": 1,
                     # zero taps (k < t·s) and cropped phases cost MACs that are not useful
                     "useful_macs": get_op("ConvTranspose").macs(node, graph)})
        y = node.outputs[0]
        p = node.attrs["pads"]
        n, _, ho, wo = graph.shape(y)
        _, _, hq, wq = graph.shape(t)
        full = (n, m, hq * s, wq * s)
        if full == (n, m, ho, wo):
            return [conv, make(graph, "DepthToSpace", [t], [y], graph.fresh_name(f"{node.name}_d2s"),
                               {"blocksize": s, "mode": "DCR"})]
        z = graph.fresh_name(f"{node.name}_full")
        d2s = make(graph, "DepthToSpace", [t], [z], graph.fresh_name(f"{node.name}_d2s"),
                   {"blocksize": s, "mode": "DCR"})
        crop = slice_node(graph.fresh_name(f"{node.name}_crop"), z, y, (0, 0, p[0], p[1]), (n, m, ho, wo),
                          (1, 1, 1, 1), full)
        return [conv, d2s, crop]


class MoveActivationBeforeDepthToSpace(Pass):
    """Swap a Relu or Relu6 with the DepthToSpace it reads, or with the crop (Slice) of a
    DepthToSpace's output it reads (each the sole reader of what it reads).

    An elementwise function commutes with a permutation or a selection of the elements, so
    the values are the same; afterwards the activation directly follows the Conv before the
    DepthToSpace (a lowered ConvTranspose) and fuses into its requantisation instead of a
    block of its own. Other Slices are left alone (the activation would run on the uncropped
    tensor).
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        consumers = graph.consumers()
        producer = {o: n for n in graph.nodes for o in n.outputs}
        for mover in list(graph.nodes):
            if mover.op == "Slice":
                src = producer.get(mover.inputs[0])
                if src is None or src.op != "DepthToSpace" or sole_reader(graph, src.outputs[0], consumers) is not mover:
                    continue
            elif mover.op != "DepthToSpace":
                continue
            act = sole_reader(graph, mover.outputs[0], consumers)
            if act is None or act.op not in ("Relu", "Relu6"):
                continue
            src_t, mid, out = mover.inputs[0], mover.outputs[0], act.outputs[0]
            t = graph.fresh_name(f"{act.name}_pre")
            graph.tensors.pop(mid, None)
            new_act = make(graph, act.op, [src_t], [t], act.name, dict(act.attrs))
            new_mover = Node(mover.name, mover.op, [t], [out], dict(mover.attrs))
            replace(graph, act, new_mover)
            replace(graph, mover, new_act)
            consumers = graph.consumers()
            producer = {o: n for n in graph.nodes for o in n.outputs}
            changed = True
        return changed
