"""cocotb testbench: fifo (order kept, tlast kept, one beat per cycle)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def fifo_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    x = case["arrays"]["x"]
    frames = list(x)
    beats = x.shape[1] * 8 // case["params"]["WIDTH"]
    await harness.run_stream(dut, {"s_axis": frames}, frames, "fifo", backpressure, idle, expect.fifo(beats))
