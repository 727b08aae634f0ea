"""cocotb testbench: global max pooling, the maximum of every channel over all pixels."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def gmaxpool_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = [f.max(axis=(0, 1)) for f in a["x"]]  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "gmaxpool", backpressure, idle,
                             expect.predict("gmaxpool", p))
