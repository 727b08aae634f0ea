"""An engine program run in Python on a bytearray feature memory (docs/engine.md, "Whole
network (program)"): each step with its unit's ``reference`` on the maps where its descriptor
says (a conv band on its own rows), the tensors written into and read from their regions
(`engine_program.Region`: blocked, at their block strides, channels at their physical
positions). `run_reference` must equal `bbgrap_hls.quant.run_int8` bit for bit
(tests/test_engine_program.py); gen's vectors, csim and the RTL twin's scoreboard read and
write tensors through `write_tensor` and `read_tensor`."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.codegen.engine_program import EngineProgram, ProgramStep


def _store(mem: bytearray, base: int, y: np.ndarray, g: int, stride: int | None) -> None:
    """An [h, w, cp] int8 map written block by block from ``base``, block ``b`` at
    ``b·stride`` (None: contiguous); the bytes between blocks are left as they are."""
    h, w, cp = y.shape
    blk = h * w * g
    data = ei.feature_bytes(y, g)
    for b in range(-(-cp // g)):
        at = base + b * (stride or blk)
        mem[at:at + blk] = data[b * blk:(b + 1) * blk]


def write_tensor(program: EngineProgram, mem: bytearray, name: str, x: np.ndarray, frame: int = 0) -> None:
    """Write tensor ``name`` (int8, the graph's shape) into its region (blocked at its block
    stride, its channels at their physical positions) of ``frame`` (a batched program's)."""
    r = program.regions[name]
    m = np.zeros((r.h, r.w, r.cp), np.int8)
    m[:, :, list(r.phys)] = np.asarray(x, np.int8).reshape(len(r.phys), r.h, r.w).transpose(1, 2, 0)
    _store(mem, r.base + frame * program.frame_stride, m, program.pe, r.stride)


def read_tensor(program: EngineProgram, mem: bytes, name: str, frame: int = 0) -> np.ndarray:
    """Tensor ``name`` of ``frame`` read from its region, in the graph's shape."""
    m = _physical(program, mem, name, frame)[:, :, list(program.regions[name].phys)]
    return np.ascontiguousarray(m.transpose(2, 0, 1)).reshape(program.regions[name].shape)


def _physical(program: EngineProgram, mem: bytes, name: str, frame: int = 0) -> np.ndarray:
    r = program.regions[name]
    return ei.read_features(mem, r.base + frame * program.frame_stride, r.h, r.w, r.cp, program.pe, r.stride)


def _conv_reference(program: EngineProgram, st: ProgramStep, mem: bytearray) -> None:
    """A conv step (a whole layer or a row band) as its descriptor says: its ``H`` input rows
    from ``IN_BASE`` at ``IN_STRIDE``, its own padding, its output rows to ``OUT_BASE`` at
    ``OUT_STRIDE``."""
    f, pe = st.desc, program.pe
    band = replace(st.layer, h=f["H"], pads=(f["PT"], f["PL"], f["PB"], f["PR"]))
    for k in range(f["FRAMES"]):  # a batched step: every frame's map, FRAME_STRIDE apart
        off = k * f["FRAME_STRIDE"]
        x = ei.read_features(mem, f["IN_BASE"] + off, f["H"], f["W"], f["C"], pe, f["IN_STRIDE"])
        y = ei.reference([band], x)
        _store(mem, f["OUT_BASE"] + off, y[:, :, :f["CO"]], pe, f["OUT_STRIDE"])


def run_step(program: EngineProgram, st: ProgramStep, mem: bytearray) -> None:
    """One step on the feature memory ``mem`` with its unit's Python reference, its maps where
    its descriptor says (bases, shapes, block strides; a conv's row band computes its rows
    only)."""
    f, pe = st.desc, program.pe
    if st.unit == "conv":
        _conv_reference(program, st, mem)
        return
    if st.unit == "window":
        y = ew.reference(st.layer, ei.read_features(mem, f["IN_BASE"], f["H"], f["W"], f["C"], pe, f["IN_STRIDE"]))
    else:
        a = ei.read_features(mem, f["A_BASE"], f["H"], f["W"], f["C"], pe, f["A_STRIDE"])
        b = None
        if len(st.inputs) > 1:
            hw = (1, 1) if f["MODE"] == ee.MULV else (f["H"], f["W"])
            b = ei.read_features(mem, f["B_BASE"], *hw, f["C"], pe, f["B_STRIDE"])
        y = ee.reference(st.layer, a, b)
    _store(mem, f["OUT_BASE"], np.asarray(y, np.int8)[:, :, :f["C"]], pe, f["OUT_STRIDE"])


def run_memory(program: EngineProgram, x) -> bytearray:
    """The feature memory after the program ran on one start's int8 input (the graph input's
    shape; a batched program: a sequence of ``program.frames`` of them): the inputs written,
    then the steps in order on a zeroed bytearray."""
    xs = [x] if program.frames == 1 else list(x)
    if len(xs) != program.frames:
        raise ValueError(f"engine: {len(xs)} input(s) for a program of {program.frames} frames a start")
    mem = bytearray(program.feature_size)
    for k, xk in enumerate(xs):
        write_tensor(program, mem, program.input, xk, k)
    for st in program.steps:
        run_step(program, st, mem)
    return mem


def run_reference(program: EngineProgram, x) -> np.ndarray:
    """The program on one start's int8 input (`run_memory`); returns the output tensor (int8,
    the graph's shape; a batched program: the frames' outputs stacked, frames first)."""
    mem = run_memory(program, x)
    if program.frames == 1:
        return read_tensor(program, mem, program.output)
    return np.stack([read_tensor(program, mem, program.output, k) for k in range(program.frames)])
