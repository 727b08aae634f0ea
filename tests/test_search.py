"""Search: every plan fits every limit, cores stay acyclic, exact beats the baselines,
determinism, splitting, reconvergent FIFO sizing, infeasibility messages."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from bbgrap_hls.board import bundled_board_names, load_board, parse_board
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.ir import Graph, Node, Tensor
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.plan import Plan
from bbgrap_hls.search import make_plan
from tests import models

MODELS = ("mlp", "lenet", "resnet8", "ds_cnn", "mlp_autoencoder", "residual_block", "inception_block")


@functools.cache
def canonical(name: str) -> Graph:
    import tempfile

    d = tempfile.mkdtemp()
    return canonicalize(load_model(models.save(getattr(models, name)(), f"{d}/{name}.onnx")))


def two_core_board(dsp=400, bram18=200, lut=60000, width=256) -> object:
    return parse_board(f"""
name: fake2
source: test
clock_mhz: 100
defaults: {{device: x, dsp: {dsp}, bram18: {bram18}, uram: 0, lut: {lut}, cap: 1.0}}
cores: [{{id: 0}}, {{id: 1}}]
links: [{{a: 0, b: 1, width_bits: {width}, latency_cycles: 3, kind: test}}]
host: {{kind: t, bandwidth_gbps: 1, latency_us: 1}}
""", "fake2")


def check_plan(plan: Plan) -> None:
    for c in plan.cores:
        for r in ("dsp", "bram18", "uram", "lut"):
            assert getattr(c, r) <= getattr(c, f"{r}_limit"), (c.id, r)
    order = {k: i for i, k in enumerate(plan.core_order)}
    for ch in plan.channels:
        if ch.src_core is not None and ch.dst_core is not None:
            assert order[ch.src_core] <= order[ch.dst_core], ch
    assert plan.ii_cycles == max([n.ii_cycles for n in plan.nodes] + [t.ii_cycles for t in plan.transfers])
    assert plan.fps == pytest.approx(plan.clock_mhz * 1e6 / plan.ii_cycles)


@pytest.mark.parametrize("board", bundled_board_names())
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("strategy", ["search", "greedy", "even"])
def test_every_plan_respects_every_limit(board, model, strategy):
    try:
        plan = make_plan(canonical(model), load_board(board), strategy=strategy, baselines=False,
                         time_limit=2.0)
    except InfeasibleError as e:
        assert "short" in str(e) or "fits" in str(e)
        return
    check_plan(plan)


@pytest.mark.parametrize("model", ["resnet8", "mlp_autoencoder", "ds_cnn"])
def test_exact_is_no_worse_than_the_baselines(model):
    plan = make_plan(canonical(model), load_board("u250"), strategy="exact")
    assert plan.baselines["single"] <= plan.fps * (1 + 1e-9)
    s = make_plan(canonical(model), load_board("u250"), strategy="search", baselines=False)
    assert s.ii_cycles <= plan.ii_cycles


def test_exact_marks_optimal_and_more_cores_help_compute_bound_models():
    g = canonical("mlp_autoencoder")
    plan = make_plan(g, load_board("u250"), strategy="exact")
    assert plan.optimal
    assert plan.fps > 2.5 * plan.baselines["single"]


def test_deterministic_bytes():
    g = canonical("resnet8")
    a = make_plan(g, load_board("u250"), seed=3).to_json(stable=True)
    b = make_plan(g, load_board("u250"), seed=3).to_json(stable=True)
    assert a == b
    assert Plan.from_json(a).to_json(stable=True) == a


def test_residual_fifo_is_sized_from_the_latency_difference():
    plan = make_plan(canonical("residual_block"), load_board("zcu102"), baselines=False)
    add = [n for n in plan.nodes if n.op == "Add"][0]
    depths = [ch.depth for ch in plan.channels if ch.dst == add.name]
    assert len(depths) == 2 and max(depths) > 2 and min(depths) == 2


def test_fused_relu_has_no_block_of_its_own():
    plan = make_plan(canonical("lenet"), load_board("zcu102"), baselines=False)
    fused = [n for n in plan.nodes if n.fused_into]
    assert fused and all(n.dsp == 0 and n.core == plan.node(n.fused_into).core for n in fused)


def _big_dense(co=64, c=512) -> Graph:
    w = np.zeros((co, c), np.float32)
    t = {"x": Tensor("x", (1, c)), "w": Tensor("w", w.shape, data=w), "y": Tensor("y", (1, co))}
    return Graph("big", ["x"], ["y"], t, [Node("fc", "Dense", ["x", "w"], ["y"])])


def test_a_layer_too_big_for_one_core_is_split_over_two():
    g = _big_dense()
    board = two_core_board(dsp=400, bram18=12, lut=60000)
    with pytest.raises(InfeasibleError, match="short by"):
        make_plan(g, board, strategy="single", baselines=False)
    plan = make_plan(g, board, strategy="exact", baselines=False)
    node = plan.node("fc")
    assert node.split and [p.core for p in node.split] == [0, 1]
    assert node.split[0].co_begin == 0 and node.split[-1].co_end == 64
    assert all(a.co_end == b.co_begin for a, b in zip(node.split, node.split[1:], strict=False))
    check_plan(plan)


def test_infeasible_names_core_resource_and_shortfall():
    g = _big_dense(co=64, c=4096)
    with pytest.raises(InfeasibleError, match=r"BRAM18.*short by \d+.*>= \d+"):
        make_plan(g, two_core_board(bram18=4), strategy="search", baselines=False)


def test_tensor_read_twice_on_another_core_crosses_once():
    plan = make_plan(canonical("inception_block"), two_core_board(dsp=60, bram18=60, lut=30000),
                     baselines=False)
    keys = [(t.tensor, t.dst_core) for t in plan.transfers]
    assert len(keys) == len(set(keys))
    assert plan.optimizer["buffers_after"] == 0 and plan.optimizer["barriers_after"] == 0
