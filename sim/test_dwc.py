"""cocotb testbench: width converter (lane order and tlast kept)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def dwc_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, x = case["params"], case["arrays"]["x"]
    await harness.run_stream(dut, {"s_axis": list(x)}, list(x), "dwc", backpressure, idle,
                             expect.predict("dwc", p))
