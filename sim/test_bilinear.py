"""cocotb testbench: bilinear upsampling (Resize mode "linear", integer scales) with the tap
tables of ops/resize_linear.py; the model is the op's int8 reference (`run_int8`)."""

import cocotb
import numpy as np

from bbgrap_hls.ir import Node
from bbgrap_hls.ops import get_op
from sim import expect, harness


def model(f: np.ndarray, sh: int, sw: int, coord: str) -> np.ndarray:
    """The (H*sh, W*sw, C) output frame of one (H, W, C) input frame."""
    node = Node("bilinear", "ResizeBilinear", ["x"], ["y"], {"scales": (sh, sw), "mode": "linear", "coord": coord})
    y = get_op("ResizeBilinear").run_int8(node, [f.transpose(2, 0, 1)[None]], None)[0]
    return y[0].transpose(1, 2, 0)


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def bilinear_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    want = [model(f, p["sh"], p["sw"], p["coord"]) for f in a["x"]]
    await harness.run_stream(dut, {"s_axis": list(a["x"])}, want, "bilinear", backpressure, idle,
                             expect.predict("bilinear", p))
