"""Predicted cycles of every module testbench, taken from the cost model (`bbgrap_hls.model`).

``predict(module, params)`` maps a module's test parameters (HDL parameters upper case,
test sizes lower case, as in ``sim/cases.py``) to the model's geometry and folding and
returns ``(ii, latency)``: ``ii`` cycles per frame in steady state, ``latency`` cycles from a
frame's first input beat to its last output beat, both counted, with an empty pipeline and
the input offered every cycle. The testbenches check both exactly (no tolerance).
"""

from __future__ import annotations

from bbgrap_hls.model import (
    RTL_DEPTH,
    BlockCost,
    block_cost,
    buffer_cost,
    fifo_profile,
    link_cost,
    out_profile,
    width_converter_ii,
)
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.timing import short_ring_rows

WINDOW_KIND = {"conv": "conv", "dwconv": "dwconv", "maxpool": "maxpool", "avgpool": "avgpool"}


def window_geometry(p: dict) -> Geometry:
    """The model's geometry of a window module from its HDL parameters."""
    dh, dw = p.get("DH", 1), p.get("DW", 1)
    khe, kwe = (p["KH"] - 1) * dh + 1, (p["KW"] - 1) * dw + 1
    hp, wp = p["H"] + p["PT"] + p["PB"], p["W"] + p["PL"] + p["PR"]
    return Geometry(h=p["H"], w=p["W"], c=p["C"], ho=(hp - khe) // p["SH"] + 1,
                    wo=(wp - kwe) // p["SW"] + 1, co=p.get("CO", p["C"]), kh=khe, kw=kwe,
                    sh=p["SH"], sw=p["SW"], dh=dh, dw=dw, pads=(p["PT"], p["PL"], p["PB"], p["PR"]),
                    group=p.get("GROUPS", 1))


def zeroinsert_geometry(p: dict) -> Geometry:
    """The model's geometry of a zeroinsert module (factors SH, SW, pads PT, PL, PB, PR)."""
    ho = p["PT"] + (p["H"] - 1) * p["SH"] + 1 + p["PB"]
    wo = p["PL"] + (p["W"] - 1) * p["SW"] + 1 + p["PR"]
    return Geometry(h=p["H"], w=p["W"], c=p["C"], ho=ho, wo=wo, co=p["C"], pads=(p["PT"], p["PL"], p["PB"], p["PR"]))


def _pixels(pix: int, c: int, co: int | None = None, inputs: tuple[int, ...] = ()) -> Geometry:
    """``pix`` pixels of ``c`` channels as a column image (elementwise blocks)."""
    return Geometry(h=pix, w=1, c=c, ho=pix, wo=1, co=c if co is None else co, in_channels=inputs)


def _block(cost: BlockCost, in_beats: int) -> tuple[int, int]:
    """(ii, latency) of a block fed one beat per cycle from cycle 0."""
    _, b = out_profile(0, in_beats - 1, in_beats, cost.lead, cost.span, cost.tail, cost.fill,
                       cost.depth)
    return cost.ii, b + 1


def _stream(beats: int, depth: int) -> tuple[int, int]:
    """(ii, latency) of a one-beat-per-cycle unit of pipeline ``depth``."""
    return _block(BlockCost(ii=beats, depth=depth, span=beats - 1), beats)


def block(module: str, p: dict) -> tuple[BlockCost, int]:
    """The model's cost of a block module and its input beats per frame."""
    if module == "mvu":
        g = Geometry(h=p["nvec"], w=1, c=p["MW"], ho=p["nvec"], wo=1, co=p["MH"])
        return (block_cost("dense", g, p["PE"], p["SIMD"], pack=p.get("PACK", 1) == 2, lut_macs=p.get("PACK", 1) == 0,
                           lutw=p.get("W_STYLE") == "logic", lut_requant=bool(p.get("RQ_LUT", 0))),
                p["nvec"] * p["MW"] // p["SIMD"])
    if module in WINDOW_KIND:
        g = window_geometry(p)
        if module == "conv":
            pe, simd, lanes = p["PE"], p["SIMD"], min(p["SIMD"], p["C"] // p.get("GROUPS", 1))
            if p.get("WIDE"):  # a grouped conv's swg taking whole pixels
                lanes = p["C"]
        else:
            pe, simd, lanes = p["P"], p["P"] * p.get("J", 1), p["P"]
        mmv = p.get("M", 1) if module == "conv" else 1  # pixel copies
        # pixels per input and output beat (conv.sv PX, PO)
        pairs = {k.lower(): p[k] for k in ("PX", "PO") if module == "conv" and p.get(k, 1) != 1}
        pack = module == "conv" and p.get("PACK", 1) == 2  # two output lanes per DSP (mac2.sv)
        lut_macs = module in ("conv", "dwconv") and p.get("PACK", 1) == 0  # products in LUTs (lut_mul.sv)
        lutw = p.get("W_STYLE") == "logic"  # the weight ROM in LUTs
        short = bool(p.get("RING", 0))  # a short window ring (swg.sv RING): the model's rows only
        if short and p["RING"] != short_ring_rows(g):
            raise ValueError(f"RING={p['RING']}: the model's short ring holds {short_ring_rows(g)} rows")
        return (block_cost(WINDOW_KIND[module], g, pe, simd, mmv=mmv, pack=pack, lut_macs=lut_macs, lutw=lutw,
                           lut_requant=bool(p.get("RQ_LUT", 0)), short_ring=short, wide_groups=bool(p.get("WIDE")),
                           **pairs),
                g.h * g.w * g.c // lanes // pairs.get("px", 1))
    if module == "gap":
        g = Geometry(h=p["H"], w=p["W"], c=p["C"], ho=1, wo=1, co=p["C"])
        return block_cost("gap", g, p["P"], p["P"], lut_requant=bool(p.get("RQ_LUT", 0))), g.in_elems // p["P"]
    if module in ("add", "mul"):
        g = _pixels(p["pix"], p["c"])
        return (block_cost("eltwise2", g, p["P"], p["P"], lut_requant=bool(p.get("RQ_LUT", 0))),
                g.in_elems // p["P"])
    if module == "concat":
        g = _pixels(p["pix"], p["C0"] + p["C1"], inputs=(p["C0"], p["C1"]))
        return block_cost("concat", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "channel_shuffle":
        g = _pixels(p["pix"], p["C"])
        return block_cost("shuffle", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "lrn":
        g = _pixels(p["pix"], p["C"])
        return block_cost("lrn", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module in ("lut_act", "channel_affine"):
        g = _pixels(p["pix"], p["C"])
        kind = "lut" if module == "lut_act" else "affine"
        return block_cost(kind, g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "slice":  # the crop as negative pads (model/geometry.py)
        g = Geometry(h=p["H"], w=p["W"], c=p["C"], ho=p["HO"], wo=p["WO"], co=p["CO"],
                     pads=(-p["Y0"], -p["X0"], p["Y0"] + p["HO"] - p["H"], p["X0"] + p["WO"] - p["W"]))
        return block_cost("slice", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "gmaxpool":
        g = Geometry(h=p["H"], w=p["W"], c=p["C"], ho=1, wo=1, co=p["C"])
        return block_cost("gmaxpool", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "upsample":
        g = Geometry(h=p["H"], w=p["W"], c=p["C"], ho=p["H"] * p["SH"], wo=p["W"] * p["SW"], co=p["C"])
        return block_cost("upsample", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "depth2space":
        b = p["B"]
        g = Geometry(h=p["H"], w=p["W"], c=p["C"], ho=p["H"] * b, wo=p["W"] * b, co=p["C"] // (b * b))
        return block_cost("depth2space", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "bilinear":
        g = Geometry(h=p["H"], w=p["W"], c=p["C"], ho=p["H"] * p["sh"], wo=p["W"] * p["sw"], co=p["C"])
        return block_cost("bilinear", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "zeroinsert":
        g = zeroinsert_geometry(p)
        return block_cost("zeroinsert", g, p["P"], p["P"]), g.in_elems // p["P"]
    raise KeyError(f"module '{module}' is not a block of the cost model")


def frames(module: str, p: dict, base: int) -> int:
    """Frames a testbench runs so that its steady state is what the model predicts.

    The harness (`harness.Timing`) averages the frame intervals after the first one, over
    ``frames − 2`` frames. A conv with ``M`` pixel copies deals the windows round robin
    across frames, so its frame intervals repeat only every ``M`` frames and the cost model's
    ii is their mean over ``M`` frames: those runs average over a multiple of ``M`` frames
    (with two output pixels a beat, ``PO = 2``, each half deals over ``M/2`` copies: a
    multiple of ``M`` frames is a multiple of its period too).
    ``base`` is the frames of the case (``cases.FRAMES``).
    """
    m = p.get("M", 1) if module == "conv" else 1
    return 2 + m * -(-(base - 2) // m)


def pointwise_copies(p: dict) -> bool:
    """A conv whose 1x1 stride-1 unpadded path (no window generator) has pixel copies: an RTL
    configuration the planner never generates (the cost model refuses it)."""
    return p.get("M", 1) > 1 and p["KH"] == p["KW"] == p["SH"] == p["SW"] == 1 \
        and not any(p[k] for k in ("PT", "PL", "PB", "PR")) and p.get("PX", 1) == 1


def pointwise_copies_timing(p: dict) -> tuple[int, int, int]:
    """``(ii, latency, first)`` of `pointwise_copies` convs, from ``hw/rtl/conv.sv`` (not
    the cost model, which has no such block). Vector ``w`` (counted across frames, first
    input beat at cycle 0) goes to copy ``w mod M``, which reads its SF beats from cycle
    ``(w div M)·SF·NF + (w mod M)·SF``, runs its NF folds and emits the whole pixel 6 cycles
    after its last fold (the mvu pipeline 5, the pixel collector 1):
    ``(w div M + 1)·SF·NF + (w mod M)·SF + 5``.
    ``ii`` is the model-free mean over ``M`` frames, ``N·SF·NF/M``, an integer here."""
    m, n = p["M"], p["H"] * p["W"]
    sf, nf = p["C"] // p["SIMD"], p["CO"] // p["PE"]
    assert (n * sf * nf) % m == 0, "pointwise_copies_timing: a fractional mean ii"

    def done(w: int) -> int:
        return (w // m + 1) * sf * nf + (w % m) * sf + 5
    return n * sf * nf // m, done(n - 1) + 1, done(0)


def first_output(module: str, p: dict) -> int:
    """Cycle of a block's first output beat from its first input beat (cost model)."""
    if module == "conv" and pointwise_copies(p):
        return pointwise_copies_timing(p)[2]
    cost, in_beats = block(module, p)
    return out_profile(0, in_beats - 1, in_beats, cost.lead, cost.span, cost.tail, cost.fill, cost.depth)[0]


def predict(module: str, p: dict) -> tuple[int, int]:
    """``(ii, latency)`` the cost model predicts for ``module`` with test parameters ``p``
    (a conv with pixel copies: its ii is the mean over ``M`` frames, see `frames`)."""
    if module == "conv" and pointwise_copies(p):
        return pointwise_copies_timing(p)[:2]
    if module == "fifo":
        beats = p["beats"]
        return beats, fifo_profile(0, beats - 1)[1] + 1
    if module == "link":
        beats = p["beats"]
        lk = link_cost(beats * p["WIDTH"], p["LINK_W"], p["LATENCY"], beats)
        return lk.ii, lk.profile(0, beats - 1)[1] + 1
    if module == "offchip_buffer":
        beats = p["bytes"] // p["LANES"]
        bc = buffer_cost(p["bytes"], p["BYTES_PER_CYCLE"], p.get("BARRIER", 0), beats)
        return bc.ii, bc.latency + 1
    if module == "requant":
        return _stream(p["pix"] * p["C"] // p["LANES"], RTL_DEPTH["requant"])
    if module == "dwc":
        return _stream(width_converter_ii(p["bytes"], p["IN"], p["OUT"]), RTL_DEPTH["converter"])
    if module == "trim":  # one beat of the busier side a cycle (padded folds: the input's, NF a pixel)
        co = (p["NF"] - 1) * p["IN"] + p["LAST"]
        out_bytes = p["bytes"] * co // (p["NF"] * p["IN"])
        return _stream(max(p["bytes"] // p["IN"], out_bytes // p["OUT"]), RTL_DEPTH["converter"])
    if module == "repeat_pixel":  # not a block of the model: the broadcast operand of Add/Mul
        beats = p["C"] // p["P"]
        ii = p["PIXELS"] * beats
        return _block(BlockCost(ii=ii, depth=RTL_DEPTH["repeat"], span=ii - 1), beats)
    cost, in_beats = block(module, p)
    return _block(cost, in_beats)


def stage(p: dict):
    """The cost model's `StageCost` of a DDR frame stage case (``sim.cases.STAGE_PARAMS``)."""
    from bbgrap_hls.model.stage import ddr_stage

    return ddr_stage(p["FRAME_BEATS"], p["LANES"], p["rate"], p["lat"], burst=p["BURST"], regions=p["REGIONS"],
                     wdepth=p.get("WDEPTH"), odepth=p.get("ODEPTH"), beat_bytes=p["DATA_W"] // 8)
