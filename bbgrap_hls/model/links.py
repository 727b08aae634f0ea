"""Cost of what connects blocks: FIFOs, width converters, stream links, off-chip buffers.

Formulas (docs/cost-model.md, "Channels"):

- stream over a link of ``w`` bits/cycle: ``ii = ceil(bits / w)``, plus ``latency`` cycles
  per hop; tensors sharing a link share its width (their bits add up).
- off-chip buffer at ``B`` bytes/cycle: ``ii = ceil(2·bytes / B) + barrier`` (the writer's
  and the reader's traffic share the memory; the barrier, one memory latency, separates
  the last write of a frame from the first read).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bbgrap_hls.model.memory import MemCost, memory

LUT_STREAM_ENDPOINT = 60   # serialiser / deserialiser control per tensor and core
LUT_PER_LINK_BIT = 1       # lane muxing onto the link per bit of tensor width
LUT_DMA = 1500             # AXI master (burst engine) per buffer endpoint
BRAM_DMA = 2               # burst FIFO per buffer endpoint
LUT_CONVERTER = 20         # width converter control
LUT_PER_CONVERTER_LANE = 8  # per lane of the wider side


@dataclass(frozen=True)
class LinkCost:
    """A stream over one or more link hops.

    Attributes:
        ii: cycles per frame on the most loaded hop (this stream alone).
        latency: sum of the hops' latencies.
    """

    ii: int
    latency: int


@dataclass(frozen=True)
class BufferCost:
    """A tensor written to off-chip memory and read back after a barrier.

    Attributes:
        ii: ``ceil(2·bytes / B) + barrier``.
        transfer: ``ceil(bytes / B)``, the time of the write (or of the read).
        barrier: cycles between the last write and the first read (memory latency).
        latency: first written beat to last read beat, ``2·transfer + barrier``.
    """

    ii: int
    transfer: int
    barrier: int
    latency: int


def link_cost(bits_per_frame: int, width_bits: int, latency_cycles: int) -> LinkCost:
    """A stream of ``bits_per_frame`` over a link ``width_bits`` wide."""
    return LinkCost(ii=math.ceil(bits_per_frame / width_bits), latency=latency_cycles)


def buffer_cost(bytes_per_frame: int, bytes_per_cycle: float, latency_cycles: int) -> BufferCost:
    """An off-chip buffer of ``bytes_per_frame`` at ``bytes_per_cycle`` with its barrier."""
    transfer = math.ceil(bytes_per_frame / bytes_per_cycle)
    both = math.ceil(2 * bytes_per_frame / bytes_per_cycle)
    return BufferCost(ii=both + latency_cycles, transfer=transfer, barrier=latency_cycles,
                      latency=2 * transfer + latency_cycles)


def fifo_cost(lanes: int, depth: int) -> MemCost:
    """A FIFO ``depth`` beats deep of ``lanes`` int8 lanes (LUTRAM under 1,024 bits)."""
    return memory(8 * lanes, depth)


def width_converter_lut(a: int, b: int) -> int:
    """LUTs of a width converter from ``a`` to ``b`` lanes (0 when ``a == b``)."""
    return 0 if a == b else LUT_CONVERTER + LUT_PER_CONVERTER_LANE * max(a, b)


def stream_endpoint_lut(lanes: int) -> int:
    """LUTs of one end (or one forwarding hop) of an inter-core stream of ``lanes`` lanes."""
    return LUT_STREAM_ENDPOINT + LUT_PER_LINK_BIT * 8 * lanes


def buffer_endpoint() -> MemCost:
    """Resources of one end of an off-chip buffer (a DMA engine)."""
    return MemCost(BRAM_DMA, LUT_DMA)
