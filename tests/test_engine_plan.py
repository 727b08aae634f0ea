"""The engine's plan (`bbgrap_hls.model.engine_plan.plan_engine`, shapes only, on the canonical
graph) against the program of the quantised graph (`engine_program.build`) timed by the
sequencer's exact model (`engine_top.frame_cycles`): the same steps, the same cycles a step,
the same frame, with whole layers and with an input buffer so small that convs run in row
bands (``build(..., in_buffer=plan.in_buffer)``: strided maps, a step a band). Also the sizing: a core too small is refused naming the resource, a bigger
core gets a bigger conv unit. No simulation: about a second."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.codegen import engine_files as ef
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model.engine_plan import memory_timing, plan_engine, plan_engine_at
from bbgrap_hls.model.engine_top import TopParams, frame_cycles
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import quantize
from tests.families import Net
from tests.models import _rename_output, save
from tests.test_engine_program import BANDED, CONFIGS, NETS, band_counts, smallest_buffer


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict:
    """Each network: (canonical graph, quantised graph)."""
    d = tmp_path_factory.mktemp("nets")
    out = {}
    for name, make in NETS.items():
        b = Net(seed=3)
        g = canonicalize(load_model(save(_rename_output(b, make(b), name), d / f"{name}.onnx")))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no calibration samples given
            out[name] = (g, quantize(g, seed=0))
    return out


def assert_plan_is_program(plan, program, bd, taps: int) -> None:
    """The plan's steps are the program's (a plan step's bands: the program's steps of that
    node, in a row), each with the sequencer's and the unit's cycles of `frame_cycles`, and
    the same frame."""
    kb = max(2, 1 << (ef.unit_sizes(program)["KB"] - 1).bit_length())
    lat, per = memory_timing(bd, 0, program.beat)
    assert (plan.latency, plan.period) == (lat, per)
    t = frame_cycles(program, TopParams(lat, per, kb=kb, taps=taps))
    prev = [0] + t.ends[:-1]
    i = 0
    for st in plan.steps:
        band = range(i, i + st.bands)
        assert all((program.steps[k].nodes, program.steps[k].unit) == (st.nodes, st.unit) for k in band)
        assert st.overhead == sum(t.starts[k] - prev[k] for k in band)
        assert st.cycles == sum(t.ends[k] - t.starts[k] for k in band)
        i += st.bands
    assert i == len(program.steps)
    assert plan.cycles == t.cycles
    assert plan.sequencer == sum(s - p for s, p in zip(t.starts, prev, strict=True))


@pytest.mark.parametrize("taps", [1, 3])
@pytest.mark.parametrize("board", ["zcu102", "u280"])
@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("net", NETS)
def test_plan_equals_program_frame(graphs, net, cfg, board, taps):
    pe, simd, beat = CONFIGS[cfg]
    g, gq = graphs[net]
    bd = load_board(board)
    plan = plan_engine(g, bd, pe=pe, simd=simd, taps=taps, beat=beat)
    assert (plan.pe, plan.simd, plan.taps, plan.beat) == (pe, simd, taps, beat)
    assert all(st.bands == 1 and st.exact for st in plan.steps)  # small maps: whole layers, exact
    program = ep.build(gq, pe, simd, beat)
    assert [st.nodes for st in plan.steps] == [st.nodes for st in program.steps]
    assert ef.step_rows(ep.build(gq, pe, simd, beat, in_buffer=plan.in_buffer)) == ef.step_rows(program)
    assert_plan_is_program(plan, program, bd, taps)


@pytest.fixture(scope="module")
def buffers(graphs) -> dict:
    """`smallest_buffer` of each banded case."""
    return {(net, cfg): smallest_buffer(graphs[net][1], *CONFIGS[cfg]) for net, cfg in BANDED}


@pytest.mark.parametrize("taps", [1, 3])
@pytest.mark.parametrize("board", ["zcu102", "u280"])
@pytest.mark.parametrize("net, cfg", BANDED)
def test_banded_plan_equals_program_frame(graphs, buffers, net, cfg, board, taps):
    """The plan at an input buffer its largest convs do not fit (fixed) against the program
    built for that buffer: the same bands, the same cycles a band, the same frame."""
    pe, simd, beat = CONFIGS[cfg]
    g, gq = graphs[net]
    bd = load_board(board)
    plan = plan_engine_at(g, bd, pe=pe, simd=simd, taps=taps, beat=beat, in_buffer=buffers[net, cfg])
    assert plan.in_buffer == buffers[net, cfg] and any(st.bands > 1 for st in plan.steps)
    assert all(st.exact for st in plan.steps)
    program = ep.build(gq, pe, simd, beat, in_buffer=plan.in_buffer)
    assert {st.nodes[0]: st.bands for st in plan.steps if st.unit == "conv"} == band_counts(program)
    assert_plan_is_program(plan, program, bd, taps)


@pytest.mark.parametrize("banded", [False, True])
@pytest.mark.parametrize("board", ["zcu102", "kv260"])
@pytest.mark.parametrize("net", NETS)
def test_batched_plan_equals_program_frame(graphs, buffers, net, board, banded):
    """A plan of 3 frames a start (docs/engine.md, "Batched frames") against the program built
    so: the same steps (each conv once, its frames in its descriptor; the other steps once a
    frame), the same cycles a step, the same start; ``fps`` counts 3 frames a start.
    ``banded``: 3 times the one-frame smallest buffer: the same bands as the one-frame plan,
    each conv's tiles read as often a start as that plan reads them a frame."""
    pe, simd, beat = CONFIGS["pe4_simd4_b16"]
    g, gq = graphs[net]
    bd = load_board(board)
    buf = buffers.get((net, "pe4_simd4_b16")) if banded else None
    if banded and buf is None:
        pytest.skip("no banded case")
    kw = dict(pe=pe, simd=simd, taps=1, beat=beat, in_buffer=None if buf is None else 3 * buf)
    plan = plan_engine_at(g, bd, frames=3, **kw)
    one = plan_engine_at(g, bd, in_buffer=buf, **{k: v for k, v in kw.items() if k != "in_buffer"})
    assert plan.frames == 3 and plan.in_buffer >= 3 * one.in_buffer - 3 * beat * 64
    program = ep.build(gq, pe, simd, beat, in_buffer=plan.in_buffer, frames=3)
    assert program.frames == 3
    assert_plan_is_program(plan, program, bd, 1)
    assert plan.fps_core == pytest.approx(3 * bd.clock_mhz * 1e6 / plan.cycles)
    if banded:  # the convs whole in the one-frame plan batched: their tiles read once for the three frames
        for st, st1 in zip([st for st in plan.steps if st.unit == "conv"], [st for st in one.steps if st.unit == "conv"],
                           strict=True):
            if st1.bands == 1:
                assert (st.bands, st.w_read) == (1, st1.w_read), st.nodes
            else:  # a frame at a time, in at most as many bands
                assert st.bands % 3 == 0 and st.bands // 3 <= st1.bands and st.w_read <= 3 * st1.w_read


def test_best_engine_batches_where_it_pays(graphs):
    """`best_engine`: with ``max_batch`` 1 one frame a start; the batched plan it keeps is at
    least `arch.BATCH_GAIN` faster than the one-frame plan and under `arch.batched_ceiling`
    of it (the bound that skips planning batches)."""
    from bbgrap_hls.search import arch

    g = graphs["resnet_like"][0]
    bd = load_board("pynq-z2")
    one = arch.best_engine(g, bd, max_batch=1)
    assert one.frames == 1
    best = arch.best_engine(g, bd)
    assert best.frames in (1, *arch.BATCHES)
    for n in arch.BATCHES:
        alt = plan_engine(g, bd, frames=n)
        assert alt.fps <= arch.batched_ceiling(one, bd) * 1.000001, n
    if best.frames > 1:
        assert best.fps > arch.BATCH_GAIN * one.fps
    else:
        assert all(plan_engine(g, bd, frames=n).fps <= arch.BATCH_GAIN * one.fps for n in arch.BATCHES)


def test_buffer_below_the_smallest_band_is_infeasible(graphs):
    g, _ = graphs["resnet_like"]
    with pytest.raises(InfeasibleError, match="input buffer 768 B"):
        plan_engine_at(g, load_board("zcu102"), pe=8, simd=4, beat=64, in_buffer=768)


def test_canonical_and_int8_graph_plan_alike(graphs):
    g, gq = graphs["se_like"]  # tables fused into MULV, MUL and ADD only in the int8 lowering
    bd = load_board("zcu102")
    a, b = plan_engine(g, bd, pe=8, simd=4), plan_engine(gq, bd, pe=8, simd=4)
    assert [s.nodes for s in a.steps] == [s.nodes for s in b.steps]
    assert a.cycles == b.cycles
    assert sum("lut" in s.mode or len(s.nodes) > 1 for s in a.steps) >= 3


def _shrunk(board, **limits):
    core = dataclasses.replace(board.cores[0], **limits)
    return dataclasses.replace(board, cores=(core,) + board.cores[1:])


def test_infeasible_names_the_resource(graphs):
    g, _ = graphs["resnet_like"]
    bd = _shrunk(load_board("zcu102"), dsp=60)
    with pytest.raises(InfeasibleError, match=r"dsp .* > 48 \(short"):
        plan_engine(g, bd)
    # a kv260 with 44,000 LUTs at the cap: at 64-byte beats the element-wise unit's 64 lanes
    # (its tables in LUTRAM) do not fit beside the smallest conv unit (47,974 LUTs in all; 56,000
    # at the cap held them once each lane's requantiser was 331 LUTs smaller, stop 58); with its
    # lanes searched (LANES below the beat) they do
    small_kv = _shrunk(load_board("kv260"), lut=55_000)
    with pytest.raises(InfeasibleError, match=r"kv260: lut [\d,]+ > 44,000"):
        plan_engine(g, small_kv, beat=64, lanes=64)
    assert plan_engine(g, small_kv, beat=64).lanes < 64
    assert plan_engine(g, small_kv, beat=16).pe >= 4  # 16 lanes fit
    # without a beat the narrower ones are tried, and fewer lanes: that kv260 gets an engine
    # whose element-wise unit computes fewer than 64 bytes a cycle
    kv = plan_engine(g, small_kv)
    assert kv.lanes < 64 and kv.lanes <= kv.beat


def test_bigger_board_bigger_unit(graphs):
    g, _ = graphs["resnet_like"]
    kv260 = _shrunk(load_board("kv260"), lut=70_000)  # LUT-bound below zcu102's DSP-bound size
    small = plan_engine(g, kv260, beat=32)
    big = plan_engine(g, load_board("zcu102"), beat=32)
    assert big.pe * big.simd > small.pe * small.simd
    for p, bd in ((small, kv260), (big, load_board("zcu102"))):
        core = bd.cores[0]
        assert all(p.resources["total"][k] <= core.limit(k) for k in ("dsp", "bram18", "uram", "lut"))
    # the next size up does not fit kv260 (at the same element-wise lanes): the search stopped
    # at the largest that does
    up = (small.pe, 2 * small.simd) if small.simd < small.pe else (2 * small.pe, small.simd)
    with pytest.raises(InfeasibleError):
        plan_engine(g, kv260, pe=up[0], simd=up[1], taps=1, beat=32, lanes=small.lanes)


def test_small_buffer_bands_and_to_dict(graphs):
    g, _ = graphs["resnet_like"]
    bd = load_board("zcu102")
    whole = plan_engine(g, bd, pe=4, simd=4, beat=16)
    d = whole.to_dict()
    assert json.loads(json.dumps(d))["cycles"] == whole.cycles
    assert set(d["resources"]) == {"conv", "window", "eltwise", "sequencer", "total"}
    assert d["steps"][0]["unit"] == "conv" and d["bottleneck"]
    assert whole.bytes["feature_read"] > 0 and whole.bandwidth == pytest.approx(sum(whole.bytes.values()) / whole.cycles)


def test_small_core_runs_big_maps_in_bands(tmp_path):
    b = Net(seed=1)
    x = b.act(b.conv(b.input("x", (1, 8, 64, 64)), 16, 3))
    g = canonicalize(load_model(save(_rename_output(b, b.act(b.conv(x, 16, 3)), "two"), tmp_path / "two.onnx")))
    bd = load_board("zcu102")
    whole = plan_engine(g, bd, pe=16, simd=16)
    assert all(s.bands == 1 for s in whole.steps)
    # 10 BRAM18 fewer than the whole maps' engine (the 64 KB input buffer is 29): they band
    small = plan_engine(g, _shrunk(bd, bram18=int((whole.resources["total"]["bram18"] - 10) / 0.8)), pe=16, simd=16)
    assert small.in_buffer < whole.in_buffer and all(s.bands > 1 for s in small.steps)
    assert small.resources["total"]["bram18"] <= small.limits["bram18"]
    assert [s.cycles > w.cycles for s, w in zip(small.steps, whole.steps, strict=True)] == [True, True]
    assert small.steps[0].w_read == small.steps[0].bands * whole.steps[0].w_read  # tiles read once a band
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no calibration samples given
        gq = quantize(g, seed=0)
    program = ep.build(gq, 16, 16, small.beat, in_buffer=small.in_buffer)  # the plan is the program's
    assert all(s.exact for s in small.steps)
    assert_plan_is_program(small, program, bd, small.taps)


def test_packing_fits_a_bigger_conv_unit(graphs):
    """DSP packing (the default) on a core short of DSPs (320 at the cap): a bigger ``PE x
    SIMD`` than unpacked fits; at the unpacked plan's size, packed, the conv steps' cycles are
    the same (the RTL's cycles do not change) on fewer DSPs."""
    g, _ = graphs["resnet_like"]
    bd = _shrunk(load_board("zcu102"), dsp=400)
    plain, packed = plan_engine(g, bd, beat=32, pack=False), plan_engine(g, bd, beat=32)
    assert packed.pack and not plain.pack
    assert packed.pe * packed.simd > plain.pe * plain.simd
    assert packed.resources["total"]["dsp"] <= packed.limits["dsp"]
    same = plan_engine(g, bd, pe=plain.pe, simd=plain.simd, beat=32)
    assert same.by_unit["conv"] == plain.by_unit["conv"]
    assert same.resources["conv"]["dsp"] < plain.resources["conv"]["dsp"]


def test_window_maps_narrower_than_a_beat_refused(tmp_path):
    """The RTL window unit reads one row start a beat: the search skips a ``G`` whose
    ``beat/G`` pixels a beat are more than a pooled map's width, and a caller's fixed size is
    planned with a note."""
    b = Net(seed=2)
    x = b.maxpool(b.act(b.conv(b.input("x", (1, 8, 12, 12)), 16, 3, 2, pad=1)), 2, 2)  # a 6-wide map into a pool
    x = b.maxpool(x, 3, 1, 1)
    g = canonicalize(load_model(save(_rename_output(b, b.gemm(b.flatten(b.gap(x)), 4), "narrow"),
                                     tmp_path / "narrow.onnx")))
    bd = load_board("zcu102")
    fixed = plan_engine_at(g, bd, pe=8, simd=8, beat=64)
    assert any("at least 8 pixels wide" in n and "RTL twin refuses" in n for n in fixed.notes)
    for plan in (plan_engine_at(g, bd, beat=64), plan_engine(g, bd)):  # maps 6, then 3 wide
        assert plan.beat // plan.pe <= 3 and not any("RTL" in n for n in plan.notes)
