"""The layer engine's program and memory images (docs/engine.md).

The layer engine (`hw/rtl/conv_engine.sv`, HLS `bb::conv_engine`) is one conv/dense unit of
``pe`` x ``simd`` lanes time-shared over a program of layers: per frame it runs the layers in
order, each reading its input feature map from a board memory, its weights and per-channel
parameters from a board memory, and writing its output feature map back. This module is the
one definition of what the hardware reads, shared by the generator, the HLS C simulation and
the RTL twin:

- `EngineLayer`: one conv (or dense: a 1 x 1 map) with its int8 weights and requantisers.
- `feature_bytes` / `read_features`: a feature map's *blocked* layout (``G = pe`` channels a
  block, each pixel-major; blocks one after the other, or at a beat-aligned block stride).
- `program`: the layers' descriptors (`FIELDS`, one 32-bit word each; a layer whose input map
  does not fit the input buffer runs as several row *bands*, one descriptor each), the weight
  image and the feature memory's size.
- `load_runs` / `store_runs` / `in_buffer_bytes`: what a descriptor makes the engine read and
  write (the hardware, the model and the tests share them).
- `reference`: the layers run one after the other on the project's integer reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.quant import arith

FIELDS = ("H", "W", "C", "CO", "KH", "KW", "SH", "SW", "PT", "PL", "PB", "PR",
          "ZP_IN", "ZP_OUT", "LO", "HI", "IN_BASE", "OUT_BASE", "W_BASE", "TILE_BEATS",
          "IN_STRIDE", "OUT_STRIDE", "FRAMES", "FRAME_STRIDE")
"""A step's descriptor (a layer, or a row band of one), one 32-bit word per field in this order
(``PROG_FILE`` of the RTL, ``bb::EngineLayer`` of the HLS kernel). ``H``, ``PT``, ``PB``: the
input rows the step reads and the padding it really has; ``C`` and ``CO`` are padded
(multiples of ``pe``); ``ZP_IN`` (the padding value), ``ZP_OUT``, ``LO``, ``HI`` are signed
int8 values; ``IN_BASE`` (any byte), ``OUT_BASE``, ``W_BASE`` (multiples of the AXI beat) byte
offsets in the feature and weight memories; ``TILE_BEATS`` the beats of one fold's tile
(`tile_layout`); ``IN_STRIDE`` / ``OUT_STRIDE`` the bytes between consecutive channel blocks of
the input and output maps: the block's own bytes (``H·W·pe``, ``Ho·Wo·pe``: the blocks
abut, one run) or a multiple of the beat (a run per block: `load_runs`, `store_runs`);
``FRAMES`` (at least 1) the frames the step computes with each fold's tile (docs/engine.md,
"Batched frames"), frame ``f``'s input and output maps ``f·FRAME_STRIDE`` bytes after frame
0's (a multiple of the beat; with ``FRAMES > 1``, ``OUT_STRIDE`` must be one too)."""

RECORD_BYTES = 8
"""A requantiser record in a tile: bias' (int32) then ``(m << 8) | s`` (uint32), little-endian."""


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


@dataclass(frozen=True)
class EngineLayer:
    """A conv of ``weights`` [co, kh, kw, c] int8 (dilation 1, group 1; dense: h = w = kh =
    kw = 1), ``bias`` [co] int32 with ``-zp_in·Σw`` folded in, requantisers ``m`` (< 2^24),
    ``s`` (1..62) per channel and ``zp_out``, ``lo``, ``hi`` for all, padding ``pads`` = (top,
    left, bottom, right) filled with ``zp_in``."""

    h: int
    w: int
    weights: np.ndarray
    bias: np.ndarray
    m: np.ndarray
    s: np.ndarray
    zp_in: int = 0
    zp_out: int = 0
    lo: int = -128
    hi: int = 127
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)

    @property
    def c(self) -> int:
        return self.weights.shape[3]

    @property
    def co(self) -> int:
        return self.weights.shape[0]

    @property
    def k(self) -> tuple[int, int]:
        return self.weights.shape[1], self.weights.shape[2]

    @property
    def out_hw(self) -> tuple[int, int]:
        (kh, kw), (sh, sw), (t, left, b, r) = self.k, self.stride, self.pads
        return (self.h + t + b - kh) // sh + 1, (self.w + left + r - kw) // sw + 1


def feature_bytes(x: np.ndarray, g: int, stride: int | None = None) -> bytes:
    """An [H, W, C] int8 map in the blocked layout: channels padded with zeros to a multiple
    of ``g``, block ``b`` (channels ``b·g .. b·g + g − 1``) at ``b·stride``, pixel ``p = y·W + x``
    of a block at ``p·g``: byte ``b·stride + p·g + j`` is channel ``b·g + j`` of pixel ``p``.
    ``stride`` None: ``H·W·g``, the blocks contiguous; else at least that (the gaps zero); the
    bytes end with the last block's."""
    h, w, c = x.shape
    cp = _up(c, g)
    xp = np.zeros((h * w, cp), np.int8)
    xp[:, :c] = np.asarray(x, np.int8).reshape(h * w, c)
    blocks = xp.reshape(h * w, cp // g, g).transpose(1, 0, 2)
    if stride is None or stride == h * w * g:
        return blocks.tobytes()
    if stride < h * w * g:
        raise ValueError(f"feature_bytes: block stride {stride} below a block's {h * w * g} bytes")
    out = np.zeros((cp // g, stride), np.int8)
    out[:, :h * w * g] = blocks.reshape(cp // g, -1)
    return out.tobytes()[:(cp // g - 1) * stride + h * w * g]


def read_features(mem: bytes, base: int, h: int, w: int, c: int, g: int, stride: int | None = None) -> np.ndarray:
    """The [H, W, C] map stored at ``base`` in the blocked layout (`feature_bytes`, blocks
    ``stride`` bytes apart; None: contiguous)."""
    cp, blk = _up(c, g), h * w * g
    step = blk if stride is None else stride
    raw = np.stack([np.frombuffer(bytes(mem[base + b * step:base + b * step + blk]), np.int8)
                    for b in range(cp // g)])
    return raw.reshape(cp // g, h * w, g).transpose(1, 0, 2).reshape(h, w, cp)[:, :, :c].copy()


def tile_layout(layer: EngineLayer, pe: int, simd: int, beat: int) -> tuple[int, int, int]:
    """``(params_words, sf, tile_beats)`` of a layer's fold tile: ``params_words`` words of
    ``pe·simd`` bytes holding the fold's ``pe`` requantiser records (`RECORD_BYTES` each,
    channel order, zero-padded to whole words), then ``sf = kh·kw·Cp/simd`` weight words, the
    tile zero-padded to whole beats of ``beat`` bytes."""
    kh, kw = layer.k
    wb = pe * simd
    pw = -(-RECORD_BYTES * pe // wb)
    sf = kh * kw * _up(layer.c, pe) // simd
    return pw, sf, -(-(pw + sf) * wb // beat)


def _tiles(layer: EngineLayer, pe: int, simd: int, beat: int) -> bytes:
    """A layer's weight image: its folds' tiles back to back (`tile_layout`). Weight word
    ``s`` of fold ``n``, lane ``i·simd + j``: output channel ``n·pe + i``, window element
    ``s·simd + j`` in (ky, kx, c) order over the padded channels (as `conv_offchip`'s image)."""
    pw, sf, tb = tile_layout(layer, pe, simd, beat)
    kh, kw = layer.k
    cp, cop = _up(layer.c, pe), _up(layer.co, pe)
    w = np.zeros((cop, kh, kw, cp), np.int8)
    w[:layer.co, :, :, :layer.c] = layer.weights
    rec = np.zeros((cop, 2), np.uint32)
    rec[:layer.co, 0] = np.asarray(layer.bias, np.int64).astype(np.int32).view(np.uint32)
    rec[:layer.co, 1] = (np.asarray(layer.m, np.int64) << 8 | np.asarray(layer.s, np.int64)).astype(np.uint32)
    out = bytearray()
    for n in range(cop // pe):
        tile = bytearray(tb * beat)
        params = rec[n * pe:(n + 1) * pe].astype("<u4").tobytes()
        tile[:len(params)] = params
        fold = w[n * pe:(n + 1) * pe].reshape(pe, sf, simd).transpose(1, 0, 2)  # [s][i][j]
        tile[pw * pe * simd:(pw + sf) * pe * simd] = fold.tobytes()
        out += tile
    return bytes(out)


@dataclass(frozen=True)
class FeatureMap:
    """Where a map lives in the feature memory: ``base`` (beat-aligned), its shape (``c`` the
    true channels) and ``stride``, the bytes between its blocks (`feature_bytes`)."""

    base: int
    h: int
    w: int
    c: int
    stride: int


@dataclass(frozen=True)
class Program:
    """What the engine is given: ``descriptors`` (a row of `FIELDS` per step: a layer, or a row
    band of one), the weight memory's image, the feature memory's size and where the frame's
    input and output are; ``maps`` the input map then every layer's output map, ``bands`` each
    layer's steps (layer ``i``'s descriptors follow layer ``i − 1``'s)."""

    descriptors: list[list[int]]
    weights: bytes
    feature_size: int
    in_base: int
    out_base: int
    maps: list[FeatureMap] = field(default_factory=list)
    bands: list[int] = field(default_factory=list)
    frames: int = 1
    frame_stride: int = 0
    """``frames`` frames a start (every step's ``FRAMES``), frame ``f``'s maps ``f·frame_stride``
    bytes after frame 0's (``maps``, ``in_base``, ``out_base``: frame 0's)."""

    @property
    def in_stride(self) -> int | None:
        """The frame input's block stride (`feature_bytes`' ``stride``)."""
        return self.maps[0].stride if self.maps else None


def load_runs(row, pe: int, beat: int) -> tuple[int, int, int]:
    """``(runs, beats, skip)``: a step reads ``runs`` runs of ``beats`` beats, run ``r`` from the
    beat holding ``IN_BASE + r·IN_STRIDE``, whose first ``skip = IN_BASE mod beat`` bytes it
    ignores. Blocks that abut off the beat (``IN_STRIDE = H·W·pe``, and it or ``IN_BASE`` not
    a multiple of the beat): one run of the whole map; else (``IN_STRIDE`` a multiple of the
    beat) a run per block of ``H·W·pe`` bytes (the RTL loads them a chunk of each in turn)."""
    f = _named(row)
    hwpe, skip = f["H"] * f["W"] * pe, f["IN_BASE"] % beat
    _frames(f, beat)
    if f["H"] * f["W"] >= 1 << 24 or f["W"] * pe >= 1 << 24:
        raise ValueError(f"engine: a {f['H']} x {f['W']} input map: the conv unit takes maps under 2^24 pixels "
                         "and rows under 2^24 bytes (its 24-bit size products)")
    if f["IN_STRIDE"] == hwpe and (hwpe % beat or skip):
        return 1, -(-(skip + f["H"] * f["W"] * f["C"]) // beat), skip
    if f["IN_STRIDE"] % beat or f["IN_STRIDE"] < hwpe:
        raise ValueError(f"engine: IN_STRIDE {f['IN_STRIDE']} is neither H·W·PE = {hwpe} nor a multiple "
                         f"of the {beat}-byte beat at least that")
    return f["C"] // pe, -(-(skip + hwpe) // beat), skip


def _frames(f: dict, beat: int) -> int:
    """A descriptor's ``FRAMES``, checked with its ``FRAME_STRIDE``."""
    n = f["FRAMES"]
    if n < 1 or n >= 1 << 16:
        raise ValueError(f"engine: FRAMES {n} must be 1 .. 65535")
    if n > 1 and (f["FRAME_STRIDE"] % beat or f["FRAME_STRIDE"] <= 0):
        raise ValueError(f"engine: FRAME_STRIDE {f['FRAME_STRIDE']} of a {n}-frame step must be a positive "
                         f"multiple of the {beat}-byte beat")
    return n


def store_runs(row, pe: int, beat: int) -> tuple[int, int, bool]:
    """``(runs, beats, flush)`` of each frame (``FRAMES``): a step writes ``runs`` runs of ``beats``
    beats a frame, run ``r`` from ``OUT_BASE + r·OUT_STRIDE`` (beat-aligned; frame ``f``'s
    ``f·FRAME_STRIDE`` later), the last beat of a run zero-padded. ``flush`` (``OUT_STRIDE`` a
    multiple of the beat): each fold's results start a new beat, a run per fold, the runs one
    when they abut (``OUT_STRIDE`` = a fold's beats, and one frame); else (``OUT_STRIDE =
    Ho·Wo·pe``, the blocks abut; one frame) the folds packed one after the other, one run. With
    ``FRAMES > 1`` the runs are written fold by fold, each fold's frames in turn."""
    f = _named(row)
    frames = _frames(f, beat)
    ho, wo = step_out_hw(f)
    blk, nf = ho * wo * pe, f["CO"] // pe
    if f["OUT_BASE"] % beat:
        raise ValueError(f"engine: OUT_BASE {f['OUT_BASE']} is not a multiple of the {beat}-byte beat")
    if f["OUT_STRIDE"] % beat:
        if f["OUT_STRIDE"] != blk:
            raise ValueError(f"engine: OUT_STRIDE {f['OUT_STRIDE']} is neither Ho·Wo·PE = {blk} nor a multiple "
                             f"of the {beat}-byte beat")
        if frames > 1:
            raise ValueError(f"engine: a {frames}-frame step needs OUT_STRIDE a multiple of the {beat}-byte "
                             f"beat, not {f['OUT_STRIDE']}")
        return 1, -(-blk * nf // beat), False
    fold = -(-blk // beat)
    if f["OUT_STRIDE"] < fold * beat:
        raise ValueError(f"engine: OUT_STRIDE {f['OUT_STRIDE']} below a fold's {fold} beats")
    return (1, nf * fold, True) if f["OUT_STRIDE"] == fold * beat and frames == 1 else (nf, fold, True)


def in_buffer_bytes(row, pe: int, beat: int) -> int:
    """Bytes of the RTL's input buffer a step fills (whole beats, as `load_runs` reads them;
    ``FRAMES`` frames' inputs one after the other)."""
    runs, beats, _ = load_runs(row, pe, beat)
    return runs * beats * beat * _named(row)["FRAMES"]


def step_out_hw(row) -> tuple[int, int]:
    """A descriptor's output rows and columns."""
    f = _named(row)
    return ((f["H"] + f["PT"] + f["PB"] - f["KH"]) // f["SH"] + 1,
            (f["W"] + f["PL"] + f["PR"] - f["KW"]) // f["SW"] + 1)


def _named(row) -> dict[str, int]:
    return row if isinstance(row, dict) else dict(zip(FIELDS, row, strict=True))


def band_step(layer: EngineLayer, pe: int, r0: int, r1: int, src: FeatureMap, dst: FeatureMap, w_base: int,
              tb: int, frames: int = 1, frame_stride: int = 0) -> list[int]:
    """The descriptor computing output rows ``[r0, r1)`` of ``layer`` from map ``src`` into
    ``dst``: the input rows those rows' windows touch (clipped at the map's edges), the padding
    they really have (the whole layer: its own rows and pads); for ``frames`` frames whose
    maps are ``frame_stride`` bytes apart."""
    (kh, kw), (sh, sw), (t, left, b, r) = layer.k, layer.stride, layer.pads
    ho, wo = layer.out_hw
    if (r0, r1) == (0, ho):
        first, rows, top, bottom = 0, layer.h, t, b
    else:
        lo, hi = r0 * sh - t, (r1 - 1) * sh - t + kh - 1  # input rows of the band's windows
        top, bottom = max(0, -lo), max(0, hi - (layer.h - 1))
        first, rows = max(lo, 0), min(hi, layer.h - 1) - max(lo, 0) + 1
        if rows < 1:
            raise ValueError(f"engine: output rows {r0}..{r1 - 1} of a {layer.h}-row map read only padding")
    return [rows, layer.w, _up(layer.c, pe), _up(layer.co, pe), kh, kw, sh, sw, top, left, bottom, r,
            layer.zp_in, layer.zp_out, layer.lo, layer.hi, src.base + first * layer.w * pe,
            dst.base + r0 * wo * pe, w_base, tb, src.stride, dst.stride, frames, frame_stride]


def bands(layer: EngineLayer, pe: int, beat: int, src: FeatureMap, dst: FeatureMap,
          max_in_bytes: int | None) -> list[tuple[int, int]]:
    """Output row bands ``[r0, r1)`` that fit an input buffer of ``max_in_bytes``
    (`in_buffer_bytes`; None: the whole layer), each from the top down as tall as fits: the
    fewest, as a band's need grows with its rows (up to the beat a block that a band starting
    mid-beat may need more). A band starts on a row whose output bytes start a beat
    (``r0·Wo·pe`` a multiple of ``beat``), so that each of its fold runs starts a beat.

    Raises:
        ValueError: not even the smallest band fits (or a band's windows are all padding).
    """
    ho, wo = layer.out_hw
    if max_in_bytes is None:
        return [(0, ho)]
    m = beat // np.gcd(beat, wo * pe)  # band starts: multiples of m rows

    def need(r0: int, r1: int) -> int | None:  # None: rows whose windows are all padding
        try:
            return in_buffer_bytes(band_step(layer, pe, r0, r1, src, dst, 0, 0), pe, beat)
        except ValueError:
            return None

    # a band's need grows with its rows, but for the beat each block's run may round up (one
    # run when the blocks abut): past ``max_in_bytes`` by more than that, no taller band fits
    slack = _up(layer.c, pe) // pe * beat
    out, r0 = [], 0
    while r0 < ho:
        needs = []
        for e in [r for r in range(r0 + m, ho, m)] + [ho]:
            needs.append((e, need(r0, e)))
            if needs[-1][1] is not None and needs[-1][1] > max_in_bytes + slack:
                break
        valid = [(e, n) for e, n in needs if n is not None]
        shape = f"{layer.h}x{layer.w}x{layer.c} -> {ho}x{wo}x{layer.co}"
        if not valid:
            raise ValueError(f"engine: output rows {r0}..{ho - 1} of a layer of {shape} read only padding")
        if valid[0][1] > max_in_bytes:
            raise ValueError(f"engine: output rows {r0}..{valid[0][0] - 1} of a layer of {shape} need "
                             f"{valid[0][1]} input buffer bytes, the buffer has {max_in_bytes}")
        r1 = max(e for e, n in valid if n <= max_in_bytes)
        out.append((r0, r1))
        r0 = r1
    return out


def program(layers: list[EngineLayer], pe: int, simd: int, beat: int, max_in_bytes: int | None = None,
            frames: int = 1) -> Program:
    """Lay out a chain of layers (layer ``i + 1`` reads layer ``i``'s output): each feature
    map in its own beat-aligned region of the feature memory (the input first), each layer's
    tiles after the previous layer's in the weight memory. ``pe`` must be a multiple of
    ``simd``; ``beat`` (the AXI data width in bytes) a power of two.

    ``max_in_bytes`` (the input buffer, `in_buffer_bytes`): a layer runs as `bands`, one
    descriptor each, and every map's blocks sit at a block stride rounded up to whole beats
    (each block starts a beat: a band's runs start on whole beats). Each band reads all the
    layer's tiles. None: one descriptor a layer, maps contiguous (the blocks abut).

    ``frames`` (docs/engine.md, "Batched frames"): every step computes that many frames with
    each tile, frame ``f``'s maps ``f·frame_stride`` bytes after frame 0's (``frame_stride``
    the frame's maps' bytes, whole beats); the bands then fit ``frames`` inputs in the buffer.
    The maps' blocks sit at whole-beat strides whenever ``frames > 1`` (each fold's run of
    each frame starts a beat).
    """
    if pe % simd or beat & (beat - 1):
        raise ValueError(f"engine: pe={pe} must be a multiple of simd={simd}, beat={beat} a power of two")
    if frames < 1:
        raise ValueError(f"engine: frames={frames} must be at least 1")
    first = layers[0]

    def new_map(base: int, h: int, w: int, c: int) -> FeatureMap:
        blk = h * w * pe
        return FeatureMap(base, h, w, c, blk if max_in_bytes is None and frames == 1 else _up(blk, beat))

    per_frame = None if max_in_bytes is None else max_in_bytes // frames
    maps = [new_map(0, first.h, first.w, first.c)]
    steps_of, counts, image = [], [], bytearray()
    for i, layer in enumerate(layers):
        if i and (layer.h, layer.w) != layers[i - 1].out_hw or i and layer.c != layers[i - 1].co:
            raise ValueError(f"engine: layer {i} does not read layer {i - 1}'s output")
        src = maps[-1]
        ho, wo = layer.out_hw
        dst = new_map(_up(src.base + _up(src.c, pe) // pe * src.stride, beat), ho, wo, layer.co)
        _, _, tb = tile_layout(layer, pe, simd, beat)
        steps = bands(layer, pe, beat, src, dst, per_frame)
        steps_of.append((layer, steps, src, dst, len(image), tb))
        counts.append(len(steps))
        maps.append(dst)
        image += _tiles(layer, pe, simd, beat)
    last = maps[-1]
    size = _up(last.base + _up(last.c, pe) // pe * last.stride, beat)
    stride = size if frames > 1 else 0
    rows = [band_step(layer, pe, r0, r1, src, dst, wb, tb, frames, stride)
            for layer, steps, src, dst, wb, tb in steps_of for r0, r1 in steps]
    return Program(rows, bytes(image), size * frames, maps[0].base, last.base, maps, counts, frames, stride)


def descriptor_words(rows: list[list[int]]) -> list[int]:
    """The descriptors as unsigned 32-bit words, layer after layer (signed fields two's
    complement): the RTL's ``PROG_FILE``."""
    return [v & 0xFFFFFFFF for row in rows for v in row]


def reference(layers: list[EngineLayer], x: np.ndarray) -> np.ndarray:
    """The chain on the integer reference: each layer ``requant(bias' + Σ window·w)`` on an
    [H, W, C] int8 map padded with its ``zp_in``."""
    y = np.asarray(x, np.int64)
    for layer in layers:
        (kh, kw), (sh, sw), (t, left, b, r) = layer.k, layer.stride, layer.pads
        xp = np.pad(y, ((t, b), (left, r), (0, 0)), constant_values=layer.zp_in)
        ho, wo = layer.out_hw
        win = np.empty((ho, wo, kh, kw, layer.c), np.int64)
        for i in range(kh):
            for j in range(kw):
                win[:, :, i, j] = xp[i:i + (ho - 1) * sh + 1:sh, j:j + (wo - 1) * sw + 1:sw]
        acc = win.reshape(ho, wo, -1) @ layer.weights.reshape(layer.co, -1).T.astype(np.int64)
        acc = acc + np.asarray(layer.bias, np.int64)
        y = arith.requantize(acc, np.asarray(layer.m, np.int64), np.asarray(layer.s, np.int64),
                             np.int64(layer.zp_out), np.int64(layer.lo), np.int64(layer.hi))
    return np.asarray(y, np.int8)
