"""Pixel copies (a conv's ``mmv = M``): the kernel bb::conv2d_mmv and its generated code.

Kernel cases are conv2d's cases of tests/test_hls_kernels.py run through conv2d_mmv
(P::M = M, one CO-lane beat per output pixel), compiled into one g++ -Werror binary and
compared bit for bit with the numpy reference; the end-to-end cases set ``mmv`` on a
planned conv by hand and run the generated design's C simulation.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.codegen.layers import make_layer
from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.search import make_plan
from tests.test_csim import _csim, graphs  # noqa: F401  (graphs: module fixture)
from tests.test_hls_kernels import RNG_SEED, _conv_case, assert_bit_exact, run_cases

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]


def _mmv_case(name, rng, *args, m, **kw):
    """conv2d case ``args`` (see `_conv_case`) with ``m`` MVU copies (``pack=True``: DSP packing)."""
    pack = kw.pop("pack", False)
    case = _conv_case(name, rng, *args, **kw)
    case.decls = case.decls.replace("; };", f", M = {m}" + (", PACK = 2" if pack else "") + "; };")
    case.body = case.body.replace("bb::conv2d<P>", "bb::conv2d_mmv<P>")
    case.out_lanes = args[3]  # CO: one whole pixel per beat
    return case


def mmv_cases():
    rng = np.random.default_rng(RNG_SEED + 7)
    p1 = (1, 1, 1, 1)
    return [
        # (h, w, c, co, k, s, d, pads, simd, pe); WO not a multiple of M: a partial last group
        _mmv_case("mmv2_s1", rng, 6, 5, 4, 12, (3, 3), (1, 1), (1, 1), p1, 2, 2, m=2),
        _mmv_case("mmv3_s1", rng, 6, 5, 4, 12, (3, 3), (1, 1), (1, 1), p1, 2, 2, m=3),
        _mmv_case("mmv2_s2", rng, 7, 7, 4, 8, (3, 3), (2, 2), (1, 1), p1, 4, 2, m=2),
        _mmv_case("mmv3_s2", rng, 7, 9, 4, 8, (3, 3), (2, 2), (1, 1), p1, 4, 2, m=3),
        _mmv_case("mmv3_nf3", rng, 5, 6, 8, 6, (3, 3), (1, 1), (1, 1), p1, 4, 2, m=3),  # M = NF
        _mmv_case("mmv2_simd_c", rng, 5, 5, 4, 8, (3, 3), (1, 1), (1, 1), p1, 4, 4, m=2),  # SIMD = C
        # parallel window: SIMD = C·j
        _mmv_case("mmv2_pw_kw", rng, 6, 5, 3, 8, (3, 3), (1, 1), (1, 1), p1, 9, 2, m=2),
        _mmv_case("mmv3_pw_k", rng, 7, 8, 3, 6, (3, 3), (2, 2), (1, 1), p1, 27, 2, m=3),
        _mmv_case("mmv2_dilated", rng, 8, 7, 2, 4, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 1, 1, m=2),
        _mmv_case("mmv3_banks", rng, 6, 5, 4, 12, (3, 3), (1, 1), (1, 1), p1, 2, 4, m=3, banks=True),
        # DSP packing (P::PACK = 2): the copies' lane pairs share one product per input element
        _mmv_case("mmv3_pack", np.random.default_rng(RNG_SEED + 13), 6, 5, 4, 12, (3, 3), (1, 1), (1, 1), p1, 2, 4,
                  m=3, pack=True),
    ]


@pytest.fixture(scope="module")
def mmv_outputs(tmp_path_factory):
    return run_cases(mmv_cases(), tmp_path_factory.mktemp("mmv"), "mmv")


@pytest.mark.parametrize("name", [c.name for c in mmv_cases()])
def test_conv2d_mmv_bit_exact(mmv_outputs, name):
    assert_bit_exact(name, *mmv_outputs[name])


def test_layer_mmv_struct_and_errors(graphs):  # noqa: F811
    """M > 1 adds M to the struct, calls conv2d_mmv and streams CO lanes; M = 1 is today's
    layer byte for byte; mmv on other ops, mmv > NF or < 1 are refused."""
    _, gq = graphs
    conv2 = next(n for n in gq.nodes if n.name == "conv2")
    base = make_layer(gq, conv2, "layer1", 2, 8)
    one = make_layer(gq, conv2, "layer1", 2, 8, mmv=1)
    assert (one.struct, one.call, one.arrays, one.out_lanes, one.mmv) == \
        (base.struct, base.call, base.arrays, 2, 1)
    assert "M =" not in one.struct and "bb::conv2d<" in one.call
    lay = make_layer(gq, conv2, "layer1", 2, 8, mmv=3)
    assert lay.struct.rstrip().endswith("M = 3;\n};") and "bb::conv2d_mmv<layer1_P>" in lay.call
    assert lay.out_lanes == 8 and lay.mmv == 3 and lay.in_lanes == base.in_lanes
    part = make_layer(gq, conv2, "layer1", 1, 8, (2, 6), mmv=4)  # a split part: CO = 4 lanes
    assert part.out_lanes == 4 and "CO = 4" in part.struct
    with pytest.raises(UnsupportedError, match="exceeds NF"):
        make_layer(gq, conv2, "layer1", 4, 8, mmv=3)
    with pytest.raises(UnsupportedError, match="mmv 0"):
        make_layer(gq, conv2, "layer1", 2, 8, mmv=0)
    fc = next(n for n in gq.nodes if n.op == "Dense")
    with pytest.raises(UnsupportedError, match="Conv only"):
        make_layer(gq, fc, "layer9", 2, 2, mmv=2)


def test_layer_mmv_depthwise_refused(tmp_path):
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize
    from tests import models

    gq = quantize(canonicalize(load_model(models.save(models.ds_block(seed=0, c=8, hw=8), tmp_path / "m.onnx"))))
    dw = next(n for n in gq.nodes if n.op == "Conv" and n.attrs["group"] > 1)
    with pytest.raises(UnsupportedError, match="depthwise"):
        make_layer(gq, dw, "layer0", 2, 2, mmv=2)


@pytest.mark.parametrize("board_name, mmv", [("u250", {"conv1": 4, "conv2": 3}), ("vu9p-quad", {"conv2": 2})])
def test_csim_mmv_plan(graphs, tmp_path, board_name, mmv):  # noqa: F811
    """A planned design with ``mmv`` set by hand on convs (conv1: parallel window, M = NF)
    stays bit-exact; the conv's output stream carries CO lanes."""
    g, gq = graphs
    board = load_board(board_name)
    plan = copy.deepcopy(make_plan(g, board, strategy="even"))
    for name, m in mmv.items():
        n = plan.node(name)
        assert 8 // n.pe >= m, (name, n.pe)  # NF >= M
        n.mmv = m
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message
    for name, m in mmv.items():
        lay = next(lay for c in design.cores for lay in c.layers if lay.node == name)
        assert lay.mmv == m and lay.out_lanes == 8 and "conv2d_mmv" in lay.call


@pytest.mark.slow
def test_csim_mmv_split_parts(graphs, tmp_path):  # noqa: F811
    """conv2 split over two cores, each part with its own copies (CO = 4 lanes per part);
    the gather joins the parts' whole-pixel streams."""
    from tests.test_csim import conv2_split_plan

    g, gq = graphs
    board = load_board("u250")
    plan = conv2_split_plan(g, board)
    parts = plan.node("conv2").split
    parts[0].mmv, parts[1].mmv = 2, 1  # part 0: pe 2, CO 4 (NF 2); part 1 stays at pe lanes
    res, design = _csim(tmp_path, gq, plan, board)
    assert res.ok, res.message
    lays = sorted((lay for c in design.cores for lay in c.layers if lay.node == "conv2"), key=lambda lay: lay.ident)
    assert [(lay.mmv, lay.out_lanes) for lay in lays] == [(2, 4), (1, 4)]
