"""The layer engine's element-wise unit: its descriptor, its memory images and its reference
(docs/engine.md, "Element-wise unit"; RTL ``hw/rtl/engine_eltwise.sv``, HLS
``bb::engine_eltwise``).

One layer is one of four modes over int8 feature maps in the engine's blocked layout
(`engine_image.feature_bytes`, ``G`` channels a block):

- ``ADD``:   ``y = clamp(zy + ((ma·(a − za) + mb·(b − zb) + 2^(s−1)) >> s), lo, hi)``;
- ``MUL``:   ``y = clamp(zy + (((a − za)·(b − zb)·m + 2^(s−1)) >> s), lo, hi)``, ``b`` a map
  of ``a``'s shape;
- ``MULV``:  the same with ``b`` a per-channel vector (a [1, 1, C] map: squeeze-excite),
  broadcast over the pixels;
- ``TABLE``: ``y = T[a + 128]`` (any unary activation, `arith.apply_lut`).

With ``lut`` set, ADD, MUL and MULV pass their result through the table too (a fused
activation). ``s = 0`` means no rounding term (`sim.golden.round_shift`).

A map's blocks sit ``stride`` bytes apart (`engine_image.feature_bytes`): with every map's
blocks contiguous (strides ``H·W·G``) ADD, MUL and TABLE are byte-wise over the map's
``H·W·Cp`` bytes whatever ``G``, one run, and MULV needs a byte's channel: byte ``i`` of the
map is channel ``(i // (H·W·G))·G + i % G``. Otherwise (strides multiples of the beat) the
unit streams the map block by block, one run of ``⌈H·W·G/DB⌉`` beats a block, block ``b``'s
bytes all of channels ``b·G ..``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bbgrap_hls.codegen.engine_image import feature_bytes
from bbgrap_hls.quant import arith

ADD, MUL, MULV, TABLE = 0, 1, 2, 3
MODES = {"add": ADD, "mul": MUL, "mulv": MULV, "table": TABLE}

ELTWISE_FIELDS = ("MODE", "H", "W", "C", "ZA", "ZB", "MA", "MB", "M", "S", "ZY", "LO", "HI", "LUT",
                  "A_BASE", "B_BASE", "OUT_BASE", "T_BASE", "A_STRIDE", "B_STRIDE", "OUT_STRIDE")
"""A layer's descriptor, one 32-bit word per field in this order (the RTL's ``desc`` port,
field ``i`` at bits ``[32·i +: 32]``; ``bb::EltwiseDesc`` of the HLS kernel). ``MODE`` is
`ADD`, `MUL`, `MULV` or `TABLE`; ``C`` is padded to a multiple of ``G``; ``ZA``, ``ZB``,
``ZY``, ``LO``, ``HI`` signed int8 values, ``MA``, ``MB`` signed multipliers (|·| < 2^24),
``M`` unsigned (< 2^24), ``S`` the shift (0..62); ``LUT`` 1: the table after ADD/MUL/MULV.
``A_BASE``, ``B_BASE``, ``OUT_BASE`` byte addresses in the feature memory (``B_BASE`` the
vector's in MULV), ``T_BASE`` the table's in the weight memory; all multiples of the beat.
``A_STRIDE``, ``B_STRIDE``, ``OUT_STRIDE``: bytes from one block of the map to the next, each
``H·W·G`` (blocks contiguous) or a multiple of the beat at least that; all three ``H·W·G``
(``B_STRIDE`` aside in MULV and TABLE): one run over the map; else every stride a multiple
of the beat and a run a block (`runs`). In MULV ``B_STRIDE`` is the vector's (a 1 × 1 map):
``G`` (the channels in order, `vector_bytes`) or a multiple of the beat (block ``b``'s ``G``
bytes at ``B_BASE + b·B_STRIDE``)."""

TABLE_BYTES = 256


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


@dataclass(frozen=True)
class EltwiseLayer:
    """One element-wise layer on [h, w, c] int8 maps (field meanings: `ELTWISE_FIELDS`)."""

    mode: int
    h: int
    w: int
    c: int
    za: int = 0
    zb: int = 0
    ma: int = 0
    mb: int = 0
    m: int = 0
    s: int = 0
    zy: int = 0
    lo: int = -128
    hi: int = 127
    table: np.ndarray | None = field(default=None, compare=False)
    lut: bool = False

    def uses_table(self) -> bool:
        return self.mode == TABLE or self.lut

    def binary(self) -> bool:
        """Two maps read beat by beat (ADD, MUL); MULV reads a vector, TABLE one map."""
        return self.mode in (ADD, MUL)


def map_bytes(layer: EltwiseLayer, g: int) -> int:
    """Bytes of one of the layer's maps in the blocked layout (``H·W·Cp``)."""
    return layer.h * layer.w * _up(layer.c, g)


def runs(row: list[int], g: int) -> tuple[int, int]:
    """``(runs, bytes a run)`` the unit streams: ``(1, H·W·C)`` when the maps it streams (A,
    OUT, and B in ADD and MUL) have contiguous blocks, else ``(C/G, H·W·G)``, a block a run."""
    f = dict(zip(ELTWISE_FIELDS, row, strict=True))
    blk = f["H"] * f["W"] * g
    maps = ["A_STRIDE", "OUT_STRIDE"] + (["B_STRIDE"] if f["MODE"] in (ADD, MUL) else [])
    if all(f[k] == blk for k in maps):
        return 1, blk * (f["C"] // g)
    return f["C"] // g, blk


def descriptor(layer: EltwiseLayer, g: int, beat: int, a_base: int, b_base: int, out_base: int,
               t_base: int = 0, cmax: int | None = None, a_stride: int | None = None, b_stride: int | None = None,
               out_stride: int | None = None) -> list[int]:
    """The layer's `ELTWISE_FIELDS` values (signed where the field is), checked against what
    the unit supports (``cmax``: the unit's vector buffer, the RTL's ``CMAX``); the maps' block
    strides (None: contiguous; MULV's ``b_stride`` the vector's, ``G`` when None).

    Raises:
        ValueError: an unaligned base, constants out of range, ``g`` not a power of two
            dividing ``beat``, a stride neither contiguous nor whole beats (or contiguous and
            not whole beats beside a strided map), a contiguous MULV map whose blocks are
            shorter than a beat or a vector longer than ``cmax``.
    """
    name = f"eltwise layer (mode {layer.mode}, {layer.h}x{layer.w}x{layer.c})"
    if layer.mode not in MODES.values():
        raise ValueError(f"{name}: unknown mode")
    if g & (g - 1) or beat % g:
        raise ValueError(f"{name}: G={g} must be a power of two dividing the beat ({beat} bytes)")
    for k, v in (("A_BASE", a_base), ("B_BASE", b_base), ("OUT_BASE", out_base), ("T_BASE", t_base)):
        if v % beat or v < 0:
            raise ValueError(f"{name}: {k}={v} is not a multiple of the {beat}-byte beat")
    if not (0 <= layer.s <= arith.MAX_SHIFT and abs(layer.ma) <= arith.MAX_MULT and abs(layer.mb) <= arith.MAX_MULT
            and 0 <= layer.m <= arith.MAX_MULT):
        raise ValueError(f"{name}: s={layer.s} ma={layer.ma} mb={layer.mb} m={layer.m} out of range")
    if not (-128 <= layer.lo <= layer.hi <= 127):
        raise ValueError(f"{name}: clamp [{layer.lo}, {layer.hi}] is not an int8 range")
    blk = layer.h * layer.w * g
    vec = layer.mode == MULV
    strides = {"A_STRIDE": a_stride, "B_STRIDE": b_stride, "OUT_STRIDE": out_stride}
    strides = {k: (g if vec and k == "B_STRIDE" else blk) if v is None else v for k, v in strides.items()}
    streamed = ["A_STRIDE", "OUT_STRIDE"] + (["B_STRIDE"] if layer.binary() else [])
    strided = any(strides[k] != blk for k in streamed)
    for k, v in strides.items():
        own = g if vec and k == "B_STRIDE" else blk
        if v != own and (v % beat or v < own):
            raise ValueError(f"{name}: {k}={v} is neither the block's {own} bytes nor a multiple of the "
                             f"{beat}-byte beat at least that")
        if strided and k in streamed and v % beat:
            raise ValueError(f"{name}: {k}={v}: with a map's blocks strided every map's stride must be a "
                             f"multiple of the {beat}-byte beat (a run a block)")
    if vec and not strided and blk < beat:
        # a beat then spans more than two channel blocks (the RTL picks one of two vector words)
        raise ValueError(f"{name}: MULV on contiguous maps needs H·W·G >= the beat ({beat} bytes)")
    if layer.mode == MULV and cmax is not None and _up(layer.c, g) > cmax:
        raise ValueError(f"{name}: a vector of {_up(layer.c, g)} channels, the unit holds {cmax}")
    if layer.uses_table() and (layer.table is None or np.asarray(layer.table).size != TABLE_BYTES):
        raise ValueError(f"{name}: needs a {TABLE_BYTES}-entry table")
    vals = {"MODE": layer.mode, "H": layer.h, "W": layer.w, "C": _up(layer.c, g), "ZA": layer.za, "ZB": layer.zb,
            "MA": layer.ma, "MB": layer.mb, "M": layer.m, "S": layer.s, "ZY": layer.zy, "LO": layer.lo,
            "HI": layer.hi, "LUT": int(layer.lut and layer.mode != TABLE), "A_BASE": a_base, "B_BASE": b_base,
            "OUT_BASE": out_base, "T_BASE": t_base} | strides
    return [int(vals[k]) for k in ELTWISE_FIELDS]


def descriptor_word(row: list[int]) -> int:
    """A descriptor as one integer of ``32·len(ELTWISE_FIELDS)`` bits (field ``i`` at bit
    ``32·i``, signed fields two's complement): the RTL's ``desc`` port."""
    return sum((v & 0xFFFFFFFF) << (32 * i) for i, v in enumerate(row))


def table_image(layer: EltwiseLayer) -> bytes:
    """The table as the weight memory holds it: entry ``x + 128`` at byte ``x + 128``."""
    return np.asarray(layer.table, np.int8).reshape(TABLE_BYTES).tobytes()


def vector_bytes(v: np.ndarray, g: int, stride: int | None = None) -> bytes:
    """A MULV operand ([C] or [1, 1, C]) as the feature memory holds it: the blocked layout
    of a 1 x 1 map, i.e. the channels in order, zero-padded to a multiple of ``g`` (blocks
    ``stride`` bytes apart when given)."""
    v = np.asarray(v, np.int8).reshape(1, 1, -1)
    return feature_bytes(v, g, stride)


def reference(layer: EltwiseLayer, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """The layer on the project's integer functions: ``a`` an [H, W, C] int8 map, ``b`` a map
    of the same shape (ADD, MUL), a [C] or [1, 1, C] vector (MULV) or None (TABLE)."""
    a64 = np.asarray(a, np.int64)
    if layer.mode == TABLE:
        return arith.apply_lut(a64, layer.table)
    b64 = np.asarray(b, np.int64)
    if layer.mode == MULV:
        b64 = b64.reshape(1, 1, -1)
    if layer.mode == ADD:
        acc = layer.ma * (a64 - layer.za) + layer.mb * (b64 - layer.zb)
        mult = 1
    else:
        acc, mult = (a64 - layer.za) * (b64 - layer.zb), layer.m
    y = np.asarray(acc, np.int64) * mult
    y = arith.shift_round(y, layer.s) if layer.s > 0 else y
    y = np.clip(y + layer.zy, layer.lo, layer.hi).astype(np.int8)
    return arith.apply_lut(y, layer.table) if layer.lut else y
