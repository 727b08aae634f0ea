"""cocotb testbench: 256-entry lookup-table activation."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def lut_act_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = list(a["table"][a["x"].astype(int) + 128])  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "lut_act", backpressure, idle,
                             expect.predict("lut_act", p))
