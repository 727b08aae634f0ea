"""Off-chip weights: conv/dense weights in the core's board memory, bandwidth as a planned
resource (docs/cost-model.md, "Off-chip weights"; issue 12).

What is checked here is the planner's accounting, against numbers computed in the test from
the graph itself (weight counts, the board file's bandwidth); the off-chip block's cycles
are checked against the RTL module in tests/test_rtl_offchip.py, the generated HLS in
tests/test_offchip_csim.py and whole designs in the RTL twin in tests/test_sim_offchip.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from bbgrap_hls.board import load_board, parse_board
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.ir import Graph
from bbgrap_hls.model import block_cost, node_geometry
from bbgrap_hls.model.blocks import LUT_MUL, LUT_PER_MAC
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import make_plan
from tests import models

BW_CYCLES = 1024


def canonical(name: str, **kw) -> Graph:
    d = tempfile.mkdtemp()
    return canonicalize(load_model(models.save(getattr(models, name)(**kw), f"{d}/{name}.onnx")))


@pytest.fixture(scope="module")
def resnet18() -> Graph:
    return canonical("resnet18")


@pytest.fixture(scope="module")
def lenet() -> Graph:
    return canonical("lenet")


def _weight_bytes(graph: Graph, name: str) -> int:
    """int8 weight bytes of a conv/dense node as stored (a grouped conv block-diagonally):
    counted from the initializer, not from the cost model."""
    node = next(n for n in graph.nodes if n.name == name)
    w = graph.const(node.inputs[1])
    group = int(node.attrs.get("group", 1)) if node.op == "Conv" else 1
    return int(np.prod(w.shape)) * group


SMALL_LUT = 10000  # LUTs of a small core that cannot hold LeNet's weights in LUTs too
SMALL_BRAM = 30  # its BRAM18: with 40, the joint folding choice (search/ilp.py) fits every weight on chip


def small_board(gbps: float, bram18: int = 40, capacity_gb: float = 4, lut: int = 20000) -> object:
    """One 200 MHz core with little BRAM (and few LUTs, which can hold weights too) and a DDR
    memory behind one 128-bit port."""
    return parse_board(f"""
name: smallmem
source: test
clock_mhz: 200
cores:
  - {{id: 0, device: x, dsp: 600, bram18: {bram18}, uram: 0, lut: {lut}, cap: 0.8}}
memories:
  - {{name: ddr, kind: ddr4, bandwidth_gbps: {gbps}, capacity_gb: {capacity_gb:.6f}, cores: [0],
     latency_cycles: 50, ports: 1, port_width_bits: 128}}
host: {{kind: axi-hp, bandwidth_gbps: 3.2, latency_us: 1.0}}
""", "smallmem.yaml")


def test_lenet_fits_a_small_core_only_with_offchip_weights(lenet):
    # 10,000 LUTs: 12,000 hold LeNet's weights on chip, partly in LUT-built memories, since
    # requantisers use 24-bit multipliers
    # (test_onchip_search_finds_the_lut_weight_plan)
    board = small_board(19.2, lut=SMALL_LUT, bram18=SMALL_BRAM)
    with pytest.raises(InfeasibleError, match="BRAM18"):
        make_plan(lenet, board, baselines=False)
    plan = make_plan(lenet, board, baselines=False, offchip_weights=True)
    ddr = [n for n in plan.nodes if n.weights == "ddr"]
    assert ddr, "the plan must move some weights off chip"
    core = plan.cores[0]
    assert core.memory == "ddr"
    # every off-chip weight is read once per frame: its bytes are the initializer's
    for n in ddr:
        assert n.offchip_bytes_per_frame == _weight_bytes(lenet, n.name), n.name
    assert core.offchip_bytes_per_frame == sum(n.offchip_bytes_per_frame for n in ddr)
    # the reserved bandwidth covers each block's own read rate and stays within the share:
    # min(19.2 GB/s at 200 MHz = 96 B/cycle, one 16-byte port) x 0.8 = 12.8 B/cycle
    assert core.bw_limit == math.floor(BW_CYCLES * 12.8)
    assert core.bw == sum(-(-BW_CYCLES * n.offchip_bytes_per_frame // n.ii_cycles) for n in ddr)
    assert core.bw <= core.bw_limit
    for r in ("dsp", "bram18", "uram", "lut"):
        assert getattr(core, r) <= getattr(core, f"{r}_limit"), r
    from bbgrap_hls.commands.plan import format_plan
    from bbgrap_hls.plan import Plan

    assert "off-chip weights in ddr" in format_plan(plan)
    assert Plan.from_json(plan.to_json()).to_json() == plan.to_json()


def test_onchip_search_finds_the_lut_weight_plan(lenet):
    """On 20,000 LUTs LeNet fits the small core with every weight on chip (the small ones in
    LUT-built memories, the dense layers' at foldings that leave BRAM18 for the rest), a plan
    the off-chip search finds when its memory is too slow to be worth using. The on-chip
    search must find it too: at its largest target the balanced rule gives every block its
    cheapest row and BRAM18 is short by one, so the rule fits at a smaller target only
    (feasibility not monotone in the target; it was skipped and LeNet refused)."""
    kept = 0
    for gbps in (19.2, 0.2):
        board = small_board(gbps)
        on = make_plan(lenet, board, baselines=False)
        assert not on.optimizer["offchip_weights"]
        assert all(n.weights != "ddr" for n in on.nodes)
        assert any(n.weights == "lut" for n in on.nodes)
        for r in ("dsp", "bram18", "uram", "lut"):
            assert getattr(on.cores[0], r) <= getattr(on.cores[0], f"{r}_limit"), r
        off = make_plan(lenet, board, baselines=False, offchip_weights=True)
        if all(n.weights != "ddr" for n in off.nodes):
            kept += 1
            assert on.fps >= off.fps, gbps
        else:
            assert off.fps >= on.fps, gbps  # allowing off-chip weights never costs speed
    assert kept, "the slow memory's plan keeps every weight on chip (test_bandwidth_bounds_the_ii)"


@pytest.mark.parametrize("board", ["zcu102", "kv260", "u280"])
def test_latency_objective_with_offchip_weights(lenet, board):
    """The latency objective seeds its boost from the even and greedy baselines; with off-chip
    weights a variant's table may have no folding at the baseline's parallelism 1, which
    crashed (``max() arg is an empty sequence``) instead of planning."""
    plan = make_plan(lenet, load_board(board), objective="latency", offchip_weights=True)
    assert plan.objective == "latency" and plan.latency_cycles > 0


def test_bandwidth_bounds_the_ii(lenet):
    """With a slow memory the off-chip weights set the ii: the reserved rate can never pass
    the memory's usable rate, so ii >= off-chip bytes / usable bytes per cycle. The core has
    10,000 LUTs: since LUT-built weights are charged at their distinct bit columns (the Yosys
    re-fit) and requantisers use 24-bit multipliers, 12,000 hold LeNet's weights and a slow
    memory then goes unused."""
    fast = make_plan(lenet, small_board(19.2, lut=SMALL_LUT, bram18=SMALL_BRAM), baselines=False, offchip_weights=True)
    slow = make_plan(lenet, small_board(0.2, lut=SMALL_LUT, bram18=SMALL_BRAM), baselines=False, offchip_weights=True)
    usable = 0.8 * 0.2e9 / 200e6  # B/cycle
    assert slow.cores[0].bw <= slow.cores[0].bw_limit == math.floor(BW_CYCLES * usable)
    assert slow.ii_cycles >= slow.cores[0].offchip_bytes_per_frame / usable
    assert slow.ii_cycles > fast.ii_cycles
    assert slow.roofline["binds"] == "memory"


# ResNet-18 at full size on u55c without URAM (refused on chip, planned with weights in the
# HBM) and on zcu102 (plans only with off-chip weights): bench/offchip_fullsize.py.


def test_offchip_block_reads_whole_frames_before_its_first_output():
    """The weights-reloading block needs its whole input before any output (fill 1) and
    charges two frame slots for input and output besides a double-buffered weight tile."""
    g = canonical("resnet18")
    node = next(n for n in g.nodes if n.op == "Conv" and g.shape(n.outputs[0])[1] == 512
                and g.shape(n.inputs[1])[2] == 3)
    geo = node_geometry(node, g)
    c = block_cost("conv", geo, 4, 32, ddr=True)
    on = block_cost("conv", geo, 4, 32)
    assert c.weights == "ddr" and c.fill == 1.0 and c.window is None
    assert c.offchip_bytes == _weight_bytes(g, node.name)
    assert c.dsp == on.dsp  # the same multipliers
    assert c.bram18 < on.bram18  # the point: 2.4 MB of weights leave the chip
    in_beats = geo.h * geo.w * geo.c // 32
    assert c.ii >= max(in_beats, geo.ho * geo.wo * (9 * geo.c // 32) * (geo.co // 4))
    with pytest.raises(ValueError):
        block_cost("dwconv", geo, 4, 4, ddr=True)


def test_plan_cli_offchip_flag(tmp_path):
    path = models.save(models.lenet(), str(tmp_path / "lenet.onnx"))
    out = subprocess.run([sys.executable, "-m", "bbgrap_hls.cli", "plan", path, "--board", "pynq-z2",
                          "--offchip-weights", "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["cores"][0]["memory"] == "ddr" and d["cores"][0]["bw_limit"] > 0


@pytest.mark.parametrize("board", ["u55c", "small"])
def test_roofline_bounds_the_plan(resnet18, lenet, board):
    """No plan beats physics: at the MACs per DSP the options allow (two with DSP packing) the
    DSP limits bound the fps (a cost model that undercounted DSPs would fail this), and the
    memory bound is the cores' shares over the bytes the plan reads off chip."""
    from bbgrap_hls.commands.inspect import summarize

    if board == "u55c":  # without its URAM, so that ResNet-18 reads weights from the HBM
        full = load_board("u55c")
        g, b = resnet18, dataclasses.replace(full, cores=[dataclasses.replace(c, uram=0) for c in full.cores])
    else:
        g, b = lenet, small_board(0.2, lut=SMALL_LUT, bram18=SMALL_BRAM)  # weights off chip (test_bandwidth_bounds_the_ii)
    plan = make_plan(g, b, baselines=False, offchip_weights=True)
    r = plan.roofline
    macs = summarize(g, canonical=True)["macs"]
    dsp = sum(c.dsp_limit for c in b.cores)
    # MAC lanes per cycle the roofline counts: one or two per DSP, plus with LUT multipliers one
    # per LUT_MUL + LUT_PER_MAC LUTs of the limits
    lanes = r["compute_fps"] * macs / (b.clock_mhz * 1e6)
    lut_lanes = sum(c.lut_limit for c in b.cores) // (LUT_MUL + LUT_PER_MAC) if plan.optimizer["lut_macs"] else 0
    assert lanes == pytest.approx(round(lanes)) and round(lanes) - lut_lanes in (dsp, 2 * dsp)
    assert plan.fps <= r["roofline_fps"] * (1 + 1e-9)
    assert 0 < r["fraction"] <= 1
    used = [c for c in plan.cores if c.offchip_bytes_per_frame]
    assert used, "the case is meant to read weights off chip"
    share = sum(b.offchip_share(c.id) for c in used)
    assert r["memory_fps"] == pytest.approx(b.clock_mhz * 1e6 * share / sum(c.offchip_bytes_per_frame for c in used))
    in_bytes = int(np.prod(g.shape(g.inputs[0])))
    assert r["input_fps"] == pytest.approx(b.host.bandwidth_gbps * 1e9 / in_bytes)
    assert r["binds"] == min(("compute", "memory", "input"), key=lambda k: r[f"{k}_fps"])


def test_memory_capacity_is_a_limit(lenet):
    """A memory smaller than the weights the plan puts there refuses the plan, naming it (on
    the small core that needs off-chip weights: with 40 BRAM18 and 20,000 LUTs LeNet fits on
    chip since stop 58's smaller requantisers)."""
    with pytest.raises(InfeasibleError, match=r"memory ddr: the plan keeps [\d,]+ bytes of weights there, its capacity"):
        make_plan(lenet, small_board(19.2, capacity_gb=1e-5, lut=SMALL_LUT, bram18=SMALL_BRAM), baselines=False,
                  offchip_weights=True)


def test_a_refusal_on_one_core_says_what_the_integer_programs_prove(lenet):
    """Neither the rules nor the joint choice fit LeNet on chip on a core of 30 BRAM18 and
    10,000 LUTs: the message adds the least BRAM18 any choice of rows needs with the other
    resources within limits (HiGHS' proved bound), and that bound is consistent: a core with
    one BRAM18 less than it is refused too, one with that many plans."""
    import re

    with pytest.raises(InfeasibleError) as e:
        make_plan(lenet, small_board(19.2, lut=SMALL_LUT, bram18=SMALL_BRAM), baselines=False)
    m = re.search(r"integer program, HiGHS\) no choice of rows fits: with the other resources within limits, "
                  r"BRAM18 is short by at least (\d+) \((\d+) / (\d+)\)", str(e.value))
    assert m, str(e.value)
    need, limit = int(m[2]), int(m[3])
    assert int(m[1]) == need - limit > 0
    assert str(e.value).startswith("the model needs") or "do not fit" in str(e.value)  # the rules' message first
    cap = 0.8  # small_board's share of its resources a plan may use
    with pytest.raises(InfeasibleError):
        make_plan(lenet, small_board(19.2, lut=SMALL_LUT, bram18=int((need - 1) / cap)), baselines=False)
    plan = make_plan(lenet, small_board(19.2, lut=SMALL_LUT, bram18=int(need / cap) + 40), baselines=False)
    assert plan.cores[0].bram18 <= plan.cores[0].bram18_limit
