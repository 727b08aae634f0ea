"""The frame FIFO in board memory for a skip path of several frames' lag (``bb::ddr_fifo``,
hw/hls/ddr_fifo.h): a writer and a reader process around a token stream of depth REGIONS - 2.

Four FIFOs: one lane (4-byte words) in tiny frames, five lanes (8-byte words) in frames of
more than 4 KB, sixteen lanes whose frame fills its 4 KB region exactly, and two lanes whose
frames are written in three regions each (CHUNKS = 3: a FIFO shorter than a frame); three to
five regions, 2·REGIONS + 1 frames (the ring wraps twice or more), the board-memory image
filled with noise first. Below, a "region's worth" is BEATS beats, a frame's CHUNKS of them.

- Sequential C simulation (tests/test_hls_kernels.py's harness, g++ -Werror): `out` equals `in`
  frame by frame; the image then holds the last REGIONS chunks in their regions (lanes in the
  low bytes of each word, zeros above) and every other byte unchanged.
- Threaded C simulation (bounded FIFOs, deadlock watchdog, dataflow rules; g++ with csim's
  flags): a test top whose source writes `ahead` regions' worth into `in` (depth 2) before its
  sink may read anything from `out` (depth 2), then streams on: with ahead = REGIONS (the
  writer REGIONS - 1 regions ahead of the reader, the most the ring allows) no deadlock, the
  token stream full at its depth, the same outputs and image, no dataflow rule broken, both
  processes counted at CHUNKS·BEATS cycles a frame; with ahead = REGIONS + 1 the run deadlocks on the
  full token stream (its depth is REGIONS - 2, not more).
- Synthesis (g++ -D__SYNTHESIS__ -E): one free-running DATAFLOW region of the two processes,
  the token stream's STREAM depth REGIONS - 2; the sequential C simulation's fallback is not
  what synthesis reads.

Bad parameters (REGIONS < 3, unaligned OFF or REGION, a region smaller than a frame, more than
128 lanes) are static_asserts of the kernel, not tested here (no expected-compile-failure
harness in the kernel tests).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

import numpy as np
import pytest

from bbgrap_hls.codegen.carray import c_array
from bbgrap_hls.codegen.csim import flags
from bbgrap_hls.model.stage import stage_beat_bytes, stage_region_bytes
from tests.test_hls_kernels import Case, assert_bit_exact, hls_dir, run_cases

pytestmark = [pytest.mark.csim]


@dataclass(frozen=True)
class Spec:
    name: str
    lanes: int
    beats: int  # stream beats per region (a frame's over chunks)
    regions: int
    off: int  # byte offset of region 0 in the image (noise before it)
    chunks: int = 1  # regions a frame

    @property
    def sb(self) -> int:
        return stage_beat_bytes(self.lanes)

    @property
    def region(self) -> int:
        return stage_region_bytes(self.beats, self.lanes)

    @property
    def frames(self) -> int:
        return 2 * self.regions + 1

    @property
    def n(self) -> int:  # int8 elements per frame
        return self.chunks * self.beats * self.lanes


SPECS = [
    Spec("fifo_l1_r3", 1, 24, 3, 4096),  # 96-byte frames in 4 KB regions
    Spec("fifo_l5_r5", 5, 700, 5, 8192),  # 5,600-byte frames: 8 KB regions
    Spec("fifo_l16_r3", 16, 256, 3, 0),  # 4,096-byte frames fill their regions; scratch at byte 0
    Spec("fifo_l2_c3_r4", 2, 200, 4, 4096, chunks=3),  # 1,200-byte frames in three 4 KB regions
]
BY_NAME = {s.name: s for s in SPECS}
TAIL = 4096  # noise bytes after the scratch


def _data(spec: Spec) -> tuple[np.ndarray, np.ndarray]:
    """The case's frames (frames x n int8) and its board-memory image (noise)."""
    rng = np.random.default_rng(7000 + SPECS.index(spec))
    x = rng.integers(-128, 128, (spec.frames, spec.n), dtype=np.int8)
    img = rng.integers(-128, 128, spec.off + spec.regions * spec.region + TAIL, dtype=np.int8)
    return x, img


def _decls(spec: Spec, size: int) -> str:
    return (f"struct F {{ static constexpr int LANES = {spec.lanes}, REGIONS = {spec.regions}, "
            f"CHUNKS = {spec.chunks}; "
            f"static constexpr long BEATS = {spec.beats}, OFF = {spec.off}, REGION = {spec.region}; }};\n"
            f"static int8_t mem[{size}];\n"
            "using W = bb::Word<bb::stage_beat(F::LANES)>;")


def check_image(spec: Spec, x: np.ndarray, img: np.ndarray, mem: np.ndarray) -> None:
    """Region g mod REGIONS holds chunk g (BEATS beats of the stream) for the last REGIONS
    chunks g (word i = beat i's lanes, then zeros); every byte before, after and between the
    chunks as it was."""
    assert mem.size == img.size
    end = spec.off + spec.regions * spec.region
    np.testing.assert_array_equal(mem[:spec.off], img[:spec.off])
    np.testing.assert_array_equal(mem[end:], img[end:])
    used = spec.beats * spec.sb
    chunks = x.reshape(spec.frames * spec.chunks, spec.beats, spec.lanes)
    for f in range(len(chunks) - spec.regions, len(chunks)):
        base = spec.off + (f % spec.regions) * spec.region
        words = mem[base:base + used].reshape(spec.beats, spec.sb)
        np.testing.assert_array_equal(words[:, :spec.lanes], chunks[f], err_msg=f"chunk {f}")
        assert not words[:, spec.lanes:].any(), f"chunk {f}: bytes above the lanes not zero"
        np.testing.assert_array_equal(mem[base + used:base + spec.region], img[base + used:base + spec.region])


# ---- sequential C simulation -----------------------------------------------------------------


def seq_case(spec: Spec) -> Case:
    x, img = _data(spec)
    body = ("  std::memcpy(mem, img, sizeof mem);\n"
            f"  bb::ddr_fifo<F>(in0, out, reinterpret_cast<W*>(mem), reinterpret_cast<const W*>(mem), {spec.frames});\n"
            "  char mem_path[512];\n"
            '  std::snprintf(mem_path, sizeof mem_path, "%s.mem", path);\n'
            "  if (int e = write_bytes(mem_path, mem, sizeof mem)) return e;")
    return Case(spec.name, _decls(spec, img.size), body, [(spec.lanes, x)], spec.lanes, x, consts={"img": img},
                frames=spec.frames)


@pytest.fixture(scope="module")
def seq_outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddr_fifo_seq")
    return d, run_cases([seq_case(s) for s in SPECS], d, "ddr_fifo kernel")


@pytest.mark.parametrize("name", list(BY_NAME))
def test_sequential_bit_exact_and_image(seq_outputs, name):
    d, outs = seq_outputs
    case, got = outs[name]
    assert_bit_exact(name, case, got)
    x, img = _data(BY_NAME[name])
    check_image(BY_NAME[name], x, img, np.fromfile(d / f"{name}.bin.mem", np.int8))


# ---- threaded C simulation: the lag ----------------------------------------------------------

THREAD_PRELUDE = """// generated by tests/test_ddr_fifo_csim.py (threaded C simulation)
#define BB_SIM_THREADS_IMPL
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "bbgrap.h"
static int write_bytes(const char* path, const void* p, size_t n) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return 2;
  size_t w = std::fwrite(p, 1, n, f);
  std::fclose(f);
  return w == n ? 0 : 2;
}
"""


def _thread_case(spec: Spec) -> str:
    """A test top of three processes: `source` writes `ahead` regions' worth (BEATS beats
    each) into `in` before it lets `sink` start (the `go` token), then the rest; ddr_fifo
    between `in` and `out`."""
    x, img = _data(spec)
    return f"""namespace {spec.name} {{
{_decls(spec, img.size)}
constexpr int L = F::LANES, FRAMES = {spec.frames};
constexpr long FB = F::CHUNKS * F::BEATS;  // beats a frame
{c_array("x", x)}{c_array("img", img)}static int8_t y[FRAMES][{spec.n}];
void source(bb::Stream<L>& in, bb::Stream<1>& go, int ahead) {{
  const bb::Beat<1> t = {{{{0}}}};
  for (int f = 0; f < FRAMES; ++f) {{
    for (long i = 0; i < FB; ++i) {{
      if (f * FB + i == ahead * F::BEATS) go.write(t);
      bb::Beat<L> b;
      for (int l = 0; l < L; ++l) b.d[l] = x[f][i * L + l];
      in.write(b);
    }}
  }}
  if (ahead * F::BEATS >= FRAMES * FB) go.write(t);
}}
void sink(bb::Stream<1>& go, bb::Stream<L>& out) {{
  go.read();
  for (int f = 0; f < FRAMES; ++f)
    for (long i = 0; i < FB; ++i) {{
      const bb::Beat<L> b = out.read();
      for (int l = 0; l < L; ++l) y[f][i * L + l] = b.d[l];
    }}
}}
int run(const std::string& path, int ahead) {{
  std::memcpy(mem, img, sizeof mem);
  {{
    bb::Stream<L> in("in"), out("out");
    bb::Stream<1> go("go");
    BB_FIFO_DEPTH(in, 2)
    BB_FIFO_DEPTH(out, 2)
    BB_FIFO_DEPTH(go, 1)
    BB_FIFO_BEATS(in, FB, FRAMES)
    BB_FIFO_BEATS(out, FB, FRAMES)
    BB_DATAFLOW_REGION()
    BB_PROCESS(source(in, go, ahead);)
    BB_PROCESS(bb::ddr_fifo<F>(in, out, reinterpret_cast<W*>(mem), reinterpret_cast<const W*>(mem), FRAMES);)
    BB_PROCESS(sink(go, out);)
  }}
  if (int e = write_bytes(path.c_str(), y, sizeof y)) return e;
  return write_bytes((path + ".mem").c_str(), mem, sizeof mem);
}}
}}  // namespace {spec.name}
"""


@pytest.fixture(scope="module")
def threaded_exe(tmp_path_factory):
    """One binary for every case: ``exe DIR CASE AHEAD`` runs one (and prints the FIFO report)."""
    d = tmp_path_factory.mktemp("ddr_fifo_threads")
    main = ["int main(int argc, char** argv) {", "  if (argc < 4) return 2;",
            "  const std::string dir(argv[1]), name(argv[2]);", "  const int ahead = std::atoi(argv[3]);",
            "  int e = 2;"]
    main += [f'  if (name == "{s.name}") e = {s.name}::run(dir + "/{s.name}.bin", ahead);' for s in SPECS]
    main += ["  BB_CSIM_REPORT()", "  return e;", "}"]
    (d / "t.cpp").write_text(THREAD_PRELUDE + "".join(_thread_case(s) for s in SPECS) + "\n".join(main) + "\n")
    exe = d / "t"
    r = subprocess.run(["g++", *flags(werror=True, threads=True, opt="-O1"), "-I", str(hls_dir()), str(d / "t.cpp"),
                        "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return d, exe


def _run(threaded_exe, spec: Spec, ahead: int) -> subprocess.CompletedProcess:
    d, exe = threaded_exe
    return subprocess.run([str(exe), str(d), spec.name, str(ahead)], capture_output=True, text=True, timeout=120)


TOKEN = "ddr_fifo<F>.ddr_fifo_token"


@pytest.mark.parametrize("ahead", ["0", "regions-1", "regions"])
@pytest.mark.parametrize("name", list(BY_NAME))
def test_threaded_writer_runs_ahead(threaded_exe, name, ahead):
    """The sink reads nothing until the source wrote `ahead` regions' worth: up to REGIONS
    (the writer on region REGIONS - 1 while the reader waits in region 0) the kernel absorbs
    them without deadlock; outputs and image as in the sequential run."""
    spec = BY_NAME[name]
    n_ahead = {"0": 0, "regions-1": spec.regions - 1, "regions": spec.regions}[ahead]
    r = _run(threaded_exe, spec, n_ahead)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "dataflow rule" not in r.stderr, r.stderr
    x, img = _data(spec)
    d = threaded_exe[0]
    got = np.fromfile(d / f"{name}.bin", np.int8)
    assert_bit_exact(name, Case(name, "", "", [], spec.lanes, x, frames=spec.frames), got)
    check_image(spec, x, img, np.fromfile(d / f"{name}.bin.mem", np.int8))
    fifos = {f[1]: f for f in (ln.split("\t") for ln in r.stdout.splitlines()) if f[0] == "fifo"}
    _, _, fill, depth, producer, consumer, *_ = fifos[TOKEN]
    assert int(depth) == spec.regions - 2
    assert producer.endswith("ddr_fifo_write<F>") and consumer.endswith("ddr_fifo_read<F>")
    if n_ahead == spec.regions:
        assert int(fill) == spec.regions - 2  # the writer used the whole ring
    procs = {p[2]: int(p[3]) for p in (ln.split("\t") for ln in r.stdout.splitlines()) if p[0] == "proc"}
    assert procs["ddr_fifo_write<F>"] == procs["ddr_fifo_read<F>"] == spec.frames * spec.chunks * spec.beats


@pytest.mark.parametrize("name", ["fifo_l5_r5", "fifo_l2_c3_r4"])
def test_threaded_writer_beyond_the_ring_deadlocks(threaded_exe, name):
    """REGIONS + 1 regions' worth before the sink may read: the writer, its token stream full at
    REGIONS - 2, waits for the reader, which waits for room in `out`: the watchdog stops the
    run (exit 1) naming the full token stream. So the depth is REGIONS - 2, not more."""
    spec = BY_NAME[name]
    r = _run(threaded_exe, spec, spec.regions + 1)
    assert r.returncode == 1, (r.returncode, r.stderr[-3000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("deadlock: stream ")]
    assert any(ln.startswith(f"deadlock: stream {TOKEN}: ") and
               ln.endswith(f"fill {spec.regions - 2} of depth {spec.regions - 2} (full: the producer waits)")
               for ln in lines), r.stderr


# ---- what synthesis reads --------------------------------------------------------------------

PRAGMA_SRC = """#include "bbgrap.h"
struct F { static constexpr int LANES = 5, REGIONS = 4, CHUNKS = 1; static constexpr long BEATS = 700, OFF = 8192, REGION = 8192; };
void top(bb::Stream<5>& in, bb::Stream<5>& out, bb::Word<8>* w, const bb::Word<8>* r, int n) {
  bb::ddr_fifo<F>(in, out, w, r, n);
}
"""


def test_synthesis_sees_one_free_running_dataflow_region(tmp_path):
    """With __SYNTHESIS__ (the pragmas on, as test_hls_conv_dataflow's check) the kernel is one
    DATAFLOW region of the two processes over all frames, the token stream at depth
    REGIONS - 2; the sequential C simulation (neither __SYNTHESIS__ nor BB_CSIM_THREADS)
    alternates them instead."""
    src = tmp_path / "f.cpp"
    src.write_text(PRAGMA_SRC)
    gxx = ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic-errors", "-I", str(hls_dir())]
    r = subprocess.run(gxx + ["-D__SYNTHESIS__", "-Wno-unknown-pragmas", "-Wno-unused-label", "-fsyntax-only",
                              str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    bodies = {}
    for mode, extra in (("synthesis", ["-D__SYNTHESIS__"]), ("sequential", [])):
        r = subprocess.run(gxx + extra + ["-E", str(src)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        text = r.stdout[r.stdout.index("void ddr_fifo("):]
        bodies[mode] = text[:text.index("\n}\n")]
    syn = bodies["synthesis"]
    assert "#pragma HLS DATAFLOW" in syn
    assert "#pragma HLS STREAM variable = tok depth = TOK" in syn and "TOK = F::REGIONS - 2;" in syn
    assert "const int chunks = frames * F::CHUNKS;" in syn  # every region of every frame
    assert re.search(r"ddr_fifo_write<F>\(in, fddr_w, tok, 0, chunks\);\s*ddr_fifo_read<F>\(fddr_r, tok, out, "
                     r"chunks\);", syn)
    assert "for (int g = 0;" not in syn and "for (int g = 0;" in bodies["sequential"]
