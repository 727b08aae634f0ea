"""Memory mapping: how many RAMB18 (or LUTs, for LUTRAM) a ``width × depth`` memory needs.

A memory smaller than ``LUTRAM_BITS`` bits lives in LUTs (distributed RAM, `lutram`: eight
LUT6 sites hold 32 × 14 or 64 × 7 bits). Anything larger is built from RAMB18s in the aspect ratio that needs the
fewest blocks (docs/hardware.md, "Resources"), or, for weight memories the planner moves
there, from URAM288 blocks (`uram_memory`: one fixed 4K × 72 shape).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

LUTRAM_BITS = 1024
"""Memories with fewer bits than this go to LUTRAM, not BRAM."""

RAMB18_SHAPES: tuple[tuple[int, int], ...] = (
    (16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36),
)
"""RAMB18 aspect ratios as (depth, width)."""

LUTRAM_DEPTH = 64
"""Words per LUT6 used as distributed RAM (64 × 1); a memory no deeper than this lives in
LUTRAM whatever its width (Yosys maps a 16 × 64-bit accumulator memory there)."""

ROM_BRAM_DEPTH = 512
ROM_PAIR_DEPTH = 32
"""Deepest read-only memory `rom` builds at two bit columns a LUT (five address bits)."""
"""A read-only memory (weights, requantisation parameters, tables: ``$readmemh`` and no write
port) shallower than this is built from LUTs as logic, ``ceil(depth/64)·width`` LUTs; Yosys
maps 72-deep weight ROMs there and 1,152-deep ones to block RAM (bench/resources.py)."""

URAM_DEPTH = 4096
URAM_WIDTH = 72
"""URAM288 has one shape, 4K × 72 bits (no aspect ratios): wider words put URAMs side by
side, deeper memories cascade them (the built-in cascade of a URAM column)."""


@dataclass(frozen=True)
class MemCost:
    """Resources of one memory.

    Attributes:
        bram18: RAMB18 blocks.
        lut: LUTs used as distributed RAM.
        uram: URAM288 blocks.
    """

    bram18: int = 0
    lut: int = 0
    uram: int = 0

    def __add__(self, other: MemCost) -> MemCost:
        return MemCost(self.bram18 + other.bram18, self.lut + other.lut, self.uram + other.uram)

    def times(self, k: int) -> MemCost:
        """``k`` copies of this memory."""
        return MemCost(self.bram18 * k, self.lut * k, self.uram * k)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def lutram(width_bits: int, depth: int) -> int:
    """LUTs of a ``width_bits`` × ``depth`` distributed RAM (one write, one read port) as Yosys
    maps it for UltraScale+: up to 32 words a RAM32M16 (8 LUT6 sites, 14 bits: 7 read ports
    of 2 bits beside the write port), up to 64 a RAM64M8 (8 sites, 7 bits), deeper ones
    ``ceil(depth/64)`` of those side by side; one word is a register (no LUT). Measured
    exactly (bench/resources.py, abc -lut 6): 24, 80 and 296 LUTs for 6 × 32, 4 × 128 and
    2 × 512 bits (vvu accumulators), 592 for 40 × 512 (a 64-lane line buffer)."""
    if depth <= 1 or width_bits <= 0:
        return 0
    if depth <= 32:
        return 8 * _ceil(width_bits, 14)
    return 8 * _ceil(depth, LUTRAM_DEPTH) * _ceil(width_bits, 7)


@functools.lru_cache(maxsize=1 << 16)
def distributed_memory(width_bits: int, depth: int) -> MemCost:
    """A ``width_bits`` × ``depth`` FIFO memory in distributed RAM (HLS ``BIND_STORAGE
    type=fifo impl=lutram``): `lutram`'s ``n = ceil(depth/64)`` RAM64M8 banks, and above one
    bank the read multiplexer, ``ceil((n−1)/3)`` LUTs a bit (a LUT3 for two banks, a LUT6 for
    four, three LUTs for eight) and ``n`` LUTs of write decode. Equal to Yosys 0.70
    (``synth_xilinx -family xcup``, abc -lut 6, a registered read) at 264 × 226, 96 × 200,
    128 × 128 and 64 × 512 bits × words: 1,484, 548, 434 and 840 LUTs."""
    if depth <= 0 or width_bits <= 0:
        return MemCost()
    n = _ceil(depth, LUTRAM_DEPTH)
    mux = 0 if n == 1 else width_bits * _ceil(n - 1, 3) + n
    return MemCost(0, lutram(width_bits, depth) + mux)


def rom_columns(width_bits: int, depth: int) -> int:
    """Distinct bit columns of a ``width_bits`` × ``depth`` read-only memory built from LUTs:
    a column is a function of the address, and at most ``2^depth`` of them differ, so Yosys
    (merging identical LUTs) builds no more: ``min(width, 2^depth)``. A 4-word ROM of 8,192
    bits (DS-CNN's pointwise convs at pe 16 × simd 64) is at most 16 LUTs, not 8,192."""
    return width_bits if depth >= 20 else min(width_bits, 1 << depth)


@functools.lru_cache(maxsize=1 << 16)
def memory(width_bits: int, depth: int) -> MemCost:
    """Resources of a ``width_bits`` wide, ``depth`` deep memory.

    Args:
        width_bits: bits per word (> 0).
        depth: words (0 gives an empty memory).

    Returns:
        ``MemCost(0, lutram(width, depth))`` below 1,024 bits or at most 64 words, else the
        fewest RAMB18 over the aspect ratios: ``min over (D, Wd) of ceil(depth/D)·ceil(width/Wd)``.
    """
    if depth <= 0 or width_bits <= 0:
        return MemCost()
    if width_bits * depth < LUTRAM_BITS or depth <= LUTRAM_DEPTH:
        return MemCost(0, lutram(width_bits, depth))
    best = min(_ceil(depth, d) * _ceil(width_bits, w) for d, w in RAMB18_SHAPES)
    return MemCost(best, 0)


RAMB36_SHAPES: tuple[tuple[int, int], ...] = (
    (32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36), (512, 72),
)
"""RAMB36 aspect ratios as (depth, width): two RAMB18 each."""


@functools.lru_cache(maxsize=1 << 16)
def block_memory(width_bits: int, depth: int) -> MemCost:
    """A read-only memory the RTL asks to be block RAM (``rom_style = "block"``: the weights):
    RAMB18 from 1,024 bits on whatever its depth, logic below (none for one word: a constant).

    Besides the RAMB18 grid (``ceil(depth/D)·ceil(width/Wd)``) a deep, narrow ROM can be
    folded: its ``ceil(depth/D)`` slices of ``D`` words side by side as one ``D``-deep word
    of ``ceil(depth/D)·width`` bits, cut into RAMB36 columns, with a multiplexer picking the
    slice after the read. Yosys does this: a 48,000 × 8-bit ROM (LeNet's 400 × 120 dense layer at
    one lane) is 4,096 words of 12 × 8 = 96 bits in 11 RAMB36 (4K × 9), 22 RAMB18 where the
    grid needs 24. The fewer of the two."""
    if depth <= 0 or width_bits <= 0:
        return MemCost()
    if width_bits * depth < LUTRAM_BITS:  # a ROM: logic, one LUT6 per bit and 64 words
        return MemCost(0, 0 if depth == 1 else _ceil(depth, LUTRAM_DEPTH) * rom_columns(width_bits, depth))
    grid = min(_ceil(depth, d) * _ceil(width_bits, w) for d, w in RAMB18_SHAPES)
    folded = 2 * min(_ceil(_ceil(depth, d) * width_bits, w) for d, w in RAMB36_SHAPES)
    return MemCost(min(grid, folded), 0)


@functools.lru_cache(maxsize=1 << 16)
def rom(width_bits: int, depth: int) -> MemCost:
    """A read-only memory: logic (LUTs) below `ROM_BRAM_DEPTH` words, else as `memory`. One
    word is a constant: no LUT (Yosys propagates it; a layer folded to one weight word, e.g.
    ResNet-8's 3 × 3 convs at a whole parallel window, has constant weights and parameters).
    Up to `ROM_PAIR_DEPTH` words, two columns a LUT: the per-channel parameter ROMs (biases,
    requantisation words, affine tables) of the vector units came out at about half a LUT a
    column in Yosys (docs/cost-model.md, "LUT"), as a LUT6 with two outputs holds two
    functions of the same five address bits."""
    if depth == 1:
        return MemCost()
    if 0 < depth < ROM_BRAM_DEPTH and width_bits > 0:
        cols = rom_columns(width_bits, depth)
        return MemCost(0, _ceil(cols, 2) if depth <= ROM_PAIR_DEPTH else _ceil(depth, LUTRAM_DEPTH) * cols)
    return memory(width_bits, depth)


@functools.lru_cache(maxsize=1 << 16)
def uram_memory(width_bits: int, depth: int) -> MemCost:
    """A ``width_bits`` × ``depth`` memory built from URAM288 blocks.

    Returns:
        ``MemCost(uram=ceil(width/72)·ceil(depth/4096))``: columns of 72 bits side by side,
        each cascaded ``ceil(depth/4096)`` deep.
    """
    if depth <= 0 or width_bits <= 0:
        return MemCost()
    return MemCost(uram=_ceil(width_bits, URAM_WIDTH) * _ceil(depth, URAM_DEPTH))


LUT_ROM_DEPTH = 512
"""Deepest weight memory the planner may build from LUTs (`lut_rom`); deeper ones cost more
LUTs per bit than a RAMB18's share is worth."""


@functools.lru_cache(maxsize=1 << 16)
def lut_rom(width_bits: int, depth: int) -> MemCost:
    """A read-only ``width_bits`` × ``depth`` memory built from LUTs as logic (``rom_style =
    "logic"``): one LUT6 per bit up to 64 words, else ``ceil(1.5·ceil(depth/64))`` per bit, the
    ``ceil(depth/64)`` 64-word LUTs and the multiplexer tree that picks one. Fitted to Yosys
    (``synth_xilinx -family xcup``, abc -lut 6, random contents, 64 bits wide): 1.0, 3.1, 4.1,
    5.5, 7.9 and 12.2 LUTs per bit at 64, 128, 144, 256, 288 and 512 words (the formula: 1, 3,
    5, 6, 8, 12); bench/resources.py checks it on whole units."""
    if depth <= 1 or width_bits <= 0:  # one word: a constant
        return MemCost()
    per_bit = 1 if depth <= LUTRAM_DEPTH else -(-3 * _ceil(depth, LUTRAM_DEPTH) // 2)
    return MemCost(lut=rom_columns(width_bits, depth) * per_bit)


def uram_halves(width_bits: int, depth: int) -> bool:
    """Whether a read-only ``width_bits`` × ``depth`` memory read at one address per cycle
    takes fewer URAM288 as halves: ``width/2``-bit words, ``2·depth`` deep, word ``a``'s two
    halves at ``2a`` and ``2a+1``, both read in the same cycle through the URAM's two ports.

    A URAM288 has two 72-bit ports; a memory that is wide and shallow (a weight memory of
    many lanes and few folds: 4,096 bits × 288 words) fills its 72-bit columns to a few
    percent of their 4K depth, so reading two half-words per cycle halves the columns while
    the doubled depth still fits. Needs an even number of bytes per word.
    """
    return uram_weights(width_bits, depth).uram < uram_memory(width_bits, depth).uram


@functools.lru_cache(maxsize=1 << 16)
def uram_weights(width_bits: int, depth: int) -> MemCost:
    """URAM288 of a read-only memory read at one address per cycle: the fewer of one
    ``width_bits``-wide memory (`uram_memory`) and its halves read through both ports
    (``ceil(width/144)·ceil(2·depth/4096)``, `uram_halves`)."""
    one = uram_memory(width_bits, depth)
    if depth <= 0 or width_bits <= 0 or width_bits % 16:
        return one
    two = MemCost(uram=_ceil(width_bits // 2, URAM_WIDTH) * _ceil(2 * depth, URAM_DEPTH))
    return two if two.uram < one.uram else one


LUTRAM_PER_BRAM18 = 400
"""Most LUTs a FIFO in distributed RAM may cost per RAMB18 it gives back (a RAMB18's 18 Kb
are 288 LUT6 of 64 bits; the read multiplexer adds to that): beyond it a FIFO stays in
BRAM18. A 264-bit × 226-word FIFO is 1,484 LUTs for 8 RAMB18 (186 each), a 96 × 562 one
1,305 for 6 (218); one 8 bits × 16 k beats deep would be 5,032 LUTs for 8 (629)."""
