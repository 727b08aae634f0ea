"""Lower ConvTranspose to a zero-insertion upsampler and an ordinary Conv."""

from __future__ import annotations

from bbgrap_hls.ir import Graph
from bbgrap_hls.ops import get_op
from bbgrap_hls.passes.base import Pass, make, replace


class LowerConvTranspose(Pass):
    """Replace each ConvTranspose by `ZeroInsert` → `Conv` (`ConvTranspose.conv_form`).

    A transposed convolution with stride ``s`` is the convolution, at stride 1 with the
    kernel flipped and in/out channels swapped per group, of its input with ``s − 1`` zeros
    inserted between neighbouring pixels and ``d·(k−1) − p`` zeros around them (plus the
    output padding at the end): every output pixel sums the same products of input pixels
    and taps, so the result is the same up to float summation order. The Conv keeps the
    ConvTranspose's name and output; the ZeroInsert (``<name>_zeros``) is left out when
    the stride is 1 and the Conv's own pads cover the border. In int8 the inserted pixels
    are the input's zero point, so the Conv's ``-z_x·Σw`` bias term makes them exact zeros.
    The Conv records the ConvTranspose's MACs (``useful_macs``): it computes ``s_h·s_w`` times
    as many, most on inserted zeros (the cost model counts those, from its geometry).
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if node.op != "ConvTranspose":
                continue
            op = get_op("ConvTranspose")
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
