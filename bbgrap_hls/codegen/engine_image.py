"""The layer engine's program and memory images (docs/engine.md).

The layer engine (`hw/rtl/conv_engine.sv`, HLS `bb::conv_engine`) is one conv/dense unit of
``pe`` x ``simd`` lanes time-shared over a program of layers: per frame it runs the layers in
order, each reading its input feature map from a board memory, its weights and per-channel
parameters from a board memory, and writing its output feature map back. This module is the
one definition of what the hardware reads, shared by the generator, the HLS C simulation and
the RTL twin:

- `EngineLayer`: one conv (or dense: a 1 x 1 map) with its int8 weights and requantisers.
- `feature_bytes` / `read_features`: a feature map's *blocked* layout (``G = pe`` channels a
  block, blocks one after the other, each pixel-major).
- `program`: the layers' descriptors (`FIELDS`, one 32-bit word each), the weight image and
  the feature memory's size.
- `reference`: the layers run one after the other on the project's integer reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bbgrap_hls.quant import arith

FIELDS = ("H", "W", "C", "CO", "KH", "KW", "SH", "SW", "PT", "PL", "PB", "PR",
          "ZP_IN", "ZP_OUT", "LO", "HI", "IN_BASE", "OUT_BASE", "W_BASE", "TILE_BEATS")
"""A layer's descriptor, one 32-bit word per field in this order (``PROG_FILE`` of the RTL,
``bb::EngineLayer`` of the HLS kernel). ``C`` and ``CO`` are padded (multiples of ``pe``);
``ZP_IN`` (the padding value), ``ZP_OUT``, ``LO``, ``HI`` are signed int8 values;
``IN_BASE``/``OUT_BASE`` byte offsets in the feature memory, ``W_BASE`` in the weight memory
(multiples of the AXI beat); ``TILE_BEATS`` the beats of one fold's tile (`tile_layout`)."""

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


def feature_bytes(x: np.ndarray, g: int) -> bytes:
    """An [H, W, C] int8 map in the blocked layout: channels padded with zeros to a multiple
    of ``g``, block ``b`` (channels ``b·g .. b·g + g − 1``) at ``b·H·W·g``, pixel ``p = y·W + x``
    of a block at ``p·g``: byte ``(b·H·W + p)·g + j`` is channel ``b·g + j`` of pixel ``p``."""
    h, w, c = x.shape
    cp = _up(c, g)
    xp = np.zeros((h * w, cp), np.int8)
    xp[:, :c] = np.asarray(x, np.int8).reshape(h * w, c)
    return xp.reshape(h * w, cp // g, g).transpose(1, 0, 2).tobytes()


def read_features(mem: bytes, base: int, h: int, w: int, c: int, g: int) -> np.ndarray:
    """The [H, W, C] map stored at ``base`` in the blocked layout (`feature_bytes`)."""
    cp = _up(c, g)
    raw = np.frombuffer(bytes(mem[base:base + h * w * cp]), np.int8)
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
class Program:
    """What the engine is given: ``descriptors`` (a row of `FIELDS` per layer), the weight
    memory's image, the feature memory's size and where the frame's input and output are."""

    descriptors: list[list[int]]
    weights: bytes
    feature_size: int
    in_base: int
    out_base: int


def program(layers: list[EngineLayer], pe: int, simd: int, beat: int) -> Program:
    """Lay out a chain of layers (layer ``i + 1`` reads layer ``i``'s output): each feature
    map in its own beat-aligned region of the feature memory (the input first), each layer's
    tiles after the previous layer's in the weight memory. ``pe`` must be a multiple of
    ``simd``; ``beat`` (the AXI data width in bytes) a power of two."""
    if pe % simd or beat & (beat - 1):
        raise ValueError(f"engine: pe={pe} must be a multiple of simd={simd}, beat={beat} a power of two")
    rows, image, fbase = [], bytearray(), 0
    for i, layer in enumerate(layers):
        if i and (layer.h, layer.w) != layers[i - 1].out_hw or i and layer.c != layers[i - 1].co:
            raise ValueError(f"engine: layer {i} does not read layer {i - 1}'s output")
        ho, wo = layer.out_hw
        in_base = fbase
        out_base = _up(in_base + layer.h * layer.w * _up(layer.c, pe), beat)
        fbase = out_base
        _, _, tb = tile_layout(layer, pe, simd, beat)
        (kh, kw), (sh, sw), (t, left, b, r) = layer.k, layer.stride, layer.pads
        rows.append([layer.h, layer.w, _up(layer.c, pe), _up(layer.co, pe), kh, kw, sh, sw, t, left,
                     b, r, layer.zp_in, layer.zp_out, layer.lo, layer.hi, in_base, out_base,
                     len(image), tb])
        image += _tiles(layer, pe, simd, beat)
    last = layers[-1]
    ho, wo = last.out_hw
    size = _up(fbase + ho * wo * _up(last.co, pe), beat)
    return Program(rows, bytes(image), size, rows[0][FIELDS.index("IN_BASE")], fbase)


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
