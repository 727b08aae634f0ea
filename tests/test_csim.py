"""End-to-end C simulation: generated HLS C++ bit-exact with the integer reference.

Few designs are compiled (each g++ build takes 5-12 s): one small residual model on
multi-core plans from the planner, a plan with a node split over cores, and a plan whose
inter-core transfers all go through off-chip buffers.
"""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.board import load_board
from bbgrap_hls.codegen import csim
from bbgrap_hls.codegen.project import generate
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.plan import SplitPart
from bbgrap_hls.quant.quantizer import quantize
from bbgrap_hls.search import make_plan

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]


def small_model(path):
    rng = np.random.default_rng(0)

    def w(name, *s):
        return numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Add", ["c2", "r1"], ["a"], name="add"),
             helper.make_node("Sigmoid", ["a"], ["s"], name="sig"),
             helper.make_node("MaxPool", ["s"], ["m"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             helper.make_node("GlobalAveragePool", ["m"], ["gp"], name="gap"),
             helper.make_node("Flatten", ["gp"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wd", "bd"], ["y"], transB=1, name="fc")]
    inits = [w("w1", 8, 3, 3, 3), w("b1", 8), w("w2", 8, 8, 3, 3), w("b2", 8), w("wd", 10, 8), w("bd", 10)]
    g = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    p = small_model(tmp_path_factory.mktemp("m") / "small.onnx")
    g = canonicalize(load_model(p))
    return g, quantize(g)


def _csim(tmp_path, gq, plan, board):
    x = np.random.default_rng(3).standard_normal(gq.shape(gq.inputs[0])).astype(np.float32)
    files, design = generate(gq, plan, board, {gq.inputs[0]: x})
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    return csim.run(tmp_path, tmp_path / "tb", design.outputs, werror=True), design


@pytest.mark.parametrize("board_name", ["u250", "vu9p-quad"])
def test_csim_multicore_plan(graphs, tmp_path, board_name):
    g, gq = graphs
    board = load_board(board_name)
    plan = make_plan(g, board, strategy="even")
    res, design = _csim(tmp_path, gq, plan, board)
    assert len(design.cores) > 1
    assert res.ok, res.message


def _force_split(plan, node: str, cores: tuple[int, int]):
    n = plan.node(node)
    co = 8
    # the first part's weights in URAM (a RAM its core loads), the second part's in BRAM
    n.split = [SplitPart(cores[0], 0, 4, 2, n.simd, 1, 0, 0, 0, 0, "uram"),
               SplitPart(cores[1], 4, co, 4, n.simd, 1, 0, 0, 0, 0, "bram")]
    n.core = cores[0]
    return plan


def conv2_split_plan(g, board):
    """The ``even`` plan of the csim model with conv2 split over its core and a neighbour."""
    plan = copy.deepcopy(make_plan(g, board, strategy="even"))
    c2 = plan.node("conv2").core
    other = c2 + 1 if c2 + 1 < len(board.cores) else c2 - 1
    _force_split(plan, "conv2", (other, c2) if other < c2 else (c2, other))
    return plan


@pytest.mark.slow
def test_csim_split_node_and_buffers(graphs, tmp_path):
    g, gq = graphs
    board = load_board("u250")
    plan = conv2_split_plan(g, board)
    for t in plan.transfers:
        t.kind = "buffer"  # every crossing through off-chip memory
    res, design = _csim(tmp_path, gq, plan, board)
    assert design.buffers, "expected off-chip buffers in the design"
    assert res.ok, res.message


def test_csim_uram_weights(graphs, tmp_path):
    """Every weighted node in URAM: the cores fill their weight RAMs from hls/weights_core<k>.bin
    through their wts ports (load_weights = 1) and stay bit-exact; without the image the
    testbench stops."""
    g, gq = graphs
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even")
    for n in plan.nodes:
        if n.weights is not None:
            n.weights = "uram"
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message
    # both URAM layouts are exercised: half-words through two ports, and one wide word
    mems = [lay.wmem for c in design.cores for lay in c.layers if lay.wmem is not None]
    assert any(m.halves for m in mems) and any(not m.halves for m in mems), \
        [(m.banks, m.lanes, m.depth) for m in mems]
    images = sorted(p.name for p in (tmp_path / "hls").glob("weights_core*.bin"))
    assert images == sorted(f"weights_{c.name}.bin" for c in design.cores
                            if any(lay.wmem is not None for lay in c.layers))
    (tmp_path / "hls" / images[0]).rename(tmp_path / "moved.bin")
    res2 = csim.run(tmp_path, tmp_path / "tb", design.outputs, werror=True)
    assert not res2.ok and images[0] in res2.message
    assert res2.build_seconds == 0.0  # the image is data: the cached binary is reused


def test_csim_detects_mismatch(graphs, tmp_path):
    g, gq = graphs
    board = load_board("u250")
    plan = make_plan(g, board, strategy="single")
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message
    t, ident, _ = design.outputs[0]
    exp = tmp_path / "tb" / f"expect_{ident}.bin"
    data = bytearray(exp.read_bytes())
    data[3] = (data[3] + 1) % 256
    exp.write_bytes(bytes(data))
    res2 = csim.run(tmp_path, tmp_path / "tb", design.outputs, werror=True)
    assert not res2.ok and "element 3" in res2.message
    assert res2.build_seconds == 0.0  # cached binary reused


def affine_sub_model(path):
    """A BatchNormalization no Conv absorbs (a ChannelAffine), then a Sub whose second operand
    no pass can negate (a MaxPool): canonicalisation makes it an Add of a negating
    ChannelAffine (negative multipliers)."""
    from tests.models import Builder

    b = Builder(seed=4)
    x = b.act(b.bn(b.input("x", (1, 4, 6, 6))))
    y = b.binary("Sub", b.conv(x, 4, 3), b.maxpool(x, 3, 1, 1))
    last = b.nodes[-1]
    last.output[0] = "y"
    b.shapes["y"] = b.shapes[y]
    onnx.save(b.model(["y"], "affine_sub"), path)
    return path


def _from_model(tmp_path, model_path, board_name, strategy="even"):
    g = canonicalize(load_model(model_path))
    gq = quantize(g)
    board = load_board(board_name)
    from bbgrap_hls.quant import is_qdq

    return g, gq, make_plan(gq if is_qdq(g) else g, board, strategy=strategy), board


def test_csim_channel_affine_and_sub(tmp_path):
    g, gq, plan, board = _from_model(tmp_path, affine_sub_model(tmp_path / "m.onnx"), "u250")
    ops = [n.op for n in gq.nodes]
    affine = [n for n in gq.nodes if n.op == "ChannelAffine"]
    assert len(affine) == 2 and ("Sub" in ops or "Add" in ops), ops
    assert any((np.asarray(n.attrs["q"]["mult"]) < 0).any() for n in affine)  # signed multipliers
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message


@pytest.mark.parametrize("model", ["se_block", "channel_shuffle"])
def test_csim_test_models_on_ring_board(tmp_path, model):
    from tests import models

    g, gq, plan, board = _from_model(tmp_path, models.save(models.ALL[model](seed=0), tmp_path / "m.onnx"),
                                     "vu9p-quad")
    res, design = _csim(tmp_path, gq, plan, board)
    assert len(design.cores) > 1
    assert res.ok, res.message


def test_csim_qdq_model(tmp_path):
    """A QDQ model from onnxruntime's quantize_static keeps its scales and stays bit-exact."""
    from tests.test_quant_qdq import _qdq

    qp, _, _ = _qdq("ds_block", tmp_path)
    g, gq, plan, board = _from_model(tmp_path, qp, "u280")
    res, design = _csim(tmp_path, gq, plan, board)
    assert len(design.cores) > 1
    assert res.ok, res.message


def test_csim_parallel_window(graphs, tmp_path):
    """Planned with the parallel window, the first conv (C = 3) reads its 3-lane input and
    computes simd = 3·j window elements per cycle; the design stays bit-exact."""
    g, gq = graphs
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even", parallel_window=True)
    conv1 = plan.node("conv1")
    assert conv1.simd > 3 and conv1.simd % 3 == 0, (conv1.pe, conv1.simd)  # the planner used the option
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message
    lay = next(lay for c in design.cores for lay in c.layers if lay.node == "conv1")
    assert lay.in_lanes == [3] and f"SIMD = {conv1.simd}" in lay.struct


def test_csim_parallel_window_depthwise(tmp_path):
    """A depthwise conv with simd = pe·j (j window positions per cycle) on a ds_block."""
    from tests import models

    p = models.save(models.ds_block(seed=0, c=8, hw=8), tmp_path / "m.onnx")
    g = canonicalize(load_model(p))
    gq = quantize(g)
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even", parallel_window=True)
    dw = next(n for n in plan.nodes if n.block == "dwconv")
    if dw.simd == dw.pe:  # the planner had no reason to: force j = 3 to test the kernel
        dw.simd = dw.pe * 3
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message
    lay = next(lay for c in design.cores for lay in c.layers if lay.node == dw.name)
    assert "dwconv2d" in lay.call and lay.in_lanes == [dw.pe] and f"SIMD = {dw.simd}" in lay.struct


def test_build_optimisation_follows_the_design_size(tmp_path):
    """`csim.opt_flag`: -O0 below `QUICK_WORK` lane-cycles (the vectors' frames times the sum
    of the plan's ``ii · pe · simd``), -O2 at or above it and when the folder has no readable
    plan; the level is one of the build's flags (so of its cache key)."""
    import json

    (tmp_path / "tb").mkdir()

    def folder(ii: int, pe: int, simd: int, frames: int):
        node = {"name": "n", "ii_cycles": ii, "pe": pe, "simd": simd}
        (tmp_path / "plan.json").write_text(json.dumps({"nodes": [node, dict(node, name="m")]}))
        (tmp_path / "tb" / "vectors.json").write_text(json.dumps({"frames": frames}))
        return tmp_path

    half = int(csim.QUICK_WORK) // 4  # two nodes, pe·simd = 2: one frame is QUICK_WORK
    assert csim.work(folder(half, 2, 1, 1)) == csim.QUICK_WORK
    assert csim.opt_flag(folder(half - 1, 2, 1, 1)) == csim.OPT_QUICK == "-O0"
    assert csim.opt_flag(folder(half, 2, 1, 1)) == csim.OPT_FULL == "-O2"
    assert csim.opt_flag(folder(half // 2, 2, 1, 2)) == csim.OPT_FULL  # the frames count
    (tmp_path / "plan.json").write_text("{")
    assert csim.opt_flag(tmp_path) == csim.OPT_FULL
    assert "-O0" in csim.flags(opt=csim.OPT_QUICK) and "-O2" not in csim.flags(opt=csim.OPT_QUICK)


def test_csim_parallel_window_pools(tmp_path):
    """A max pool 3×3 stride 2 and an average pool 2×2 at simd = pe·j (j window taps a
    cycle, pool2d.h ``SIMD``) stay bit-exact; the max pool's j = 3, the average pool's 4."""
    from tests.test_sim_design import _pool_net

    p = tmp_path / "m.onnx"
    onnx.save(_pool_net(), p)
    g = canonicalize(load_model(str(p)))
    gq = quantize(g)
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even", parallel_window=True)
    pools = [n for n in plan.nodes if n.op in ("MaxPool", "AveragePool")]
    for n, j in zip(pools, (3, 4), strict=True):  # force j taps to test the kernel where the planner had no reason to
        n.simd = n.pe * j
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message
    for n in pools:
        lay = next(lay for c in design.cores for lay in c.layers if lay.node == n.name)
        assert lay.in_lanes == [n.pe] and f"SIMD = {n.simd}" in lay.struct, (lay.in_lanes, lay.struct)
