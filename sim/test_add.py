"""cocotb testbench: add of two int8 streams."""

import cocotb

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def add_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = list(golden.add(a["a"], a["b"], p["ZA"], p["ZB"], p["MA"], p["MB"], p["S"], p["ZY"], p["LO"], p["HI"]))  # model
    inputs = {"s0_axis": list(a["a"]), "s1_axis": list(a["b"])}
    await harness.run_stream(dut, inputs, want, "add", backpressure, idle,
                             expect.predict("add", p))
