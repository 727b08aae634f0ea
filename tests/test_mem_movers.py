"""The memory movers on 512-bit ports (issue 15, "The Vitis path as Vitis would run it").

`bb::mem_to_stream` / `bb::stream_to_mem` (hw/hls/streams.h) move a buffer's frames through
an m_axi port of 64-byte words (`bb::Word<bb::DDR_BEAT>`), the frames back to back with one
padded word at the end (`bb::mem_bytes`, `codegen.ports.mem_bytes`): one pipelined loop of
max(beats, words) iterations per call, for lanes that divide 64, straddle words or span
several. The kernels run alone here (sequential build, all input present), their iterations
counted, their bytes compared exactly; the generated ports are checked to be 512 bits wide.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.codegen import schedule
from bbgrap_hls.codegen.csim import CXXFLAGS
from bbgrap_hls.codegen.ports import mem_bytes
from bbgrap_hls.commands.csim import csim_design
from tests import models
from tests.test_hls_kernels import hls_dir

pytestmark = pytest.mark.csim

# (N, L): lanes dividing 64, straddling two words (3, 12, 48 on a frame of 96), a full word,
# spanning several words (96, 192); frames whose bytes are not whole words
CASES = [(30, 1), (96, 3), (3072, 3), (132, 12), (96, 48), (640, 64), (288, 96), (576, 192), (10, 10)]
FRAMES = (1, 2, 3, 5)


def _program(cases, frames) -> str:
    out = ["#include <cstdio>", "#include <vector>", "static long g_iters = 0;",
           "#define BB_PIPELINE(n) g_iters += (n);", '#include "streams.h"']
    out.append("static int run(long n, int frames, const std::vector<int8_t>& x, long (*m2s)(const std::vector<int8_t>&, "
               "std::vector<int8_t>&, int, long*)) {\n"
               "  const long bytes = bb::mem_bytes(n, frames);\n"
               "  std::vector<int8_t> y(bytes, static_cast<int8_t>(0x5a));\n"
               "  long s2m = 0;\n"
               "  const long m = m2s(x, y, frames, &s2m);\n"
               "  std::printf(\"%ld %ld\", m, s2m);\n"
               "  for (long i = 0; i < bytes; ++i) std::printf(\" %d\", y[i]);\n"
               "  std::printf(\"\\n\");\n  return 0;\n}")
    mains = []
    for i, (n, lanes) in enumerate(cases):
        out.append(f"static long mover{i}(const std::vector<int8_t>& x, std::vector<int8_t>& y, int frames, long* s2m) {{\n"
                   f"  bb::Stream<{lanes}> s;\n  g_iters = 0;\n"
                   f"  bb::mem_to_stream<{n}, {lanes}>(reinterpret_cast<const bb::Word<bb::DDR_BEAT>*>(x.data()), s, frames);\n"
                   f"  const long m = g_iters;\n  g_iters = 0;\n"
                   f"  bb::stream_to_mem<{n}, {lanes}>(s, reinterpret_cast<bb::Word<bb::DDR_BEAT>*>(y.data()), frames);\n"
                   f"  *s2m = g_iters;\n  return s.empty() ? m : -1;\n}}")
        for f in frames:
            mains.append(f"  {{ std::vector<int8_t> x(bb::mem_bytes({n}, {f}));\n"
                         f"    for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<int8_t>(k < {n * f}u ? (k * 7 + {i}) % 251 - 125 : 99);\n"
                         f"    run({n}, {f}, x, mover{i}); }}")
    out.append("int main() {\n" + "\n".join(mains) + "\n  return 0;\n}")
    return "\n".join(out) + "\n"


def test_movers_move_whole_words_at_one_beat_or_word_a_cycle(tmp_path):
    """For every (N, L) and 1, 2, 3, 5 frames: the frames come back byte for byte, the last
    word's padding written as zeros (the input's padding, 99, is never emitted); buffers of
    exactly `mem_bytes` bytes (AddressSanitizer: no word past them is read or written);
    mem_to_stream takes max(beats, words) iterations, stream_to_mem max(beats, whole words);
    per frame in steady state both are `schedule.kernel_bounds`' bound."""
    src = tmp_path / "movers.cpp"
    src.write_text(_program(CASES, FRAMES))
    exe = tmp_path / "movers"
    subprocess.run(["g++", *CXXFLAGS, "-Werror", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-I", str(hls_dir()), str(src), "-o", str(exe)], check=True)
    lines = iter(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
    for i, (n, lanes) in enumerate(CASES):
        counts = {}
        for f in FRAMES:
            m2s, s2m, *y = map(int, next(lines).split())
            size = mem_bytes(n, f)
            assert len(y) == size and size % 64 == 0 and size - n * f < 64
            want = [(k * 7 + i) % 251 - 125 for k in range(n * f)] + [0] * (size - n * f)
            assert y == want, (n, lanes, f)
            beats, words = f * n // lanes, size // 64
            assert m2s == max(beats, words), (n, lanes, f, m2s)
            assert s2m == max(beats, f * n // 64), (n, lanes, f, s2m)
            counts[f] = (m2s, s2m)
        for k, kern in enumerate(("mem_to_stream", "stream_to_mem")):
            ((_, _, bound, port),) = schedule.kernel_bounds(f"bb::{kern}<{n}, {lanes}>(a, b, frames)", {})
            steady = (counts[5][k] - counts[3][k]) / 2
            assert port == 1 and abs(steady - bound) <= 0.5, (kern, n, lanes, steady, bound)
            if lanes <= 64:
                assert steady == bound == n // lanes


def test_generated_ports_are_512_bit_words_and_resnet8_input_at_its_beats(tmp_path):
    """ResNet-8 on u250: every activation port of every core is a pointer to 64-byte words
    behind an m_axi interface (Vitis HLS: a 512-bit AXI4 master, full-width bursts), its depth
    the words of a call; the host allocates whole words (design.json ``bytes``). The
    threaded csim is bit-exact and counts the input's mem_to_stream at its beats per frame
    (32·32/2 pixel pairs of 6 lanes, the stem taking two pixels a beat), not the 3 port
    accesses per pixel the byte port took."""
    path = models.save(models.resnet8(seed=0), tmp_path / "resnet8.onnx")
    out = tmp_path / "out"
    assert main(["gen", path, "--board", "u250", "-o", str(out), "--force"]) == 0
    ports = 0
    for cpp in sorted((out / "hls").glob("core*.cpp")):
        text = cpp.read_text()
        for name in re.findall(r"bb::Word<bb::DDR_BEAT>\* ((?:in|out|bi|bo)_\w+)", text):
            pragma = re.search(rf"INTERFACE m_axi port = {name} offset = slave bundle = gmem\d+ depth = (\d+)", text)
            assert pragma, name
            ports += 1
        assert not re.search(r"int8_t\* (in|out|bi|bo)_", text), cpp.name
    assert ports >= 2
    assert "constexpr int DDR_BEAT = 64;" in (out / "hls" / "bb_common.h").read_text()
    spec = json.loads((out / "host" / "design.json").read_text())
    for b in spec["buffers"]:
        if b["role"] in ("input", "output", "buffer"):
            assert b["bytes"] == -(-b["elems"] * spec["frames"] // 64) * 64, b
    res = csim_design(out, schedule=True)
    assert res.ok, res.message
    (row,) = [r for r in res.schedule if r["label"] == "mem_to_stream"]
    cpp = (out / "hls" / f"{row['id'].split('.')[0]}.cpp").read_text()
    n, lanes = map(int, re.search(r"bb::mem_to_stream<(\d+), (\d+)>", cpp).groups())
    assert (n, lanes) == (32 * 32 * 3, 6)  # two pixels a beat into the paired stem (--pixel-pairs auto)
    assert row["counted"] <= max(n // lanes, -(-n // 64)) + 1 and row["bound"] == n // lanes, row
