"""cocotb testbench: LRN across channels with the factor table of ops/lrn.py; the model is
the op's int8 reference (`ops.lrn.lrn_int8`)."""

import cocotb

from bbgrap_hls.ops.lrn import lrn_int8
from sim import cases, expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def lrn_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    q = cases.lrn_q(p)
    want = [lrn_int8(f.T[None], q)[0].T for f in a["x"]]  # model: frames of (pix, C) pixels
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "lrn", backpressure, idle,
                             expect.predict("lrn", p))
