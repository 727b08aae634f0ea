"""The banded off-chip conv (`hw/rtl/conv_band.sv`: `band_split` + `conv_offchip`): test cases,
prediction, build and run.

A case is `sim.offchip`'s (the conv's HDL parameters, the memory's ``L`` and ``R``, the frames)
plus ``BANDS``, and ``stall`` to run with an idling source and a back-pressuring sink (outputs
checked, timing not). ``predict`` asks the cost model (`bbgrap_hls.model.band.banded`) for
``(ii, latency)``, latency as `sim.offchip.predict` derives it; ``run`` builds (cached per
parameter set) and runs `sim/test_conv_band.py`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bbgrap_hls.model import out_profile
from bbgrap_hls.model.band import banded
from bbgrap_hls.simtools import rtl_sources

from . import offchip
from .offchip import OffchipRun
from .runner import CACHE, ROOT, build_and_test

MODULES = ("conv_band", "band_split", *offchip.MODULES)
FRAMES = 4  # frame 0: latency; intervals 1..2 between frames (the ii)


def _full(p: dict) -> dict:
    return offchip._full({"frames": FRAMES} | p)


def cost(p: dict):
    """The cost model's `BlockCost` of a case (`banded`), with its memory's rate and latency."""
    p = _full(p)
    return banded(offchip.geometry(p), p["PE"], p["SIMD"], p["BANDS"], rate=p.get("R"), latency=p["L"],
                  beat_bytes=p["DATA_W"] // 8, out_slots=p["OSLOTS"])


def predict(p: dict) -> tuple[int, int]:
    """``(ii, latency)`` of the cost model: latency ``span + depth + 1`` (`sim.offchip.predict`)."""
    p = _full(p)
    c = cost(p)
    in_beats = offchip.geometry(p).in_elems // p["SIMD"]
    _, b = out_profile(0, in_beats - 1, in_beats, c.lead, c.span, c.tail, c.fill, c.depth)
    return c.ii, b + 1


def run(p: dict, seed: int = 1) -> OffchipRun:
    """Build (cached) and run the testbench on case ``p``."""
    p = _full(p)
    srcs = rtl_sources(*MODULES)
    h = hashlib.sha256(json.dumps([p, seed], sort_keys=True).encode())
    for s in srcs:
        h.update(s.read_bytes())
    folder = CACHE / f"conv_band-{h.hexdigest()[:12]}"
    hdl = offchip.prepare(p, seed, folder) | {"BANDS": p["BANDS"]}
    timing_file = folder / "timing.json"
    timing_file.unlink(missing_ok=True)
    params = p | hdl | {"base": p.get("W_BASE", 0), "predict": None if p.get("stall") else predict(p)}
    env = {
        "BBG_SIM_CASE": json.dumps({"npz": str(folder / "case.npz"), "params": params}),
        "BBG_SIM_TIMING": str(timing_file),
        "PYTHONPATH": str(ROOT),
    }
    tests, failed, timing = build_and_test(srcs, "conv_band", "sim.test_conv_band", folder, hdl, env,
                                           timing_file)
    return OffchipRun(tests=tests, failed=failed, folder=Path(folder), timing=timing)
