"""The layer engine's top (`hw/rtl/engine_top.sv`): a whole int8 network's program on the
three units, for tests/test_rtl_engine_top.py. The ROM, the parameters, the build, the run and
the testbench are the package's (`bbgrap_hls.codegen.engine_rtl`, `bbgrap_hls.rtlsim.engine_run`,
`bbgrap_hls.rtlsim.engine_tb`: what ``bbgrap-hls sim`` runs on a generated engine design);
this module adds the test's side: several programs on one build, every region's tensor
checked.

A *build* is one parameter set of the top (`HDL_KEYS`: ``PE``, ``SIMD``, ``DATA_W``, the units'
sizes, ``ROM_WORDS``): `build_params` sizes it for every program it will run (the largest
input map, tile, row, window, vector and ROM of them), so several networks share one
Verilator build (``build/sim/engine-<hash>``, cached per parameters and sources). A run is a
folder in it: `prepare` writes the program's ROM, the frames' input regions and the expected
tensors of every region a frame (`bbgrap_hls.quant.run_int8`), `run` builds and simulates.

The element-wise unit's ``EBURST`` and ``CHUNKS`` default to the plan's (64 and 4,
`engine_rtl.EBURST`, ``CHUNKS``: `model.engine_top.TopParams`' defaults, which
`model.engine_plan` times and counts), so a build here is what a generated design builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bbgrap_hls.codegen import engine_files
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_rtl as er
from bbgrap_hls.quant import run_int8
from bbgrap_hls.rtlsim import engine_run

from .runner import CACHE

HDL_KEYS = er.HDL_KEYS
MODULES = er.MODULES
LAST = er.LAST
FRAMES = 2
OPT = "-O0"
"""g++'s level for the model: a few thousand cycles a run, the build is most of the time."""
rom_words = er.rom_words
top_params = er.top_params


def build_params(programs: list[ep.EngineProgram], taps: int = 1, eburst: int = er.EBURST, chunks: int = er.CHUNKS,
                 pack: int = 0, lanes: int | None = None) -> dict:
    """The top's HDL parameters sized for every program in ``programs`` (`engine_rtl.hdl_params`,
    the feature image at 4 KB: nothing may assume address 0)."""
    return er.hdl_params(programs, taps=taps, eburst=eburst, chunks=chunks, pack=pack, lanes=lanes)


def prepare(gq, program: ep.EngineProgram, hp: dict, latency: int, period: int, folder: Path, seed: int = 7) -> dict:
    """Write a run into ``folder``: `FRAMES` starts of seeded inputs (a batched program's
    ``frames`` each), every region's expected tensor a frame, the testbench strict on the
    model's cycles. Returns the model's start as a dict."""
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-128, 128, gq.shape(gq.inputs[0]), dtype=np.int8) for _ in range(FRAMES * program.frames)]
    want = []
    for x in xs:
        env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
        want.append({name: env[name] for name in program.regions})
    return engine_run.write_case(folder, program, hp, [engine_files.input_bytes(program, x) for x in xs], latency, period,
                                 want=want, strict=True, seed=seed)


@dataclass(frozen=True)
class TopRun:
    tests: int
    failed: int
    folder: Path
    timing: dict | None  # {"ends": [[...] a frame], "cycles": [...], "pred": {...}, "beats": ...}


def build_folder(hp: dict) -> Path:
    """The build folder of ``hp`` (`engine_run.build`'s)."""
    return CACHE / f"engine-{engine_run.build_key(er.wrapper(hp), False, OPT)}"


def run(gq, program: ep.EngineProgram, hp: dict, latency: int, period: int, name: str) -> TopRun:
    """Build the top for ``hp`` (cached, locked against parallel workers) and run two frames of
    ``program`` in ``<build>/<name>``."""
    b = engine_run.build(er.wrapper(hp), CACHE, runtime=CACHE, opt=OPT)
    folder = b.folder / name
    prepare(gq, program, hp, latency, period, folder)
    r = engine_run.run_case(b, folder)
    return TopRun(tests=r.tests, failed=r.failed, folder=folder, timing=r.record)
