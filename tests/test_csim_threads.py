"""Threaded C simulation (issue 15 item 1): every DATAFLOW process a thread, every stream a
bounded FIFO of its generated depth, deadlocks reported by stream.

The other csim tests (test_csim.py, test_offchip_csim.py, ...) run threaded too: it is
`csim.run`'s default. Here: the FIFO report against the generated depths, the sequential
mode, a residual block whose planned FIFOs are cut to the minimum deadlocks and the message
names the full FIFO of the shortcut, and the CLI.
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.codegen import csim
from bbgrap_hls.codegen.project import generate
from bbgrap_hls.codegen.vitis import link_depth
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant.quantizer import quantize
from bbgrap_hls.search import make_plan
from tests.test_csim import small_model

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]

DEPTH = re.compile(r"BB_FIFO_DEPTH\((\w+), (\d+)\)")


def _write(tmp_path, gq, plan, board):
    x = np.random.default_rng(3).standard_normal(gq.shape(gq.inputs[0])).astype(np.float32)
    files, design = generate(gq, plan, board, {gq.inputs[0]: x})
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    return design


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    g = canonicalize(load_model(small_model(tmp_path_factory.mktemp("m") / "small.onnx")))
    return g, quantize(g)


def test_threaded_fifos_at_generated_depths(small, tmp_path):
    """Every stream of every core and every link is bounded at the depth the generated code
    declares (core streams: the STREAM pragma; links: link.cfg's stream_connect depth), none
    ever holds more, and the outputs equal the sequential run's."""
    g, gq = small
    board = load_board("u250")
    design = _write(tmp_path, gq, make_plan(g, board, strategy="even"), board)
    assert len(design.cores) > 1 and design.links
    res = csim.run(tmp_path, tmp_path / "tb", design.outputs, werror=True, threads=True)
    assert res.ok and res.threads and not res.deadlock, res.message
    fifos = {f.name: f for f in res.fifos}
    want = {}
    for c in design.cores:
        text = (tmp_path / "hls" / f"{c.name}.cpp").read_text()
        pragmas = dict(re.findall(r"BB_HLS\(STREAM variable = (\w+) depth = (\d+)\)", text))
        for name, depth in DEPTH.findall(text):
            assert pragmas[name] == depth, name  # the threaded depth is the synthesised one
            want[f"{c.name}.{name}"] = int(depth)
    link_cfg = (tmp_path / "vitis" / "link.cfg").read_text()
    for ident, (lanes, a, b, po, pi) in design.links.items():
        assert f"stream_connect=core{a}_1.{po}:core{b}_1.{pi}:{link_depth(lanes)}" in link_cfg
        want[ident] = link_depth(lanes)
    assert want.keys() <= fifos.keys()
    for name, depth in want.items():
        f = fifos[name]
        assert f.depth == depth and 1 <= f.max_fill <= depth, f
        assert f.producer != f.consumer and "(no" not in f.producer + f.consumer, f
    # the kernels' own regions: conv's window stream between its two processes
    wins = [f for f in res.fifos if f.name.endswith("_win")]
    assert wins and all(f.producer.endswith("conv_swg<P>") and f.depth > 0 for f in wins)
    seq = csim.run(tmp_path, tmp_path / "tb", design.outputs, werror=True, threads=False)
    assert seq.ok and not seq.threads and not seq.fifos and "sequential" in seq.message
    assert all(np.array_equal(seq.outputs[k], res.outputs[k]) for k in res.outputs)


def _residual(tmp_path, depth: int | None):
    """test_csim's small model (conv, relu, conv + identity shortcut, ...) on one core; with
    ``depth``, every planned FIFO cut to it (the codegen keeps at least 2 beats)."""
    g = canonicalize(load_model(small_model(tmp_path / "m.onnx")))
    board = load_board("u250")
    plan = copy.deepcopy(make_plan(g, board, strategy="single"))
    skip = next(c for c in plan.channels if c.tensor == "r1" and c.dst == "add")
    assert skip.depth > 8  # the plan sizes the shortcut for conv2's latency
    if depth is not None:
        for c in plan.channels:
            c.depth = depth
    return _write(tmp_path, quantize(g), plan, board)


LINE = re.compile(r"deadlock: stream (core[\w.]+): producer (core.+?), consumer (core.+), "
                  r"fill (\d+) of depth (\d+) \(full: the producer waits\)")


def test_residual_with_shallow_fifos_deadlocks(tmp_path):
    """A residual block whose planned FIFO depths are cut to the minimum deadlocks in the
    threaded csim, as it would in hardware (the RTL twin's version: test_sim_design's
    watchdog test): the shortcut FIFO into the add fills while the add waits for conv2. The
    message names that stream, its producer and consumer, fill and depth, full streams
    first. The sequential csim cannot see it."""
    design = _residual(tmp_path, 1)
    res = csim.run(tmp_path, tmp_path / "tb", design.outputs, threads=True)
    assert not res.ok and res.deadlock, res.message
    assert res.message.startswith("DEADLOCK (threaded csim): deadlock: all ")
    full = [ln for ln in res.deadlock if ln.endswith("(full: the producer waits)")]
    assert full and res.deadlock[:len(full)] == full, res.message
    parsed = [LINE.fullmatch(ln) for ln in full]
    assert all(parsed), full
    assert all(m.group(4) == m.group(5) == "2" or "_win" in m.group(1) for m in parsed), full
    skip = [m for m in parsed if "add2<" in m.group(3)]
    assert len(skip) == 1, full  # the shortcut into the add, named with both ends
    assert "concat_part" in skip[0].group(2) and int(skip[0].group(5)) == 2
    seq = csim.run(tmp_path, tmp_path / "tb", design.outputs, threads=False)
    assert seq.ok, seq.message  # unbounded streams: nothing to see


def test_residual_with_planned_fifos_passes(tmp_path):
    design = _residual(tmp_path, None)
    res = csim.run(tmp_path, tmp_path / "tb", design.outputs, threads=True)
    assert res.ok, res.message
    assert all(f.max_fill <= f.depth for f in res.fifos if f.depth)
    skip = next(f for f in res.fifos if "add2<" in f.consumer and f.depth > 8)
    assert skip.max_fill > 2  # the planned shortcut depth is used


def test_cli_threads_json_and_bad_folders(small, tmp_path, capsys):
    g, gq = small
    board = load_board("u250")
    out = tmp_path / "out"
    _write(out, gq, make_plan(g, board, strategy="single"), board)
    assert main(["csim", str(out), "--json", "--quiet"]) == 0  # threaded by default
    d = json.loads(capsys.readouterr().out)
    assert d["match"] and d["threads"] and d["deadlock"] == []
    assert d["fifos"] and all({"name", "max_fill", "depth", "producer", "consumer"} <= f.keys() for f in d["fifos"])
    assert main(["csim", str(out), "--no-threads", "--json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["match"] and not d["threads"] and "fifos" not in d
    # --threads on a folder gen did not write, or an older gen's folder: one line, exit 2
    assert main(["csim", str(tmp_path), "--threads", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a folder written by" in err
    (out / "hls" / "bb_dataflow.h").unlink()
    assert main(["csim", str(out), "--threads", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "older gen" in err


def test_the_threaded_runtime_is_compiled_once_per_user(small, tmp_path, monkeypatch):
    """The runtime's out-of-line functions are compiled once into the per-user cache and
    linked by every later build with the same headers and flags (`csim.runtime_object`); a
    changed header names another object; without a writable cache there is none and the
    testbench compiles the functions itself. Every build is bit-exact."""
    g, gq = small
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even")
    store = tmp_path / "store"
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(store))
    a, b = tmp_path / "a", tmp_path / "b"
    design = _write(a, gq, plan, board)
    _write(b, gq, plan, board)
    res = csim.run(a, a / "tb", design.outputs, threads=True)
    assert res.ok and res.threads, res.message
    kept = sorted(store.glob("csim-runtime-*.o"))
    assert len(kept) == 1 and kept == [csim.runtime_object(a, csim.flags(threads=True, opt=csim.opt_flag(a)))]
    stamp = kept[0].stat().st_mtime_ns
    (b / "hls" / "extra.h").write_text("// another source: a new testbench binary, the same runtime\n")
    res = csim.run(b, b / "tb", design.outputs, threads=True)
    assert res.ok, res.message
    assert sorted(store.glob("csim-runtime-*.o")) == kept and kept[0].stat().st_mtime_ns == stamp
    flags = csim.flags(threads=True, opt=csim.opt_flag(b))
    with (b / "hls" / "bb_sim_threads_impl.h").open("a") as f:
        f.write("// changed\n")
    assert csim.runtime_object(b, flags) not in (None, kept[0])  # a changed runtime: another object
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(tmp_path / "with space"))  # no usable cache: tb.cpp compiles it
    assert csim.runtime_object(a, flags) is None
    (a / "hls" / "extra.h").write_text("// a new testbench binary\n")
    res = csim.run(a, a / "tb", design.outputs, threads=True)
    assert res.ok, res.message
