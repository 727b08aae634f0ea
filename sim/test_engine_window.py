"""cocotb testbench: the engine's window unit (`hw/rtl/engine_window.sv`) against simulated
board memories, layer after layer in one simulation (`sim.engine_window` prepares the run).

Per layer: a fresh feature memory (an `AxiReadMemory` and an `AxiWriteMemory` on ``m_axi``
sharing one ``bytearray``: the input map in the blocked layout, then room for the output)
and a weight memory (`AxiReadMemory` on ``w_axi``), both with the layer's latency ``L`` and
period ``P`` and checking the AXI rules (INCR, full-width beats and strobes, at most 256
beats, no 4 KB crossing, inside the image). Driver: the descriptor, then ``start`` for one
cycle (cycle 0). Monitor: the cycle ``done`` pulses. Scoreboard: the output region equals
the reference (`codegen.engine_window.reference`) in the blocked layout (blocks
``OUT_STRIDE`` apart), each written run's last beat's tail is zero, every byte outside the
runs (input, stride gaps) is unchanged, and the measured cycles equal the model's
(`model.engine_window.cycles`, computed by `prepare`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from bbgrap_hls.codegen.engine_image import read_features
from bbgrap_hls.codegen.engine_window import WINDOW_FIELDS
from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory, AxiWriteMemory
from sim import harness


@cocotb.test
async def engine_window_layers(dut):
    meta = json.loads(os.environ["BBG_SIM_CASE"])
    folder, hp = Path(meta["dir"]), meta["params"]
    cases = json.loads((folder / "cases.json").read_text())
    beat = hp["DATA_W"] // 8
    with np.load(folder / "case.npz") as z:
        arrays = {k: z[k] for k in z.files}
    dut.start.value = 0
    dut.desc.value = 0
    await harness.start(dut)
    measured = []
    for i, case in enumerate(cases):
        f = dict(zip(WINDOW_FIELDS, case["fields"], strict=True))
        img = bytearray(arrays[f"img{i}"].tobytes())
        orig = bytes(img)
        mems = [AxiReadMemory(dut, "m_axi", img, 0, case["L"], beat / case["P"], beat),
                AxiWriteMemory(dut, "m_axi", img, 0, case["L"], beat / case["P"], beat),
                AxiReadMemory(dut, "w_axi", arrays[f"wimg{i}"].tobytes(), 0, case["L"], beat / case["P"], beat)]
        dut.desc.value = sum(v << (32 * k) for k, v in enumerate(case["desc"]))
        limit = 200 + 20 * case["predicted"]
        c = 0
        while True:
            await FallingEdge(dut.clk)
            for m in mems:
                m.step(c)
            dut.start.value = int(c == 0)
            if c > 0 and dut.done.value:
                break
            c += 1
            assert c < limit, f"layer {i}: no done after {c} cycles"
        measured.append(c)
        # a few idle cycles: every write response is in, nothing else moves
        await FallingEdge(dut.clk)
        ho, wo, ch = case["ho"], case["wo"], case["c"]
        got = read_features(bytes(img), f["OUT_BASE"], ho, wo, ch, hp["G"], stride=f["OUT_STRIDE"])
        want = arrays[f"want{i}"]
        bad = np.argwhere(got != want)
        assert not bad.size, f"layer {i}: {len(bad)} outputs differ, first at {bad[0]}: {got[tuple(bad[0])]} != {want[tuple(bad[0])]}"
        runs = case["runs"]
        blk = ho * wo * hp["G"]
        used = blk * f["C"] // hp["G"] if len(runs) == 1 else blk  # data bytes of a run
        kept = bytearray(orig)
        for lo, hi in runs:
            assert not any(img[lo + used:hi]), f"layer {i}: the tail of the run at {lo} is not zero"
            kept[lo:hi] = img[lo:hi]
        assert bytes(img) == bytes(kept), f"layer {i}: a byte outside the written runs changed"
        dut._log.info("layer %d: %d cycles (model %d), %d read beats in %d bursts, %d written in %d, %d weight beats", i, c,
                      case["predicted"], mems[0].beats, len(mems[0].requests), mems[1].beats,
                      len(mems[1].requests), mems[2].beats)
    path = os.environ.get("BBG_SIM_TIMING")
    if path:
        Path(path).write_text(json.dumps({"cycles": measured, "predicted": [c["predicted"] for c in cases]}))
    for i, (got, want) in enumerate(zip(measured, [c["predicted"] for c in cases], strict=True)):
        assert got == want, f"layer {i}: {got} cycles measured, the model says {want}"
