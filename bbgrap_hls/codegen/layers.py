"""One fabric node (or one split part of it) as an HLS kernel call.

`make_layer` turns an int8 node into a `Layer`: the parameter struct and constant arrays
of its header ``layer<n>.h`` and the call inside its core's DATAFLOW top, with stream
placeholders ``{in0}``, ``{in1}``... ``{out}`` that the design fills in. Kernel semantics
and array layouts are those of ``hw/hls`` (see `fold`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.codegen.carray import c_array
from bbgrap_hls.codegen.fold import conv_matrix, fold_channels, fold_dw, fold_mvu, grouped_matrix, pad_rows
from bbgrap_hls.codegen.weights import STORAGE_IMPL, WeightMem, rom_array
from bbgrap_hls.errors import BadInputError, UnsupportedError
from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.model.blocks import out_lanes as block_out_lanes
from bbgrap_hls.model.blocks import padded_out_lanes
from bbgrap_hls.model.geometry import end_pads
from bbgrap_hls.model.kinds import node_geometry
from bbgrap_hls.model.rings import ring_lanes, ring_pack, ring_uram_fits
from bbgrap_hls.model.stage import MAX_STAGE_LANES, stage_region_bytes
from bbgrap_hls.model.timing import short_ring_rows
from bbgrap_hls.ops import REGISTRY

#: Op kinds that only relabel the NHWC stream (no block) when the stream order is kept.
LAYOUT_KINDS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Dropout"})
#: Op kinds run by the lookup-table kernel: every op whose ``hls_kernel`` is ``lut_act``
#: (a 256-entry int8 table computed when quantising; bbgrap_hls/ops/activations.py).
LUT_KINDS = frozenset(name for name, op in REGISTRY.items() if getattr(op, "hls_kernel", None) == "lut_act")


@dataclass
class Layer:
    """A kernel instance: ``ident`` names its struct/arrays; ``inputs`` are tensor keys."""

    ident: str
    node: str
    op: str
    inputs: list[str]
    in_lanes: list[int]
    out_lanes: int
    out_elems: int
    call: str
    struct: str = ""
    arrays: list[str] = field(default_factory=list)
    wmem: WeightMem | None = None  # the weight memory ``<ident>_w`` (codegen/weights.py)
    mmv: int = 1  # conv: copies of the matrix-vector unit (the plan's ``mmv``)
    px: int = 1  # conv: input pixels a beat (the plan's ``px``: P::PX of bb::conv2d_pairs)
    po: int = 1  # conv: output pixels a beat (the plan's ``po``: P::PO)
    pack: int = 1  # conv/dense: output lanes per DSP multiplier (the plan's ``pack``; 2: P::PACK)
    rq_lut: bool = False  # the requantisers' products in LUTs (the plan's ``requant == "lut"``: P::RQ_LUT)
    in_slots: int = 2  # an off-chip layer's input frame slots (the plan's ``in_slots``: P::ISLOTS)
    out_slots: int = 2  # an off-chip layer's output frame slots (the plan's ``out_slots``: P::OSLOTS)
    bands: int = 1  # an off-chip conv's bands of output rows (the plan's ``bands``: P::BANDS, bb::conv2d_banded)
    ring: int = 0  # a short window ring's rows (the plan's ``short_ring``: P::ROWS, the RTL's RING); 0: default
    ring_uram: int = 0  # ring words a URAM word (the plan's ``ring_uram``: P::RING_URAM, the RTL's); 0: not in URAM
    groups: int = 1  # a grouped conv computed group by group: its groups (P::GROUPS, the RTL's GROUPS)
    wide: bool = False  # and its window generator takes whole pixels (P::WIDE, the RTL's WIDE)
    # the plan's ``in_stage`` (P::STAGE = 1): the input of a one-slot off-chip layer passes
    # through a DDR frame stage, a scratch area of STAGE_REGIONS regions of ``stage_region``
    # bytes (P::SREGION) from byte ``stage_offset`` (P::SOFF, 4 KB aligned) of the core's
    # board-memory image (set by design.py once the core's weights are placed:
    # `set_stage_offset`), written and read through the m_axi arguments ``sddr_w_<ident>`` and
    # ``sddr_r_<ident>`` (hw/hls/offchip_stage.h)
    in_stage: bool = False
    stage_offset: int = 0
    stage_region: int = 0
    # padded folds (pe does not divide the channels): ``(pixels, NF, PE, CO, lanes)`` of the
    # ``bb::trim_convert`` after the kernel, which drops the padding rows' lanes
    trim: tuple[int, int, int, int, int] | None = None


RQ_LUT_KERNELS = ("bb::conv2d", "bb::conv2d_mmv", "bb::conv2d_pairs", "bb::dense", "bb::dwconv2d", "bb::avgpool2d", "bb::global_avgpool",
                  "bb::add2", "bb::mul2")
"""Kernels whose requantisers (add/mul: rescaling products) may be built from LUTs (``P::RQ_LUT``)."""

RING_KERNELS = ("bb::conv2d", "bb::dwconv2d", "bb::maxpool2d", "bb::avgpool2d")
"""Kernels whose window generator may keep a short ring (``P::ROWS``, bb_window.h)."""


def hwc(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(H, W, C) of a tensor as it streams (a rank-2 (N, C) tensor is 1×1×C)."""
    if len(shape) == 4:
        return shape[2], shape[3], shape[1]
    if len(shape) == 2:
        return 1, 1, shape[1]
    raise UnsupportedError(f"tensor of shape {shape}: only (N, C) and (N, C, H, W) stream")


def _mvu_constants(bias, mult, shift, pe: int) -> dict[str, np.ndarray]:
    """A matrix-vector unit's per-channel constants as ``[PE][NF]`` arrays, the padding rows of
    padded folds with the last channel's constants (their outputs are dropped)."""
    return {k: fold_channels(pad_rows(np.asarray(v).reshape(-1), pe, repeat=True), pe)
            for k, v in (("bias", bias), ("mult", mult), ("shift", shift))}


def _trimmed(lay: Layer, pixels: int, co: int) -> Layer:
    """``lay`` (a matrix-vector kernel at ``PE = lay.out_lanes`` lanes) with padded folds when
    its ``PE`` does not divide its ``co`` channels: its output stream is then the trimming
    converter's (`padded_out_lanes` lanes)."""
    pe = lay.out_lanes
    lanes = padded_out_lanes(co, pe)
    if lanes == pe:  # pe divides co, or is whole pixels (a pixel pair a beat)
        return lay
    lay.trim = (pixels, -(-co // pe), pe, co, lanes)
    lay.out_lanes = lanes
    return lay


def _struct(ident: str, **vals: int) -> str:
    body = ", ".join(f"{k} = {int(v)}" for k, v in vals.items())
    return f"struct {ident}_P {{\n  static constexpr int {body};\n}};\n"


def _add_fields(lay: Layer, **vals: int) -> None:
    """Append ``vals`` to the constants of ``lay``'s parameter struct (`_struct`)."""
    lay.struct = lay.struct.replace(";\n};", "".join(f", {k} = {int(v)}" for k, v in vals.items()) + ";\n};")


def _arrays(ident: str, **arrs: np.ndarray) -> list[str]:
    out = []
    for k, v in arrs.items():
        v = np.asarray(v)
        ctype = "int8_t" if k == "lut" and v.dtype == np.int8 else "int32_t"
        out.append(c_array(f"{ident}_{k}", v.astype(np.int8 if ctype == "int8_t" else np.int32), ctype))
    return out


def _window(node: Node, h: int, w: int, ho: int, wo: int) -> dict[str, int]:
    a = node.attrs
    (kh, kw), (sh, sw), (dh, dw), p = a["kernel"], a["strides"], a["dilations"], a["pads"]
    pb, pr = end_pads(h, w, ho, wo, (kh, kw), (sh, sw), (dh, dw), p)  # (ceil_mode pools: extra end padding)
    return dict(H=h, W=w, KH=kh, KW=kw, SH=sh, SW=sw, DH=dh, DW=dw, PT=p[0], PL=p[1], PB=pb, PR=pr)


def make_layer(g: Graph, node: Node, ident: str, pe: int, simd: int,
               co_range: tuple[int, int] | None = None, weights: str | None = None, mmv: int = 1,
               ddr_offset: int = 0, frame_uram: bool = False, pack: int = 1, requant: str = "dsp",
               in_slots: int = 2, in_stage: bool = False, px: int = 1, po: int = 1, bands: int = 1,
               short_ring: bool = False, out_slots: int = 2, dense_groups: bool = False,
               wide_groups: bool = False, ring_uram: bool = False) -> Layer:
    """The kernel instance of ``node`` with folding ``pe``/``simd``.

    Args:
        g: the int8 graph.
        node: a fabric node with ``attrs["q"]``.
        ident: C++ identifier prefix for its struct and arrays.
        pe, simd: folding from the plan.
        co_range: output channels ``[begin, end)`` of a split part, None for the whole node.
        weights: the plan's weight placement (``"bram"``, ``"uram"``, ``"lut"``, ``"ddr"``) or None.
        mmv: copies of a conv's matrix-vector unit (the plan's ``mmv``; 1 for other ops).
        ddr_offset: ``weights == "ddr"``: the layer's first beat in its core's off-chip
            weight image (`weights.ddr_image`).
        frame_uram: ``weights == "ddr"``: the frame buffers in URAM (the plan's block has URAM).
        in_slots: ``weights == "ddr"``: input frame slots, 2 or 1 (the plan's ``in_slots``;
            ``P::ISLOTS``).
        out_slots: ``weights == "ddr"``, no frame stage: output frame slots, 2 or 1 (the
            plan's ``out_slots``; ``P::OSLOTS``).
        px, po: a conv's input and output pixels a beat (the plan's ``px``/``po``; 2: the
            input, or output, streams two horizontally adjacent pixels a beat, ``bb::conv2d_pairs``).
        in_stage: the plan's ``in_stage``: the input through a DDR frame stage (``P::STAGE``;
            needs ``weights == "ddr"`` and ``in_slots == 1``); the stage's offset in the
            core's image is set afterwards (`set_stage_offset`).
        bands: the plan's ``bands``: more than 1, an off-chip conv (``weights == "ddr"``, two
            input slots) computed that many bands of output rows a frame (``P::BANDS``,
            ``bb::conv2d_banded``, hw/hls/conv2d_banded.h).
        pack: the plan's ``pack``: 2 packs a conv/dense's lane pairs into one product each
            (``P::PACK = 2``, hw/hls/bb_pack.h; the RTL mvu's ``PACK``), 0 puts the
            products of a conv/dense or a depthwise conv in LUTs (``P::PACK = 0``; the
            RTL's lut_mul.sv).
        requant: the plan's ``requant``: ``"lut"`` builds the requantisers' products (an
            add's or mul's rescaling products) from LUTs (``P::RQ_LUT = 1``, hw/hls/bb_pack.h
            ``requant_with``; the RTL's ``RQ_LUT = 1``).
        short_ring: the plan's ``short_ring``: the window generator keeps ``KH_eff + SH``
            rows (``P::ROWS``, hw/hls/bb_window.h; the RTL swg's ``RING``).
        ring_uram: the plan's ``ring_uram`` (with ``short_ring``): the ring in URAM, `ring_pack`
            ring words a URAM word (``P::RING_URAM``; the RTL swg's ``RING_URAM``).
        dense_groups: the plan's ``dense_groups``: a grouped conv computed as a dense one
            over its block-diagonal matrix; else its groups in turn (``P::GROUPS``, the
            layer's ``groups``).
        wide_groups: the plan's ``wide_groups``: a grouped conv computed group by group takes
            whole pixels into its window generator (``P::WIDE = 1``, the layer's ``wide``).
    """
    if bands != 1 and (weights != "ddr" or bands < 1):
        raise BadInputError(f"node '{node.name}' ({node.op}): bands {bands} (row bands) needs weights 'ddr' and "
                            f"bands >= 1, got weights {weights!r}")
    if in_stage and (weights != "ddr" or in_slots != 1):
        raise BadInputError(f"node '{node.name}' ({node.op}): in_stage (a DDR frame stage) needs weights 'ddr' and "
                            f"in_slots 1, got weights {weights!r}, in_slots {in_slots}")
    lay = _make_layer(g, node, ident, pe, simd, co_range, mmv, px, po,
                      by_group=weights != "ddr" and not dense_groups, wide=wide_groups)
    kern = lay.call.split("<", 1)[0]
    if requant not in ("dsp", "lut"):
        raise BadInputError(f"node '{node.name}' ({node.op}): requant '{requant}' is not 'dsp' or 'lut'")
    if requant == "lut":
        if kern not in RQ_LUT_KERNELS or weights == "ddr":
            raise UnsupportedError(f"node '{node.name}' ({node.op}): LUT requantisers are for "
                                   f"{', '.join(RQ_LUT_KERNELS)} with their weights on chip, not {kern}")
        _add_fields(lay, RQ_LUT=1)
        lay.rq_lut = True
    if pack != 1:
        mvu = kern in ("bb::conv2d", "bb::conv2d_mmv", "bb::conv2d_pairs", "bb::dense")
        if not (mvu or (kern == "bb::dwconv2d" and pack == 0)) \
                or (pack == 2 and pe < 2) or (pack == 0 and weights == "ddr") or pack not in (0, 2):
            raise UnsupportedError(f"node '{node.name}' ({node.op}): pack {pack} with pe={pe}: DSP packing (2) "
                                   "is for a conv or dense matrix-vector unit with pe >= 2 (weights on chip or "
                                   "off chip), LUT multipliers (0) for one with its weights on chip or a "
                                   "depthwise conv")
        _add_fields(lay, PACK=pack)
        lay.pack = pack
    if short_ring:
        if kern not in RING_KERNELS or weights == "ddr":
            raise UnsupportedError(f"node '{node.name}' ({node.op}): a short window ring is for "
                                   f"{', '.join(RING_KERNELS)} with their weights on chip, not {kern}")
        lay.ring = short_ring_rows(node_geometry(node, g))
        _add_fields(lay, ROWS=lay.ring)
    if ring_uram:
        geom = node_geometry(node, g)
        lanes = ring_lanes("conv" if kern == "bb::conv2d" else "window", geom, pe, simd, dense_groups)
        if not short_ring or (kern == "bb::conv2d" and wide_groups) or not ring_uram_fits(geom, lanes):
            raise UnsupportedError(f"node '{node.name}' ({node.op}): a window ring in URAM is for a short ring of "
                                   f"{', '.join(RING_KERNELS)} whose C/lanes words fill URAM words, not of whole "
                                   f"pixels for groups (C={geom.c}, lanes={lanes}, short ring {short_ring})")
        lay.ring_uram = ring_pack(lanes)
        _add_fields(lay, RING_URAM=lay.ring_uram)
    if out_slots != 2 and weights != "ddr":
        raise BadInputError(f"node '{node.name}' ({node.op}): out_slots {out_slots} (one output frame slot) needs "
                            f"weights 'ddr', got weights {weights!r}")
    if lay.wmem is None:
        return lay
    if weights == "ddr":
        return _offchip(lay, g, node, simd, ddr_offset, frame_uram, in_slots, in_stage, bands, out_slots)
    if weights is not None:
        if weights not in STORAGE_IMPL:
            raise BadInputError(f"node '{node.name}' ({node.op}): weights placement '{weights}' is not one of "
                                f"{sorted(STORAGE_IMPL)}")
        lay.wmem.storage = STORAGE_IMPL[weights]
    if not lay.wmem.uram:  # a ROM in the header; URAM weights come from the core's weight image
        lay.arrays.insert(0, rom_array(ident, lay.wmem))
    return lay


def _offchip(lay: Layer, g: Graph, node: Node, simd: int, offset: int, frame_uram: bool,
             in_slots: int = 2, in_stage: bool = False, bands: int = 1, out_slots: int = 2) -> Layer:
    """``lay`` (conv2d or dense) as ``bb::conv2d_offchip`` / ``bb::dense_offchip``: weights read
    once per frame from the core's board memory through the m_axi port ``wddr_<ident>``
    (hw/hls/conv2d_offchip.h), from beat ``offset`` of the core's off-chip image, with
    ``in_slots`` input frame slots (``P::ISLOTS``); ``in_stage``: behind a DDR frame stage
    (``P::STAGE = 1``, ``P::SREGION``; ``P::SOFF`` comes with `set_stage_offset`), the
    scratch's m_axi arguments ``sddr_w_<ident>``, ``sddr_r_<ident>`` after ``wddr_<ident>``;
    ``bands`` > 1: a conv as ``bb::conv2d_banded`` (``P::BANDS``; hw/hls/conv2d_banded.h), its
    output rows computed that many bands a frame (two input slots, no frame stage); ``out_slots``
    output frame slots (``P::OSLOTS``; 1 only without a frame stage)."""
    if in_slots not in (1, 2) or out_slots not in (1, 2) or (out_slots == 1 and in_stage):
        raise BadInputError(f"node '{node.name}' ({node.op}): in_slots {in_slots}, out_slots {out_slots} "
                            f"(in_stage {in_stage}): each is 1 or 2, and a DDR frame stage keeps two output slots")
    kern = lay.call.split("<", 1)[0]
    if lay.trim is not None:
        raise UnsupportedError(f"node '{node.name}' ({node.op}): off-chip weights need pe | CO (no padded folds), "
                               f"got pe {lay.trim[2]} for {lay.trim[3]} channels")
    if kern not in ("bb::conv2d", "bb::dense"):
        raise UnsupportedError(f"node '{node.name}' ({node.op}): the plan keeps its weights off chip, but only "
                               f"a conv or dense layer without pixel copies can (HLS kernel {kern} has none)")
    c = hwc(g.shape(g.act_inputs(node)[0]))[2]
    if node.op == "Conv" and c % simd:
        raise UnsupportedError(f"node '{node.name}' (Conv): off-chip weights need simd | C, got simd {simd}, C {c} "
                               "(no parallel window)")
    lay.wmem.storage = "ddr"
    _add_fields(lay, OFF=offset, URAM=frame_uram, ISLOTS=in_slots)
    if out_slots != 2:
        _add_fields(lay, OSLOTS=out_slots)
    lay.in_slots, lay.out_slots = in_slots, out_slots
    target = f"{kern}_offchip"
    if bands != 1:
        ho = hwc(g.shape(node.outputs[0]))[0]
        if node.op != "Conv" or in_slots != 2 or in_stage or ho % bands:
            raise UnsupportedError(f"node '{node.name}' ({node.op}): row bands ({bands}) are for an off-chip Conv "
                                   f"with two input slots and no frame stage whose output height ({ho}) they "
                                   f"divide (in_slots {in_slots}, in_stage {in_stage})")
        _add_fields(lay, BANDS=bands)
        lay.bands, target = bands, "bb::conv2d_banded"
    lay.call = lay.call.replace(f"{kern}<", f"{target}<", 1).replace(f"{lay.ident}_w,", f"wddr_{lay.ident},")
    if in_stage:
        elems = int(np.prod(g.shape(g.act_inputs(node)[0])[1:]))  # one input frame
        if simd > MAX_STAGE_LANES:
            raise UnsupportedError(f"node '{node.name}' ({node.op}): a DDR frame stage carries at most "
                                   f"{MAX_STAGE_LANES} lanes a beat, got simd {simd}")
        lay.in_stage, lay.stage_region = True, stage_region_bytes(elems // simd, simd)
        _add_fields(lay, STAGE=1, SREGION=lay.stage_region)
        lay.call = lay.call.replace(f"wddr_{lay.ident},", f"wddr_{lay.ident}, sddr_w_{lay.ident}, sddr_r_{lay.ident},")
    return lay


def set_stage_offset(lay: Layer, offset: int) -> None:
    """Place a staged layer's scratch area at byte ``offset`` (4 KB aligned) of its core's
    board-memory image: ``lay.stage_offset`` and ``P::SOFF``."""
    if not lay.in_stage or offset % 4096:
        raise ValueError(f"{lay.ident}: stage offset {offset} (staged: {lay.in_stage}) is not 4 KB aligned")
    lay.stage_offset = offset
    _add_fields(lay, SOFF=offset)


def _make_layer(g: Graph, node: Node, ident: str, pe: int, simd: int,
                co_range: tuple[int, int] | None, mmv: int = 1, px: int = 1, po: int = 1,
                by_group: bool = True, wide: bool = False) -> Layer:
    """`make_layer` without the weight placement. ``by_group``: a grouped conv (not depthwise)
    computes its groups in turn (``GROUPS``, its own group's weights a row); False (its
    weights off chip: `conv_offchip.h` is dense): the dense block-diagonal matrix. ``wide``
    (with ``by_group``): the window generator takes whole pixels (``WIDE``)."""
    q = node.attrs.get("q", {})
    acts = g.act_inputs(node)
    x = g.shape(acts[0]) if acts else ()
    y = g.shape(node.outputs[0])
    ho, wo, co = hwc(y)
    n_out = ho * wo * co
    lo, hi = (co_range or (0, co))
    op = node.op
    if mmv < 1 or (mmv > 1 and op != "Conv"):
        raise UnsupportedError(f"node '{node.name}' ({op}): mmv {mmv}; pixel copies (mmv > 1) are for Conv only")
    if (px, po) != (1, 1) and (op != "Conv" or px != 2 or po not in (1, 2)):
        raise UnsupportedError(f"node '{node.name}' ({op}): px {px}, po {po}; two pixels a beat (px = 2, po = 1 "
                               "or 2) are for Conv only")
    if op == "Conv":
        h, w, c = hwc(x)
        wq, group = np.asarray(q["w"]), node.attrs["group"]
        bias, mult, shift = (np.asarray(q[k]) for k in ("bias", "mult", "shift"))
        kk = int(wq.shape[2] * wq.shape[3])
        # depthwise as the cost model has it (model.kinds.block_kind: group > 1): a one-channel
        # conv (group = C = CO = 1) is a matrix-vector conv there, and may take LUT multipliers
        if (1 < group == c and wq.shape[0] == c and co_range is None and simd % pe == 0
                and kk % (simd // pe) == 0):
            if mmv > 1:
                raise UnsupportedError(f"node '{node.name}' (Conv): mmv {mmv} on a depthwise conv "
                                       "(pixel copies are for the matrix-vector conv only)")
            # depthwise: pe lanes in and out, simd = pe·j products per cycle (j > 1: parallel window)
            vals = dict(_window(node, h, w, ho, wo), C=c, LANES=pe, SIMD=simd, ZP_IN=q["zp_in"],
                        ZP_OUT=q["zp_out"], LO=q["lo"], HI=q["hi"])
            arrs = dict(bias=fold_channels(bias, pe), mult=fold_channels(mult, pe), shift=fold_channels(shift, pe))
            call = f"bb::dwconv2d<{ident}_P>({{in0}}, {{out}}, {ident}_w, {ident}_bias, {ident}_mult, {ident}_shift, frames);"
            return Layer(ident, node.name, op, [acts[0]], [pe], pe, n_out, call, _struct(ident, **vals),
                         _arrays(ident, **arrs), WeightMem(fold_dw(wq, pe, simd)))
        # a grouped conv (not depthwise): the groups in turn (conv2d.h GROUPS), each output
        # channel over its own group's window only; else the dense matrix (block-diagonal)
        groups = group if by_group else 1
        cg = c // groups
        if groups > 1 and (co_range is not None or (co // groups) % pe or mmv > 1 or px > 1):
            raise UnsupportedError(f"node '{node.name}' (Conv): a grouped conv ({groups} groups) is built whole, "
                                   f"pe | Co/group ({co}/{groups}, pe {pe}), one copy, one pixel a beat")
        mat = pad_rows((grouped_matrix(wq) if groups > 1 else conv_matrix(wq, group))[lo:hi], pe)
        n_out = ho * wo * (hi - lo)
        vals = dict(_window(node, h, w, ho, wo), C=c, CO=len(mat), SIMD=simd, PE=pe, ZP_IN=q["zp_in"],
                    ZP_OUT=q["zp_out"], LO=q["lo"], HI=q["hi"])
        if groups > 1:
            vals["GROUPS"] = groups  # (and the layer's `groups`, below)
        if wide:  # whole pixels into the window generator, each group a slice of the word
            if groups < 2 or simd % cg or (kk == 1 and vals["SH"] == vals["SW"] == 1
                                           and not any(vals[k] for k in ("PT", "PL", "PB", "PR"))):
                raise UnsupportedError(f"node '{node.name}' (Conv): whole pixels in (wide_groups) need a grouped "
                                       f"conv with a window generator and simd a multiple of C/group={cg}")
            vals["WIDE"] = 1
        arrs = _mvu_constants(bias[lo:hi], mult[lo:hi], shift[lo:hi], pe)
        if cg % simd and (simd % cg or (kk * cg) % simd):
            raise UnsupportedError(f"node '{node.name}' (Conv): simd {simd} neither divides C/group={cg} nor is "
                                   f"C/group·j with j | kh·kw={kk} (parallel window)")
        kern, out_lanes = "conv2d", pe
        if mmv > 1:  # M MVU copies (hw/hls conv2d_mmv): one whole pixel (CO lanes) per output beat
            if (hi - lo) % pe:
                raise UnsupportedError(f"node '{node.name}' (Conv): mmv {mmv} with pe {pe} not dividing "
                                       f"{hi - lo} channels (pixel copies need whole folds)")
            nf = (hi - lo) // pe
            if mmv > nf * (2 if po == 2 else 1):  # (two halves of M/2 copies with po = 2)
                raise UnsupportedError(f"node '{node.name}' (Conv): mmv {mmv} exceeds NF = CO/PE = "
                                       f"{hi - lo}/{pe} = {nf} (each copy needs whole neuron folds)")
            vals["M"] = mmv
            kern, out_lanes = "conv2d_mmv", hi - lo
        in_lanes = c if wide else min(simd, cg)  # a parallel window (simd = C·j) still reads one pixel a beat
        if px == 2:  # two pixels a beat in (hw/hls conv2d_pairs): whole pixels, 2·C lanes
            if simd % c or (hi - lo) % pe or w % 2:
                raise UnsupportedError(f"node '{node.name}' (Conv): px 2 needs simd = C·j (simd {simd}, C {c}), "
                                       f"pe | CO (pe {pe}, CO {hi - lo}) and an even width (W {w})")
            vals.update(PX=2, PO=po, M=mmv)
            in_lanes = 2 * c
            kern = "conv2d_pairs"
            out_lanes = block_out_lanes(hi - lo, pe, mmv, po)
        call = f"bb::{kern}<{ident}_P>({{in0}}, {{out}}, {ident}_w, {ident}_bias, {ident}_mult, {ident}_shift, frames);"
        return _trimmed(Layer(ident, node.name, op, [acts[0]], [in_lanes], out_lanes, n_out, call,
                              _struct(ident, **vals), _arrays(ident, **arrs), WeightMem(fold_mvu(mat, pe, simd)), mmv,
                              px=px, po=po, groups=groups, wide=wide),
                        ho * wo, hi - lo)
    if op == "Dense":
        c = int(np.prod(x[1:]))
        bias, mult, shift = (np.asarray(q[k]) for k in ("bias", "mult", "shift"))
        mat = pad_rows(np.asarray(q["w"])[lo:hi], pe)
        vals = dict(C=c, CO=len(mat), SIMD=simd, PE=pe, ZP_OUT=q["zp_out"], LO=q["lo"], HI=q["hi"])
        arrs = _mvu_constants(bias[lo:hi], mult[lo:hi], shift[lo:hi], pe)
        call = f"bb::dense<{ident}_P>({{in0}}, {{out}}, {ident}_w, {ident}_bias, {ident}_mult, {ident}_shift, frames);"
        return _trimmed(Layer(ident, node.name, op, [acts[0]], [simd], pe, hi - lo, call, _struct(ident, **vals),
                              _arrays(ident, **arrs), WeightMem(fold_mvu(mat, pe, simd))), 1, hi - lo)
    if co_range is not None:
        raise UnsupportedError(f"node '{node.name}' ({op}): only Conv and Dense can be split over cores")
    p = pe
    if op == "ChannelAffine":
        # y = clamp(zp_out + (((x - zp_in)·mult[c] + bias[c] + 2^(shift-1)) >> shift), lo, hi):
        # signed 32-bit mult, 64-bit bias (bbgrap_hls.quant, "affine").
        vals = dict(N=n_out, C=co, LANES=p, ZP_IN=q["zp_in"], ZP_OUT=q["zp_out"], LO=q["lo"], HI=q["hi"])
        mult = np.asarray(q["mult"], np.int64)
        if np.any(np.abs(mult) >= 1 << 31):
            raise UnsupportedError(f"node '{node.name}' (ChannelAffine): multiplier outside the signed "
                                   f"32-bit range (max |mult| {int(np.abs(mult).max())})")
        arrs = [c_array(f"{ident}_mult", fold_channels(mult, p).astype(np.int32), "int32_t"),
                c_array(f"{ident}_bias", fold_channels(np.asarray(q["bias"], np.int64), p), "int64_t"),
                c_array(f"{ident}_shift", fold_channels(np.asarray(q["shift"], np.int64), p).astype(np.int32),
                        "int32_t")]
        call = f"bb::channel_affine<{ident}_P>({{in0}}, {{out}}, {ident}_mult, {ident}_bias, {ident}_shift, frames);"
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out, call, _struct(ident, **vals), arrs)
    if op in LUT_KINDS:
        call = f"bb::lut_act<{ident}_P>({{in0}}, {{out}}, {ident}_lut, frames);"
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out, call, _struct(ident, N=n_out, LANES=p),
                     _arrays(ident, lut=np.asarray(q["lut"], np.int8)))
    if op in ("MaxPool", "AveragePool"):
        h, w, c = hwc(x)
        vals = dict(_window(node, h, w, ho, wo), C=c, LANES=p)
        if simd != p:  # a parallel window: simd = p·j, j taps of the p lanes a cycle (pool2d.h SIMD)
            if simd % p or (vals["KH"] * vals["KW"]) % (simd // p):
                raise UnsupportedError(f"node '{node.name}' ({op}): simd {simd} is not pe {p} times a divisor "
                                       f"of the window size {vals['KH'] * vals['KW']}")
            vals["SIMD"] = simd
        if op == "MaxPool":
            return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                         f"bb::maxpool2d<{ident}_P>({{in0}}, {{out}}, frames);", _struct(ident, **vals))
        vals.update(ZP_IN=q["zp_in"], ZP_OUT=q["zp_out"], LO=-128, HI=127,
                    COUNT_PAD=int(bool(node.attrs.get("count_include_pad", 0))))
        mult = np.concatenate([[0], np.asarray(q["mult"]).reshape(-1)])
        shift = np.concatenate([[1], np.asarray(q["shift"]).reshape(-1)])
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::avgpool2d<{ident}_P>({{in0}}, {{out}}, {ident}_mult, {ident}_shift, frames);",
                     _struct(ident, **vals), _arrays(ident, mult=mult, shift=shift))
    if op == "GlobalAveragePool":
        h, w, c = hwc(x)
        vals = dict(H=h, W=w, C=c, LANES=p, ZP_IN=q["zp_in"], ZP_OUT=q["zp_out"], LO=-128, HI=127,
                    MULT=int(q["mult"]), SHIFT=int(q["shift"]))
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::global_avgpool<{ident}_P>({{in0}}, {{out}}, frames);", _struct(ident, **vals))
    if op == "GlobalMaxPool":
        h, w, c = hwc(x)
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::global_maxpool<{ident}_P>({{in0}}, {{out}}, frames);", _struct(ident, H=h, W=w, C=c, L=p))
    if op == "Slice":
        why = REGISTRY["Slice"].fabric_limit(node, g)
        if why:
            raise UnsupportedError(f"node '{node.name}' (Slice): {why}")
        h, w, c = hwc(x)
        st = node.attrs["start"]
        y0, x0 = (st[2], st[3]) if len(x) == 4 else (0, 0)
        vals = dict(H=h, W=w, C=c, L=p, Y0=y0, X0=x0, HO=ho, WO=wo, C0=st[1], CO=co)
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::slice2d<{ident}_P>({{in0}}, {{out}}, frames);", _struct(ident, **vals))
    if op == "Resize":
        h, w, c = hwc(x)
        sh, sw = node.attrs["scales"]
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::upsample2d<{ident}_P>({{in0}}, {{out}}, frames);",
                     _struct(ident, H=h, W=w, C=c, L=p, SH=sh, SW=sw))
    if op == "ResizeBilinear":
        from bbgrap_hls.ops.resize_linear import FRAC

        h, w, c = hwc(x)
        th, tw = REGISTRY["ResizeBilinear"].axis_taps(node, x)
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::bilinear2d<{ident}_P>({{in0}}, {{out}}, {ident}_ty, {ident}_tx, frames);",
                     _struct(ident, H=h, W=w, C=c, L=p, HO=ho, WO=wo, FRAC=FRAC),
                     _arrays(ident, ty=th.reshape(-1), tx=tw.reshape(-1)))
    if op == "LRN":
        h, w, c = hwc(x)
        vals = dict(PIXELS=h * w, C=c, L=p, BEFORE=q["before"], AFTER=q["after"], MBITS=q["mbits"],
                    SHIFT=q["shift"], ZP_IN=q["zp_in"], ZP_OUT=q["zp_out"])
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::lrn<{ident}_P>({{in0}}, {{out}}, {ident}_tab, frames);",
                     _struct(ident, **vals), _arrays(ident, tab=np.asarray(q["table"], np.int64)))
    if op == "DepthToSpace":
        h, w, c = hwc(x)
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::depth2space<{ident}_P>({{in0}}, {{out}}, frames);",
                     _struct(ident, H=h, W=w, C=c, L=p, B=node.attrs["blocksize"]))
    if op == "ZeroInsert":
        h, w, c = hwc(x)
        (sh, sw), pd = node.attrs["factor"], node.attrs["pads"]
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::zeroinsert2d<{ident}_P>({{in0}}, {{out}}, frames);",
                     _struct(ident, H=h, W=w, C=c, L=p, SH=sh, SW=sw, PT=pd[0], PL=pd[1], PB=pd[2], PR=pd[3],
                             ZP=int(q["pad_value"])))
    if op in ("Add", "Sub", "Mul"):
        if op == "Mul":
            vals = dict(N=n_out, LANES=p, ZA=q["zp_a"], ZB=q["zp_b"], MULT=q["mult"], SHIFT=q["shift"],
                        ZP_OUT=q["zp_out"], LO=q["lo"], HI=q["hi"])
            kern = "mul2"
        else:
            vals = dict(N=n_out, LANES=p, ZA=q["zp_a"], ZB=q["zp_b"], MA=q["mult_a"], MB=q["mult_b"],
                        SHIFT=q["shift"], ZP_OUT=q["zp_out"], LO=q["lo"], HI=q["hi"])
            kern = "add2"
        ins = list(node.inputs[:2])
        return Layer(ident, node.name, op, ins, [p, p], p, n_out,
                     f"bb::{kern}<{ident}_P>({{in0}}, {{in1}}, {{out}}, frames);", _struct(ident, **vals))
    if op == "Concat":
        if len(y) != 4 and len(y) != 2 or node.attrs["axis"] != 1:
            raise UnsupportedError(f"node '{node.name}' (Concat): only channel concatenation streams")
        cs = ", ".join(str(hwc(g.shape(i))[2]) for i in acts)
        ins = ", ".join(f"{{in{k}}}" for k in range(len(acts)))
        return Layer(ident, node.name, op, list(acts), [p] * len(acts), p, n_out,
                     f"bb::concat<{ho * wo}, {p}, {cs}>({{out}}, frames, {ins});")
    if op == "Pad":
        h, w, c = hwc(x)
        b, e = node.attrs["begin"], node.attrs["end"]
        if len(b) != 4 or b[0] or b[1] or e[0] or e[1] or min(b + e) < 0:
            raise UnsupportedError(f"node '{node.name}' (Pad): only non-negative spatial padding streams")
        return Layer(ident, node.name, op, [acts[0]], [p], p, n_out,
                     f"bb::pad2d<{h}, {w}, {c}, {p}, {b[2]}, {b[3]}, {e[2]}, {e[3]}>({{in0}}, {{out}}, "
                     f"{int(q['pad_value'])}, frames);")
    raise UnsupportedError(f"node '{node.name}' ({op}): no HLS kernel")


def shuffle_layer(node: Node, ident: str, pixels: int, c: int, lanes: int, perm: np.ndarray) -> Layer:
    """A channel shuffle (out channel ``k`` = in channel ``perm[k]`` in every pixel)."""
    call = f"bb::channel_shuffle<{pixels}, {c}, {lanes}>({{in0}}, {{out}}, {ident}_perm, frames);"
    return Layer(ident, node.name, node.op, [node.inputs[0]], [lanes], lanes, pixels * c, call, "",
                 [c_array(f"{ident}_perm", np.asarray(perm, np.int16), "int16_t")])
