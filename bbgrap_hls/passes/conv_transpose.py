"""Lower ConvTranspose to a zero-insertion upsampler and an ordinary Conv, or, when its kernel
equals its stride, to a 1×1 Conv and a DepthToSpace (sub-pixel form)."""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.ops import get_op
from bbgrap_hls.passes.base import Pass, make, replace, sole_reader


def _sub_pixel(node: Node) -> bool:
    """Whether every output pixel takes exactly one tap of one input pixel: kernel = stride
    (square), no pads, no output padding, no dilation, one group."""
    a = node.attrs
    s = tuple(a["strides"])
    return (tuple(a["kernel"]) == s and s[0] == s[1] > 1 and not any(a["pads"]) and not any(a["output_padding"])
            and tuple(a["dilations"]) == (1, 1) and a["group"] == 1)


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
            if _sub_pixel(node):
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
        w = graph.const(node.inputs[1])  # (C, M, s, s)
        c, m, s, _ = w.shape
        wc = np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(s * s * m, c, 1, 1))
        ins = [node.inputs[0], graph.add_const(f"{node.name}_W", wc)]
        if len(node.inputs) > 2 and node.inputs[2]:
            ins.append(graph.add_const(f"{node.name}_b", np.tile(graph.const(node.inputs[2]), s * s)))
        t = graph.fresh_name(f"{node.name}_phases")
        conv = make(graph, "Conv", ins, [t], node.name,
                    {"kernel": (1, 1), "strides": (1, 1), "dilations": (1, 1), "pads": (0, 0, 0, 0), "group": 1})
        d2s = make(graph, "DepthToSpace", [t], node.outputs[:1], graph.fresh_name(f"{node.name}_d2s"),
                   {"blocksize": s, "mode": "DCR"})
        return [conv, d2s]


class MoveActivationBeforeDepthToSpace(Pass):
    """Swap a Relu or Relu6 that reads a DepthToSpace (its sole reader) with it.

    An elementwise function commutes with a permutation of the elements, so the values are the
    same; afterwards the activation directly follows the Conv before the DepthToSpace (a
    lowered ConvTranspose) and fuses into its requantisation instead of a block of its own.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        consumers = graph.consumers()
        for d2s in list(graph.nodes):
            if d2s.op != "DepthToSpace":
                continue
            act = sole_reader(graph, d2s.outputs[0], consumers)
            if act is None or act.op not in ("Relu", "Relu6"):
                continue
            src, mid, out = d2s.inputs[0], d2s.outputs[0], act.outputs[0]
            t = graph.fresh_name(f"{act.name}_pre")
            graph.tensors.pop(mid, None)
            new_act = make(graph, act.op, [src], [t], act.name, dict(act.attrs))
            new_d2s = make(graph, "DepthToSpace", [t], [out], d2s.name, dict(d2s.attrs))
            replace(graph, act, new_d2s)
            replace(graph, d2s, new_act)
            consumers = graph.consumers()
            changed = True
        return changed
