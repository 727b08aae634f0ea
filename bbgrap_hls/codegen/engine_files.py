"""The layer engine's program as files of a gen folder (docs/engine.md, "Generated folder").

A gen folder for an engine plan (``plan.json`` with ``"architecture": "engine"``) holds the
program the engine runs, independent of the HLS and RTL forms that read it:

- ``engine/program.json``: the engine's sizes (``pe``, ``simd``, ``beat``), the build
  parameters the plan chose (``params``: ``taps``, ``lanes``, ``pack``, ``latency``,
  ``period``, ``in_buffer``), the units' sizes the program needs (``sizes``,
  `unit_sizes`), the feature memory's size, the graph ``input`` and fabric
  ``output``, every tensor's region (``stride``: bytes between its channel blocks, null when
  they are contiguous), and every step (``unit``, graph ``nodes``, ``inputs``,
  ``output``, ``desc``: ``[field name, value]`` pairs in its unit's field order);
- ``engine/program.bin``: int32 little-endian, the step count, then per step its unit's index
  (`engine_program.UNITS`) and `STEP_WORDS` descriptor words
  (`step_rows`): what the HLS top reads;
- ``engine/weights.bin``: the weight memory's image (conv tiles and records, depthwise
  blocks, tables), loaded once at start-up.

`load_program(folder)` reads them back as an `engine_program.EngineProgram` whose steps have
no layer objects (``layer`` None): enough to place tensors (`input_bytes`, `output_tensor`),
to time the frame (`model.engine_top.frame_cycles`) and to write the ROM, not to run the
Python reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_memory as em
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_window as ew

DIR = "engine"
PARAMS = ("taps", "lanes", "pack", "latency", "period", "in_buffer")
"""The plan's build parameters kept in ``program.json`` (`EnginePlan` fields)."""


def program_files(program: ep.EngineProgram, params: dict) -> dict[str, bytes]:
    """``engine/program.json``, ``program.bin`` and ``weights.bin`` of ``program`` built with
    ``params`` (`PARAMS` keys; others refused)."""
    extra = set(params) - set(PARAMS)
    if extra:
        raise ValueError(f"engine files: unknown parameters {sorted(extra)}")
    regions = {t: {"base": r.base, "h": r.h, "w": r.w, "cp": r.cp, "phys": list(r.phys), "shape": list(r.shape),
                   "flat": r.flat, "stride": r.stride} for t, r in sorted(program.regions.items())}
    steps = [{"unit": st.unit, "nodes": list(st.nodes), "inputs": list(st.inputs), "output": st.output,
              "desc": [[k, int(v)] for k, v in st.desc.items()]} for st in program.steps]
    doc = {"pe": program.pe, "simd": program.simd, "beat": program.beat, "params": dict(sorted(params.items())),
           "sizes": unit_sizes(program), "feature_size": program.feature_size, "input": program.input,
           "output": program.output, "weight_bytes": len(program.weights), "regions": regions, "steps": steps,
           "frames": program.frames, "frame_stride": program.frame_stride}
    rows = step_rows(program)
    prog = np.array([len(rows)] + [w for r in rows for w in r], dtype=np.uint32).astype("<u4").tobytes()
    return {f"{DIR}/program.json": (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode(),
            f"{DIR}/program.bin": prog, f"{DIR}/weights.bin": bytes(program.weights)}


def load_doc(folder: str | Path) -> dict:
    """``engine/program.json`` of a gen folder, as written."""
    return json.loads((Path(folder) / DIR / "program.json").read_text())


def load_program(folder: str | Path) -> ep.EngineProgram:
    """The program of a gen folder (steps without layer objects; see the module's text)."""
    doc = load_doc(folder)
    regions = {t: ep.Region(r["base"], r["h"], r["w"], r["cp"], tuple(r["phys"]), tuple(r["shape"]), r["flat"],
                            r.get("stride")) for t, r in doc["regions"].items()}
    steps = [ep.ProgramStep(s["unit"], s["nodes"], None, dict(s["desc"]), tuple(s["inputs"]), s["output"])
             for s in doc["steps"]]
    weights = (Path(folder) / DIR / "weights.bin").read_bytes()
    return ep.EngineProgram(doc["pe"], doc["simd"], doc["beat"], steps, weights, doc["feature_size"], regions,
                            doc["input"], doc["output"], doc.get("frames", 1), doc.get("frame_stride", 0))


def input_bytes(program: ep.EngineProgram, x: np.ndarray) -> bytes:
    """The input region's bytes for one int8 input (the graph input's shape)."""
    r = program.regions[program.input]
    mem = bytearray(r.base + r.span(program.pe))
    em.write_tensor(program, mem, program.input, x)
    return bytes(mem[r.base:])


def output_tensor(program: ep.EngineProgram, mem: bytes) -> np.ndarray:
    """The fabric output (int8, the graph's shape) read from a whole feature memory ``mem``."""
    return em.read_tensor(program, mem, program.output)


# -- what the HLS top is given -------------------------------------------------------------------

STEP_WORDS = 32
"""Descriptor words an ``EngineStep`` of the HLS top holds (``ENGINE_STEP_WORDS``)."""


def step_rows(program: ep.EngineProgram, conv_words: int | None = None) -> list[list[int]]:
    """Each step as the HLS top's ``bb::EngineStep``: its unit's index in `UNITS`, then its
    descriptor's words, zeros up to `STEP_WORDS` (signed values two's complement).
    ``conv_words``: the conv descriptor's words the C++ ``bb::EngineLayer`` holds, when a build
    holds fewer than ``engine_image.FIELDS``; the fields left out must then be block strides
    of contiguous maps and one frame (what a struct without them assumes).

    Raises:
        ValueError: a left-out field that is not a contiguous block stride.
    """
    rows = []
    for st in program.steps:
        vals = st.words()
        if st.unit == "conv" and conv_words is not None and conv_words < len(vals):
            f = st.desc
            ho, wo = ei.step_out_hw(list(f.values()))
            contiguous = {"IN_STRIDE": f["H"] * f["W"] * program.pe, "OUT_STRIDE": ho * wo * program.pe,
                          "FRAMES": 1, "FRAME_STRIDE": 0}
            for k in list(f)[conv_words:]:
                if contiguous.get(k) != f[k]:
                    raise ValueError(f"engine program: step {st.nodes[0]}: field {k} = {f[k]} needs a conv "
                                     f"kernel with more than {conv_words} descriptor words")
            vals = vals[:conv_words]
        rows.append([ep.UNITS.index(st.unit)] + [v & 0xFFFFFFFF for v in vals] + [0] * (STEP_WORDS - len(vals)))
    return rows


def unit_sizes(program: ep.EngineProgram) -> dict[str, int]:
    """The units' parameters the program needs: the conv unit's ``IBUF_WORDS`` (SIMD-byte
    words of the largest step's input rows, ``H·W·C/SIMD``: a whole map or a row band's; times
    its ``FRAMES``) and ``TILE_WORDS`` (``PW + SF`` of the largest tile); the
    window unit's ``WMAX`` (widest input row), ``KB`` (tallest window), ``KMAX`` (most depthwise
    taps); the element-wise unit's ``CMAX`` (longest MULV vector). At least 1 each (``CMAX``:
    ``G``)."""
    pe, simd = program.pe, program.simd
    out = {"IBUF_WORDS": 1, "TILE_WORDS": -(-ei.RECORD_BYTES // simd) + 1, "WMAX": 1, "KB": 1, "KMAX": 1, "CMAX": pe}
    for st in program.steps:
        f = st.desc
        if st.unit == "conv":
            pw, sf, _ = ei.tile_layout(st.layer, pe, simd, program.beat)
            out["IBUF_WORDS"] = max(out["IBUF_WORDS"], f["H"] * f["W"] * f["C"] // simd * f["FRAMES"])
            out["TILE_WORDS"] = max(out["TILE_WORDS"], pw + sf)
        elif st.unit == "window":
            out["WMAX"], out["KB"] = max(out["WMAX"], f["W"]), max(out["KB"], f["KH"])
            if f["MODE"] == ew.DW:
                out["KMAX"] = max(out["KMAX"], f["KH"] * f["KW"])
        elif f["MODE"] == ee.MULV:
            out["CMAX"] = max(out["CMAX"], f["C"])
    return out
