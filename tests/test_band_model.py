"""Row bands (docs/cost-model.md, "Row bands"; `bbgrap_hls.model.band`): an off-chip conv
computed ``Ho/bands`` output rows at a time behind a band splitter. Checked here: the band
geometry and the splitter's rows against a direct enumeration of the rows each output row
reads, the block's cost against `offchip_mvu` on the band, and the planner's rows and
plan.json. The cycles are checked against the RTL in tests/test_rtl_band.py and the HLS in
tests/test_hls_band.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bbgrap_hls.model.band import (
    band_counts,
    band_geometry,
    band_rows,
    banded,
    dropped_rows,
    overlap_rows,
    split_beats,
)
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.kinds import block_cost
from bbgrap_hls.model.offchip import offchip_mvu

CASES = [
    Geometry(h=8, w=8, c=4, ho=8, wo=8, co=8, kh=3, kw=3, pads=(1, 1, 1, 1)),
    Geometry(h=8, w=6, c=4, ho=4, wo=3, co=8, kh=3, kw=3, sh=2, sw=2, pads=(1, 1, 1, 1)),
    Geometry(h=8, w=8, c=4, ho=4, wo=4, co=8, kh=1, kw=1, sh=2, sw=2),
    Geometry(h=9, w=9, c=2, ho=5, wo=5, co=4, kh=5, kw=5, dh=2, dw=2, pads=(3, 3, 2, 2)),
    Geometry(h=7, w=7, c=8, ho=3, wo=3, co=8, kh=3, kw=3, sh=2, sw=2),
]


def _rows_read(g: Geometry, oy: int) -> set[int]:
    """Input rows (padding as negative or >= h) output row ``oy`` reads: from the conv's
    definition, not from `band.py`."""
    taps = (g.kh - 1) // g.dh + 1
    return {oy * g.sh - g.pads[0] + t * g.dh for t in range(taps)}


@pytest.mark.parametrize("g", CASES)
def test_bands_cover_exactly_the_rows_each_output_row_reads(g):
    for bands in [1, *band_counts(g)]:
        gb = band_geometry(g, bands)
        r = g.ho // bands
        assert gb.ho == r and gb.pads[0] == gb.pads[2] == 0 and gb.pads[1::2] == g.pads[1::2]
        # the band conv's output row j reads band rows j·sh + t·dh: those input rows
        for b, r0 in enumerate(band_rows(g, bands)):
            for j in range(r):
                band_read = {r0 + row for row in _rows_read(dataclasses.replace(gb, pads=(0, 0, 0, 0)), j)}
                assert band_read == _rows_read(g, b * r + j)
                assert max(band_read) <= r0 + gb.h - 1
        read = set().union(*(_rows_read(g, oy) for oy in range(g.ho)))
        assert dropped_rows(g, bands) <= g.h - len({x for x in read if 0 <= x < g.h})


@pytest.mark.parametrize("g", CASES)
def test_one_band_is_the_whole_frame_block(g):
    assert banded(g, 4, 2, 1) == offchip_mvu(g, 4, 2)


@pytest.mark.parametrize("g", CASES)
def test_banded_cost_is_the_band_conv_times_bands(g):
    lanes = 2
    whole = offchip_mvu(g, 4, lanes)
    for bands in band_counts(g):
        gb = band_geometry(g, bands)
        band = offchip_mvu(gb, 4, lanes)
        c = banded(g, 4, lanes, bands)
        assert c.bands == bands
        assert c.ii == max(bands * band.ii, split_beats(g, bands, lanes))
        assert c.offchip_bytes == bands * whole.offchip_bytes  # every weight once per band
        assert c.dsp == whole.dsp
        assert c.span >= c.lead and c.fill <= 1.0
        row = g.w * g.c // lanes
        assert split_beats(g, bands, lanes) == (bands * gb.h + dropped_rows(g, bands)) * row
        assert overlap_rows(g, bands) == max(0, gb.h - (g.ho // bands) * g.sh)


def test_bands_trade_frame_memory_for_bandwidth():
    """ResNet-50's stride-2 3x3 conv (28x28x256 -> 14x14x256) at pe 1, simd 64: a band of one
    output row holds 3 input rows instead of the frame."""
    g = Geometry(h=28, w=28, c=256, ho=14, wo=14, co=256, kh=3, kw=3, sh=2, sw=2, pads=(1, 1, 1, 1))
    assert band_counts(g) == [14, 7]
    mem = (16.0, 100, 64)
    whole = block_cost("conv", g, 1, 64, ddr=True, memory=mem)
    one_row = block_cost("conv", g, 1, 64, ddr=True, memory=mem, bands=14)
    assert one_row.bram18 < whole.bram18 / 3
    assert one_row.offchip_bytes == 14 * whole.offchip_bytes
    assert one_row.ii == whole.ii  # compute-bound at pe 1 either way
    with pytest.raises(ValueError):
        block_cost("conv", g, 1, 64, ddr=True, memory=mem, bands=3)  # 3 does not divide 14
    with pytest.raises(ValueError):
        block_cost("conv", g, 1, 64, ddr=True, memory=mem, bands=2, in_slots=1)


def test_tables_offer_band_rows_for_offchip_convs_only():
    from bbgrap_hls.search.tables import _Inputs, _table

    g = Geometry(h=16, w=16, c=8, ho=16, wo=16, co=16, kh=3, kw=3, pads=(1, 1, 1, 1))
    t = _table("conv", g, _Inputs((g.in_elems,), (0.0,), (0,)), True, False, True, (8.0, 40, 16))
    banded_rows = t.bands > 1
    assert banded_rows.any()
    assert (t.ddr[banded_rows]).all() and not t.in1[banded_rows].any()
    assert set(t.bands[banded_rows].tolist()) == set(band_counts(g))
    for i in map(int, banded_rows.nonzero()[0]):
        c = block_cost("conv", g, int(t.pe[i]), int(t.simd[i]), uram=bool(t.uram[i]), ddr=True,
                       memory=(8.0, 40, 16), bands=int(t.bands[i]))
        assert int(t.ii[i]) == c.ii
    # no bands without board memory
    t0 = _table("conv", g, _Inputs((g.in_elems,), (0.0,), (0,)), True, False, True, None)
    assert (t0.bands == 1).all()


@pytest.mark.parametrize("first", ["plain", "banded"])
@pytest.mark.parametrize("g", [
    Geometry(h=16, w=16, c=8, ho=16, wo=16, co=16, kh=3, kw=3, pads=(1, 1, 1, 1)),
    Geometry(h=28, w=28, c=32, ho=14, wo=14, co=64, kh=3, kw=3, sh=2, sw=2, pads=(1, 1, 1, 1)),
    Geometry(h=8, w=8, c=16, ho=8, wo=8, co=24, kh=1, kw=1),
])
def test_band_rows_built_apart_give_the_one_pass_table(g, first):
    """A table with row-band rows is built as its rows without them plus its band rows,
    merged (`tables._build`): the same rows, costs and order as one pass over every row
    (`_tables_of`), whether the table without band rows was built first or not, for both
    packing modes; the table without them is the one-pass table's `whole_frame`."""
    from bbgrap_hls.search import tables as T

    ins = T._Inputs((g.in_elems,), (0.0,), (0,))
    mem = (8.0, 40, 16)
    # (a fresh URAM flag per case: keys no other test has built)
    args = ("conv", g, ins, True, True, True, mem, True, True, True, True)
    T._TABLES.clear()
    T._RAW.clear()
    order = [False, True] if first == "plain" else [True, False]
    got = {bands: T._table(*args, False, False, bands) for bands in order}
    for pack, one_pass in zip((True, False), T._tables_of("conv", g, ins, True, True, True, mem, (True, False),
                                                          True, True, True), strict=True):
        banded = got[True] if pack else T._table(*args[:7], False, *args[8:], False, False, True)
        plain = got[False] if pack else T._table(*args[:7], False, *args[8:], False, False, False)
        assert (one_pass.bands > 1).any()
        for name in T._COLUMNS:
            assert np.array_equal(getattr(banded, name), getattr(one_pass, name)), name
            assert np.array_equal(getattr(plain, name), getattr(one_pass.whole_frame(), name)), name


@pytest.mark.parametrize("bram, banded", [(20, True), (400, False)])
def test_plans_keep_bands_only_where_chosen(tmp_path, bram, banded):
    """`pair_res` on one core of 20 BRAM18 and 64 DSP computes its convs in bands (the twin
    runs it: tests/test_sim_offchip.py `bands_res`); with 400 BRAM18 the weights stay on chip
    and no band is chosen (`make_plan` plans without band rows first, then with them where that
    plan has board-memory traffic, keeping the better)."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.search import make_plan
    from tests import models
    from tests.test_sim_offchip import board_yaml, pair_res

    (tmp_path / "b.yaml").write_text(board_yaml(1, bram, 64, 20000))
    g = canonicalize(load_model(models.save(pair_res(), tmp_path / "m.onnx")))
    plan = make_plan(g, load_board(str(tmp_path / "b.yaml")), baselines=False, offchip_weights=True,
                     padded_folds=False, ddr_fifos=False)
    assert any(n.bands > 1 for n in plan.nodes) == banded
    if banded:
        assert plan.optimizer["row_bands"]
    for n in plan.nodes:
        if n.bands > 1:
            assert n.weights == "ddr" and n.in_slots == 2 and n.op == "Conv"
