"""cocotb testbench: DDR frame stage (`hw/rtl/ddr_stage.sv`) against a simulated board memory.

Memory: an `AxiWriteMemory` and an `AxiReadMemory` on the one port prefix ``m_axi``, sharing one
``bytearray`` (the scratch regions): W beats and read beats at ``rate`` bytes per cycle each way, a
read burst's first beat and a write burst's response ``lat`` cycles late, AXI rules checked.
Driver and sink: one coroutine per falling edge steps the memories, offers the producer's beats
and sets the consumer's ``tready`` from the case's patterns, on one cycle count (cycle 0: the
producer's first offer). Three modes:

- ``stream``: a beat offered every cycle, the consumer always ready: every frame exact, every
  frame's first and last output beat at `stage.simulate`'s cycles, so frame 0's latency equal
  to `bbgrap_hls.model.stage.ddr_stage`'s and ii (mean of the frame intervals 1..) to its ii
  rounded up;
- ``deliver``: the consumer pauses after each frame (`stage.pause_ready`): the third frame's first
  to last beat equals the model's ``deliver``;
- ``stall``: idle input cycles and output back-pressure: every frame exact, and every frame's
  first and last beat, in and out, at the cycles `stage.simulate` gives for the same patterns.

Afterwards each region holds the last frame written to it, in the low LANES bytes of its beats.
"""

from __future__ import annotations

import json
import math
import os

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from bbgrap_hls.model import stage
from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory, AxiWriteMemory
from sim import expect, harness

OFFER = (1, 1, 0, 1, 0, 0, 1)                 # stall mode: the producer's offers, cycle mod 7
READY = (1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0)  # stall mode: the consumer's tready, cycle mod 12


def _record(mode: str, rec: dict) -> None:
    path = os.environ.get("BBG_SIM_TIMING")
    if not path:
        return
    data = json.loads(open(path).read()) if os.path.exists(path) else {}
    data[mode] = rec
    with open(path, "w") as f:
        json.dump(data, f)


@cocotb.test
@cocotb.parametrize(mode=["stream", "deliver", "stall"])
async def ddr_stage_frames(dut, mode: str):
    case = harness.case()
    p, x = case["params"], case["arrays"]["x"]
    lanes, fb, db = p["LANES"], p["FRAME_BEATS"], p["DATA_W"] // 8
    base = int(str(p["BASE"]).split("'h")[-1], 16) if "'h" in str(p["BASE"]) else int(p["BASE"])
    rate = p["rate"] if p["rate"] is not None else db
    frames = len(x)
    period = stage.period_of(db, p["rate"])
    cost = expect.stage(p)
    gap = stage.deliver_gap(fb, period, p["lat"], p["BURST"])
    offer = (lambda c: bool(OFFER[c % len(OFFER)])) if mode == "stall" else (lambda c: True)
    if mode == "stall":
        def ready(c: int, done: int) -> bool:
            return bool(READY[c % len(READY)])
    elif mode == "deliver":
        ready = stage.pause_ready(gap)
    else:
        def ready(c: int, done: int) -> bool:
            return True

    await harness.start(dut)
    image = bytearray(p["REGIONS"] * p["REGION_BYTES"])
    mems = [AxiWriteMemory(dut, "m_axi", image, base, p["lat"], rate, db),
            AxiReadMemory(dut, "m_axi", image, base, p["lat"], rate, db)]
    beats = x.reshape(frames * fb, lanes)
    words = [int.from_bytes(b.tobytes(), "little") for b in beats]
    total = frames * fb
    sent = taken = 0
    got: list[int] = []
    fin: list[tuple[int, int]] = []
    fout: list[tuple[int, int]] = []
    first_in = first_out = 0
    limit = 64 + 8 * frames * (fb * int(np.ceil(period)) + 4 * p["lat"] + 4 * p["BURST"]) + frames * gap
    c = 0
    while taken < total:
        assert c < limit, f"{mode}: {taken} of {total} beats out after {c} cycles"
        await FallingEdge(dut.clk)
        for m in mems:
            m.step(c)
        if sent < total and offer(c):
            dut.s_axis_tvalid.value = 1
            dut.s_axis_tdata.value = words[sent]
            dut.s_axis_tlast.value = int(sent % fb == fb - 1)
            if dut.s_axis_tready.value:
                first_in = c if sent % fb == 0 else first_in
                sent += 1
                if sent % fb == 0:
                    fin.append((first_in, c))
        else:
            dut.s_axis_tvalid.value = 0
        r = ready(c, len(fout))
        dut.m_axis_tready.value = int(r)
        if r and dut.m_axis_tvalid.value:
            got.append(int(dut.m_axis_tdata.value))
            assert bool(dut.m_axis_tlast.value) == (taken % fb == fb - 1), f"{mode}: tlast at beat {taken}"
            first_out = c if taken % fb == 0 else first_out
            taken += 1
            if taken % fb == 0:
                fout.append((first_out, c))
        c += 1
    dut.m_axis_tready.value = 0
    out = np.array([list(v.to_bytes(lanes, "little")) for v in got], dtype=np.uint8).astype(np.int8)
    harness.check_frames(dut, list(out.reshape(frames, fb * lanes)), list(x))
    # the scratch regions: each holds the last frame written to it (low LANES bytes of each beat)
    for k in range(max(0, frames - p["REGIONS"]), frames):
        r0 = (k % p["REGIONS"]) * p["REGION_BYTES"]
        reg = np.frombuffer(bytes(image[r0:r0 + fb * db]), dtype=np.int8).reshape(fb, db)
        assert (reg[:, :lanes] == x[k].reshape(fb, lanes)).all(), f"region {k % p['REGIONS']}: not frame {k}"
        assert not reg[:, lanes:].any(), f"region {k % p['REGIONS']}: upper bytes not zero"
    ends = [e for _, e in fout]
    intervals = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    rec = {"in": fin, "out": fout, "intervals": intervals, "aw": len(mems[0].requests),
           "ar": len(mems[1].requests)}
    if mode == "stream":
        steady = intervals[1:]
        rec |= {"ii": sum(steady) / len(steady), "latency": ends[0] - fin[0][0] + 1,
                "pred_ii": cost.ii, "pred_latency": cost.latency}
    elif mode == "deliver":
        rec |= {"deliver": [b - a + 1 for a, b in fout], "pred_deliver": cost.deliver}
    else:
        want = stage.simulate(fb, db, period, p["lat"], p["BURST"], p["REGIONS"], p.get("WDEPTH", 2 * p["BURST"]),
                              p.get("ODEPTH", 2 * p["BURST"] + 128), frames, ready=ready, offer=offer)
        rec |= {"pred_in": want.inputs, "pred_out": want.outputs}
    _record(mode, rec)
    dut._log.info("%s: %s", mode, rec)
    if mode == "stream":
        # the model's ii is the mean interval rounded up (two regions alternate short and long)
        assert (math.ceil(rec["ii"] - 1e-9), rec["latency"]) == (cost.ii, cost.latency), \
            f"stream: ii {rec['ii']} latency {rec['latency']}, model {cost.ii} {cost.latency} (intervals {intervals})"
        want = stage.simulate(fb, db, period, p["lat"], p["BURST"], p["REGIONS"], p.get("WDEPTH", 2 * p["BURST"]),
                              p.get("ODEPTH", 2 * p["BURST"] + 128), frames)
        assert [tuple(v) for v in fout] == want.outputs, f"stream: out {fout}, model {want.outputs}"
    elif mode == "deliver":
        assert rec["deliver"][2] == cost.deliver, f"deliver: {rec['deliver']}, model {cost.deliver}"
    else:
        assert [tuple(v) for v in fin] == want.inputs and [tuple(v) for v in fout] == want.outputs, \
            f"stall: in {fin} out {fout}, model in {want.inputs} out {want.outputs}"
