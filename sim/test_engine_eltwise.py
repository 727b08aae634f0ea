"""cocotb testbench: the engine's element-wise unit (`hw/rtl/engine_eltwise.sv`).

Driver: the layers of the case (`sim.engine_eltwise.prepare_layer`) one after the other: the
descriptor on ``desc``, a one-cycle ``start``, wait for ``done``. Memory: `ReadPort` on the
feature port's read channels and on the weight port, `WritePort` on the feature port's write
channels, one ``bytearray`` per memory (the feature image read and written in place), each
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

from sim import harness


def _check(where: str, dut, ch: str, beat: int, addr: int, beats: int, size: int) -> None:
    """The AXI rules of an address handshake on channel ``ch`` (ar, aw) of port ``where``."""
    assert int(getattr(dut, f"{where}_{ch}burst").value) == 1, f"{where}: INCR bursts only"
    assert 1 << int(getattr(dut, f"{where}_{ch}size").value) == beat, f"{where}: full-width beats"
    assert 1 <= beats <= 256, f"{where}: burst of {beats} beats"
    assert addr % beat == 0, f"{where}: unaligned burst at {addr:#x}"
    assert addr // 4096 == (addr + beats * beat - 1) // 4096, f"{where}: burst at {addr:#x} crosses 4 KB"
    assert 0 <= addr and addr + beats * beat <= size, f"{where}: burst at {addr:#x} outside the memory"


STALL = (1, 0, 0, 1, 1, 0, 1)
"""A stall layer's address-channel ready, cycle mod 7 (otherwise always ready)."""


class ReadPort:
    """An AXI4 read slave: ``arready`` high (or following `STALL`), a burst's first beat ``latency`` cycles after its
    address handshake and each beat at least ``period`` cycles after the one before was taken
    (bursts in order); a beat not taken (``rready`` low: a unit narrower than its beat) is
    driven again the next cycle. ``hold`` False: ``rready`` required high whenever a beat is
    driven. ``rready`` is sampled where the beat is driven: the unit's depends on its
    registers only."""

    def __init__(self, dut, prefix: str, mem: bytearray, beat: int, hold: bool = False):
        self.dut, self.p, self.mem, self.beat, self.hold = dut, prefix, mem, beat, hold
        self.latency = self.period = 1
        self.stall = False
        self.queue: list[tuple[int, int, int]] = []  # (first-beat cycle, address, beats)
        self.addr = self.left = 0
        self.nxt = 0
        self.beats = 0
        self._sig("arready").value = 1
        self._sig("rvalid").value = 0
        self._sig("rlast").value = 0
        self._sig("rresp").value = 0
        self._sig("rdata").value = 0

    def _sig(self, name: str):
        return getattr(self.dut, f"{self.p}_{name}")

    def step(self, cycle: int) -> None:
        ready = not self.stall or bool(STALL[cycle % len(STALL)])
        self._sig("arready").value = int(ready)
        if ready and self._sig("arvalid").value:
            a, n = int(self._sig("araddr").value), int(self._sig("arlen").value) + 1
            _check(self.p, self.dut, "ar", self.beat, a, n, len(self.mem))
            self.queue.append((cycle + self.latency, a, n))
        if self.left == 0 and self.queue and self.queue[0][0] <= cycle:
            _, self.addr, self.left = self.queue.pop(0)
        if self.left and cycle >= self.nxt:
            taken = bool(self._sig("rready").value)
            assert taken or self.hold, f"{self.p}: rready low"
            self._sig("rdata").value = int.from_bytes(self.mem[self.addr:self.addr + self.beat], "little")
            self._sig("rlast").value = int(self.left == 1)
            self._sig("rvalid").value = 1
            if taken:
                self.addr, self.left, self.nxt = self.addr + self.beat, self.left - 1, cycle + self.period
                self.beats += 1
        else:
            self._sig("rvalid").value = 0


class WritePort:
    """An AXI4 write slave: ``awready`` high (or following `STALL`); a burst's W beats accepted from the cycle of its
    address handshake, each at least ``period`` cycles after the one before; its response
    ``latency`` cycles after its last beat (responses in order, one a cycle, ``bready``
    required high). Checked: ``wlast`` exactly on a burst's last beat, full strobes, no W
    beat without an address."""

    def __init__(self, dut, prefix: str, mem: bytearray, beat: int):
        self.dut, self.p, self.mem, self.beat = dut, prefix, mem, beat
        self.latency = self.period = 1
        self.stall = False
        self.queue: list[tuple[int, int]] = []  # (address, beats) taken, not yet written
        self.addr = self.left = 0
        self.nxt = 0
        self.b: list[int] = []  # due cycles of the responses
        self.written: list[int] = []  # beat addresses written
        self._sig("awready").value = 1
        self._sig("wready").value = 0
        self._sig("bvalid").value = 0
        self._sig("bresp").value = 0

    def _sig(self, name: str):
        return getattr(self.dut, f"{self.p}_{name}")

    def step(self, cycle: int) -> None:
        aw_ready = not self.stall or bool(STALL[cycle % len(STALL)])
        self._sig("awready").value = int(aw_ready)
        if aw_ready and self._sig("awvalid").value:
            a, n = int(self._sig("awaddr").value), int(self._sig("awlen").value) + 1
            _check(self.p, self.dut, "aw", self.beat, a, n, len(self.mem))
            self.queue.append((a, n))
        if self.left == 0 and self.queue:
            self.addr, self.left = self.queue.pop(0)
        ready = bool(self.left) and cycle >= self.nxt
        self._sig("wready").value = int(ready)
        if self._sig("wvalid").value:
            assert self.left, f"{self.p}: a W beat without its address"
        if ready and self._sig("wvalid").value:
            assert int(self._sig("wstrb").value) == (1 << self.beat) - 1, f"{self.p}: partial strobes"
            assert bool(self._sig("wlast").value) == (self.left == 1), f"{self.p}: wlast with {self.left} beats left"
            self.mem[self.addr:self.addr + self.beat] = int(self._sig("wdata").value).to_bytes(self.beat, "little")
            self.written.append(self.addr)
            self.addr, self.left, self.nxt = self.addr + self.beat, self.left - 1, cycle + self.period
            if self.left == 0:
                self.b.append(cycle + self.latency)
        if self.b and self.b[0] <= cycle:
            assert self._sig("bready").value, f"{self.p}: bready low"
            self.b.pop(0)
            self._sig("bvalid").value = 1
        else:
            self._sig("bvalid").value = 0


@cocotb.test
async def engine_eltwise_layers(dut):
    case = harness.case()
    p, arr = case["params"], case["arrays"]
    beat = p["DATA_W"] // 8
    await harness.start(dut)
    dut.start.value = 0
    feat, wmem = bytearray(), bytearray()
    narrow = p.get("LANES", beat) < beat  # the feature reads held while the lanes are busy
    ports = [ReadPort(dut, "m_axi", feat, beat, narrow), WritePort(dut, "m_axi", feat, beat),
             ReadPort(dut, "w_axi", wmem, beat)]
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
            port.latency, port.period, port.nxt, port.stall = lat, per, 0, stall
        ports[1].written.clear()
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
        assert sorted(ports[1].written) == wbeats, f"layer {i}: beats written"
        outside = bytearray(feat)
        for a in wbeats:
            outside[a:a + beat] = before[a:a + beat]
        assert bytes(outside) == before, f"layer {i}: bytes outside the output map's runs changed"
        record.append({"cycles": got, "pred": pred, "reads": ports[0].beats, "writes": len(ports[1].written)})
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
