"""cocotb testbench: fifo (order kept, tlast kept, one beat per cycle)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def fifo_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p = case["params"]
    x = case["arrays"]["x"]
    frames = list(x)
    await harness.run_stream(dut, {"s_axis": frames}, frames, "fifo", backpressure, idle, expect.predict("fifo", p))
