"""A canonical graph as the layer engine's program: which unit runs each operator, in what
order, on which maps (docs/engine.md, "Lowering").

`lower(graph)` walks the graph in its (topological) node order and gives one `Step` per unit
run:

- ``conv``: a Conv with ``group = 1`` or a Dense (a 1 x 1 map); a grouped conv that is not
  depthwise runs as one conv step per group (its channels padded to the engine's block, what
  the conv unit can do; the work it wastes is counted by `Step.macs_run`);
- ``window``: MaxPool, AveragePool, GlobalAveragePool (mode ``max``/``avg``) and a depthwise
  conv (``dw``);
- ``eltwise``: Add, Mul (``mulv`` where one operand is a per-channel vector), and every
  unary activation that is a lookup table (``table``);
- nothing for what the layout does for free: Relu and Clip after a conv, a depthwise conv,
  an average pool or an Add whose only reader they are (the requantiser's clamp), Concat (its inputs are written one after the
  other, each padded to whole blocks), Reshape/Flatten/Squeeze/Unsqueeze of a 1 x 1 map.

It reads canonical graphs and int8 graphs (`bbgrap_hls.quant.quantize`'s, ``attrs["q"]`` on
every fabric node). In an int8 graph a Relu/Relu6 the quantiser fused is already its
producer's ``attrs["act"]`` (kept in ``Step.extra["act"]``: the requantiser's clamp); every
node of the ``lut`` family is a table (a Relu/Clip that is still there too: its output has its
own scale), and a table
whose input is an Add/Mul/MulV's output read by nothing else (not a graph output) runs as that
step's fused table (``Step.extra["lut"]``, the unit's ``LUT`` option). Host nodes
(``node.host``, e.g. a final Softmax) are left to the host. Each step names the tensors it
reads (``inputs``, constants left out) and the one it writes (``output``, after fusions):
`engine_program.build` places them in memory.

Only shapes are read (no weights), so the program of a model built at its real shape
(bench/zoo.py) lowers in milliseconds; an operator the engine has no unit for raises
`NotImplementedError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bbgrap_hls.ir import Graph
from bbgrap_hls.quant.build import category

TABLE_OPS = frozenset({"Sigmoid", "HardSigmoid", "HardSwish", "Swish", "Tanh", "LeakyRelu", "Elu",
                       "Selu", "Gelu", "Softplus", "Softsign", "Mish", "Exp", "Log", "Erf"})
CLAMP_OPS = frozenset({"Relu", "Clip", "Relu6"})
FREE_OPS = frozenset({"Concat", "Reshape", "Flatten", "Identity", "Dropout", "Squeeze", "Unsqueeze"})


@dataclass
class Step:
    """One run of a unit: ``kind`` (``conv``/``window``/``eltwise``), ``mode``, the graph
    ``nodes`` it computes (the first is the operator, the rest fused clamps), its input map
    ``(h, w, c)`` and output map ``(ho, wo, co)``, the window (``kernel``, ``strides``,
    ``pads`` as top, left, bottom, right) and ``groups`` (a grouped conv's steps: one per
    group, each with ``c``/``co`` the group's); ``inputs``/``output`` the tensors it reads and
    writes."""

    kind: str
    mode: str
    nodes: list[str]
    h: int
    w: int
    c: int
    ho: int
    wo: int
    co: int
    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    operands: int = 1
    groups: int = 1
    extra: dict = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    output: str = ""

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the operator (a conv's or a depthwise's; 0 otherwise)."""
        kh, kw = self.kernel
        if self.kind == "conv":
            return self.ho * self.wo * self.co * self.c * kh * kw
        if self.kind == "window" and self.mode == "dw":
            return self.ho * self.wo * self.co * kh * kw
        return 0


def _hwc(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) == 4:
        return shape[2], shape[3], shape[1]
    if len(shape) == 2:
        return 1, 1, shape[1]
    raise NotImplementedError(f"engine: a map of shape {shape}")


def _pads(attrs: dict) -> tuple[int, int, int, int]:
    p = tuple(attrs.get("pads", (0, 0, 0, 0)))
    return p[0], p[1], p[2], p[3]  # ONNX (top, left, bottom, right)


def lower(graph: Graph) -> list[Step]:
    """The engine steps of a canonical graph, in the graph's node order."""
    readers: dict[str, int] = {}
    for n in graph.nodes:
        for t in n.inputs:
            readers[t] = readers.get(t, 0) + 1
    steps: list[Step] = []
    last_of: dict[str, Step] = {}  # tensor -> the step that writes it (for fused clamps)
    for n in graph.nodes:
        if n.host:
            continue
        ins = [t for t in n.inputs if t and not graph.tensors[t].is_const]
        out = n.outputs[0]
        int8 = "q" in n.attrs
        if int8 and category(n.op) == "lut":  # every unary activation the quantiser made a table
            src = last_of.get(ins[0])
            if src is not None and src.mode in ("add", "mul", "mulv") and "lut" not in src.extra \
                    and readers.get(ins[0], 0) == 1 and ins[0] not in graph.outputs:
                src.nodes.append(n.name)
                src.extra["lut"] = n.name
                src.output = out
                last_of[out] = src
                continue
            h, w, c = _hwc(graph.shape(ins[0]))
            steps.append(Step("eltwise", "table", [n.name], h, w, c, h, w, c))
        elif n.op in CLAMP_OPS:
            src = last_of.get(ins[0])
            if src is not None and src.mode not in ("table", "max", "mul", "mulv") \
                    and readers.get(ins[0], 0) == 1:
                src.nodes.append(n.name)
                src.output = out
                last_of[out] = src
                continue
            h, w, c = _hwc(graph.shape(ins[0]))
            steps.append(Step("eltwise", "table", [n.name], h, w, c, h, w, c))
        elif n.op in FREE_OPS:
            continue
        elif n.op in ("Conv", "Dense"):
            h, w, c = _hwc(graph.shape(ins[0]))
            ho, wo, co = _hwc(graph.shape(out))
            # a Dense reading an h x w map (a Flatten folded away) is an h x w conv without padding
            kernel = tuple(n.attrs.get("kernel", (1, 1))) if n.op == "Conv" else (h, w)
            strides = tuple(n.attrs.get("strides", (1, 1))) if n.op == "Conv" else (1, 1)
            if n.op == "Conv" and tuple(n.attrs.get("dilations", (1, 1))) != (1, 1):
                raise NotImplementedError(f"engine: dilated conv {n.name}")
            pads = _pads(n.attrs) if n.op == "Conv" else (0, 0, 0, 0)
            group = int(n.attrs.get("group", 1)) if n.op == "Conv" else 1
            if group == 1:
                steps.append(Step("conv", "conv", [n.name], h, w, c, ho, wo, co, kernel, strides, pads))
            elif group == c == co:
                steps.append(Step("window", "dw", [n.name], h, w, c, ho, wo, co, kernel, strides, pads))
            else:
                steps.append(Step("conv", "grouped", [n.name], h, w, c // group, ho, wo, co // group,
                                  kernel, strides, pads, groups=group))
        elif n.op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
            h, w, c = _hwc(graph.shape(ins[0]))
            ho, wo, co = _hwc(graph.shape(out))
            if n.op.startswith("Global"):
                kernel, strides, pads = (h, w), (1, 1), (0, 0, 0, 0)
            else:
                kernel = tuple(n.attrs.get("kernel", n.attrs.get("kernel_shape", (1, 1))))
                strides = tuple(n.attrs.get("strides", (1, 1)))
                pads = _pads(n.attrs)
            mode = "max" if "Max" in n.op else "avg"
            steps.append(Step("window", mode, [n.name], h, w, c, ho, wo, co, kernel, strides, pads))
        elif n.op in ("Add", "Mul", "Sub"):
            ho, wo, co = _hwc(graph.shape(out))
            shapes = [graph.shape(t) for t in n.inputs]
            vector = any(len(s) == 4 and s[2] * s[3] == 1 for s in shapes) and ho * wo > 1
            mode = {"Add": "add", "Sub": "add", "Mul": "mulv" if vector else "mul"}[n.op]
            steps.append(Step("eltwise", mode, [n.name], ho, wo, co, ho, wo, co, operands=len(ins)))
        elif n.op in TABLE_OPS:
            h, w, c = _hwc(graph.shape(ins[0]))
            steps.append(Step("eltwise", "table", [n.name], h, w, c, h, w, c))
        else:
            raise NotImplementedError(f"engine: no unit runs {n.op} ({n.name})")
        if steps and steps[-1].nodes[0] == n.name:
            steps[-1].inputs, steps[-1].output = tuple(ins), out
            if n.attrs.get("act"):
                steps[-1].extra["act"] = n.attrs["act"]
            last_of[out] = steps[-1]
    return steps
