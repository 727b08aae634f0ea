"""cocotb testbench: the layer engine (``engine_design``, the generated wrapper of
``hw/rtl/engine_top.sv``) running a whole int8 network's program frame after frame
(`bbgrap_hls.rtlsim.engine_run` prepares the run: the ROM in ``prog.mem``, the case in
``case.pkl``).

Memory (`bbgrap_hls.rtlsim.axi_mem`): one ``bytearray`` from address 0 (filled with a seeded
pattern first: nothing may depend on zeros) holding the feature image from ``f_base`` (the
top's ``FEAT_BASE``) and the weight image from ``w_base`` (``W_BASE``), behind the feature
port (an `AxiReadMemory` and an `AxiWriteMemory`) and the weight port (an `AxiReadMemory`),
each channel's first beat or write response ``L`` cycles late and a beat every ``P`` cycles
(paced: ``P`` cycles after the one before was taken), the AXI rules checked on every burst.

Driver: the host's part, in one loop stepping the memories at every falling edge: it writes
frame ``f``'s input region bytes (`engine_files.input_bytes`) at the input region's base (a
batched program, docs/engine.md "Batched frames": ``program.frames`` frames a start, frame
``k``'s at ``k·frame_stride`` after it) and pulses ``start``, then waits for ``done``; the
next start follows the cycle after. Monitor: the cycle of every ``step_end`` and of ``done``.
Record (``record.json``, written whatever happens): per start its step ends and cycles
(start to done inclusive), per frame the mismatches; the beats moved,
the mismatches against ``want``, the ``error`` that stopped it (no ``done``, a
burst the AXI rules forbid); ``outputs.npz``: every tensor of ``names`` read back after
each frame (`engine_memory.read_tensor`), stacked over frames. Scoreboard (a failed cocotb
test): a tensor of ``want`` (per frame, by name) that differs; with ``strict``, a step end or
a frame's cycles other than ``pred`` (`model.engine_top.frame_cycles`).
"""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from bbgrap_hls.codegen import engine_memory as em
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory, AxiWriteMemory
from bbgrap_hls.rtlsim.engine_run import CASE_ENV


async def _reset(dut) -> None:
    """A 10 ns clock, the synchronous reset held for 4 cycles, ``start`` low."""
    dut.start.value = 0
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


async def _frame(dut, mems: list, cycle: int, limit: int, what: str) -> tuple[int, list[int], int]:
    """One frame: ``start`` high for its first cycle, the memories stepped at every falling
    edge; returns (cycles start to ``done`` inclusive, the ``step_end`` cycles from the start,
    the cycle counter after the frame). Fails after ``limit`` cycles without ``done``."""
    t0, ends = cycle, []
    while True:
        await FallingEdge(dut.clk)
        for m in mems:
            m.step(cycle)
        dut.start.value = int(cycle == t0)
        if cycle > t0:
            if dut.step_end.value:
                ends.append(cycle - t0)
            if dut.done.value:
                return cycle - t0 + 1, ends, cycle + 1
        cycle += 1
        assert cycle - t0 < limit, f"{what}: no done after {cycle - t0} cycles ({len(ends)} steps ended)"


def _memory(c: dict) -> bytearray:
    """The board memory: a seeded pattern up to ``w_base``, then the weight image."""
    prog, w_base = c["program"], c["w_base"]
    mem = bytearray(np.random.default_rng(c["seed"]).integers(0, 256, w_base, dtype=np.uint8).tobytes())
    return mem + prog.weights + bytes(-len(prog.weights) % prog.beat)


def _mismatches(prog: ep.EngineProgram, got: dict[str, np.ndarray], want: dict) -> list[str]:
    """The tensors of ``want`` that ``got`` does not equal, each with its first difference."""
    wrong = []
    for name, w in want.items():
        g, w = got[name].reshape(-1), np.asarray(w, np.int8).reshape(-1)
        bad = np.flatnonzero(g != w)
        if bad.size:
            wrong.append(f"{name} ({bad.size} of {w.size} differ, first at {bad[0]}: got {g[bad[0]]}, want {w[bad[0]]})")
    return wrong


@cocotb.test
async def engine_frames(dut):
    folder = Path(os.environ[CASE_ENV]).parent
    with open(os.environ[CASE_ENV], "rb") as f:
        c = pickle.load(f)
    prog, pred = c["program"], c["pred"]
    rate = prog.beat / c["P"]
    mem = _memory(c)
    feat = memoryview(mem)[c["f_base"]:c["w_base"]]  # the feature memory as the program addresses it
    base = prog.regions[prog.input].base
    await _reset(dut)
    # paced (each beat P cycles after the one before was taken) and holding a beat not yet
    # taken (the element-wise unit's A and B beats, on both read ports): the memory the
    # element-wise unit's model assumes; the conv and window units take every beat when
    # offered, so for them it is the default memory
    mems = [AxiReadMemory(dut, "m_axi_f", mem, 0, c["L"], rate, prog.beat, paced=True, hold=True),
            AxiWriteMemory(dut, "m_axi_f", mem, 0, c["L"], rate, prog.beat, paced=True),
            AxiReadMemory(dut, "m_axi_w", mem, 0, c["L"], rate, prog.beat, paced=True, hold=True)]
    rec = {"ends": [], "cycles": [], "pred": pred, "wrong": [], "cycle": 0}
    outs: dict[str, list[np.ndarray]] = {n: [] for n in c["names"]}
    t_wall = time.perf_counter()
    try:
        nb = prog.frames
        for st in range(len(c["inputs"]) // nb):
            for k in range(nb):
                x, at = c["inputs"][st * nb + k], base + k * prog.frame_stride
                feat[at:at + len(x)] = x
            what = f"frame {st}" if nb == 1 else f"start {st} (frames {st * nb}..{st * nb + nb - 1})"
            n, ends, rec["cycle"] = await _frame(dut, mems, rec["cycle"], c["limit"], what)
            rec["cycles"].append(n)
            rec["ends"].append(ends)
            for k in range(nb):
                fr = st * nb + k
                got = {name: em.read_tensor(prog, feat, name, k) for name in set(c["names"]) | set(c["want"][fr])}
                for name in c["names"]:
                    outs[name].append(got[name])
                rec["wrong"].append(_mismatches(prog, got, c["want"][fr]))
                dut._log.info("frame %d: %d cycles a start of %d (model %s); %s", fr, n, nb, pred["cycles"],
                              "; ".join(rec["wrong"][-1]) or f"{len(c['want'][fr])} tensors exact")
    except AssertionError as e:  # no done, or the memory saw a burst the AXI rules forbid
        rec["error"] = str(e)
        raise
    finally:
        rec["beats"] = {"f_read": mems[0].beats, "f_write": mems[1].beats, "w_read": mems[2].beats}
        rec["sim_wall_seconds"] = time.perf_counter() - t_wall
        np.savez(folder / "outputs.npz", **{n: np.stack(v) for n, v in outs.items() if v})
        (folder / "record.json").write_text(json.dumps(rec))
    for fr, wrong in enumerate(rec["wrong"]):
        assert not wrong, f"frame {fr}: tensors {'; '.join(wrong)}"
    if c["strict"]:
        for fr in range(len(rec["cycles"])):
            assert rec["ends"][fr] == pred["ends"], f"start {fr}: step ends {rec['ends'][fr]}, model {pred['ends']}"
            assert rec["cycles"][fr] == pred["cycles"], f"start {fr}: {rec['cycles'][fr]} cycles, model {pred['cycles']}"
