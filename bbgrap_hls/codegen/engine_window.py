"""The layer engine's window unit: max pool, average pool (global too) and depthwise conv
(`hw/rtl/engine_window.sv`, HLS `bb::engine_window`; docs/engine.md, "Window unit").

The unit reads a feature map in the engine's blocked layout (`engine_image.feature_bytes`,
``G`` channels a block) and writes its output map in the same layout. This module is the one
definition of what it is given:

- `WindowLayer`: one layer (mode, geometry, padding, requantisers, depthwise weights).
- `weight_image`: a depthwise layer's per-block weight records (`block_beats` beats a block).
- `descriptor`: the layer's `WINDOW_FIELDS` words.
- `reference`: the layer on the project's integer semantics (`bbgrap_hls.quant.arith`, the
  ``run_avgpool`` / ``run_gap`` / ``run_move`` contract of `bbgrap_hls.quant.kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.codegen.engine_image import RECORD_BYTES
from bbgrap_hls.quant import arith

MAX, AVG, DW = 0, 1, 2
"""``MODE`` values: max pool, average pool (a global one is a window of the whole map), depthwise conv."""

MODES = {"max": MAX, "avg": AVG, "dw": DW}

WINDOW_FIELDS = ("MODE", "H", "W", "C", "HO", "WO", "KH", "KW", "SH", "SW", "PT", "PL", "PB", "PR",
                 "PAD", "BIAS", "MULT", "SHIFT", "ZP_OUT", "LO", "HI", "IN_BASE", "OUT_BASE", "W_BASE",
                 "W_BEATS", "IN_STRIDE", "OUT_STRIDE")
"""A window layer's descriptor, one 32-bit word per field in this order (``desc[32·i +: 32]``
of the RTL, ``bb::WindowLayer`` of the HLS kernel). ``C`` is padded to a multiple of ``G``;
``HO``/``WO`` the output size (given, so the hardware divides nothing); ``PAD`` the value the
padding reads (int8: -128 for max, ``zp_in`` otherwise); ``BIAS`` the average's accumulator
start ``-KH·KW·zp_in``; ``MULT``/``SHIFT`` the average's requantiser (depthwise: per channel, in
the weight records); ``ZP_OUT``, ``LO``, ``HI`` the output zero point and clamp (average,
depthwise); ``IN_BASE``/``OUT_BASE`` byte offsets in the feature memory, ``W_BASE`` in the
weight memory (multiples of the beat); ``W_BEATS`` a block's weight beats (0 unless depthwise);
``IN_STRIDE``/``OUT_STRIDE`` the bytes from one block of the input / output map to the next
(`engine_image.feature_bytes`' ``stride``): the block's own bytes (``H·W·G``, ``HO·WO·G``:
blocks contiguous) or a multiple of the beat at least that (each block on whole beats)."""

RECORD_WORDS = 8
"""A depthwise block's ``G`` records take ``8·G`` bytes: the first 8 words of ``G`` bytes."""


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


@dataclass(frozen=True)
class WindowLayer:
    """One window layer on an [h, w, c] int8 map.

    ``mode``: "max" (padding reads -128, the int8 minimum, as ``run_move``'s max pool: a
    window always holds a real pixel), "avg" (``requant(Σ (x − zp_in))`` with padding read as
    ``zp_in``, i.e. counted: ``count_include_pad = 1`` or no padding, one ``mult``/``shift``
    for the layer, the project's entry for ``count = kh·kw``; a global average pool is
    ``k = (h, w)``) or "dw" (``requant(bias' + Σ x·w)`` per channel, ``weights`` [c, kh, kw],
    ``bias`` with ``−zp_in·Σw`` folded, ``m`` < 2^24 and ``s`` per channel, padding ``zp_in``).
    """

    mode: str
    h: int
    w: int
    c: int
    k: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    zp_in: int = 0
    zp_out: int = 0
    lo: int = -128
    hi: int = 127
    mult: int = 0
    shift: int = 0
    weights: np.ndarray | None = field(default=None, compare=False)
    bias: np.ndarray | None = field(default=None, compare=False)
    m: np.ndarray | None = field(default=None, compare=False)
    s: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"window layer: mode {self.mode!r} not one of {sorted(MODES)}")
        (kh, kw), (t, left, b, r) = self.k, self.pads
        if max(t, b) >= kh or max(left, r) >= kw:
            raise ValueError(f"window layer: pads {self.pads} not below the kernel {self.k}")
        if self.mode == "dw" and (self.weights is None or self.weights.shape != (self.c, kh, kw)):
            raise ValueError(f"window layer: depthwise weights must be [c, kh, kw] = [{self.c}, {kh}, {kw}]")

    @property
    def out_hw(self) -> tuple[int, int]:
        (kh, kw), (sh, sw), (t, left, b, r) = self.k, self.stride, self.pads
        return (self.h + t + b - kh) // sh + 1, (self.w + left + r - kw) // sw + 1

    @property
    def pad_value(self) -> int:
        return arith.QMIN if self.mode == "max" else self.zp_in


def block_beats(layer: WindowLayer, g: int, beat: int) -> int:
    """Beats of one block's weight records: ``G`` records then ``KH·KW`` words of ``G`` weights
    (`weight_image`), whole beats; 0 unless depthwise."""
    if layer.mode != "dw":
        return 0
    kh, kw = layer.k
    return -(-(RECORD_WORDS + kh * kw) * g // beat)


def weight_image(layer: WindowLayer, g: int, beat: int) -> bytes:
    """A depthwise layer's weights, block after block (`block_beats` beats each): bytes
    ``8j .. 8j + 7`` of a block hold channel ``j``'s record (int32 bias', uint32 ``(m << 8) | s``,
    little-endian, as `engine_image`'s tiles), then word ``8 + t`` (bytes ``(8 + t)·G ..``) holds
    tap ``t = ky·KW + kx`` of the block's ``G`` channels, channel ``j`` at byte ``j``. Padded
    channels have zero records and weights."""
    if layer.mode != "dw":
        return b""
    kh, kw = layer.k
    cp, bb = _up(layer.c, g), block_beats(layer, g, beat)
    w = np.zeros((cp, kh * kw), np.int8)
    w[:layer.c] = np.asarray(layer.weights, np.int8).reshape(layer.c, kh * kw)
    rec = np.zeros((cp, 2), np.uint32)
    rec[:layer.c, 0] = np.asarray(layer.bias, np.int64).astype(np.int32).view(np.uint32)
    rec[:layer.c, 1] = (np.asarray(layer.m, np.int64) << 8 | np.asarray(layer.s, np.int64)).astype(np.uint32)
    out = bytearray()
    for b in range(cp // g):
        blk = bytearray(bb * beat)
        blk[:RECORD_BYTES * g] = rec[b * g:(b + 1) * g].astype("<u4").tobytes()
        taps = w[b * g:(b + 1) * g].T  # [t][j]
        blk[RECORD_WORDS * g:(RECORD_WORDS + kh * kw) * g] = taps.tobytes()
        out += blk
    return bytes(out)


def _stride(name: str, stride: int | None, block: int, beat: int) -> int:
    """A block stride: ``block`` (contiguous) when None; else the block's bytes or a multiple
    of the beat at least that."""
    if stride is None:
        return block
    if stride != block and (stride % beat or stride < block):
        raise ValueError(f"window layer: {name}={stride} is neither the block's {block} bytes nor a multiple "
                         f"of the beat {beat} at least that")
    return stride


def descriptor(layer: WindowLayer, g: int, beat: int, in_base: int = 0, out_base: int | None = None,
               w_base: int = 0, in_stride: int | None = None, out_stride: int | None = None) -> list[int]:
    """The layer's `WINDOW_FIELDS` values (signed where the field is), the input at
    ``in_base``, the output at ``out_base`` (default: the first beat after the input) and the
    weights at ``w_base`` (byte offsets, multiples of ``beat``); the maps' block strides
    ``in_stride``/``out_stride`` (None: contiguous, ``H·W·G`` and ``HO·WO·G``)."""
    (kh, kw), (sh, sw), (t, left, b, r) = layer.k, layer.stride, layer.pads
    cp = _up(layer.c, g)
    ho, wo = layer.out_hw
    in_stride = _stride("IN_STRIDE", in_stride, layer.h * layer.w * g, beat)
    out_stride = _stride("OUT_STRIDE", out_stride, ho * wo * g, beat)
    if out_base is None:
        out_base = _up(in_base + (cp // g - 1) * in_stride + layer.h * layer.w * g, beat)
    if in_base % beat or out_base % beat or w_base % beat:
        raise ValueError(f"window layer: bases {in_base}, {out_base}, {w_base} not multiples of the beat {beat}")
    avg = layer.mode == "avg"
    return [MODES[layer.mode], layer.h, layer.w, cp, ho, wo, kh, kw, sh, sw, t, left, b, r,
            layer.pad_value, -kh * kw * layer.zp_in if avg else 0, layer.mult if avg else 0,
            layer.shift if avg else 0, layer.zp_out, layer.lo, layer.hi, in_base, out_base, w_base,
            block_beats(layer, g, beat), in_stride, out_stride]


def check(desc: list[int], g: int, beat: int, wmax: int, womax: int, kb: int, kmax: int) -> None:
    """Raise ValueError (with the layer's numbers) unless the unit with these parameters
    (`hw/rtl/engine_window.sv`'s G, DATA_W = 8·beat, WMAX, WOMAX, KB, KMAX) runs ``desc``:
    ``C`` a multiple of ``G``; ``W`` at least the pixels a beat (a beat holds at most one
    row start) and at most ``WMAX``; ``WO`` at most ``WOMAX``; ``KH`` at most ``KB`` (a
    window's rows are all in the row buffer: a global pool needs ``KB >= H``); depthwise
    ``KH·KW`` at most ``KMAX``; bases beat-aligned; each stride its block's bytes or a
    multiple of the beat at least that."""
    f = dict(zip(WINDOW_FIELDS, desc, strict=True))
    ppb = beat // g
    need = [(f["C"] % g == 0 and f["C"] >= g, f"C={f['C']} a multiple of G={g}"),
            (ppb <= f["W"] <= wmax, f"W={f['W']} in {ppb}..WMAX={wmax}"),
            (f["WO"] <= womax, f"WO={f['WO']} <= WOMAX={womax}"),
            (f["KH"] <= kb, f"KH={f['KH']} <= KB={kb}"),
            (f["MODE"] != DW or f["KH"] * f["KW"] <= kmax, f"KH*KW={f['KH'] * f['KW']} <= KMAX={kmax}"),
            (all(f[k] % beat == 0 for k in ("IN_BASE", "OUT_BASE", "W_BASE")), f"bases multiples of {beat}")]
    for k, block in (("IN_STRIDE", f["H"] * f["W"] * g), ("OUT_STRIDE", f["HO"] * f["WO"] * g)):
        ok = f[k] == block or (f[k] % beat == 0 and f[k] >= block)
        need.append((ok, f"{k}={f[k]} the block's {block} bytes or a multiple of {beat} at least that"))
    bad = [why for ok, why in need if not ok]
    if bad:
        raise ValueError(f"window unit (G={g}, beat={beat}) cannot run {dict(f)}: needs " + "; ".join(bad))


def descriptor_words(values: list[int]) -> list[int]:
    """The descriptor as unsigned 32-bit words (signed fields two's complement)."""
    return [v & 0xFFFFFFFF for v in values]


def reference(layer: WindowLayer, x: np.ndarray) -> np.ndarray:
    """The layer on an [H, W, C] int8 map: the project's integer semantics (module doc)."""
    (kh, kw), (sh, sw), (t, left, b, r) = layer.k, layer.stride, layer.pads
    ho, wo = layer.out_hw
    xp = np.pad(np.asarray(x, np.int64), ((t, b), (left, r), (0, 0)), constant_values=layer.pad_value)
    win = np.empty((ho, wo, kh, kw, layer.c), np.int64)
    for i in range(kh):
        for j in range(kw):
            win[:, :, i, j] = xp[i:i + (ho - 1) * sh + 1:sh, j:j + (wo - 1) * sw + 1:sw]
    if layer.mode == "max":
        return win.max(axis=(2, 3)).astype(np.int8)
    if layer.mode == "avg":
        acc = (win - layer.zp_in).sum(axis=(2, 3))
        return arith.requantize(acc, layer.mult, layer.shift, layer.zp_out, layer.lo, layer.hi)
    w = np.asarray(layer.weights, np.int64).transpose(1, 2, 0)  # [kh, kw, c]
    acc = (win * w).sum(axis=(2, 3)) + np.asarray(layer.bias, np.int64)
    return arith.requantize(acc, np.asarray(layer.m, np.int64), np.asarray(layer.s, np.int64),
                            layer.zp_out, layer.lo, layer.hi)
