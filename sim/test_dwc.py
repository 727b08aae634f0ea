"""cocotb testbench: width converter (lane order and tlast kept; a trimming one drops each
pixel's padding lanes)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def dwc_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, x = case["params"], case["arrays"]["x"]
    want = case["arrays"].get("y", x)
    await harness.run_stream(dut, {"s_axis": list(x)}, list(want), "dwc", backpressure, idle,
                             expect.predict("dwc", p))
