"""cocotb testbench: matrix-vector unit, y = requant(bias' + W x) per vector."""

import cocotb
import numpy as np

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def mvu_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    x, w, bias, rq = a["x"], a["w"], a["bias"], a["rq"]
    acc = np.einsum("fvi,oi->fvo", x.astype(np.int64), w.astype(np.int64)) + bias  # model
    want = [golden.requant(f, *rq.T) for f in acc]
    await harness.run_stream(dut, {"s_axis": list(x)}, want, "mvu", backpressure, idle,
                             expect.predict("mvu", p))
