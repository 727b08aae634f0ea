"""cocotb testbench: maxpool (swg -> vvu), per-channel reduction over each window."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def maxpool_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    win = a["win"]
    want = list(win.max(axis=(3, 4)))  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "maxpool", backpressure, idle, expect.predict("maxpool", p))
