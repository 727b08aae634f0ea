"""The layer engine's program as files of a gen folder (docs/engine.md, "Generated folder").

A gen folder for an engine plan (``plan.json`` with ``"architecture": "engine"``) holds the
program the engine runs, independent of the HLS and RTL forms that read it:

- ``engine/program.json``: the engine's sizes (``pe``, ``simd``, ``beat``), the build
  parameters the plan chose (``params``: ``taps``, ``lanes``, ``pack``, ``latency``,
  ``period``, ``in_buffer``), the units' sizes the program needs (``sizes``,
  `engine_program.unit_sizes`), the feature memory's size, the graph ``input`` and fabric
  ``output``, every tensor's region (``stride``: bytes between its channel blocks, null when
  they are contiguous), and every step (``unit``, graph ``nodes``, ``inputs``,
  ``output``, ``desc``: ``[field name, value]`` pairs in its unit's field order);
- ``engine/program.bin``: int32 little-endian, the step count, then per step its unit's index
  (`engine_program.UNITS`) and `engine_program.STEP_WORDS` descriptor words
  (`engine_program.step_rows`): what the HLS top reads;
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

from bbgrap_hls.codegen import engine_program as ep

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
           "sizes": ep.unit_sizes(program), "feature_size": program.feature_size, "input": program.input,
           "output": program.output, "weight_bytes": len(program.weights), "regions": regions, "steps": steps}
    rows = ep.step_rows(program)
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
                            doc["input"], doc["output"])


def input_bytes(program: ep.EngineProgram, x: np.ndarray) -> bytes:
    """The input region's bytes for one int8 input (the graph input's shape)."""
    r = program.regions[program.input]
    mem = bytearray(r.base + r.span(program.pe))
    ep.write_tensor(program, mem, program.input, x)
    return bytes(mem[r.base:])


def output_tensor(program: ep.EngineProgram, mem: bytes) -> np.ndarray:
    """The fabric output (int8, the graph's shape) read from a whole feature memory ``mem``."""
    return ep.read_tensor(program, mem, program.output)
