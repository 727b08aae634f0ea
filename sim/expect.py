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
    "fifo": 2, "requant": 3, "mvu": 5, "vvu": 4, "lut_act": 2, "channel_affine": 4, "add": 3,
    "mul": 3, "concat": 0, "dwc": 1, "link": 0, "swg": 1,
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
