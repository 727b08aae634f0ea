"""Property-based tests: random small DAGs through canonicalize → quantize → make_plan → gen → csim.

`random_model` builds an ONNX model from a `Draw` (a source of small choices), so the same
generator serves hypothesis here (`HypothesisDraw`, shrinking, ``derandomize=True`` for a
reproducible CI) and the thousands of plain seeded examples of ``bench/property_bench.py``
(`SeededDraw`). Models: a 4-D input, then 1-5 blocks among conv (any kernel 1/3, stride 1/2,
padding, depthwise), max/average pools, unary activations, a residual Add of two branches,
a Concat of two branches; then optionally global average pool or flatten → dense. Weights
come from a drawn seed.

Properties checked by `check_example`:
- the plan puts every fabric node on a core, every core within every limit, and the
  quotient graph of cores (core → core for every channel) is acyclic;
- ``generate`` writes every core's C++ and the test vectors;
- with ``csim=True``: g++ (``-Werror``) C simulation equals the integer reference bit for bit.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.board import bundled_board_names, load_board
from bbgrap_hls.search import STRATEGIES

ACTIVATIONS = ("Relu", "Relu6", "Sigmoid", "Tanh", "LeakyRelu", "HardSwish", "HardSigmoid")
BLOCKS = ("conv", "dwconv", "maxpool", "avgpool", "act", "add", "concat")
HEADS = ("none", "gap_dense", "flatten_dense", "gap")


class Draw(Protocol):
    def int(self, lo: int, hi: int) -> int: ...  # inclusive bounds
    def pick(self, seq: tuple | list) -> Any: ...


class HypothesisDraw:
    """Choices drawn from hypothesis (so that failures shrink)."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def pick(self, seq):
        return self.data.draw(st.sampled_from(list(seq)))


class SeededDraw:
    """Choices from a seeded numpy generator (the bench: no shrinking, every failure counted)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def int(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def pick(self, seq):
        return list(seq)[int(self.rng.integers(len(seq)))]


@dataclass
class _Net:
    rng: np.random.Generator
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    shapes: dict = field(default_factory=dict)
    desc: list = field(default_factory=list)

    def name(self, base: str) -> str:
        return f"{base}{len(self.nodes) + len(self.inits)}"

    def const(self, value: np.ndarray) -> str:
        n = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(value, np.float32), n))
        return n

    def node(self, op: str, ins: list[str], shape: tuple, **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=out + "_n", **attrs))
        self.shapes[out] = shape
        return out

    def conv(self, x: str, cout: int, k: int, s: int, p: int, group: int = 1) -> str:
        n, c, h, w = self.shapes[x]
        wt = self.const(self.rng.standard_normal((cout, c // group, k, k)) * np.sqrt(2.0 / (c // group * k * k)))
        b = self.const(self.rng.normal(0, 0.1, cout))
        ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        self.desc.append(f"conv{k}x{k}/s{s}/p{p}/g{group} {c}->{cout}")
        return self.node("Conv", [x, wt, b], (n, cout, ho, wo), kernel_shape=[k, k], strides=[s, s],
                         pads=[p] * 4, group=group)

    def act(self, x: str, op: str) -> str:
        self.desc.append(op)
        if op == "Relu6":
            return self.node("Clip", [x, self.const(np.array(0.0)), self.const(np.array(6.0))], self.shapes[x])
        attrs = {"alpha": 0.1} if op == "LeakyRelu" else {}
        return self.node(op, [x], self.shapes[x], **attrs)


def _conv_params(d: Draw, h: int, w: int) -> tuple[int, int, int]:
    k = d.pick((1, 3)) if min(h, w) >= 3 else 1
    s = d.pick((1, 2))
    p = d.pick((0, k // 2)) if k > 1 else 0
    return k, s, p


def random_model(d: Draw, max_blocks: int = 5, max_hw: int = 8, max_c: int = 6) -> tuple[onnx.ModelProto, str]:
    """A random small DAG of supported ops; returns the model and a one-line description."""
    seed = d.int(0, 2**16)
    net = _Net(np.random.default_rng(seed))
    c, h = d.int(1, 4), d.int(3, max_hw)
    w = d.pick((h, d.int(3, max_hw)))
    net.shapes["x"] = (1, c, h, w)
    net.desc.append(f"seed {seed} x 1x{c}x{h}x{w}")
    x = "x"
    for _ in range(d.int(1, max_blocks)):
        n, c, h, w = net.shapes[x]
        kind = d.pick(BLOCKS)
        if kind == "conv":
            k, s, p = _conv_params(d, h, w)
            x = net.conv(x, d.int(1, max_c), k, s, p)
            if d.int(0, 1):
                x = net.act(x, d.pick(ACTIVATIONS))
        elif kind == "dwconv":
            k, s, p = _conv_params(d, h, w)
            x = net.conv(x, c, k, s, p, group=c)
        elif kind in ("maxpool", "avgpool") and min(h, w) >= 2:
            k = d.pick((2, 3)) if min(h, w) >= 3 else 2
            s = d.pick((1, 2))
            p = d.pick((0, 1)) if k == 3 else 0
            op = "MaxPool" if kind == "maxpool" else "AveragePool"
            ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
            net.desc.append(f"{op}{k}/s{s}/p{p}")
            attrs = {} if op == "MaxPool" else {"count_include_pad": d.int(0, 1)}
            x = net.node(op, [x], (n, c, ho, wo), kernel_shape=[k, k], strides=[s, s], pads=[p] * 4, **attrs)
        elif kind == "act":
            x = net.act(x, d.pick(ACTIVATIONS))
        elif kind == "add":
            k = d.pick((1, 3)) if min(h, w) >= 3 else 1
            a = net.conv(x, c, k, 1, k // 2)
            b = x if d.int(0, 1) else net.act(net.conv(x, c, 1, 1, 0), "Relu")
            net.desc.append("Add")
            x = net.node("Add", [a, b], (n, c, h, w))
        elif kind == "concat":
            ca, cb = d.int(1, max_c), d.int(1, max_c)
            a = net.conv(x, ca, 1, 1, 0)
            b = net.act(net.conv(x, cb, 3, 1, 1), "Relu") if min(h, w) >= 3 else net.conv(x, cb, 1, 1, 0)
            net.desc.append("Concat")
            x = net.node("Concat", [a, b], (n, ca + cb, h, w), axis=1)
    head = d.pick(HEADS)
    n, c, h, w = net.shapes[x]
    if head in ("gap", "gap_dense"):
        x = net.node("GlobalAveragePool", [x], (n, c, 1, 1))
        net.desc.append("GAP")
    if head in ("gap_dense", "flatten_dense"):
        f = int(np.prod(net.shapes[x][1:]))
        x = net.node("Flatten", [x], (n, f), axis=1)
        co = d.int(1, 10)
        wt = net.const(net.rng.standard_normal((co, f)) * np.sqrt(2.0 / f))
        x = net.node("Gemm", [x, wt, net.const(net.rng.normal(0, 0.1, co))], (n, co), transB=1)
        net.desc.append(f"Dense {f}->{co}")
    g = helper.make_graph(net.nodes, "prop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, *net.shapes["x"][1:]])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, list(net.shapes[x]))], net.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])  # 14: HardSwish
    m.ir_version = min(m.ir_version, 8)
    onnx.checker.check_model(m)
    return m, " -> ".join(net.desc)


def quotient_cycle(plan) -> list[int] | None:
    """A cycle of the core quotient graph (core → core for every channel), or None."""
    edges: dict[int, set[int]] = {}
    for ch in plan.channels:
        if ch.src_core is not None and ch.dst_core is not None and ch.src_core != ch.dst_core:
            edges.setdefault(ch.src_core, set()).add(ch.dst_core)
    for t in plan.transfers:
        if t.src_core != t.dst_core:
            edges.setdefault(t.src_core, set()).add(t.dst_core)
    state: dict[int, int] = {}

    def visit(u: int, path: list[int]) -> list[int] | None:
        state[u] = 1
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return path + [u, v]
            if not state.get(v):
                found = visit(v, path + [u])
                if found:
                    return found
        state[u] = 2
        return None

    for u in sorted(edges):
        if not state.get(u):
            cyc = visit(u, [])
            if cyc:
                return cyc
    return None


def check_plan(graph, plan) -> None:
    """Every fabric node placed, every core within every limit, acyclic core graph."""
    for c in plan.cores:
        for r in ("dsp", "bram18", "uram", "lut"):
            assert getattr(c, r) <= getattr(c, f"{r}_limit"), \
                f"core {c.id} uses {getattr(c, r)} {r}, limit {getattr(c, r + '_limit')}"
    placed = {n.name for n in plan.nodes if n.core is not None or n.fused_into or n.split}
    for n in graph.nodes:
        if not n.host:
            assert n.name in placed, f"node '{n.name}' ({n.op}) is on no core"
    cyc = quotient_cycle(plan)
    assert cyc is None, f"core graph has a cycle {cyc}"


def check_example(model: onnx.ModelProto, board_name: str, strategy: str, folder: Path, csim: bool = False,
                  seed: int = 0) -> dict[str, Any]:
    """Run one example through the pipeline and assert every property; returns a summary."""
    from bbgrap_hls.codegen import csim as csim_mod
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.errors import InfeasibleError
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.search import make_plan

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save(model, path)
    g = canonicalize(load_model(path))
    board = load_board(board_name)
    try:
        plan = make_plan(g, board, strategy=strategy, time_limit=0.2, seed=seed, baselines=False)
    except InfeasibleError:
        if board_name == "pynq-z2":  # the one small board: a random model may not fit
            return {"infeasible": True}
        raise
    check_plan(g, plan)
    rng = np.random.default_rng(seed)
    shape = g.shape(g.inputs[0])
    calib = {g.inputs[0]: rng.standard_normal((4, *shape)).astype(np.float32)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gq = quantize(g, calib, seed=seed)
    feeds = {g.inputs[0]: rng.standard_normal(shape).astype(np.float32)}
    files, design = generate(gq, plan, board, feeds)
    assert any(k.startswith("hls/core") and k.endswith(".cpp") for k in files)
    assert "tb/tb.cpp" in files and "tb/vectors.json" in files
    out = folder / "out"
    for rel, data in files.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    summary = {"cores": len(design.cores), "ii": plan.ii_cycles}
    if csim:
        # -O2 whatever the size: the warnings g++ gives only with its optimiser, on random designs
        res = csim_mod.run(out, out / "tb", design.outputs, werror=True, opt=csim_mod.OPT_FULL)
        assert res.ok, res.message
        summary["csim"] = res.message
    return summary


# -- hypothesis ---------------------------------------------------------------------------

BOARDS = tuple(bundled_board_names())
_COMMON = dict(deadline=None, derandomize=True, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@settings(max_examples=200, **_COMMON)
@given(data=st.data(), board=st.sampled_from(BOARDS), strategy=st.sampled_from(STRATEGIES))
def test_random_dags_plan_and_gen(tmp_path_factory, data, board, strategy):
    model, desc = random_model(HypothesisDraw(data))
    note = f"model: {desc}; board {board}; strategy {strategy}"
    try:
        check_example(model, board, strategy, tmp_path_factory.mktemp("p"))
    except Exception as e:
        raise AssertionError(f"{note}: {type(e).__name__}: {e}") from e


@pytest.mark.csim
@pytest.mark.slow
@settings(max_examples=20, **_COMMON)
@given(data=st.data(), board=st.sampled_from(("u250", "vu9p-quad", "2x-u250", "zcu102")),
       strategy=st.sampled_from(STRATEGIES))
def test_random_dags_csim_bit_exact(tmp_path_factory, data, board, strategy):
    model, desc = random_model(HypothesisDraw(data), max_blocks=3, max_hw=6, max_c=4)
    note = f"model: {desc}; board {board}; strategy {strategy}"
    try:
        check_example(model, board, strategy, tmp_path_factory.mktemp("c"), csim=True)
    except Exception as e:
        raise AssertionError(f"{note}: {type(e).__name__}: {e}") from e


def test_quotient_cycle_detects_a_cycle():
    from types import SimpleNamespace as NS

    ch = [NS(src_core=0, dst_core=1), NS(src_core=1, dst_core=2), NS(src_core=2, dst_core=0)]
    assert quotient_cycle(NS(channels=ch, transfers=[])) is not None
    assert quotient_cycle(NS(channels=ch[:2], transfers=[])) is None


def test_seeded_draw_reproducible():
    a, da = random_model(SeededDraw(7))
    b, db = random_model(SeededDraw(7))
    assert da == db and a.SerializeToString() == b.SerializeToString()

