"""Every error path of the command line: exit code, one clear line, no traceback.

Each case runs ``bbgrap_hls.cli.main`` in-process and checks the documented exit code
(docs/errors.md) and that stderr holds exactly one ``bbgrap-hls CMD: error: ...`` line
(warnings, one line each, may precede it) and no traceback. Two cases run the installed
entry point through a subprocess. The models are built here (tests/models.py and
onnx.helper); boards are bundled ones or edited copies of ``pynq-z2``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.cli import main
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.frontend.onnx_loader import MAX_NODES
from tests import models

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


# -- helpers ---------------------------------------------------------------------------

def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse usage errors
        rc = e.code if isinstance(e.code, int) else 2
    out, err = capsys.readouterr()
    return rc, out, err


def error_line(err: str, cmd: str) -> str:
    """The single error line of ``err`` (asserting there is exactly one and no traceback)."""
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    others = [ln for ln in lines if not ln.startswith(f"bbgrap-hls {cmd}: warning: ")]
    assert len(others) == 1, f"expected one error line, got:\n{err}"
    assert others[0].startswith(f"bbgrap-hls {cmd}: error: "), others[0]
    return others[0]


def expect(argv: list[str], capsys, code: int, *fragments: str) -> str:
    rc, _, err = cli(argv, capsys)
    assert rc == code, err
    line = error_line(err, argv[0])
    for f in fragments:
        assert f in line, line
    return line


def _save(nodes, inits, path: Path, ins, outs, opset: int = 13, check: bool = True) -> str:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in ins],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = min(m.ir_version, 8)
    onnx.save(m, path)
    return str(path)


# -- fixtures ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mdir(tmp_path_factory) -> Path:
    """A folder of good and broken model, board and array files."""
    d = tmp_path_factory.mktemp("errors")
    models.save(models.mlp(sizes=(16, 8, 4)), d / "mlp.onnx")
    good = (d / "mlp.onnx").read_bytes()
    (d / "garbage.onnx").write_bytes(b"this is not a protobuf \xff\xfe" * 8)
    (d / "truncated.onnx").write_bytes(good[: len(good) // 2])
    (d / "empty.onnx").write_bytes(b"")
    (d / "a_folder.onnx").mkdir()
    relu = helper.make_node
    _save([relu("Add", ["x", "b"], ["a"], name="n1"), relu("Relu", ["a"], ["b"], name="n2")], [],
          d / "cyclic.onnx", [("x", [1, 4])], [("b", [1, 4])])
    _save([relu("Relu", ["x"], ["y"], name="r")], [], d / "dynamic.onnx", [("x", ["N", 4])], [("y", ["N", 4])])
    _save([relu("Det", ["x"], ["y"], name="det")], [], d / "unsupported.onnx", [("x", [4, 4])], [("y", [])])
    _save([relu("Relu", ["x"], ["y"], name="r")], [], d / "huge_input.onnx",
          [("x", [1, 1, 10000, 10000])], [("y", [1, 1, 10000, 10000])])
    # A 1e6 x 1e6 Gemm weight: too big for a protobuf, so built by ConstantOfShape.
    shp = numpy_helper.from_array(np.array([10**6, 10**6], np.int64), "s")
    _save([relu("ConstantOfShape", ["s"], ["w"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5]),
                name="weights"), relu("MatMul", ["x", "w"], ["y"], name="mm")], [shp],
          d / "huge_gemm.onnx", [("x", [1, 10**6])], [("y", [1, 10**6])])
    lying = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[10**6, 10**6], raw_data=b"\0" * 16)
    _save([relu("MatMul", ["x", "w"], ["y"], name="mm")], [lying], d / "lying_initializer.onnx",
          [("x", [1, 10**6])], [("y", [1, 10**6])])
    ext = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    e = ext.external_data.add()
    e.key, e.value = "location", "../../../../etc/passwd"
    _save([relu("MatMul", ["x", "w"], ["y"], name="mm")], [ext], d / "external_escape.onnx",
          [("x", [1, 4])], [("y", [1, 4])])
    n = MAX_NODES + 1
    _save([relu("Relu", [f"t{i}" if i else "x"], [f"t{i + 1}"], name=f"r{i}") for i in range(n)], [],
          d / "many_nodes.onnx", [("x", [1, 4])], [(f"t{n}", [1, 4])])
    # boards
    base = (resources.files("bbgrap_hls.boards") / "pynq-z2.yaml").read_text()
    # tiny: short of DSPs, and of the LUTs that LUT requantisers would take instead (planned
    # when the DSPs are short: docs/cost-model.md, "LUT requantisers")
    for name, text in {"tiny": base.replace("dsp: 220", "dsp: 1").replace("bram18: 280", "bram18: 1")
                       .replace("lut: 53200", "lut: 1000"),
                       "bad_value": base.replace("dsp: 220", "dsp: many"),
                       "missing_key": "\n".join(ln for ln in base.splitlines() if not ln.startswith("name:")),
                       "bad_yaml": "name: [unclosed\n",
                       "duplicate_key": base.replace("clock_mhz: 100", "clock_mhz: 100\nclock_mhz: 200"),
                       "bad_cap": base.replace("cap: 0.8", "cap: 1.8"),
                       "bad_core_ref": base.replace("    cores: [0]", "    cores: [7]"),
                       "empty": "", "not_mapping": "- 1\n- 2\n"}.items():
        (d / f"{name}.yaml").write_text(text)
    # arrays (the model input is (1, 16))
    np.save(d / "good.npy", np.zeros((1, 16), np.float32))
    np.save(d / "nan.npy", np.full((1, 16), np.nan, np.float32))
    np.save(d / "inf.npy", np.full((1, 16), np.inf, np.float32))
    np.save(d / "calib_nan.npy", np.full((4, 16), np.nan, np.float32))
    np.save(d / "calib_shape.npy", np.zeros((4, 15), np.float32))
    np.save(d / "shape.npy", np.zeros((1, 15), np.float32))
    np.save(d / "strings.npy", np.array(["a"] * 16))
    np.save(d / "calib_strings.npy", np.array([["a"] * 16] * 4))
    np.save(d / "pickled.npy", np.array([{}], dtype=object), allow_pickle=True)
    np.save(d / "calib_empty.npy", np.zeros((0, 16), np.float32))
    (d / "not_npy.npy").write_text("zz")
    return d


@pytest.fixture(scope="module")
def gen_out(mdir) -> Path:
    """A folder written by ``gen`` for the small MLP."""
    out = mdir / "gen_out"
    assert main(["gen", str(mdir / "mlp.onnx"), "--board", "u250", "-o", str(out), "--strategy", "single"]) == 0
    return out


# -- bad model ----------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["inspect", "plan"])
@pytest.mark.parametrize("case,fragment", [
    ("missing", "no such file"),
    ("a_folder", "is a folder"),
    ("garbage", "not an ONNX model"),
    ("truncated", "not an ONNX model"),
    ("empty", "not an ONNX model"),
    ("cyclic", "topologically sorted"),
    ("dynamic", "dynamic dimensions"),
    ("unsupported", "unsupported operators: Det (first at node 'det')"),
    ("huge_input", "too large"),
    ("huge_gemm", "too large"),
    ("lying_initializer", "too small for the declared shape"),
    ("external_escape", "outside"),
    ("many_nodes", f"more than the {MAX_NODES} supported"),
])
def test_bad_model(mdir, capsys, cmd, case, fragment):
    argv = [cmd, str(mdir / f"{case}.onnx")] + (["--board", "u250"] if cmd == "plan" else [])
    expect(argv, capsys, 2, fragment)


@pytest.mark.parametrize("spec,fragment", [
    ("x=0x4", "positive integers"),
    ("x=axb", "positive integers"),
    ("1x4", "NAME=DxDx"),
    ("x=1x4x4", "does not fit"),
])
def test_bad_input_shape(mdir, capsys, spec, fragment):
    expect(["inspect", str(mdir / "dynamic.onnx"), "--input-shape", spec], capsys, 2, fragment)


def test_input_shape_names_no_input(mdir, capsys):
    expect(["inspect", str(mdir / "mlp.onnx"), "--input-shape", "nope=1x16"], capsys, 2, "names no model input")


def test_dynamic_fixed_by_input_shape(mdir, capsys):
    rc, _, err = cli(["inspect", str(mdir / "dynamic.onnx"), "--input-shape", "x=2x4"], capsys)
    assert rc == 0, err


# -- bad board ----------------------------------------------------------------------------

@pytest.mark.parametrize("board,fragment", [
    ("nope", "unknown board 'nope'"),
    ("missing.yaml", "board file not found"),
    ("bad_value.yaml", "cores[0].dsp: expected a non-negative integer, got 'many'"),
    ("missing_key.yaml", "name: missing required key"),
    ("bad_yaml.yaml", "invalid YAML"),
    ("duplicate_key.yaml", "duplicate key 'clock_mhz'"),
    ("bad_cap.yaml", "cores[0].cap"),
    ("bad_core_ref.yaml", "memories[0].cores[0]"),
    ("empty.yaml", "the file is empty"),
    ("not_mapping.yaml", "not_mapping.yaml"),
])
def test_bad_board(mdir, capsys, board, fragment):
    b = board if board == "nope" else str(mdir / board)
    expect(["plan", str(mdir / "mlp.onnx"), "--board", b], capsys, 2, fragment)


def test_board_is_folder(mdir, capsys):
    expect(["plan", str(mdir / "mlp.onnx"), "--board", str(mdir) + "/"], capsys, 2, str(mdir))


# -- bad calibration and input files ---------------------------------------------------------

@pytest.mark.parametrize("calib,fragment", [
    ("missing.npy", "no such calibration file"),
    ("not_npy.npy", "not a readable"),
    ("pickled.npy", "not a readable"),
    ("calib_nan.npy", "NaN or Inf"),
    ("calib_shape.npy", "has shape (4, 15)"),
    ("calib_strings.npy", "expected a numeric array"),
    ("calib_empty.npy", "no samples"),
])
def test_bad_calibration(mdir, capsys, tmp_path, calib, fragment):
    out = tmp_path / "out"
    expect(["gen", str(mdir / "mlp.onnx"), "--board", "u250", "-o", str(out), "--calib", str(mdir / calib)],
           capsys, 2, fragment)
    assert not out.exists()


@pytest.mark.parametrize("arr,fragment", [
    ("missing.npy", "missing.npy"),
    ("not_npy.npy", "not a readable"),
    ("pickled.npy", "not a readable"),
    ("nan.npy", "NaN or Inf"),
    ("inf.npy", "NaN or Inf"),
    ("shape.npy", "shape (1, 15)"),
    ("strings.npy", "expected a numeric array"),
])
@pytest.mark.parametrize("cmd", ["run", "csim"])
def test_bad_input_file(mdir, gen_out, capsys, cmd, arr, fragment):
    head = ["run", str(mdir / "mlp.onnx")] if cmd == "run" else ["csim", str(gen_out)]
    expect(head + ["--input", str(mdir / arr)], capsys, 2, fragment)


def test_csim_not_a_gen_folder(mdir, capsys):
    expect(["csim", str(mdir)], capsys, 2, "not a folder written by `bbgrap-hls gen`")


# -- infeasible plans ---------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["plan", "gen"])
def test_infeasible(mdir, capsys, tmp_path, cmd):
    argv = [cmd, str(mdir / "mlp.onnx"), "--board", str(mdir / "tiny.yaml")]
    argv += ["-o", str(tmp_path / "out")] if cmd == "gen" else []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        rc, _, err = cli(argv, capsys)
    assert rc == 3
    line = error_line(err, cmd)
    # the DSPs short, then (LUT requantisers) the LUTs of the node or of the model on core 0
    assert "DSP" in line and "short by" in line and ("core 0" in line or "core(s) [0]" in line)
    # gen plans before calibrating: refused before the (synthetic) calibration warns
    assert "warning" not in err
    assert not (tmp_path / "out").exists()


def test_warnings_are_one_line_each(mdir, capsys, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        rc, _, err = cli(_gen(mdir, tmp_path / "out"), capsys)
    assert rc == 0
    lines = err.strip().splitlines()
    assert lines and all(ln.startswith("bbgrap-hls gen: warning: ") for ln in lines), err
    assert any("no calibration samples given" in ln for ln in lines)


# -- output folder --------------------------------------------------------------------------------

def _gen(mdir, out, *extra) -> list[str]:
    return ["gen", str(mdir / "mlp.onnx"), "--board", "u250", "-o", str(out), "--strategy", "single", *extra]


def test_out_exists_refused_without_force(mdir, capsys, tmp_path):
    out = tmp_path / "out"
    assert cli(_gen(mdir, out), capsys)[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    expect(_gen(mdir, out), capsys, 2, "use --force")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_force_replaces_only_generated_files(mdir, capsys, tmp_path):
    out = tmp_path / "out"
    assert cli(_gen(mdir, out), capsys)[0] == 0
    mine = out / "notes.txt"
    mine.write_text("user file")
    (out / "hls" / "my_kernel.h").write_text("// user header")
    stale = out / "hls" / "core0.cpp"
    stale.write_text("// edited by hand: gen owns this file and replaces it")
    man = json.loads((out / "manifest.json").read_text())
    man["files"]["hls/stale_from_older_gen.h"] = "0" * 64  # a file an older gen wrote
    (out / "hls" / "stale_from_older_gen.h").write_text("old")
    (out / "manifest.json").write_text(json.dumps(man))
    rc, _, err = cli(_gen(mdir, out, "--force"), capsys)
    assert rc == 0, err
    assert mine.read_text() == "user file"
    assert (out / "hls" / "my_kernel.h").read_text() == "// user header"
    assert not (out / "hls" / "stale_from_older_gen.h").exists()
    man = json.loads((out / "manifest.json").read_text())
    assert "notes.txt" not in man["files"]
    for rel, digest in man["files"].items():  # every listed file is the new one
        import hashlib

        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == digest, rel


def test_force_refuses_folder_without_manifest(mdir, capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("x")
    expect(_gen(mdir, out, "--force"), capsys, 2, "has no manifest.json")
    assert (out / "precious.txt").read_text() == "x"


@pytest.mark.parametrize("bad", ["../escape.txt", "/etc/passwd"])
def test_force_refuses_manifest_path_outside(mdir, capsys, tmp_path, bad):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"files": {bad: "0"}}))
    expect(_gen(mdir, out, "--force"), capsys, 2, "outside the folder")


def test_force_refuses_unreadable_manifest(mdir, capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text("{not json")
    expect(_gen(mdir, out, "--force"), capsys, 2, "unreadable")


def test_out_is_a_file(mdir, capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    expect(_gen(mdir, f), capsys, 2, "not a folder")


@pytest.mark.parametrize("where", ["under_a_file", "proc"])
def test_out_unwritable(mdir, capsys, tmp_path, where):
    # Tests may run as root, where permission bits do not stop writes: use places no one can write.
    if where == "under_a_file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "out"
    else:
        if not Path("/proc/self").exists():
            pytest.skip("no /proc")
        out = Path("/proc/bbgrap-hls-test-out")
    expect(_gen(mdir, out), capsys, 2, "cannot create the output folder")


def _leftovers(folder: Path) -> list[Path]:
    return sorted(folder.glob(".bbgrap-gen-*"))


def test_interrupted_late_step_leaves_no_output(mdir, capsys, tmp_path, monkeypatch):
    """A Ctrl-C during code generation (after planning, calibration and the start of the report)
    leaves neither OUT nor temporaries."""
    import bbgrap_hls.codegen.project as project

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(project, "generate", boom)
    out = tmp_path / "out"
    rc, _, err = cli(_gen(mdir, out), capsys)
    assert rc == 130 and err.strip().splitlines()[-1] == "bbgrap-hls gen: interrupted"
    assert not out.exists() or not any(out.iterdir())
    assert _leftovers(tmp_path) == []


def test_interrupted_while_moving_never_looks_complete(mdir, gen_out, capsys, tmp_path, monkeypatch):
    """A failure half-way through moving files into OUT leaves no manifest.json behind."""
    import bbgrap_hls.commands.gen as gen_cmd

    n_files = len(json.loads((gen_out / "manifest.json").read_text())["files"]) + 1
    real, calls = os.replace, []

    def flaky(src, dst):  # fails on the next-to-last move
        calls.append(dst)
        if len(calls) == n_files - 1:
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(gen_cmd.os, "replace", flaky)
    out = tmp_path / "out"
    rc, _, err = cli(_gen(mdir, out), capsys)
    assert rc == 130
    assert out.is_dir() and any(out.rglob("*"))  # some files were moved ...
    assert not (out / "manifest.json").exists()  # ... but the folder is not marked complete
    assert _leftovers(tmp_path) == []
    monkeypatch.setattr(gen_cmd.os, "replace", real)
    expect(_gen(mdir, out, "--force"), capsys, 2, "has no manifest.json")  # nothing silently overwritten


# -- verification mismatch -------------------------------------------------------------------------

@pytest.mark.csim
def test_csim_mismatch_exit_1(gen_out, capsys, tmp_path):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(gen_out, out)
    rc, _, err = cli(["csim", str(out)], capsys)
    assert rc == 0, err
    exp = sorted((out / "tb").glob("expect_*.bin"))[0]
    data = bytearray(exp.read_bytes())
    data[0] = (data[0] + 1) % 256
    exp.write_bytes(bytes(data))
    expect(["csim", str(out)], capsys, 1, "FAIL", "element 0")


# -- command line usage --------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,fragment", [
    (["frobnicate"], "invalid choice"),
    (["gen", "m.onnx"], "required"),
    (["plan", "m.onnx", "--board", "u250", "--strategy", "bogus"], "invalid choice"),
    (["plan", "m.onnx", "--board", "u250", "--seed", "x"], "invalid int value"),
    (["gen", "m.onnx", "--board", "u250", "-o", "o", "--objective", "speed"], "invalid choice"),
    (["inspect"], "required"),
])
def test_usage_errors(capsys, argv, fragment):
    rc, _, err = cli(argv, capsys)
    assert rc == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert fragment in lines[-1] and lines[-1].startswith("bbgrap-hls")


def test_no_command_prints_help(capsys):
    rc, out, _ = cli([], capsys)
    assert rc == 2 and "usage" in out.lower()


def test_run_flags_need_int8(mdir, capsys):
    expect(["run", str(mdir / "mlp.onnx"), "--input", str(mdir / "good.npy"), "--raw"], capsys, 2, "--int8")


@pytest.mark.parametrize("where", ["global", "subcommand"])
def test_debug_shows_the_exception(mdir, where):
    argv = ["inspect", str(mdir / "missing.onnx")]
    argv = ["--debug", *argv] if where == "global" else [*argv, "--debug"]
    with pytest.raises(BadInputError, match="no such file"):
        main(argv)


# -- through the installed entry point ------------------------------------------------------------------

def _entry(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bbgrap_hls.cli", *argv], capture_output=True, text=True,
                          timeout=120)


def test_subprocess_bad_model_one_line(mdir):
    r = _entry("plan", str(mdir / "truncated.onnx"), "--board", "u250")
    assert r.returncode == 2
    error_line(r.stderr, "plan")


def test_subprocess_infeasible_exit_3(mdir):
    r = _entry("plan", str(mdir / "mlp.onnx"), "--board", str(mdir / "tiny.yaml"))
    assert r.returncode == 3
    error_line(r.stderr, "plan")


def test_subprocess_debug_traceback(mdir):
    r = _entry("--debug", "inspect", str(mdir / "garbage.onnx"))
    assert r.returncode != 0 and "Traceback" in r.stderr and "BadInputError" in r.stderr
