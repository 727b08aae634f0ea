"""cocotb testbench: per-channel affine map against bbgrap_hls.quant's integer form (exact)."""

import cocotb
import numpy as np

from bbgrap_hls.quant.arith import shift_round
from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def channel_affine_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    x = a["x"].astype(np.int64)
    prod = (x - int(a["zp_in"])) * a["mult"].astype(np.int64) + a["bias"].astype(np.int64)
    y = np.clip(shift_round(prod, a["shift"]) + a["zp_out"], a["lo"], a["hi"]).astype(np.int8)
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, list(y), "channel_affine", backpressure, idle,
                             expect.predict("channel_affine", p))
