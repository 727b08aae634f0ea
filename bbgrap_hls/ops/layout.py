"""Layout ops that move no arithmetic: Flatten, Reshape, Squeeze, Unsqueeze, Transpose.

Shapes, axes and permutations must be static (constants after folding). Reshape and
Flatten are no-ops on an NHWC stream where they only merge or split trailing axes; the
channel shuffle (Reshape → Transpose → Reshape inside a pixel) is recognised by the
canonicalisation passes.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import norm_axis, optional_const


class Layout(Op):
    """Shared parts: output shape precomputed at parse; no parameters."""

    def infer(self, node, graph):
        return [tuple(node.attrs["shape"])]

    def run(self, node, inputs):
        return [inputs[0].reshape(node.attrs["shape"])]

    def params(self, node, graph):
        return 0  # shape/axes inputs are configuration, not weights


@register
class Flatten(Layout):
    kind = "Flatten"
    onnx_types = ("Flatten",)

    def parse(self, onnx_node, attrs, graph):
        s = graph.tensor(onnx_node.input[0]).shape
        axis = int(attrs.get("axis", 1))
        if not -len(s) <= axis <= len(s):
            raise self.fail(onnx_node, f"axis {axis} is out of range for rank {len(s)}")
        axis = axis + len(s) if axis < 0 else axis
        return {"axis": axis, "shape": (int(np.prod(s[:axis], dtype=np.int64)),
                                        int(np.prod(s[axis:], dtype=np.int64)))}


@register
class Reshape(Layout):
    kind = "Reshape"
    onnx_types = ("Reshape",)

    def parse(self, onnx_node, attrs, graph):
        s = graph.tensor(onnx_node.input[0]).shape
        if graph.opset < 5:
            target = attrs.get("shape")
        else:
            target = optional_const(graph, onnx_node, 1, self, "shape")
        if target is None:
            raise self.fail(onnx_node, "the target shape is missing")
        target = [int(d) for d in np.asarray(target).ravel()]
        allowzero = int(attrs.get("allowzero", 0))
        out = []
        for i, d in enumerate(target):
            if d == 0 and not allowzero:
                if i >= len(s):
                    raise self.fail(onnx_node, f"shape {target}: 0 at position {i} has no input dim")
                d = s[i]
            out.append(d)
        size = int(np.prod(s, dtype=np.int64))
        if out.count(-1) > 1 or any(d < -1 for d in out):
            raise self.fail(onnx_node, f"shape {target} is not a valid target shape")
        if -1 in out:
            known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
            if known == 0 or size % known:
                raise self.fail(onnx_node, f"cannot reshape {s} into {target}")
            out[out.index(-1)] = size // known
        if int(np.prod(out, dtype=np.int64)) != size:
            raise self.fail(onnx_node, f"cannot reshape {s} ({size} elements) into {tuple(out)}")
        return {"shape": tuple(out)}


class _Axes(Layout):
    """Squeeze/Unsqueeze: axes from the attribute (opset < 13) or a constant input."""

    def axes(self, onnx_node, attrs, graph) -> list[int] | None:
        if graph.opset >= 13:
            if "axes" in attrs:
                raise self.fail(onnx_node, f"opset {graph.opset} takes axes as an input, not an attribute")
            v = optional_const(graph, onnx_node, 1, self, "axes")
            return None if v is None else [int(a) for a in v.ravel()]
        return None if attrs.get("axes") is None else [int(a) for a in attrs["axes"]]


@register
class Squeeze(_Axes):
    kind = "Squeeze"
    onnx_types = ("Squeeze",)

    def parse(self, onnx_node, attrs, graph):
        s = graph.tensor(onnx_node.input[0]).shape
        axes = self.axes(onnx_node, attrs, graph)
        if axes is None:
            axes = [i for i, d in enumerate(s) if d == 1]
        axes = {norm_axis(a, len(s), lambda m: self.fail(onnx_node, m)) for a in axes}
        if any(s[a] != 1 for a in axes):
            raise self.fail(onnx_node, f"cannot squeeze axes {sorted(axes)} of shape {s}")
        return {"axes": tuple(sorted(axes)), "shape": tuple(d for i, d in enumerate(s) if i not in axes)}


@register
class Unsqueeze(_Axes):
    kind = "Unsqueeze"
    onnx_types = ("Unsqueeze",)

    def parse(self, onnx_node, attrs, graph):
        s = graph.tensor(onnx_node.input[0]).shape
        axes = self.axes(onnx_node, attrs, graph)
        if not axes:
            raise self.fail(onnx_node, "axes are required")
        rank = len(s) + len(axes)
        norm = {norm_axis(a, rank, lambda m: self.fail(onnx_node, m)) for a in axes}
        if len(norm) != len(axes):
            raise self.fail(onnx_node, f"axes {axes} repeat an axis")
        dims = iter(s)
        out = tuple(1 if i in norm else next(dims) for i in range(rank))
        return {"axes": tuple(sorted(norm)), "shape": out}


@register
class Transpose(Layout):
    kind = "Transpose"
    onnx_types = ("Transpose",)

    def parse(self, onnx_node, attrs, graph):
        s = graph.tensor(onnx_node.input[0]).shape
        perm = [int(p) for p in attrs.get("perm", range(len(s) - 1, -1, -1))]
        if sorted(perm) != list(range(len(s))):
            raise self.fail(onnx_node, f"perm {perm} is not a permutation of {len(s)} axes")
        return {"perm": tuple(perm), "shape": tuple(s[p] for p in perm)}

    def run(self, node, inputs):
        return [np.ascontiguousarray(np.transpose(inputs[0], node.attrs["perm"]))]
