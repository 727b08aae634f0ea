"""cocotb testbench: dwconv (swg -> vvu), per-channel reduction over each window."""

import cocotb
import numpy as np

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def dwconv_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    win = a["win"]
    acc = np.einsum("fyxijc,ijc->fyxc", win.astype(np.int64), a["w"].reshape(win.shape[3:]).astype(np.int64)) + a["bias"]
    want = [golden.requant(f, *a["rq"].T) for f in acc]  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "dwconv", backpressure, idle, expect.predict("dwconv", p))
