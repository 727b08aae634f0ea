"""Shapes and window parameters of a node, as the cost model sees them.

Activations stream NHWC with channels innermost; a 2-D tensor ``(N, C)`` is one pixel of
``C`` channels. Window attributes are read from the canonical node (``kernel``/
``kernel_shape``, ``strides``, ``pads``, ``dilations``, ``group``) with ONNX defaults.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

from bbgrap_hls.ir import Graph, Node


@dataclass(frozen=True)
class Geometry:
    """Input/output sizes and the window of one node.

    Attributes:
        h, w, c: input height, width, channels (first activation input).
        ho, wo, co: output height, width, channels.
        kh, kw: window size (dilation applied: the span in input pixels).
        sh, sw: strides.
        dh, dw: dilations (``kh = (taps − 1)·dh + 1``).
        pads: (top, left, bottom, right).
        group: convolution groups (1 otherwise).
        in_channels: channel count of every activation input (Concat, Add).
        pairs: the block may stream two horizontally adjacent pixels a beat (the planner's
            ``pixel_pairs`` option, where `kinds.pairable` allows it): 2, a conv then also
            has rows with a paired input and output (`kinds.pair_modes`), an elementwise
            block rows at ``2·C`` lanes; 1, a conv's input only (a split part, whose outputs
            are concatenated one pixel a beat); 0 (default) neither.
    """

    h: int
    w: int
    c: int
    ho: int
    wo: int
    co: int
    kh: int = 1
    kw: int = 1
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    group: int = 1
    in_channels: tuple[int, ...] = ()
    pairs: int = 0

    def __hash__(self) -> int:  # cached: the cost model's caches hash a geometry per lookup
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def hp(self) -> int:
        return self.h + self.pads[0] + self.pads[2]

    @property
    def wp(self) -> int:
        return self.w + self.pads[1] + self.pads[3]

    @functools.cached_property
    def k(self) -> int:
        """Kernel taps (``kh·kw`` without dilation)."""
        return ((self.kh - 1) // self.dh + 1) * ((self.kw - 1) // self.dw + 1)

    @property
    def in_elems(self) -> int:
        return self.h * self.w * self.c

    @property
    def out_elems(self) -> int:
        return self.ho * self.wo * self.co

    @functools.cached_property
    def pointwise(self) -> bool:
        """A 1×1, stride-1, unpadded window: no line buffer needed."""
        return self.k == 1 and self.sh == 1 and self.sw == 1 and not any(self.pads)

    @property
    def grouped(self) -> bool:
        """A grouped convolution that is not depthwise (``1 < group``, not ``group = C = Co``):
        each output channel sees its group's ``C/group`` input channels only (`cgi`), and the
        matrix-vector unit computes the groups in turn (docs/cost-model.md, "Grouped convs")."""
        return self.group > 1 and not (self.group == self.c and self.co == self.c)

    @property
    def cgi(self) -> int:
        """Input channels of a group (``C`` when not grouped)."""
        return self.c // self.group

    @property
    def cgo(self) -> int:
        """Output channels of a group (``Co`` when not grouped)."""
        return self.co // self.group


def hwc(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(H, W, C) of an NCHW or (N, C...) shape: rank 4 is NCHW, rank 5 and more the inside
    of a channel shuffle (N, C1, C2.., H, W): the pixel's channels are C1·C2.. (what the
    `channel_shuffle` block streams); lower ranks are one pixel."""
    if len(shape) >= 4:
        c = 1
        for d in shape[1:-2]:
            c *= int(d)
        return int(shape[-2]), int(shape[-1]), c
    if len(shape) <= 1:
        return 1, 1, int(shape[0]) if shape else 1
    c = 1
    for d in shape[1:]:
        c *= int(d)
    return 1, 1, c


def _pair(v, default: int) -> tuple[int, int]:
    if v is None:
        return default, default
    v = tuple(int(x) for x in (v if isinstance(v, (list, tuple)) else (v, v)))
    return (v[0], v[1]) if len(v) >= 2 else (v[0], v[0])


def end_pads(h: int, w: int, ho: int, wo: int, kernel: tuple[int, int], strides: tuple[int, int],
             dilations: tuple[int, int], pads: tuple[int, ...]) -> tuple[int, int]:
    """Bottom and right padding with the extra end rows and columns that make the kernel's
    floor formula give the op's ``ho × wo`` (a ceil-mode pool): its last window ends inside the
    padded rows and columns, which windows read as padding only (gen's window parameters)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    return (max(pads[2], (ho - 1) * sh + (kh - 1) * dh + 1 - h - pads[0]),
            max(pads[3], (wo - 1) * sw + (kw - 1) * dw + 1 - w - pads[1]))


def geometry(node: Node, graph: Graph) -> Geometry:
    """The geometry of ``node`` in ``graph`` (see `Geometry`)."""
    acts = graph.act_inputs(node)
    if not acts:
        acts = [i for i in node.inputs if i][:1]
    h, w, c = hwc(graph.shape(acts[0])) if acts else (1, 1, 1)
    ho, wo, co = hwc(graph.shape(node.outputs[0]))
    a = node.attrs
    kh, kw = _pair(a.get("kernel", a.get("kernel_shape")), 1)
    if node.op == "Conv" and "kernel" not in a and "kernel_shape" not in a and len(node.inputs) > 1:
        ws = graph.shape(node.inputs[1])
        if len(ws) == 4:
            kh, kw = int(ws[2]), int(ws[3])
    dh, dw = _pair(a.get("dilations"), 1)
    sh, sw = _pair(a.get("strides"), 1)
    p = a.get("pads") or (0, 0, 0, 0)
    p = tuple(int(x) for x in p)
    pads = (p[0], p[1], p[2], p[3]) if len(p) == 4 else (0, 0, 0, 0)
    if a.get("ceil_mode"):  # the extra end padding gen gives a ceil-mode pool (`end_pads`)
        pads = (pads[0], pads[1], *end_pads(h, w, ho, wo, (kh, kw), (sh, sw), (dh, dw), pads))
    return Geometry(
        h=h, w=w, c=c, ho=ho, wo=wo, co=co,
        kh=(kh - 1) * dh + 1, kw=(kw - 1) * dw + 1, sh=sh, sw=sw, dh=dh, dw=dw, pads=pads,
        group=int(a.get("group", 1)),
        in_channels=tuple(hwc(graph.shape(t))[2] for t in acts),
    )
