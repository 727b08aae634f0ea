"""cocotb testbench: DepthToSpace in DCR mode (each pixel's B*B*M channels spread over a B x B
block of M-channel pixels): the sub-pixel form of a ConvTranspose whose kernel equals its stride."""

import cocotb
import numpy as np

from sim import expect, harness


def model(f: np.ndarray, b: int) -> np.ndarray:
    """The (H*B, W*B, M) output frame of one (H, W, B*B*M) input frame (DCR)."""
    h, w, c = f.shape
    m = c // (b * b)
    return f.reshape(h, w, b, b, m).transpose(0, 2, 1, 3, 4).reshape(h * b, w * b, m)


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def depth2space_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = [model(f, p["B"]) for f in a["x"]]
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "depth2space", backpressure, idle,
                             expect.predict("depth2space", p))
