"""cocotb testbench: one pixel repeated over a frame (per-pixel broadcast of an operand)."""

import cocotb

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def repeat_pixel_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = list(golden.repeat_pixel(a["x"], p["PIXELS"]))  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "repeat_pixel", backpressure, idle,
                             expect.predict("repeat_pixel", p))
