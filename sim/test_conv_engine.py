"""cocotb testbench: the layer engine (`hw/rtl/conv_engine.sv`) against simulated board memories.

Memories (`bbgrap_hls.rtlsim.axi_mem`): the feature memory behind ``m_axi_f`` (an
`AxiReadMemory` and an `AxiWriteMemory` sharing one ``bytearray``, the program's feature
image from ``FEAT_BASE``) and the weight memory behind ``m_axi_w`` (an `AxiReadMemory` on the
program's weight image from ``W_BASE``); each channel a burst's first read beat (or a write
burst's response) ``L`` cycles late and a beat every ``P`` cycles, the AXI rules checked on
every burst. Driver: the host's part, in one loop stepping the memories at every falling
edge: it writes the start's input maps into the feature memory (the blocked layout, at the
program's block stride; ``BATCH`` frames a start, each at its frame stride) and pulses
``start``, then waits for ``done``; the next start follows the cycle after. Model: the layers on
the integer reference (`engine_image.reference`). Scoreboard: after each frame, every layer's
output map in the feature memory exact (a layer run as row bands included); the cycle of every
``layer_end`` (one per step: a layer or a band) and every frame's
start-to-done cycles equal to `bbgrap_hls.model.engine.schedule` (``pred``, from `sim.engine`;
None for a program the model refuses, whose writes stall the compute: outputs only).
"""

from __future__ import annotations

import json
import os
import pickle

import cocotb
import numpy as np

from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory, AxiWriteMemory
from sim import harness


@cocotb.test
async def conv_engine_frames(dut):
    case = harness.case()
    p, pred = case["params"], case["pred"]
    with open(case["pkl"], "rb") as f:
        c = pickle.load(f)
    layers, prog = c["layers"], c["program"]
    pe, beat = p["PE"], p["DATA_W"] // 8
    fbase = int(str(p["FEAT_BASE"]).split("'h")[-1], 16)
    wbase = int(str(p["W_BASE"]).split("'h")[-1], 16)
    rate = beat / p["P"]
    dut.start.value = 0
    await harness.start(dut)
    feat = bytearray(prog.feature_size)
    mems = [AxiReadMemory(dut, "m_axi_f", feat, fbase, p["L"], rate, beat),
            AxiWriteMemory(dut, "m_axi_f", feat, fbase, p["L"], rate, beat),
            AxiReadMemory(dut, "m_axi_w", prog.weights, wbase, p["L"], rate, beat)]
    ends: list[list[int]] = []
    cycles: list[int] = []
    limit = 200 * (pred["cycles"] if pred else 10**5) + 1000
    cyc = 0
    nb = prog.frames
    starts = len(c["x"]) // nb
    for st in range(starts):
        for b in range(nb):
            img = ei.feature_bytes(c["x"][st * nb + b], pe, prog.in_stride)
            at = prog.in_base + b * prog.frame_stride
            feat[at:at + len(img)] = img
        n, lay, cyc = await harness.run_started(dut, mems, cyc, "layer_end", limit, f"start {st}")
        cycles.append(n)
        ends.append(lay)
        for b in range(nb):
            fr = st * nb + b
            for i, (layer, m) in enumerate(zip(layers, prog.maps[1:], strict=True)):
                got = ei.read_features(feat, m.base + b * prog.frame_stride, m.h, m.w, layer.co, pe, m.stride)
                want = c["want"][fr][i]
                bad = np.flatnonzero(got != want)
                assert bad.size == 0, (f"frame {fr} layer {i}: {bad.size} of {want.size} values differ, first at "
                                       f"{bad[0]}: got {got.reshape(-1)[bad[0]]}, want {want.reshape(-1)[bad[0]]}")
        dut._log.info("start %d: %d frame(s), %d layers exact; layer ends %s (model %s), %d cycles (model %s)",
                      st, nb, len(layers), lay, pred and pred["ends"], cycles[-1], pred and pred["cycles"])
    rec = {"ends": ends, "cycles": cycles, "pred": pred,
           "reads": {"f": mems[0].beats, "w": mems[2].beats}, "writes": mems[1].beats}
    path = os.environ.get("BBG_SIM_TIMING")
    if path:
        with open(path, "w") as f:
            json.dump(rec, f)
    # per start: each step reads its layer's tiles once, and its load_runs and writes its
    # store_runs for each of its frames
    steps = prog.descriptors
    w_beats = sum(r[ei.FIELDS.index("CO")] // pe * r[ei.FIELDS.index("TILE_BEATS")] for r in steps)
    f_beats = nb * sum(n * b for n, b, _ in (ei.load_runs(r, pe, beat) for r in steps))
    o_beats = nb * sum(n * b for n, b, _ in (ei.store_runs(r, pe, beat) for r in steps))
    frames = starts
    assert mems[2].beats == frames * w_beats, f"weight beats {mems[2].beats}, want {frames} x {w_beats}"
    assert mems[0].beats == frames * f_beats, f"feature read beats {mems[0].beats}, want {frames} x {f_beats}"
    assert mems[1].beats == frames * o_beats, f"feature write beats {mems[1].beats}, want {frames} x {o_beats}"
    for fr in range(starts if pred else 0):  # no model: a write-bound layer stalls the compute
        assert ends[fr] == pred["ends"], f"frame {fr}: layer ends {ends[fr]}, model {pred['ends']}"
        assert cycles[fr] == pred["cycles"], f"frame {fr}: {cycles[fr]} cycles, model {pred['cycles']}"
