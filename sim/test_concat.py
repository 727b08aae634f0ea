"""cocotb testbench: concat of two int8 streams."""

import cocotb
import numpy as np

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def concat_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = list(np.concatenate([a["a"], a["b"]], axis=-1))  # model
    inputs = {"s0_axis": list(a["a"]), "s1_axis": list(a["b"])}
    await harness.run_stream(dut, inputs, want, "concat", backpressure, idle,
                             expect.predict("concat", p))
