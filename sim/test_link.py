"""cocotb testbench: inter-core link (latency, width throttling, credit back-pressure)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def link_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, x = case["params"], case["arrays"]["x"]
    await harness.run_stream(dut, {"s_axis": list(x)}, list(x), "link", backpressure, idle,
                             expect.predict("link", p))
