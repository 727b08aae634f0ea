"""cocotb testbench of a design's RTL kernels (``gen --kernels rtl``), driven as XRT drives them.

The top is ``rtl_kernel/platform.sv``: the kernels joined by their ``stream_connect`` FIFOs,
every ``s_axi_control`` and ``m_axi_*`` port at the top. One memory (cocotbext-axi
``AxiRamRead``/``AxiRamWrite`` per port, all on one shared byte array) holds every buffer
object of ``host/design.json`` at 4 KB aligned addresses, as XRT allocates them.

Per run: write the run's input frames, fill the output buffers with a marker, set every
kernel's arguments through ``AxiLiteMaster`` at the offsets of ``kernel.xml`` (64-bit
buffer addresses, ``frames``, ``load_weights``), then follow the host schedule of
``design.json``: "start" writes ap_start (0x00 bit 0), "wait" polls 0x00 until ap_done
(bit 1, clear on read), as XRT does for an ap_ctrl_hs kernel. Before the first run every
kernel must read idle; each kernel's interrupt (GIE and IER bit 0 enabled) must rise with
ap_done and fall when ISR bit 0 is written. The outputs are read back from memory and
written with the cycles of each run to the results file; `kernel_run` compares them.

Configuration: the JSON file named by ``BBG_KSIM``.
"""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiRamRead, AxiRamWrite, AxiReadBus, AxiWriteBus

PERIOD_NS = 10
MARKER = 0xA5  # output buffers are filled with this before a run


def _present(bus):
    """``bus`` without the optional signals the port lacks (cocotb_bus leaves them as None
    attributes, which cocotbext-axi's channel drivers then try to drive)."""
    for ch in ("ar", "r", "aw", "w", "b"):
        sub = getattr(bus, ch, None)
        for name in [n for n, v in list(vars(sub).items()) if v is None and not n.startswith("_")] if sub else []:
            delattr(sub, name)
    return bus


def _cycle() -> int:
    return int(get_sim_time(unit="ns")) // PERIOD_NS


@cocotb.test()
async def run_kernels(dut):
    cfg = json.loads(Path(os.environ["BBG_KSIM"]).read_text())
    frames, runs = int(cfg["frames"]), int(cfg["runs"])
    timeout = int(cfg["timeout_cycles"])
    cocotb.start_soon(Clock(dut.ap_clk, PERIOD_NS, unit="ns").start())
    dut.ap_rst_n.value = 0

    # XRT-like allocation: every buffer object 4 KB aligned
    addr, nxt = {}, 0x1000
    for b in cfg["buffers"]:
        addr[b["name"]] = nxt
        nxt += -(-max(1, b["bytes"]) // 4096) * 4096
    mem = mmap.mmap(-1, nxt)
    size = nxt
    for k in cfg["kernels"]:
        for p in k["ports"]:
            if p["kind"] != "m_axi":
                continue
            prefix = f"{k['name']}_{p['name']}"
            if p["mode"] == "write":
                AxiRamWrite(_present(AxiWriteBus.from_prefix(dut, prefix)), dut.ap_clk, dut.ap_rst_n,
                            reset_active_level=False, size=size, mem=mem)
            else:
                AxiRamRead(_present(AxiReadBus.from_prefix(dut, prefix)), dut.ap_clk, dut.ap_rst_n,
                           reset_active_level=False, size=size, mem=mem)
    ctrl = {k["name"]: AxiLiteMaster(_present(AxiLiteBus.from_prefix(dut, f"{k['name']}_s_axi_control")), dut.ap_clk,
                                     dut.ap_rst_n, reset_active_level=False) for k in cfg["kernels"]}
    await ClockCycles(dut.ap_clk, 8)
    dut.ap_rst_n.value = 1
    await ClockCycles(dut.ap_clk, 8)

    for b in cfg["buffers"]:
        if b.get("image"):
            mem[addr[b["name"]]:addr[b["name"]] + b["bytes"]] = bytes.fromhex(b["image"])
    result: dict = {"runs": [], "checks": [], "addresses": addr}
    for name, m in ctrl.items():
        st = await m.read_dword(0x00)
        result["checks"].append({"kernel": name, "what": "idle after reset", "ok": st == 0x4, "value": st})
        await m.write_dword(0x04, 1)  # GIE
        await m.write_dword(0x08, 1)  # IER: ap_done
    kargs = {k["name"]: k["args"] for k in cfg["kernels"]}
    host_args = {k["name"]: {a["name"]: a for a in k["args"]} for k in cfg["host_kernels"]}
    for r in range(runs):
        for b in cfg["buffers"]:
            if b["role"] == "input":
                mem[addr[b["name"]]:addr[b["name"]] + b["bytes"]] = bytes.fromhex(b["runs"][r])
            elif b["role"] == "output":  # the whole 4 KB-aligned object, to see writes past its end
                end = addr[b["name"]] + -(-max(1, b["bytes"]) // 4096) * 4096
                mem[addr[b["name"]]:end] = bytes([MARKER]) * (end - addr[b["name"]])
        for name, m in ctrl.items():
            for a in kargs[name]:
                if a["kind"] == "pointer":
                    v = addr[host_args[name][a["name"]]["buffer"]] + (r << 32)  # high word exercised too
                    await m.write_dword(a["offset"], v & 0xFFFFFFFF)
                    await m.write_dword(a["offset"] + 4, v >> 32)
                    back = await m.read_dword(a["offset"]) | (await m.read_dword(a["offset"] + 4)) << 32
                    result["checks"].append({"kernel": name, "run": r, "what": f"argument {a['name']} reads back",
                                             "ok": back == v, "value": back})
                    await m.write_dword(a["offset"] + 4, (v >> 32) - r)  # the buffer's address
                elif a["kind"] == "scalar":
                    await m.write_dword(a["offset"], frames if a["name"] == "frames" else 1)
        t0 = _cycle()
        done_at = {}
        for step, name in cfg["schedule"]:
            m = ctrl[name]
            if step == "start":
                await m.write_dword(0x00, 1)
                continue
            # wait: poll ap_done as XRT does for ap_ctrl_hs
            while True:
                st = await m.read_dword(0x00)
                if st & 0x2:
                    break
                if _cycle() - t0 > timeout:
                    result["timeout"] = {"run": r, "kernel": name, "cycles": _cycle() - t0, "status": st}
                    Path(cfg["results"]).write_text(json.dumps(result))
                    return
                await ClockCycles(dut.ap_clk, 16)
            done_at[name] = _cycle() - t0
            irq = int(getattr(dut, f"{name}_interrupt").value)
            isr = await m.read_dword(0x0C)
            await m.write_dword(0x0C, 1)  # toggle ISR bit 0: clears it
            await RisingEdge(dut.ap_clk)
            irq_after = int(getattr(dut, f"{name}_interrupt").value)
            st = await m.read_dword(0x00)
            result["checks"].append({"kernel": name, "run": r, "what": "interrupt with ap_done, cleared by ISR",
                                     "ok": irq == 1 and isr & 1 == 1 and irq_after == 0, "value": [irq, isr, irq_after]})
            result["checks"].append({"kernel": name, "run": r, "what": "idle, start cleared, done read once",
                                     "ok": st == 0x4, "value": st})
        outs = {b["name"]: bytes(mem[addr[b["name"]]:addr[b["name"]] + b["bytes"]]).hex()
                for b in cfg["buffers"] if b["role"] == "output"}
        for b in cfg["buffers"]:
            if b["role"] == "output":
                a = addr[b["name"]] + b["bytes"]
                rest = bytes(mem[a:addr[b["name"]] + -(-max(1, b["bytes"]) // 4096) * 4096])
                result["checks"].append({"kernel": b["kernel"], "run": r, "what": f"nothing written past {b['name']}",
                                         "ok": rest == bytes([MARKER]) * len(rest), "value": len(rest)})
        result["runs"].append({"outputs": outs, "cycles": _cycle() - t0, "done_at": done_at})
    Path(cfg["results"]).write_text(json.dumps(result))
