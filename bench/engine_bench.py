"""Benchmark: what the layer engine's units, as built, would give on the bench models (a
projection, not a plan).

Usage: ``python bench/engine_bench.py [--models a,b] [--boards x,y] [--markdown]`` (seconds).

The layer engine (docs/engine.md) runs a network's layers one after the other on three
units with the feature maps and weights in board memory. Its units are built and checked one
by one (module twins: cycles equal to their models; HLS csim bit-exact), but nothing plans
or generates a whole-network engine yet: no sequencer, no `gen`, no design twin. This bench
adds up the units' *exact* models over a network's steps (`codegen.engine_lower.lower`) to
see what such an engine gives before that is built:

- frame cycles = the sum over steps of the unit's cycles from its start to its done, at the
  board's memory latency and a period per 64-byte beat that gives each of the three AXI
  channels a unit drives at once (feature read, feature write, weight read) a third of the
  core's share of its home memory, and at most one port's width a cycle
  (``P = max(ceil(64·8/port_bits), ceil(3·64/share))``: conservative, the channels are rarely
  busy together); no overlap between steps (the units as built wait for the previous step's
  last write response); one engine per core, the cores taking frames in turn (fps × cores);
- the conv unit's ``PE x SIMD`` is the largest power-of-two pair (``SIMD | PE | 64``) whose
  DSPs (``PE·SIMD + 2·PE``, no packing yet) fit the core's limit beside the other units;
  the window and element-wise units work on blocks of ``G = PE`` channels;
- a strided stem conv reads its input in space-to-depth blocks (`passes.stem`, as the
  dataflow plans do by default: the host holds the input so): 12 channels and a 4 x 4 kernel
  instead of 3 channels and 7 x 7, far less padding to ``SIMD``;
- on-chip memory: the conv unit's input buffer holds the largest padded input map or a
  quarter of the core's BRAM18 + URAM at its cap (`BUFFER_SHARE`), whichever is less; a
  layer whose map is larger runs in the fewest row bands that fit (`engine_image.bands`),
  its weights read once a band;
- a conv step whose writes cannot keep up (the conv model refuses to time it) is charged its
  compute and its write beats at ``P``, whichever is more, and counted in ``approx``.

Printed per (model, board): the engine's projected fps, the conv unit's size, the MAC
efficiency (useful MACs over ``PE·SIMD`` a cycle of the frame), the cycles' split over the
units, the input buffer against the on-chip memory, and the dataflow plan's fps from
docs/benchmarks.md's stop-49 table for comparison (not re-planned here).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from zoo import ZOO, measure  # noqa: E402

from bbgrap_hls.board import load_board  # noqa: E402
from bbgrap_hls.codegen import engine_eltwise as elt_image  # noqa: E402
from bbgrap_hls.codegen import engine_window as win_image  # noqa: E402
from bbgrap_hls.codegen.engine_image import FIELDS, EngineLayer, FeatureMap, tile_layout  # noqa: E402
from bbgrap_hls.codegen.engine_image import _step as band_step  # noqa: E402
from bbgrap_hls.codegen.engine_image import bands as image_bands  # noqa: E402
from bbgrap_hls.codegen.engine_lower import Step, lower  # noqa: E402
from bbgrap_hls.model import engine as conv_model  # noqa: E402
from bbgrap_hls.model import engine_eltwise, engine_window  # noqa: E402
from bbgrap_hls.passes.stem import space_to_depth_stem, stem_conv  # noqa: E402

BEAT = 64
BUFFER_SHARE = 0.25
"""The conv unit's input buffer at most this share of the core's on-chip memory (BRAM18 and
URAM at its cap); a layer whose input map is larger runs in row bands."""
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "googlenet",
          "squeezenet1_1", "regnety_400mf", "vgg16")
BOARDS = ("zcu102", "kv260", "zcu104", "u250", "u280")

DATAFLOW_FPS = {  # docs/benchmarks.md, "memory hierarchy", stop 49's table (None: refused)
    ("resnet18", "zcu102"): 221.4, ("resnet18", "kv260"): 55.4, ("resnet18", "zcu104"): 142.4,
    ("resnet18", "u250"): 2932.2, ("resnet18", "u280"): 1993.0,
    ("resnet50", "zcu102"): 31.1, ("resnet50", "kv260"): None, ("resnet50", "zcu104"): 27.7,
    ("resnet50", "u250"): 1328.7, ("resnet50", "u280"): 747.4,
    ("mobilenet_v2", "zcu102"): 1295.6, ("mobilenet_v2", "kv260"): 146.4, ("mobilenet_v2", "zcu104"): 885.8,
    ("mobilenet_v2", "u250"): 15943.9, ("mobilenet_v2", "u280"): 11542.0,
    ("mobilenet_v3_large", "zcu102"): 868.1, ("mobilenet_v3_large", "kv260"): None,
    ("mobilenet_v3_large", "zcu104"): 675.9, ("mobilenet_v3_large", "u250"): 17936.1,
    ("mobilenet_v3_large", "u280"): 11957.9,
    ("efficientnet_b0", "zcu102"): 202.5, ("efficientnet_b0", "kv260"): None, ("efficientnet_b0", "zcu104"): 147.6,
    ("efficientnet_b0", "u250"): 8968.3, ("efficientnet_b0", "u280"): 6377.6,
    ("googlenet", "zcu102"): 221.4, ("googlenet", "kv260"): None, ("googlenet", "zcu104"): 147.6,
    ("googlenet", "u250"): 3543.1, ("googlenet", "u280"): 2989.5,
    ("squeezenet1_1", "zcu102"): 2029.1, ("squeezenet1_1", "kv260"): 591.7, ("squeezenet1_1", "zcu104"): 1369.7,
    ("squeezenet1_1", "u250"): 11019.3, ("squeezenet1_1", "u280"): 11019.3,
    ("regnety_400mf", "zcu102"): 337.3, ("regnety_400mf", "kv260"): None, ("regnety_400mf", "zcu104"): 271.4,
    ("regnety_400mf", "u250"): 11957.9, ("regnety_400mf", "u280"): 7971.9,
    ("vgg16", "zcu102"): 23.8, ("vgg16", "kv260"): None, ("vgg16", "zcu104"): 13.8,
    ("vgg16", "u250"): 186.8, ("vgg16", "u280"): 166.1,
}


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


def _layer(s: Step) -> EngineLayer:
    """The step as the conv unit's layer, shapes only (weights a broadcast zero: no memory)."""
    kh, kw = s.kernel
    zeros = np.broadcast_to(np.int8(0), (s.co, kh, kw, s.c))
    return EngineLayer(s.h, s.w, zeros, zeros[:, 0, 0, 0], zeros[:, 0, 0, 0], zeros[:, 0, 0, 0],
                       stride=s.strides, pads=s.pads)


def conv_cycles(s: Step, pe: int, simd: int, lat: int, per: int, budget: int) -> tuple[int, int, bool]:
    """A conv step's cycles (all its groups), its row bands and whether the exact model timed
    every band: the layer split into the fewest bands whose input fits ``budget`` bytes of
    input buffer (`engine_image.bands`), each band's descriptor timed by the conv unit's model
    (`model.engine.layer_timing`), maps at beat-aligned block strides."""
    layer = _layer(s)
    ho, wo = layer.out_hw
    src = FeatureMap(0, s.h, s.w, s.c, _up(s.h * s.w * pe, BEAT))
    dst = FeatureMap(_up(src.stride * _up(s.c, pe) // pe, BEAT), ho, wo, s.co, _up(ho * wo * pe, BEAT))
    tb = tile_layout(layer, pe, simd, BEAT)[2]
    bands = image_bands(layer, pe, BEAT, src, dst, budget)
    cycles, exact = 0, True
    for r0, r1 in bands:
        row = band_step(layer, pe, r0, r1, src, dst, 0, tb)
        try:
            cycles += conv_model.layer_timing(row, 0, pe, simd, BEAT, lat, per).end
        except ValueError:  # writes that cannot keep up: compute or writes, whichever is more
            f = dict(zip(FIELDS, row, strict=True))
            bho = (f["H"] + f["PT"] + f["PB"] - f["KH"]) // f["SH"] + 1
            compute = bho * wo * (f["CO"] // pe) * f["KH"] * f["KW"] * f["C"] // simd
            writes = -(-bho * wo * f["CO"] // BEAT) * per
            cycles += max(compute, writes) + conv_model.SETUP + 2 * lat
            exact = False
    return cycles * s.groups, len(bands), exact


WINDOW_TAPS = 3
"""The window unit's taps a cycle (`hw/rtl/engine_window.sv` ``TAPS``): a 3-wide window row a cycle."""


def window_cycles(s: Step, g: int, lat: int, per: int, taps: int = WINDOW_TAPS) -> int:
    """A window step's cycles on the window unit with ``TAPS = taps`` (default 3: a 3 x 3
    window in 3 cycles a pixel, ``KH·ceil(KW/TAPS)`` in general; 1 is the unit as first built)."""
    c = _up(s.c, g)
    kh, kw = s.kernel
    w_beats = -(-(c and (8 * g + g * kh * kw)) // BEAT) if s.mode == "dw" else 0
    vals = dict.fromkeys(win_image.WINDOW_FIELDS, 0) | {
        "MODE": win_image.MODES[s.mode], "H": s.h, "W": s.w, "C": c, "HO": s.ho, "WO": s.wo, "KH": kh, "KW": kw,
        "SH": s.strides[0], "SW": s.strides[1], "PT": s.pads[0], "PL": s.pads[1], "PB": s.pads[2],
        "PR": s.pads[3], "LO": -128, "HI": 127, "IN_BASE": 0, "OUT_BASE": _up(s.h * s.w * c, BEAT),
        "W_BEATS": w_beats, "IN_STRIDE": s.h * s.w * g, "OUT_STRIDE": s.ho * s.wo * g}  # contiguous maps
    kb = 1 << max(kh, 2).bit_length()  # row slots: a power of two above the window's rows (the RTL's KB)
    return engine_window.cycles([vals[k] for k in win_image.WINDOW_FIELDS], g, BEAT, kb, lat, per, taps)


def eltwise_cycles(s: Step, g: int, lat: int, per: int) -> int:
    c = _up(s.c, g)
    size = _up(s.h * s.w * c, BEAT)
    vals = dict.fromkeys(elt_image.ELTWISE_FIELDS, 0) | {
        "MODE": elt_image.MODES[s.mode], "H": s.h, "W": s.w, "C": c, "LO": -128, "HI": 127,
        "A_BASE": 0, "B_BASE": size, "OUT_BASE": 2 * size, "T_BASE": 0,
        "A_STRIDE": s.h * s.w * g, "B_STRIDE": (g if s.mode == "mulv" else s.h * s.w * g),
        "OUT_STRIDE": s.h * s.w * g}  # contiguous maps (a vector in channel order)
    return engine_eltwise.layer_cycles([vals[k] for k in elt_image.ELTWISE_FIELDS], BEAT, lat, per, g=g).cycles


def size(board, core: int = 0) -> tuple[int, int]:
    """The largest ``(PE, SIMD)`` (powers of two, ``SIMD | PE | BEAT``) whose conv-unit DSPs
    fit the core's limit with room for the other units (``4·PE``: element-wise and depthwise
    lanes, a guess)."""
    c = board.cores[core]
    limit = math.floor(c.dsp * c.cap)
    best = (8, 8)
    for pe in (8, 16, 32, 64):
        for simd in (4, 8, 16, 32, 64):
            if simd <= pe and pe * simd + 2 * pe + 4 * pe <= limit and pe * simd > best[0] * best[1]:
                best = (pe, simd)
    return best


def project(model: str, board_name: str) -> dict:
    board = load_board(board_name)
    graph, _ = measure(ZOO[model]())
    if stem_conv(graph) is not None:  # the host holds the input in blocks, as the dataflow plans do
        graph = space_to_depth_stem(graph)
    steps = lower(graph)
    pe, simd = size(board)
    mem = board.home_memory(0)
    share = board.offchip_share(0)
    per = max(math.ceil(BEAT * 8 / mem.port_width_bits), math.ceil(3 * BEAT / share))
    lat = mem.latency_cycles
    c = board.cores[0]
    onchip = (c.bram18 * 2304 + c.uram * 36864) * c.cap
    biggest = max(s.h * s.w * _up(s.c, pe) for s in steps if s.kind == "conv")
    budget = int(min(biggest, BUFFER_SHARE * onchip))
    by = {"conv": 0, "window": 0, "eltwise": 0}
    approx = banded = 0
    for s in steps:
        if s.kind == "conv":
            cyc, nb, exact = conv_cycles(s, pe, simd, lat, per, budget)
            approx += not exact
            banded += nb > 1
        elif s.kind == "window":
            cyc = window_cycles(s, pe, lat, per)
        else:
            cyc = eltwise_cycles(s, pe, lat, per)
        by[s.kind] += cyc
    cycles = sum(by.values())
    macs = sum(s.macs * s.groups for s in steps)
    fps = board.clock_mhz * 1e6 / cycles * len(board.cores)
    return {"model": model, "board": board_name, "pe": pe, "simd": simd, "period": per, "fps": fps,
            "cycles": cycles, "by": by, "eff": macs / (cycles * pe * simd), "approx": approx,
            "in_buf": budget, "biggest": biggest, "banded": banded, "onchip": onchip, "dataflow": DATAFLOW_FPS.get((model, board_name), "-")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    head = ("model", "board", "PE x SIMD", "P", "engine fps (projected)", "MAC eff.", "conv / window / eltwise",
            "input buffer / on chip", "dataflow fps (stop 49)")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    for m in a.models.split(","):
        for b in a.boards.split(","):
            r = project(m, b)
            tot = r["cycles"]
            split = " / ".join(f"{100 * r['by'][k] / tot:.0f}%" for k in ("conv", "window", "eltwise"))
            fits = f"{r['banded']} convs in bands" if r["banded"] else "whole maps"
            df = r["dataflow"]
            cells = (m, b, f"{r['pe']} x {r['simd']}", str(r["period"]),
                     f"{r['fps']:,.1f}" + (f" ({r['approx']} approx)" if r["approx"] else ""),
                     f"{r['eff']:.0%}", split,
                     f"{r['in_buf'] / 1024:,.0f} / {r['onchip'] / 1024:,.0f} KB {fits}",
                     "refused" if df is None else (f"{df:,.1f}" if isinstance(df, float) else df))
            print(("| " + " | ".join(cells) + " |") if a.markdown else "  ".join(cells), flush=True)
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
