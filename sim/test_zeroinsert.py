"""cocotb testbench: zero insertion (SH-1 / SW-1 zero-point pixels between input pixels, pads
around them): the upsampling half of a lowered ConvTranspose."""

import cocotb
import numpy as np

from sim import expect, harness


def model(f: np.ndarray, p: dict) -> np.ndarray:
    """The (Ho, Wo, C) output frame of one (H, W, C) input frame."""
    h, w, c = f.shape
    ho = p["PT"] + (h - 1) * p["SH"] + 1 + p["PB"]
    wo = p["PL"] + (w - 1) * p["SW"] + 1 + p["PR"]
    y = np.full((ho, wo, c), p["ZP"], np.int8)
    for i in range(h):
        for j in range(w):
            y[p["PT"] + i * p["SH"], p["PL"] + j * p["SW"]] = f[i, j]
    return y


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def zeroinsert_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = [model(f, p) for f in a["x"]]
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "zeroinsert", backpressure, idle,
                             expect.predict("zeroinsert", p))
