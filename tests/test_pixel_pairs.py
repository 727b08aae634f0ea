"""Two pixels a beat (issue 13, item 3; docs/cost-model.md, "Two pixels a beat"): which blocks
may stream pixel pairs (`kinds.pairable`), a conv's paired rows (`kinds.pair_modes`), an Add at
``2·C`` lanes, plans of the README's ResNet-8 with ``pixel_pairs``, its C simulation with the
kernels' counted cycles, and the RTL twin of small paired designs. The conv's cycles are the
module tests' (sim/, tests/test_rtl_modules.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.frontend.onnx_loader import load_model
from bbgrap_hls.model import block_cost, foldings, pair_modes, pairable
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.plan import Plan
from bbgrap_hls.search import make_plan
from bbgrap_hls.search.narrow import segmentation_of
from bbgrap_hls.search.problem import build_problem

ROOT = Path(__file__).resolve().parents[1]
RESNET8 = ROOT / "examples" / "resnet8.onnx"

# a 3x3 conv, stride 1, pad 1, on a 32x32 image of 16 channels (ResNet-8's first stage)
CONV = Geometry(h=32, w=32, c=16, ho=32, wo=32, co=16, kh=3, kw=3, pads=(1, 1, 1, 1))
ADD = Geometry(h=32, w=32, c=16, ho=32, wo=32, co=16, in_channels=(16, 16))


def test_what_may_stream_pairs():
    assert pairable("conv", CONV)
    assert pairable("conv", replace(CONV, sh=2, sw=2, ho=16, wo=16))  # a strided conv reads pairs
    assert not pairable("conv", replace(CONV, w=31, wo=31))  # odd width
    assert not pairable("conv", replace(CONV, kh=1, kw=1, pads=(0, 0, 0, 0)))  # no window generator
    assert not pairable("conv", replace(CONV, group=16))
    assert pairable("eltwise2", ADD)
    assert not pairable("eltwise2", replace(ADD, in_channels=(16, 1)))  # a broadcast operand
    assert not pairable("maxpool", CONV)


def test_paired_rows_of_a_conv():
    g = replace(CONV, pairs=2)
    assert pair_modes("conv", CONV, 4, 144) == []  # the option off (`Geometry.pairs` 0)
    assert pair_modes("conv", g, 4, 8) == []  # simd < C: the window generator takes part pixels
    assert pair_modes("conv", g, 3, 144) == []  # pe must divide Co
    modes = pair_modes("conv", g, 4, 144)  # nf = 4
    assert {m for px, po, m in modes if po == 1} == {1, 2, 3, 4}
    assert {m for px, po, m in modes if po == 2} == {2, 4, 6, 8}  # two halves of up to 4 copies
    assert all(px == 2 for px, _, _ in modes)
    assert {m for _, po, m in pair_modes("conv", g, 16, 144) if po == 2} == {2}  # nf = 1: one copy a half
    # a strided conv reads pairs, its output is one pixel a beat; a split part likewise
    assert all(po == 1 for _, po, _ in pair_modes("conv", replace(g, sh=2, sw=2, ho=16, wo=16), 4, 144))
    assert all(po == 1 for _, po, _ in pair_modes("conv", replace(g, pairs=1), 4, 144))


def test_an_add_takes_two_pixels_a_beat_only_when_asked():
    assert (32, 32) not in foldings("eltwise2", ADD)
    assert (32, 32) in foldings("eltwise2", replace(ADD, pairs=2))
    c = block_cost("eltwise2", replace(ADD, pairs=2), 32, 32)
    assert c.ii == 32 * 32 // 2


def test_paired_conv_halves_the_window_generators_writes():
    g = replace(CONV, pairs=2)
    one = block_cost("conv", g, 16, 144)  # nf = 1: one pixel a cycle, 34 x 34 padded writes
    assert one.ii == 34 * 34
    two = block_cost("conv", g, 16, 144, mmv=2, px=2, po=2)
    assert two.ii == 34 * 34 // 2
    assert two.dsp == 2 * one.dsp
    with pytest.raises(ValueError):
        block_cost("eltwise2", ADD, 16, 16, px=2)


@pytest.fixture(scope="module")
def resnet8():
    return canonicalize(load_model(RESNET8))


@pytest.fixture(scope="module")
def paired_plan(resnet8):
    return make_plan(resnet8, load_board("u250"), baselines=False, pixel_pairs=True)


def test_resnet8_plans_faster_with_pairs_and_the_lanes_chain(resnet8, paired_plan):
    plain = make_plan(resnet8, load_board("u250"), baselines=False)
    assert all(n.px == 1 and n.po == 1 for n in plain.nodes)
    assert plain.ii_cycles == 34 * 34  # the stem's padded frame at one pixel a cycle
    assert paired_plan.ii_cycles < plain.ii_cycles
    paired = [n for n in paired_plan.nodes if n.px > 1]
    assert paired and all(n.block == "conv" for n in paired)
    stem = paired_plan.node("conv_2_node")
    assert stem.px == 2  # the graph input streams pixel pairs (2 x 3 lanes)
    # a paired output feeds a paired reader: a conv with two pixels in, or an Add at 2·C lanes
    graph = resnet8
    for n in paired_plan.nodes:
        if n.po != 2:
            continue
        for r in graph.consumers().get(graph.node(n.name).outputs[0], []):
            reader = paired_plan.node(r.name)
            if reader.block == "conv":
                assert reader.px == 2 or any(p.px == 2 for p in reader.split or [])
            elif reader.block == "eltwise2":
                assert reader.pe == 2 * graph.shape(r.outputs[0])[1]


def test_paired_plan_round_trips_through_plan_json(resnet8, paired_plan):
    back = Plan.from_json(paired_plan.to_json())
    assert [(n.px, n.po) for n in back.nodes] == [(n.px, n.po) for n in paired_plan.nodes]
    prob = build_problem(resnet8, load_board("u250"), pixel_pairs=True)
    seg = segmentation_of(prob, back)  # every paired node maps back to its table row
    for u, unit in enumerate(prob.units):
        if seg.fold[u] >= 0:
            n = back.node(unit.node.name)
            assert unit.table.pairs(seg.fold[u]) == (n.px, n.po)


def test_plan_cli_option():
    out = subprocess.run([sys.executable, "-m", "bbgrap_hls.cli", "plan", str(RESNET8), "--board", "u250",
                          "--pixel-pairs", "on", "--json"], capture_output=True, text=True, check=True).stdout
    nodes = json.loads(out)["nodes"]
    assert any(n["px"] == 2 and n["po"] == 2 for n in nodes)


@pytest.mark.csim
def test_resnet8_with_pairs_csim_bit_exact_and_kernels_at_the_plans_ii(tmp_path):
    """gen + the threaded C simulation of the paired ResNet-8: bit-exact, and every
    conv2d_pairs process counts (BB_PIPELINE) at most its block's planned ii, equal to the
    static bound of its loops (`schedule.kernel_bounds`)."""
    from bbgrap_hls.cli import main
    from bbgrap_hls.commands.csim import csim_design

    out = tmp_path / "out"
    assert main(["gen", str(RESNET8), "--board", "u250", "-o", str(out), "--pixel-pairs", "on"]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert plan["ii_cycles"] < 34 * 34 and any(n["po"] == 2 for n in plan["nodes"])
    res = csim_design(out, schedule=True)
    assert res.ok, res.message
    pairs = [r for r in res.schedule if "pairs" in r["label"]]
    assert {r["label"] for r in pairs} >= {"conv_swg_pairs<P>", "conv_mvu_pairs<P>"}
    for r in pairs:
        assert r["counted"] == pytest.approx(r["bound"], rel=0.001), r
        assert r["counted"] <= r["plan_ii"] * 1.001, r


@pytest.mark.sim
@pytest.mark.parametrize("model", ["residual_block", "lenet"])
def test_paired_designs_in_the_twin(tmp_path, model):
    """The RTL twin of small designs whose plans take pixel pairs (residual_block 324 -> 162
    cycles, LeNet 1,024 -> 784): bit-exact, ii and latency as planned."""
    from bbgrap_hls.cli import main
    from bbgrap_hls.commands.sim import sim_design
    from tests import models

    path = models.save(models.ALL[model](seed=0), tmp_path / f"{model}.onnx")
    out = tmp_path / "out"
    assert main(["gen", path, "--board", "u250", "-o", str(out), "--pixel-pairs", "on"]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert any(n["px"] == 2 for n in plan["nodes"])
    res = sim_design(out, frames=3)
    assert res.match, res.message
    assert res.measured_ii_cycles == res.predicted_ii_cycles == plan["ii_cycles"]
    assert abs(res.measured_latency_cycles - res.predicted_latency_cycles) <= 0.01 * res.predicted_latency_cycles


def test_auto_takes_pairs_only_where_a_window_floor_binds(resnet8, tmp_path):
    from bbgrap_hls.search import _pairs_may_help
    from tests import models

    board = load_board("u250")
    auto = make_plan(resnet8, board, baselines=False, pixel_pairs="auto")
    assert auto.ii_cycles < 34 * 34 and any(n.px == 2 for n in auto.nodes)
    assert auto.optimizer["pixel_pairs"] == "auto"
    # se_block's plan is bound above every conv's padded frame: auto does not plan again
    g = canonicalize(load_model(models.save(models.ALL["se_block"](seed=0), tmp_path / "se.onnx")))
    plan = make_plan(g, board, baselines=False, pixel_pairs="auto")
    assert not _pairs_may_help(g, plan)
    assert all(n.px == 1 for n in plan.nodes)
    with pytest.raises(Exception, match="pixel_pairs"):
        make_plan(resnet8, board, pixel_pairs="sometimes")
