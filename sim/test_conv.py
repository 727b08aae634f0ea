"""cocotb testbench: convolution (swg -> mvu), acc = bias' + sum over window and channels."""

import cocotb
import numpy as np

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def conv_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    win, w, bias, rq = a["win"], a["w"], a["bias"], a["rq"]
    acc = np.einsum("fyxijc,oijc->fyxo", win.astype(np.int64), w.astype(np.int64)) + bias  # model
    want = [golden.requant(f, *rq.T) for f in acc]
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "conv", backpressure, idle, expect.predict("conv", p))
