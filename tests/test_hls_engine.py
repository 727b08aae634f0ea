"""The layer engine's HLS kernel (hw/hls/conv_engine.h) in C simulation, bit-exact.

Chains of random layers are laid out by `engine_image.program`, run for two frames (two
kernel calls, each frame's input written over the last) by tests/engine_tb.cpp, and every
layer's output map is read back from the feature memory (`engine_image.read_features`) and
compared byte for byte with `engine_image.reference`. One g++ build holds every engine
configuration (``PE``, ``SIMD``, beat bytes; the buffers sized by the programs it runs). A
program laid out for a small input buffer (`engine_image.program`'s ``max_in_bytes``) runs
its layers as row bands on an engine whose buffer holds only the largest band.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen.csim import flags
from sim.golden import random_rq
from tests.test_hls_kernels import hls_dir

pytestmark = pytest.mark.csim
FRAMES = 2
FILL = 0x5A  # the testbench's feature memory before the first frame (engine_tb.cpp)

CONFIGS = {
    "pe4_simd4": (4, 4, 64),  # PE = SIMD, words of a quarter beat
    "pe8_simd4": (8, 4, 16),  # PE = 2·SIMD, a word two beats
    "pe8_simd2": (8, 2, 64),  # PE = 4·SIMD
    "pe6_simd3": (6, 3, 16),  # PE·SIMD = 18 bytes: words and results straddle beats
}
"""name: (pe, simd, beat bytes) of each engine the testbench builds."""

# (co, (kh, kw), (sh, sw), (top, left, bottom, right)) of each layer after the input (h, w, c)
PROGRAMS = {
    "conv_chain": ((6, 6, 5), [
        (7, (3, 3), (1, 1), (1, 1, 1, 1)),   # 3x3 "same"
        (11, (1, 1), (1, 1), (0, 0, 0, 0)),  # pointwise
        (10, (3, 2), (2, 1), (2, 0, 1, 1)),  # strided (SH != SW), asymmetric padding: 4 x 6
        (12, (4, 6), (1, 1), (0, 0, 0, 0)),  # the whole map (flatten + dense): 1 x 1
        (9, (1, 1), (1, 1), (0, 0, 0, 0)),   # dense
    ]),
    "dense_chain": ((1, 1, 20), [(13, (1, 1), (1, 1), (0, 0, 0, 0)), (6, (1, 1), (1, 1), (0, 0, 0, 0))]),
    "band_chain": ((13, 8, 5), [
        (9, (3, 3), (1, 1), (1, 1, 1, 1)),   # 3x3 "same": banded, top and bottom bands padded
        (10, (3, 3), (2, 2), (1, 1, 1, 1)),  # stride 2: banded
        (7, (1, 1), (1, 1), (0, 0, 0, 0)),   # pointwise
    ]),
}
"""name: (input shape, layers) of each program; channel counts not multiples of PE."""

BANDS = {"pe4_simd4": 768, "pe8_simd4": 384, "pe8_simd2": 640, "pe6_simd3": 480}
"""cfg: the input buffer bytes (``max_in_bytes``) band_chain is laid out for on engine cfg: its
first two layers in 2–3 and 2–7 bands (pe4_simd4: 32-byte rows on 64-byte beats, a band's
reads from mid-beat; pe8_simd4: three bands of the 3x3 conv, a middle one unpadded, and the
pointwise conv banded too). The engine ``cfg_band`` has the input buffer of its largest band."""

SMALL = {"pe4_simd4_ibuf": "IBUF_WORDS", "pe4_simd4_tile": "TILE_WORDS"}
"""pe4_simd4 with one buffer sized for conv_chain's first layer (`small`): too small for a
later one."""


def chain(name: str, seed: int = 5) -> tuple[list[ei.EngineLayer], list[np.ndarray]]:
    """Program ``name``'s layers with random int8 weights and requantisers scaled to the data
    (`random_rq`: outputs span the int8 range), layer i + 1's zp_in layer i's zp_out, and
    ``FRAMES`` random input maps."""
    rng = np.random.default_rng(seed)
    (h, w, c), specs = PROGRAMS[name]
    xs = [rng.integers(-128, 128, (h, w, c), dtype=np.int8) for _ in range(FRAMES)]
    layers: list[ei.EngineLayer] = []
    x, zp = xs[0].astype(np.int64), int(rng.integers(-10, 11))
    for co, k, stride, pads in specs:
        wts = rng.integers(-128, 128, (co, *k, c), dtype=np.int8)
        # accumulator scale: sqrt(K) · rms(x) · std(w) for zero-mean weights
        scale = float(np.sqrt(wts[0].size) * np.sqrt(np.mean(x.astype(np.float64) ** 2) + 1.0) * 74.0)
        rq = random_rq(rng, co, scale)
        bias = rng.integers(-scale // 2, scale // 2 + 1, co) - zp * wts.astype(np.int64).reshape(co, -1).sum(1)
        layer = ei.EngineLayer(h, w, wts, bias, rq[:, 0], rq[:, 1], zp_in=zp, zp_out=int(rq[0, 2]),
                               lo=int(rq[0, 3]), hi=int(rq[0, 4]), stride=stride, pads=pads)
        layers.append(layer)
        x = ei.reference([layer], x).astype(np.int64)
        (h, w), c, zp = layer.out_hw, co, layer.zp_out
    return layers, xs


def ibuf_words(layer: ei.EngineLayer, pe: int, simd: int) -> int:
    """Input buffer words (SIMD bytes) of a layer's input map, channels padded to PE."""
    return layer.h * layer.w * -(-layer.c // pe) * pe // simd


def tile_words(layer: ei.EngineLayer, pe: int, simd: int) -> int:
    """Words (PE·SIMD bytes) of a layer's tile without its padding: PW + SF."""
    return sum(ei.tile_layout(layer, pe, simd, simd)[:2])


def small(cfg: str) -> tuple[int, int]:
    """(IBUF_WORDS, TILE_WORDS) of `SMALL` engine ``cfg``."""
    pe, simd, _ = CONFIGS["pe4_simd4"]
    first = chain("conv_chain")[0][0]
    ibuf, tile = sizes(pe, simd)
    if SMALL[cfg] == "IBUF_WORDS":
        return ibuf_words(first, pe, simd), tile
    return ibuf, tile_words(first, pe, simd)


def banded(cfg: str) -> tuple[list[ei.EngineLayer], list[np.ndarray], ei.Program]:
    """band_chain laid out for engine ``cfg``'s `BANDS` input buffer."""
    pe, simd, beat = CONFIGS[cfg]
    layers, xs = chain("band_chain")
    return layers, xs, ei.program(layers, pe, simd, beat, BANDS[cfg])


def band_ibuf(cfg: str) -> int:
    """IBUF_WORDS of engine ``cfg_band``: the largest band's input rows."""
    pe, simd, _ = CONFIGS[cfg]
    return max(r[0] * r[1] * r[2] for r in banded(cfg)[2].descriptors) // simd


def sizes(pe: int, simd: int) -> tuple[int, int]:
    """(IBUF_WORDS, TILE_WORDS) for every program: its largest input map and tile (PW + SF
    words; the RTL's parameters of the same names)."""
    layers = [layer for name in PROGRAMS for layer in chain(name)[0]]
    ibuf = max(ibuf_words(layer, pe, simd) for layer in layers)
    return ibuf, max(tile_words(layer, pe, simd) for layer in layers)


BATCH = 2
"""Frames a call of the batched programs (`test_engine_batched_bit_exact`); engine ``cfg_batch``
has ``BATCH`` times ``cfg``'s input buffer."""


SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
"""Extra g++ flags of the in-bounds build (`test_engine_stays_in_bounds`)."""


def build(d: Path, extra: list[str]) -> subprocess.CompletedProcess:
    """Build the testbench of every engine in `CONFIGS` (and `SMALL`) as ``d/tb``: the csim
    flags at -O1 with -Werror, then ``extra``."""
    rows = []
    for name, (pe, simd, beat) in CONFIGS.items():
        ibuf, tile = sizes(pe, simd)
        rows.append(f"X({name}, {pe}, {simd}, {beat}, {ibuf}, {tile})")
        rows.append(f"X({name}_band, {pe}, {simd}, {beat}, {band_ibuf(name)}, {tile})")
        rows.append(f"X({name}_batch, {pe}, {simd}, {beat}, {BATCH * ibuf}, {tile})")
        if name == "pe4_simd4":
            rows += [f"X({cfg}, {pe}, {simd}, {beat}, {', '.join(map(str, small(cfg)))})" for cfg in SMALL]
    (d / "engine_configs.h").write_text("#define BB_ENGINE_CONFIGS(X) " + " ".join(rows) + "\n")
    src = d / "engine_tb.cpp"
    shutil.copy(Path(__file__).with_name("engine_tb.cpp"), src)
    return subprocess.run(["g++", *flags(werror=True, opt="-O1"), *extra, "-I", str(d), "-I", str(hls_dir()),
                           str(src), "-o", str(d / "tb")], capture_output=True, text=True)


@pytest.fixture(scope="module")
def tb(tmp_path_factory) -> Path:
    """The testbench binary, built once."""
    d = tmp_path_factory.mktemp("engine_tb")
    r = build(d, [])
    assert r.returncode == 0, r.stderr[-4000:]
    return d / "tb"


def run(tb: Path, d: Path, cfg: str, prog: ei.Program, xs: list[np.ndarray], pe: int) -> tuple[list[int], list[bytes]]:
    """Run ``prog`` on the frames ``xs`` with engine ``cfg``: (the kernel's status per frame,
    the feature memory after each frame)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "prog.bin").write_bytes(np.array(prog.descriptors, dtype="<i4").tobytes())
    (d / "w.bin").write_bytes(prog.weights)
    for f, x in enumerate(xs):
        (d / f"in{f}.bin").write_bytes(ei.feature_bytes(x, pe, prog.in_stride))
    r = subprocess.run([str(tb), str(d), cfg, str(len(xs)), str(prog.feature_size), str(prog.in_base)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr[-2000:]
    status = [int(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("status ")]
    return status, [(d / f"mem{f}.bin").read_bytes() for f in range(len(xs))]


def outputs(layers: list[ei.EngineLayer], prog: ei.Program, mem: bytes, pe: int) -> list[np.ndarray]:
    """Every layer's output map as the engine left it in the feature memory ``mem``."""
    return [ei.read_features(mem, m.base, m.h, m.w, layer.co, pe, m.stride)
            for layer, m in zip(layers, prog.maps[1:], strict=True)]


def test_programs_span_the_int8_range():
    """The random requantisers make every layer's outputs spread over the int8 range (so a
    wrong accumulator or rounding shows), some clamped."""
    for name in PROGRAMS:
        layers, xs = chain(name)
        for i in range(len(layers)):
            y = ei.reference(layers[:i + 1], xs[0])
            assert int(y.max()) - int(y.min()) >= 80 or y.size < 16, (name, i, y.min(), y.max())


def assert_bit_exact(tb: Path, d: Path, cfg: str, program: str, bands: bool = False) -> None:
    """Run ``program`` on engine ``cfg`` for two frames: every layer's output map equals the
    integer reference, byte for byte. ``bands``: band_chain in row bands (`banded`) on
    engine ``cfg_band``."""
    pe, simd, beat = CONFIGS[cfg]
    if bands:
        layers, xs, prog = banded(cfg)
    else:
        layers, xs = chain(program)
        prog = ei.program(layers, pe, simd, beat)
    status, mems = run(tb, d, f"{cfg}_band" if bands else cfg, prog, xs, pe)
    assert status == [0] * FRAMES
    for f, (x, mem) in enumerate(zip(xs, mems, strict=True)):
        for i, got in enumerate(outputs(layers, prog, mem, pe)):
            want = ei.reference(layers[:i + 1], x)
            bad = np.argwhere(got != want)
            assert bad.size == 0, (f"{cfg} {program} frame {f} layer {i}: {len(bad)} bytes differ, first at "
                                   f"(y, x, c) = {tuple(bad[0])}: got {got[tuple(bad[0])]}, want {want[tuple(bad[0])]}")


@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_engine_bit_exact(tb, tmp_path, cfg, program):
    """Two frames of a program: every layer's output map equals the integer reference (the
    second frame after the first left its state in the kernel's buffers)."""
    assert_bit_exact(tb, tmp_path, cfg, program)


def assert_batched_bit_exact(tb: Path, d: Path, cfg: str, program: str) -> None:
    """``program`` laid out for `BATCH` frames a call (docs/engine.md, "Batched frames": each
    fold's tile computes every frame's pixels), two calls on engine ``cfg_batch``: every
    frame's every layer output equals the integer reference."""
    pe, simd, beat = CONFIGS[cfg]
    layers, xs = chain(program)
    rng = np.random.default_rng(11)
    xs = xs + [rng.integers(-128, 128, xs[0].shape, dtype=np.int8) for _ in range(BATCH * FRAMES - len(xs))]
    prog = ei.program(layers, pe, simd, beat, frames=BATCH)
    assert prog.frames == BATCH and all(r[ei.FIELDS.index("FRAMES")] == BATCH for r in prog.descriptors)
    blobs = []
    for call in range(FRAMES):
        blob = bytearray(prog.feature_size - prog.in_base)
        for b in range(BATCH):
            img = ei.feature_bytes(xs[call * BATCH + b], pe, prog.in_stride)
            blob[b * prog.frame_stride:b * prog.frame_stride + len(img)] = img
        blobs.append(bytes(blob))
    d.mkdir(parents=True, exist_ok=True)
    (d / "prog.bin").write_bytes(np.array(prog.descriptors, dtype="<i4").tobytes())
    (d / "w.bin").write_bytes(prog.weights)
    for f, blob in enumerate(blobs):
        (d / f"in{f}.bin").write_bytes(blob)
    r = subprocess.run([str(tb), str(d), f"{cfg}_batch", str(FRAMES), str(prog.feature_size), str(prog.in_base)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [int(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("status ")] == [0] * FRAMES
    for call in range(FRAMES):
        mem = (d / f"mem{call}.bin").read_bytes()
        for b in range(BATCH):
            x = xs[call * BATCH + b]
            for i, (layer, m) in enumerate(zip(layers, prog.maps[1:], strict=True)):
                got = ei.read_features(mem, m.base + b * prog.frame_stride, m.h, m.w, layer.co, pe, m.stride)
                want = ei.reference(layers[:i + 1], x)
                assert np.array_equal(got, want), f"{cfg} {program} call {call} frame {b} layer {i} differs"


@pytest.mark.parametrize("program", ["conv_chain", "band_chain"])
@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_engine_batched_bit_exact(tb, tmp_path, cfg, program):
    """Batched frames: every frame of two calls of `BATCH` frames bit-exact."""
    assert_batched_bit_exact(tb, tmp_path, cfg, program)


@pytest.mark.parametrize("cfg", list(CONFIGS))
def test_engine_bands_bit_exact(tb, tmp_path, cfg):
    """band_chain's layers as row bands (the 3x3 conv's top band with its top padding, middle
    bands without, the bottom band with its bottom padding; the stride-2 conv reading the
    banded layer's map) on an engine whose input buffer holds the largest band, less than the
    largest whole map: every layer's output equals the whole-layer reference."""
    pe, simd, _ = CONFIGS[cfg]
    layers, _, prog = banded(cfg)
    assert prog.bands[0] >= 2 and prog.bands[1] >= 2, prog.bands
    assert band_ibuf(cfg) < max(ibuf_words(layer, pe, simd) for layer in layers)
    assert_bit_exact(tb, tmp_path, cfg, "band_chain", bands=True)


def test_engine_stays_in_bounds(tmp_path):
    """Every case again, built with AddressSanitizer and UBSan (the buffers sized exactly for
    the programs: `sizes`): no read or write past a buffer or a memory, no overflow."""
    r = build(tmp_path, SANITIZE)
    if r.returncode != 0 and "asan" in r.stderr:
        pytest.skip("g++ has no sanitizer runtime here")
    assert r.returncode == 0, r.stderr[-4000:]
    for cfg in CONFIGS:
        for program in PROGRAMS:
            assert_bit_exact(tmp_path / "tb", tmp_path / f"{cfg}_{program}", cfg, program)
        assert_bit_exact(tmp_path / "tb", tmp_path / f"{cfg}_bands", cfg, "band_chain", bands=True)
        assert_batched_bit_exact(tmp_path / "tb", tmp_path / f"{cfg}_batched", cfg, "band_chain")


def _corrupt(kind: str, prog: ei.Program, xs: list[np.ndarray]):
    """``prog`` and ``xs`` with one thing changed (a descriptor field, weight, record or input)."""
    rows = [list(r) for r in prog.descriptors]
    weights, xs = bytearray(prog.weights), [x.copy() for x in xs]
    if kind == "zp_out":  # layer 0 writes its outputs one higher (then clamped)
        rows[0][ei.FIELDS.index("ZP_OUT")] += 1
    elif kind == "zp_in":  # layer 2 pads with another value
        rows[2][ei.FIELDS.index("ZP_IN")] += 3
    elif kind == "weight":  # one weight byte of layer 1's tile 0
        weights[rows[1][ei.FIELDS.index("W_BASE")] + 8 * 4 + 1] ^= 0x40
    elif kind == "shift":  # the dense layer's first channel's shift one less
        weights[rows[4][ei.FIELDS.index("W_BASE")] + 4] -= 1
    elif kind == "input":  # one input byte of each frame
        for x in xs:
            x[2, 3, 1] ^= 0x10
    return dataclasses.replace(prog, descriptors=rows, weights=bytes(weights)), xs


@pytest.mark.parametrize("kind", ["zp_out", "zp_in", "weight", "shift", "input"])
def test_engine_corruption_shows(tb, tmp_path, kind):
    """A changed descriptor field, weight, requantiser record or input byte changes some
    layer's output map in some frame: the comparison of `test_engine_bit_exact` can fail."""
    cfg = "pe4_simd4"
    pe, simd, beat = CONFIGS[cfg]
    layers, xs = chain("conv_chain")
    prog = ei.program(layers, pe, simd, beat)
    bad_prog, bad_xs = _corrupt(kind, prog, xs)
    status, mems = run(tb, tmp_path, cfg, bad_prog, bad_xs, pe)
    assert status == [0] * FRAMES
    assert any(not np.array_equal(got, ei.reference(layers[:i + 1], x))
               for x, mem in zip(xs, mems, strict=True) for i, got in enumerate(outputs(layers, prog, mem, pe)))


@pytest.mark.parametrize("cfg", list(SMALL))
def test_engine_rejects_a_layer_that_does_not_fit(tb, tmp_path, cfg):
    """A program with an input map (a tile) past IBUF_WORDS (TILE_WORDS) after layers that
    fit: the kernel returns 1 + that layer's index and runs no layer (the feature memory keeps
    the testbench's fill past the input)."""
    pe, simd, beat = CONFIGS["pe4_simd4"]
    layers, xs = chain("conv_chain")
    prog = ei.program(layers, pe, simd, beat)
    need = {"IBUF_WORDS": ibuf_words, "TILE_WORDS": tile_words}[SMALL[cfg]]
    limit = small(cfg)[SMALL[cfg] == "TILE_WORDS"]
    first = next(i for i, layer in enumerate(layers) if need(layer, pe, simd) > limit)
    assert first > 0
    status, mems = run(tb, tmp_path, cfg, prog, xs, pe)
    assert status == [first + 1] * FRAMES
    start = prog.descriptors[0][ei.FIELDS.index("OUT_BASE")]
    assert set(mems[-1][start:]) == {FILL}
