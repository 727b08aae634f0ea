"""The DDR frame stage of a one-input-slot off-chip conv/dense on the HLS path (``P::STAGE = 1``,
hw/hls/offchip_stage.h; docs/codegen.md, "DDR frame stage").

- Kernel: conv and dense layers with ``ISLOTS = 1, STAGE = 1`` over more frames than the
  stage's regions (the ring wraps) bit-exact against tests/test_hls_kernels.py's numpy
  models; the board-memory image after the run holds the last frames in their regions
  (one word of ``stage_beat_bytes(SIMD)`` bytes per beat, the rest zero) and its weights
  untouched.
- Design: a small CNN planned with off-chip weights, one off-chip conv set to ``in_slots 1,
  in_stage True`` in the plan, generated and C-simulated (threaded, bit-exact); the image file
  has the scratch area, the kernel, host, driver and link config name the new ports.
- Bad input: ``in_stage`` without ``weights == "ddr"`` or with two input slots.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bbgrap_hls.codegen.fold import wide_words
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.model.stage import STAGE_REGIONS, stage_beat_bytes, stage_region_bytes
from tests.test_hls_kernels import _conv_case, _dense_case, assert_bit_exact, run_cases

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]
BEAT = 64  # bb::DDR_BEAT


def _staged(case, off_beats: int, uram: int, rng):
    """An on-chip conv/dense case as its off-chip twin behind a DDR frame stage: one mutable
    board-memory image ``mem`` (``off_beats`` beats of other data, the weight words, padding,
    then from the next 4 KB boundary the scratch's regions, filled with noise) given to the
    weight port and to both scratch ports, as the host does."""
    words = wide_words(case.consts.pop("w")).astype(np.int8)
    pad = -words.size % BEAT
    img = np.concatenate([rng.integers(-128, 128, off_beats * BEAT, dtype=np.int8), words.reshape(-1),
                          rng.integers(-128, 128, pad, dtype=np.int8)])
    lanes, x = case.inputs[0]
    region = stage_region_bytes(x.shape[1] // lanes, lanes)
    soff = -(-img.size // 4096) * 4096
    img = np.concatenate([img, rng.integers(-128, 128, soff + STAGE_REGIONS * region - img.size, dtype=np.int8)])
    case.consts = {"img": img, **case.consts}
    case.decls = re.sub(r"; \};$", f", OFF = {off_beats}, URAM = {uram}, ISLOTS = 1, STAGE = 1, SOFF = {soff}, "
                        f"SREGION = {region}; }};", case.decls) + f"\nstatic int8_t mem[{img.size}];"
    kern = "conv2d_offchip" if "bb::conv2d<P>" in case.body else "dense_offchip"
    case.body = ("  std::memcpy(mem, img, sizeof mem);\n"
                 "  using SW = bb::Word<bb::stage_beat(P::SIMD)>;\n"
                 f"  bb::{kern}<P>(in0, out, reinterpret_cast<const bb::Word<bb::DDR_BEAT>*>(mem), "
                 "reinterpret_cast<SW*>(mem), reinterpret_cast<const SW*>(mem), "
                 f"bias, mult, shift, {case.frames});\n"
                 "  char mem_path[512];\n"
                 '  std::snprintf(mem_path, sizeof mem_path, "%s.mem", path);\n'
                 "  if (int e = write_bytes(mem_path, mem, sizeof mem)) return e;")
    case.name += "_stage"
    case.stage = (soff, region)  # (P::SOFF, P::SREGION) for the image check
    return case


def stage_cases():
    rng = np.random.default_rng(91)
    return [
        # padded and strided, 3 lanes a beat (4-byte scratch words), five frames, BRAM
        _staged(_conv_case("conv_stride_pads", rng, 7, 6, 6, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 3, 3,
                           frames=5), 1, 0, rng),
        # dilated 3x3, 8 lanes, four frames, URAM frame buffers
        _staged(_conv_case("conv_dilated", rng, 8, 7, 8, 16, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 8, 8,
                           frames=4), 0, 1, rng),
        # dense, 12 lanes (16-byte words), seven frames: the ring wraps twice
        _staged(_dense_case("dense", rng, 48, 10, 12, 5, frames=7), 2, 0, rng),
    ]


@pytest.fixture(scope="module")
def stage_outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("stage")
    return d, run_cases(stage_cases(), d, "DDR frame stage kernel")


@pytest.mark.parametrize("name", [c.name for c in stage_cases()])
def test_stage_kernel_bit_exact(stage_outputs, name):
    assert_bit_exact(name, *stage_outputs[1][name])


@pytest.mark.parametrize("name", [c.name for c in stage_cases()])
def test_stage_scratch_layout(stage_outputs, name):
    """After F frames, region f mod 3 holds frame f for the last three frames f: word i (of
    stage_beat_bytes(SIMD) bytes) = beat i's lanes, then zeros; the weights and the rest of
    every region untouched."""
    d, outs = stage_outputs
    case = outs[name][0]
    mem = np.fromfile(d / f"{name}.bin.mem", np.int8)
    img = case.consts["img"]
    assert mem.size == img.size
    soff, region = case.stage
    np.testing.assert_array_equal(mem[:soff], img[:soff])
    lanes, x = case.inputs[0]
    sb = stage_beat_bytes(lanes)
    beats = x.shape[1] // lanes
    for f in range(case.frames - STAGE_REGIONS, case.frames):
        base = soff + (f % STAGE_REGIONS) * region
        words = mem[base:base + beats * sb].reshape(beats, sb)
        np.testing.assert_array_equal(words[:, :lanes], x[f].reshape(beats, lanes), err_msg=f"frame {f}")
        assert not words[:, lanes:].any()
        np.testing.assert_array_equal(mem[base + beats * sb:base + region], img[base + beats * sb:base + region])


# ---- a design with one staged layer ---------------------------------------------------------


@pytest.fixture(scope="module")
def staged_design(tmp_path_factory):
    """`offchip_cnn` on test_offchip_csim's 12-BRAM18, 12,000-LUT board (two convs off chip),
    the last off-chip conv set to one input slot behind a DDR frame stage in the plan, then
    generated from that plan and C-simulated (threaded: bounded FIFOs, deadlock check)."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.commands.csim import csim_design
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.search import make_plan
    from tests import models
    from tests.test_offchip_csim import board_yaml, offchip_cnn

    d = tmp_path_factory.mktemp("staged")
    (d / "tinymem.yaml").write_text(board_yaml(12, 12000))
    board = load_board(d / "tinymem.yaml")
    model = models.save(offchip_cnn(), d / "m.onnx")
    g = canonicalize(load_model(model))
    # the one-core planner (fast, and no DDR-stage costing: the plan is edited below)
    plan = make_plan(g, board, strategy="single", offchip_weights=True, row_bands=False)
    ddr = [n for n in plan.nodes if n.weights == "ddr" and g.node(n.name).op == "Conv"]
    assert len(ddr) >= 1
    staged = ddr[-1]
    staged.in_slots, staged.in_stage = 1, True
    gq = quantize(g, seed=0)
    x = np.random.default_rng(5).standard_normal(gq.shape(gq.inputs[0])).astype(np.float32)
    files, design = generate(gq, plan, board, {gq.inputs[0]: x})
    out = d / "out"
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    (out / "plan.json").write_text(plan.to_json(stable=True))
    # threaded, then SCHEDULE_REPEAT x the frames in one call (the ring wraps) for the counts
    res = csim_design(out, x, gq, threads=True, schedule=True)
    return out, design, staged.name, res, model


def test_staged_design_csim_bit_exact(staged_design):
    """Bit-exact, no deadlock, no dataflow rule broken; the staged conv's threaded count per
    frame (its slowest stage: read-back + compute) equals its bound (schedule.offchip_cycles)."""
    _, _, node, res, _ = staged_design
    assert res.ok, res.message
    assert not res.deadlock and not res.violations
    (row,) = [r for r in res.schedule if r["node"] == node and r["label"] == "conv2d_offchip"]
    assert row["counted"] == pytest.approx(row["bound"], rel=0.001), row


def test_staged_design_image_ports_host_and_link(staged_design):
    """The staged layer's struct (STAGE, SOFF after the weights, SREGION), the image file with
    its zero scratch area, the top's two scratch ports in bundles of their own, and the host,
    the driver's spec and link.cfg giving them the image buffer in the weights' bank."""
    out, design, node, _, _ = staged_design
    (core,) = [c for c in design.cores if any(lay.in_stage for lay in c.layers)]
    (lay,) = [lay for lay in core.layers if lay.in_stage]
    assert lay.node == node and lay.in_slots == 1
    weights = sum(-(-x.wmem.nbytes() // BEAT) * BEAT for x in core.layers if x.wmem is not None and x.wmem.ddr)
    assert lay.stage_offset == -(-weights // 4096) * 4096
    assert lay.stage_region == stage_region_bytes(_in_beats(design, lay), lay.in_lanes[0])
    head = (out / "hls" / f"{lay.ident}.h").read_text()
    assert "ISLOTS = 1" in head and "STAGE = 1" in head
    assert f"SOFF = {lay.stage_offset}" in head and f"SREGION = {lay.stage_region}" in head
    img = np.fromfile(out / "hls" / f"ddr_weights_{core.name}.bin", np.int8)
    assert img.size == lay.stage_offset + STAGE_REGIONS * lay.stage_region
    assert not img[weights:].any()
    sb = stage_beat_bytes(lay.in_lanes[0])
    w, r = f"sddr_w_{lay.ident}", f"sddr_r_{lay.ident}"
    cpp = (out / "hls" / f"{core.name}.cpp").read_text()
    assert f"bb::Word<{sb}>* {w}, const bb::Word<{sb}>* {r}" in cpp
    assert f"INTERFACE m_axi port = {w} offset = slave bundle = gmem_{w} depth = {img.size // sb}" in cpp
    assert f"INTERFACE m_axi port = {r} offset = slave bundle = gmem_{r} depth = {img.size // sb}" in cpp
    assert f"wddr_{lay.ident}, {w}, {r}," in cpp
    spec = json.loads((out / "host" / "design.json").read_text())
    (buf,) = [b for b in spec["buffers"] if b["role"] == "ddr_weights" and b["kernel"] == core.name]
    assert buf["bytes"] == img.size
    args = {a["name"]: a for k in spec["kernels"] if k["name"] == core.name for a in k["args"]}
    host = (out / "host" / "host.cpp").read_text()
    link = (out / "vitis" / "link.cfg").read_text()
    bank = re.search(rf"sp={core.name}_1\.wddr_{lay.ident}:(\S+)\n", link).group(1)
    for p in (w, r):
        assert args[p]["kind"] == "bo" and args[p]["buffer"] == buf["name"]
        assert f"set_arg({args[p]['index']}, {buf['name']});" in host
        assert f"sp={core.name}_1.{p}:{bank}\n" in link
    sim = (out / "host" / "sim_kernels.cpp").read_text()
    assert f"static_cast<bb::Word<{sb}>*>(ptrs[{args[w]['index']}])" in sim
    assert f"static_cast<const bb::Word<{sb}>*>(ptrs[{args[r]['index']}])" in sim


def test_staged_design_host_cpp_and_driver_py(staged_design, tmp_path):
    """host.cpp on the XRT stand-in (g++ -Werror with sim_kernels.cpp: the scratch pointers'
    casts) and driver.py's C-simulation backend give the reference (test_offchip_csim's check)."""
    from tests.test_offchip_csim import test_host_cpp_and_driver_py_against_the_reference as check

    out, _, _, _, model = staged_design
    check((out, model), tmp_path)


def _in_beats(design, lay) -> int:
    """Beats of one input frame of ``lay`` (its input stream's elements / its lanes)."""
    core = next(c for c in design.cores if lay in c.layers)
    call = next(c for c in core.calls if core.call_layer.get(c) == lay.ident)
    stream = re.search(r"\((\w+),", call).group(1)
    return core.elems[stream] // lay.in_lanes[0]


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("weights, in_slots", [("bram", 1), (None, 1), ("ddr", 2)])
def test_in_stage_needs_ddr_weights_and_one_slot(tmp_path, weights, in_slots):
    """make_layer refuses a DDR frame stage on a layer with its weights on chip (or no
    placement) or with two input slots, naming the node."""
    from bbgrap_hls.codegen.layers import make_layer
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize
    from tests.test_csim import small_model

    gq = quantize(canonicalize(load_model(small_model(str(tmp_path / "small.onnx")))))
    node = next(n for n in gq.nodes if n.name == "conv2")
    with pytest.raises(BadInputError, match="node 'conv2'.*in_stage"):
        make_layer(gq, node, "layer1", 8, 8, weights=weights, in_slots=in_slots, in_stage=True)
