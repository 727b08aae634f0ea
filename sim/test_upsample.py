"""cocotb testbench: nearest upsampling by integer scales (every pixel repeated SH x SW)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def upsample_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = [f.repeat(p["SH"], axis=0).repeat(p["SW"], axis=1) for f in a["x"]]  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "upsample", backpressure, idle,
                             expect.predict("upsample", p))
