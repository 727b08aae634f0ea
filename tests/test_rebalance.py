"""Segment boundaries moved by the packing (`bbgrap_hls.search.rebalance`): valid plans with
contiguous cores, targets thinned as documented, and the gate `make_plan` uses."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.frontend.onnx_loader import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import build_problem
from bbgrap_hls.search.rebalance import TARGET_STEP, UNDERUSED, rebalance, targets_below, underused
from bbgrap_hls.search.repair import violations
from bbgrap_hls.search.runs import _run_best


def _setup(model_file, model, board):
    prob = build_problem(canonicalize(load_model(model_file(model))), load_board(board))
    return _run_best(prob, "search", "throughput", 60.0, 0, None)


@pytest.mark.parametrize("model,board", [("resnet8", "u280"), ("ds_cnn", "u250")])
def test_packed_plan_is_valid_and_as_fast(model_file, model, board):
    """Asked to beat the rules' ii by one cycle, the packing finds a plan at least as fast whose
    cores are contiguous along the path and within every limit."""
    p, rules, seg = _setup(model_file, model, board)
    stats: dict = {}
    got = rebalance(p, "search", "throughput", seg, rules.ii_cycles + 1, stats=stats)
    assert got is not None, stats
    plan, s = got
    assert plan.ii_cycles <= rules.ii_cycles
    assert not violations(plan)
    pos = [p.core_path.index(c) for c in s.core]
    assert pos == sorted(pos)  # contiguous runs in path order
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
