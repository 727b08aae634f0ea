"""The graph every stage reads and writes.

A `Graph` holds `Tensor`s by name and `Node`s in topological order. Constant tensors
(weights, biases, folded shapes) carry their value in ``Tensor.data``; activations have
``data is None``. Shapes are static tuples, NCHW as in ONNX. Quantisation parameters are
part of a tensor's meaning (its ``quant``), never tool state; where a layer runs belongs
to the plan, not to the node.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bbgrap_hls.errors import BadInputError


def space_to_depth(x: np.ndarray, s: int) -> np.ndarray:
    """ONNX SpaceToDepth over the last three axes: (…, C, H, W) -> (…, s²·C, H/s, W/s), channel
    ``(dy·s + dx)·C + c`` of block (Y, X) holding pixel (s·Y + dy, s·X + dx) of channel c."""
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c, h // s, s, w // s, s)
    y = y.transpose(*range(k), k + 2, k + 4, k, k + 1, k + 3)  # (…, dy, dx, c, Y, X)
    return np.ascontiguousarray(y.reshape(*lead, s * s * c, h // s, w // s))


@dataclass(frozen=True)
class Patches:
    """A graph input held as its stem conv's window taps (`passes/stem.py`, "Patches"): the
    host unfolds each output position's ``kw`` taps of a row (``rows`` False: the conv becomes
    ``kh x 1`` of stride ``(sh, 1)``) or all ``kh·kw`` taps (``rows`` True: a 1 x 1 conv) into
    channels, so that a 3-channel stem fills the conv lanes with ``3·kw`` or ``3·kh·kw``.

    Attributes:
        model: the model's (N, C, H, W) shape of the input.
        kernel, strides: the stem conv's ``(kh, kw)`` and ``(sh, sw)``.
        pads: its (top, left, bottom, right) padding; the unfolded taps in it are 0.
        rows: True: every kernel row unfolded too.
    """

    model: tuple[int, int, int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    rows: bool

    def out(self) -> tuple[int, int]:
        """The conv's output rows and columns."""
        from bbgrap_hls.ops.util import out_size

        (_, _, h, w), (kh, kw), (sh, sw), p = self.model, self.kernel, self.strides, self.pads
        return out_size(h, kh, sh, 1, p[0], p[2]), out_size(w, kw, sw, 1, p[1], p[3])

    def shape(self) -> tuple[int, int, int, int]:
        """The held (N, C', H', W') shape."""
        n, c, h, _ = self.model
        (kh, kw), (ho, wo) = self.kernel, self.out()
        return (n, kh * kw * c, ho, wo) if self.rows else (n, kw * c, h, wo)

    def to_dict(self) -> dict[str, Any]:
        return {"model": list(self.model), "kernel": list(self.kernel), "strides": list(self.strides),
                "pads": list(self.pads), "rows": self.rows}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Patches:
        return cls(tuple(d["model"]), tuple(d["kernel"]), tuple(d["strides"]), tuple(d["pads"]), bool(d["rows"]))

    def unfold(self, x: np.ndarray) -> np.ndarray:
        """(…, C, H, W) arrays of the model's shape -> the held layout: channel
        ``(ky·kw + kx)·C + c`` (``rows``) or ``kx·C + c`` of position (y', x') holds the padded
        input's pixel (sh·y' + ky, sw·x' + kx) or (y', sw·x' + kx) of channel c."""
        (kh, kw), (sh, sw), p = self.kernel, self.strides, self.pads
        ho, wo = self.out()
        *lead, c, h, w = x.shape
        k = len(lead)
        top, bottom = (p[0], p[2]) if self.rows else (0, 0)
        xp = np.pad(x, [(0, 0)] * k + [(0, 0), (top, bottom), (p[1], p[3])])
        cols = np.stack([xp[..., sw * np.arange(wo) + kx] for kx in range(kw)], axis=k)  # (…, kw, C, H', wo)
        if not self.rows:
            return np.ascontiguousarray(cols.reshape(*lead, kw * c, h, wo))
        taps = np.stack([cols[..., sh * np.arange(ho) + ky, :] for ky in range(kh)], axis=k)  # (…, kh, kw, C, ho, wo)
        return np.ascontiguousarray(taps.reshape(*lead, kh * kw * c, ho, wo))


@dataclass(frozen=True)
class QuantParams:
    """Affine int8 quantisation of a tensor: ``q = clamp(round(x / scale) + zp)``.

    Attributes:
        scale: per-tensor scale (shape ``()``) or per-channel scales (shape ``(C,)``).
        zp: zero point(s), same shape as ``scale``.
        axis: channel axis for per-channel parameters, ``None`` for per-tensor.
        dtype: storage type, ``"int8"`` or ``"int32"`` (biases).
    """

    scale: np.ndarray
    zp: np.ndarray
    axis: int | None = None
    dtype: str = "int8"

    @property
    def per_channel(self) -> bool:
        return self.axis is not None


@dataclass
class Tensor:
    """A named value: an activation (``data is None``) or a constant.

    Attributes:
        name: unique name in the graph (model text: never used in a path or identifier
            without sanitising).
        shape: static shape.
        dtype: numpy dtype name of the float graph ("float32", "int64", ...) or "int8"/
            "int32" once quantised.
        data: the value of a constant, else ``None``.
        quant: quantisation parameters once known.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    data: np.ndarray | None = None
    quant: QuantParams | None = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(eq=False)
class Node:
    """One operator application.

    Attributes:
        name: unique node name.
        op: the op kind, a key of the op registry (``bbgrap_hls.ops.REGISTRY``).
        inputs: input tensor names ("" for an omitted optional input).
        outputs: output tensor names.
        attrs: parsed attributes (plain Python values and numpy arrays).
        host: True for a host op (run by the host driver, not the fabric).
    """

    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    host: bool = False


@dataclass
class Graph:
    """A static-shape dataflow graph.

    Attributes:
        name: graph name from the model.
        inputs: names of the graph's activation inputs, in order.
        outputs: names of the graph's outputs, in order.
        tensors: every tensor by name (activations and constants).
        nodes: nodes in topological order.
        opset: the default-domain opset the model was written with.
        output_shapes: the model's declared shape of a graph output the IR holds in
            another shape (a 1-D model's (N, C, L) output held as (N, C, L, 1):
            frontend/lift1d.py); `declared_outputs` gives outputs their declared shapes.
        input_blocks: graph inputs held as ``s`` x ``s`` pixel blocks (`passes/stem.py`): the
            model's (N, C, H, W) input is the tensor (N, s²·C, H/s, W/s), ONNX SpaceToDepth
            order; `held_input` turns an array of the model's shape into that one.
        input_patches: graph inputs held as their stem conv's window taps (`Patches`).
    """

    name: str
    inputs: list[str]
    outputs: list[str]
    tensors: dict[str, Tensor]
    nodes: list[Node]
    opset: int = 13
    output_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    input_blocks: dict[str, int] = field(default_factory=dict)
    input_patches: dict[str, Patches] = field(default_factory=dict)

    def model_input_shape(self, name: str) -> tuple[int, ...]:
        """The model's shape of graph input ``name`` (its held shape unless held in blocks)."""
        shape = self.tensors[name].shape
        if name in self.input_patches:
            return self.input_patches[name].model
        s = self.input_blocks.get(name)
        if not s:
            return shape
        n, c, h, w = shape
        return (n, c // (s * s), h * s, w * s)

    def held_input(self, name: str, x: np.ndarray) -> np.ndarray:
        """``x`` as the graph holds input ``name``: an array of the model's shape (with or
        without the batch dimension, or ``(K, *shape)`` samples) of an input held in blocks
        becomes its block layout (or its `Patches`); anything else is returned as it is."""
        s = self.input_blocks.get(name)
        patches = self.input_patches.get(name)
        x = np.asarray(x)
        model = self.model_input_shape(name)
        if not (s or patches) or x.ndim < 3 or x.shape[-3:] != tuple(model[-3:]):
            return x
        return patches.unfold(x) if patches else space_to_depth(x, s)

    def declared_outputs(self, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``outputs`` (by graph output name) in the model's declared shapes."""
        return {k: v.reshape(self.output_shapes[k]) if k in self.output_shapes and v.size ==
                int(np.prod(self.output_shapes[k])) else v for k, v in outputs.items()}

    # -- lookups -----------------------------------------------------------------
    def tensor(self, name: str) -> Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise BadInputError(f"tensor '{name}' is not defined in graph '{self.name}'") from None

    def const(self, name: str) -> np.ndarray | None:
        """The value of constant tensor ``name``, or None when it is an activation."""
        t = self.tensors.get(name)
        return None if t is None else t.data

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def producers(self) -> dict[str, Node]:
        """Map tensor name -> node that writes it."""
        return {o: n for n in self.nodes for o in n.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        """Map tensor name -> nodes that read it (in node order)."""
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i:
                    out.setdefault(i, []).append(n)
        return out

    def act_inputs(self, node: Node) -> list[str]:
        """The node's inputs that are activations (not constants, not omitted)."""
        return [i for i in node.inputs if i and self.tensors[i].data is None]

    # -- editing -----------------------------------------------------------------
    def copy(self) -> Graph:
        """A structural copy: new nodes, tensors, lists and attribute dicts.

        Constant arrays are shared, not copied: every stage replaces a tensor's array
        rather than writing into it (numpy arrays of constants are made read-only here,
        so an in-place write fails loudly instead of changing the source graph).
        """
        tensors = {}
        for k, t in self.tensors.items():
            if t.data is not None and t.data.flags.writeable:
                t.data.flags.writeable = False
            tensors[k] = Tensor(t.name, t.shape, t.dtype, t.data, t.quant)
        nodes = [Node(n.name, n.op, list(n.inputs), list(n.outputs), copy.copy(n.attrs), n.host)
                 for n in self.nodes]
        return Graph(self.name, list(self.inputs), list(self.outputs), tensors, nodes, self.opset,
                     dict(self.output_shapes), dict(self.input_blocks), dict(self.input_patches))

    def add_const(self, name: str, value: np.ndarray) -> str:
        """Add a constant tensor under a fresh name derived from ``name``; returns it."""
        name = self.fresh_name(name)
        value = np.asarray(value)
        self.tensors[name] = Tensor(name, tuple(value.shape), str(value.dtype), value)
        return name

    def fresh_name(self, base: str) -> str:
        """A tensor/node name not used yet in this graph (nor handed out before by it).

        Node names are cached; the cache follows appends to ``nodes`` incrementally and is
        rebuilt when the list is replaced, so loading a large model stays linear.
        """
        cache = self.__dict__.get("_names")
        if cache is None or cache[0] is not self.nodes or cache[1] > len(self.nodes):
            cache = [self.nodes, 0, set(), cache[3] if cache else set()]
            self.__dict__["_names"] = cache
        if cache[1] < len(self.nodes):
            cache[2].update(n.name for n in self.nodes[cache[1]:])
            cache[1] = len(self.nodes)
        node_names, taken = cache[2], cache[3]
        name, k = base, 0
        while name in self.tensors or name in node_names or name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name

    def replace_uses(self, old: str, new: str) -> None:
        """Make every reader of tensor ``old`` read ``new`` (graph outputs included)."""
        for n in self.nodes:
            n.inputs = [new if i == old else i for i in n.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def remove_unused(self) -> None:
        """Drop nodes whose outputs nobody reads, then tensors nobody references."""
        changed = True
        while changed:
            changed = False
            used = set(self.outputs)
            for n in self.nodes:
                used.update(i for i in n.inputs if i)
            keep = [n for n in self.nodes if any(o in used for o in n.outputs)]
            if len(keep) != len(self.nodes):
                self.nodes = keep
                changed = True
        refs = set(self.inputs) | set(self.outputs)
        for n in self.nodes:
            refs.update(i for i in n.inputs if i)
            refs.update(n.outputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in refs}

    def toposort(self) -> None:
        """Order nodes topologically (stable); raises BadInputError on a cycle."""
        produced_by = self.producers()
        order: list[Node] = []
        state: dict[str, int] = {}
        index = {n.name: k for k, n in enumerate(self.nodes)}
        for root in self.nodes:
            if state.get(root.name):
                continue
            stack: list[tuple[Node, int]] = [(root, 0)]
            state[root.name] = 1
            while stack:
                n, k = stack.pop()
                deps = [produced_by[i] for i in n.inputs if i in produced_by]
                deps.sort(key=lambda d: index[d.name])
                if k < len(deps):
                    stack.append((n, k + 1))
                    d = deps[k]
                    s = state.get(d.name, 0)
                    if s == 1:
                        raise BadInputError(
                            f"graph '{self.name}' has a cycle through node '{d.name}'"
                        )
                    if s == 0:
                        state[d.name] = 1
                        stack.append((d, 0))
                else:
                    state[n.name] = 2
                    order.append(n)
        self.nodes = order

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensor(name).shape
