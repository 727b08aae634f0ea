"""cocotb testbench: convolution with off-chip weights (`hw/rtl/conv_offchip.sv`).

Driver: a cocotbext-axi source offering the frames back to back, one beat per cycle; the
sink never back-pressures. Memory: `AxiReadMemory` serves the weight image on the AXI4 read
channels with a latency of ``L`` cycles from a burst's address handshake to its first beat
and one beat every ``DATA_W/8 / R`` cycles (``R`` bytes per cycle), bursts in order; it
checks the AXI rules the module promises (INCR, full-width beats, at most 256 beats, no 4 KB
crossing, rready high). Model: acc = bias + windows·weights, requantised (`sim.golden`).
Scoreboard: every frame exact; ii (frames 1..) and frame 0's latency equal to the cost model
(`sim.offchip.predict`); each weight byte read once per frame.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge

from sim import golden, harness, offchip


class AxiReadMemory:
    """An AXI4 read slave with a fixed first-beat latency and a fixed rate (see module doc)."""

    def __init__(self, dut, image: bytes, base: int, latency: int, rate: int, beat_bytes: int):
        assert latency >= 1 and beat_bytes % rate == 0, "latency >= 1 and R | DATA_W/8"
        self.dut, self.base, self.latency = dut, base, latency
        self.period, self.beat = beat_bytes // rate, beat_bytes
        self.mem = bytes(image)
        self.bursts: list[tuple[int, int, int]] = []  # (first-beat cycle, address, beats)
        self.requests: list[tuple[int, int, int]] = []  # (cycle, address, beats) seen on AR
        self.beats = 0
        dut.m_axi_arready.value = 1
        dut.m_axi_rvalid.value = 0
        dut.m_axi_rlast.value = 0
        dut.m_axi_rresp.value = 0
        dut.m_axi_rdata.value = 0
        cocotb.start_soon(self._run())

    def _check(self, addr: int, beats: int) -> None:
        d = self.dut
        assert int(d.m_axi_arburst.value) == 1, "INCR bursts only"
        assert 1 << int(d.m_axi_arsize.value) == self.beat, "full-width beats"
        assert 1 <= beats <= 256, f"burst of {beats} beats"
        assert addr % self.beat == 0, f"unaligned burst at {addr:#x}"
        assert addr // 4096 == (addr + beats * self.beat - 1) // 4096, f"burst at {addr:#x} crosses 4 KB"
        lo = addr - self.base
        assert 0 <= lo and lo + beats * self.beat <= len(self.mem), f"burst at {addr:#x} outside the image"

    async def _run(self) -> None:
        d, cycle, nxt = self.dut, 0, 0
        addr = left = 0
        while True:
            await FallingEdge(d.clk)
            if d.rst.value:
                cycle += 1
                continue
            if d.m_axi_arvalid.value and d.m_axi_arready.value:
                a, n = int(d.m_axi_araddr.value), int(d.m_axi_arlen.value) + 1
                self._check(a, n)
                self.requests.append((cycle, a, n))
                self.bursts.append((cycle + self.latency, a, n))
            d.m_axi_rvalid.value = 0
            if left == 0 and self.bursts and self.bursts[0][0] <= cycle:
                _, addr, left = self.bursts.pop(0)
            if left and cycle >= nxt:
                assert d.m_axi_rready.value, "rready low"
                lo = addr - self.base
                d.m_axi_rdata.value = int.from_bytes(self.mem[lo:lo + self.beat], "little")
                d.m_axi_rlast.value = int(left == 1)
                d.m_axi_rvalid.value = 1
                addr, left, nxt = addr + self.beat, left - 1, cycle + self.period
                self.beats += 1
            cycle += 1


@cocotb.test
async def conv_offchip_stream(dut):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    acc = np.einsum("fyxijc,oijc->fyxo", a["win"].astype(np.int64), a["w"].astype(np.int64)) + a["bias"]
    want = [golden.requant(f, *a["rq"].T) for f in acc]
    beat = p["DATA_W"] // 8
    mem = AxiReadMemory(dut, a["image"].tobytes(), int(p["base"]), p["L"], p.get("R", beat), beat)
    await harness.start(dut)
    # the first two tiles load while the block idles (an empty pipeline): wait for them
    tile_beats = a["image"].size // (p["CO"] // p["PE"]) // beat
    for _ in range(2 * (p["L"] + tile_beats * mem.period) + 8):
        await RisingEdge(dut.clk)
    src = harness.source(dut, "s_axis", idle=False)
    snk = harness.sink(dut, "m_axis", backpressure=False)
    mon_in, mon_out = harness.BeatMonitor(dut, "s_axis"), harness.BeatMonitor(dut, "m_axis")
    cocotb.start_soon(harness.send_frames(src, list(a["x"])))
    got = await harness.recv_frames(snk, len(want))
    harness.check_frames(dut, got, want)
    nf = p["CO"] // p["PE"]
    tiles = sum(n for _, _, n in mem.requests) // tile_beats
    dut._log.info("weights: %d tiles requested (%d frames of %d folds), %d beats served",
                  tiles, len(want), nf, mem.beats)
    assert tiles == len(want) * nf + 2, f"{tiles} tiles read for {len(want)} frames of {nf} folds (+2 ahead)"
    harness.check_timing(dut, harness.Timing.measure(mon_in, mon_out), *offchip.predict(p), "conv_offchip")
