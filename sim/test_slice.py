"""cocotb testbench: crop of rows, columns and a channel range (the Slice op)."""

import cocotb

from sim import expect, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def slice_stream(dut, backpressure: bool, idle: bool):
    # A crop's last output beat leaves before its frame's last input beat, so the previous
    # test may have ended with the input still valid (its source stopped mid-frame): clear it
    # before the reset, or that stale beat would be taken as this test's first.
    dut.s_axis_tvalid.value = 0
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = [f[p["Y0"]:p["Y0"] + p["HO"], p["X0"]:p["X0"] + p["WO"], p["C0"]:p["C0"] + p["CO"]]
            for f in a["x"]]  # model
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "slice", backpressure, idle,
                             expect.predict("slice", p))
