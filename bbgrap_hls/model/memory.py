"""Memory mapping: how many RAMB18 (or LUTs, for LUTRAM) a ``width × depth`` memory needs.

A memory smaller than ``LUTRAM_BITS`` bits lives in LUTs (distributed RAM: one LUT6 holds
64 × 1 bits). Anything larger is built from RAMB18s in the aspect ratio that needs the
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


@functools.lru_cache(maxsize=1 << 16)
def memory(width_bits: int, depth: int) -> MemCost:
    """Resources of a ``width_bits`` wide, ``depth`` deep memory.

    Args:
        width_bits: bits per word (> 0).
        depth: words (0 gives an empty memory).

    Returns:
        ``MemCost(0, ceil(depth/64)·width)`` below 1,024 bits, else the fewest RAMB18 over
        the aspect ratios: ``min over (D, Wd) of ceil(depth/D)·ceil(width/Wd)``.
    """
    if depth <= 0 or width_bits <= 0:
        return MemCost()
    if width_bits * depth < LUTRAM_BITS or depth <= LUTRAM_DEPTH:
        return MemCost(0, _ceil(depth, LUTRAM_DEPTH) * width_bits)
    best = min(_ceil(depth, d) * _ceil(width_bits, w) for d, w in RAMB18_SHAPES)
    return MemCost(best, 0)


@functools.lru_cache(maxsize=1 << 16)
def block_memory(width_bits: int, depth: int) -> MemCost:
    """A memory the RTL asks to be block RAM (``rom_style = "block"``: the weights): RAMB18
    from 1,024 bits on whatever its depth, LUTRAM below."""
    if depth <= 0 or width_bits <= 0:
        return MemCost()
    if width_bits * depth < LUTRAM_BITS:
        return MemCost(0, _ceil(depth, LUTRAM_DEPTH) * width_bits)
    return MemCost(min(_ceil(depth, d) * _ceil(width_bits, w) for d, w in RAMB18_SHAPES), 0)


@functools.lru_cache(maxsize=1 << 16)
def rom(width_bits: int, depth: int) -> MemCost:
    """A read-only memory: logic (LUTs) below `ROM_BRAM_DEPTH` words, else as `memory`."""
    if 0 < depth < ROM_BRAM_DEPTH and width_bits > 0:
        return MemCost(0, _ceil(depth, LUTRAM_DEPTH) * width_bits)
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
    if depth <= 0 or width_bits <= 0:
        return MemCost()
    per_bit = 1 if depth <= LUTRAM_DEPTH else -(-3 * _ceil(depth, LUTRAM_DEPTH) // 2)
    return MemCost(lut=width_bits * per_bit)


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
