"""cocotb testbench: channel permutation inside every pixel."""

import cocotb

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def channel_shuffle_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = list(golden.channel_shuffle(a["x"], a["perm"]))  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "channel_shuffle", backpressure, idle,
                             expect.predict("channel_shuffle", p))
