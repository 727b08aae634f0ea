"""The graph builder behind the test suite's ONNX models (`tests.models`): nodes appended
one by one with their activation shapes tracked, weights from one seeded generator."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DEFAULT_OPSET = 13


class Builder:
    """Appends nodes to a graph under construction and tracks the activation shapes.

    Weights are drawn from one seeded generator with He-like scaling, so activations stay
    of order 1 through deep networks.
    """

    def __init__(self, seed: int = 0, opset: int = DEFAULT_OPSET):
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self._n = 0

    # -- plumbing ------------------------------------------------------------------
    def name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def input(self, name: str, shape: tuple[int, ...]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self.shapes[name] = tuple(shape)
        return name

    def const(self, base: str, value: np.ndarray) -> str:
        name = self.name(base)
        value = np.asarray(value)
        self.inits.append(numpy_helper.from_array(value, name))
        self.shapes[name] = tuple(value.shape)
        return name

    def node(self, op: str, inputs: list[str], shape: tuple[int, ...] | None, **attrs) -> str:
        """Add one node with one output of known ``shape`` (None: not tracked)."""
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out + "_node", **attrs))
        if shape is not None:
            self.shapes[out] = tuple(shape)
        return out

    def weights(self, shape: tuple[int, ...], fan_in: int, gain: float = 2.0) -> np.ndarray:
        return (self.rng.standard_normal(shape) * np.sqrt(gain / fan_in)).astype(np.float32)

    def model(self, outputs: list[str], name: str = "model") -> onnx.ModelProto:
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(self.shapes[o])) for o in outputs]
        g = helper.make_graph(self.nodes, name, self.inputs, outs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="bbgrap-hls-tests")
        m.ir_version = min(m.ir_version, 8)  # readable by older onnxruntime builds too
        onnx.checker.check_model(m, full_check=True)
        return m

    # -- layers --------------------------------------------------------------------
    def conv(self, x: str, cout: int, k: int = 3, stride: int = 1, pad: int | None = None,
             group: int = 1, bias: bool = True, dilation: int = 1) -> str:
        n, c, h, w = self.shapes[x]
        pad = (k - 1) * dilation // 2 if pad is None else pad
        wt = self.const("w", self.weights((cout, c // group, k, k), c // group * k * k))
        ins = [x, wt] + ([self.const("b", self.rng.normal(0, 0.1, cout).astype(np.float32))] if bias else [])
        ho = (h + 2 * pad - dilation * (k - 1) - 1) // stride + 1
        wo = (w + 2 * pad - dilation * (k - 1) - 1) // stride + 1
        return self.node("Conv", ins, (n, cout, ho, wo), kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, group=group, dilations=[dilation, dilation])

    def bn(self, x: str) -> str:
        c = self.shapes[x][1]
        r = self.rng
        params = [r.uniform(0.5, 1.5, c), r.normal(0, 0.1, c), r.normal(0, 0.1, c), r.uniform(0.5, 1.5, c)]
        ins = [x] + [self.const(nm, p.astype(np.float32)) for nm, p in zip(("gamma", "beta", "mean", "var"), params, strict=False)]
        return self.node("BatchNormalization", ins, self.shapes[x], epsilon=1e-5)

    def act(self, x: str, op: str = "Relu", **attrs) -> str:
        if op == "Relu6":
            return self.clip(x, 0.0, 6.0)
        return self.node(op, [x], self.shapes[x], **attrs)

    def clip(self, x: str, lo: float, hi: float) -> str:
        if self.opset < 11:
            return self.node("Clip", [x], self.shapes[x], min=lo, max=hi)
        bounds = [self.const("lo", np.array(lo, np.float32)), self.const("hi", np.array(hi, np.float32))]
        return self.node("Clip", [x] + bounds, self.shapes[x])

    def conv_bn(self, x: str, cout: int, k: int = 3, stride: int = 1, group: int = 1,
                act: str | None = "Relu") -> str:
        y = self.bn(self.conv(x, cout, k, stride, group=group, bias=False))
        return self.act(y, act) if act else y

    def gemm(self, x: str, cout: int, trans_b: bool = True) -> str:
        n, c = self.shapes[x]
        w = self.weights((cout, c) if trans_b else (c, cout), c)
        b = self.rng.normal(0, 0.1, cout).astype(np.float32)
        return self.node("Gemm", [x, self.const("w", w), self.const("b", b)], (n, cout), transB=int(trans_b))

    def matmul(self, x: str, cout: int) -> str:
        s = self.shapes[x]
        return self.node("MatMul", [x, self.const("w", self.weights((s[-1], cout), s[-1]))], s[:-1] + (cout,))

    def binary(self, op: str, a: str, b: str) -> str:
        return self.node(op, [a, b], np.broadcast_shapes(self.shapes[a], self.shapes[b]))

    def maxpool(self, x: str, k: int, stride: int, pad: int = 0) -> str:
        n, c, h, w = self.shapes[x]
        o = [(d + 2 * pad - k) // stride + 1 for d in (h, w)]
        return self.node("MaxPool", [x], (n, c, *o), kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)

    def gap(self, x: str) -> str:
        n, c = self.shapes[x][:2]
        return self.node("GlobalAveragePool", [x], (n, c, 1, 1))

    def flatten(self, x: str) -> str:
        s = self.shapes[x]
        return self.node("Flatten", [x], (s[0], int(np.prod(s[1:]))), axis=1)

    def concat(self, xs: list[str], axis: int = 1) -> str:
        s = list(self.shapes[xs[0]])
        s[axis] = sum(self.shapes[x][axis] for x in xs)
        return self.node("Concat", xs, tuple(s), axis=axis)

    def split(self, x: str, sizes: list[int], axis: int = 1) -> list[str]:
        """Split along ``axis`` into parts of ``sizes`` (sizes as an input from opset 13 on)."""
        outs = [self.name("split") for _ in sizes]
        if self.opset >= 13:
            ins, kw = [x, self.const("split", np.array(sizes, np.int64))], {}
        else:
            ins, kw = [x], {"split": list(sizes)}
        self.nodes.append(helper.make_node("Split", ins, outs, name=outs[0] + "_node", axis=axis, **kw))
        for o, n in zip(outs, sizes, strict=True):
            shape = list(self.shapes[x])
            shape[axis] = n
            self.shapes[o] = tuple(shape)
        return outs

    def slice(self, x: str, starts: list[int], ends: list[int], axes: list[int]) -> str:
        """Slice (step 1) with starts/ends/axes as constant inputs (attributes before opset 10)."""
        box = [slice(None)] * len(self.shapes[x])
        for b, e, a in zip(starts, ends, axes, strict=True):
            box[a] = slice(b, e)
        shape = np.zeros(self.shapes[x], np.int8)[tuple(box)].shape
        if self.opset < 10:
            return self.node("Slice", [x], shape, starts=starts, ends=ends, axes=axes)
        ins = [x] + [self.const(k, np.array(v, np.int64)) for k, v in (("starts", starts), ("ends", ends), ("axes", axes))]
        return self.node("Slice", ins, shape)

    def upsample(self, x: str, scale: int = 2) -> str:
        """Nearest upsampling as torch exports ``nn.Upsample(scale_factor, mode="nearest")``."""
        n, c, h, w = self.shapes[x]
        sc = self.const("scales", np.array([1, 1, scale, scale], np.float32))
        if self.opset < 11:
            op = "Upsample" if self.opset < 10 else "Resize"
            return self.node(op, [x, sc], (n, c, h * scale, w * scale), mode="nearest")
        return self.node("Resize", [x, "", sc], (n, c, h * scale, w * scale), mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    def shuffle(self, x: str, groups: int) -> str:
        """Channel shuffle with static shapes: Reshape (N, g, C/g, H, W), Transpose, Reshape."""
        n, c, h, w = self.shapes[x]
        y = self.reshape(x, [n, groups, c // groups, h, w], (n, groups, c // groups, h, w))
        t = self.node("Transpose", [y], (n, c // groups, groups, h, w), perm=[0, 2, 1, 3, 4])
        return self.reshape(t, [n, c, h, w], (n, c, h, w))

    def reshape(self, x: str, shape: list[int], out_shape: tuple[int, ...]) -> str:
        return self.node("Reshape", [x, self.const("shape", np.array(shape, np.int64))], out_shape)

    def torch_flatten(self, x: str) -> str:
        """Flatten as torch.flatten(x, 1) exports it: Shape → Gather → Unsqueeze → Concat → Reshape."""
        s = self.shapes[x]
        shp = self.node("Shape", [x], None)
        n = self.node("Gather", [shp, self.const("zero", np.array(0, np.int64))], None, axis=0)
        n1 = self._unsqueeze0(n)
        cat = self.node("Concat", [n1, self.const("minus1", np.array([-1], np.int64))], None, axis=0)
        return self.node("Reshape", [x, cat], (s[0], int(np.prod(s[1:]))))

    def _unsqueeze0(self, x: str) -> str:
        if self.opset >= 13:
            return self.node("Unsqueeze", [x, self.const("axes", np.array([0], np.int64))], None)
        return self.node("Unsqueeze", [x], None, axes=[0])


def node_model(op_type: str, inputs: list, attrs: dict | None = None, opset: int = DEFAULT_OPSET,
               outputs: int | list[str] = 1, seed: int = 0) -> onnx.ModelProto:
    """A model of one node (for op tests).

    Args:
        op_type: the ONNX op type.
        inputs: per node input, a shape tuple (a graph input ``x0``, ``x1``, ...), a numpy
            array (an initializer) or ``""`` (an omitted optional input).
        attrs: the node's attributes.
        opset: default-domain opset.
        outputs: number of node outputs (all graph outputs ``y0``, ``y1``, ...) or their names
            (``""`` leaves an optional output off).
        seed: unused (kept for a uniform signature).
    """
    del seed
    names, graph_inputs, inits = [], [], []
    for k, spec in enumerate(inputs):
        if isinstance(spec, str):
            names.append(spec)
        elif isinstance(spec, tuple):
            names.append(f"x{k}")
            graph_inputs.append(helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, list(spec)))
        else:
            names.append(f"c{k}")
            inits.append(numpy_helper.from_array(np.asarray(spec), f"c{k}"))
    outs = [f"y{k}" for k in range(outputs)] if isinstance(outputs, int) else list(outputs)
    node = helper.make_node(op_type, names, outs, name=f"{op_type.lower()}_node", **(attrs or {}))
    graph = helper.make_graph([node], f"{op_type.lower()}_test", graph_inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs if o], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="bbgrap-hls-tests")
    m.ir_version = min(m.ir_version, 8)
    try:  # gives the outputs their shapes
        m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    except Exception:  # a model that breaks the spec on purpose (refusal tests)
        pass
    for o in m.graph.output:  # the checker wants a shape field, even an unknown one
        o.type.tensor_type.shape.SetInParent()
    return m
