"""The off-chip-weight conv (`hw/rtl/conv_offchip.sv`): test cases, prediction, build and run.

A case is the conv's HDL parameters (upper case) plus the simulated memory (``L``: cycles
from a burst's address handshake to its first beat; ``R``: bytes per cycle, a divisor of
the beat's ``DATA_W/8`` bytes) and the frames to run. ``prepare`` writes the parameter
memories and ``case.npz`` (input frames, weights, the weight image the memory serves);
``predict`` asks the cost model (`bbgrap_hls.model.offchip.offchip_mvu`) for ``(ii, latency)``;
``run`` builds (cached per parameter set, as `sim.runner`) and runs `sim/test_conv_offchip.py`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bbgrap_hls.model import out_profile
from bbgrap_hls.model.offchip import offchip_mvu
from bbgrap_hls.simtools import rtl_sources

from . import golden
from .expect import window_geometry
from .memfile import pack, write_mem
from .runner import CACHE, ROOT, build_and_test

MODULES = ("conv_offchip", "axi_read", "mac2", "rq_lane", "rq_round")
FRAMES = 6  # frame 0: latency; intervals 1..4 (an even count: a fold schedule may alternate)
HDL_KEYS = ("C", "CO", "SIMD", "PE", "H", "W", "KH", "KW", "SH", "SW", "DH", "DW", "PT", "PL",
            "PB", "PR", "DATA_W", "W_BASE", "ISLOTS", "OSLOTS", "PACK")


def _full(p: dict) -> dict:
    return {"DH": 1, "DW": 1, "DATA_W": 128, "W_BASE": 0, "ISLOTS": 2, "OSLOTS": 2, "PACK": 1, "L": 1,
            "frames": FRAMES} | p


def geometry(p: dict):
    """The cost model's geometry of a case (`sim.expect.window_geometry`)."""
    return window_geometry(_full(p))


def cost(p: dict):
    """The cost model's `BlockCost` of a case, with its memory's rate and latency."""
    p = _full(p)
    return offchip_mvu(geometry(p), p["PE"], p["SIMD"], rate=p.get("R"), latency=p["L"],
                       beat_bytes=p["DATA_W"] // 8, in_slots=p["ISLOTS"],
                       out_slots=p["OSLOTS"])


def predict(p: dict) -> tuple[int, int]:
    """``(ii, latency)`` of the cost model, latency as `sim.expect` derives it for blocks."""
    c = cost(p)
    g = geometry(p)
    in_beats = g.in_elems // p["SIMD"]
    _, b = out_profile(0, in_beats - 1, in_beats, c.lead, c.span, c.tail, c.fill, c.depth)
    return c.ii, b + 1


def weight_image(w: np.ndarray, simd: int, pe: int) -> np.ndarray:
    """The weight image in memory: word ``n·SF + s``, bank ``i`` lane ``j`` at byte ``i·SIMD + j``
    holds ``W[n·PE + i][s·SIMD + j]`` (columns ``(ky·KW + kx)·C + c``), words back to back."""
    co, cols = w.shape
    sf, nf = cols // simd, co // pe
    return w.reshape(nf, pe, sf, simd).transpose(0, 2, 1, 3).reshape(-1).astype(np.int8)


def prepare(p: dict, seed: int, folder: Path) -> dict:
    """Write the case into ``folder``; return the HDL parameters."""
    p = _full(p)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    c, co, k, pe = p["C"], p["CO"], p["KH"] * p["KW"], p["PE"]
    zx = int(rng.integers(-10, 11))
    x = rng.integers(-128, 128, size=(p["frames"], p["H"], p["W"], c)).astype(np.int8)
    w = rng.integers(-128, 128, size=(co, p["KH"], p["KW"], c)).astype(np.int8)
    bias = rng.integers(-(2**12), 2**12, size=co)
    rq = golden.random_rq(rng, co, 128 * 128 * (k * c) ** 0.5)
    rqw = np.array(golden.rq_words(rq), dtype=object).reshape(co // pe, pe)
    hdl = {key: p[key] for key in HDL_KEYS} | {
        "W_BASE": f"64'h{p['W_BASE']:x}",  # a 64-bit parameter: a sized literal
        "PAD_VAL": zx,
        "B_FILE": write_mem(folder / "b.mem", pack(bias.reshape(co // pe, pe), 32), 32 * pe),
        "RQ_FILE": write_mem(folder / "rq.mem", pack(rqw, 32), 32 * pe),
    } | golden.rq_params(rq)
    win = np.stack([golden.windows(f, (p["KH"], p["KW"]), (p["SH"], p["SW"]), (p["DH"], p["DW"]),
                                   (p["PT"], p["PL"], p["PB"], p["PR"]), zx) for f in x])
    image = weight_image(w.reshape(co, k * c), p["SIMD"], pe)
    np.savez(folder / "case.npz", x=x, w=w, bias=bias, rq=rq, win=win, image=image)
    return hdl


@dataclass(frozen=True)
class OffchipRun:
    tests: int
    failed: int
    folder: Path
    timing: dict | None


def run(p: dict, seed: int = 1) -> OffchipRun:
    """Build (cached) and run the testbench on case ``p``."""
    srcs = rtl_sources(*MODULES)
    h = hashlib.sha256(json.dumps([p, seed], sort_keys=True).encode())
    for s in srcs:
        h.update(s.read_bytes())
    folder = CACHE / f"conv_offchip-{h.hexdigest()[:12]}"
    hdl = prepare(p, seed, folder)
    timing_file = folder / "timing.json"
    timing_file.unlink(missing_ok=True)
    env = {
        "BBG_SIM_CASE": json.dumps({"npz": str(folder / "case.npz"), "params": _full(p) | hdl | {"base": p.get("W_BASE", 0)}}),
        "BBG_SIM_TIMING": str(timing_file),
        "PYTHONPATH": str(ROOT),
    }
    tests, failed, timing = build_and_test(srcs, "conv_offchip", "sim.test_conv_offchip", folder, hdl, env,
                                           timing_file)
    return OffchipRun(tests=tests, failed=failed, folder=folder, timing=timing)
