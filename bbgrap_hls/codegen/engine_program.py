"""A whole int8 network as a layer-engine program (docs/engine.md, "Whole network (program)").

`build(int8_graph, pe, simd, beat, in_buffer=None)` lowers a quantized graph
(`engine_lower.lower`) into the steps of the engine's three units, each with the descriptor and
layer object of its own module (`engine_image`, `engine_window`, `engine_eltwise`), one
weight-memory image for all steps and one feature-memory layout:

- every tensor a unit writes or the host feeds is a *region*: a beat-aligned span of the
  feature memory in the blocked layout (`engine_image.feature_bytes`, ``G = pe`` channels a
  block, blocks contiguous), its ``cp`` physical channels a multiple of ``G``;
- row bands: given the conv unit's input buffer ``in_buffer`` and a conv whose whole input
  does not fit it, every region's blocks sit at a block stride of whole beats (`layout`) and
  each conv runs as the row bands of `engine_image.bands` (`conv_rows`), a step a band; every
  unit's descriptor carries the regions' strides;
- a Concat costs nothing: its inputs are written into its region at beat-aligned channel
  offsets (each input's blocks rounded up so that the next input starts a beat), so the
  concatenated map has padding holes; each region keeps ``phys``, logical channel -> physical
  channel, and every reader's weights, records or vectors are scattered to those positions;
- Reshape/Flatten/Identity/Dropout/Squeeze/Unsqueeze are views of their input's region when
  they keep the map (a 1 x 1 map and a vector are the same bytes); a Flatten of an h x w map
  is a *flat* view that only a Dense can read (it becomes an h x w conv without padding, its
  weights permuted from the NCHW-flatten order).

Batched frames (``frames > 1``, docs/engine.md "Batched frames"): the program computes
``frames`` frames a start. Each frame's tensors sit in its own copy of the layout,
``frame_stride`` bytes (whole 4 KB pages) after the previous frame's. A conv whose ``frames``
whole inputs fit the input buffer together computes all the frames with each fold's tile (one
step, its descriptor's ``FRAMES`` and ``FRAME_STRIDE``: its weights read once a start); any
other conv runs once a frame, in the row bands of the whole buffer (`conv_frames`). Every
window and element-wise step is repeated for each frame (its bases moved by the frame's
offset).

`engine_memory.run_reference(program, x)` runs the steps in order on a bytearray feature
memory with each unit's Python ``reference`` (on the maps where each descriptor says, a conv
band on its own rows) and returns the output tensor: it must equal
`bbgrap_hls.quant.run_int8` bit for bit (tests/test_engine_program.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import gcd

import numpy as np

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.codegen.engine_lower import Step, lower
from bbgrap_hls.ir import Graph

VIEW_OPS = frozenset({"Reshape", "Flatten", "Identity", "Dropout", "Squeeze", "Unsqueeze"})
UNITS = ("conv", "window", "eltwise")
"""Unit ids of a step (`ProgramStep.unit`): the index is the HLS top's ``unit`` word."""

FRAME_ALIGN = 4096
"""A batched program's frame stride is a multiple of this (the units cut bursts at 4 KB, so
every frame's copy of a step moves the same bursts)."""

FEATURE_BASES = {"conv": ("IN_BASE", "OUT_BASE"), "window": ("IN_BASE", "OUT_BASE"),
                 "eltwise": ("A_BASE", "B_BASE", "OUT_BASE")}
"""The feature-memory addresses of a unit's descriptor (moved for each frame of a batched
program where a step runs once a frame)."""


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


@dataclass(frozen=True)
class Region:
    """A tensor in the feature memory: from byte ``base``, an ``h`` x ``w`` map of ``cp``
    physical channels (a multiple of ``G``) in the blocked layout; ``phys[c]`` the physical
    channel of logical channel ``c``; ``flat``: a Flatten of the map (logical order
    ``c·h·w + y·w + x``); ``shape`` the graph's shape of the tensor; ``stride`` the bytes
    from one block to the next (`engine_image.feature_bytes`' ``stride``): None, the blocks
    contiguous (``h·w·G``), or ``h·w·G`` rounded up to whole beats (a program with row bands)."""

    base: int
    h: int
    w: int
    cp: int
    phys: tuple[int, ...]
    shape: tuple[int, ...]
    flat: bool = False
    stride: int | None = None

    @property
    def nbytes(self) -> int:
        """The map's bytes from ``base`` (``h·w·cp``): a contiguous region's span only (a
        strided one: `span`)."""
        if self.stride is not None:
            raise ValueError("engine program: a region with a block stride: its span is span(g)")
        return self.h * self.w * self.cp

    def span(self, g: int) -> int:
        """Bytes from ``base`` to the end of the last block (``G = g`` channels a block)."""
        blk = self.h * self.w * g
        return (self.cp // g - 1) * (self.stride or blk) + blk


@dataclass
class ProgramStep:
    """One unit run: ``unit`` (`UNITS`), the graph ``nodes`` it computes, its layer object
    (``ei.EngineLayer``, ``ew.WindowLayer`` or ``ee.EltwiseLayer``), its descriptor ``desc``
    (field name -> value, the unit's field order), the regions it reads and writes."""

    unit: str
    nodes: list[str]
    layer: object
    desc: dict[str, int]
    inputs: tuple[str, ...]
    output: str
    frame: int = 0
    """A step's frame in a batched program where it runs once a frame (its bases moved by
    ``frame·frame_stride``); 0 for a conv step computing every frame (``FRAMES``)."""

    def words(self) -> list[int]:
        """The descriptor's values in the unit's field order."""
        return list(self.desc.values())


@dataclass
class EngineProgram:
    """What the engine runs for one frame: the ``steps`` in order, the weight memory's
    image, the feature memory's size, every tensor's `Region`, the graph ``input`` (the host
    writes it) and ``output`` (a fabric tensor; a host op after it is the host's)."""

    pe: int
    simd: int
    beat: int
    steps: list[ProgramStep]
    weights: bytes
    feature_size: int
    regions: dict[str, Region]
    input: str
    output: str
    frames: int = 1
    frame_stride: int = 0
    """Frames a start and the bytes between two frames' copies of the layout (``regions``: frame
    0's); ``feature_size`` covers them all."""


def frame_stride(size: int, frames: int) -> int:
    """The bytes between two frames' copies of a one-frame layout of ``size`` bytes (whole
    `FRAME_ALIGN` pages; 0 for one frame)."""
    return _up(size, FRAME_ALIGN) if frames > 1 else 0


def frame_steps(unit: str, desc: dict[str, int], frames: int, stride: int) -> list[dict[str, int]]:
    """A step's descriptors in a program of ``frames`` frames ``stride`` bytes apart, one a
    frame, its feature bases moved (a batched conv step, ``FRAMES > 1``, is one already)."""
    if unit == "conv" and desc["FRAMES"] > 1:
        return [desc]
    keys = FEATURE_BASES[unit]
    return [desc | {k: desc[k] + f * stride for k in keys} for f in range(frames)]


def conv_frames(layer: ei.EngineLayer, pe: int, simd: int, beat: int, src: Region, dst: Region, w_base: int,
                budget: int | None, frames: int, stride: int) -> list[dict[str, int]]:
    """A conv's descriptors in a program of ``frames`` frames ``stride`` bytes apart on an input
    buffer of ``budget`` bytes (None: as large as needed): when its ``frames`` whole inputs fit
    the buffer together, one step computing them all (``FRAMES``; its tiles read once a start);
    else `conv_rows` for the whole buffer, run once a frame (`frame_steps`). One frame:
    `conv_rows`.

    Raises:
        BandError: a frame's smallest band does not fit ``budget``.
    """
    if frames == 1:
        return conv_rows(layer, pe, simd, beat, src, dst, w_base, budget)
    whole = conv_rows(layer, pe, simd, beat, src, dst, w_base, None)
    if budget is None or frames * ei.in_buffer_bytes(whole[0], pe, beat) <= budget:
        return [d | {"FRAMES": frames, "FRAME_STRIDE": stride} for d in whole]
    rows = conv_rows(layer, pe, simd, beat, src, dst, w_base, budget)
    return [d for r in rows for d in frame_steps("conv", r, frames, stride)]


# -- layout: every tensor's physical channels and place -------------------------------------

@dataclass
class _Lay:
    h: int
    w: int
    cp: int
    phys: tuple[int, ...]
    shape: tuple[int, ...]
    flat: bool = False
    stride: int | None = None


def _map_hwc(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) == 4 and shape[0] == 1:
        return shape[2], shape[3], shape[1]
    if len(shape) == 2 and shape[0] == 1:
        return 1, 1, shape[1]
    raise NotImplementedError(f"engine program: a tensor of shape {shape} (a map [1, C, H, W] or a vector [1, C])")


def block_stride(h: int, w: int, g: int, beat: int, strided: bool) -> int | None:
    """A region's block stride: None (contiguous) or, ``strided``, ``h·w·g`` up to whole beats."""
    return _up(h * w * g, beat) if strided else None


def _fresh(shape: tuple[int, ...], g: int, beat: int, strided: bool) -> _Lay:
    h, w, c = _map_hwc(shape)
    return _Lay(h, w, _up(c, g), tuple(range(c)), tuple(shape), stride=block_stride(h, w, g, beat, strided))


def _view(node, src: _Lay, shape: tuple[int, ...]) -> _Lay:
    """The layout of a Reshape-like node's output, the same bytes as its input, or refuse."""
    c_log = len(src.phys)
    if src.flat:
        if len(shape) == 2 or tuple(shape) == src.shape[:1] + (c_log * src.h * src.w,):
            return _Lay(src.h, src.w, src.cp, src.phys, tuple(shape), True, src.stride)
        if len(shape) == 4 and _map_hwc(shape) == (src.h, src.w, c_log):
            return _Lay(src.h, src.w, src.cp, src.phys, tuple(shape), stride=src.stride)
    elif len(shape) in (2, 4):
        if len(shape) == 4 and _map_hwc(shape) == (src.h, src.w, c_log):
            return _Lay(src.h, src.w, src.cp, src.phys, tuple(shape), stride=src.stride)
        if src.h * src.w == 1 and int(np.prod(shape)) == c_log and _map_hwc(shape)[:2] == (1, 1):
            return _Lay(1, 1, src.cp, src.phys, tuple(shape), stride=src.stride)
        if len(shape) == 2 and shape[1] == c_log * src.h * src.w:  # a Flatten of an h x w map
            return _Lay(src.h, src.w, src.cp, src.phys, tuple(shape), True, src.stride)
    raise NotImplementedError(f"engine program: {node.op} {node.name} from {src.shape} to {tuple(shape)} "
                              "is not a free change of the blocked layout")


def layouts(graph: Graph, steps: list[Step], g: int, beat: int, strided: bool = False):
    """Every tensor's `_Lay` and the tensors placed inside another's region: ``{name: (parent,
    byte offset)}`` (views at 0, Concat inputs at their channel offsets). ``strided``: every
    map's blocks at `block_stride` (whole beats), as a program with row bands needs."""
    lay: dict[str, _Lay] = {}
    alias: dict[str, tuple[str, int]] = {}
    first = {s.nodes[0]: s for s in steps}
    fused = {n for s in steps for n in s.nodes[1:]}
    for t in graph.inputs:
        lay[t] = _fresh(graph.shape(t), g, beat, strided)
    for n in graph.nodes:
        if n.host or n.name in fused:
            continue
        ins = [t for t in n.inputs if t and not graph.tensors[t].is_const]
        out = n.outputs[0]
        if any(t not in lay for t in ins):
            raise NotImplementedError(f"engine program: {n.op} {n.name} reads {[t for t in ins if t not in lay]}, "
                                      "written by the host")
        if n.op in VIEW_OPS:
            lay[out] = _view(n, lay[ins[0]], graph.shape(out))
            alias[out] = (ins[0], 0)
        elif n.op == "Concat":
            lay[out] = _concat(graph, n, ins, lay, alias, g, beat, strided)
        elif n.name in first:
            s = first[n.name]
            if s.kind == "conv":
                lay[s.output] = _fresh(graph.shape(s.output), g, beat, strided)
                continue
            a = lay[ins[0]]
            if s.mode == "mulv":
                vec, a = sorted((lay[t] for t in ins), key=lambda x: x.h * x.w)
                if vec.phys != a.phys:
                    raise NotImplementedError(f"engine program: {n.op} {n.name}: the vector's channels are not "
                                              "laid out as the map's (a Concat on one side)")
            elif s.kind == "eltwise" and len(ins) == 2 and (lay[ins[1]].phys, lay[ins[1]].cp) != (a.phys, a.cp):
                raise NotImplementedError(f"engine program: {n.op} {n.name}: operands with different channel "
                                          "layouts (a Concat on one side)")
            if a.flat and s.mode not in ("add", "mul", "table"):  # those are byte-wise: any layout
                raise NotImplementedError(f"engine program: {n.op} {n.name} reads a flattened map")
            h, w = (a.h, a.w) if a.flat else _map_hwc(graph.shape(s.output))[:2]
            lay[s.output] = _Lay(h, w, a.cp, a.phys, tuple(graph.shape(s.output)), a.flat,
                                 block_stride(h, w, g, beat, strided))
        else:
            raise NotImplementedError(f"engine program: no unit runs {n.op} ({n.name})")
    return lay, alias


def _concat(graph: Graph, n, ins: list[str], lay: dict, alias: dict, g: int, beat: int, strided: bool) -> _Lay:
    if n.attrs.get("axis", 1) not in (1, -3) or len(graph.shape(n.outputs[0])) != 4:
        raise NotImplementedError(f"engine program: Concat {n.name} not on the channels of a map")
    h, w, _ = _map_hwc(graph.shape(n.outputs[0]))
    stride = block_stride(h, w, g, beat, strided)
    blk = stride or h * w * g
    step = beat // gcd(beat, blk)  # blocks of an input: a multiple of this, so the next starts a beat
    phys, off = [], 0
    for t in ins:
        if t in graph.inputs or t in alias or ins.count(t) > 1 or lay[t].flat:
            raise NotImplementedError(f"engine program: Concat {n.name}: input {t} is the graph input, a view, "
                                      "repeated or already placed in another Concat (it would need a copy)")
        alias[t] = (n.outputs[0], off * blk)
        phys += [off * g + p for p in lay[t].phys]
        off += _up(lay[t].cp // g, step)
    return _Lay(h, w, off * g, tuple(phys), tuple(graph.shape(n.outputs[0])), stride=stride)


def place(graph: Graph, lay: dict, alias: dict, beat: int, g: int | None = None) -> tuple[dict[str, Region], int]:
    """Bases: every tensor not inside another's region gets the next beat-aligned span, in
    the order the graph defines them (the input first); ``g`` (``G``) is needed when the maps
    are strided."""
    order = list(graph.inputs) + [t for n in graph.nodes for t in n.outputs if t in lay]
    top, base = 0, {}
    for t in order:
        if t in lay and t not in alias and t not in base:
            L = lay[t]
            base[t] = top
            top = _up(top + (L.h * L.w * L.cp if L.stride is None else L.cp // g * L.stride), beat)

    def where(t: str) -> int:
        if t in alias:
            p, off = alias[t]
            return where(p) + off
        return base[t]

    regions = {t: Region(where(t), L.h, L.w, L.cp, L.phys, L.shape, L.flat, L.stride) for t, L in lay.items()}
    return regions, max(top, beat)


def _whole_in(L: _Lay, beat: int) -> int:
    """A conv's input buffer bytes for the whole map ``L``, contiguous from a beat
    (`engine_image.in_buffer_bytes` of its whole-layer step)."""
    return _up(L.h * L.w * L.cp, beat)


def layout(graph: Graph, steps: list[Step], g: int, beat: int, in_buffer: int | None = None,
           frames: int = 1) -> tuple[dict[str, Region], int, int | None]:
    """One frame's feature memory of `build`: ``(regions, size, budget)``. Without
    ``in_buffer``, or when every conv's whole input map fits it, the maps are contiguous and
    ``budget`` is None (one step a conv); else every map's blocks are at `block_stride` (whole
    beats) and ``budget`` is ``in_buffer``: each conv runs in the row bands of
    `engine_image.bands`. ``frames > 1`` (batched): the maps always at `block_stride` (a
    batched conv writes a run per fold and frame) and ``budget`` is ``in_buffer`` (None: every
    conv batched whole): `conv_frames` decides each conv's steps."""
    if frames < 1:
        raise ValueError(f"engine program: frames={frames} must be at least 1")
    lay, alias = layouts(graph, steps, g, beat)
    convs = [lay[s.inputs[0]] for s in steps if s.kind == "conv"]
    if frames == 1 and (in_buffer is None or all(_whole_in(L, beat) <= in_buffer for L in convs)):
        return (*place(graph, lay, alias, beat, g), None)
    lay, alias = layouts(graph, steps, g, beat, strided=True)
    return (*place(graph, lay, alias, beat, g), in_buffer)


# -- steps -------------------------------------------------------------------------------------

class BandError(ValueError):
    """A conv whose smallest row band does not fit the input buffer (`engine_image.bands`)."""


def build(graph: Graph, pe: int, simd: int, beat: int, in_buffer: int | None = None,
          frames: int = 1) -> EngineProgram:
    """The engine program of an int8 graph (`bbgrap_hls.quant.quantize`'s) on a conv unit of
    ``pe`` x ``simd`` and window/element-wise units of ``G = pe`` channels, on ``beat``-byte
    memory words. ``in_buffer``: the conv unit's input buffer in bytes
    (`engine_image.in_buffer_bytes`, `EnginePlan.in_buffer`); when a conv's whole input map
    does not fit it, every map is laid out at beat-aligned block strides and each conv runs
    as the row bands that fit (`layout`, `conv_rows`), a step a band. None: whole layers,
    contiguous maps. ``frames``: frames a start (see the module: each conv step computes them
    all with each tile; ``in_buffer`` then holds that many inputs).

    Raises:
        NotImplementedError: an operator, a layout or a parameter no unit runs (named).
        ValueError: ``pe``, ``simd``, ``beat`` the units cannot have; `BandError`: a conv's
            smallest band does not fit ``in_buffer`` (named).
    """
    if pe & (pe - 1) or pe % simd or beat & (beat - 1) or beat % pe:
        raise ValueError(f"engine program: pe={pe} (a power of two dividing beat={beat}) must be a multiple "
                         f"of simd={simd}")
    if len(graph.inputs) != 1:
        raise NotImplementedError(f"engine program: {len(graph.inputs)} graph inputs (one supported)")
    steps = lower(graph)
    regions, size, budget = layout(graph, steps, pe, beat, in_buffer, frames)
    stride = frame_stride(size, frames)
    if frames > 1:
        size = frames * stride
    nodes = {n.name: n for n in graph.nodes}
    outs = []
    for o in graph.outputs:
        prod = next(n for n in graph.nodes if o in n.outputs)
        outs += [t for t in prod.inputs if t in regions] if prod.host else [o]
    if len(outs) != 1:
        raise NotImplementedError(f"engine program: {len(outs)} fabric outputs {outs} (one supported)")
    wimg = bytearray()
    prog_steps = []
    for s in steps:
        n = nodes[s.nodes[0]]
        try:
            if s.kind == "conv":
                prog_steps += _conv_steps(s, nodes, regions, wimg, pe, simd, beat, budget, frames, stride)
            else:
                make = _window_step if s.kind == "window" else _eltwise_step
                prog_steps.append(make(s, nodes, regions, wimg, pe, simd, beat))
        except BandError as e:
            raise BandError(f"engine program: {n.op} {n.name}: {e}") from e
        except ValueError as e:  # a unit's own check (its descriptor or layer refused the values)
            raise NotImplementedError(f"engine program: {n.op} {n.name}: {e}") from e
    if frames > 1:  # the window and element-wise steps once a frame (the convs' steps are made so)
        prog_steps = [x for st in prog_steps for x in ([st] if st.unit == "conv" else
                      [replace(st, desc=d, frame=f) for f, d in enumerate(frame_steps(st.unit, st.desc, frames, stride))])]
    return EngineProgram(pe, simd, beat, prog_steps, bytes(wimg), size, regions, graph.inputs[0], outs[0],
                         frames, stride)


def _scatter(a: np.ndarray, phys: tuple[int, ...], cp: int, axis: int) -> np.ndarray:
    """``a`` with its logical channels (``axis``) moved to their physical positions among
    ``cp`` (zeros elsewhere)."""
    shape = list(a.shape)
    shape[axis] = cp
    out = np.zeros(shape, a.dtype)
    idx = [slice(None)] * a.ndim
    idx[axis] = list(phys)
    out[tuple(idx)] = a
    return out


def conv_rows(layer: ei.EngineLayer, pe: int, simd: int, beat: int, src: Region, dst: Region, w_base: int,
              budget: int | None) -> list[dict[str, int]]:
    """A conv's descriptors (`engine_image.FIELDS`, field -> value), reading region ``src``,
    writing ``dst``, its tiles at ``w_base``: one, the whole layer, when ``budget`` is None;
    else one per row band of `engine_image.bands` for an input buffer of ``budget`` bytes
    (the regions then strided: `layout`).

    Raises:
        BandError: not even the smallest band fits ``budget``.
    """
    ho, wo = layer.out_hw
    fs = ei.FeatureMap(src.base, src.h, src.w, src.cp, src.stride or src.h * src.w * pe)
    fd = ei.FeatureMap(dst.base, ho, wo, dst.cp, dst.stride or ho * wo * pe)
    tb = ei.tile_layout(layer, pe, simd, beat)[2]
    try:
        spans = ei.bands(layer, pe, beat, fs, fd, budget)
    except ValueError as e:
        raise BandError(str(e)) from e
    return [dict(zip(ei.FIELDS, ei.band_step(layer, pe, r0, r1, fs, fd, w_base, tb), strict=True))
            for r0, r1 in spans]


def _conv_steps(s: Step, nodes, regions, wimg: bytearray, pe, simd, beat, budget, frames: int = 1,
                frame_stride: int = 0) -> list[ProgramStep]:
    n = nodes[s.nodes[0]]
    q, src, dst = n.attrs["q"], regions[s.inputs[0]], regions[s.output]
    w = np.asarray(q["w"], np.int8)
    if n.op == "Conv":
        group, co = int(n.attrs.get("group", 1)), w.shape[0]
        wk = w.transpose(0, 2, 3, 1)  # [co, kh, kw, c / group]
        if group > 1:  # a grouped conv that is not depthwise: block-diagonal weights, one step
            cg = wk.shape[3]
            full = np.zeros(wk.shape[:3] + (cg * group,), np.int8)
            for k in range(group):
                full[k * co // group:(k + 1) * co // group, :, :, k * cg:(k + 1) * cg] = \
                    wk[k * co // group:(k + 1) * co // group]
            wk = full
        stride, pads = tuple(n.attrs.get("strides", (1, 1))), tuple(n.attrs.get("pads", (0, 0, 0, 0)))
    else:  # Dense: an h x w conv over the whole map, no padding
        co, c = w.shape[0], len(src.phys)
        if n.attrs.get("in_layout", "NC") == "NHWC":
            wk = w.reshape(co, src.h, src.w, c)
        elif src.flat:  # columns in the NCHW-flatten order c·h·w + y·w + x
            wk = w.reshape(co, c, src.h, src.w).transpose(0, 2, 3, 1)
        else:
            wk = w.reshape(co, 1, 1, c)
        stride, pads = (1, 1), (0, 0, 0, 0)
    layer = ei.EngineLayer(src.h, src.w, _scatter(wk, src.phys, src.cp, 3), np.asarray(q["bias"], np.int64),
                           np.asarray(q["mult"], np.int64), np.asarray(q["shift"], np.int64),
                           zp_in=int(q["zp_in"]), zp_out=int(q["zp_out"]), lo=int(q["lo"]), hi=int(q["hi"]),
                           stride=stride, pads=pads)
    if layer.out_hw != (dst.h, dst.w):
        raise NotImplementedError(f"engine program: {n.op} {n.name}: output {dst.h}x{dst.w}, the conv unit "
                                  f"gives {layer.out_hw}")
    rows = conv_frames(layer, pe, simd, beat, src, dst, len(wimg), budget, frames, frame_stride)
    wimg += ei.program([layer], pe, simd, beat).weights
    # a conv run once a frame: its bands' copies frame after frame (`conv_frames`)
    return [ProgramStep("conv", list(s.nodes), layer, d, (s.inputs[0],), s.output,
                        0 if d["FRAMES"] > 1 else k % frames) for k, d in enumerate(rows)]


def _window_step(s: Step, nodes, regions, wimg: bytearray, pe, simd, beat) -> ProgramStep:
    n = nodes[s.nodes[0]]
    q, src, dst = n.attrs.get("q", {}), regions[s.inputs[0]], regions[s.output]
    kw = dict(k=tuple(s.kernel), stride=tuple(s.strides), pads=tuple(s.pads))
    if tuple(n.attrs.get("dilations", (1, 1))) != (1, 1):
        raise NotImplementedError(f"engine program: {n.op} {n.name}: dilation {n.attrs['dilations']}")
    if s.mode == "max":
        layer = ew.WindowLayer("max", src.h, src.w, src.cp, **kw)
    elif s.mode == "avg":
        kh, kwd = s.kernel
        if n.op == "AveragePool":
            if any(s.pads) and not n.attrs.get("count_include_pad", False):
                raise NotImplementedError(f"engine program: AveragePool {n.name}: padding not counted "
                                          f"(count_include_pad = 0, pads {s.pads}): the window unit has one "
                                          "multiplier a layer, the counts differ at the borders")
            mult, shift = int(q["mult"][kh * kwd - 1]), int(q["shift"][kh * kwd - 1])
        else:
            mult, shift = int(q["mult"]), int(q["shift"])
        layer = ew.WindowLayer("avg", src.h, src.w, src.cp, zp_in=int(q["zp_in"]), zp_out=int(q["zp_out"]),
                               mult=mult, shift=shift, **kw)
    else:  # depthwise
        w = np.asarray(q["w"], np.int8)[:, 0]  # [c, kh, kw]
        z = np.zeros(src.cp, np.int64)
        m, sh, b = z.copy(), z + 1, z.copy()
        ph = list(src.phys)
        m[ph], sh[ph], b[ph] = q["mult"], q["shift"], q["bias"]
        layer = ew.WindowLayer("dw", src.h, src.w, src.cp, zp_in=int(q["zp_in"]), zp_out=int(q["zp_out"]),
                               lo=int(q["lo"]), hi=int(q["hi"]), weights=_scatter(w, src.phys, src.cp, 0),
                               bias=b, m=m, s=sh, **kw)
    if layer.out_hw != (dst.h, dst.w):
        raise NotImplementedError(f"engine program: {n.op} {n.name}: output {dst.h}x{dst.w}, the window unit "
                                  f"gives {layer.out_hw} (ceil mode?)")
    desc = ew.descriptor(layer, pe, beat, src.base, dst.base, len(wimg), src.stride, dst.stride)
    wimg += ew.weight_image(layer, pe, beat)
    return ProgramStep("window", list(s.nodes), layer, dict(zip(ew.WINDOW_FIELDS, desc, strict=True)),
                       (s.inputs[0],), s.output)


def _eltwise_step(s: Step, nodes, regions, wimg: bytearray, pe, simd, beat) -> ProgramStep:
    n = nodes[s.nodes[0]]
    q, dst = n.attrs["q"], regions[s.output]
    ins = list(s.inputs)
    if q.get("consts"):
        raise NotImplementedError(f"engine program: {n.op} {n.name} with a constant operand")
    lut = nodes[s.extra["lut"]].attrs["q"]["lut"] if "lut" in s.extra else None
    if s.mode == "table":
        layer = ee.EltwiseLayer(ee.TABLE, dst.h, dst.w, dst.cp, table=np.asarray(q["lut"]))
    elif s.mode == "add":
        layer = ee.EltwiseLayer(ee.ADD, dst.h, dst.w, dst.cp, za=int(q["zp_a"]), zb=int(q["zp_b"]),
                                ma=int(q["mult_a"]), mb=int(q["mult_b"]), s=int(q["shift"]), zy=int(q["zp_out"]),
                                lo=int(q["lo"]), hi=int(q["hi"]), table=lut, lut=lut is not None)
    else:
        za, zb = int(q["zp_a"]), int(q["zp_b"])
        if s.mode == "mulv" and regions[ins[0]].h * regions[ins[0]].w == 1:  # the vector first: swap
            ins, za, zb = ins[::-1], zb, za
        layer = ee.EltwiseLayer(ee.MULV if s.mode == "mulv" else ee.MUL, dst.h, dst.w, dst.cp, za=za, zb=zb,
                                m=int(q["mult"]), s=int(q["shift"]), zy=int(q["zp_out"]), lo=int(q["lo"]),
                                hi=int(q["hi"]), table=lut, lut=lut is not None)
    t_base = len(wimg)
    if layer.uses_table():
        wimg += ee.table_image(layer).ljust(_up(ee.TABLE_BYTES, beat), b"\0")
    b = regions[ins[1]] if len(ins) > 1 else None
    desc = ee.descriptor(layer, pe, beat, regions[ins[0]].base, b.base if b else 0, dst.base, t_base,
                         a_stride=regions[ins[0]].stride, b_stride=b.stride if b else None, out_stride=dst.stride)
    return ProgramStep("eltwise", list(s.nodes), layer, dict(zip(ee.ELTWISE_FIELDS, desc, strict=True)),
                       tuple(ins), s.output)
