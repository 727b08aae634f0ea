"""Codegen without a compiler: identifiers, determinism, refusal rules of gen."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bbgrap_hls.codegen.names import RESERVED, Namer, comment, legal_identifier


@given(st.lists(st.text(max_size=80), max_size=30))
def test_namer_gives_unique_legal_identifiers(names):
    n = Namer("t_")
    idents = [n(x) for x in names]
    assert all(legal_identifier(i) for i in idents)
    assert len(set(idents)) == len(set(names))
    assert [n(x) for x in names] == idents  # stable


@pytest.mark.parametrize("name", ["int", "module", "class", "logic", "9lives", "a__b", "x" * 200, "é"])
def test_namer_avoids_keywords_and_bad_starts(name):
    ident = Namer()(name)
    assert legal_identifier(ident) and ident not in RESERVED


@given(st.text(max_size=300))
def test_comment_cannot_escape(text):
    c = comment(text)
    assert "*/" not in c and "\n" not in c and "\\" not in c and c.isascii()


def _gen(model, out, *extra):
    return subprocess.run([sys.executable, "-m", "bbgrap_hls.cli", "gen", str(model), "--board", "u250",
                           "--strategy", "even", "-o", str(out), *extra], capture_output=True, text=True)


@pytest.mark.filterwarnings("ignore:no calibration samples")
def test_gen_is_byte_identical_and_refuses_non_empty(tmp_path):
    from tests.test_csim import small_model

    model = small_model(tmp_path / "m.onnx")
    a, b = tmp_path / "a", tmp_path / "b"
    assert _gen(model, a).returncode == 0
    assert _gen(model, b).returncode == 0
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    fb = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert fa == fb
    assert all((a / p).read_bytes() == (b / p).read_bytes() for p in fa)
    r = _gen(model, a)
    assert r.returncode == 2 and "not empty" in r.stderr
    (a / "mine.txt").write_text("keep")
    assert _gen(model, a, "--force").returncode == 0
    assert (a / "mine.txt").read_text() == "keep"
    # every file of hls/ and tb/ is the kernel library or named by generated names only
    from bbgrap_hls.codegen.project import kernel_headers

    library = {k.split("/", 1)[1] for k in kernel_headers()}
    assert "bbgrap.h" in library and "offchip_stage.h" in library and "conv2d_banded.h" in library
    stray = [str(p) for p in fa if p.parent.name in ("hls", "tb") and p.name not in library
             and not p.name.startswith(("core", "layer", "in_", "expect_", "seed_", "vectors", "tb", "rtl",
                                        "weights_core"))]
    assert not stray, stray


@pytest.mark.filterwarnings("ignore:no calibration samples")
def test_gen_report_child_and_in_process_agree(tmp_path, monkeypatch):
    """gen draws the report in a forked child; without one (or when it fails) it draws in
    process: the files are the same either way."""
    import multiprocessing

    from bbgrap_hls.cli import main
    from tests.test_csim import small_model

    model = small_model(tmp_path / "m.onnx")
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["gen", str(model), "--board", "u250", "--strategy", "even", "-o", str(a)]) == 0

    def no_fork(*_a, **_k):
        raise ValueError("no fork here")

    monkeypatch.setattr(multiprocessing, "get_context", no_fork)
    assert main(["gen", str(model), "--board", "u250", "--strategy", "even", "-o", str(b)]) == 0
    fa = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert "report.md" in {str(p) for p in fa}
    assert fa == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / p).read_bytes() == (b / p).read_bytes() for p in fa)


@pytest.mark.filterwarnings("ignore:no calibration samples")
@pytest.mark.parametrize("model, board", [("se_block", "u250"), ("resnet8", "u280"), ("resnet8", "2x-u250")])
def test_split_nodes_gather_by_stream_within_the_ii(tmp_path, model, board):
    """A split node's parts reach its last core as streams (never an off-chip buffer the plan
    did not cost) and their concatenation streams within the plan's ii."""
    import json
    import re

    from bbgrap_hls.cli import main
    from tests import models

    path = models.save(getattr(models, model)(seed=0), tmp_path / "m.onnx")
    out = tmp_path / "out"
    # without DSP packing: packed, these designs fit without splitting a node
    assert main(["gen", str(path), "--board", board, "-o", str(out), "--no-dsp-packing"]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert any(n.get("split") for n in plan["nodes"]), "the plan must split a node for this test"
    assert not any(t["kind"] == "buffer" for t in plan["transfers"])
    code = "".join(p.read_text() for p in (out / "hls").glob("core*.cpp"))
    assert "bo_" not in code and "bi_" not in code
    concats = re.findall(r"bb::concat<(\d+), (\d+), ([\d, ]+)>", code)
    assert concats
    for pixels, lanes, parts in concats:
        chans = sum(int(c) for c in parts.split(","))
        assert int(pixels) * chans // int(lanes) <= plan["ii_cycles"], (pixels, lanes, parts)
