"""A skip FIFO in board memory through gen (``--ddr-fifos``; plan channel ``kind: ddr_fifo``,
kernel ``bb::ddr_fifo``, hw/hls/ddr_fifo.h; docs/codegen.md, "FIFO in board memory").

`tests.test_sim_offchip.pair_res` on one core of 20 BRAM18, 32 DSP, 12,000 LUTs, planned with
``--offchip-weights --no-padded-folds --no-ddr-stages --ddr-fifos``: the skip FIFO of the
input to the Add goes to a ring of frame regions in the core's board memory. Gen builds it as
``bb::ddr_fifo<F_<layer>_in<k>>`` between two short streams, its parameters from the plan
(REGIONS) and the frame (LANES, BEATS, REGION), its ring after the weights in the core's
image (OFF), its two m_axi ports (``fddr_w_``/``fddr_r_``) given that image as a DDR frame
stage's scratch ports are (host, driver spec, link.cfg, testbench). C simulation, threaded
and sequential, is bit-exact. The RTL twin reads the call as a ``ddr_stage`` on the same ring
(tests/test_ddr_fifo_twin.py simulates it).

Design level (generate on edited plans, no C simulation): a FIFO whose beats the plan counts
in other lanes than its reader's gets a width converter after it; a FIFO next to a DDR frame
stage has its ring after the stage's scratch area; a core without off-chip weights still gets
an image (the ring alone)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.model.stage import STAGE_REGIONS, stage_beat_bytes, stage_region_bytes
from tests import models
from tests.test_sim_offchip import board_yaml, pair_res

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]

FLAGS = ["--offchip-weights", "--no-padded-folds", "--no-ddr-stages", "--ddr-fifos", "--no-row-bands"]
#: an xdma platform, so that link.cfg gets its sp lines (the plan is the same without it)
PLATFORM = "platform: xilinx_test_gen3x16_xdma_1_202210_1\n"
_STRUCT = re.compile(r"struct F_(\w+) \{ static constexpr int LANES = (\d+), REGIONS = (\d+), CHUNKS = 1; "
                     r"static constexpr long BEATS = (\d+), OFF = (\d+), REGION = (\d+); \};")


def _board_text() -> str:
    return board_yaml(1, 20, 32, 12000).replace("clock_mhz: 100\n", "clock_mhz: 100\n" + PLATFORM)


@pytest.fixture(scope="module")
def gen_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddrfifo_gen")
    model = models.save(pair_res(), d / "m.onnx")
    (d / "board.yaml").write_text(_board_text())
    assert main(["gen", model, "--board", str(d / "board.yaml"), "-o", str(d / "out"), *FLAGS]) == 0
    return d / "out"


def _fifo(out):
    """(the plan's ddr_fifo channel, {ident, LANES, REGIONS, BEATS, OFF, REGION} of the struct)."""
    plan = json.loads((out / "plan.json").read_text())
    (ch,) = [c for c in plan["channels"] if c["kind"] == "ddr_fifo"]
    (m,) = _STRUCT.findall((out / "hls" / "core0.cpp").read_text())
    return plan, ch, dict(zip(("ident", "LANES", "REGIONS", "BEATS", "OFF", "REGION"),
                              [m[0], *map(int, m[1:])], strict=True))


def _weight_bytes(plan) -> int:
    """Bytes of the off-chip weights in the image (each layer padded to 64-byte beats); without
    stages a ddr node's bytes per frame are its weights."""
    return sum(-(-n["offchip_bytes_per_frame"] // 64) * 64 for n in plan["nodes"] if n["weights"] == "ddr")


def test_the_kernel_calls_ddr_fifo_with_the_plans_parameters(gen_out):
    """One ddr_fifo channel (the input into the Add), one bb::ddr_fifo call with its struct:
    REGIONS the plan's, LANES its width, BEATS its frame, REGION a frame rounded to 4 KB, OFF
    the 4 KB boundary after the weights. Its output feeds the Add; no stream of the core is as
    deep as the planned lag (the FIFO left the chip)."""
    plan, ch, f = _fifo(gen_out)
    assert (ch["src"], ch["dst"]) == ("@input", "add_7_node") and ch["regions"] >= 3
    x = f["ident"]
    assert f["REGIONS"] == ch["regions"] and f["LANES"] == ch["width_lanes"]
    assert f["BEATS"] == ch["bits_per_frame"] // 8 // ch["width_lanes"] == 64 * 8 * 8 // ch["width_lanes"]
    assert f["REGION"] == stage_region_bytes(f["BEATS"], f["LANES"]) == -(-f["BEATS"] * stage_beat_bytes(
        f["LANES"]) // 4096) * 4096
    assert f["OFF"] == -(-_weight_bytes(plan) // 4096) * 4096 > 0
    cpp = (gen_out / "hls" / "core0.cpp").read_text()
    calls = re.findall(rf"BB_PROCESS\(bb::ddr_fifo<F_{x}>\((\w+), (\w+), fddr_w_{x}, fddr_r_{x}, frames\);\)", cpp)
    assert len(calls) == 1
    src, dst = calls[0]
    assert re.search(rf"BB_PROCESS\(bb::add2<layer\d+_P>\(\w+, {dst}, \w+, frames\);\)", cpp)
    assert re.search(rf"bb::\w+<[^>]*>\([^;]*\b{src}\b[^;]*\);\)", cpp.split(f"bb::ddr_fifo<F_{x}>")[0])
    depths = [int(v) for v in re.findall(r"BB_HLS\(STREAM variable = \w+ depth = (\d+)\)", cpp)]
    assert depths and max(depths) < ch["depth"]


def test_image_ports_host_and_link(gen_out):
    """The image is the weights, then the ring's REGIONS·REGION zero bytes from OFF; the top's two
    ring ports (stage_beat_bytes(LANES)-byte words, a bundle each), the host, the driver's spec,
    the testbench and link.cfg give them the image buffer in the weights' bank, as a stage's."""
    plan, _, f = _fifo(gen_out)
    x = f["ident"]
    img = np.fromfile(gen_out / "hls" / "ddr_weights_core0.bin", np.int8)
    assert img.size == f["OFF"] + f["REGIONS"] * f["REGION"]
    assert img[:_weight_bytes(plan)].any() and not img[_weight_bytes(plan):].any()
    sb = stage_beat_bytes(f["LANES"])
    w, r = f"fddr_w_{x}", f"fddr_r_{x}"
    cpp = (gen_out / "hls" / "core0.cpp").read_text()
    assert f"bb::Word<{sb}>* {w}, const bb::Word<{sb}>* {r}, int frames)" in cpp
    assert f"INTERFACE m_axi port = {w} offset = slave bundle = gmem_{w} depth = {img.size // sb} max_write" in cpp
    assert f"INTERFACE m_axi port = {r} offset = slave bundle = gmem_{r} depth = {img.size // sb} max_read" in cpp
    spec = json.loads((gen_out / "host" / "design.json").read_text())
    (buf,) = [b for b in spec["buffers"] if b["role"] == "ddr_weights"]
    assert buf["bytes"] == img.size and buf["file"] == "ddr_weights_core0.bin"
    args = {a["name"]: a for k in spec["kernels"] for a in k["args"]}
    host = (gen_out / "host" / "host.cpp").read_text()
    link = (gen_out / "vitis" / "link.cfg").read_text()
    bank = re.search(r"sp=core0_1\.wddr_layer\d+:(\S+)\n", link).group(1)
    sim = (gen_out / "host" / "sim_kernels.cpp").read_text()
    tb = (gen_out / "tb" / "tb.cpp").read_text()
    assert f"std::vector<int8_t> wddr_core0({img.size});" in tb
    for p, const in ((w, ""), (r, "const ")):
        assert args[p]["kind"] == "bo" and args[p]["buffer"] == buf["name"]
        assert f"set_arg({args[p]['index']}, {buf['name']});" in host
        assert f"sp=core0_1.{p}:{bank}\n" in link
        assert f"static_cast<{const}bb::Word<{sb}>*>(ptrs[{args[p]['index']}])" in sim
        assert f"reinterpret_cast<{const}bb::Word<{sb}>*>(wddr_core0.data())" in tb


@pytest.mark.parametrize("threads", [True, False], ids=["threaded", "sequential"])
def test_csim_bit_exact(gen_out, threads):
    """Threaded (bounded streams, deadlock watchdog: the ring's writer and reader as threads) and
    sequential (the kernel's alternating fallback) C simulation against the integer reference."""
    assert main(["csim", *([] if threads else ["--no-threads"]), str(gen_out)]) == 0


def test_rtl_twin_puts_a_ddr_stage_on_the_hls_ring(gen_out):
    """The twin's ``ddr_stage`` takes the struct's lanes, beats, regions, region and offset, and
    the testbench's scratch (tb/rtl.json "stages") is the HLS ring's bytes of the image."""
    _, ch, f = _fifo(gen_out)
    assert not (gen_out / "rtl" / "UNSUPPORTED.txt").exists()
    man = json.loads((gen_out / "tb" / "rtl.json").read_text())
    (st,) = man["stages"]
    assert st["fifo"] == f["ident"] and st["port"] == f"m_axi_fifo_{f['ident']}"
    assert (st["base"], st["bytes"]) == (f["OFF"], f["REGIONS"] * f["REGION"])
    assert (st["frame_beats"], st["beat_bytes"]) == (f["BEATS"], stage_beat_bytes(f["LANES"]))
    sv = (gen_out / "rtl" / "core0.sv").read_text()
    inst = re.search(r"ddr_stage #\((.*?)\) u_(\w+)_fifo \(", sv, re.S)
    assert inst and inst.group(2) == f["ident"]
    for k, v in [("LANES", f["LANES"]), ("FRAME_BEATS", f["BEATS"]), ("REGIONS", f["REGIONS"]),
                 ("REGION_BYTES", f["REGION"]), ("BASE", f"64'h{f['OFF']:x}")]:
        assert f".{k}({v})" in inst.group(1), k


# ---- design level: plans edited before generate ---------------------------------------------


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """(int8 graph, plan, board, feeds) of the module's case, planned once (no gen)."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.search import make_plan

    d = tmp_path_factory.mktemp("ddrfifo_design")
    model = models.save(pair_res(), d / "m.onnx")
    (d / "board.yaml").write_text(_board_text())
    board = load_board(str(d / "board.yaml"))
    g = canonicalize(load_model(model))
    plan = make_plan(g, board, baselines=False, offchip_weights=True, padded_folds=False, ddr_stages=False, row_bands=False,
                     ddr_fifos=True)
    gq = quantize(g, seed=0)
    x = np.random.default_rng(3).standard_normal(gq.shape(gq.inputs[0])).astype(np.float32)
    return gq, plan, board, {gq.inputs[0]: x}


def _generate(planned, edit):
    import copy

    from bbgrap_hls.codegen.project import generate

    gq, plan, board, feeds = planned
    plan = copy.deepcopy(plan)
    edit(plan)
    return (*generate(gq, plan, board, feeds), plan)


def test_other_lanes_than_the_reader_get_a_converter(planned):
    """The plan counts the FIFO's beats in 4 lanes (its ``width_lanes``), the Add reads 1: the
    ring carries 1,024 beats of 4 lanes a frame (4-byte words) and a 4 -> 1 width converter
    follows it."""
    def edit(plan):
        (ch,) = [c for c in plan.channels if c.kind == "ddr_fifo"]
        ch.width_lanes = 4

    files, design, _ = _generate(planned, edit)
    (core,) = design.cores
    (f,) = core.ddr_fifos
    assert (f.lanes, f.beats) == (4, 1024)
    (call,) = [c for c in core.calls if c.startswith("bb::ddr_fifo<")]
    out = re.match(r"bb::ddr_fifo<\w+>\(\w+, (\w+),", call).group(1)
    assert core.streams[out][0] == 4
    assert f"bb::width_convert<4096, 4, 1, 4>({out}, " in "\n".join(core.calls)
    assert "bb::Word<4>* fddr_w_" in files["hls/core0.cpp"].decode()  # stage_beat_bytes(4) = 4
    assert "rtl/UNSUPPORTED.txt" not in files  # the twin: a 4-lane ddr_stage, then its converter
    assert ".LANES(4),\n      .FRAME_BEATS(1024)," in files["rtl/core0.sv"].decode()


def test_the_ring_follows_a_stages_scratch(planned):
    """With the second conv behind a DDR frame stage (plan edited: one input slot, in_stage),
    the image holds the weights, the stage's scratch (STAGE_REGIONS regions) from the next 4 KB
    boundary, then the ring from the boundary after that; every port of the core's image has
    that size."""
    def edit(plan):
        conv = plan.node("conv_6_node")
        assert conv.weights == "ddr"
        conv.in_slots, conv.in_stage = 1, True
        conv.out_slots = 2  # (a stage keeps two output slots; the plan may have chosen one)

    files, design, _ = _generate(planned, edit)
    (core,) = design.cores
    (lay,) = [x for x in core.layers if x.in_stage]
    (f,) = core.ddr_fifos
    end = lay.stage_offset + STAGE_REGIONS * lay.stage_region
    assert lay.stage_offset > 0 and f.offset == -(-end // 4096) * 4096 and f.offset >= end
    img = files["hls/ddr_weights_core0.bin"]
    assert len(img) == f.offset + f.regions * f.region and not any(img[lay.stage_offset:])
    assert f"OFF = {f.offset}, REGION = {f.region};" in files["hls/core0.cpp"].decode()
    from bbgrap_hls.codegen.ports import DDR_IMAGE_KINDS, core_ports

    sizes = {p.name: p.elems for p in core_ports(core) if p.kind in DDR_IMAGE_KINDS}
    assert {f"sddr_w_{lay.ident}", f"fddr_r_{f.ident}"} <= set(sizes) and set(sizes.values()) == {len(img)}
    # the RTL twin's scratch areas are the same bytes of the image: the stage's, then the ring
    man = json.loads(files["tb/rtl.json"])
    assert [(s.get("layer") or s["fifo"], s["base"]) for s in man["stages"]] == [
        (lay.ident, lay.stage_offset), (f.ident, f.offset)]


def test_a_core_without_offchip_weights_gets_the_ring_alone(planned):
    """The convs' weights edited onto the chip (BRAM): no weight port, but the image file (the
    ring alone, from byte 0), the testbench's buffer and the two ring ports remain."""
    def edit(plan):
        for n in plan.nodes:
            if n.weights == "ddr":
                n.weights, n.out_slots = "bram", 2  # (one output slot is an off-chip block's)

    files, design, _ = _generate(planned, edit)
    (core,) = design.cores
    (f,) = core.ddr_fifos
    assert f.offset == 0
    img = files["hls/ddr_weights_core0.bin"]
    assert len(img) == f.regions * f.region and not any(img)
    cpp = files["hls/core0.cpp"].decode()
    assert "wddr_layer" not in cpp and f"fddr_w_{f.ident}" in cpp
    tb = files["tb/tb.cpp"].decode()
    assert f"std::vector<int8_t> wddr_core0({len(img)});" in tb
    (st,) = json.loads(files["tb/rtl.json"])["stages"]  # the twin's ring from byte 0 too
    assert (st["fifo"], st["base"], st["bytes"]) == (f.ident, 0, len(img))


def test_ring_after_a_stage_and_a_converter_csim_bit_exact(planned, tmp_path):
    """Both edits at once (the ring after a stage's scratch in one image, 4-lane beats then a
    converter), written out and C-simulated threaded: bit-exact, no deadlock, no dataflow rule
    broken (the stage and the ring write the same image: overlapping areas would corrupt one);
    the schedule check counts the ring's two processes (codegen/schedule.py) at their bound."""
    from bbgrap_hls.commands.csim import csim_design

    def edit(plan):
        (ch,) = [c for c in plan.channels if c.kind == "ddr_fifo"]
        ch.width_lanes = 4
        conv = plan.node("conv_6_node")
        conv.in_slots, conv.in_stage = 1, True
        conv.out_slots = 2  # (a stage keeps two output slots; the plan may have chosen one)

    gq, _, _, feeds = planned
    files, _, plan = _generate(planned, edit)
    out = tmp_path / "out"
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    (out / "plan.json").write_text(plan.to_json(stable=True))
    res = csim_design(out, feeds[gq.inputs[0]], gq, threads=True, schedule=True)
    assert res.ok, res.message
    assert not res.deadlock and not res.violations
    # the schedule run (SCHEDULE_REPEAT x the frames in one call: the ring wraps when that
    # exceeds REGIONS): writer and reader counted at the bound, a beat a cycle, 1,024 a frame
    rows = [r for r in res.schedule if r["label"].startswith("ddr_fifo_")]
    assert sorted(r["label"] for r in rows) == ["ddr_fifo_read<F>", "ddr_fifo_write<F>"]
    assert all(r["counted"] == r["bound"] == 1024 for r in rows), rows


@pytest.mark.parametrize("what", ["output", "regions"])
def test_what_gen_cannot_build_is_refused(planned, what):
    """A ddr_fifo channel gen does not build (one into the graph output, read by no layer) or
    one the kernel cannot take (more than 128 regions: an int8 token) is an UnsupportedError
    naming the channel, not a design without it."""
    from bbgrap_hls.errors import UnsupportedError

    def edit(plan):
        if what == "output":
            (ch,) = [c for c in plan.channels if c.dst == "@output"]
            ch.kind, ch.regions = "ddr_fifo", 3
        else:
            (ch,) = [c for c in plan.channels if c.kind == "ddr_fifo"]
            ch.regions = 129

    with pytest.raises(UnsupportedError, match="@output" if what == "output" else "129 regions"):
        _generate(planned, edit)
