"""The layer engine's window unit (`hw/rtl/engine_window.sv`): cases, prediction, build and run.

A build is one parameter set (``G``, ``DATA_W``, buffer sizes, ``TAPS``: `HDL_KEYS`; ``TAPS``
1 when a set leaves it out); the layers run
one after another in one simulation (the descriptor is an input, not a parameter), each with
its own memory (``L``: cycles from a read burst's address handshake to its first beat and
from a write burst's last beat to its response; ``P``: cycles a beat). `layer_case` makes a
layer with seeded random data, `prepare` writes what the testbench serves (``case.npz``:
feature and weight images and the expected output per layer, ``cases.json``: descriptors,
memories and predicted cycles), `run` builds (cached per parameter set and sources, as
`sim.offchip`) and runs `sim/test_engine_window.py`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.codegen.engine_image import feature_bytes
from bbgrap_hls.model.engine_window import cycles
from bbgrap_hls.quant.arith import quantize_multiplier
from bbgrap_hls.simtools import rtl_sources

from .runner import CACHE, ROOT, build_and_test

MODULES = ("engine_window", "rq_lane", "rq_round")
HDL_KEYS = ("G", "DATA_W", "WMAX", "WOMAX", "KB", "KMAX", "TAPS")


def layer_case(mode: str, h: int, w: int, c: int, k: tuple[int, int], stride: tuple[int, int],
               pads: tuple[int, int, int, int], seed: int) -> tuple[ew.WindowLayer, np.ndarray]:
    """A layer with seeded random quantisation and weights, and its [h, w, c] input."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(h, w, c)).astype(np.int8)
    zp_in, zp_out = int(rng.integers(-20, 21)), int(rng.integers(-10, 11))
    kh, kw = k
    common = dict(h=h, w=w, c=c, k=k, stride=stride, pads=pads)
    if mode == "max":
        return ew.WindowLayer("max", **common), x
    if mode == "avg":
        m, s = quantize_multiplier(float(rng.uniform(0.5, 2.0)) / (kh * kw))
        return ew.WindowLayer("avg", **common, zp_in=zp_in, zp_out=zp_out, mult=m, shift=s), x
    wt = rng.integers(-127, 128, size=(c, kh, kw)).astype(np.int8)
    bias = rng.integers(-(2**12), 2**12, size=c) - zp_in * wt.reshape(c, -1).sum(axis=1)
    ms = [quantize_multiplier(float(v)) for v in rng.uniform(0.5, 2.0, size=c) / (128 * kh * kw)]
    return ew.WindowLayer("dw", **common, zp_in=zp_in, zp_out=zp_out, lo=-100, hi=120, weights=wt,
                          bias=bias, m=np.array([a for a, _ in ms]), s=np.array([b for _, b in ms])), x


@dataclass(frozen=True)
class Layer:
    """One layer of a run: the layer, its input, where it sits and the memory it runs on."""

    layer: ew.WindowLayer
    x: np.ndarray
    L: int
    P: int = 1
    in_base: int = 0
    w_base: int = 0
    in_stride: int | None = None  # block strides (None: contiguous)
    out_stride: int | None = None


def out_runs(desc: list[int], g: int, beat: int) -> list[tuple[int, int]]:
    """The byte spans ``[start, end)`` the unit writes: the whole map's beats from
    ``OUT_BASE`` (blocks contiguous), or each block's beats from ``OUT_BASE + b·OUT_STRIDE``."""
    f = dict(zip(ew.WINDOW_FIELDS, desc, strict=True))
    blk, n = f["HO"] * f["WO"] * g, f["C"] // g
    if f["OUT_STRIDE"] == blk:
        return [(f["OUT_BASE"], f["OUT_BASE"] + -(-n * blk // beat) * beat)]
    return [(f["OUT_BASE"] + b * f["OUT_STRIDE"], f["OUT_BASE"] + b * f["OUT_STRIDE"] + -(-blk // beat) * beat)
            for b in range(n)]


def images(hp: dict, lay: Layer, seed: int = 0) -> tuple[list[int], bytes, bytes]:
    """``(descriptor, feature image, weight image)`` of a layer, both images from address 0:
    the input at ``in_base`` (its blocks ``in_stride`` apart), the output right after it
    (beat-aligned, blocks ``out_stride`` apart), the feature image up to the output's end,
    seeded random bytes wherever the input's blocks are not (stride gaps, the output region);
    the weights at ``w_base`` (one zero beat when there are none)."""
    g, beat = hp["G"], hp["DATA_W"] // 8
    desc = ew.descriptor(lay.layer, g, beat, in_base=lay.in_base, w_base=lay.w_base, in_stride=lay.in_stride,
                         out_stride=lay.out_stride)
    ew.check(desc, g, beat, hp["WMAX"], hp["WOMAX"], hp["KB"], hp["KMAX"])
    f = dict(zip(ew.WINDOW_FIELDS, desc, strict=True))
    size = out_runs(desc, g, beat)[-1][1]
    img = bytearray(np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes())
    blk = lay.layer.h * lay.layer.w * g
    fb = feature_bytes(lay.x, g)
    for b in range(f["C"] // g):
        at = lay.in_base + b * f["IN_STRIDE"]
        img[at:at + blk] = fb[b * blk:(b + 1) * blk]
    wimg = bytes(lay.w_base) + ew.weight_image(lay.layer, g, beat)
    return desc, bytes(img), wimg or bytes(beat)


def prepare(hp: dict, layers: list[Layer], folder: Path) -> list[int]:
    """Write the run into ``folder``; return the predicted cycles per layer."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays, meta, pred = {}, [], []
    for i, lay in enumerate(layers):
        desc, img, wimg = images(hp, lay, seed=i)
        arrays[f"img{i}"] = np.frombuffer(img, np.uint8)
        arrays[f"wimg{i}"] = np.frombuffer(wimg, np.uint8)
        arrays[f"want{i}"] = ew.reference(lay.layer, lay.x)
        pred.append(cycles(desc, hp["G"], hp["DATA_W"] // 8, hp["KB"], lay.L, lay.P, hp.get("TAPS", 1)))
        ho, wo = lay.layer.out_hw
        meta.append({"desc": ew.descriptor_words(desc), "fields": desc, "L": lay.L, "P": lay.P, "ho": ho,
                     "wo": wo, "c": lay.layer.c, "predicted": pred[-1],
                     "runs": out_runs(desc, hp["G"], hp["DATA_W"] // 8)})
    np.savez(folder / "case.npz", **arrays)
    (folder / "cases.json").write_text(json.dumps(meta))
    return pred


@dataclass(frozen=True)
class WindowRun:
    tests: int
    failed: int
    folder: Path
    timing: dict | None  # {"cycles": [measured per layer], "predicted": [...]}


def run(hp: dict, layers: list[Layer], name: str) -> WindowRun:
    """Build (cached per parameter set and sources) and run every layer in one simulation."""
    hp = {"TAPS": 1} | hp
    srcs = rtl_sources(*MODULES)
    h = hashlib.sha256(json.dumps({k: hp[k] for k in HDL_KEYS}, sort_keys=True).encode())
    for s in srcs:
        h.update(s.read_bytes())
    folder = CACHE / f"engine_window-{h.hexdigest()[:12]}"
    run_dir = folder / name
    prepare(hp, layers, run_dir)
    timing_file = run_dir / "timing.json"
    timing_file.unlink(missing_ok=True)
    env = {
        "BBG_SIM_CASE": json.dumps({"dir": str(run_dir), "params": hp}),
        "BBG_SIM_TIMING": str(timing_file),
        "PYTHONPATH": str(ROOT),
    }
    hdl = {k: hp[k] for k in HDL_KEYS}
    tests, failed, timing = build_and_test(srcs, "engine_window", "sim.test_engine_window", folder, hdl, env,
                                           timing_file)
    return WindowRun(tests=tests, failed=failed, folder=run_dir, timing=timing)
