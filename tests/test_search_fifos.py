"""Search: the FIFOs between blocks: a reconvergent path's FIFO from the latency difference
(`search.fifos`), the depth formulas, a matrix-vector unit's stall depth, and the FIFOs as
part of a plan's fit."""

from __future__ import annotations

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.kinds import in_lanes, node_geometry
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import make_plan
from bbgrap_hls.search.fifos import input_depths, pad_run, stall_depth
from tests import models
from tests.test_search import canonical, check_plan, two_core_board


def test_residual_fifo_is_sized_from_the_latency_difference():
    plan = make_plan(canonical("residual_block"), load_board("zcu102"), baselines=False)
    add = [n for n in plan.nodes if n.op == "Add"][0]
    chans = [ch for ch in plan.channels if ch.dst == add.name]
    assert len(chans) == 2 and min(ch.depth for ch in chans) == 2
    skip = max(chans, key=lambda ch: ch.depth)
    # The long path (3x3/s2 conv on 16x16, then 3x3 conv on 8x8, both padded) needs
    # (16 + 2)/256 + (8 + 2)/64 of a frame before its first output, the 1x1/s2 shortcut
    # 1/256: the shortcut must hold that difference (deadlock freedom) and, for steady
    # state, at most a few dozen pipeline cycles more at the design rate plus the padding
    # the two convs' window generators write between frames (fifos.py, ``pad_run``).
    graph = canonical("residual_block")
    runs = sum(pad_run(node_geometry(n, graph), in_lanes("conv", node_geometry(n, graph), p.pe, p.simd))
               for n in graph.nodes for p in plan.nodes if p.name == n.name and p.op == "Conv")
    assert runs > 0
    beats = skip.bits_per_frame // 8 // skip.width_lanes
    structural = -(-57 * beats // 256)
    assert structural + 2 + runs * beats // plan.ii_cycles <= skip.depth
    assert skip.depth <= structural + 2 + -(-(64 + runs) * beats // plan.ii_cycles)


def test_fifo_depth_formula():
    assert input_depths([100, 100], [0.25, 0.25]) == [2, 2]
    assert input_depths([100, 40], [0.0, 0.5]) == [52, 2]
    assert input_depths([100, 40], [0.0, 1.5]) == [152, 2]   # squeeze-excite: more than a frame
    # no cap: a lag of three frames holds three (a two-frame cap slowed the twins of
    # MobileNetV3 and a three-head YOLO, tests/test_families.py)
    assert input_depths([100, 40], [0.0, 3.0]) == [302, 2]
    assert input_depths([64], [0.0]) == [2]


def test_broadcast_and_narrowing_depths():
    from bbgrap_hls.model.geometry import Geometry
    from bbgrap_hls.search.fifos import broadcast_depth, narrowing_depth

    assert broadcast_depth(96, 96 * 64) == 98   # an SE gate: the next frame's whole vector
    assert broadcast_depth(4096, 4096) == 2     # not a broadcast: an equal operand
    g = Geometry(h=8, w=8, c=16, ho=8, wo=8, co=16, kh=3, kw=3, sh=1, sw=1, pads=(1, 1, 1, 1))
    assert narrowing_depth(g, True, 8, 1) == 8 * 16 // 8 + 2   # one output row of the producer
    assert narrowing_depth(g, True, 8, 8) == 2                 # no narrowing
    assert narrowing_depth(g, False, 8, 1) == 2                # a pixel-by-pixel producer


# A matrix-vector unit fed straight from its FIFO stalls its input during neuron folds
# 1..NF-1 (hw/rtl/mvu.sv): the FIFO holds one vector in the producer's lanes (fifos.py).
DENSE_FLAT = Geometry(h=5, w=5, c=16, ho=1, wo=1, co=120)      # LeNet's 400 -> 120 after Flatten
DENSE_ROWS = Geometry(h=3, w=1, c=84, ho=3, wo=1, co=10)       # three vectors of 84
POINTWISE = Geometry(h=4, w=4, c=8, ho=4, wo=4, co=16)         # 1x1 conv: vector of C
WINDOW = Geometry(h=6, w=6, c=8, ho=6, wo=6, co=16, kh=3, kw=3, pads=(1, 1, 1, 1))


@pytest.mark.parametrize("kind, g, pe, lanes, want", [
    ("dense", DENSE_FLAT, 3, 2, 400 // 2 + 2),
    ("dense", DENSE_FLAT, 3, 3, -(-400 // 3) + 2),
    ("dense", DENSE_FLAT, 120, 2, 2),                        # NF = 1: no stall
    ("dense", DENSE_ROWS, 1, 1, 84 + 2),
    ("conv", POINTWISE, 4, 8, 1 + 2),
    ("conv", WINDOW, 4, 8, 2),                               # the swg's row buffer decouples
    ("maxpool", WINDOW, 4, 8, 2),
])
def test_stall_depth_holds_one_vector(kind, g, pe, lanes, want):
    assert stall_depth(kind, g, pe, lanes) == want


def test_plan_dense_inputs_hold_a_vector():
    """LeNet: each Dense with NF > 1 gets an input FIFO of a whole vector; it measured +5.5%
    (old plan) and +68% (current plan) ii in the RTL twin with depth 2."""
    plan = make_plan(canonical("lenet"), load_board("u250"), strategy="even", baselines=False)
    nodes = {n.name: n for n in plan.nodes}
    out_elems = {ch.src: ch.bits_per_frame // 8 for ch in plan.channels}
    dense = [ch for ch in plan.channels if ch.dst in nodes and nodes[ch.dst].block == "dense"]
    assert len(dense) == 3
    for ch in dense:
        n = nodes[ch.dst]
        stalls = -(-out_elems[n.name] // n.pe) > 1  # NF > 1 (1x1 output: Co elements)
        vector_beats = -(-ch.bits_per_frame // 8 // ch.width_lanes)
        assert ch.depth == (vector_beats + 2 if stalls else 2), (ch.tensor, ch.depth, n.pe)


def dense_block(layers=6, c=32, growth=16, hw=16):
    """A DenseNet block: every layer reads the concat of all earlier features."""
    b = models.Builder(0)
    feats = [b.input("x", (1, c, hw, hw))]
    for _ in range(layers):
        y = b.concat(feats) if len(feats) > 1 else feats[0]
        feats.append(b.conv(b.act(b.conv(y, 4 * growth, 1)), growth, 3))
    return models._rename_output(b, b.concat(feats), "dense_block")


def test_reconvergent_fifos_are_part_of_the_fit():
    import tempfile

    g = canonicalize(load_model(models.save(dense_block(8, 16, 8, 32), f"{tempfile.mkdtemp()}/d.onnx")))
    # DSP-bound foldings (no LUT multipliers: with 10^6 LUTs they would widen every block)
    one = make_plan(g, two_core_board(dsp=300, bram18=4000, lut=10**6), strategy="single",
                    baselines=False, lut_macs=False)
    fifo = sum(ch.bram18 for ch in one.channels)
    total = sum(c.bram18 for c in one.cores)
    assert 4 * fifo > total  # the concat FIFOs are a large share of the BRAM
    # Two cores with 3/5 of that BRAM each: a split that ignored the FIFOs would overflow.
    tight = two_core_board(dsp=300, bram18=-(-3 * total // 5), lut=10**6)
    plan = make_plan(g, tight, strategy="search", baselines=False, time_limit=2.0, lut_macs=False)
    check_plan(plan)
    assert all(c.nodes for c in plan.cores)
