"""The layer engine's top (`hw/rtl/engine_top.sv`): a whole int8 network's program on the
three units, its ROM, build and run.

A *build* is one parameter set of the top (`HDL_KEYS`: ``PE``, ``SIMD``, ``DATA_W``, the units'
sizes, ``ROM_WORDS``): `build_params` sizes it for every program it will run (the largest
input map, tile, row, window, vector and ROM of them), so several networks share one
Verilator build (``build/sim/engine_top-<hash>``, cached per parameters and sources). The
ROM is read from ``prog.mem`` in the run's folder (``PROG_FILE`` is that relative name; the
simulator runs there), so a run is a folder: `prepare` writes the program's ROM
(`rom_words`), the images and the expected tensors of every frame (`bbgrap_hls.quant.run_int8`),
`run` builds and simulates `sim/test_engine_top.py` in it.

The memory: one ``bytearray`` from address 0 holding the feature image at ``FEAT_BASE`` (4 KB)
and the weight image at ``W_BASE`` (the build's: a 4 KB boundary after every program's feature
image), behind both ports, each channel with latency ``L`` and a beat every ``P`` cycles.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.model.engine_top import TopParams, frame_cycles
from bbgrap_hls.quant import run_int8
from bbgrap_hls.rtlsim import build as rtlbuild
from bbgrap_hls.simtools import rtl_sources, verilator_environ

from .runner import CACHE, OPT, ROOT, _hdl_value

MODULES = ("engine_top", "conv_engine", "axi_bursts", "mac2", "engine_window", "engine_eltwise", "rq_lane",
           "rq_round")
HDL_KEYS = ("PE", "SIMD", "DATA_W", "FEAT_BASE", "W_BASE", "ROM_WORDS", "IBUF_WORDS", "TILE_WORDS", "BURST", "WQ", "WMAX", "WOMAX", "KB",
            "KMAX", "TAPS", "WNF", "EBURST", "CHUNKS", "CMAX", "ENF", "PACK", "ELANES")
FRAMES = 2
LAST = 1 << 31
"""The head word's last-step bit."""


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


def rom_words(program: ep.EngineProgram) -> list[int]:
    """The top's program ROM: per step a head word (its unit's index in ``engine_program.UNITS``,
    `LAST` on the last step), then its descriptor's words (two's complement)."""
    words: list[int] = []
    for i, st in enumerate(program.steps):
        words.append(ep.UNITS.index(st.unit) | (LAST if i == len(program.steps) - 1 else 0))
        words += [v & 0xFFFFFFFF for v in st.words()]
    return words


def build_params(programs: list[ep.EngineProgram], taps: int = 1, eburst: int = 16, chunks: int = 4,
                 pack: int = 0, lanes: int | None = None) -> dict:
    """The top's HDL parameters sized for every program in ``programs`` (same ``pe``, ``simd``,
    ``beat``); each window step checked against them (`engine_window.check`); ``pack``: the conv
    unit's ``PACK`` (the same cycles); ``lanes``: the element-wise unit's ``LANES`` (None: a
    beat a cycle)."""
    pe, simd, beat = programs[0].pe, programs[0].simd, programs[0].beat
    assert all((p.pe, p.simd, p.beat) == (pe, simd, beat) for p in programs)
    hp = {"PE": pe, "SIMD": simd, "DATA_W": 8 * beat, "FEAT_BASE": 4096, "W_BASE": 8192,
          "ROM_WORDS": 1, "IBUF_WORDS": 1, "TILE_WORDS": 1,
          "BURST": 16, "WQ": 40, "WMAX": beat // pe, "WOMAX": 1, "KB": 2, "KMAX": 1, "TAPS": taps,
          "WNF": len(ew.WINDOW_FIELDS), "EBURST": eburst, "CHUNKS": chunks, "CMAX": pe, "ENF": len(ee.ELTWISE_FIELDS),
          "PACK": pack, "ELANES": lanes or beat}
    for prog in programs:
        sizes = ep.unit_sizes(prog)
        hp["ROM_WORDS"] = max(hp["ROM_WORDS"], len(rom_words(prog)))
        hp["W_BASE"] = max(hp["W_BASE"], hp["FEAT_BASE"] + _up(prog.feature_size, 4096))
        hp["TILE_WORDS"] = max(hp["TILE_WORDS"], sizes["TILE_WORDS"])
        hp["KMAX"] = max(hp["KMAX"], sizes["KMAX"])
        hp["CMAX"] = max(hp["CMAX"], sizes["CMAX"])
        hp["WMAX"] = max(hp["WMAX"], sizes["WMAX"])
        hp["KB"] = max(hp["KB"], 1 << (sizes["KB"] - 1).bit_length())
        for st in prog.steps:
            if st.unit == "conv":
                hp["IBUF_WORDS"] = max(hp["IBUF_WORDS"], ei.in_buffer_bytes(st.words(), pe, beat) // simd)
            elif st.unit == "window":
                hp["WOMAX"] = max(hp["WOMAX"], st.desc["WO"])
    for prog in programs:
        for st in prog.steps:
            if st.unit == "window":
                ew.check(st.words(), pe, beat, hp["WMAX"], hp["WOMAX"], hp["KB"], hp["KMAX"])
    return hp


def top_params(hp: dict, latency: int, period: int) -> TopParams:
    """The cycle model's parameters of a build on a memory."""
    return TopParams(latency=latency, period=period, kb=hp["KB"], taps=hp["TAPS"], burst=hp["BURST"],
                     queue=hp["WQ"], eburst=hp["EBURST"], chunks=hp["CHUNKS"], lanes=hp["ELANES"])


def prepare(gq, program: ep.EngineProgram, hp: dict, latency: int, period: int, folder: Path, seed: int = 7) -> dict:
    """Write a run into ``folder``: ``prog.mem`` (the ROM), ``case.pkl`` (the program, the
    frames' inputs, every region's expected tensor a frame, the memory's layout). Returns the
    model's frame (`frame_cycles`) as a dict."""
    folder.mkdir(parents=True, exist_ok=True)
    words = rom_words(program)
    assert len(words) <= hp["ROM_WORDS"], f"the program needs {len(words)} ROM words, the build has {hp['ROM_WORDS']}"
    (folder / "prog.mem").write_text("".join(f"{w:08x}\n" for w in words))
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-128, 128, gq.shape(gq.inputs[0]), dtype=np.int8) for _ in range(FRAMES)]
    want = []
    for x in xs:
        env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
        want.append({name: env[name] for name in program.regions})
    f_base, w_base = hp["FEAT_BASE"], hp["W_BASE"]
    assert f_base + program.feature_size <= w_base, f"feature image of {program.feature_size} bytes at {f_base}, " \
        f"W_BASE {w_base}"
    t = frame_cycles(program, top_params(hp, latency, period))
    pred = {"starts": t.starts, "ends": t.ends, "cycles": t.cycles}
    with open(folder / "case.pkl", "wb") as f:
        pickle.dump({"program": program, "x": xs, "want": want, "f_base": f_base, "w_base": w_base, "L": latency, "P": period,
                     "pred": pred, "seed": seed}, f)
    return pred


def build_folder(hp: dict) -> Path:
    h = hashlib.sha256(json.dumps({k: hp[k] for k in HDL_KEYS}, sort_keys=True).encode())
    for s in rtl_sources(*MODULES):
        h.update(s.read_bytes())
    return CACHE / f"engine_top-{h.hexdigest()[:12]}"


@dataclass(frozen=True)
class TopRun:
    tests: int
    failed: int
    folder: Path
    timing: dict | None  # {"ends": [[...] a frame], "cycles": [...], "pred": {...}, beats}


def run(gq, program: ep.EngineProgram, hp: dict, latency: int, period: int, name: str) -> TopRun:
    """Build the top for ``hp`` (cached; a lock keeps parallel workers from building the same
    folder at once) and run two frames of ``program`` in ``<build>/<name>``."""
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    folder = build_folder(hp)
    run_dir = folder / name
    prepare(gq, program, hp, latency, period, run_dir)
    timing_file = run_dir / "timing.json"
    timing_file.unlink(missing_ok=True)
    hdl = {k: hp[k] for k in HDL_KEYS} | {"PROG_FILE": "prog.mem", "FEAT_BASE": f"64'h{hp['FEAT_BASE']:x}",
                                          "W_BASE": f"64'h{hp['W_BASE']:x}"}  # 64-bit: sized literals
    env = {"BBG_SIM_CASE": json.dumps({"pkl": str(run_dir / "case.pkl"), "params": hp}),
           "BBG_SIM_TIMING": str(timing_file), "PYTHONPATH": str(ROOT)}
    folder.mkdir(parents=True, exist_ok=True)
    with verilator_environ():
        os.environ.update(rtlbuild.makeflags(CACHE, OPT))
        runner = get_runner("verilator")
        with open(folder / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            runner.build(sources=rtl_sources(*MODULES), hdl_toplevel="engine_top", build_dir=folder,
                         log_file=folder / "build.log", parameters={k: _hdl_value(v) for k, v in hdl.items()})
            rtlbuild.keep_runtime(folder, CACHE)
        xml = runner.test(test_module="sim.test_engine_top", hdl_toplevel="engine_top", build_dir=folder,
                          test_dir=run_dir, extra_env=env, results_xml=str(run_dir / "results.xml"),
                          log_file=run_dir / "test.log")
    tests, failed = get_results(Path(xml))
    timing = json.loads(timing_file.read_text()) if timing_file.exists() else None
    return TopRun(tests=tests, failed=failed, folder=run_dir, timing=timing)
