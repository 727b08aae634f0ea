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

WINDOW_KIND = {"conv": "conv", "dwconv": "dwconv", "maxpool": "maxpool", "avgpool": "avgpool"}


def window_geometry(p: dict) -> Geometry:
    """The model's geometry of a window module from its HDL parameters."""
    dh, dw = p.get("DH", 1), p.get("DW", 1)
    khe, kwe = (p["KH"] - 1) * dh + 1, (p["KW"] - 1) * dw + 1
    hp, wp = p["H"] + p["PT"] + p["PB"], p["W"] + p["PL"] + p["PR"]
    return Geometry(h=p["H"], w=p["W"], c=p["C"], ho=(hp - khe) // p["SH"] + 1,
                    wo=(wp - kwe) // p["SW"] + 1, co=p.get("CO", p["C"]), kh=khe, kw=kwe,
                    sh=p["SH"], sw=p["SW"], dh=dh, dw=dw, pads=(p["PT"], p["PL"], p["PB"], p["PR"]))


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
        return block_cost("dense", g, p["PE"], p["SIMD"]), p["nvec"] * p["MW"] // p["SIMD"]
    if module in WINDOW_KIND:
        g = window_geometry(p)
        if module == "conv":
            pe, simd, lanes = p["PE"], p["SIMD"], min(p["SIMD"], p["C"])
        else:
            pe, simd, lanes = p["P"], p["P"] * p.get("J", 1), p["P"]
        mmv = p.get("M", 1) if module == "conv" else 1  # pixel copies
        return block_cost(WINDOW_KIND[module], g, pe, simd, mmv=mmv), g.h * g.w * g.c // lanes
    if module == "gap":
        g = Geometry(h=p["H"], w=p["W"], c=p["C"], ho=1, wo=1, co=p["C"])
        return block_cost("gap", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module in ("add", "mul"):
        g = _pixels(p["pix"], p["c"])
        return block_cost("eltwise2", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "concat":
        g = _pixels(p["pix"], p["C0"] + p["C1"], inputs=(p["C0"], p["C1"]))
        return block_cost("concat", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module == "channel_shuffle":
        g = _pixels(p["pix"], p["C"])
        return block_cost("shuffle", g, p["P"], p["P"]), g.in_elems // p["P"]
    if module in ("lut_act", "channel_affine"):
        g = _pixels(p["pix"], p["C"])
        kind = "lut" if module == "lut_act" else "affine"
        return block_cost(kind, g, p["P"], p["P"]), g.in_elems // p["P"]
    raise KeyError(f"module '{module}' is not a block of the cost model")


def mmv_reads(p: dict) -> tuple[int, int, int, int, bool]:
    """``(ready0, sf, nf, n, direct)`` of a conv: cycle (from the frame's first input beat)
    from which the swg may read the first window, beats per window, neuron folds, windows
    per frame, and whether the 1x1 path skips the swg."""
    g = window_geometry(p)
    sf, nf = p["KH"] * p["KW"] * p["C"] // p["SIMD"], p["CO"] // p["PE"]
    cg = p["C"] // min(p["SIMD"], p["C"])
    direct = g.kh == g.kw == g.sh == g.sw == 1 and not any(g.pads)
    ready0 = 0 if direct else g.kh * g.wp * cg - (g.pads[0] * g.wp + g.pads[1]) * cg
    return ready0, sf, nf, g.ho * g.wo, direct


def mmv_conv(p: dict, frames: int = 4) -> tuple[float, int, int]:
    """``(ii, latency, first)`` of a conv with ``M > 1`` pixel copies (``hw/rtl/conv.sv``).

    Window ``w`` (counted across frames, first input beat at cycle 0) is first read at
    ``R(w) = ready0 + (w div M)·SF·NF + (w mod M)·SF``: a copy reads its SF beats in fold 0
    and takes its next window SF·NF cycles later. Its whole pixel leaves at
    ``R(w) + SF·NF + 6``: the swg's output register 1, the copy's SF·NF folds, the mvu's
    pipeline 5 after the last fold, the dwc gather 1, the merge 0 (without the swg, the
    1x1 DIRECT path: ``ready0 = 0`` and one cycle less). ``first`` is the cycle of the first output
    beat, ``latency`` counts frame 0's first input beat to its last output beat (both
    counted), ``ii`` the mean distance of the frame ends 1..``frames``-1 (what
    `harness.Timing` measures). Exact when the swg is never starved: the input offered every
    cycle and reading an output row takes at least ``max(SH, TAIL)·Wp·C/lanes`` cycles, the
    writing of the rows it frees (a sufficient condition, checked here).
    """
    m = p["M"]
    g = window_geometry(p)
    ready0, sf, nf, n, direct = mmv_reads(p)
    cg = p["C"] // min(p["SIMD"], p["C"])
    if not direct and (g.wo // m) * sf * nf < max(g.sh, g.hp - (g.ho - 1) * g.sh) * g.wp * cg:
        raise ValueError("mmv_conv: the window generator may starve the copies; no exact formula")
    def done(w: int) -> int:  # cycle of window w's pixel at the output
        return ready0 + (w // m) * sf * nf + (w % m) * sf + sf * nf + (5 if direct else 6)
    ends = [done(f * n + n - 1) for f in range(frames)]
    return (ends[-1] - ends[1]) / (frames - 2), ends[0] + 1, done(0)


def predict(module: str, p: dict) -> tuple[int, int]:
    """``(ii, latency)`` the cost model predicts for ``module`` with test parameters ``p``."""
    if module == "conv" and p.get("M", 1) > 1:
        ii, latency, _ = mmv_conv(p)
        if mmv_reads(p)[4]:  # the 1x1 DIRECT path: the planner gives it no copies
            return ii, latency
        # The cost model, exact when M divides the frame's pixels; else frames alternate and
        # the testbench's mean over frames 1..3 is not the model's mean over M frames.
        cost, in_beats = block(module, p)
        m_ii, m_latency = _block(cost, in_beats)
        return (m_ii if mmv_reads(p)[3] % p["M"] == 0 else ii), m_latency
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
    if module == "repeat_pixel":  # not a block of the model: the broadcast operand of Add/Mul
        beats = p["C"] // p["P"]
        ii = p["PIXELS"] * beats
        return _block(BlockCost(ii=ii, depth=RTL_DEPTH["repeat"], span=ii - 1), beats)
    cost, in_beats = block(module, p)
    return _block(cost, in_beats)
