"""Predicted cycles per module, from the docs/hardware.md ii formulas.

Used until the cost model (``bbgrap_hls.model``) predicts per-module cycles itself.
``ii`` is cycles per frame in steady state. ``latency`` is cycles from a frame's first
input beat to its last output beat, both counted, with an empty pipeline and no stalls:
the frame's ii plus the block's pipeline depth, where the depth is a property of the
RTL (documented in each module's header) that the cost model should carry.
"""

from __future__ import annotations

from math import ceil

# cycles from a block's last input-side event to its last output beat (RTL property)
DEPTH = {
    "fifo": 2, "requant": 3, "mvu": 5, "vvu": 4, "lut_act": 2, "channel_affine": 4, "add": 2,
    "mul": 2, "concat": 0, "dwc": 1, "link": 0, "swg": 1,
}


def fifo(beats: int) -> tuple[int, int]:
    return beats, beats + DEPTH["fifo"]


def requant(beats: int) -> tuple[int, int]:
    return beats, beats + DEPTH["requant"]


def mvu(nvec: int, mw: int, mh: int, simd: int, pe: int) -> tuple[int, int]:
    """Dense: (C/simd)*(Co/pe) per vector."""
    ii = nvec * (mw // simd) * (mh // pe)
    return ii, ii + DEPTH["mvu"]


def link(beats: int, width: int, link_w: int, latency: int) -> tuple[int, int]:
    """ceil(bits / w), at most one beat per cycle; first beat arrives after ``latency``."""
    per_beat = ceil(width / link_w)
    ii = beats * per_beat
    return ii, (beats - 1) * per_beat + latency + 1


def window_geometry(p: dict) -> dict:
    """Padded and output sizes of a sliding-window block from its HDL parameters."""
    hp, wp = p["H"] + p["PT"] + p["PB"], p["W"] + p["PL"] + p["PR"]
    khe, kwe = (p["KH"] - 1) * p.get("DH", 1) + 1, (p["KW"] - 1) * p.get("DW", 1) + 1
    return {"hp": hp, "wp": wp, "khe": khe, "ho": (hp - khe) // p["SH"] + 1, "wo": (wp - kwe) // p["SW"] + 1}


def window(p: dict, lanes: int, folds: int, depth: int) -> tuple[int, int]:
    """swg feeding a unit that spends ``folds`` cycles per window beat (mvu: Co/pe; vvu: 1).

    ii = max(Hp*Wp*C/lanes, Ho*Wo*K*C/lanes*folds). Latency: the swg writes one beat per
    cycle (padding included) and starts an output row once its rows are written; the last
    output row ends at max over rows oy of (rows of oy written) + (reads left from oy), plus
    the unit's depth and 1 cycle of the swg's output register.
    """
    g = window_geometry(p)
    cg = p["C"] // lanes
    k = p["KH"] * p["KW"]
    write = g["hp"] * g["wp"] * cg
    row_read = g["wo"] * k * cg * folds
    ii = max(write, g["ho"] * row_read)
    before = (p["PT"] * g["wp"] + p["PL"]) * cg  # padding written before the first input beat
    fill = max((oy * p["SH"] + g["khe"]) * g["wp"] * cg - before + (g["ho"] - oy) * row_read
               for oy in range(g["ho"]))
    return ii, fill + depth + 1


def conv(p: dict) -> tuple[int, int]:
    """conv = swg -> mvu; a 1x1 stride-1 unpadded conv is the mvu alone."""
    g = window_geometry(p)
    nf = p["CO"] // p["PE"]
    if p["KH"] == p["KW"] == p["SH"] == p["SW"] == 1 and not (p["PT"] or p["PL"] or p["PB"] or p["PR"]):
        return mvu(g["ho"] * g["wo"], p["C"], p["CO"], p["SIMD"], p["PE"])
    return window(p, p["SIMD"], nf, DEPTH["mvu"])


def pool(p: dict) -> tuple[int, int]:
    """dwconv, maxpool, avgpool = swg -> vvu."""
    return window(p, p["P"], 1, DEPTH["vvu"])


def gap(p: dict) -> tuple[int, int]:
    """H*W*C/p; the output streams during the last input pixel."""
    ii = p["H"] * p["W"] * p["C"] // p["P"]
    return ii, ii + DEPTH["vvu"]


def elementwise(module: str, beats: int) -> tuple[int, int]:
    """add, mul, lut_act, channel_affine, concat: one beat per cycle, ii = H*W*C/p."""
    return beats, beats + DEPTH[module]


def dwc(lanes: int, lanes_in: int, lanes_out: int) -> tuple[int, int]:
    """H*W*C/min(a, b)."""
    ii = lanes // min(lanes_in, lanes_out)
    return ii, ii + DEPTH["dwc"]


def offchip_buffer(beats: int, lanes: int, bytes_per_cycle: int) -> tuple[int, int]:
    """max(beats, ceil(2*H*W*C/B)); the first frame is written whole, then read (barrier)."""
    ii = max(beats, ceil(2 * beats * lanes / bytes_per_cycle))
    return ii, 2 * beats + 1
