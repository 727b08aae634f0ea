"""The layer engine (`hw/rtl/conv_engine.sv`): test cases, prediction, build and run.

A case is the engine's sizing (``PE``, ``SIMD``, ``DATA_W``, ``FEAT_BASE``, ``W_BASE``,
``BURST``, ``WQ``, ``PACK``: two output lanes a DSP48E2, default 0; ``MAX_IN``: the input
buffer's bytes, layers split into row bands to fit it, None: whole layers; ``BATCH``: the
frames every step computes with each tile, default 1: docs/engine.md "Batched frames"), the simulated
memory (``L``: a read burst's first beat and a write burst's response that many cycles late;
``P``: cycles per beat, on each of the three channels) and ``layers``: a chain of layer
shapes (dicts of ``h, w, c, co, k, stride, pads``, optionally ``extremes``: weights drawn
from -128, 127 and a few others instead of uniformly, and on the first layer the first
frame's input too; layer ``i + 1`` reads layer ``i``'s output). ``prepare`` draws the
weights, the requantisers and the input frames of two starts (``BATCH`` frames each), lays the program out
(`engine_image.program`) and writes ``PROG_FILE`` and ``case.npz``; ``predict`` asks
`bbgrap_hls.model.engine.schedule`; ``run`` builds (cached per parameter set in
``build/sim/conv_engine-<hash>``) and runs `sim/test_conv_engine.py`.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.model.engine import BURST, QUEUE, schedule
from bbgrap_hls.simtools import rtl_sources

from . import golden
from .memfile import write_mem
from .runner import CACHE, ROOT, build_and_test

MODULES = ("conv_engine", "conv_load", "axi_bursts", "mac2", "rq_lane", "rq_round")
FRAMES = 2
HDL_KEYS = ("PE", "SIMD", "DATA_W", "BURST", "WQ", "PACK")


def _full(p: dict) -> dict:
    return {"FEAT_BASE": 0, "W_BASE": 0, "BURST": BURST, "WQ": QUEUE, "PACK": 0, "L": 1, "P": 1, "MAX_IN": None,
            "BATCH": 1} | p


def layers(p: dict, seed: int = 1) -> list[ei.EngineLayer]:
    """The case's layers with seeded random weights, biases and requantisers."""
    rng = np.random.default_rng(seed)
    out = []
    for s in p["layers"]:
        kh, kw = s.get("k", (1, 1))
        c, co = s["c"], s["co"]
        wts = rng.integers(-128, 128, size=(co, kh, kw, c)).astype(np.int8)
        if s.get("extremes"):  # the packed products' corner cases: both fields' signs, -128 x -128
            wts = rng.choice(np.array([-128, 127, -128, 127, -1, 0, 1], np.int8), size=wts.shape)
        rq = golden.random_rq(rng, co, 128 * 128 * (kh * kw * c) ** 0.5)
        out.append(ei.EngineLayer(
            h=s["h"], w=s["w"], weights=wts, bias=rng.integers(-(2**12), 2**12, size=co),
            m=rq[:, 0], s=rq[:, 1], zp_in=int(rng.integers(-10, 11)), zp_out=int(rq[0, 2]), lo=int(rq[0, 3]),
            hi=int(rq[0, 4]), stride=tuple(s.get("stride", (1, 1))), pads=tuple(s.get("pads", (0, 0, 0, 0)))))
    return out


def program(p: dict, seed: int = 1) -> tuple[list[ei.EngineLayer], ei.Program]:
    p = _full(p)
    ls = layers(p, seed)
    return ls, ei.program(ls, p["PE"], p["SIMD"], p["DATA_W"] // 8, p["MAX_IN"], p["BATCH"])


def predict(p: dict, seed: int = 1):
    """The model's frame (`schedule`) for case ``p``: every step's end and the frame's cycles
    (ValueError: a layer whose writes would stall the compute, which the model does not time)."""
    p = _full(p)
    _, prog = program(p, seed)
    return schedule(prog.descriptors, p["PE"], p["SIMD"], p["DATA_W"] // 8, p["L"], p["P"],
                    feat_base=p["FEAT_BASE"], burst=p["BURST"], queue=p["WQ"])


def prepare(p: dict, seed: int, folder: Path) -> dict:
    """Write the case into ``folder``; return the HDL parameters."""
    p = _full(p)
    folder.mkdir(parents=True, exist_ok=True)
    ls, prog = program(p, seed)
    pe, simd, beat = p["PE"], p["SIMD"], p["DATA_W"] // 8
    rng = np.random.default_rng(seed + 1000)
    first = ls[0]
    xs = rng.integers(-128, 128, size=(FRAMES * p["BATCH"], first.h, first.w, first.c)).astype(np.int8)
    if p["layers"][0].get("extremes"):  # the input's bytes too: -128 x -128 = 16384, the fields' bound
        xs[0] = rng.choice(np.array([-128, 127, -128, -1, 0, 1], np.int8), size=xs[0].shape)
    # every layer's output of every frame (the maps stay in their regions after a frame)
    want = [[ei.reference(ls[:i + 1], x) for i in range(len(ls))] for x in xs]
    words = ei.descriptor_words(prog.descriptors)
    wb = pe * simd
    pw = -(-ei.RECORD_BYTES * pe // wb)
    hdl = {key: p[key] for key in HDL_KEYS} | {
        "NL": len(prog.descriptors),
        "PROG_FILE": write_mem(folder / "prog.mem", words, 32),
        "IBUF_WORDS": max(ei.in_buffer_bytes(r, pe, beat) for r in prog.descriptors) // simd,
        "TILE_WORDS": max(pw + r[4] * r[5] * r[2] // simd for r in prog.descriptors),
        "FEAT_BASE": f"64'h{p['FEAT_BASE']:x}",  # 64-bit parameters: sized literals
        "W_BASE": f"64'h{p['W_BASE']:x}",
    }
    with open(folder / "case.pkl", "wb") as f:
        pickle.dump({"layers": ls, "program": prog, "x": xs, "want": want}, f)
    np.savez(folder / "case.npz", x=xs)
    return hdl


@dataclass(frozen=True)
class EngineRun:
    tests: int
    failed: int
    folder: Path
    timing: dict | None


def run(p: dict, seed: int = 1) -> EngineRun:
    """Build (cached) and run the testbench on case ``p``."""
    srcs = rtl_sources(*MODULES)
    h = hashlib.sha256(json.dumps([p, seed], sort_keys=True).encode())
    for s in srcs:
        h.update(s.read_bytes())
    folder = CACHE / f"conv_engine-{h.hexdigest()[:12]}"
    hdl = prepare(p, seed, folder)
    timing_file = folder / "timing.json"
    timing_file.unlink(missing_ok=True)
    try:
        t = predict(p, seed)
        pred = {"ends": [lt.end for lt in t.layers], "cycles": t.cycles}
    except ValueError:  # a write-bound layer: the compute stalls, outputs checked, cycles not
        pred = None
    env = {
        "BBG_SIM_CASE": json.dumps({"npz": str(folder / "case.npz"), "pkl": str(folder / "case.pkl"),
                                    "params": _full(p) | hdl, "pred": pred}),
        "BBG_SIM_TIMING": str(timing_file),
        "PYTHONPATH": str(ROOT),
    }
    tests, failed, timing = build_and_test(srcs, "conv_engine", "sim.test_conv_engine", folder, hdl, env,
                                           timing_file)
    return EngineRun(tests=tests, failed=failed, folder=folder, timing=timing)
