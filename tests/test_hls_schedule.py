"""Kernel schedules that match the cost model (issue 15 item 3, docs/codegen.md "Kernel
schedules").

The threaded csim counts every process's pipelined-loop iterations × II (BB_PIPELINE); the
steady state per frame is the difference of a run at 13× the vectors and one at 1×, per frame.
`bbgrap_hls.codegen.schedule` gives each process a static bound from its kernel's loop nest
(trip counts × II, phases added, the window blocks' read/emit schedule, memory ports per
partition). Both must stay within 5 % of the plan's ii of the process's block (the design's
ii for plumbing) on every test design; a kernel slowed by a planted loop, a row buffer
without read-ahead and the old row-buffer layout are caught.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.codegen import schedule
from bbgrap_hls.codegen.names import comment
from bbgrap_hls.commands.csim import csim_design
from tests import models

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]

FAST = [("residual_block", "u250"), ("ds_block", "u250"), ("lenet", "u250"), ("mlp", "u250"),
        ("se_block", "vu9p-quad"), ("inception_block", "u250"), ("alexnet_tiny", "u250")]
SLOW = [("resnet8", "u250"), ("resnet8", "2x-u250"), ("ds_cnn", "u250"), ("channel_shuffle", "u250"),
        ("mobilenet_v1", "u250"), ("mlp_autoencoder", "u250"), ("shufflenet_tiny", "u250"), ("yolo_tiny", "u250")]
MODELS = {**models.ALL, **models.FAMILIES, **models.LRN}


def _gen(tmp_path, model: str, board: str):
    out = tmp_path / "out"
    path = models.save(MODELS[model](seed=0), tmp_path / f"{model}.onnx")
    assert main(["gen", path, "--board", board, "-o", str(out), "--force", "--arch", "dataflow"]) == 0
    return out


def _check(out):
    res = csim_design(out, schedule=True)
    assert res.ok, res.message
    plan = json.loads((out / "plan.json").read_text())
    rows = res.schedule
    assert rows
    for r in rows:
        assert r["counted"] is not None, r  # every modelled process ran and counted
        lim = r["plan_ii"] * (1 + schedule.TOLERANCE)
        assert r["counted"] <= lim and r["bound"] <= lim and not r["over"], r
        assert r["port_ii"] == 1, r
        # the C++ loops (counted) and their Python mirror (bound) describe one schedule; they
        # differ only by conv_mvu_mmv's first group, read before its loop, and last group,
        # written after it (once per call, so not in the steady state)
        assert r["counted"] == pytest.approx(r["bound"], rel=0.001), r
    # every layer of the design whose kernel the bound models (layer<n>.h names its plan
    # node) has its processes checked against its own block's ii, which the plan has
    named = set()
    for _, kern, ident in schedule.layer_calls(out):
        m = re.search(r"^// node: (.*) \(op \w+\)$", (out / "hls" / f"{ident}.h").read_text(), re.M)
        if kern in schedule.MODELLED:
            named.add(m.group(1))
    checked = {r["node"] for r in rows}
    assert named and named <= checked, named - checked
    node_ii = {comment(n["name"]): n["ii_cycles"] for n in plan["nodes"]}
    assert all(r["plan_ii"] == node_ii[r["node"]] for r in rows if r["node"] and node_ii[r["node"]])
    return rows


@pytest.mark.parametrize("model, board", FAST)
def test_block_cycles_within_plan(tmp_path, model, board):
    _check(_gen(tmp_path, model, board))


@pytest.mark.slow
@pytest.mark.parametrize("model, board", SLOW)
def test_network_block_cycles_within_plan(tmp_path, model, board):
    rows = _check(_gen(tmp_path, model, board))
    if model == "resnet8":  # the figure: conv processes were at >= 2,432 against 1,536
        convs = [r for r in rows if r["label"].startswith("conv_")]
        assert convs and max(r["counted"] for r in convs) <= max(r["plan_ii"] for r in convs)


def test_planted_sequential_loop_is_caught(tmp_path):
    """A copy of the residual block's design whose conv_mvu runs an extra pipelined loop of one
    iteration per output pixel before its folds (a sequential phase the plan does not have):
    the csim still passes bit-exact, and the schedule check flags every process running it
    (conv2d's conv_mvu, and conv2d_pairs' with one output pixel a beat, conv_pairs_mvu1)."""
    out = _gen(tmp_path, "residual_block", "u250")
    slow = tmp_path / "slow"
    shutil.copytree(out, slow, ignore=shutil.ignore_patterns(".csim"))
    h = slow / "hls" / "conv2d.h"
    text = h.read_text()
    anchor = "BB_LOOP(mvu_px)\n"
    assert text.count(anchor) == 1
    h.write_text(text.replace(anchor, "for (long e = 0; e < static_cast<long>(frames) * G::HO * G::WO; ++e) {\n"
                                      "    BB_PIPELINE(1)\n  }\n" + anchor))
    res = csim_design(slow, schedule=True)
    assert res.ok and "SCHEDULE: " in res.message, res.message
    over = [r for r in res.schedule if r["over"]]
    runs = {"conv_mvu<P>", "conv_pairs_mvu1<P>"}
    assert over and all(r["label"] in runs for r in over), over
    mvus = [r for r in res.schedule if r["label"] in runs]
    assert {r["id"] for r in over} == {r["id"] for r in mvus if r["counted"] * 1.0 > r["plan_ii"] * 1.05}
    # the unchanged design is clean
    assert not any(r["over"] for r in csim_design(out, schedule=True).schedule)


def test_csim_json_reports_schedule(tmp_path, capsys):
    out = _gen(tmp_path, "ds_block", "u250")
    capsys.readouterr()
    assert main(["csim", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["match"] and d["schedule"] and d["processes"]
    ids = {p["id"] for p in d["processes"]}
    assert all(r["id"] in ids and set(r) >= {"counted", "bound", "plan_ii", "over", "node"} for r in d["schedule"])


@pytest.mark.parametrize("kh, sh, hp, eb", [(3, 1, 34, 32), (3, 2, 34, 16 * 9), (8, 8, 8, 1024), (1, 2, 16, 64),
                                           (3, 1, 10, 72)])
def test_row_buffer_read_ahead(kh, sh, hp, eb):
    """The window schedule with bb_window.h's ROWS reaches the cost model's
    max(Hp·Wp·C/L, Ho·(beats per output row)) per frame, across frames too."""
    wp = hp
    ho = (hp - kh) // sh + 1
    assert schedule.window_cycles(hp, wp, 1, kh, 1, sh, eb) == max(hp * wp, ho * eb)


@pytest.mark.parametrize("kh, sh, hp, eb", [(3, 2, 34, 16 * 9), (8, 8, 8, 1024)])
def test_row_buffer_without_room_is_caught(kh, sh, hp, eb):
    """A buffer of one row more than the window (no room for the next frame's first window,
    or for a strided row's SH new rows) is more than 5 % slower than the model: the bound
    would flag a kernel built that way."""
    ho = (hp - kh) // sh + 1
    assert schedule.window_cycles(hp, hp, 1, kh, 1, sh, eb, rows=kh + 1) > 1.05 * max(hp * hp, ho * eb)


def test_port_count_catches_the_old_row_buffer():
    """The row buffer before this change, `rows[R][Wp·C]` with dim 1 complete and dim 2 cyclic
    by C, read at a run-time row for each of a parallel window's 9 taps (C = 3, SIMD = 27):
    every row memory may be read by every tap, far more than two ports (II > 1). The present
    layout (bb_window.h) is one read and one write per memory."""
    c, r, wp = 3, 3, 34
    taps = [(None, ("x", c, ch)) for _ in range(9) for ch in range(c)]
    writes = [(None, ("x", c, ch)) for ch in range(c)]
    old = schedule.port_ii([((r, wp * c), ("complete", f"cyclic{c}"), taps + writes)])
    assert old >= 5
    assert schedule._window_ports(9, c, 6 * wp) == 1
    # pool2d.h's rows had no partition at all: L lanes from one memory per cycle
    lanes = 4
    assert schedule.port_ii([((8 * 8 * 16, lanes), ("none", "none"), [(None, p) for p in range(lanes)] * 2)]) == 4


def test_window_bound_matches_count_on_a_design(tmp_path):
    """The static bound of each window block equals its counted cycles (two independent
    computations of one schedule): on the residual block's design."""
    out = _gen(tmp_path, "residual_block", "u250")
    rows = csim_design(out, schedule=True).schedule
    win = [r for r in rows if re.match(r"conv_swg|maxpool|avgpool|dwconv", r["label"])]
    assert win
    for r in win:
        assert r["bound"] == pytest.approx(r["counted"], rel=0.02), r


# (name, H, W, C, KH, SH, DH, pad, SIMD or lanes, CO/PE or J): window loops run alone in the
# sequential build (all input present, output unbounded: no stall), iterations counted
WINDOWS = [
    ("conv", 8, 8, 4, 3, 1, 1, 1, 4, 0), ("conv", 9, 7, 4, 3, 2, 1, 1, 2, 0), ("conv", 8, 8, 3, 3, 1, 1, 1, 27, 0),
    ("conv", 10, 10, 4, 3, 1, 2, 2, 4, 0), ("conv", 8, 8, 8, 1, 2, 1, 0, 8, 0), ("conv", 6, 6, 2, 5, 1, 1, 2, 2, 0),
    ("max", 8, 8, 4, 2, 2, 1, 0, 2, 0), ("avg", 8, 8, 8, 8, 8, 1, 0, 4, 0), ("max", 9, 9, 4, 3, 2, 1, 1, 4, 0),
    ("dw", 8, 8, 4, 3, 1, 1, 1, 4, 1), ("dw", 8, 8, 4, 3, 2, 1, 1, 2, 3),
]


def _window_cpp(cases, fields=None) -> str:
    """The iteration-counting program of ``cases``; ``fields[i]`` (optional) are extra fields of
    case i's struct (a ROWS short ring, RING_URAM)."""
    out = ["static long g_iters = 0;", "#define BB_PIPELINE_OVERLAP(n) ++g_iters;", '#include "conv2d.h"',
           '#include "pool2d.h"', '#include "dwconv2d.h"', "#include <cstdio>"]
    mains = []
    for i, (kind, h, w, c, k, s, d, pad, lanes, j) in enumerate(cases):
        geo = (f"H = {h}, W = {w}, C = {c}, KH = {k}, KW = {k}, SH = {s}, SW = {s}, DH = {d}, DW = {d}, "
               f"PT = {pad}, PL = {pad}, PB = {pad}, PR = {pad}")
        if fields and fields[i]:
            geo += f", {fields[i]}"
        if kind == "conv":
            out.append(f"struct P{i} {{ static constexpr int {geo}, CO = 2, PE = 2, SIMD = {lanes}, ZP_IN = 0; }};")
            inl, call = min(lanes, c), f"bb::conv_swg<P{i}>(in, o, f);"
            outl = lanes
        elif kind in ("max", "avg"):
            extra = ", ZP_IN = 0, ZP_OUT = 0, LO = -128, HI = 127, COUNT_PAD = 0" if kind == "avg" else ""
            out.append(f"struct P{i} {{ static constexpr int {geo}, LANES = {lanes}{extra}; }};")
            if kind == "avg":
                out.append(f"static int32_t m{i}[{k * k + 1}] = {{}}, s{i}[{k * k + 1}] = {{}};")
            inl = outl = lanes
            call = (f"bb::maxpool2d<P{i}>(in, o, f);" if kind == "max"
                    else f"bb::avgpool2d<P{i}>(in, o, m{i}, s{i}, f);")
        else:
            out.append(f"struct P{i} {{ static constexpr int {geo}, LANES = {lanes}, SIMD = {lanes * j}, "
                       "ZP_IN = 0, ZP_OUT = 0, LO = -128, HI = 127; };")
            out.append(f"static bb::Word<{lanes * j}> w{i}[{c // lanes * k * k // j}] = {{}};")
            out.append(f"static int32_t b{i}[{lanes}][{c // lanes}] = {{}};")
            inl = outl = lanes
            call = f"bb::dwconv2d<P{i}>(in, o, w{i}, b{i}, b{i}, b{i}, f);"
        out.append(f"long run{i}(int f) {{\n  bb::Stream<{inl}> in; bb::Stream<{outl}> o;\n"
                   f"  for (long b = 0; b < static_cast<long>(f) * {h * w * c // inl}; ++b) in.write(bb::Beat<{inl}>{{}});\n"
                   f"  g_iters = 0;\n  {call}\n  return g_iters;\n}}")
        mains.append(f'  std::printf("%ld %ld\\n", run{i}(2), run{i}(4));')
    out.append("int main() {\n" + "\n".join(mains) + "\n  return 0;\n}")
    return "\n".join(out) + "\n"


def _window_counts(tmp_path, hls) -> list[tuple[float, float, float]]:
    """Per WINDOWS case: the C++ loop's steady iterations per frame (frames 3 and 4 of a run,
    built against the kernel library in ``hls``), the bound's, the cost model's."""
    from bbgrap_hls.codegen.csim import CXXFLAGS

    src = tmp_path / "win.cpp"
    src.write_text(_window_cpp(WINDOWS))
    exe = tmp_path / "win"
    subprocess.run(["g++", *CXXFLAGS, "-Werror", "-I", str(hls), str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    res = []
    for (kind, h, w, c, k, s, d, pad, lanes, j), ln in zip(WINDOWS, lines, strict=False):
        two, four = map(int, ln.split())
        hp, wp = h + 2 * pad, w + 2 * pad
        khe = (k - 1) * d + 1
        ho, wo = (hp - khe) // s + 1, (wp - khe) // s + 1
        cb = c // min(lanes, c)
        if kind == "conv":
            beats = k * k * c // lanes  # SF window beats per pixel
        elif kind == "dw":
            beats = c // lanes * (k * k // j)  # CF blocks of KF tap groups
        else:
            beats = c // lanes * k * k  # CF blocks of K taps
        res.append(((four - two) / 2, schedule.window_cycles(hp, wp, cb, k, d, s, wo * beats),
                    max(hp * wp * cb, ho * wo * beats)))
    return res


def test_window_loop_iterations_match_the_bound(tmp_path):
    """The window loops of conv_swg, the pools and dwconv2d (the C++, run alone without stalls)
    take, per frame in steady state, the iterations `schedule.window_cycles` computes for them
    and the cost model's max(Hp·Wp·C/L, Ho·Wo·beats): the C++ and the bound agree on the row
    buffer's ROWS and the read/emit rule."""
    from tests.test_hls_kernels import hls_dir

    for case, (counted, bound, model) in zip(WINDOWS, _window_counts(tmp_path, hls_dir()), strict=True):
        assert counted == bound == model, case


def test_window_buffer_too_small_is_caught(tmp_path):
    """A kernel library whose row buffer holds one row more than the window (a planted edit
    of bb_window.h in a copy) makes the strided, dilated and whole-frame window loops more
    than 5 % slower than the bound and the model: the row-buffer regression is caught."""
    from tests.test_hls_kernels import hls_dir

    hls = tmp_path / "hls"
    shutil.copytree(hls_dir(), hls)
    h = hls / "bb_window.h"
    text = h.read_text()
    old = "  return (hp - khe) % sh + khe > sh ? (hp - khe) % sh + 2 * khe : khe + sh;"
    assert text.count(old) == 1
    h.write_text(text.replace(old, "  return sh > 0 && hp > 0 ? khe + 1 : 0;"))
    slow = [case for case, (counted, bound, _) in zip(WINDOWS, _window_counts(tmp_path, hls), strict=True)
            if counted > 1.05 * bound]
    # strided, dilated and whole-frame windows: 6 of the 11 cases
    assert len(slow) >= 3 and any(case[0] == "avg" for case in slow) and any(case[5] > 1 for case in slow), slow


# (WINDOWS-style case, its ROWS field or "", R): a ring in URAM words of R ring words, IN or
# LANES lanes (1, 2, 4, 8), with and without a short ring, a parallel window's copies
RING_TWINS = [
    (("conv", 8, 8, 4, 3, 1, 1, 1, 1, 0), "", 4), (("conv", 9, 7, 8, 3, 2, 1, 1, 2, 0), "ROWS = 5", 4),
    (("conv", 10, 10, 8, 3, 1, 2, 2, 4, 0), "", 2), (("conv", 8, 8, 8, 1, 2, 1, 0, 8, 0), "", 1),
    (("conv", 8, 8, 2, 3, 1, 1, 1, 6, 0), "", 1), (("max", 8, 8, 8, 2, 2, 1, 0, 2, 0), "ROWS = 4", 4),
    (("max", 9, 9, 8, 3, 2, 1, 1, 2, 0), "", 4), (("avg", 8, 8, 8, 8, 8, 1, 0, 1, 0), "", 8),
    (("dw", 8, 8, 8, 3, 1, 1, 1, 1, 1), "ROWS = 4", 8), (("dw", 8, 8, 16, 3, 2, 1, 1, 1, 3), "", 8),
]


def test_uram_ring_takes_the_same_iterations(tmp_path):
    """A window block with its ring in URAM words (RING_URAM, bb_window.h) takes exactly the
    window loop iterations of its twin without (two and four frames): the gather register
    changes no schedule."""
    from bbgrap_hls.codegen.csim import CXXFLAGS
    from tests.test_hls_kernels import hls_dir

    cases = [c for c, _, _ in RING_TWINS]
    fields = [rows for _, rows, _ in RING_TWINS]
    fields += [", ".join(f for f in (rows, f"RING_URAM = {r}") if f) for _, rows, r in RING_TWINS]
    src = tmp_path / "ring.cpp"
    src.write_text(_window_cpp(cases + cases, fields))
    exe = tmp_path / "ring"
    subprocess.run(["g++", *CXXFLAGS, "-Werror", "-I", str(hls_dir()), str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    n = len(RING_TWINS)
    for i, case in enumerate(RING_TWINS):
        assert lines[i] == lines[n + i] and int(lines[i].split()[0]) > 0, (case, lines[i], lines[n + i])
