"""Slice and Split: select a box of a tensor (Split: several boxes along one axis).

Slice reads ``starts``/``ends``/``axes``/``steps`` from attributes (opset < 10) or constant
inputs, clamps them as ONNX does and keeps, per axis, ``start, count, step``: the elements
``start + k·step`` for ``k < count`` (any step in the float reference). The loader keeps only
the data input (`lower`). On the fabric (`fabric_limit`) a Slice is a crop of an NCHW (or
(N, C)) stream: step 1, the whole batch axis; channels, rows and columns may be cut anywhere.

Split is lowered by the loader into one Slice per used output (`Split.lower`), so the
rest of the tool chain only sees Slice.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ir import Node
from bbgrap_hls.ops.base import Op, register
from bbgrap_hls.ops.util import norm_axis, optional_const

_BIG = 1 << 62


def _clamp_axis(start: int, end: int, step: int, dim: int) -> tuple[int, int]:
    """ONNX's clamping of one axis: ``(first index, element count)``."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return start, max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, max(0, -(-(start - end) // -step))


def take_box(x: np.ndarray, start, count, step) -> np.ndarray:
    """Elements ``start[a] + k·step[a]`` (``k < count[a]``) of every axis ``a``."""
    for a, (s, c, st) in enumerate(zip(start, count, step, strict=True)):
        if s == 0 and st == 1 and c == x.shape[a]:
            continue
        x = np.take(x, s + st * np.arange(c, dtype=np.int64), axis=a)
    return np.ascontiguousarray(x)


def slice_node(name: str, x: str, y: str, start, count, step, shape) -> Node:
    """A canonical Slice node (attributes as `Slice.parse` writes them)."""
    start, count, step = (tuple(int(v) for v in t) for t in (start, count, step))
    return Node(name, "Slice", [x], [y], _attrs(start, count, step, tuple(int(d) for d in shape)))


def _attrs(start, count, step, shape) -> dict:
    """Node attributes: the box, and its crop as negative ``pads`` of an NCHW stream
    (top, left, bottom, right; what the cost model's geometry reads)."""
    a = {"start": start, "count": count, "step": step}
    if len(shape) == 4 and step[2] == step[3] == 1:
        a["pads"] = (-start[2], -start[3], count[2] + start[2] - shape[2], count[3] + start[3] - shape[3])
    return a


@register
class Slice(Op):
    kind = "Slice"
    onnx_types = ("Slice",)
    hls_kernel = "slice2d"
    rtl_module = "slice"

    def parse(self, onnx_node, attrs, graph):
        shape = graph.tensor(onnx_node.input[0]).shape
        rank = len(shape)
        if graph.opset < 10:
            starts, ends = attrs.get("starts"), attrs.get("ends")
            axes, steps = attrs.get("axes"), None
        else:
            starts = optional_const(graph, onnx_node, 1, self, "starts")
            ends = optional_const(graph, onnx_node, 2, self, "ends")
            axes = optional_const(graph, onnx_node, 3, self, "axes")
            steps = optional_const(graph, onnx_node, 4, self, "steps")
        if starts is None or ends is None:
            raise self.fail(onnx_node, "starts and ends are required")
        starts, ends = [int(v) for v in np.ravel(starts)], [int(v) for v in np.ravel(ends)]
        fail = lambda m: self.fail(onnx_node, m)  # noqa: E731
        axes = list(range(len(starts))) if axes is None else [norm_axis(a, rank, fail) for a in np.ravel(axes)]
        steps = [1] * len(starts) if steps is None else [int(v) for v in np.ravel(steps)]
        if not len(starts) == len(ends) == len(axes) == len(steps) or len(set(axes)) != len(axes):
            raise self.fail(onnx_node, f"starts {starts}, ends {ends}, axes {axes}, steps {steps}: "
                            "one value per axis, each axis once")
        start, count, step = [0] * rank, list(shape), [1] * rank
        for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
            if st == 0:
                raise self.fail(onnx_node, f"steps: 0 on axis {a}")
            start[a], count[a] = _clamp_axis(max(min(s, _BIG), -_BIG), max(min(e, _BIG), -_BIG), st, shape[a])
            step[a] = st
        if min(count) < 1:
            raise self.fail(onnx_node, f"the slice of shape {shape} is empty (starts {starts}, ends {ends})")
        return _attrs(tuple(start), tuple(count), tuple(step), tuple(shape))

    def infer(self, node, graph):
        return [tuple(node.attrs["count"])]

    def run(self, node, inputs):
        a = node.attrs
        return [take_box(inputs[0], a["start"], a["count"], a["step"])]

    def params(self, node, graph):
        return 0  # starts, ends, axes and steps are configuration

    def lower(self, node, graph):
        """Keep only the data input (the other inputs are folded into the attributes)."""
        node.inputs = node.inputs[:1]
        return [node]

    def fabric_limit(self, node, graph) -> str | None:
        """Why the fabric cannot run this Slice (None: it can)."""
        a, shape = node.attrs, graph.shape(node.inputs[0])
        if len(shape) not in (2, 4):
            return f"only slices of (N, C) and (N, C, H, W) tensors stream (input {shape})"
        if a["count"][0] != shape[0]:
            return "slicing the batch axis does not stream"
        if any(s != 1 for s in a["step"]):
            return f"steps {tuple(a['step'])}: only step 1 streams (a crop)"
        return None


@register
class Split(Op):
    kind = "Split"
    onnx_types = ("Split",)

    def parse(self, onnx_node, attrs, graph):
        shape = graph.tensor(onnx_node.input[0]).shape
        axis = norm_axis(attrs.get("axis", 0), len(shape), lambda m: self.fail(onnx_node, m))
        n_out, dim = len(onnx_node.output), shape[axis]
        sizes = attrs.get("split") if graph.opset < 13 else optional_const(graph, onnx_node, 1, self, "split")
        if sizes is not None and np.size(sizes) > 0:
            sizes = [int(v) for v in np.ravel(sizes)]
            if len(sizes) != n_out or min(sizes) < 0 or sum(sizes) != dim:
                raise self.fail(onnx_node, f"split {sizes}: {n_out} sizes summing to {dim} (axis {axis}) expected")
        else:
            parts = int(attrs.get("num_outputs", n_out))
            if parts != n_out or parts < 1:
                raise self.fail(onnx_node, f"num_outputs {parts} for {n_out} outputs")
            # equal parts, the last one smaller when the axis does not divide (opset 18)
            each = -(-dim // parts)
            if "num_outputs" not in attrs and dim % parts:
                raise self.fail(onnx_node, f"axis {axis} of size {dim} does not split into {parts} equal parts")
            sizes = [max(0, min(each, dim - k * each)) for k in range(parts)]
        begins = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        used = [k for k, o in enumerate(onnx_node.output) if o]
        for k in used:
            if sizes[k] < 1:
                raise self.fail(onnx_node, f"output {k} ('{onnx_node.output[k]}') is empty (split {sizes})")
        return {"axis": axis, "parts": [(begins[k], sizes[k]) for k in used]}

    def infer(self, node, graph):
        s, a = graph.shape(node.inputs[0]), node.attrs["axis"]
        return [s[:a] + (n,) + s[a + 1:] for _, n in node.attrs["parts"]]

    def run(self, node, inputs):
        a = node.attrs["axis"]
        return [np.ascontiguousarray(np.take(inputs[0], np.arange(b, b + n), axis=a)) for b, n in node.attrs["parts"]]

    def params(self, node, graph):
        return 0

    def lower(self, node, graph):
        """One Slice per used output (named ``<split>``, ``<split>_1``, ...)."""
        shape, a = graph.shape(node.inputs[0]), node.attrs["axis"]
        out = []
        for k, ((b, n), y) in enumerate(zip(node.attrs["parts"], node.outputs, strict=True)):
            start, count = [0] * len(shape), list(shape)
            start[a], count[a] = b, n
            name = node.name if k == 0 else graph.fresh_name(f"{node.name}_{k}")
            out.append(slice_node(name, node.inputs[0], y, start, count, [1] * len(shape), shape))
        return out
