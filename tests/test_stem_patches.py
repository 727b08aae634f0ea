"""The stem conv's window unfolded by the host (passes/stem.py, "Patches"; docs/engine.md,
"Input layouts"): the graph input held as a kernel row's taps (a ``kh x 1`` conv of stride
``(sh, 1)`` reads it) or all ``kh·kw`` taps (a 1 x 1 conv), computing what the model computes
in float (onnxruntime) and in int8 (the same codes); the layer engine's planner keeping it
where it is faster, gen + csim bit-exact, the driver unfolding frames as the graph does, and
the RTL twin bit-exact at the planned frame cycles."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import numpy as np
import onnxruntime as ort
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.ir.graph import Patches
from bbgrap_hls.passes.stem import as_planned, patch_conv, patches_stem
from bbgrap_hls.quant import quantize, run_int8
from bbgrap_hls.quant.execute import quantize_inputs
from bbgrap_hls.reference import run_float
from bbgrap_hls.search.arch import best_engine
from tests import models
from tests.test_stem import STEMS, _graph, stem_model

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def _im2col(x: np.ndarray, k: int, s: int, pad: int, rows: bool) -> np.ndarray:
    """The layout's definition, one position at a time: (1, C, H, W) -> the held input."""
    _, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
    out = np.zeros((1, k * k * c, ho, wo) if rows else (1, k * c, h, wo), x.dtype)
    for xo in range(wo):
        for kx in range(k):
            if not rows:  # every input row, the conv's own vertical padding left to it
                out[0, kx * c:(kx + 1) * c, :, xo] = xp[0, :, pad:pad + h, s * xo + kx]
                continue
            for yo in range(ho):
                for ky in range(k):
                    ch = (ky * k + kx) * c
                    out[0, ch:ch + c, yo, xo] = xp[0, :, s * yo + ky, s * xo + kx]
    return out


@pytest.mark.parametrize("rows", [False, True])
@pytest.mark.parametrize("k,s,pad,c,hw", [*STEMS, (3, 1, 1, 3, 10)])
def test_patched_stem_computes_the_model(tmp_path, k, s, pad, c, hw, rows):
    """The held input is the definition's layout; float outputs equal onnxruntime's on the
    model; int8 codes equal the unrewritten graph's (the unfolded pads quantise to the zero
    point the int8 conv pads with)."""
    model = stem_model(k, s, pad, c, hw)
    g = _graph(model, tmp_path)
    assert patch_conv(g, rows) is not None
    gp = patches_stem(g, rows)
    x = np.random.default_rng(1).standard_normal((1, c, hw, hw)).astype(np.float32)
    assert gp.model_input_shape("x") == (1, c, hw, hw)
    np.testing.assert_array_equal(gp.held_input("x", x), _im2col(x, k, s, pad, rows))
    assert gp.shape("x") == gp.input_patches["x"].shape() == _im2col(x, k, s, pad, rows).shape
    node = gp.node(gp.consumers()["x"][0].name)
    assert node.attrs["kernel"] == ((1, 1) if rows else (k, 1))
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(run_float(gp, {"x": x})[gp.outputs[0]], want, rtol=1e-4, atol=1e-4)
    calib = {"x": np.random.default_rng(2).standard_normal((8, c, hw, hw)).astype(np.float32)}
    q, qp = quantize(g, calib), quantize(gp, calib)
    a = run_int8(q, quantize_inputs(q, {"x": x}))[q.outputs[0]]
    b = run_int8(qp, quantize_inputs(qp, {"x": x}))[qp.outputs[0]]
    np.testing.assert_array_equal(a, b)
    assert Patches.from_dict(json.loads(json.dumps(gp.input_patches["x"].to_dict()))) == gp.input_patches["x"]
    assert as_planned(g, {}, {"x": gp.input_patches["x"].to_dict()}).input_patches == gp.input_patches


def test_stems_that_stay_as_they_are(tmp_path):
    """A 1-wide kernel, a depthwise stem, an input with a second reader, an int8 graph and an
    unfolded width over `MAX_PATCH_CHANNELS` are not unfolded; a plan's patches refused on a
    graph that cannot take them."""
    assert patch_conv(_graph(stem_model(1, 1, 0), tmp_path), False) is None
    assert patch_conv(_graph(stem_model(7, 2, 3, c=8), tmp_path), True) is None  # 392 channels
    assert patch_conv(_graph(stem_model(7, 2, 3, c=8), tmp_path), False) is not None  # 56
    b = models.Builder(0)
    x = b.input("x", (1, 4, 16, 16))
    dw = b.conv(x, 4, 3, 2, pad=1, group=4)
    assert patch_conv(_graph(models._rename_output(b, dw, "dw"), tmp_path), False) is None
    b = models.Builder(0)
    x = b.input("x", (1, 3, 16, 16))
    y = b.binary("Add", b.conv(x, 3, 3, 1, pad=1), x)
    assert patch_conv(_graph(models._rename_output(b, y, "two"), tmp_path), False) is None
    g = _graph(stem_model(3, 2, 1), tmp_path)
    assert patch_conv(quantize(g, seed=0), False) is None
    other = Patches((1, 3, 32, 32), (3, 3), (2, 2), (1, 1, 1, 1), True).to_dict()
    with pytest.raises(ValueError, match="cannot"):
        as_planned(g, {}, {"x": other})


def _net(tmp_path, k: int):
    """A k x k stride-2 stem over 3 channels, two 3 x 3 convs, a classifier (ONNX path)."""
    from tests.families import Net
    from tests.models import _rename_output, save

    b = Net(seed=5)
    x = b.cba(b.input("x", (1, 3, 32, 32)), 16, k, 2)
    x = b.cba(b.cba(x, 16, 3), 32, 3, 2)
    return save(_rename_output(b, b.gemm(b.flatten(b.gap(x)), 10), "stem"), tmp_path / f"stem{k}.onnx")


def test_engine_keeps_the_faster_layout_and_minds_the_link(tmp_path):
    """The engine plan unfolds a 5 x 5 stem's rows on a PYNQ-Z2 (15 channels; 2 x 2 blocks give
    12 with zero taps, the whole window 75 channels in 8-lane blocks) and a 3 x 3 stem's whole
    window on kv260 (27 channels), each faster than the plain graph, the blocks and the other
    unfolding; with a host link too slow for the unfolded input it keeps another layout."""
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.model.engine_plan import plan_engine
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.passes.stem import space_to_depth_stem

    for k, rows, name in ((5, False, "pynq-z2"), (3, True, "kv260")):
        board = load_board(name)
        g = canonicalize(load_model(_net(tmp_path, k)))
        eng = best_engine(g, board, max_batch=1)  # the layouts alone (batching: test_arch)
        assert eng.input_patches["x"]["rows"] is rows and not eng.input_blocks
        others = [plan_engine(g, board).fps, plan_engine(space_to_depth_stem(g), board).fps,
                  plan_engine(patches_stem(g, not rows), board).fps]
        assert eng.fps == plan_engine(patches_stem(g, rows), board).fps > max(others)
        held = patches_stem(g, rows).tensors["x"].size  # bytes of the unfolded input a frame
        assert held == (27 * 16 * 16 if rows else 15 * 32 * 16)
        slow_link = replace(board, host=replace(board.host, bandwidth_gbps=0.9 * held * eng.fps / 1e9))
        slow = best_engine(g, slow_link, max_batch=1)
        assert slow.fps < eng.fps and slow.input_patches.get("x", {}).get("rows") is not rows


@pytest.mark.csim
def test_engine_gen_csim_and_driver(tmp_path, capsys):
    """``gen --arch engine`` writes the plan's patches, csim is bit-exact on model-shaped seed
    frames, ``plan`` says the layout, and the driver unfolds frames as the graph does."""
    from bbgrap_hls.commands.csim import csim_design, int8_graph_of
    from tests.test_engine_gen import load_driver

    for k, board in ((5, "pynq-z2"), (3, "kv260")):
        model = _net(tmp_path, k)
        assert main(["plan", model, "--board", board, "--arch", "engine"]) == 0
        assert "unfolded into channels by the host" in capsys.readouterr().out
        out = tmp_path / f"out{k}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["gen", model, "--board", board, "-o", str(out), "--quiet", "--arch", "engine"]) == 0
        plan = json.loads((out / "plan.json").read_text())
        assert plan["input_patches"]["x"]["rows"] is (k == 3)
        res = csim_design(out)
        assert res.match, res.message
        driver = load_driver(out)
        frames = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
        np.testing.assert_array_equal(driver.held(frames), int8_graph_of(out).held_input("x", frames))


@pytest.mark.sim
@pytest.mark.slow
def test_engine_twin_at_the_plan(tmp_path, capsys, monkeypatch):
    """The RTL twin of the 5 x 5 stem unfolded by rows on a PYNQ-Z2 (a 5 x 1 conv of stride
    (2, 1) over 15 channels): bit-exact, every frame's cycles equal to the plan's."""
    from tests.test_engine_sim import CACHE

    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["gen", _net(tmp_path, 5), "--board", "pynq-z2", "-o", str(out), "--quiet", "--arch", "engine"]) == 0
    assert json.loads((out / "plan.json").read_text())["input_patches"]["x"]["rows"] is False
    pytest.importorskip("cocotb")
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(CACHE))  # builds beside the other engine twins'
    capsys.readouterr()
    assert main(["sim", str(out)]) == 0
    text = capsys.readouterr().out
    assert "bit-exact" in text and ": equal" in text, text


def test_auto_skips_layouts_that_cannot_beat_the_dataflow_plan(tmp_path):
    """Under ``--arch auto`` (``floor``: the dataflow plan's fps) the other layouts are planned
    only when the plain engine, its stem step free, would pass the floor."""
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.search.arch import _stem_free_fps

    board = load_board("kv260")
    g = canonicalize(load_model(_net(tmp_path, 3)))
    plain = best_engine(g, board, floor=1e12)
    assert not plain.input_patches and not plain.input_blocks
    free = _stem_free_fps(plain, g)
    assert free > plain.fps
    assert best_engine(g, board, floor=free).fps == plain.fps
    assert best_engine(g, board, floor=0.999 * free).input_patches["x"]["rows"] is True
