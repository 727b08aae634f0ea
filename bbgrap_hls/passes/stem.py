"""Space-to-depth stem: a strided stem conv reads its input as s x s pixel blocks (issue 13,
"several pixels per beat"; docs/plan.md, "Pixels per beat").

A dataflow design streams the graph input one pixel per beat, so a 224 x 224 input costs at
least 224² = 50,176 cycles a frame however fast the layers after it are. When the first layer
is a conv of stride ``s`` (the stems of MobileNet, EfficientNet, ResNet, SqueezeNet), the host
can send the frame as ``s x s`` blocks instead: pixel (y, x) channel c of the model's
(N, C, H, W) input is channel ``(dy·s + dx)·C + c`` of block (Y, X) = (y // s, x // s),
dy = y mod s, dx = x mod s (ONNX SpaceToDepth order). One beat then carries s² pixels and the
stem is the same conv written over blocks: stride 1, kernel ``k' = hi − lo + 1`` per axis with
``lo = floor(−p/s)``, ``hi = floor((k − 1 − p)/s)``, leading pad ``−lo``, and weights

    w'[o, (dy·s + dx)·C + c, ky', kx'] = w[o, c, s·(ky' + lo) + dy + p_top, s·(kx' + lo_x) + dx + p_left]

where that tap exists, 0 elsewhere. A tap of the original conv that falls in its padding falls
in the new conv's padding (``y < 0`` exactly when its block row is), so with padding by the
input's zero point the int8 results are the same codes; the float results are equal up to
summation order. The zero taps cost MACs: ``(k'·s / k)²`` times the stem's (3 x 3 stride 2:
16/9; 7 x 7 stride 2: 64/49), usually a few percent of a network's MACs.

The graph records the layout in ``Graph.input_blocks`` and keeps the model's shape
(`Graph.model_input_shape`); `Graph.held_input` turns model-shaped arrays into blocks at every
place an input enters (float reference, quantiser, calibration, test vectors, host driver).

**Patches** (`patches_stem`; the layer engine's planner tries them, `search.arch.best_engine`).
The host may instead unfold the stem's window into channels (im2col on the host, as a
`Graph.input_patches` entry, `ir.graph.Patches`): the ``kw`` taps of a kernel row (``rows``
False: channel ``kx·C + c`` at (y, x') is padded pixel (y, sw·x' + kx); the conv becomes
``kh x 1``, stride ``(sh, 1)``, vertical pads only, weights ``w'[o, kx·C + c, ky, 0] =
w[o, c, ky, kx]``) or all ``kh·kw`` taps (``rows`` True: a 1 x 1 conv over ``kh·kw·C``
channels at the output grid, ``w'[o, (ky·kw + kx)·C + c, 0, 0] = w[o, c, ky, kx]``). The
products and their sums are the stem's own, no zero taps; the unfolded pads are 0, which the
input's quantiser maps to its zero point, the value an int8 conv pads with, so the int8
results are the same codes. The input grows ``kw/sw`` (``rows`` False) or ``kh·kw/(sh·sw)``
times; a ResNet's 7 x 7 stride-2 stem over 3 channels reads 21 or 147 channels a position
instead of 3 (or 12 in 2 x 2 blocks) in a conv unit of 16-64 input lanes.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.ir import Graph
from bbgrap_hls.ir.graph import Patches, Tensor, space_to_depth
from bbgrap_hls.ops.util import out_size
from bbgrap_hls.passes.base import copy_graph

SPACE_TO_DEPTH = ("auto", "on", "off")
"""`make_plan`'s ``space_to_depth`` choices (``--space-to-depth``)."""

MAX_BLOCK_CHANNELS = 64
"""Largest s²·C of a block: the input beat's bytes (the host link and the stem's lanes)."""


def _taps(k: int, s: int, p0: int) -> tuple[int, int]:
    """(lo, k'): the first block offset a tap reaches, and the kernel's length in blocks."""
    lo = (-p0) // s
    return lo, (k - 1 - p0) // s - lo + 1


def _axis(n: int, k: int, s: int, p0: int, p1: int) -> tuple[int, int, int] | None:
    """(k', leading pad, trailing pad) of one axis over blocks, or None if it does not map."""
    o = out_size(n, k, s, 1, p0, p1)
    lo, kb = _taps(k, s, p0)
    q0 = -lo
    q1 = (o - 1) + kb - n // s - q0
    if q1 < 0 or out_size(n // s, kb, 1, 1, q0, q1) != o:
        return None
    return kb, q0, q1


def stem_conv(graph: Graph) -> tuple[str, str, int] | None:
    """``(input, conv node, s)`` when graph input ``input`` is read only by a conv of stride
    ``s >= 2`` in both axes (no groups, no dilation) that the rewrite can hold in blocks
    (H and W multiples of s, s²·C <= `MAX_BLOCK_CHANNELS`); else None."""
    found = stem_reader(graph)
    if found is None:
        return None
    x, node = found
    a = node.attrs
    sh, sw = a["strides"]
    if sh != sw or sh < 2:
        return None
    s = sh
    _, c, h, w = graph.shape(x)
    if h % s or w % s or s * s * c > MAX_BLOCK_CHANNELS:
        return None
    (kh, kw), p = a["kernel"], a["pads"]
    if _axis(h, kh, s, p[0], p[2]) is None or _axis(w, kw, s, p[1], p[3]) is None:
        return None
    return x, node.name, s


def stem_reader(graph: Graph):
    """``(input, conv node)`` when the graph's one input (not yet held in another layout) is
    read only by a float conv without groups or dilation; else None."""
    if len(graph.inputs) != 1 or graph.input_blocks or graph.input_patches:
        return None
    x = graph.inputs[0]
    shape = graph.shape(x)
    readers = graph.consumers().get(x, [])
    if len(shape) != 4 or len(readers) != 1:
        return None
    node = readers[0]
    if node.op != "Conv" or node.host or node.inputs[0] != x or x in node.inputs[1:]:
        return None
    a = node.attrs
    if a["group"] != 1 or tuple(a["dilations"]) != (1, 1):
        return None
    wt = graph.tensors[node.inputs[1]]
    if wt.data is None or wt.quant is not None:
        return None  # (an int8 graph's weights: the float graph is rewritten before quantising)
    return x, node


def pixel_floor(graph: Graph, conv: str) -> int:
    """Cycles a frame the stem ``conv``'s window generator walks at one pixel a beat: its
    padded input, (H + pads) x (W + pads). A plan at or under it is bound by the input."""
    node = graph.node(conv)
    _, _, h, w = graph.shape(node.inputs[0])
    p = node.attrs["pads"]
    return (h + p[0] + p[2]) * (w + p[1] + p[3])


def block_weights(w: np.ndarray, s: int, pads: tuple[int, ...]) -> np.ndarray:
    """The stem's weights ``w`` (Co, C, kh, kw) over s x s blocks (pads: top, left, ...): the
    kernel placed on the block grid (zero taps around it) and blocked like the input."""
    _, _, kh, kw = w.shape
    ly, kby = _taps(kh, s, pads[0])
    lx, kbx = _taps(kw, s, pads[1])
    top, left = -(s * ly + pads[0]), -(s * lx + pads[1])  # grid positions before tap 0
    grid = np.pad(w, ((0, 0), (0, 0), (top, s * kby - top - kh), (left, s * kbx - left - kw)))
    return space_to_depth(grid, s)


def space_to_depth_stem(graph: Graph) -> Graph:
    """A copy of ``graph`` whose input is held in blocks and whose stem conv reads them
    (`stem_conv` must accept the graph)."""
    found = stem_conv(graph)
    if found is None:
        raise ValueError(f"graph '{graph.name}' has no stem conv that reads its input in blocks")
    x, name, s = found
    g = copy_graph(graph)
    node = g.node(name)
    n, c, h, w = g.shape(x)
    (kh, kw), p = node.attrs["kernel"], node.attrs["pads"]
    kby, q0y, q1y = _axis(h, kh, s, p[0], p[2])
    kbx, q0x, q1x = _axis(w, kw, s, p[1], p[3])
    wb = block_weights(g.const(node.inputs[1]), s, p)
    assert wb.shape[2:] == (kby, kbx)
    node.inputs[1] = g.add_const(f"{node.inputs[1]}_blocks", wb)
    node.attrs = {**node.attrs, "kernel": (kby, kbx), "strides": (1, 1), "pads": (q0y, q0x, q1y, q1x)}
    old = g.tensors[x]
    g.tensors[x] = Tensor(x, (n, s * s * c, h // s, w // s), old.dtype, None, old.quant)
    g.input_blocks[x] = s
    g.remove_unused()
    return g


MAX_PATCH_CHANNELS = 256
"""Largest unfolded ``kh·kw·C`` (or ``kw·C``) of `patches_stem`: the input a position the host
writes (a 7 x 7 stem over 3 channels: 147)."""


def patch_conv(graph: Graph, rows: bool) -> tuple[str, str] | None:
    """``(input, conv node)`` when `patches_stem` can unfold the stem conv reading graph input
    ``input`` (``rows``: all its taps; else a row's), a kernel wider than 1; else None."""
    found = stem_reader(graph)
    if found is None:
        return None
    x, node = found
    if "q" in node.attrs:  # an int8 graph: the float graph is rewritten before quantising
        return None
    _, c, _, _ = graph.shape(x)
    kh, kw = node.attrs["kernel"]
    if kw < 2 or (kh if rows else 1) * kw * c > MAX_PATCH_CHANNELS:
        return None
    return x, node.name


def patches_stem(graph: Graph, rows: bool) -> Graph:
    """A copy of ``graph`` whose input is held as its stem conv's unfolded window taps
    (`Patches`; `patch_conv` must accept the graph)."""
    found = patch_conv(graph, rows)
    if found is None:
        raise ValueError(f"graph '{graph.name}' has no stem conv whose window the host can unfold")
    x, name = found
    g = copy_graph(graph)
    node = g.node(name)
    a = node.attrs
    pt = Patches(tuple(g.shape(x)), tuple(a["kernel"]), tuple(a["strides"]), tuple(a["pads"]), rows)
    w = g.const(node.inputs[1])
    co, c, kh, kw = w.shape
    if rows:
        wp = w.transpose(0, 2, 3, 1).reshape(co, kh * kw * c, 1, 1)
        attrs = {"kernel": (1, 1), "strides": (1, 1), "pads": (0, 0, 0, 0)}
    else:
        wp = w.transpose(0, 3, 1, 2).reshape(co, kw * c, kh, 1)
        attrs = {"kernel": (kh, 1), "strides": (a["strides"][0], 1), "pads": (a["pads"][0], 0, a["pads"][2], 0)}
    node.inputs[1] = g.add_const(f"{node.inputs[1]}_patches", np.ascontiguousarray(wp))
    node.attrs = {**a, **attrs}
    old = g.tensors[x]
    g.tensors[x] = Tensor(x, pt.shape(), old.dtype, None, old.quant)
    g.input_patches[x] = pt
    g.remove_unused()
    return g


def as_planned(graph: Graph, input_blocks: dict[str, int], input_patches: dict | None = None) -> Graph:
    """``graph`` in the input layout a plan was made for (``Plan.input_blocks``, an engine
    plan's ``input_patches``: `Patches` or their dicts)."""
    if input_patches:
        want = {k: v if isinstance(v, Patches) else Patches.from_dict(v) for k, v in input_patches.items()}
        if graph.input_patches == want:
            return graph
        (x, pt), = want.items()
        found = patch_conv(graph, pt.rows)
        if found is None or found[0] != x or tuple(graph.shape(x)) != pt.model:
            raise ValueError(f"the plan holds input '{x}' as its stem conv's taps; graph '{graph.name}' cannot")
        return patches_stem(graph, pt.rows)
    if not input_blocks or graph.input_blocks == input_blocks:
        return graph
    found = stem_conv(graph)
    if found is None or {found[0]: found[2]} != input_blocks:
        raise ValueError(f"the plan holds inputs {input_blocks} in blocks; graph '{graph.name}' cannot")
    return space_to_depth_stem(graph)
