"""One fabric layer as an RTL module instance: its ``hw/rtl`` module, parameters and memories.

`rtl_layer` maps a `Layer` of the design (and its node's ``attrs["q"]``) to the module of
``hw/rtl`` that implements it, the module's parameters and its ``$readmemh`` files. Memory
layouts are those of the modules' headers:

- mvu (conv, dense): word ``nf·SF + sf``, lane ``pe·SIMD + s`` holds
  ``W[nf·PE + pe][sf·SIMD + s]``; conv columns are ``(ky·KW + kx)·C + c``;
- vvu (depthwise, pools): word ``k·C/P + g``, lane ``i`` holds tap ``k`` of channel ``g·P + i``;
- bias: one int32 per lane; requantisation: 32 bits per lane ``{m[23:0], s}``, the layer's
  output zero point and clamp the parameters ``RQ_ZP``, ``RQ_LO``, ``RQ_HI`` (`rq_params`);
- lookup table: 256 entries of 8 bits, entry ``x + 128`` for input ``x``;
- channel affine: per lane a signed int32 multiplier (``_m``), an int64 bias (``_b``) and
  32 bits ``{s, zp_out, lo, hi}`` (``_rq``).
- LRN: the factor table (``_tab``), one 16-bit word per code (`bbgrap_hls.ops.lrn.table`);
- channel shuffle: no memory; the permutation is the parameter ``PERM``, a ``16·C``-bit
  literal with the input channel of output channel ``k`` at bits ``16·k``.
- off-chip weights (`rtl_offchip`, ``conv_offchip``): bias and requantisation as mvu; the
  weights are an image in the board memory, the mvu ROM's words back to back (word
  ``nf·SF + sf``, byte ``pe·SIMD + s``) from the layer's base address.

File names come from the layer's identifier (``layer<n>[_p<j>]``), never from model text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.codegen.fold import conv_matrix, grouped_matrix, pad_rows
from bbgrap_hls.codegen.layers import LUT_KINDS, Layer, _window, hwc
from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.model.blocks import out_lanes, padded_out_lanes
from bbgrap_hls.model.memory import LUTRAM_BITS
from bbgrap_hls.ops import REGISTRY
from bbgrap_hls.quant.arith import MULT_BITS


@dataclass
class RtlLayer:
    """A layer's module, parameters (int or file-name str) and memory files (name -> text)."""

    module: str
    params: dict[str, int | str]
    files: dict[str, str] = field(default_factory=dict)
    two_inputs: bool = False
    image: bytes = b""  # off-chip weights: the bytes the board memory holds from W_BASE



def _rom_style(lay) -> dict:
    """``W_STYLE = "logic"`` for a weight memory the plan builds from LUTs (``weights ==
    "lut"`` at 1,024 bits or more: `model.memory.lut_rom`); smaller ones are LUTRAM-sized
    whatever the style, and the rest stay block ROMs (the modules' default)."""
    wm = lay.wmem
    if wm is not None and wm.storage == "lutram" and 8 * wm.nbytes() >= LUTRAM_BITS:
        return {"W_STYLE": "logic"}
    return {}

def pack(rows: np.ndarray, bits: int) -> list[int]:
    """Pack a [words, lanes] integer array into words, lane i at bits [i·bits +: bits]
    (two's complement, ``bits`` wide)."""
    a = np.asarray(rows)
    if a.ndim == 2 and a.shape[0] == 0:
        return []
    if a.dtype != object and bits in (8, 16, 32, 64) and a.ndim == 2:
        # whole bytes: each lane's little-endian two's-complement bytes, lanes in order, read
        # as one little-endian integer per word (ResNet-18's weights: 4 s -> 0.1 s)
        u = np.ascontiguousarray(np.ascontiguousarray(a, dtype=np.int64).view(np.uint64), dtype="<u8")
        le = u.view(np.uint8).reshape(*a.shape, 8)
        flat = np.ascontiguousarray(le[:, :, : bits // 8]).reshape(a.shape[0], -1)
        return [int.from_bytes(r.tobytes(), "little") for r in flat]
    mask = (1 << bits) - 1
    return [sum((int(v) & mask) << (i * bits) for i, v in enumerate(row)) for row in a.tolist()]


def mem_text(words: list[int], width: int) -> str:
    """``$readmemh`` text: one hex word of ``width`` bits per line."""
    digits = (width + 3) // 4
    return "".join(f"{w:0{digits}x}\n" for w in words)


def rq_rows(mult, shift, n: int) -> np.ndarray:
    """Per-channel 32-bit requantisation words ``{m[23:0], s}`` for ``n`` channels (the zero
    point and clamp are the layer's: `rq_params`)."""
    m = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (n,))
    s = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (n,))
    if np.any(m < 0) or np.any(m >= 1 << MULT_BITS) or np.any(s < 0) or np.any(s > 63):
        raise UnsupportedError(f"requantisation multiplier/shift outside the RTL's range (m in [0, 2^{MULT_BITS}), "
                               f"s in [0, 63]): m {int(m.min())}..{int(m.max())}, s {int(s.min())}..{int(s.max())}")
    return np.array([(int(a) & 0xFFFFFF) << 8 | (int(b) & 0xFF) for a, b in zip(m, s, strict=True)], dtype=object)


def uniform_rq(bias: int, mult, shift) -> dict[str, int | str]:
    """An average pool's ``UNIFORM``, ``B_CONST`` and ``RQ_CONST`` (vvu.sv): its bias' and
    requantisation word, the same for every channel (a per-tensor activation's pool), as
    module constants instead of memories."""
    word = int(rq_rows(np.asarray(mult).reshape(-1)[:1], np.asarray(shift).reshape(-1)[:1], 1)[0])
    return {"UNIFORM": 1, "B_CONST": int(bias), "RQ_CONST": f"32'h{word:08x}"}


def rq_params(zp, lo, hi) -> dict[str, int]:
    """A requantising module's ``RQ_ZP``, ``RQ_LO``, ``RQ_HI``: the layer's output zero point
    and clamp, one for all its channels (the quantiser's are scalars)."""
    return {"RQ_ZP": int(zp), "RQ_LO": int(lo), "RQ_HI": int(hi)}


def _mvu_files(ident: str, mat: np.ndarray, bias, rq: np.ndarray, pe: int, simd: int) -> dict[str, str]:
    """The mvu's memory files; a ``pe`` that does not divide the rows pads them (padded folds:
    zero weights, the last row's bias and requantiser; `fold.pad_rows`)."""
    mat, bias, rq = pad_rows(mat, pe), pad_rows(np.asarray(bias), pe, True), pad_rows(rq, pe, True)
    mh, mw = mat.shape
    nf, sf = mh // pe, mw // simd
    wl = np.asarray(mat, np.int64).reshape(nf, pe, sf, simd).transpose(0, 2, 1, 3).reshape(nf * sf, pe * simd)
    return {f"{ident}_w.mem": mem_text(pack(wl, 8), 8 * pe * simd),
            f"{ident}_b.mem": mem_text(pack(np.asarray(bias, np.int64).reshape(nf, pe), 32), 32 * pe),
            f"{ident}_rq.mem": mem_text(pack(rq.reshape(nf, pe), 32), 32 * pe)}


def _vector_files(ident: str, w, bias, rq, c: int, p: int, j: int = 1) -> dict[str, str]:
    out = {}
    if w is not None:  # j·p lanes per word (parallel window)
        out[f"{ident}_w.mem"] = mem_text(pack(np.asarray(w, np.int64).reshape(-1, j * p), 8), 8 * j * p)
    if bias is not None:
        out[f"{ident}_b.mem"] = mem_text(pack(np.asarray(bias, np.int64).reshape(c // p, p), 32), 32 * p)
        out[f"{ident}_rq.mem"] = mem_text(pack(rq.reshape(c // p, p), 32), 32 * p)
    return out


def _affine(q: dict, ident: str, c: int, p: int, where: str) -> RtlLayer:
    """ChannelAffine: multipliers (25-bit signed in 32-bit words), biases (int64) and ``{s, zp_out, lo, hi}`` per lane."""
    mult = np.broadcast_to(np.asarray(q["mult"], np.int64).reshape(-1), (c,))
    bias = np.broadcast_to(np.asarray(q["bias"], np.int64).reshape(-1), (c,))
    s = np.broadcast_to(np.asarray(q["shift"], np.int64).reshape(-1), (c,))
    if np.any(np.abs(mult) >= 1 << MULT_BITS) or np.any(s < 0) or np.any(s > 63):
        raise UnsupportedError(f"{where}: multiplier/shift outside the RTL's range (|mult| < 2^{MULT_BITS}, "
                               "s in [0, 63]): "
                               f"mult {int(mult.min())}..{int(mult.max())}, s {int(s.min())}..{int(s.max())}")
    cfg = np.array([(int(a) & 0xFF) << 24 | (int(q["zp_out"]) & 0xFF) << 16 | (int(q["lo"]) & 0xFF) << 8
                    | (int(q["hi"]) & 0xFF) for a in s], dtype=object)
    files = {f"{ident}_m.mem": mem_text(pack(mult.reshape(c // p, p), 32), 32 * p),
             f"{ident}_b.mem": mem_text(pack(bias.reshape(c // p, p), 64), 64 * p),
             f"{ident}_rq.mem": mem_text(pack(cfg.reshape(c // p, p), 32), 32 * p)}
    return RtlLayer("channel_affine", dict(C=c, P=p, ZP_IN=int(q["zp_in"])) | _names(ident, files), files)


def _rq_of(q: dict) -> dict[str, int]:
    """`rq_params` of a conv or dense layer's quantisation (its output zero point and clamp)."""
    return rq_params(q["zp_out"], q["lo"], q["hi"])


def _names(ident: str, files: dict[str, str]) -> dict[str, str]:
    keys = {"w": "W_FILE", "m": "M_FILE", "b": "B_FILE", "rq": "RQ_FILE"}
    return {keys[f[len(ident) + 1:-4]]: f for f in files}


def rtl_shuffle(lay: Layer, c: int, p: int) -> RtlLayer:
    """The `channel_shuffle` instance of a shuffle layer (``C = c`` channels at ``p`` lanes).

    The permutation is the one of the layer's HLS array ``<ident>_perm`` (`shuffle_layer`):
    output channel ``k`` is input channel ``perm[k]``, passed as the sized literal ``PERM``.
    """
    perm = [int(v) for v in re.findall(r"-?\d+", lay.arrays[0].split("=", 1)[1])]
    if sorted(perm) != list(range(c)) or c % p:
        raise UnsupportedError(f"{lay.ident}: channel shuffle of {c} channels at {p} lanes: "
                               f"{len(perm)} indices that are no permutation of the channels")
    word = sum(k << (16 * i) for i, k in enumerate(perm))
    return RtlLayer("channel_shuffle", dict(C=c, P=p, PERM=f"{16 * c}'h{word:0{4 * c}x}"))


def tap_table(t: np.ndarray) -> str:
    """A bilinear tap table (`ops.resize_linear.taps`: rows ``i0, i1, w0, w1``) as the sized
    literal ``bilinear.sv`` reads: entry ``k`` at bits ``48k``: ``{i0, i1, w1}``, 16 bits each."""
    v = 0
    for k, (i0, i1, _, w1) in enumerate(np.asarray(t, np.int64).tolist()):
        v |= ((i0 << 32) | (i1 << 16) | w1) << (48 * k)
    return f"{48 * len(t)}'h{v:x}"


RQ_LUT_MODULES = ("conv", "mvu", "dwconv", "avgpool", "gap", "eltwise")
RING_MODULES = ("conv", "dwconv", "maxpool", "avgpool")
"""Modules whose window generator takes a ring's rows (``RING``: the plan's ``short_ring``)."""
"""Modules with an ``RQ_LUT`` parameter (requantisers' products in LUTs: rq_lane.sv, eltwise.sv)."""


def rtl_layer(g: Graph, node: Node, lay: Layer, pe: int, simd: int, co_range: tuple[int, int] | None) -> RtlLayer:
    """The RTL instance of ``lay`` (node ``node``, folding ``pe``/``simd`` from the plan); a
    layer with LUT requantisers (``lay.rq_lut``) sets its module's ``RQ_LUT = 1``.

    Raises:
        UnsupportedError: the op or folding has no RTL module yet (pad, constant
            operands, averaging that excludes padding), or no LUT requantiser.
    """
    r = _rtl_layer(g, node, lay, pe, simd, co_range)
    if lay.ring:  # a short window ring (the plan's short_ring): swg.sv RING rows
        if r.module not in RING_MODULES:
            raise UnsupportedError(f"node '{node.name}' ({node.op}): module {r.module} has no window ring")
        r.params["RING"] = lay.ring
        if lay.ring_uram:  # in URAM (the plan's ring_uram): swg.sv RING_URAM ring words a URAM word
            r.params["RING_URAM"] = lay.ring_uram
    if lay.rq_lut:
        if r.module not in RQ_LUT_MODULES:
            raise UnsupportedError(f"node '{node.name}' ({node.op}): module {r.module} has no LUT requantiser")
        r.params["RQ_LUT"] = 1
    return r


def _rtl_layer(g: Graph, node: Node, lay: Layer, pe: int, simd: int, co_range: tuple[int, int] | None) -> RtlLayer:
    """`rtl_layer` without the requantisers' placement."""
    q = node.attrs.get("q", {})
    acts = g.act_inputs(node)
    x = g.shape(acts[0]) if acts else ()
    ho, wo, co = hwc(g.shape(node.outputs[0]))
    op, ident = node.op, lay.ident
    where = f"node '{node.name}' ({op})"
    if op == "Dense" and (simd != lay.in_lanes[0] or padded_out_lanes(lay.out_elems, pe) != lay.out_lanes):
        raise UnsupportedError(f"{where}: pe={pe}, simd={simd} reads {lay.in_lanes[0]} lanes: "
                               "the RTL mvu reads simd lanes")
    if op == "Conv":
        h, w, c = hwc(x)
        win = _window(node, h, w, ho, wo)
        wq = np.asarray(q["w"])
        n = wq.shape[0]
        rq = rq_rows(q["mult"], q["shift"], n)
        bias = np.broadcast_to(np.asarray(q["bias"], np.int64).reshape(-1), (n,))
        k = win["KH"] * win["KW"]
        if lay.call.startswith("bb::dwconv2d"):
            j = simd // pe  # parallel window: j taps per beat
            if simd % pe or k % j:
                raise UnsupportedError(f"{where}: depthwise simd {simd} is not pe {pe} times a divisor of "
                                       f"the window size {k}")
            # vvu word kb·C/P + g, lane jj·P + i = w[kb·J + jj][g·P + i]
            wk = wq.reshape(c, k).T.reshape(k // j, j, c // pe, pe).transpose(0, 2, 1, 3).reshape(-1, j * pe)
            files = _vector_files(ident, wk, bias, rq, c, pe, j)
            params = dict(C=c, P=pe, **win, PAD_VAL=int(q["zp_in"]), J=j) | _rq_of(q) | _rom_style(lay)
            if lay.pack == 0:  # LUT multipliers in the vvu (lut_mul.sv)
                params["PACK"] = 0
            return RtlLayer("dwconv", params | _names(ident, files), files)
        lo, hi = co_range or (0, n)
        groups = lay.groups  # (> 1: a grouped conv computed group by group; 1: dense)
        cg = c // groups
        wide = lay.wide  # (whole pixels into the swg, a group a slice: conv.sv WIDE)
        # pixel copies (mmv > 1): M mvus, output one whole pixel (CO lanes) per beat; padded
        # folds: the trimming converter's lanes after the mvu (codegen/layers.py `_trimmed`)
        if out_lanes(hi - lo, pe, lay.mmv, lay.po) != lay.out_lanes \
                or lay.in_lanes[0] != (c if wide else min(simd, cg) * lay.px) or (
                simd > cg and (simd % cg or k % (simd // cg))) or (
                groups > 1 and (co_range is not None or (n // groups) % pe or lay.mmv > 1 or lay.px > 1)):
            raise UnsupportedError(f"{where}: pe={pe}, simd={simd}, mmv={lay.mmv} with C={c}, window {k}, "
                                   f"{groups} group(s): simd must divide C/group or be C/group·j with j | {k} "
                                   "(parallel window), input at min(simd, C/group) lanes, output at pe lanes "
                                   "(CO lanes with mmv > 1); a grouped conv whole, pe | Co/group, one copy")
        # Parallel window (simd = C·j): the swg emits j taps of C lanes per beat, so the mvu's
        # columns (ky·KW + kx)·C + c keep the order of the plain layout below.
        mat = (grouped_matrix(wq) if groups > 1 else conv_matrix(wq, node.attrs["group"]))[lo:hi]
        files = _mvu_files(ident, mat, bias[lo:hi], rq[lo:hi], pe, simd)
        params = dict(C=c, CO=-(-(hi - lo) // pe) * pe, SIMD=simd, PE=pe, **win, PAD_VAL=int(q["zp_in"])) | _rq_of(q)
        if groups > 1:
            params["GROUPS"] = groups
        if wide:
            params["WIDE"] = 1
        if lay.mmv > 1:  # every copy reads the same memories (hw/rtl/conv.sv)
            params["M"] = lay.mmv
        if lay.px > 1:  # two pixels a beat in (and with PO = 2 out: two halves of M/2 copies)
            params |= dict(PX=lay.px, PO=lay.po)
        if lay.pack != 1:  # DSP packing (mac2.sv) or LUT multipliers (PACK = 0, lut_mul.sv)
            params["PACK"] = lay.pack
        return RtlLayer("conv", params | _rom_style(lay) | _names(ident, files), files)
    if op == "Dense":
        wq = np.asarray(q["w"])
        n = wq.shape[0]
        lo, hi = co_range or (0, n)
        rq = rq_rows(q["mult"], q["shift"], n)
        bias = np.broadcast_to(np.asarray(q["bias"], np.int64).reshape(-1), (n,))
        files = _mvu_files(ident, wq[lo:hi], bias[lo:hi], rq[lo:hi], pe, simd)
        params = dict(MW=wq.shape[1], MH=-(-(hi - lo) // pe) * pe, SIMD=simd, PE=pe) | _rq_of(q) | (
            {"PACK": lay.pack} if lay.pack != 1 else {})
        return RtlLayer("mvu", params | _rom_style(lay) | _names(ident, files), files)
    p = pe
    if op == "ChannelAffine":
        return _affine(q, ident, co, p, where)
    if op in LUT_KINDS:
        files = {f"{ident}_lut.mem": mem_text(pack(np.asarray(q["lut"], np.int64).reshape(256, 1), 8), 8)}
        return RtlLayer("lut_act", dict(P=p, LUT_FILE=f"{ident}_lut.mem"), files)
    taps = {"J": simd // p} if simd > p else {}  # a pool's parallel window: J taps a beat (swg/vvu)
    if op == "MaxPool":
        h, w, c = hwc(x)
        return RtlLayer("maxpool", dict(C=c, P=p, **_window(node, h, w, ho, wo), PAD_VAL=-128) | taps)
    if op == "AveragePool":
        h, w, c = hwc(x)
        win = _window(node, h, w, ho, wo)
        pads = node.attrs["pads"]
        extra = win["PB"] != pads[2] or win["PR"] != pads[3]
        if extra or (any(pads) and not node.attrs.get("count_include_pad", 0)):
            raise UnsupportedError(f"{where}: windows with different counts (padding excluded or ceil_mode): "
                                   "the RTL twin averages over the full window only")
        k = win["KH"] * win["KW"]
        mult, shift = np.asarray(q["mult"]).reshape(-1), np.asarray(q["shift"]).reshape(-1)
        params = dict(C=c, P=p, **win, PAD_VAL=int(q["zp_in"])) | rq_params(q["zp_out"], -128, 127) | taps
        return RtlLayer("avgpool", params | uniform_rq(-k * int(q["zp_in"]), mult[k - 1], shift[k - 1]))
    if op == "GlobalAveragePool":
        h, w, c = hwc(x)
        return RtlLayer("gap", dict(C=c, P=p, H=h, W=w) | rq_params(q["zp_out"], -128, 127)
                        | uniform_rq(-h * w * int(q["zp_in"]), q["mult"], q["shift"]))
    if op == "GlobalMaxPool":
        h, w, c = hwc(x)
        return RtlLayer("gmaxpool", dict(C=c, P=p, H=h, W=w))
    if op == "Slice":
        h, w, c = hwc(x)
        st = node.attrs["start"]
        y0, x0 = (st[2], st[3]) if len(x) == 4 else (0, 0)
        return RtlLayer("slice", dict(C=c, CO=co, C0=st[1], P=p, H=h, W=w, Y0=y0, X0=x0, HO=ho, WO=wo))
    if op == "Resize":
        h, w, c = hwc(x)
        sh, sw = node.attrs["scales"]
        return RtlLayer("upsample", dict(C=c, P=p, H=h, W=w, SH=sh, SW=sw))
    if op == "ResizeBilinear":
        h, w, c = hwc(x)
        th, tw = REGISTRY["ResizeBilinear"].axis_taps(node, x)
        return RtlLayer("bilinear", dict(C=c, P=p, H=h, W=w, HO=ho, WO=wo, TY=tap_table(th), TX=tap_table(tw)))
    if op == "LRN":
        h, w, c = hwc(x)
        t = np.asarray(q["table"], np.int64)
        files = {f"{ident}_tab.mem": mem_text(pack(t.reshape(-1, 1), 16), 16)}
        return RtlLayer("lrn", dict(C=c, P=p, BEFORE=q["before"], AFTER=q["after"], MBITS=q["mbits"],
                                    SHIFT=q["shift"], ZP_IN=q["zp_in"], ZP_OUT=q["zp_out"], ENTRIES=len(t),
                                    TAB_FILE=f"{ident}_tab.mem"), files)
    if op == "DepthToSpace":
        h, w, c = hwc(x)
        return RtlLayer("depth2space", dict(C=c, P=p, H=h, W=w, B=node.attrs["blocksize"]))
    if op == "ZeroInsert":
        h, w, c = hwc(x)
        (sh, sw), pd = node.attrs["factor"], node.attrs["pads"]
        return RtlLayer("zeroinsert", dict(C=c, P=p, H=h, W=w, SH=sh, SW=sw, PT=pd[0], PL=pd[1], PB=pd[2],
                                           PR=pd[3], ZP=int(q["pad_value"])))
    if op in ("Add", "Sub") and not q.get("consts"):
        params = dict(P=p, OP=0, MA=int(q["mult_a"]), MB=int(q["mult_b"]), ZA=int(q["zp_a"]), ZB=int(q["zp_b"]),
                      ZY=int(q["zp_out"]), S=int(q["shift"]), LO=int(q["lo"]), HI=int(q["hi"]))
        return RtlLayer("eltwise", params, two_inputs=True)
    if op == "Mul" and not q.get("consts"):
        params = dict(P=p, OP=1, M=int(q["mult"]), ZA=int(q["zp_a"]), ZB=int(q["zp_b"]), ZY=int(q["zp_out"]),
                      S=int(q["shift"]), LO=int(q["lo"]), HI=int(q["hi"]))
        return RtlLayer("eltwise", params, two_inputs=True)
    raise UnsupportedError(f"{where}: no RTL module for this op in the RTL twin yet (HLS only)")


#: Address bits of an off-chip weight port (the generated top's ``m_axi_<layer>_araddr``).
AXI_ADDR_W = 32


def rtl_offchip(g: Graph, node: Node, lay: Layer, pe: int, simd: int, co_range: tuple[int, int] | None,
                beat_bytes: int, base: int) -> RtlLayer:
    """The ``conv_offchip`` instance of a conv or dense layer whose weights the plan keeps in
    board memory (``weights == "ddr"``), reading beats of ``beat_bytes`` from byte ``base``;
    ``conv_band`` (its parameters and ``BANDS``) for a conv the plan computes in row bands.

    A Dense is the module's dense case: ``H`` vectors of ``C = MW`` values, a 1×1 kernel.

    Raises:
        UnsupportedError: a folding the module does not build (simd not dividing C, the
            beat and a weight word not dividing one another, a fold's tile not whole beats).
    """
    q = node.attrs["q"]
    where = f"node '{node.name}' ({node.op}, weights off chip)"
    wq = np.asarray(q["w"])
    n = wq.shape[0]
    lo, hi = co_range or (0, n)
    if node.op == "Conv":
        h, w, c = hwc(g.shape(g.act_inputs(node)[0]))
        ho, wo, _ = hwc(g.shape(node.outputs[0]))
        win = _window(node, h, w, ho, wo)
        mat = conv_matrix(wq, node.attrs["group"])[lo:hi]
        pad = int(q["zp_in"])
    elif node.op == "Dense":
        c = int(wq.shape[1])
        vectors = max(1, int(np.prod(g.shape(g.act_inputs(node)[0]))) // c)
        win = dict(H=vectors, W=1, KH=1, KW=1, SH=1, SW=1, DH=1, DW=1, PT=0, PL=0, PB=0, PR=0)
        mat, pad = wq[lo:hi], 0
    else:
        raise UnsupportedError(f"{where}: only a conv or dense layer can keep its weights off chip")
    word = pe * simd
    cols = mat.shape[1]
    if c % simd or (hi - lo) % pe or (word % beat_bytes and beat_bytes % word) or (cols * pe) % beat_bytes:
        raise UnsupportedError(f"{where}: pe={pe}, simd={simd}, C={c}, {beat_bytes}-byte beats: conv_offchip "
                               "needs simd | C, the beat and pe·simd dividing one another and every fold's "
                               f"tile ({cols * pe} bytes) whole beats")
    rq = rq_rows(q["mult"], q["shift"], n)
    bias = np.broadcast_to(np.asarray(q["bias"], np.int64).reshape(-1), (n,))
    files = _mvu_files(lay.ident, mat, bias[lo:hi], rq[lo:hi], pe, simd)
    files.pop(f"{lay.ident}_w.mem")  # the weights are the image below, not a ROM
    nf, sf = (hi - lo) // pe, cols // simd
    image = np.asarray(mat, np.int64).reshape(nf, pe, sf, simd).transpose(0, 2, 1, 3).astype(np.int8).tobytes()
    params = dict(C=c, CO=hi - lo, SIMD=simd, PE=pe, **win, PAD_VAL=pad, DATA_W=8 * beat_bytes,
                  ADDR_W=AXI_ADDR_W, W_BASE=f"64'h{base:x}", ISLOTS=lay.in_slots, OSLOTS=lay.out_slots) | _rq_of(q)
    if lay.pack == 2:  # DSP packing (mac2.sv), as the on-chip mvu
        params["PACK"] = 2
    if lay.bands > 1:  # row bands: a band splitter in front of the same module (docs/rtl.md, "Row bands")
        return RtlLayer("conv_band", params | {"BANDS": lay.bands} | _names(lay.ident, files), files, image=image)
    return RtlLayer("conv_offchip", params | _names(lay.ident, files), files, image=image)


@dataclass(frozen=True)
class StageInst:
    """A ``ddr_stage`` in front of an off-chip layer whose plan has ``in_stage``: its parameters
    (SV literal text), AXI port, data bits and the testbench's entry for its scratch memory."""

    params: list[tuple[str, str]]
    port: str
    data_w: int
    note: str
    manifest: dict


def stage_inst(lay: Layer, lanes: int, beats: int, memory: tuple[float, int, int] | None) -> StageInst:
    """The DDR frame stage of off-chip layer ``lay`` (frames of ``beats`` beats of ``lanes`` lanes):
    frames of the layer's input beats into the scratch regions the host reserves in the core's
    board-memory image (``lay.stage_offset``, ``lay.stage_region`` bytes apart; the HLS kernel
    rings through `STAGE_REGIONS` of them, the module through 2), over the read-write master
    ``m_axi_<layer>_stage``; ``memory`` is the board memory as the planner modelled it."""
    from bbgrap_hls.model.stage import STAGE_REGIONS

    if memory is None:
        raise UnsupportedError(f"{lay.ident}: a DDR frame stage, but the board has no memory for its core")
    return _stage(f"m_axi_{lay.ident}_stage", lanes, beats, lay.stage_offset, lay.stage_region, 2,
                  STAGE_REGIONS, memory, {"layer": lay.ident},
                  f"{lay.ident}: DDR frame stage, {beats} beats a frame at {lay.stage_offset:#x}")


def fifo_stage_inst(f, memory: tuple[float, int, int] | None) -> StageInst:
    """The ``ddr_stage`` of a FIFO the plan puts in board memory (``f``: the core's
    `bbgrap_hls.codegen.ports.DdrFifo`, the HLS call ``bb::ddr_fifo<F_<ident>>``; docs/cost-model.md,
    "Skip FIFOs in board memory"): regions of ``f.beats`` beats of ``f.lanes`` lanes (``f.chunks`` a
    frame: the stage's "frame" is a region) through a
    ring of the plan's ``f.regions`` regions of ``f.region`` bytes from ``f.offset`` of the core's
    board-memory image (where the HLS kernel's ring is), over the read-write master
    ``m_axi_fifo_<ident>``."""
    if memory is None:
        raise UnsupportedError(f"{f.ident}: a FIFO in board memory, but the board has no memory for its core")
    per = f"{f.beats} beats a frame" if f.chunks == 1 else f"a frame in {f.chunks} regions of {f.beats} beats"
    return _stage(f"m_axi_fifo_{f.ident}", f.lanes, f.beats, f.offset, f.region, f.regions, f.regions, memory,
                  {"fifo": f.ident}, f"{f.ident}: FIFO in board memory, {per}, {f.regions} regions at "
                  f"{f.offset:#x} ({f.note})", chunks=f.chunks)


def _stage(port: str, lanes: int, beats: int, base: int, region: int, regions: int, scratch_regions: int,
           memory: tuple[float, int, int], owner: dict, note: str, chunks: int = 1) -> StageInst:
    """A ``ddr_stage`` of the built size (`STAGE_BURST`, `STAGE_WDEPTH`, `STAGE_ODEPTH`) ringing
    through ``regions`` regions of ``region`` bytes from ``base``; the testbench's scratch area
    (tb/rtl.json "stages", with ``owner``'s keys) holds ``scratch_regions`` of them."""
    from bbgrap_hls.model.stage import STAGE_BURST, STAGE_ODEPTH, STAGE_WDEPTH, stage_beat_bytes

    beat = stage_beat_bytes(lanes)
    params = [("LANES", str(lanes)), ("FRAME_BEATS", str(beats)), ("DATA_W", str(8 * beat)),
              ("ADDR_W", str(AXI_ADDR_W)), ("BASE", f"64'h{base:x}"),
              ("REGION_BYTES", str(region)), ("REGIONS", str(regions)), ("BURST", str(STAGE_BURST)),
              ("WDEPTH", str(STAGE_WDEPTH)), ("ODEPTH", str(STAGE_ODEPTH))]
    if chunks > 1:  # a stream frame in several regions: tlast on every chunks-th region's end
        params.append(("CHUNKS", str(chunks)))
    rate, latency, _ = memory
    manifest = {"port": port, **owner, "base": base, "bytes": scratch_regions * region, "beat_bytes": beat,
                "rate": rate, "latency": int(latency), "frame_beats": beats}
    return StageInst(params, port, 8 * beat, note, manifest)
