"""cocotb testbench: the layer engine's top (`hw/rtl/engine_top.sv`) running a whole int8
network's program (`sim.engine_top` prepares the run: the ROM in ``prog.mem``, the program,
the frames and the expected tensors in ``case.pkl``).

Memory (`bbgrap_hls.rtlsim.axi_mem`): one ``bytearray`` from address 0 (filled with a seeded
pattern first: nothing may depend on zeros) holding the feature image from ``f_base`` (the
top's ``FEAT_BASE``) and the weight image from ``w_base`` (``W_BASE``), behind the feature
port (an `AxiReadMemory` and an `AxiWriteMemory`) and the weight port (an
`AxiReadMemory`), all paced (a beat ``P`` cycles after the one before was taken), each channel's first beat or write response ``L`` cycles late and a beat
every ``P`` cycles, the AXI rules checked on every burst. Driver: the host's
part, in one loop stepping the memories at every falling edge: it writes frame ``f``'s input
into its region (`engine_program.write_tensor`: blocked, its channels at their physical
places) and pulses ``start``, then waits for ``done``; the next frame starts the cycle after.
Monitor: the cycle of every ``step_end`` and of ``done``. Model: every region's tensor by
`bbgrap_hls.quant.run_int8` (``want``). Scoreboard: after each frame, every tensor with a
region read back from the memory (`engine_program.read_tensor`) equal to it (the output, and
no map overwritten by a later step), and every step's end and the frame's cycles equal to
`bbgrap_hls.model.engine_top.frame_cycles` (``pred``).
"""

from __future__ import annotations

import json
import os
import pickle

import cocotb
import numpy as np

from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory, AxiWriteMemory
from sim import harness


@cocotb.test
async def engine_top_frames(dut):
    meta = json.loads(os.environ["BBG_SIM_CASE"])
    with open(meta["pkl"], "rb") as f:
        c = pickle.load(f)
    prog, pred, f_base, w_base = c["program"], c["pred"], c["f_base"], c["w_base"]
    beat = prog.beat
    rate = beat / c["P"]
    mem = bytearray(np.random.default_rng(c["seed"]).integers(0, 256, w_base, dtype=np.uint8).tobytes())
    mem += prog.weights + bytes(-len(prog.weights) % beat)
    feat = memoryview(mem)[f_base:w_base]  # the feature memory as the program addresses it
    dut.start.value = 0
    await harness.start(dut)
    # paced (each beat P cycles after the one before was taken) and, for a narrow element-wise
    # unit, holding a beat not yet taken: the memory the element-wise unit's model assumes; the
    # conv and window units take every beat when offered, so for them it is the default memory
    mems = [AxiReadMemory(dut, "m_axi_f", mem, 0, c["L"], rate, beat, paced=True, hold=True),
            AxiWriteMemory(dut, "m_axi_f", mem, 0, c["L"], rate, beat, paced=True),
            AxiReadMemory(dut, "m_axi_w", mem, 0, c["L"], rate, beat, paced=True)]
    ends: list[list[int]] = []
    cycles: list[int] = []
    limit = 4 * pred["cycles"] + 1000
    cyc = 0
    for fr, x in enumerate(c["x"]):
        ep.write_tensor(prog, feat, prog.input, x)
        n, steps, cyc = await harness.run_started(dut, mems, cyc, "step_end", limit, f"frame {fr}")
        cycles.append(n)
        ends.append(steps)
        wrong = []
        for name, want in c["want"][fr].items():
            got = ep.read_tensor(prog, feat, name)
            bad = np.flatnonzero(got != want)
            if bad.size:
                wrong.append(f"{name} ({bad.size} of {want.size} differ, first at {bad[0]}: got "
                             f"{got.reshape(-1)[bad[0]]}, want {want.reshape(-1)[bad[0]]})")
        assert not wrong, f"frame {fr}: tensors {'; '.join(wrong)}"
        dut._log.info("frame %d: %d tensors exact; %d cycles (model %d)", fr, len(c["want"][fr]), cycles[-1],
                      pred["cycles"])
    rec = {"ends": ends, "cycles": cycles, "pred": pred,
           "beats": {"f_read": mems[0].beats, "f_write": mems[1].beats, "w_read": mems[2].beats}}
    path = os.environ.get("BBG_SIM_TIMING")
    if path:
        with open(path, "w") as f:
            json.dump(rec, f)
    for fr in range(len(c["x"])):
        assert ends[fr] == pred["ends"], f"frame {fr}: step ends {ends[fr]}, model {pred['ends']}"
        assert cycles[fr] == pred["cycles"], f"frame {fr}: {cycles[fr]} cycles, model {pred['cycles']}"
