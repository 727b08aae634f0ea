"""cocotb testbench: convolution (swg -> mvu), acc = bias' + sum over window and channels.

Cycles are checked against the cost model (`expect.predict`, `expect.first_output`). With
pixel copies (``M > 1``) the frame intervals repeat every ``M`` frames and the model's ii is
their mean: the case's frames are cycled to `expect.frames` so that the harness averages
over a multiple of ``M`` frames; the first output beat (a whole pixel) is checked as well.
"""

import itertools

import cocotb
import numpy as np

from sim import cases, expect, golden, harness


@cocotb.test
@cocotb.parametrize(backpressure=[False, True], idle=[False, True])
async def conv_stream(dut, backpressure: bool, idle: bool):
    case = harness.case()
    p, a = case["params"], case["arrays"]
    win, w, bias, rq = a["win"], a["w"], a["bias"], a["rq"]
    acc = np.einsum("fyxijc,oijc->fyxo", win.astype(np.int64), w.astype(np.int64)) + bias  # model
    want = [golden.requant(f, *rq.T) for f in acc]
    n = expect.frames("conv", p, cases.FRAMES)
    xs = list(itertools.islice(itertools.cycle(a["x"]), n))
    want = list(itertools.islice(itertools.cycle(want), n))
    mmv = p.get("M", 1) > 1
    if mmv:  # own monitors: cycles relative to the first input beat
        mon_in, mon_out = harness.BeatMonitor(dut, "s_axis"), harness.BeatMonitor(dut, "m_axis")
    await harness.run_stream(dut, {"s_axis": xs}, want, "conv", backpressure, idle, expect.predict("conv", p))
    if mmv and not (backpressure or idle):
        t0 = mon_in.beats[0][0]
        frames = [(b - t0, e - t0) for b, e in mon_out.frames()]
        first = expect.first_output("conv", p)
        dut._log.info("conv M=%d: output frames (first, last beat) from the first input beat: %s; "
                      "first predicted %d", p["M"], frames, first)
        assert frames[0][0] == first, f"conv: first output at cycle {frames[0][0]}, predicted {first}"
