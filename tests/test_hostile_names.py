"""Untrusted names: model text never reaches a file path and becomes legal, unique identifiers.

A small residual network whose every node, tensor, initializer and graph name is hostile
(C++ and SystemVerilog keywords, leading digits, non-ASCII, 5,000 characters, names that
collide after sanitising or with generated identifiers, comment terminators, newlines,
backslash line splices, quotes, preprocessor and Verilog directives, path traversal) goes
through ``gen``; the output folder is scanned, and (marker ``csim``) compiled with
``-Werror`` and checked bit-exact against the integer reference.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.cli import main
from bbgrap_hls.codegen.names import MAX_LEN, RESERVED, Namer, comment, legal_identifier
from bbgrap_hls.codegen.project import kernel_headers

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")

# Fragments that must never appear in generated code outside comments: each is punctuation
# that sanitising removes, so only a raw copy of the model text could contain it.
PAYLOADS = ("evil_payload();", "system_call();", "splice_payload();", "`define PWN", "$pwn_task;",
            "#include <pwn.h>", "#pragma pwn", "\"quoted\"", "it's", "passwd")

HOSTILE = [
    "\x1b]0;pwned\x07", "\x1b[2J\x1b[31mred", "abc\u202edcba", "\x9b31m", "bell\x07",
    "int", "module", "class", "always_ff", "main", "core0", "t_x", "t_t_x", "0leading", "9",
    "ünïcødé_名前", "ÄÖÜ", "a" * 5000, "a" * 5000 + "b", "a/b", "a-b", "a b", "a.b", "a_b", "A_B",
    "x*/ evil_payload(); /*", "line\nsystem_call();\n// ", "back\\\nsplice_payload();",
    "`define PWN 1", "$pwn_task;", "#include <pwn.h>", "#pragma pwn", "say \"quoted\"", "it's",
    "../../../etc/passwd", "C:\\Windows\\system32", "??=??/", "{{ jinja }}{% raw %}", "__init__", "_Upper",
    "logic", "wire", "input", "output", "reg", "begin", "end", "n", "n_", "",
]
TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _take(pool: list[str]) -> str:
    return pool.pop(0)


def hostile_model(path: Path, offset: int = 0) -> str:
    """conv → relu → conv → add(residual) → sigmoid → maxpool → gap → flatten → gemm, every
    name hostile (``offset`` rotates which name goes where)."""
    names = [n for n in HOSTILE if n] * 2
    names = names[offset:] + names[:offset]
    seen: set[str] = set()
    pool = []
    for n in names:  # ONNX needs unique tensor names: make repeats unique but still hostile
        while n in seen:
            n = n + "\u00a0"
        seen.add(n)
        pool.append(n)
    t = {k: _take(pool) for k in ("x", "w1", "b1", "c1", "r1", "w2", "b2", "c2", "a", "s", "m", "gp", "f",
                                  "wd", "bd", "y")}
    nn = [_take(pool) for _ in range(9)]
    rng = np.random.default_rng(1)

    def w(key, *s):
        return numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), t[key])

    nodes = [helper.make_node("Conv", [t["x"], t["w1"], t["b1"]], [t["c1"]], pads=[1, 1, 1, 1], name=nn[0]),
             helper.make_node("Relu", [t["c1"]], [t["r1"]], name=nn[1]),
             helper.make_node("Conv", [t["r1"], t["w2"], t["b2"]], [t["c2"]], pads=[1, 1, 1, 1], name=nn[2]),
             helper.make_node("Add", [t["c2"], t["r1"]], [t["a"]], name=nn[3]),
             helper.make_node("Sigmoid", [t["a"]], [t["s"]], name=nn[4]),
             helper.make_node("MaxPool", [t["s"]], [t["m"]], kernel_shape=[2, 2], strides=[2, 2], name=nn[5]),
             helper.make_node("GlobalAveragePool", [t["m"]], [t["gp"]], name=nn[6]),
             helper.make_node("Flatten", [t["gp"]], [t["f"]], name=nn[7]),
             helper.make_node("Gemm", [t["f"], t["wd"], t["bd"]], [t["y"]], transB=1, name=nn[8])]
    inits = [w("w1", 4, 3, 3, 3), w("b1", 4), w("w2", 4, 4, 3, 3), w("b2", 4), w("wd", 5, 4), w("bd", 5)]
    g = helper.make_graph(nodes, "graph */ evil_payload(); /* \n`define PWN", [
        helper.make_tensor_value_info(t["x"], TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info(t["y"], TensorProto.FLOAT, [1, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = min(m.ir_version, 8)
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return str(path)


# -- the namer on its own ------------------------------------------------------------------

def test_namer_unique_legal_and_stable():
    nm = Namer("t_")
    nm.reserve("t_x")  # a generated identifier
    names = [n for n in HOSTILE] + [n + "\u00a0" for n in HOSTILE]
    idents = [nm(n) for n in names]
    assert len(set(idents)) == len(names), "two model names share an identifier"
    assert "t_x" not in idents
    for n, i in zip(names, idents, strict=True):
        assert legal_identifier(i), (n, i)
        assert len(i) <= MAX_LEN and i.isascii() and i not in RESERVED and not i.startswith("_")
        assert nm(n) == i  # same name, same identifier
    again = Namer("t_")
    again.reserve("t_x")
    assert [again(n) for n in names] == idents  # deterministic across instances


@pytest.mark.parametrize("text", HOSTILE + ["*/*/", "/*", "a\rb", "\x00\x1b[31m", "??/\n"])
def test_comment_is_inert(text):
    c = comment(text)
    assert c.isascii() and all(32 <= ord(ch) < 127 for ch in c)
    assert "*/" not in c and "/*" not in c and "\\" not in c and "??" not in c
    assert len(c) <= 200


# -- through gen ---------------------------------------------------------------------------------

def _strip_comments(code: str) -> str:
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def _snapshot(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.fixture(scope="module")
def hostile_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    model = hostile_model(d / "model.onnx")
    before = _snapshot(d)
    out = d / "out"
    assert main(["gen", model, "--board", "u250", "-o", str(out), "--strategy", "even"]) == 0
    return d, out, before


def test_no_file_outside_the_output_folder(hostile_out):
    d, out, before = hostile_out
    created = _snapshot(d) - before
    assert all(p == out or out in p.parents for p in created), sorted(map(str, created - {out}))
    for p in out.rglob("*"):
        assert not p.is_symlink()
        rel = str(p.relative_to(out))
        assert re.fullmatch(r"[A-Za-z0-9_./-]+", rel), rel  # file names never carry model text
        assert ".." not in Path(rel).parts and "passwd" not in rel


def test_generated_code_has_no_raw_model_text(hostile_out):
    _, out, _ = hostile_out
    code_files = [p for p in out.rglob("*") if p.suffix in (".cpp", ".h", ".hpp", ".sv", ".v", ".tcl", ".cfg", ".py")
                  or p.name == "Makefile"]
    assert any(p.name.startswith("core") for p in code_files)
    library = {out / rel for rel in kernel_headers()}  # hand-written, copied verbatim
    for p in code_files:
        raw = p.read_bytes()
        text = raw.decode("utf-8")
        if p not in library:
            assert raw.isascii(), f"{p}: non-ASCII bytes (model text must be sanitised)"
        assert "\r" not in text
        code = _strip_comments(text)
        assert "*/" not in code, f"{p}: a comment was closed early"
        for frag in PAYLOADS:
            assert frag not in code, f"{p}: raw model text {frag!r} outside a comment"
        for line in text.splitlines():
            assert not line.rstrip().endswith("\\") or line.lstrip().startswith("#"), f"{p}: line splice {line!r}"


@pytest.mark.parametrize("argv", [["inspect"], ["plan", "--board", "u250"], ["plan", "--board", "pynq-z2"]])
def test_printed_names_cannot_drive_the_terminal(hostile_out, capsys, argv):
    d, _, _ = hostile_out
    main([argv[0], str(d / "model.onnx"), *argv[1:]])  # pynq-z2 may not fit: the error is printed
    out, err = capsys.readouterr()
    assert out or err
    for text in (out, err):
        assert not TERMINAL_CONTROL.search(text), repr(TERMINAL_CONTROL.search(text).group())
    if argv[0] == "inspect":
        assert "\\x1b" in out  # the names are shown, escaped


def test_identifiers_in_vectors_are_legal(hostile_out):
    _, out, _ = hostile_out
    meta = json.loads((out / "tb" / "vectors.json").read_text())
    idents = [io["ident"] for io in meta["inputs"] + meta["outputs"]]
    assert all(legal_identifier(i) for i in idents), idents
    assert len(set(idents)) == len(idents)


def test_json_outputs_parse(hostile_out):
    _, out, _ = hostile_out
    found = {p.relative_to(out).as_posix() for p in out.rglob("*.json")}
    # the JSON files gen writes (README): each must be there, and each must parse
    assert {"plan.json", "manifest.json", "tb/vectors.json", "tb/rtl.json", "host/design.json"} <= found, found
    for rel in sorted(found):
        json.loads((out / rel).read_text(encoding="utf-8"))


@pytest.mark.csim
@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 17])
def test_hostile_names_compile_and_pass_csim(tmp_path, offset):
    from bbgrap_hls.codegen import csim

    model = hostile_model(tmp_path / "model.onnx", offset)
    out = tmp_path / "out"
    assert main(["gen", model, "--board", "vu9p-quad", "-o", str(out), "--strategy", "even"]) == 0
    meta = json.loads((out / "tb" / "vectors.json").read_text())
    outputs = [(o["tensor"], o["ident"], o["elems"]) for o in meta["outputs"]]
    res = csim.run(out, out / "tb", outputs, werror=True)
    assert res.ok, res.message


@pytest.mark.parametrize("mode", ["all_same", "all_empty", "equal_to_tensors"])
def test_duplicate_and_empty_node_names(tmp_path, mode):
    """ONNX does not require unique node names: every node still gets its own name and identifier."""
    rng = np.random.default_rng(0)

    def w(name, *s):
        return numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), name)

    outs = ["c1", "r1", "c2", "y"]
    names = {"all_same": ["n"] * 4, "all_empty": [""] * 4, "equal_to_tensors": outs}[mode]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name=names[0]),
             helper.make_node("Relu", ["c1"], ["r1"], name=names[1]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name=names[2]),
             helper.make_node("Add", ["c2", "r1"], ["y"], name=names[3])]
    g = helper.make_graph(nodes, "0", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5])],
                          [w("w1", 4, 3, 3, 3), w("b1", 4), w("w2", 4, 4, 3, 3), w("b2", 4)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    out = tmp_path / "out"
    assert main(["gen", str(tmp_path / "m.onnx"), "--board", "vu9p-quad", "-o", str(out), "--strategy", "even"]) == 0
    plan = json.loads((out / "plan.json").read_text())
    names = [n["name"] for n in plan["nodes"]]
    assert len(names) == len(set(names)) >= 3
    layer_files = sorted(p.name for p in (out / "hls").glob("layer*.h"))
    assert len(layer_files) == len(set(layer_files)) >= 3
