"""cocotb testbench: avgpool (swg -> vvu), per-channel reduction over each window."""

import cocotb
import numpy as np

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def avgpool_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    win = a["win"]
    acc = win.astype(np.int64).sum(axis=(3, 4)) + a["bias"]
    want = [golden.requant(f, *a["rq"].T) for f in acc]  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "avgpool", backpressure, idle, expect.predict("avgpool", p))
