"""Dataflow rule check (issue 15 item 2): the threaded csim applies the rules of Vitis
``config_dataflow -strict_mode`` (UG1399, "Dataflow Optimization Limitations") to every
stream of a run and to the statements of every core's DATAFLOW region.

Every csim test (test_csim.py, test_csim_threads.py, ...) runs threaded, so each generated
test design there is also checked for 0 violations; here: 0 violations on the multi-core and
single-core designs of the small residual model (also at 2 frames), every stream registered
with its beats per frame, and one deliberately broken copy per rule, each caught with a line
that names the stream, its processes and its counts.
"""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.codegen import csim
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant.quantizer import quantize
from bbgrap_hls.search import make_plan
from tests.test_csim import small_model
from tests.test_csim_threads import _write

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]

RULE = "dataflow rule: "


@pytest.fixture(scope="module")
def designs(tmp_path_factory):
    """The small residual model's designs (as test_csim_threads builds them): ``even`` on
    u250 (4 cores, AXI-Stream links) and ``single``; each folder with its design."""
    g = canonicalize(load_model(small_model(tmp_path_factory.mktemp("m") / "small.onnx")))
    gq = quantize(g)
    board = load_board("u250")
    out = {}
    for strategy in ("even", "single"):
        d = tmp_path_factory.mktemp(strategy)
        out[strategy] = (d, _write(d, gq, make_plan(g, board, strategy=strategy), board))
    return out


def _copy(designs, tmp_path, strategy="even"):
    src, design = designs[strategy]
    dst = tmp_path / "d"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".csim"))
    return dst, design


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _run(out, design):
    return csim.run(out, out / "tb", design.outputs, threads=True)


@pytest.mark.parametrize("strategy", ["even", "single"])
def test_generated_designs_have_no_violations(designs, strategy):
    """0 violations, and every stream a core's region names (local streams and AXI-Stream
    ports) carries the beats per frame the codegen knows (elements / lanes)."""
    out, design = designs[strategy]
    for c in design.cores:
        text = (out / "hls" / f"{c.name}.cpp").read_text()
        beats = dict(re.findall(r"BB_FIFO_BEATS\((\w+), (\d+), frames\)", text))
        assert set(re.findall(r"BB_FIFO_DEPTH\((\w+), \d+\)", text)) <= beats.keys()
        for p in c.ports:
            if p.kind.startswith("axis"):
                assert int(beats[p.name]) == p.elems // p.lanes
        for name, (lanes, _) in c.streams.items():
            assert int(beats[name]) * lanes == c.elems[name]
    res = _run(out, design)
    assert res.ok and res.violations == [], res.message
    assert res.to_dict()["violations"] == []


def test_two_frames_no_violations(designs, tmp_path):
    """The expected counts scale with the frames of the call: the testbench at 2 frames (its
    REPEAT argument: the vectors twice) is still clean."""
    out, design = _copy(designs, tmp_path)
    res = csim.run(out, out / "tb", design.outputs, threads=True, repeat=2)
    assert res.ok and not res.violations, res.message
    assert design.outputs[0][2] * 2 == res.outputs[design.outputs[0][0]].size


def _lines(res, stream: str) -> list[str]:
    return [ln for ln in res.violations if ln.startswith(f"{RULE}stream {stream} ")]


def test_stream_written_by_two_processes(designs, tmp_path):
    """core1's copy s18 -> s5 split into two processes of 32 beats each: s5 has two producers
    and s18 two consumers (the counts still agree)."""
    out, design = _copy(designs, tmp_path)
    _edit(out / "hls" / "core1.cpp", "BB_PROCESS(bb::concat_part<8, 64>(s18, s5, frames);)",
          "BB_PROCESS(bb::concat_part<8, 32>(s18, s5, frames);)\n"
          "  BB_PROCESS(bb::concat_part<8, 32>(s18, s5, frames);)")
    res = _run(out, design)
    assert not res.ok and not res.deadlock and res.message.startswith("DATAFLOW RULES (threaded csim): 2 violation(s)")
    (w,) = _lines(res, "core1.s5")
    assert re.search(r"producer core1\.p\d+ concat_part<8, 32>; core1\.p\d+ concat_part<8, 32>, consumer core1\.p\d+ add2"
                     r"<layer2_P>\): written by 2 processes, Vitis allows one producer$", w), w
    (r,) = _lines(res, "core1.s18")
    assert r.endswith("read by 2 processes, Vitis allows one consumer"), r


def test_process_reads_one_beat_too_many(designs, tmp_path):
    """core2's copy reads 65 beats of s22 per frame where 64 come: it waits for a beat no
    process will write (a deadlock), and the rule line says read 65 of 64 expected."""
    out, design = _copy(designs, tmp_path)
    _edit(out / "hls" / "core2.cpp", "concat_part<8, 64>(s22, s10, frames)", "concat_part<8, 65>(s22, s10, frames)")
    res = _run(out, design)
    assert not res.ok and res.deadlock and res.message.startswith("DATAFLOW RULES"), res.message
    (ln,) = _lines(res, "core2.s22")
    assert ln == (f"{RULE}stream core2.s22 (producer core2.p0 concat_part<8, 64>, consumer core2.p1 concat_part<8, 65>): "
                  "written 64, read 65 times so far, expected 64 per frame x 1 frame(s) = 64"), ln
    assert "DEADLOCK (threaded csim)" in res.message


def test_process_reads_one_beat_too_few(designs, tmp_path):
    """core2's copy reads 63 beats of s22: one beat stays behind in s22 (written 64, read 63),
    and the pool after it waits for its 64th beat, which nothing will write (the pool reads
    without blocking, bb_window.h: it has read 63 and waits)."""
    out, design = _copy(designs, tmp_path)
    _edit(out / "hls" / "core2.cpp", "concat_part<8, 64>(s22, s10, frames)", "concat_part<8, 63>(s22, s10, frames)")
    res = _run(out, design)
    assert not res.ok, res.message
    (ln,) = _lines(res, "core2.s22")
    assert ln.endswith("written 64, read 63 times, expected 64 per frame x 1 frame(s) = 64"), ln
    (ln,) = _lines(res, "core2.s10")
    assert "maxpool2d<layer4_P>" in ln and ln.endswith("written 63, read 63 times, expected 64 per frame x 1 "
                                                       "frame(s) = 64: the consumer waits for a beat no producer will write")


def test_process_that_skips_its_body(designs, tmp_path):
    """core2's copy s22 -> s10 runs but does nothing (as a process whose body is conditional
    would): it names both streams in its call and never touches them; s22 fills and its
    producer waits for room no consumer will make."""
    out, design = _copy(designs, tmp_path)
    _edit(out / "hls" / "core2.cpp", "concat_part<8, 64>(s22, s10, frames)", "concat_part<8, 0>(s22, s10, frames)")
    res = _run(out, design)
    assert not res.ok and res.deadlock, res.message
    lines = _lines(res, "core2.s22")
    assert any(ln.endswith("process core2.p1 concat_part<8, 0> names it in its call but never accessed it "
                           "(a conditionally executed process)") for ln in lines), lines
    assert any(ln.endswith("written 3, read 0 times, expected 64 per frame x 1 frame(s) = 64: the producer waits "
                           "for room no consumer will make") for ln in lines), lines


def test_count_differs_from_codegen(designs, tmp_path):
    """Writes and reads agree with each other but not with the beats per frame the codegen
    registered: the count comparison is against the design, not only between the ends."""
    out, design = _copy(designs, tmp_path)
    _edit(out / "hls" / "core1.cpp", "BB_FIFO_BEATS(s5, 64, frames)", "BB_FIFO_BEATS(s5, 65, frames)")
    res = _run(out, design)
    assert not res.ok and not res.deadlock
    (ln,) = _lines(res, "core1.s5")
    assert ln.endswith("written 64, read 64 times, expected 65 per frame x 1 frame(s) = 65"), ln


def test_stream_without_consumer(designs, tmp_path):
    """core0's fan-out gets a third branch that no process reads (deep enough not to block):
    the run completes bit-exact, and the check names the stream without a consumer."""
    out, design = _copy(designs, tmp_path)
    core0 = out / "hls" / "core0.cpp"
    _edit(core0, "  BB_DATAFLOW_REGION()", "  bb::Stream<8> x9(\"x9\");\n  BB_FIFO_DEPTH(x9, 64)\n"
          "  BB_FIFO_BEATS(x9, 64, frames)\n  BB_DATAFLOW_REGION()")
    _edit(core0, "(s2, frames, f26, f27)", "(s2, frames, f26, f27, x9)")
    res = _run(out, design)
    assert not res.ok and res.violations, res.message
    assert all(np.array_equal(v, np.fromfile(out / "tb" / f"expect_{i}.bin", dtype=np.int8))
               for (t, i, _), v in zip(design.outputs, res.outputs.values(), strict=True))
    assert res.violations == [f"{RULE}stream core0.x9 (producer core0.p3 fanout<64, 8>, consumer none): no consumer: "
                              "written 64, read 0 times, expected 64 per frame x 1 frame(s) = 64"], res.violations


def test_consumer_before_producer(designs, tmp_path):
    """core1's copy s18 -> s5 moved before the process that writes s18: a channel against the
    region's process order (feedback; sequential C semantics would read an empty stream)."""
    out, design = _copy(designs, tmp_path)
    core1 = out / "hls" / "core1.cpp"
    late = "  BB_PROCESS(bb::concat_part<8, 64>(s18, s5, frames);)\n"
    _edit(core1, late, "")
    _edit(core1, "  BB_PROCESS(bb::concat_part<8, 64>(i_t_c2_0_1", late + "  BB_PROCESS(bb::concat_part<8, 64>(i_t_c2_0_1")
    res = _run(out, design)
    assert not res.ok and not res.deadlock
    (ln,) = _lines(res, "core1.s18")
    assert ln.startswith(f"{RULE}stream core1.s18 (producer core1.p1 concat_part<8, 64>, consumer core1.p0 concat_part<8, 64>)")
    assert ln.endswith("its consumer comes before its producer in the region's process order (feedback)")


def test_conditionally_executed_process(designs, tmp_path):
    """A process call under an ``if`` in core3's region: Vitis' strict mode rejects a
    conditionally executed process; the check names the core, the line and the statement."""
    out, design = _copy(designs, tmp_path, "single")
    core = out / "hls" / f"{design.cores[0].name}.cpp"
    text = core.read_text()
    call = re.search(r"  BB_PROCESS\(bb::stream_to_mem<.*\n", text).group(0)
    _edit(core, call, "  if (frames > 0) {\n  " + call + "  }\n")
    res = _run(out, design)
    assert not res.ok, res.message
    no = core.read_text().splitlines().index("  if (frames > 0) {") + 1
    assert res.violations[0] == (f"{RULE}region {core.stem} line {no}: 'if (frames > 0) {{' is not a process call "
                                 "(a conditionally executed process, or code between the processes)")


def test_process_arguments_are_region_variables(designs, tmp_path):
    """Vitis' canonical form: a process call passes the region's variables, not expressions
    (``64 * frames`` by value was found in the generated ResNet-8 project), and no process is
    inlined into the region (``BB_HLS(INLINE)``, as concat_part once was)."""
    out, design = _copy(designs, tmp_path)
    core2 = out / "hls" / "core2.cpp"
    _edit(core2, "concat_part<8, 64>(s22, s10, frames)", "concat_part<8, 64>(s22, s10, 1 * frames)")
    lines = csim.region_rules(out)
    no = next(i for i, ln in enumerate(core2.read_text().splitlines(), 1) if "1 * frames" in ln)
    assert lines == [f"{RULE}region core2 line {no}: concat_part is called with '1 * frames', not a variable of "
                     "the region (canonical form: process arguments are variables)"]
    _edit(core2, "1 * frames", "frames")
    assert csim.region_rules(out) == []
    _edit(out / "hls" / "streams.h", "BB_HLS(INLINE off)\nBB_LOOP(copy_beat)", "BB_HLS(INLINE)\nBB_LOOP(copy_beat)")
    lines = csim.region_rules(out)
    assert lines and all("concat_part is inlined into the region" in ln for ln in lines), lines


def test_cli_exit_1_and_json(designs, tmp_path, capsys):
    """``csim`` exits 1 on a violation; the message has one line per violation and
    ``--json`` lists them under ``violations``."""
    out, _ = _copy(designs, tmp_path)
    _edit(out / "hls" / "core1.cpp", "BB_FIFO_BEATS(s6, 64, frames)", "BB_FIFO_BEATS(s6, 63, frames)")
    assert main(["csim", str(out), "--json", "--quiet"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert not d["match"] and d["deadlock"] == []
    assert len(d["violations"]) == 1 and d["violations"][0].startswith(f"{RULE}stream core1.s6 ")
    assert d["message"].splitlines()[1:] == d["violations"]
