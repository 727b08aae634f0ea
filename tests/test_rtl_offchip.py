"""The off-chip-weight conv (`hw/rtl/conv_offchip.sv`) in Verilator under cocotb against a
simulated AXI4 memory: bit-exact outputs, and measured ii and latency equal to the cost
model (`bbgrap_hls.model.offchip.offchip_mvu` with the memory's latency and rate).

Each case builds once into ``build/sim/conv_offchip-<hash>`` (`sim.offchip.run`). ``L`` is
the memory's latency (address handshake to first beat), ``R`` its bytes per cycle.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from sim import offchip  # noqa: E402

pytestmark = pytest.mark.sim

_PAD1 = {"PT": 1, "PL": 1, "PB": 1, "PR": 1}
_NOPAD = {"PT": 0, "PL": 0, "PB": 0, "PR": 0}
CASES = {
    # 3x3 padded, compute-bound (a fold: 450 reads; a tile: 9 beats of 8 bytes)
    "conv3x3": {"C": 4, "CO": 8, "SIMD": 2, "PE": 2, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                **_PAD1, "DATA_W": 64, "W_BASE": 4096, "L": 10},
    # strided 3x2, asymmetric padding, 16-byte beats, a long memory latency
    "strided": {"C": 2, "CO": 8, "SIMD": 2, "PE": 4, "H": 7, "W": 6, "KH": 3, "KW": 2, "SH": 2, "SW": 2,
                "PT": 1, "PL": 0, "PB": 0, "PR": 1, "DATA_W": 128, "W_BASE": 0, "L": 30},
    # 1x1: a weight word (8 bytes) spans two 4-byte beats
    "pointwise": {"C": 8, "CO": 6, "SIMD": 4, "PE": 2, "H": 3, "W": 3, "KH": 1, "KW": 1, "SH": 1, "SW": 1,
                  **_NOPAD, "DATA_W": 32, "W_BASE": 256, "L": 4},
    # dense (one vector): a fold (4 reads) is shorter than the memory latency; two words a beat
    "dense": {"C": 32, "CO": 16, "SIMD": 8, "PE": 4, "H": 1, "W": 1, "KH": 1, "KW": 1, "SH": 1, "SW": 1,
              **_NOPAD, "DATA_W": 512, "W_BASE": 0, "L": 20},
    # dense on 2 vectors, memory at 2 bytes per cycle: bandwidth-bound (a tile 64 cycles, a fold 8)
    "dense_slow": {"C": 32, "CO": 16, "SIMD": 8, "PE": 4, "H": 2, "W": 1, "KH": 1, "KW": 1, "SH": 1,
                   "SW": 1, **_NOPAD, "DATA_W": 128, "W_BASE": 8192, "L": 5, "R": 2},
    # dense on 4 vectors with SIMD = C (sf = 1): the output is as long as the compute, so an
    # output slot's reuse two frames later binds: ii = nf·cf + 2
    "dense_sf1": {"C": 8, "CO": 8, "SIMD": 8, "PE": 2, "H": 4, "W": 1, "KH": 1, "KW": 1, "SH": 1, "SW": 1,
                  **_NOPAD, "DATA_W": 128, "W_BASE": 0, "L": 3},
    # three folds of 2 reads, each far shorter than the memory latency: a tile half's round
    # trip binds, (L + (beats − 1) + cf + 1)/2 = 12 per fold; with an odd fold count the frame
    # intervals alternate 26, 46 (mean 36 = 3·12)
    "odd_folds": {"C": 16, "CO": 12, "SIMD": 8, "PE": 4, "H": 1, "W": 1, "KH": 1, "KW": 1, "SH": 1,
                  "SW": 1, **_NOPAD, "DATA_W": 256, "W_BASE": 0, "L": 20},
}
# one frame slot each for input and output (ISLOTS = OSLOTS = 1; the module only, the planner
# does not use it: docs/cost-model.md "One frame slot"): a frame's fold 0 waits for its input,
# stored after the previous frame's last read, and for the previous frame's output to leave
_ONE = {"ISLOTS": 1, "OSLOTS": 1}
CASES |= {
    # the output (100 beats) is longer than the input (50): the output slot binds the gap
    "conv3x3_1slot": CASES["conv3x3"] | _ONE,
    # the input (42 beats) is longer than the output (18): the input store binds the gap
    "strided_1slot": CASES["strided"] | _ONE,
    # memory-bound folds across the frame gap: the tiles run on while the frame waits
    "dense_slow_1slot": CASES["dense_slow"] | _ONE,
    # three folds and a two-beat input frame (IB = 2): address widths of one slot
    "odd_folds_1slot": CASES["odd_folds"] | _ONE,
}
# one input slot, two output slots (ISLOTS = 1, which the planner gives a block after an
# off-chip producer: docs/cost-model.md "One input slot"): fold 0 waits for its input, stored
# from the cycle after the previous frame's last read (the output slot of the frame two before
# is free)
CASES |= {
    # the input store alone between frames: 50 + 1 + 4·450 − 1 (1904 with one output slot)
    "conv3x3_in1": CASES["conv3x3"] | {"ISLOTS": 1},
    # the input store binds as with one slot of each (42 + 1 + 2·54 − 1)
    "strided_in1": CASES["strided"] | {"ISLOTS": 1},
    # bandwidth-bound: the store hides in the tile reads
    "dense_slow_in1": CASES["dense_slow"] | {"ISLOTS": 1},
    # a two-beat input slot (IAW of 2 beats), two three-beat output slots
    "odd_folds_in1": CASES["odd_folds"] | {"ISLOTS": 1},
    # sf = 1: one output slot would bind (36), the input store does (4 + 1 + 4·4 − 1)
    "dense_sf1_in1": CASES["dense_sf1"] | {"ISLOTS": 1},
}
# two input slots, one output slot (OSLOTS = 1): the next frame's input is stored while this
# one computes; fold 0 waits for the previous frame's output to have left
CASES |= {
    # the output binds as with one slot of each: 100 + 5 + 4·450 − 1
    "conv3x3_out1": CASES["conv3x3"] | {"OSLOTS": 1},
    # the output (18 beats) binds, not the input store (42): 18 + 5 + 2·54 − 1
    "strided_out1": CASES["strided"] | {"OSLOTS": 1},
}
# DSP packing (PACK = 2, mac2.sv: output lanes 2i and 2i+1 share a DSP48E2 per input lane):
# the same cycles and results (an odd PE > 1 cannot occur: PE·SIMD and the beat divide one
# another)
CASES |= {
    "conv3x3_pack": CASES["conv3x3"] | {"PACK": 2},
    "strided_pack": CASES["strided"] | {"PACK": 2},
    "dense_slow_pack": CASES["dense_slow"] | {"PACK": 2},
}
SLOW = {"strided", "strided_pack", "pointwise", "odd_folds", "conv3x3_1slot", "dense_slow_1slot",
        "conv3x3_in1", "strided_in1", "dense_slow_in1", "conv3x3_out1"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else [])
                                  for n in CASES])
def test_conv_offchip(name: str) -> None:
    pytest.importorskip("cocotb")
    p = CASES[name]
    run = offchip.run(p)
    assert run.tests == 1 and run.failed == 0, f"{name}: cocotb failed (see {run.folder}/test.log)"
    assert run.timing is not None, f"{name}: no timing measured (see {run.folder}/test.log)"
    got = (run.timing["ii"], run.timing["latency"])
    assert got == offchip.predict(p), f"{name}: measured (ii, latency) {got}, cost model {offchip.predict(p)}"


def test_bandwidth_bound_case_is_bandwidth_bound() -> None:
    """dense_slow's model ii is its weight bytes over the memory rate, above every other term."""
    p = CASES["dense_slow"]
    c = offchip.cost(p)
    assert c.ii == c.offchip_bytes // p["R"] == 256
    g = offchip.geometry(p)
    assert c.ii > g.ho * g.wo * (g.c // p["SIMD"]) * (g.co // p["PE"])  # the compute alone


def test_one_input_slot_ii_follows_the_producers_pace() -> None:
    """`offchip_mvu(in_slots=1, in_cycles=A)`: a frame that arrives over A cycles (a slower
    producer) adds A − H·W·C/lanes to a compute-bound block's ii (conv3x3_in1: 50 beats a
    frame, 1850 cycles), nothing to a bandwidth-bound one's while the folds wait for tiles
    anyway; A below the beats, or with two input slots, is refused. (The twin checks it in a
    design: tests/test_sim_offchip.py, `pair`.)"""
    from bbgrap_hls.model.offchip import offchip_mvu

    p = offchip._full(CASES["conv3x3_in1"])
    g = offchip.geometry(p)
    kw = dict(rate=p.get("R"), latency=p["L"], beat_bytes=p["DATA_W"] // 8, in_slots=1)
    base = offchip_mvu(g, p["PE"], p["SIMD"], **kw).ii
    assert base == 1850
    for extra in (0, 7, 400):
        assert offchip_mvu(g, p["PE"], p["SIMD"], in_cycles=50 + extra, **kw).ii == base + extra
    slow = offchip._full(CASES["dense_slow_in1"])
    kws = dict(rate=slow["R"], latency=slow["L"], beat_bytes=slow["DATA_W"] // 8, in_slots=1)
    gs = offchip.geometry(slow)
    assert offchip_mvu(gs, slow["PE"], slow["SIMD"], in_cycles=3 * gs.in_elems // slow["SIMD"], **kws).ii == \
        offchip_mvu(gs, slow["PE"], slow["SIMD"], **kws).ii == 256
    with pytest.raises(ValueError):
        offchip_mvu(g, p["PE"], p["SIMD"], in_cycles=49, **kw)
    with pytest.raises(ValueError):
        offchip_mvu(g, p["PE"], p["SIMD"], in_cycles=60, **{**kw, "in_slots": 2})
