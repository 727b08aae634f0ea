"""Off-chip weights on the HLS path: the kernel (hw/hls/conv2d_offchip.h) against the integer
reference, and gen + csim end to end on a plan that keeps weights in board memory.

The kernel cases reuse tests/test_hls_kernels.py's numpy models: the same conv/dense layer,
its weights laid out as the off-chip image (the on-chip ROM's words back to back, after
other layers' beats), two frames a case (three or four with one output frame slot); the
same cases in the threaded C simulation count their static bound (`schedule.offchip_cycles`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess

import numpy as np
import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.codegen import schedule
from bbgrap_hls.codegen.fold import wide_words
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import run_int8
from bbgrap_hls.quant.quantizer import quantize
from tests import models
from tests.test_hls_kernels import (
    _conv_case,
    _dense_case,
    _packed,
    assert_bit_exact,
    run_cases,
    threaded_binary,
)

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]
BEAT = 64  # bb::DDR_BEAT


def _offchip(case, off_beats: int, uram: int, rng, islots: int = 2, oslots: int = 2):
    """Turn an on-chip conv/dense case into its off-chip twin: the weights as a byte image
    (``off_beats`` beats of other data first, the words, padding to a whole beat); ``islots``
    1: one input frame slot (``P::ISLOTS``, absent from the struct when 2); ``oslots`` 1: one
    output frame slot (``P::OSLOTS``, likewise)."""
    words = wide_words(case.consts.pop("w")).astype(np.int8)
    pad = -words.size % BEAT
    img = np.concatenate([rng.integers(-128, 128, off_beats * BEAT, dtype=np.int8), words.reshape(-1),
                          rng.integers(-128, 128, pad, dtype=np.int8)])
    case.consts = {"img": img, **case.consts}
    slots = ("" if islots == 2 else f", ISLOTS = {islots}") + ("" if oslots == 2 else f", OSLOTS = {oslots}")
    case.decls = re.sub(r"; \};$", f", OFF = {off_beats}, URAM = {uram}{slots}; }};", case.decls)
    kern = "conv2d_offchip" if "bb::conv2d<P>" in case.body else "dense_offchip"
    case.body = (f"  bb::{kern}<P>(in0, out, reinterpret_cast<const bb::Word<bb::DDR_BEAT>*>(img), "
                 f"bias, mult, shift, {case.frames});")
    case.name += ("_offchip" + ("" if islots == 2 else f"_in{islots}")
                  + ("" if oslots == 2 else f"_out{oslots}"))
    return case


def _staged_out1(case, off_beats: int, uram: int, rng):
    """An on-chip conv/dense case behind a DDR frame stage (tests/test_stage_csim.py's
    `_staged`: ``ISLOTS = 1, STAGE = 1``) with one output frame slot (``OSLOTS = 1``)."""
    from tests.test_stage_csim import _staged

    case = _staged(case, off_beats, uram, rng)
    case.decls = re.sub(r"(SREGION = \d+); \};", r"\1, OSLOTS = 1; };", case.decls)
    assert "OSLOTS = 1" in case.decls
    case.name += "_out1"
    return case


def _call(case) -> str:
    """The kernel call of an off-chip case's body."""
    (line,) = [ln.strip() for ln in case.body.splitlines() if "_offchip<P>(" in ln]
    return line


def offchip_cases():
    rng = np.random.default_rng(77)
    return [
        # padded and strided, a tall kernel; pe·simd = 6 bytes a word (many words a beat)
        _offchip(_conv_case("conv_stride_pads", rng, 7, 6, 4, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 2, 3),
                 3, 0, rng),
        # 3x3 "same" conv, dilated, words of exactly one beat
        _offchip(_conv_case("conv_dilated", rng, 8, 7, 8, 16, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 8, 8),
                 0, 1, rng),
        # words wider than a beat (pe·simd = 128), a grouped conv (block-diagonal weights)
        _offchip(_conv_case("conv_wide", rng, 5, 5, 16, 16, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 16, 8, group=2),
                 1, 0, rng),
        # 1x1, one fold (NF = 1: no prefetch)
        _offchip(_conv_case("conv1x1", rng, 4, 4, 8, 16, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 4, 16), 0, 0, rng),
        _offchip(_dense_case("dense", rng, 48, 10, 12, 5), 2, 0, rng),
        _offchip(_dense_case("dense_wide", rng, 96, 8, 96, 2), 0, 0, rng),
        # one input frame slot (the frame stored, then computed, then the next stored), BRAM
        # and URAM, a conv and a dense
        _offchip(_conv_case("conv_stride_pads", rng, 7, 6, 4, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 2, 3),
                 1, 0, rng, islots=1),
        _offchip(_conv_case("conv_dilated", rng, 8, 7, 8, 16, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 8, 8),
                 0, 1, rng, islots=1),
        _offchip(_dense_case("dense", rng, 48, 10, 12, 5), 2, 0, rng, islots=1),
        # one output frame slot (a frame computed, then emitted, then the next computed) with
        # two and with one input slot, BRAM and URAM, convs and denses; three and four frames,
        # so that each slot is reused
        _offchip(_conv_case("conv_stride_pads", rng, 7, 6, 4, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 2, 3,
                            frames=3), 1, 0, rng, oslots=1),
        _offchip(_conv_case("conv_dilated", rng, 8, 7, 8, 16, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 8, 8,
                            frames=4), 0, 1, rng, oslots=1),
        _offchip(_conv_case("conv_stride_pads", rng, 7, 6, 4, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 2, 3,
                            frames=4), 2, 1, rng, islots=1, oslots=1),
        _offchip(_conv_case("conv_wide", rng, 5, 5, 16, 16, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 16, 8, group=2,
                            frames=3), 1, 0, rng, islots=1, oslots=1),
        _offchip(_dense_case("dense", rng, 48, 10, 12, 5, frames=3), 2, 1, rng, oslots=1),
        _offchip(_dense_case("dense", rng, 48, 10, 12, 5, frames=3), 1, 0, rng, islots=1, oslots=1),
        # (the fetch the slowest stage)
        _offchip(_dense_case("dense_wide", rng, 96, 8, 96, 2, frames=3), 0, 0, rng, islots=1, oslots=1),
        # behind a DDR frame stage (offchip_stage.h) with one output slot, BRAM and URAM, four
        # frames (the stage's ring of three regions wraps)
        _staged_out1(_conv_case("conv_stride_pads", rng, 7, 6, 6, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 3, 3,
                                frames=4), 1, 0, rng),
        _staged_out1(_dense_case("dense", rng, 48, 10, 12, 5, frames=4), 2, 1, rng),
        # DSP packing (P::PACK = 2, bb_pack.h; conv_offchip.sv PACK = 2): an odd PE (the last
        # lane alone), the extremes (−128 × −128 in a packed field), one slot of each, a dense
        _offchip(_packed(_conv_case("conv_stride_pads", rng, 7, 6, 4, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1),
                                    2, 3)), 3, 0, rng),
        _offchip(_packed(_conv_case("conv_extreme", rng, 5, 5, 4, 6, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, 6,
                                    extreme=True, frames=3)), 1, 1, rng, islots=1, oslots=1),
        _offchip(_packed(_dense_case("dense", rng, 48, 10, 12, 5)), 2, 0, rng),
    ]


@pytest.fixture(scope="module")
def kernel_outputs(tmp_path_factory):
    return run_cases(offchip_cases(), tmp_path_factory.mktemp("offchip"), "off-chip kernel")


@pytest.mark.parametrize("name", [c.name for c in offchip_cases()])
def test_offchip_kernel_bit_exact(kernel_outputs, name):
    assert_bit_exact(name, *kernel_outputs[name])


def test_cases_cover_the_slot_variants():
    """The kernel cases run all four (ISLOTS, OSLOTS) pairs, BRAM and URAM with one output
    slot (also behind a DDR frame stage), a dense with one output slot, and every
    one-output-slot case over three frames or more (each slot reused). With one output slot
    and either input slots, and behind a stage, a conv and a dense have a bound above the
    same struct's with two (compute + emit the slowest stage), so that the threaded counts
    tell the variants apart."""
    structs = [(c, schedule._struct(c.decls)) for c in offchip_cases()]
    slots = {(p.get("ISLOTS", 2), p.get("OSLOTS", 2)) for _, p in structs}
    assert slots == {(1, 1), (1, 2), (2, 1), (2, 2)}
    out1 = [(c, p) for c, p in structs if p.get("OSLOTS", 2) == 1]
    assert {p["URAM"] for _, p in out1} == {0, 1} and all(c.frames >= 3 for c, _ in out1)
    assert any("dense_offchip" in c.body for c, _ in out1)
    assert {p["URAM"] for _, p in out1 if p.get("STAGE", 0) == 1} == {0, 1}
    above = {(p.get("ISLOTS", 2), p.get("STAGE", 0), "dense" in c.body) for c, p in out1
             if schedule.kernel_bounds(_call(c), p)[0][2] > schedule.kernel_bounds(_call(c), {**p, "OSLOTS": 2})[0][2]}
    assert above == {(i, st, d) for i, st in ((1, 0), (2, 0), (1, 1)) for d in (False, True)}


@pytest.fixture(scope="module")
def threaded_exe(tmp_path_factory):
    """One threaded C simulation binary of every kernel case, each call made the one process
    of a dataflow region (``exe DIR CASE`` runs one and prints a `proc` line with its counted
    cycles: the frame loop's BB_STAGES, a frame at its slowest stage): ``(dir, {name: case},
    {name: the kernel call})``."""
    cases = offchip_cases()
    calls = {c.name: _call(c) for c in cases}
    for c in cases:
        wrapped = "  {\n    BB_DATAFLOW_REGION()\n    BB_PROCESS(" + calls[c.name] + ")\n  }"
        c.body = "\n".join(wrapped if "_offchip<P>(" in ln else ln for ln in c.body.splitlines())
    return (*threaded_binary(cases, tmp_path_factory.mktemp("offchip_threads")), calls)


@pytest.mark.parametrize("name", [c.name for c in offchip_cases()])
def test_offchip_threaded_counts_match_the_bound(threaded_exe, name):
    """Threaded C simulation: bit-exact, and the kernel counts per frame its static bound
    (`schedule.offchip_cycles` through `kernel_bounds`: with one output slot the compute and
    the emit one stage, with one input slot the store and the compute)."""
    d, cases, calls = threaded_exe
    r = subprocess.run([str(d / "t"), str(d), name], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    case = cases[name]
    assert_bit_exact(name, case, np.fromfile(d / f"{name}.bin", dtype=np.int8))
    counted = {f[2]: int(f[3]) for f in (ln.split("\t") for ln in r.stdout.splitlines()) if f[0] == "proc"}
    p = schedule._struct(case.decls)
    ((_, kern, bound, _),) = schedule.kernel_bounds(calls[name], p)
    assert counted == {f"{kern}<P>": bound * case.frames}


# ---- gen --offchip-weights end to end ------------------------------------------------------


def offchip_cnn(seed: int = 0):
    """A small CNN whose weights (37 KB) exceed the BRAM of `board_yaml`: three 3x3 convs
    (one strided), global pooling and a dense layer."""
    b = models.Builder(seed)
    x = b.conv(b.input("x", (1, 16, 6, 6)), 32, 3)
    x = b.conv(x, 64, 3, stride=2)
    x = b.conv(x, 64, 3)
    x = b.flatten(b.gap(x))
    return models._rename_output(b, b.gemm(x, 10), "offchip_cnn")


def board_yaml(bram18: int, lut: int = 80000) -> str:
    """One core of ``bram18`` BRAM18, ``lut`` LUTs and no URAM, one DDR4 channel (an xdma
    platform, so that link.cfg gets its sp lines)."""
    return f"""
name: tinymem
source: test
clock_mhz: 200
platform: xilinx_test_gen3x16_xdma_1_202210_1
cores: [{{id: 0, device: x, dsp: 600, bram18: {bram18}, uram: 0, lut: {lut}, cap: 1.0}}]
memories:
  - {{name: ddr0, kind: ddr4, bandwidth_gbps: 19.2, cores: [0], latency_cycles: 60, ports: 1,
     port_width_bits: 512}}
host: {{kind: pcie, bandwidth_gbps: 12, latency_us: 2}}
"""


@pytest.fixture(scope="module", params=[(12, 12000), (12, 20000)], ids=["two_ddr", "one_ddr"])
def gen_out(request, tmp_path_factory):
    """``gen --offchip-weights`` of `offchip_cnn` on a 12-BRAM18 core with 12,000 LUTs (its two
    middle layers off chip, the small first and last ones built from LUTs) and with 20,000
    LUTs (one layer off chip). Weight memories may be LUTs, so small layers never go off chip."""
    d = tmp_path_factory.mktemp("gen")
    model = models.save(offchip_cnn(), d / "m.onnx")
    (d / "tinymem.yaml").write_text(board_yaml(*request.param))
    rc = main(["gen", model, "--board", str(d / "tinymem.yaml"), "-o", str(d / "out"), "--offchip-weights"])
    assert rc == 0
    return d / "out", model


def _ddr_nodes(out):
    plan = json.loads((out / "plan.json").read_text())
    return plan, [n for n in plan["nodes"] if n["weights"] == "ddr"]


def _layers(out):
    """{node name: layer ident} from the generated layer headers."""
    return {re.search(r"// node: (.*) \(op", p.read_text()).group(1): p.stem for p in (out / "hls").glob("layer*.h")}


def test_plan_keeps_weights_off_chip_and_csim_is_bit_exact(gen_out):
    out, _ = gen_out
    plan, ddr = _ddr_nodes(out)
    assert ddr and plan["cores"][0]["memory"] == "ddr0"
    assert main(["csim", str(out)]) == 0


def test_without_the_option_nothing_is_off_chip(tmp_path):
    model = models.save(offchip_cnn(), tmp_path / "m.onnx")
    (tmp_path / "b.yaml").write_text(board_yaml(40))
    assert main(["gen", model, "--board", str(tmp_path / "b.yaml"), "-o", str(tmp_path / "out")]) == 0
    assert not _ddr_nodes(tmp_path / "out")[1]
    assert not list((tmp_path / "out" / "hls").glob("ddr_weights_*"))


def test_weight_image_is_the_reference_weights_in_word_order(gen_out):
    """hls/ddr_weights_core0.bin: per off-chip layer in graph order, word a = nf·SF + sf of
    pe·simd bytes, lane pe·SIMD + s = W[nf·PE + pe][sf·SIMD + s] (window order ky, kx, c),
    each layer from a 64-byte boundary; the layer headers' OFF say where. After the weights,
    from a 4 KB boundary, each DDR frame stage's zeroed scratch (`STAGE_REGIONS` regions), whose
    written and read frames the node's off-chip bytes also count."""
    from bbgrap_hls.model.stage import STAGE_REGIONS, stage_beat_bytes, stage_region_bytes

    out, model = gen_out
    plan, ddr = _ddr_nodes(out)
    gq = quantize(canonicalize(load_model(model)), seed=0)
    img = np.fromfile(out / "hls" / "ddr_weights_core0.bin", np.int8)
    idents = _layers(out)
    off = scratch = 0
    for n in ddr:
        traffic = 0
        if n.get("in_stage"):
            beats = int(np.prod(gq.shape(gq.act_inputs(gq.node(n["name"]))[0]))) // n["simd"]
            traffic = 2 * beats * stage_beat_bytes(n["simd"])
            scratch += STAGE_REGIONS * stage_region_bytes(beats, n["simd"])
        w = np.asarray(gq.node(n["name"]).attrs["q"]["w"]).astype(np.int8)
        mat = w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1) if w.ndim == 4 else w  # (Co, ky·kx·c)
        pe, simd = n["pe"], n["simd"]
        nf, sf = mat.shape[0] // pe, mat.shape[1] // simd
        want = np.empty(mat.size, np.int8)
        for a in range(nf * sf):
            for p in range(pe):
                for s in range(simd):
                    want[a * pe * simd + p * simd + s] = mat[(a // sf) * pe + p, (a % sf) * simd + s]
        np.testing.assert_array_equal(img[off:off + mat.size], want, err_msg=n["name"])
        assert mat.size + traffic == n["offchip_bytes_per_frame"]
        head = (out / "hls" / f"{idents[n['name']]}.h").read_text()
        assert f"OFF = {off // BEAT}," in head
        off += -(-mat.size // BEAT) * BEAT
    assert img.size == (-(-off // 4096) * 4096 + scratch if scratch else off) and not img[off:].any()


def test_ports_host_and_link_config(gen_out):
    """Every off-chip layer has its m_axi argument in bundle gmem_wddr; the host allocates the
    core's image once, in the bank link.cfg maps all those ports to (the plan core's memory),
    and sets it on each."""
    out, _ = gen_out
    _, ddr = _ddr_nodes(out)
    ports = [f"wddr_{_layers(out)[n['name']]}" for n in ddr]
    cpp = (out / "hls" / "core0.cpp").read_text()
    link = (out / "vitis" / "link.cfg").read_text()
    host = (out / "host" / "host.cpp").read_text()
    spec = json.loads((out / "host" / "design.json").read_text())
    (buf,) = [b for b in spec["buffers"] if b["role"] == "ddr_weights"]
    assert buf["file"] == "ddr_weights_core0.bin" and buf["elems"] == (out / "hls" / buf["file"]).stat().st_size
    args = {a["name"]: a for k in spec["kernels"] for a in k["args"]}
    for p in ports:
        assert f"INTERFACE m_axi port = {p} offset = slave bundle = gmem_wddr" in cpp
        assert f"sp=core0_1.{p}:DDR[0]\n" in link
        assert args[p]["kind"] == "bo" and args[p]["buffer"] == buf["name"]
        assert f"set_arg({args[p]['index']}, {buf['name']});" in host
    assert host.count(f"xrt::bo {buf['name']}(") == 1
    assert "## Off-chip weights" in (out / "vitis" / "README.md").read_text()
    assert f"group_id({buf['arg']})" in host and "/ddr_weights_core0.bin" in host


def test_rtl_twin_builds_offchip_layers(gen_out):
    """The RTL twin now implements off-chip weights (conv_offchip behind an AXI4 read master
    per layer, tests/test_sim_offchip.py simulates it): no layer is left unsupported and
    every off-chip layer has its read master at the top."""
    out, _ = gen_out
    _, ddr = _ddr_nodes(out)
    assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    top = (out / "rtl" / "top.sv").read_text()
    for ident in (_layers(out)[n["name"]] for n in ddr):
        assert f"m_axi_{ident}_araddr" in top, ident
    rtl = json.loads((out / "tb" / "rtl.json").read_text())
    assert len(rtl["axi"]) == len(ddr)


def test_host_cpp_and_driver_py_against_the_reference(gen_out, tmp_path):
    """host.cpp on the XRT stand-in and driver.py's C-simulation backend give the reference."""
    out, model = gen_out
    gq = quantize(canonicalize(load_model(model)), seed=0)
    x = np.random.default_rng(9).standard_normal(gq.shape(gq.inputs[0])).astype(np.float32)
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    flags = ["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"]
    srcs = [*map(str, sorted((out / "hls").glob("core*.cpp"))), str(out / "host" / "sim_kernels.cpp"),
            str(out / "host" / "host.cpp")]
    r = subprocess.run([*flags, "-I", str(out / "hls"), "-I", str(out / "host" / "xrt_sim"), *srcs,
                        "-o", str(tmp_path / "host.exe")], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr[-2000:]
    spec = json.loads((out / "host" / "design.json").read_text())
    ident = next(b["ident"] for b in spec["buffers"] if b["role"] == "input")
    x.tofile(tmp_path / f"x_{ident}.f32")
    r = subprocess.run([str(tmp_path / "host.exe"), str(tmp_path), "design.xclbin", str(out / "hls")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outs = [(b["tensor"], b["ident"]) for b in spec["buffers"] if b["role"] == "output"]
    for t, i in outs:
        np.testing.assert_array_equal(np.fromfile(tmp_path / f"out_{i}.bin", np.int8), env[t].reshape(-1))
    drv_spec = importlib.util.spec_from_file_location("bb_driver_offchip", out / "host" / "driver.py")
    drv = importlib.util.module_from_spec(drv_spec)
    drv_spec.loader.exec_module(drv)
    raw, _ = drv.run(drv.CsimDevice(out / "host"), {gq.inputs[0]: x}, spec, load_weights=False)
    for t, i in outs:
        np.testing.assert_array_equal(raw[i], env[t].reshape(-1))


# Full size (ResNet-18 on a u55c without URAM, gen + threaded csim): bench/offchip_fullsize.py.
