"""cocotb testbench: the engine's element-wise unit (`hw/rtl/engine_eltwise.sv`).

Driver: the layers of the case (`sim.engine_eltwise.prepare_layer`) one after the other: the
descriptor on ``desc``, a one-cycle ``start``, wait for ``done``. Memory
(`bbgrap_hls.rtlsim.axi_mem`, paced: each beat at least ``P`` cycles after the one before was
taken, the memory the unit's model assumes): an `AxiReadMemory` on the feature port's read
channels (holding a beat the unit does not take yet: its lanes busy, or its table not yet
written) and on the weight
port (`TwoImageRead`: the table from the weight image, ADD's and MUL's B bursts, ``w_axi_feat``
high, from the feature image; holding B beats like A's), an `AxiWriteMemory` on the feature port's write channels (a W beat only after its
address), one ``bytearray`` per memory (the feature image read and written in place), each
with the layer's latency ``L`` and one beat every ``P`` cycles, stepped at every falling edge
from one coroutine; they check the AXI rules the unit promises. Model: the reference map
(`bbgrap_hls.codegen.engine_eltwise.reference`). Scoreboard: the output map's channels exact (its padding channels are the op on the operands'
padding, not checked), every
byte outside the written beats (the map's runs: the whole map, or with strided blocks each
block's beats) unchanged, and the cycles from the start pulse to the done
pulse equal to the cost model's (`bbgrap_hls.model.engine_eltwise.layer_cycles`); the
cycles go to ``BBG_SIM_TIMING`` for the pytest side. A *stall* layer drops the address
channels' ready on a pattern (`STALL`): the unit must hold its requests; its map is checked,
its cycles (which the model does not cover) are not.

Cycle ``c`` is sampled at its falling edge: what the unit drives there is what the rising
edge ending ``c`` takes; the memories drive their answers there too.
"""

from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory, AxiWriteMemory
from sim import harness

STALL = (1, 0, 0, 1, 1, 0, 1)
"""A stall layer's address-channel ready, cycle mod 7 (otherwise always ready)."""


class TwoImageRead(AxiReadMemory):
    """The weight port's memory: each burst from the image ``w_axi_feat`` picks at its address
    handshake (high: ``feat``, the feature image; low: the weight image)."""

    def __init__(self, dut, feat: bytearray, wmem: bytearray, beat: int):
        super().__init__(dut, "w_axi", wmem, 0, 1, beat, beat, paced=True, hold=True)
        self.images, self.picks, self._feat = (wmem, feat), [], dut.w_axi_feat

    def _request(self, cycle: int, ch: str) -> tuple[int, int]:
        pick = int(self._feat.value)
        self.picks.append(pick)
        cur, self.mem = self.mem, self.images[pick]
        try:
            return super()._request(cycle, ch)
        finally:
            self.mem = cur

    def step(self, cycle: int) -> None:
        if self._left == 0 and self.bursts and self.bursts[0][0] <= cycle:  # a burst starts
            self.mem = self.images[self.picks.pop(0)]
        super().step(cycle)


@cocotb.test
async def engine_eltwise_layers(dut):
    case = harness.case()
    p, arr = case["params"], case["arrays"]
    beat = p["DATA_W"] // 8
    await harness.start(dut)
    dut.start.value = 0
    feat, wmem = bytearray(), bytearray()
    # the feature reads held while the lanes are busy or the table is still being written
    ports = [AxiReadMemory(dut, "m_axi", feat, 0, 1, beat, beat, paced=True, hold=True),
             AxiWriteMemory(dut, "m_axi", feat, 0, 1, beat, beat, paced=True, aw_first=True),
             TwoImageRead(dut, feat, wmem, beat)]
    record = []
    cycle = 0
    for i in range(p["layers"]):
        desc = [int(v) for v in arr[f"desc{i}"]]
        lat, per = (int(v) for v in arr[f"mem{i}"])
        pred = int(arr[f"pred{i}"][0])  # -1: a stall layer, not timed
        feat[:] = arr[f"feat{i}"].tobytes()
        wmem[:] = arr[f"wimg{i}"].tobytes()
        before = bytes(feat)
        stall = bool(arr[f"stall{i}"][0])
        for port in ports:
            port.retime(lat, per)
            port.stall = STALL if stall else None
            port.requests.clear()
        ports[2].picks.clear()
        ports[0].beats = 0
        dut.desc.value = sum((v & 0xFFFFFFFF) << (32 * k) for k, v in enumerate(desc))
        await FallingEdge(dut.clk)
        dut.start.value = 1
        t0 = cycle = 0
        got = None
        while got is None:
            assert cycle < 4 * abs(pred) + 2000, f"layer {i}: no done after {cycle} cycles (model {pred})"
            if cycle:
                await FallingEdge(dut.clk)
                dut.start.value = 0
                if dut.done.value:
                    got = cycle - t0
            for port in ports:
                port.step(cycle)
            cycle += 1
        # scoreboard: the map exact, nothing outside the written beats changed
        ob, n = (int(v) for v in arr[f"out{i}"])
        out = np.frombuffer(bytes(feat[ob:ob + n]), np.int8)
        want = np.frombuffer(arr[f"want{i}"].tobytes(), np.int8)
        bad = np.flatnonzero((out != want) & arr[f"real{i}"])
        assert bad.size == 0, f"layer {i}: {bad.size} of {n} bytes differ, first at {bad[0]}: {out[bad[0]]} vs {want[bad[0]]}"
        wbeats = [int(v) for v in arr[f"wbeats{i}"]]
        written = [a + k * beat for _, a, n in ports[1].requests for k in range(n)]  # every burst is written by done
        assert sorted(written) == wbeats, f"layer {i}: beats written"
        outside = bytearray(feat)
        for a in wbeats:
            outside[a:a + beat] = before[a:a + beat]
        assert bytes(outside) == before, f"layer {i}: bytes outside the output map's runs changed"
        record.append({"cycles": got, "pred": pred, "reads": ports[0].beats, "writes": len(written)})
        dut._log.info("layer %d: %d cycles, model %d", i, got, pred)
        for _ in range(3):  # idle a few cycles between layers
            await FallingEdge(dut.clk)
            for port in ports:
                port.step(cycle)
            cycle += 1
    path = os.environ.get("BBG_SIM_TIMING")
    if path:
        with open(path, "w") as f:
            json.dump(record, f)
    for i, r in enumerate(record):
        assert r["pred"] < 0 or r["cycles"] == r["pred"], f"layer {i}: {r['cycles']} cycles measured, model {r['pred']}"
