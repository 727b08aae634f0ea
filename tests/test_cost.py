"""Cost model: memory mapping (BRAM, LUTRAM, URAM), block formulas of docs/hardware.md (parallel
window included), links, missing costs."""

from __future__ import annotations

import numpy as np
import pytest

from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph, Node, Tensor
from bbgrap_hls.model import (
    Geometry,
    block_cost,
    block_kind,
    buffer_cost,
    divisors,
    fifo_cost,
    foldings,
    in_lanes,
    link_cost,
    memory,
    uram_memory,
)
from bbgrap_hls.model.blocks import REQUANT_DSP
from bbgrap_hls.model.memory import block_memory


@pytest.mark.parametrize("width", [1, 8, 9, 18, 36, 64])
@pytest.mark.parametrize("depth", [1, 100, 511, 512, 2048, 5000])
def test_memory_lutram_below_1024_bits_else_fewest_ramb18(width, depth):
    m = memory(width, depth)
    if width * depth < 1024:
        # distributed RAM primitives of 8 LUT6 sites: RAM32M16 (32 x 14), RAM64M8 (64 x 7) side
        # by side; one word is a register
        sites = 0 if depth == 1 else 8 * (-(-width // 14) if depth <= 32 else -(-depth // 64) * -(-width // 7))
        assert m.bram18 == 0 and m.lut == sites
    else:
        shapes = [(16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36)]
        assert m.lut == 0
        assert m.bram18 == min(-(-depth // d) * -(-width // w) for d, w in shapes)
        assert m.bram18 * 18432 >= width * depth  # never less capacity than asked


def test_lutram_as_yosys_maps_it():
    """LUTs of shallow memories as Yosys 0.70 mapped them (bench/resources.py's flow, counting
    8 sites per RAM32M16 / RAM64M8): the vvu's accumulators (6 x 32, 4 x 128, 2 x 512 bits) and
    a 64-lane line buffer (40 x 512 bits)."""
    assert [memory(w, d).lut for w, d in ((32, 6), (128, 4), (512, 2), (512, 40))] == [24, 80, 296, 592]


def test_memory_known_shapes():
    assert memory(8, 2048).bram18 == 1      # 2K x 9
    assert memory(36, 512).bram18 == 1
    assert memory(72, 512).bram18 == 2
    assert memory(8, 127).bram18 == 0       # 1,016 bits: LUTRAM


CONV = Geometry(h=16, w=16, c=8, ho=16, wo=16, co=16, kh=3, kw=3, pads=(1, 1, 1, 1))


@pytest.mark.parametrize("pe", [1, 2, 4, 16])
@pytest.mark.parametrize("simd", [1, 2, 8])
def test_conv_ii_dsp_as_the_contract_says(pe, simd):
    g = CONV
    c = block_cost("conv", g, pe, simd)
    assert c.ii == max(18 * 18 * 8 // simd, 16 * 16 * (9 * 8 // simd) * (16 // pe))
    assert c.dsp == pe * simd + REQUANT_DSP * pe  # products + one requantiser per output lane
    assert c.uram == 0


@pytest.mark.parametrize("pe", [1, 5, 10])
@pytest.mark.parametrize("simd", [1, 4, 64])
def test_dense_ii(pe, simd):
    g = Geometry(h=1, w=1, c=64, ho=1, wo=1, co=10)
    c = block_cost("dense", g, pe, simd)
    assert c.ii == (64 // simd) * (10 // pe)
    assert c.dsp == pe * simd + REQUANT_DSP * pe  # products + one requantiser per output lane


@pytest.mark.parametrize("kind", ["maxpool", "avgpool", "dwconv"])
@pytest.mark.parametrize("p", [1, 2, 8])
def test_window_blocks_ii(kind, p):
    g = Geometry(h=8, w=8, c=8, ho=4, wo=4, co=8, kh=2, kw=2, sh=2, sw=2)
    assert block_cost(kind, g, p, p).ii == max(8 * 8 * 8 // p, 4 * 4 * 4 * 8 // p)


@pytest.mark.parametrize("kind", ["eltwise2", "lut", "affine", "gap", "shuffle"])
@pytest.mark.parametrize("p", [1, 4])
def test_streaming_blocks_ii(kind, p):
    g = Geometry(h=4, w=4, c=8, ho=4, wo=4, co=8, in_channels=(8, 8))
    assert block_cost(kind, g, p, p).ii == 4 * 4 * 8 // p


def test_more_parallelism_never_slower_and_costs_more_dsp():
    table = [(pe, simd, block_cost("conv", CONV, pe, simd)) for pe, simd in foldings("conv", CONV)]
    for pe, simd, c in table:
        for pe2, simd2, c2 in table:
            if pe2 >= pe and simd2 >= simd:
                assert c2.ii <= c.ii and c2.dsp >= c.dsp


def test_foldings_divide_channels():
    for pe, simd in foldings("conv", CONV):
        assert CONV.co % pe == 0 and CONV.c % simd == 0
    assert divisors(12) == [1, 2, 3, 4, 6, 12]
    assert all(pe == simd for pe, simd in foldings("maxpool", CONV))


def test_links_and_buffers():
    assert link_cost(8 * 1000, 512, 4).ii == 16
    assert link_cost(8 * 1000, 512, 4).latency == 4
    # a 512-bit link moves a 64-lane beat per cycle; a 48-bit beat on a 32-bit link takes 2
    assert link_cost(8 * 1024, 512, 4, beats=1024 // 64).ii == 16
    assert link_cost(48 * 10, 32, 4, beats=10).ii == 20 and link_cost(48 * 10, 32, 4).ii == 15
    b = buffer_cost(1000, 64.0, 100)  # double-buffered: the barrier is latency, not ii
    assert b.ii == 32 and b.transfer == 16 and b.latency == 132
    assert buffer_cost(1000, 64.0, 100, beats=500).ii == 500  # one beat per cycle
    assert fifo_cost(4, 2).bram18 == 0 and fifo_cost(64, 512).bram18 == 15


def test_op_without_cost_is_an_error_naming_the_node():
    g = Graph("g", ["x"], ["y"], {"x": Tensor("x", (1, 4)), "y": Tensor("y", (1, 4))},
              [Node("weird_one", "Frobnicate", ["x"], ["y"])])
    with pytest.raises(UnsupportedError, match="weird_one"):
        block_kind(g.nodes[0], g)


def test_depthwise_conv_is_its_own_block():
    w = np.zeros((8, 1, 3, 3), np.float32)
    g = Graph("g", ["x"], ["y"], {"x": Tensor("x", (1, 8, 6, 6)), "w": Tensor("w", w.shape, data=w),
                                  "y": Tensor("y", (1, 8, 6, 6))},
              [Node("dw", "Conv", ["x", "w"], ["y"], {"kernel": (3, 3), "strides": (1, 1),
                                                      "dilations": (1, 1), "pads": (1, 1, 1, 1),
                                                      "group": 8})])
    assert block_kind(g.nodes[0], g) == "dwconv"


@pytest.mark.parametrize("width", [8, 72, 73, 512])
@pytest.mark.parametrize("depth", [1, 4096, 4097, 20000])
def test_uram_is_one_4k_by_72_shape_side_by_side_and_cascaded(width, depth):
    m = uram_memory(width, depth)
    assert m.bram18 == 0 and m.lut == 0
    assert m.uram == -(-width // 72) * -(-depth // 4096)
    assert m.uram * 4096 * 72 >= width * depth


@pytest.mark.parametrize("kind", ["conv", "dwconv"])
@pytest.mark.parametrize("p", [1, 4, 8])
def test_weights_in_uram_pack_the_banks_and_free_their_bram(kind, p):
    g = Geometry(h=8, w=8, c=64, ho=8, wo=8, co=64, kh=3, kw=3, pads=(1, 1, 1, 1),
                 group=64 if kind == "dwconv" else 1)
    b, u = block_cost(kind, g, p, p), block_cost(kind, g, p, p, uram=True)
    depth = (9 * 64 // p) * (64 // p if kind == "conv" else 1)
    # the banks share the address: one memory of all banks side by side (as the RTL has it)
    weights_bram = block_memory(8 * p * (p if kind == "conv" else 1), depth).bram18
    assert b.uram == 0 and b.weights == ("bram" if weights_bram else "lut")
    if weights_bram:
        assert u.weights == "uram"
        width = p * p * 8 if kind == "conv" else p * 8
        one = -(-width // 72) * -(-depth // 4096)  # 72-bit columns, one port
        halves = -(-width // 144) * -(-2 * depth // 4096)  # half-words through both ports
        assert u.uram == min(one, halves)
        assert u.bram18 == b.bram18 - weights_bram
    else:  # LUTRAM-sized weights never move to URAM
        assert u == b
    assert (u.ii, u.dsp) == (b.ii, b.dsp)


def test_uram_only_moves_weights():
    """``uram`` moves a block's weight memory; a block without weights has nothing of its own
    to move (the planner places its input FIFOs), so its cost is unchanged."""
    assert block_cost("maxpool", CONV, 1, 1, uram=True) == block_cost("maxpool", CONV, 1, 1)
    on, off = block_cost("conv", CONV, 2, 4, uram=True), block_cost("conv", CONV, 2, 4)
    assert on.weights == "uram" and on.uram > 0 and on.bram18 < off.bram18


STEM = Geometry(h=32, w=32, c=3, ho=32, wo=32, co=16, kh=3, kw=3, pads=(1, 1, 1, 1))


def test_parallel_window_foldings_only_when_asked():
    plain = {s for _, s in foldings("conv", STEM)}
    wide = {s for _, s in foldings("conv", STEM, parallel_window=True)}
    assert plain == {1, 3} and wide == {1, 3, 9, 27}
    assert {s for _, s in foldings("dense", Geometry(h=1, w=1, c=6, ho=1, wo=1, co=4),
                                   parallel_window=True)} == {1, 2, 3, 6}


@pytest.mark.parametrize("pe", [1, 4, 16])
@pytest.mark.parametrize("simd", [1, 3, 9, 27])
def test_parallel_window_conv_ii_and_input_lanes(pe, simd):
    c = block_cost("conv", STEM, pe, simd)
    assert c.ii == max(34 * 34 * 3 // min(simd, 3), 32 * 32 * (27 // simd) * (16 // pe))
    assert c.dsp == pe * simd + REQUANT_DSP * pe  # products + one requantiser per output lane
    assert in_lanes("conv", STEM, pe, simd) == min(simd, 3)


@pytest.mark.parametrize("p", [1, 8])
@pytest.mark.parametrize("j", [1, 3, 9])
def test_parallel_window_depthwise(p, j):
    g = Geometry(h=8, w=8, c=8, ho=8, wo=8, co=8, kh=3, kw=3, pads=(1, 1, 1, 1), group=8)
    assert (p, p * j) in foldings("dwconv", g, parallel_window=True)
    c = block_cost("dwconv", g, p, p * j)
    assert c.ii == max(10 * 10 * 8 // p, 8 * 8 * 9 * 8 // (p * j))
    assert c.dsp == p * j + REQUANT_DSP * p and in_lanes("dwconv", g, p, p * j) == p


@pytest.mark.parametrize("pe, simd", [(3, 16), (1, 4), (120, 16)])
def test_dense_on_flattened_image_is_one_vector(pe, simd):
    """A Dense after Flatten (input 5x5x16, output 1x1x120) is one vector of MW = 400 in
    hw/rtl/mvu.sv: fold 0 reads all 400/simd beats, folds 1..NF-1 follow (its tail), and the
    first output needs the whole input (fill 1). The ii is the same as 25 vectors of 16."""
    flat = Geometry(h=5, w=5, c=16, ho=1, wo=1, co=120)
    row = Geometry(h=1, w=1, c=400, ho=1, wo=1, co=120)
    sf, nf = 400 // simd, 120 // pe
    for g in (flat, row):
        c = block_cost("dense", g, pe, simd)
        assert (c.ii, c.lead, c.tail, c.span, c.fill) == (sf * nf, sf - 1, (nf - 1) * sf, sf * nf - 1, 1.0)
        assert c.bram18 == block_cost("dense", row, pe, simd).bram18


CONV_DEPTH = 6  # cycles from a conv's last read to its output beat: swg register 1, mvu pipeline 5 (hw/rtl)


def _swg_beats(g: Geometry, pe: int, simd: int, arrive: np.ndarray, t0: int) -> tuple[list[int], list[int]]:
    """Beat-level reference of hw/rtl/swg.sv -> mvu.sv for one frame, written from the RTL's
    behaviour and sharing no code with the model: the writer writes one beat per cycle from
    ``t0``, padding included, an input beat no earlier than it arrives; the reader starts an
    output row the cycle after its rows are written and the previous row is read, and spends
    ``SF·NF`` cycles on each of its pixels (the mvu stalls it for folds 1..NF−1), the first
    output's last contribution being read ``SF`` cycles into the row. Returns each output
    row's first-output and last read cycles."""
    lanes = min(simd, g.c)
    t, k, done = t0, 0, []
    for yp in range(g.hp):
        for x in range(g.wp):
            for _ in range(g.c // lanes):
                if g.pads[0] <= yp < g.pads[0] + g.h and g.pads[1] <= x < g.pads[1] + g.w:
                    t = max(t, int(arrive[k]))
                    k += 1
                t += 1
        done.append(t - 1)
    return _swg_reader(g, pe, simd, done)


def _swg_reader(g: Geometry, pe: int, simd: int, done: list[int]) -> tuple[list[int], list[int]]:
    """The reader of `_swg_beats` and `_swg_pair_beats`, given the cycle by which each padded
    input row is written (``done``): each output row's first-output and last read cycles."""
    sf, nf = g.kh * g.kw * g.c // simd, g.co // pe
    first, last, end = [], [], -(10 ** 9)
    for oy in range(g.ho):
        start = max(end, done[oy * g.sh + g.kh - 1] + 1)
        end = start + g.wo * sf * nf
        first.append(start + sf - 1)
        last.append(end - 1)
    return first, last


WINDOW_GEOMS = [
    Geometry(14, 14, 6, 10, 10, 16, kh=5, kw=5),
    Geometry(28, 28, 6, 14, 14, 6, kh=2, kw=2, sh=2, sw=2),
    Geometry(8, 8, 4, 8, 8, 8, kh=3, kw=3, pads=(1, 1, 1, 1)),
    Geometry(9, 7, 4, 5, 4, 8, kh=3, kw=3, sh=2, sw=2, pads=(1, 1, 1, 1)),
]


@pytest.mark.parametrize("geom", WINDOW_GEOMS)
@pytest.mark.parametrize("arrival", ["full", "slow", "bursts", "late"])
@pytest.mark.parametrize("which", ["least", "middle", "most"])
def test_window_rows_match_a_beat_level_writer_and_reader(geom, arrival, which):
    """`window_rows_out` (closed form on row end times) equals the beat-level schedule of the
    window generator for any input arrival: full rate from cycle 0 with the top padding
    written before (the module tests' setting), slow beats, bursts, a late start."""
    from bbgrap_hls.model.timing import window_rows_out

    folds = foldings("conv", geom, parallel_window=True)  # ascending; the last reads a whole window a beat
    pe, simd = folds[{"least": 0, "middle": len(folds) // 2, "most": -1}[which]]
    c = block_cost("conv", geom, pe, simd)
    cg = geom.c // min(simd, geom.c)
    beats = geom.h * geom.w * cg
    rng = np.random.default_rng(list(WINDOW_GEOMS).index(geom))
    t0 = 0
    if arrival == "full":
        arrive, t0 = np.arange(beats), -(geom.pads[0] * geom.wp + geom.pads[1]) * cg
    elif arrival == "slow":
        arrive = 30 + np.cumsum(rng.integers(1, 4, beats))
    elif arrival == "bursts":
        arrive = 30 + np.cumsum(1 + 40 * (rng.random(beats) < 0.05))
    else:
        arrive = 30 + np.arange(beats)
    s, e = arrive.reshape(geom.h, -1)[:, 0], arrive.reshape(geom.h, -1)[:, -1]
    first, last = _swg_beats(geom, pe, simd, arrive, t0)
    fo, lo = window_rows_out((s, e), c.window, c.depth, t0=t0)
    assert c.depth == CONV_DEPTH
    assert list(lo) == [x + CONV_DEPTH for x in last]
    assert list(fo) == [x + CONV_DEPTH for x in first]
    if arrival == "full":  # the block's scalar schedule (`lead`, `span`: the module tests' latency)
        assert (c.lead, c.span) == (first[0], last[-1])


def test_stream_rows_pace_and_follow():
    """A pixel-by-pixel block: behind a fast producer it runs at its own row time; behind a
    slow one it ends ``tail`` after each row's last beat."""
    from bbgrap_hls.model.timing import input_rows, stream_rows_out

    fast = input_rows(4, 8)  # rows of 8 beats back to back
    s, e = stream_rows_out(fast, 4, 100, 3, 20, 5)  # 100 cycles per row
    assert list(e) == [99 + 100 * i + 5 for i in range(4)] and s[0] == 3 + 5 and s[1] == 99 + 1 + 3 + 5
    slow = (np.arange(4) * 1000, np.arange(4) * 1000 + 7)
    s, e = stream_rows_out(slow, 4, 100, 3, 20, 5)
    assert list(e) == [1000 * i + 99 + 5 for i in range(4)]
    s, e = stream_rows_out((slow[0], slow[0] + 900), 4, 100, 3, 20, 5)
    assert list(e) == [1000 * i + 900 + 20 + 5 for i in range(4)]




def _pair_geometry(h=6, w=8, c=4, co=12, k=3, s=1, pad=1) -> Geometry:
    hp, wp = h + 2 * pad, w + 2 * pad
    return Geometry(h=h, w=w, c=c, ho=(hp - k) // s + 1, wo=(wp - k) // s + 1, co=co, kh=k, kw=k, sh=s, sw=s,
                    pads=(pad,) * 4)


def test_conv_pairs_ii_and_resources():
    """Paired streams (conv.sv PX/PO): the writer takes Hp·ceil(Wp/2) cycles a frame, the
    reader Ho·Wo·sf·nf/M; the same DSPs and weight memories as M copies, two line buffers
    of two banks each with PO = 2."""
    g = _pair_geometry()
    one = block_cost("conv", g, 3, 4, mmv=4)
    px = block_cost("conv", g, 3, 4, mmv=4, px=2)
    po = block_cost("conv", g, 3, 4, mmv=4, px=2, po=2)
    assert one.ii == px.ii == po.ii == 6 * 8 * 9 * 4 // 4  # compute bound
    assert po.dsp == px.dsp == one.dsp
    assert po.bram18 >= px.bram18 and po.lut > px.lut > one.lut
    # writer bound: a parallel window over the whole kernel, one fold
    g2 = _pair_geometry(co=4, s=2)
    assert block_cost("conv", g2, 4, 36).ii == 8 * 10  # Hp·Wp
    assert block_cost("conv", g2, 4, 36, px=2).ii == 8 * 5  # Hp·ceil(Wp/2)


@pytest.mark.parametrize(("kw", "kind"), [
    ({"px": 3}, "conv"),
    ({"px": 2}, "dwconv"),
    ({"px": 2}, "dense"),
    ({"po": 2, "mmv": 2}, "conv"),        # po = 2 needs px = 2
    ({"px": 2, "po": 2}, "conv"),         # ... and an even mmv >= 2
    ({"px": 2, "po": 2, "mmv": 3}, "conv"),
    ({"px": 2, "po": 2, "mmv": 10}, "conv"),  # mmv/2 > Co/pe
])
def test_conv_pairs_illegal(kw, kind):
    g = _pair_geometry()
    with pytest.raises(ValueError):
        block_cost(kind, g, 3, 4, **kw)


def test_conv_pairs_illegal_shapes():
    with pytest.raises(ValueError):  # W odd
        block_cost("conv", _pair_geometry(w=7), 3, 4, px=2)
    with pytest.raises(ValueError):  # simd below C
        block_cost("conv", _pair_geometry(), 3, 2, px=2)
    with pytest.raises(ValueError):  # stride 2 across with two output pixels a beat
        block_cost("conv", _pair_geometry(s=2), 3, 4, mmv=2, px=2, po=2)


def _swg_pair_beats(g: Geometry, pe: int, simd: int, arrive, t0: int) -> tuple[list[int], list[int]]:
    """`_swg_beats` for a paired input (swg.sv ``PX = 2``), from the RTL's behaviour: the
    writer writes one padded column pair (2q, 2q+1) a cycle; the pair takes an input beat when
    its even column (``PL`` even) or its odd column (``PL`` odd: the even one is the previous
    beat's held high pixel) is an input pixel."""
    t, k, done = t0, 0, []
    pl = g.pads[1]
    for yp in range(g.hp):
        for q in range(-(-g.wp // 2)):
            x = 2 * q - pl + (pl % 2)  # the column whose pixel is the low half of a beat
            if g.pads[0] <= yp < g.pads[0] + g.h and 0 <= x < g.w:
                t = max(t, int(arrive[k]))
                k += 1
            t += 1
        done.append(t - 1)
    assert k == len(arrive)
    return _swg_reader(g, pe, simd, done)


PAIR_GEOMS = [
    Geometry(8, 8, 4, 8, 8, 8, kh=3, kw=3, pads=(1, 1, 1, 1)),
    Geometry(7, 6, 4, 4, 3, 8, kh=3, kw=3, sh=2, sw=2, pads=(1, 1, 1, 1)),
    Geometry(6, 10, 4, 4, 8, 4, kh=3, kw=3),
    Geometry(5, 8, 4, 4, 7, 4, kh=3, kw=3, pads=(1, 1, 0, 0)),
    Geometry(6, 6, 2, 6, 6, 4, kh=5, kw=5, pads=(2, 2, 2, 2)),
]


@pytest.mark.parametrize("geom", PAIR_GEOMS)
@pytest.mark.parametrize("arrival", ["full", "slow", "bursts"])
@pytest.mark.parametrize("which", ["least", "most"])
def test_pair_window_rows_match_a_beat_level_pair_writer(geom, arrival, which):
    """The paired input's schedule (`window_schedule` ``px = 2``: `window_rows_out`, and at
    full rate the block's ``lead`` and ``span``) equals a beat-level pair writer's."""
    from bbgrap_hls.model.timing import window_rows_out

    folds = [(pe, simd) for pe, simd in foldings("conv", geom, parallel_window=True) if simd % geom.c == 0]
    pe, simd = folds[0 if which == "least" else -1]
    c = block_cost("conv", geom, pe, simd, px=2)
    beats = geom.h * geom.w // 2
    rng = np.random.default_rng(PAIR_GEOMS.index(geom))
    t0 = 0
    if arrival == "full":
        arrive, t0 = np.arange(beats), -(geom.pads[0] * -(-geom.wp // 2) + geom.pads[1] // 2)
    elif arrival == "slow":
        arrive = 30 + np.cumsum(rng.integers(1, 4, beats))
    else:
        arrive = 30 + np.cumsum(1 + 40 * (rng.random(beats) < 0.05))
    s, e = arrive.reshape(geom.h, -1)[:, 0], arrive.reshape(geom.h, -1)[:, -1]
    first, last = _swg_pair_beats(geom, pe, simd, arrive, t0)
    fo, lo = window_rows_out((s, e), c.window, c.depth, t0=t0)
    assert list(lo) == [x + CONV_DEPTH for x in last]
    assert list(fo) == [x + CONV_DEPTH for x in first]
    if arrival == "full":
        assert (c.lead, c.span) == (first[0], last[-1])
        assert c.ii == max(geom.hp * -(-geom.wp // 2), geom.ho * geom.wo * (geom.k * geom.c // simd) * (geom.co // pe))
