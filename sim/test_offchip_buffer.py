"""cocotb testbench: off-chip buffer with barrier (no beat of a frame leaves before its last beat arrives)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def offchip_buffer_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, x = case["params"], case["arrays"]["x"]
    await harness.run_stream(dut, {"s_axis": list(x)}, list(x), "offchip_buffer", backpressure, idle,
                             expect.predict("offchip_buffer", p))
