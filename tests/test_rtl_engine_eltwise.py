"""The engine's element-wise unit (`hw/rtl/engine_eltwise.sv`) in Verilator under cocotb against
simulated AXI4 memories: every layer's output map bit-exact against
`bbgrap_hls.codegen.engine_eltwise.reference`, and its cycles from the start pulse to the done
pulse equal to the cost model's (`bbgrap_hls.model.engine_eltwise.layer_cycles`) for the
memory's latency ``L`` and period ``P``.

One build per parameter set (`sim.engine_eltwise.run`, cached in ``build/sim``), several
layers a simulation (the unit runs them one after the other, as the sequencer will).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from bbgrap_hls.codegen import engine_eltwise as ee  # noqa: E402
from bbgrap_hls.model.engine_eltwise import layer_cycles, table_load  # noqa: E402
from sim import engine_eltwise  # noqa: E402

RUNS = {
    # G = 8, 16-byte beats, bursts of at most 4 beats, two chunks in flight
    "g8": ({"G": 8, "DATA_W": 128, "BURST": 4, "CHUNKS": 2, "CMAX": 64}, {
        # Add with a fused ReLU (lo = zy), B placed so that its chunks split at 4 KB, fast memory
        "add_relu": {"mode": "add", "H": 5, "W": 3, "C": 12, "relu": True, "L": 6, "P": 1,
                     "bases": (0, 4096 - 5 * 16, 5120, 0)},
        # Mul of two maps, a long latency: four chunks, two in flight
        "mul_long": {"mode": "mul", "H": 4, "W": 4, "C": 16, "L": 40, "P": 1},
        # the table alone, a slow memory; its 16 beats cross 4 KB on the weight port
        "table_slow": {"mode": "table", "H": 6, "W": 6, "C": 8, "L": 12, "P": 3,
                       "bases": (0, 0, 4096, 4096 - 128)},
        # Add of shift 0 (no rounding term) with a fused table
        "add_s0_lut": {"mode": "add", "H": 2, "W": 3, "C": 16, "s": 0, "lut": True, "L": 3, "P": 2},
        # address channels not always ready: requests held (the map checked, cycles not timed)
        "add_lut_stall": {"mode": "add", "H": 5, "W": 4, "C": 8, "lut": True, "L": 7, "P": 2, "stall": True},
        # strided blocks (`gaps`: beats of gap after each block of A, B, OUT): a run a block
        # of 7.5 beats, B's runs across 4 KB
        "add_strided": {"mode": "add", "H": 3, "W": 5, "C": 20, "L": 5, "P": 1, "gaps": (1, 0, 2),
                        "bases": (0, 4096 - 3 * 128, 4096 + 512, 0)},
        "mul_strided": {"mode": "mul", "H": 4, "W": 4, "C": 16, "L": 9, "P": 2, "gaps": (0, 1, 1)},
        "table_strided": {"mode": "table", "H": 2, "W": 3, "C": 16, "L": 4, "P": 1, "gaps": (2, None, 0),
                          "bases": (0, 0, 4096 - 64, 0)},
        "add_strided_stall": {"mode": "add", "H": 3, "W": 3, "C": 16, "lut": True, "L": 3, "P": 1,
                              "gaps": (1, 1, 0), "stall": True},
        # B on the weight port after a fused table's beats, its chunks split at 4 KB (and the
        # table's too in the second)
        "add_lut_b4k": {"mode": "add", "H": 5, "W": 4, "C": 8, "lut": True, "L": 4, "P": 1,
                        "bases": (0, 4096 - 3 * 16, 5120, 0)},
        "mul_lut_b4k_slow": {"mode": "mul", "H": 4, "W": 5, "C": 16, "lut": True, "L": 7, "P": 2,
                             "bases": (0, 4096 - 5 * 16, 6144, 4096 - 64)},
    }),
    # G = 4, 8-byte beats (two channel groups a beat), bursts of at most 8 beats
    "g4": ({"G": 4, "DATA_W": 64, "BURST": 8, "CHUNKS": 2, "CMAX": 64}, {
        # squeeze-excite: a map times a per-channel vector; blocks of 7.5 beats (a beat
        # across two blocks), the last beat half padding, a slow memory
        "mulv_slow": {"mode": "mulv", "H": 3, "W": 5, "C": 10, "L": 5, "P": 2},
        # the same with a fused table and a long latency
        "mulv_lut_long": {"mode": "mulv", "H": 5, "W": 5, "C": 7, "lut": True, "L": 30, "P": 1},
        # Mul of two maps and Add, fast memory
        "mul": {"mode": "mul", "H": 3, "W": 3, "C": 4, "L": 2, "P": 1},
        "add": {"mode": "add", "H": 4, "W": 6, "C": 8, "relu": True, "L": 9, "P": 1},
        "mulv_stall": {"mode": "mulv", "H": 3, "W": 5, "C": 10, "L": 4, "P": 1, "stall": True},
        # in place (OUT = A: squeeze-excite's x·s over x): a chunk is written after its reads
        "mulv_inplace": {"mode": "mulv", "H": 4, "W": 4, "C": 8, "L": 3, "P": 1, "bases": (0, 512, 0, 0)},
        # strided maps; the vector strided too (a beat a block: B's gap 0)
        "mulv_strided": {"mode": "mulv", "H": 3, "W": 5, "C": 10, "L": 4, "P": 1, "gaps": (1, 0, 0)},
        # a 1 x 1 map, blocks of 4 bytes in 8-byte beats (refused contiguous), the vector in order
        "mulv_1x1_lut": {"mode": "mulv", "H": 1, "W": 1, "C": 12, "lut": True, "L": 6, "P": 1,
                         "gaps": (0, None, 1)},
    }),
    # narrower than the beat: 4 lanes, a 16-byte beat over 4 cycles; a fast memory (P = 1: the
    # lanes pace the beats that start them, rready low between) and a slow one (P = 4: they don't)
    "g8_lanes4": ({"G": 8, "DATA_W": 128, "BURST": 4, "CHUNKS": 2, "CMAX": 64, "LANES": 4}, {
        "add_fast": {"mode": "add", "H": 5, "W": 3, "C": 12, "relu": True, "L": 6, "P": 1,
                     "bases": (0, 4096 - 5 * 16, 5120, 0)},
        "add_slow": {"mode": "add", "H": 4, "W": 4, "C": 16, "L": 5, "P": 4},
        "mulv_fast": {"mode": "mulv", "H": 3, "W": 5, "C": 16, "L": 5, "P": 1},
        "mulv_lut_slow": {"mode": "mulv", "H": 3, "W": 5, "C": 16, "lut": True, "L": 5, "P": 4},
        "table_fast": {"mode": "table", "H": 6, "W": 6, "C": 8, "L": 12, "P": 1},
        "table_slow": {"mode": "table", "H": 6, "W": 6, "C": 8, "L": 12, "P": 4},
        "mul_lut_strided": {"mode": "mul", "H": 4, "W": 4, "C": 16, "lut": True, "L": 9, "P": 1, "gaps": (0, 1, 1)},
        "add_lut_stall": {"mode": "add", "H": 5, "W": 4, "C": 8, "lut": True, "L": 7, "P": 1, "stall": True},
        "add_lut_b4k": {"mode": "add", "H": 5, "W": 4, "C": 8, "lut": True, "L": 3, "P": 1,
                        "bases": (0, 4096 - 3 * 16, 5120, 0)},
    }),
    # 4 lanes of an 8-byte beat (2 cycles a beat), G = 4: a beat across two blocks in MULV
    "g4_lanes4": ({"G": 4, "DATA_W": 64, "BURST": 8, "CHUNKS": 2, "CMAX": 64, "LANES": 4}, {
        "mulv_fast": {"mode": "mulv", "H": 3, "W": 5, "C": 10, "L": 5, "P": 1},
        "add_fast": {"mode": "add", "H": 4, "W": 6, "C": 8, "relu": True, "L": 9, "P": 1},
        "table_fast": {"mode": "table", "H": 5, "W": 5, "C": 8, "L": 4, "P": 1},
        "mulv_strided": {"mode": "mulv", "H": 3, "W": 5, "C": 10, "L": 4, "P": 1, "gaps": (1, 0, 0)},
        "mul_slow": {"mode": "mul", "H": 3, "W": 3, "C": 4, "L": 2, "P": 2},
        "mulv_inplace_slow": {"mode": "mulv", "H": 4, "W": 4, "C": 8, "L": 3, "P": 4, "bases": (0, 512, 0, 0)},
    }),
    # the module's default parameters (bursts of 64 beats, four chunks in flight) on maps of
    # 784 and 294 beats
    "default": ({"G": 8, "DATA_W": 128, "BURST": 64, "CHUNKS": 4, "CMAX": 512}, {
        "add_14": {"mode": "add", "H": 14, "W": 14, "C": 64, "relu": True, "L": 30, "P": 1},
        "mulv_14_inplace": {"mode": "mulv", "H": 14, "W": 14, "C": 64, "L": 30, "P": 1, "bases": (0, 16384, 0, 0)},
        "table_14_slow": {"mode": "table", "H": 14, "W": 14, "C": 64, "L": 60, "P": 2},
        "mul_lut_7": {"mode": "mul", "H": 7, "W": 7, "C": 96, "lut": True, "L": 100, "P": 1},
        # the table's 64 writes into the lanes' copies exposed: a short vector, a fast memory
        "mulv_lut_7_fast": {"mode": "mulv", "H": 7, "W": 7, "C": 96, "lut": True, "L": 3, "P": 1},
        # strided: runs of 24.5 beats, a chunk a run
        "mulv_7_strided": {"mode": "mulv", "H": 7, "W": 7, "C": 64, "L": 30, "P": 1, "gaps": (1, 2, 0)},
        "add_7_strided": {"mode": "add", "H": 7, "W": 7, "C": 32, "relu": True, "L": 20, "P": 1, "gaps": (0, 1, 2)},
        # a fused table, B across 4 KB, a slow memory
        "add_lut_14_b4k": {"mode": "add", "H": 14, "W": 14, "C": 16, "lut": True, "L": 30, "P": 2,
                           "bases": (0, 4096 - 10 * 16, 8192, 0)},
    }),
}


@pytest.fixture(scope="module")
def measured():
    pytest.importorskip("cocotb")
    out = {}
    for name, (hdl, layers) in RUNS.items():
        run = engine_eltwise.run(hdl, list(layers.values()))
        assert run.tests == 1 and run.failed == 0, f"{name}: cocotb failed (see {run.folder}/test.log)"
        assert run.timing is not None, f"{name}: no timing (see {run.folder}/test.log)"
        out |= {(name, k): r for k, r in zip(layers, run.timing, strict=True)}
    return out


@pytest.mark.sim
@pytest.mark.parametrize("key", [(r, k) for r, (_, layers) in RUNS.items() for k in layers], ids="-".join)
def test_engine_eltwise_cycles(measured, key) -> None:
    r = measured[key]
    if r["pred"] < 0:  # a stall layer: its map was checked by the testbench
        return
    assert r["cycles"] == r["pred"], f"{key}: {r['cycles']} cycles measured, model {r['pred']}"


def test_model_runs_a_resnet_map_in_milliseconds() -> None:
    """The cost model is a recurrence over chunks (an Add's beats): ResNet-50's largest Add (56 x 56 x 256,
    12,544 beats of 64 bytes, 196 chunks) costs well under 50 ms."""
    import time

    layer = ee.EltwiseLayer(mode=ee.ADD, h=56, w=56, c=256, ma=3, mb=5, s=3)
    n = 56 * 56 * 256
    row = ee.descriptor(layer, 8, 64, 0, n, 2 * n)
    t = time.perf_counter()
    c = layer_cycles(row, 64, latency=100, period=1, burst=64, in_flight=4)
    assert time.perf_counter() - t < 0.05
    assert (c.reads, c.writes, c.chunks) == (2 * n // 64, n // 64, 196)


def test_table_load_hides_behind_the_first_reads() -> None:
    """The table goes into the lanes' copies 4 bytes a cycle (64 cycles) while the feature reads
    start: the first pair fires only after it, so an Add's first B beat (on the weight port
    after the table's) waits 64 cycles more than without the table, a MULV's first A beat
    after its short vector 59."""
    table = np.zeros(ee.TABLE_BYTES, np.int8)
    for mode, extra in ((ee.ADD, 64), (ee.MULV, 59)):
        rows = [ee.descriptor(ee.EltwiseLayer(mode=mode, h=7, w=7, c=96, ma=3, mb=5, m=7, s=3, lut=lut,
                                              table=table if lut else None), 8, 16, 0, 8192, 16384)
                for lut in (False, True)]
        plain, fused = (layer_cycles(r, 16, latency=3, period=1, g=8) for r in rows)
        assert fused.cycles - plain.cycles == extra
        # its first beat L after its address (cycle 1), written from the cycle after, 64 writes:
        # a beat may fire from the cycle after the last
        assert fused.ready == table_load(0, 16, 3, 1, 64)[1] == (1 + 3) + 1 + 64


@pytest.mark.parametrize("what, kw, beat", [
    ("unaligned base", {"a_base": 8}, 16),
    ("G not dividing the beat", {"g": 32}, 16),
    ("MULV blocks shorter than a beat", {"mode": ee.MULV, "h": 1, "w": 1}, 16),
    ("stride neither contiguous nor whole beats", {"a_stride": 136}, 16),
    ("a contiguous map of part beats beside a strided one", {"h": 3, "w": 3, "out_stride": 80}, 16),
    ("table missing", {"mode": ee.TABLE}, 16),
    ("vector longer than the buffer", {"mode": ee.MULV, "c": 520, "cmax": 512}, 16),
    ("multiplier above 24 bits", {"ma": 1 << 24}, 16),
])
def test_descriptor_refuses(what: str, kw: dict, beat: int) -> None:
    bases = {k: kw.pop(k, 0) for k in ("a_base", "b_base", "out_base")}
    bases |= {k: kw.pop(k) for k in ("a_stride", "out_stride") if k in kw}
    g, cmax = kw.pop("g", 8), kw.pop("cmax", None)
    layer = ee.EltwiseLayer(**({"mode": ee.ADD, "h": 4, "w": 4, "c": 8} | kw))
    with pytest.raises(ValueError):
        ee.descriptor(layer, g, beat, **bases, cmax=cmax)
