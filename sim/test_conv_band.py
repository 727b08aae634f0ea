"""cocotb testbench: banded off-chip conv (`hw/rtl/conv_band.sv`).

As `sim/test_conv_offchip.py` (the same AXI memory model and golden model), with the frame's
output rows computed ``BANDS`` at a time: each weight tile is read once per band. Without
``stall`` the source offers the frames back to back and the sink never back-pressures, and the
measured ii (frames 1..) and frame 0's latency must equal the cost model's (`sim.band.predict`,
passed in the case); with ``stall`` the source idles and the sink back-pressures in fixed
patterns and only the outputs (and tlast: frames of Ho·Wo·Co/PE bytes) are checked.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from sim import golden, harness
from sim.test_conv_offchip import AxiReadMemory


@cocotb.test
async def conv_band_stream(dut):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    acc = np.einsum("fyxijc,oijc->fyxo", a["win"].astype(np.int64), a["w"].astype(np.int64)) + a["bias"]
    want = [golden.requant(f, *a["rq"].T) for f in acc]
    beat = p["DATA_W"] // 8
    mem = AxiReadMemory(dut, a["image"].tobytes(), int(p["base"]), p["L"], p.get("R", beat), beat)
    await harness.start(dut)
    tile_beats = a["image"].size // (p["CO"] // p["PE"]) // beat
    for _ in range(2 * (p["L"] + tile_beats * mem.period) + 8 + p["H"] * p["W"] * p["C"] // p["SIMD"]):
        await RisingEdge(dut.clk)
    stall = bool(p.get("stall"))
    src = harness.source(dut, "s_axis", idle=stall)
    snk = harness.sink(dut, "m_axis", backpressure=stall)
    mon_in, mon_out = harness.BeatMonitor(dut, "s_axis"), harness.BeatMonitor(dut, "m_axis")
    cocotb.start_soon(harness.send_frames(src, list(a["x"])))
    got = await harness.recv_frames(snk, len(want))
    harness.check_frames(dut, got, want)
    nf, bands = p["CO"] // p["PE"], p["BANDS"]
    tiles = sum(n for _, _, n in mem.requests) // tile_beats
    dut._log.info("weights: %d tiles requested (%d frames of %d bands of %d folds)", tiles, len(want), bands, nf)
    assert tiles == len(want) * bands * nf + 2, f"{tiles} tiles read, {len(want)}·{bands}·{nf} + 2 expected"
    if not stall:
        harness.check_timing(dut, harness.Timing.measure(mon_in, mon_out), *p["predict"], "conv_band")
