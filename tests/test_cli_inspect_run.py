"""`bbgrap-hls inspect` and `bbgrap-hls run`, in-process through `cli.main` (and once as a
subprocess through the console script)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.cli import main
from bbgrap_hls.frontend import load_model
from bbgrap_hls.ops import get_op
from bbgrap_hls.reference import run_float
from tests import model_builder, models


def _json(capsys, argv) -> tuple[int, dict]:
    rc = main(argv)
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["lenet", "resnet8", "se_block", "channel_shuffle"])
def test_inspect_json_totals(name, model_file, capsys):
    rc, info = _json(capsys, ["inspect", model_file(name), "--json"])
    assert rc == 0
    assert isinstance(info["macs"], int) and info["macs"] == sum(n["macs"] for n in info["nodes"])
    assert info["params"] == sum(n["params"] for n in info["nodes"])
    for n in info["nodes"]:
        assert set(n) >= {"name", "op", "inputs", "outputs", "shape", "macs"}
    # MACs are kept by canonicalisation: the loaded graph's count is the same.
    graph = load_model(model_file(name))
    assert info["macs"] == sum(get_op(n.op).macs(n, graph) for n in graph.nodes)
    rc, loaded = _json(capsys, ["inspect", model_file(name), "--json", "--loaded"])
    assert loaded["macs"] == info["macs"] and not loaded["canonical"]


def test_inspect_host_ops_and_table(model_file, capsys):
    rc, info = _json(capsys, ["inspect", model_file("resnet8"), "--json"])
    soft = [n for n in info["nodes"] if n["op"] == "Softmax"]
    assert info["host_ops"] == [soft[0]["name"]] and soft[0]["host"]
    assert main(["inspect", model_file("resnet8")]) == 0
    out = capsys.readouterr().out
    assert f"total: {info['macs']:,} MACs" in out and f"host ops: {soft[0]['name']} (Softmax)" in out


def test_inspect_resnet18_macs(model_file, capsys):
    rc, info = _json(capsys, ["inspect", model_file("resnet18"), "--json"])
    assert abs(info["macs"] - 1.81e9) <= 0.01 * 1.81e9


def _with_unsupported(tmp_path) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Erf", ["m"], ["e"], name="erf1"),
             helper.make_node("Relu", ["e"], ["y"], name="relu")]
    m = helper.make_model(helper.make_graph(nodes, "u", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 13)])
    return models.save(m, tmp_path / "u.onnx")


def test_inspect_unsupported_lists_and_exits_2(tmp_path, capsys):
    path = _with_unsupported(tmp_path)
    assert main(["inspect", path, "--json"]) == 2
    cap = capsys.readouterr()
    info = json.loads(cap.out)
    assert [n["name"] for n in info["nodes"]] == ["mm"]
    assert info["unsupported"] == [{"op": "Erf", "node": "erf1"}]
    assert "Erf (first at node 'erf1')" in cap.err and cap.err.count("\n") == 1


@pytest.mark.parametrize("argv_tail", [[], ["--json"]])
def test_inspect_bad_file_one_line(argv_tail, tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not onnx at all")
    assert main(["inspect", str(bad), *argv_tail]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bbgrap-hls inspect: error:") and err.count("\n") == 1 and "Traceback" not in err


def test_run_one_input_matches_reference(model_file, tmp_path, capsys):
    path = model_file("lenet")
    x = models.random_input(onnx.load(path), 3)["x"]
    np.save(tmp_path / "x.npy", x)
    assert main(["run", path, "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy")]) == 0
    y = np.load(tmp_path / "y.npy")
    want = run_float(load_model(path), {"x": x})["y"]
    np.testing.assert_array_equal(y, want)
    out = capsys.readouterr().out
    assert out.startswith("y: shape 1x10 float32") and f"argmax {int(want.argmax())}" in out


def _two_io(tmp_path) -> str:
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 6])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 6])
    nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["r"], name="relu"),
             helper.make_node("Sigmoid", ["s"], ["q"], name="sig")]
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 6]) for o in ("r", "q")]
    m = helper.make_model(helper.make_graph(nodes, "two", [a, b], outs), opset_imports=[helper.make_opsetid("", 13)])
    return models.save(m, tmp_path / "two.onnx")


def test_run_npz_in_and_out(tmp_path, capsys):
    path = _two_io(tmp_path)
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal((1, 6)).astype(np.float32) for k in ("a", "b")}
    np.savez(tmp_path / "x.npz", **feeds)
    assert main(["run", path, "--input", str(tmp_path / "x.npz"), "-o", str(tmp_path / "y.npz")]) == 0
    with np.load(tmp_path / "y.npz") as y:
        assert sorted(y.files) == ["q", "r"]
        np.testing.assert_array_equal(y["r"], np.maximum(feeds["a"] + feeds["b"], 0))
    assert capsys.readouterr().out.count("\n") == 2


@pytest.mark.parametrize(("kind", "words"), [
    ("npy_for_two", "use a .npz"),
    ("unknown_key", "name no model input"),
    ("missing_key", "input 'b' is missing"),
    ("no_file", "no such input file"),
    ("garbage", "not a readable"),
    ("npy_out_for_two", "write them to a .npz"),
    ("calib_without_int8", "go with --int8"),
])
def test_run_bad_inputs(kind, words, tmp_path, capsys):
    path = _two_io(tmp_path)
    x = np.zeros((1, 6), np.float32)
    inp, out, extra = tmp_path / "x.npz", [], []
    if kind == "npy_for_two":
        inp = tmp_path / "x.npy"
        np.save(inp, x)
    elif kind == "unknown_key":
        np.savez(inp, a=x, b=x, zz=x)
    elif kind == "missing_key":
        np.savez(inp, a=x)
    elif kind == "garbage":
        inp = tmp_path / "x.npy"
        inp.write_bytes(b"garbage")
    elif kind in ("npy_out_for_two", "calib_without_int8"):
        np.savez(inp, a=x, b=x)
        out = ["-o", str(tmp_path / "y.npy")] if kind == "npy_out_for_two" else []
        extra = ["--calib", str(inp)] if kind == "calib_without_int8" else []
    assert main(["run", path, "--input", str(inp), *out, *extra]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_run_input_shape_fixes_dynamic_batch(tmp_path, capsys):
    m = model_builder.node_model("Relu", [(1, 5)])
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "N"
    path = models.save(m, tmp_path / "dyn.onnx")
    np.save(tmp_path / "x.npy", -np.ones((2, 5), np.float32))
    assert main(["run", path, "--input", str(tmp_path / "x.npy")]) == 2
    assert "--input-shape x0=Nx5" in capsys.readouterr().err
    assert main(["run", path, "--input", str(tmp_path / "x.npy"), "--input-shape", "x0=2x5"]) == 0
    assert capsys.readouterr().out.startswith("y0: shape 2x5 float32 min 0 max 0")


def test_console_script_subprocess(model_file, tmp_path):
    exe = shutil.which("bbgrap-hls")
    if exe is None:
        pytest.skip("console script not installed")
    ok = subprocess.run([exe, "inspect", model_file("ds_block"), "--json"], capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout)["macs"] > 0
    bad = subprocess.run([exe, "inspect", str(tmp_path / "missing.onnx")], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "no such file" in bad.stderr and "Traceback" not in bad.stderr
