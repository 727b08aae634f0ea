"""`search` never plans slower than the baselines it is compared with.

The exact segmentation's folding rules and the repair step are heuristics: where the repair
has to lower many foldings to fit what the search tables did not charge (the FIFOs around
off-chip blocks, which lag one to two frames), the repaired exact segmentation can end
slower than a baseline's. ResNet-18 (torchvision shapes at 64 x 64) on zcu102 with off-chip
weights: the repaired exact segmentation plans 390.6 frames/s, `greedy` 678.2; `search` now
finishes the baselines' segmentations too and keeps the fastest, and says so.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.search import make_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from zoo import measure, resnet18  # noqa: E402


@pytest.fixture(scope="module")
def plan():
    g, _ = measure(resnet18(res=64))
    return make_plan(g, load_board("zcu102"), offchip_weights=True)


def test_search_at_least_every_baseline(plan):
    assert plan.fps >= max(plan.baselines.values()) * (1 - 1e-9), (plan.fps, plan.baselines)


def test_search_says_it_took_a_baseline(monkeypatch, model_file):
    """Where the repaired exact segmentation loses to a baseline's, search keeps the baseline's
    and says so. ResNet-18 at 64 x 64 on zcu102 did that naturally (390.6 frames/s against
    greedy's 678.2) until stop 58, whose smaller requantisers let the exact segmentation plan
    781.2 there (the fixture above): here the exact segmentation is made to lose, by putting
    every block on one core of u250, and the joint folding choice and the moved boundaries are left
    out."""
    import bbgrap_hls.search as search
    import bbgrap_hls.search.runs as runs
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize

    monkeypatch.setenv("BBGRAP_HLS_PLAN_JOBS", "1")
    monkeypatch.setattr(runs, "exact", lambda prob, n=None: runs.single(prob))
    monkeypatch.setattr(runs, "refine", lambda prob, seg, *a: seg)
    monkeypatch.setattr(search, "joint_plan", lambda *a, **k: None)
    monkeypatch.setattr(search, "rebalance", lambda *a, **k: None)
    g = canonicalize(load_model(model_file("resnet8")))
    got = make_plan(g, load_board("u250"))
    assert got.fps >= max(got.baselines.values()) * (1 - 1e-9) > got.baselines["single"]
    assert not got.optimal
    assert re.search(r"took the (even|greedy) baseline's segmentation", got.optimality_note), got.optimality_note
