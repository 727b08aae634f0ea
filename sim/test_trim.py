"""cocotb testbench: trimming width converter (each pixel's padding lanes dropped, lane order
and tlast kept)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def trim_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, x, y = case["params"], case["arrays"]["x"], case["arrays"]["y"]
    await harness.run_stream(dut, {"s_axis": list(x)}, list(y), "trim", backpressure, idle,
                             expect.predict("trim", p))
