"""cocotb testbench: global average pooling, sum over all pixels then requantise."""

import cocotb
import numpy as np

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def gap_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    acc = a["x"].astype(np.int64).sum(axis=(1, 2)) + a["bias"]  # model
    want = [golden.requant(f, *a["rq"].T) for f in acc]
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "gap", backpressure, idle, expect.predict("gap", p))
