"""cocotb testbench: mul of two int8 streams."""

import cocotb

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def mul_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = list(golden.mul(a["a"], a["b"], p["ZA"], p["ZB"], p["M"], p["S"], p["ZY"], p["LO"], p["HI"]))  # model
    inputs = {"s0_axis": list(a["a"]), "s1_axis": list(a["b"])}
    await harness.run_stream(dut, inputs, want, "mul", backpressure, idle,
                             expect.predict("mul", p))
