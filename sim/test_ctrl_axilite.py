"""cocotb testbench: ctrl_axilite (NARGS = 3) alone, the ap_ctrl_hs register semantics.

Drives the kernel side (ap_done, ap_ready, ap_idle) by hand and checks, through
cocotbext-axi's AxiLiteMaster: idle after reset, ap_start set by a write and cleared by
ap_ready, ap_done and ap_ready clear on read, auto_restart, GIE/IER/ISR and the interrupt
(ISR toggled by a written 1), argument slots written with byte strobes and read back in both
words, addresses outside the map read 0 and ignore writes.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

NARGS = 3


async def _pulse(dut, done: bool, ready: bool) -> None:
    await RisingEdge(dut.clk)
    dut.ap_done.value = int(done)
    dut.ap_ready.value = int(ready)
    await RisingEdge(dut.clk)
    dut.ap_done.value = 0
    dut.ap_ready.value = 0
    await RisingEdge(dut.clk)


@cocotb.test()
async def registers(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.ap_done.value = 0
    dut.ap_ready.value = 0
    dut.ap_idle.value = 1
    m = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.clk, dut.rst)
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)

    assert await m.read_dword(0x00) == 0x4, "idle, nothing else, after reset"
    assert int(dut.ap_start.value) == 0 and int(dut.irq.value) == 0

    # ap_start: set by a write of 1, held until ap_ready; writing 0 does not clear it
    await m.write_dword(0x00, 1)
    assert int(dut.ap_start.value) == 1
    dut.ap_idle.value = 0
    await m.write_dword(0x00, 0)
    assert int(dut.ap_start.value) == 1
    assert await m.read_dword(0x00) == 0x1
    await _pulse(dut, done=True, ready=True)
    dut.ap_idle.value = 1
    assert int(dut.ap_start.value) == 0
    assert await m.read_dword(0x00) == 0xE, "done, idle and ready after the run"
    assert await m.read_dword(0x00) == 0x4, "done and ready clear on read"

    # interrupts: ISR follows the enabled events, irq needs GIE, a written 1 toggles ISR
    await m.write_dword(0x08, 0x1)
    await _pulse(dut, done=True, ready=True)
    assert await m.read_dword(0x0C) == 0x1 and int(dut.irq.value) == 0
    await m.write_dword(0x04, 1)
    await RisingEdge(dut.clk)
    assert int(dut.irq.value) == 1
    await m.write_dword(0x0C, 0x1)
    await RisingEdge(dut.clk)
    assert await m.read_dword(0x0C) == 0x0 and int(dut.irq.value) == 0
    await m.write_dword(0x08, 0x2)
    await _pulse(dut, done=False, ready=True)
    assert await m.read_dword(0x0C) == 0x2 and int(dut.irq.value) == 1
    await m.write_dword(0x0C, 0x2)
    assert await m.read_dword(0x04) == 1 and await m.read_dword(0x08) == 0x2
    await m.read_dword(0x00)  # clear the sticky bits

    # auto_restart: ap_start comes back at every ap_done until the bit is cleared
    await m.write_dword(0x00, 0x81)
    await _pulse(dut, done=True, ready=True)
    assert int(dut.ap_start.value) == 1
    assert await m.read_dword(0x00) & 0x83 == 0x83
    await m.write_dword(0x00, 0x00)
    await _pulse(dut, done=True, ready=True)
    assert int(dut.ap_start.value) == 0

    # argument slots: 64 bits each from 0x10, byte strobes honoured, both words read back
    rng = random.Random(7)
    model = [0] * NARGS
    for _ in range(40):
        k = rng.randrange(NARGS)
        off = rng.randrange(8)
        n = rng.randint(1, 4 - off % 4)
        data = bytes(rng.randrange(256) for _ in range(n))
        await m.write(0x10 + 8 * k + off, data)
        b = bytearray(model[k].to_bytes(8, "little"))
        b[off:off + n] = data
        model[k] = int.from_bytes(b, "little")
    for k in range(NARGS):
        lo, hi = await m.read_dword(0x10 + 8 * k), await m.read_dword(0x14 + 8 * k)
        assert lo | hi << 32 == model[k], (k, hex(lo | hi << 32), hex(model[k]))
        assert (int(dut.args.value) >> (64 * k)) & (2**64 - 1) == model[k]
    # outside the map: reads 0, writes change nothing
    await m.write_dword(0x10 + 8 * NARGS, 0xFFFFFFFF)
    assert await m.read_dword(0x10 + 8 * NARGS) == 0
    assert [int(dut.args.value) >> (64 * k) & (2**64 - 1) for k in range(NARGS)] == model
