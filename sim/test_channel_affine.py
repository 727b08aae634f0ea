"""cocotb testbench: per-channel affine map, acc = bias' + x*w[c], then requantise."""

import cocotb
import numpy as np

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def channel_affine_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    acc = a["x"].astype(np.int64) * a["w"] + a["bias"]  # model
    want = [golden.requant(f, *a["rq"].T) for f in acc]
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "channel_affine", backpressure, idle,
                             expect.predict("channel_affine", p))
