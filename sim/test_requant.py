"""cocotb testbench: per-channel requantisation int32 -> int8."""

import cocotb

from sim import expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def requant_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, acc, rq = case["params"], case["arrays"]["acc"], case["arrays"]["rq"]
    want = [golden.requant(a, *rq.T) for a in acc]  # model
    await harness.run_stream(dut, {"s_axis": list(acc)}, want, "requant", backpressure, idle,
                             expect.predict("requant", p))
