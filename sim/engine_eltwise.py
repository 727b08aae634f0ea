"""The engine's element-wise unit (`hw/rtl/engine_eltwise.sv`): cases, prediction, build and run.

A *run* is one build of the module (its HDL parameters ``G``, ``DATA_W``, ``BURST``,
``CHUNKS``, ``CMAX`` and optionally ``LANES``, the module's default a lane a beat byte) and a list of layers that the testbench (`sim/test_engine_eltwise.py`)
starts one after the other, each with its own memory (``L``: cycles from an address
handshake to a read burst's first beat and from a write burst's last beat to its response;
``P``: cycles per beat, reads and writes alike). A layer is a dict: ``mode`` (add, mul,
mulv, table), ``H``, ``W``, ``C``, ``lut`` (a fused table), ``L``, ``P`` and optionally
``bases`` (A, B, OUT, T), ``gaps`` (beats of gap after each block of A, B, OUT: their
blocks strided, ``⌈H·W·G/DB⌉`` beats plus the gap apart; MULV's B entry is the vector's: its
blocks a beat plus that apart, or None for the channels in order) and ``stall`` (the
memory's address channels not always ready: the map is checked, the cycles are not
predicted). ``prepare`` draws its maps and constants, lays out the memories
and computes the reference (`bbgrap_hls.codegen.engine_eltwise.reference`); ``predict`` is
the cost model's cycles (`bbgrap_hls.model.engine_eltwise.layer_cycles`); ``run`` builds
(cached per parameter set, as `sim.runner`) and simulates.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen.engine_image import feature_bytes
from bbgrap_hls.model.engine_eltwise import layer_cycles
from bbgrap_hls.simtools import rtl_sources

from .runner import CACHE, ROOT, build_and_test

MODULES = ("engine_eltwise", "rq_round")
HDL_KEYS = ("G", "DATA_W", "BURST", "CHUNKS", "CMAX", "LANES")
FEATURE_BYTES = 3 * 4096
"""The feature memory's size at least (larger where a case's maps need it)."""
WEIGHT_BYTES = 8192


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


def make_layer(spec: dict, g: int, rng: np.random.Generator) -> tuple[ee.EltwiseLayer, np.ndarray, np.ndarray | None]:
    """A random layer of ``spec`` (module doc) with its operands ``(layer, a, b)``: constants
    in the quantiser's ranges, a fused ReLU (``lo = zy``) where ``spec`` asks for ``relu``."""
    mode = ee.MODES[spec["mode"]]
    h, w, c = spec["H"], spec["W"], spec["C"]
    a = rng.integers(-128, 128, (h, w, c)).astype(np.int8)
    b = None
    zy = int(rng.integers(-20, 21))
    kw = {"za": int(rng.integers(-10, 11)), "zb": int(rng.integers(-10, 11)), "zy": zy,
          "lo": zy if spec.get("relu") else -128, "hi": 127}
    if mode == ee.ADD:  # each operand onto the output scale at about 0.3 (Sub-like: mb < 0)
        s = int(spec.get("s", 22))
        ma, mb = (max(1, int(0.3 * 2**s * rng.uniform(0.5, 1.5))) for _ in range(2))
        kw |= {"ma": ma, "mb": -mb, "s": s}
    elif mode in (ee.MUL, ee.MULV):  # a product of 2^16 onto about 200
        s = int(spec.get("s", 30))
        kw |= {"m": int(2**s / 300 * rng.uniform(0.5, 1.5)), "s": s}
    if mode in (ee.ADD, ee.MUL):
        b = rng.integers(-128, 128, (h, w, c)).astype(np.int8)
    elif mode == ee.MULV:
        b = rng.integers(-128, 128, c).astype(np.int8)
    lut = bool(spec.get("lut")) or mode == ee.TABLE
    table = rng.integers(-128, 128, ee.TABLE_BYTES).astype(np.int8) if lut else None
    return ee.EltwiseLayer(mode=mode, h=h, w=w, c=c, table=table, lut=lut and mode != ee.TABLE, **kw), a, b


def strides(spec: dict, g: int, beat: int) -> tuple[int | None, int | None, int | None]:
    """The A, B, OUT block strides of ``spec``'s ``gaps`` (None: contiguous)."""
    gaps = spec.get("gaps")
    if gaps is None:
        return None, None, None
    blk = _up(spec["H"] * spec["W"] * g, beat)
    vec = spec["mode"] == "mulv"
    return tuple(None if n is None else (beat if vec and k == 1 else blk) + n * beat for k, n in enumerate(gaps))


def map_len(spec: dict, g: int, beat: int, stride: int | None = None) -> int:
    """A map's bytes in whole beats (its blocks ``stride`` apart)."""
    blk, n = spec["H"] * spec["W"] * g, _up(spec["C"], g) // g
    return _up((n - 1) * (blk if stride is None else stride) + blk, beat)


def default_bases(spec: dict, g: int, beat: int) -> tuple[int, int, int, int]:
    """A, B, OUT in the feature memory (one after the other, beat-aligned), T at 0."""
    sa, sb, so = strides(spec, g, beat)
    na, nb = map_len(spec, g, beat, sa), map_len(spec, g, beat, sb)
    return 0, na, na + nb, 0


def prepare_layer(spec: dict, hdl: dict, seed: int) -> dict:
    """One layer's memories, descriptor, expected map and prediction (numpy arrays and ints)."""
    g, beat = hdl["G"], hdl["DATA_W"] // 8
    rng = np.random.default_rng(seed)
    layer, a, b = make_layer(spec, g, rng)
    ab, bb, ob, tb = spec.get("bases") or default_bases(spec, g, beat)
    sa, sb, so = strides(spec, g, beat)
    row = ee.descriptor(layer, g, beat, ab, bb, ob, tb, cmax=hdl.get("CMAX"), a_stride=sa, b_stride=sb,
                        out_stride=so)
    f = dict(zip(ee.ELTWISE_FIELDS, row, strict=True))
    size = max(FEATURE_BYTES, _up(max(ab, bb, ob) + max(map_len(spec, g, beat, s) for s in (sa, sb, so)), 4096))
    feat = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())  # stale contents

    def put(at: int, data: bytes, stride: int, blk: int) -> None:  # the blocks only: gaps stay stale
        for k in range(0, len(data), blk):
            feat[at + k // blk * stride:at + k // blk * stride + blk] = data[k:k + blk]

    hwg = spec["H"] * spec["W"] * g
    put(ab, feature_bytes(a, g), f["A_STRIDE"], hwg)
    if b is not None:
        if layer.mode == ee.MULV:
            put(bb, ee.vector_bytes(b, g), f["B_STRIDE"], g)
        else:
            put(bb, feature_bytes(b, g), f["B_STRIDE"], hwg)
    nrun, run_bytes = ee.runs(row, g)
    wbeats = [ob + r * f["OUT_STRIDE"] + k * beat for r in range(nrun) for k in range(-(-run_bytes // beat))]
    wimg = bytearray(WEIGHT_BYTES)
    if layer.uses_table():
        wimg[tb:tb + ee.TABLE_BYTES] = ee.table_image(layer)
    want = ee.reference(layer, a, b)
    pred = -1 if spec.get("stall") else predict(row, hdl, spec)
    return {"desc": np.array(row, np.int64), "feat": np.frombuffer(bytes(feat), np.uint8),
            "wimg": np.frombuffer(bytes(wimg), np.uint8),
            "want": np.frombuffer(feature_bytes(want, g, f["OUT_STRIDE"]), np.int8),
            "out": np.array([ob, len(feature_bytes(want, g, f["OUT_STRIDE"]))], np.int64),
            # the bytes of real channels (a padding channel's result is the op on the operands'
            # padding: not zero, and read by nothing: `engine_image.read_features` drops it;
            # nor are a stride gap's)
            "real": np.frombuffer(feature_bytes(np.ones_like(want), g, f["OUT_STRIDE"]), np.int8) != 0,
            "wbeats": np.array(wbeats, np.int64),
            "mem": np.array([spec["L"], spec["P"]], np.int64), "pred": np.array([pred], np.int64),
            "stall": np.array([int(bool(spec.get("stall")))], np.int64)}


def predict(row: list[int], hdl: dict, spec: dict) -> int:
    """The cost model's cycles of a layer, start pulse to done pulse."""
    return layer_cycles(row, hdl["DATA_W"] // 8, spec["L"], spec["P"], hdl["BURST"], hdl["CHUNKS"], hdl["G"],
                        hdl.get("LANES")).cycles


@dataclass(frozen=True)
class EltwiseRun:
    """A simulation's outcome: cocotb's counts and, per layer, measured and predicted cycles."""

    tests: int
    failed: int
    folder: Path
    timing: dict | None


def run(hdl: dict, layers: list[dict], seed: int = 1) -> EltwiseRun:
    """Build (cached per ``hdl``) and simulate ``layers`` one after the other."""
    srcs = rtl_sources(*MODULES)
    h = hashlib.sha256(json.dumps(hdl, sort_keys=True).encode())
    for s in srcs:
        h.update(s.read_bytes())
    folder = CACHE / f"engine_eltwise-{h.hexdigest()[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for i, spec in enumerate(layers):
        for k, v in prepare_layer(spec, hdl, seed + i).items():
            arrays[f"{k}{i}"] = v
    np.savez(folder / "case.npz", **arrays)
    timing_file = folder / "timing.json"
    timing_file.unlink(missing_ok=True)
    env = {
        "BBG_SIM_CASE": json.dumps({"npz": str(folder / "case.npz"), "params": hdl | {"layers": len(layers)}}),
        "BBG_SIM_TIMING": str(timing_file),
        "PYTHONPATH": str(ROOT),
    }
    tests, failed, timing = build_and_test(srcs, "engine_eltwise", "sim.test_engine_eltwise", folder,
                                           {k: hdl[k] for k in HDL_KEYS if k in hdl}, env, timing_file)
    return EltwiseRun(tests=tests, failed=failed, folder=folder, timing=timing)
