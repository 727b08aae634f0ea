"""Cost of what connects blocks: FIFOs, width converters, stream links, off-chip buffers.

Formulas (docs/cost-model.md, "Channels"):

- stream over a link of ``w`` bits/cycle: a beat of ``b`` bits holds the link
  ``ceil(b / w)`` cycles, so ``ii = beats·ceil(b / w)`` (``max(beats, ceil(bits / w))`` when
  ``w`` divides ``b`` or exceeds it: at most one beat per cycle), plus ``latency`` cycles
  per hop; tensors sharing a link share its width (their cycles add up).
- off-chip buffer at ``B`` bytes/cycle: ``ii = max(beats, ceil(2·bytes / B))`` (the writer's
  and the reader's traffic share the memory, one beat per port per cycle; frames are
  double-buffered, so the barrier — one memory latency between a frame's last write and
  its first read — adds to the latency, not to the ii).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bbgrap_hls.model.memory import MemCost, memory, uram_memory
from bbgrap_hls.model.timing import FIFO_DEPTH

LUT_STREAM_ENDPOINT = 60   # serialiser / deserialiser control per tensor and core
LUT_PER_LINK_BIT = 1       # lane muxing onto the link per bit of tensor width
LUT_CONVERTER = 50         # dwc.sv control (lanes held, ready)
LUT_DWC_BIT = 1.0          # dwc.sv: per buffer bit and LUT6 of its input choice


@dataclass(frozen=True)
class LinkCost:
    """A stream over one or more link hops.

    Attributes:
        ii: cycles per frame on the most loaded hop (this stream alone).
        latency: sum of the hops' latencies (a beat sent at ``t`` arrives at ``t + latency``).
        beat_cycles: cycles one beat holds the link.
    """

    ii: int
    latency: int
    beat_cycles: int = 1

    def profile(self, a: int, b: int) -> tuple[int, int]:
        """Arrival ``(first, last)`` beat cycles of a tensor sent from ``(a, b)``."""
        return a + self.latency, max(b, a + self.ii - self.beat_cycles) + self.latency


@dataclass(frozen=True)
class BufferCost:
    """A tensor written to off-chip memory and read back after a barrier.

    Attributes:
        ii: ``max(beats, ceil(2·bytes / B))``.
        transfer: ``max(beats, ceil(bytes / B))``, the time of the write (or of the read)
            alone.
        barrier: cycles between the last write and the first read (memory latency).
        latency: first written beat to last read beat, ``2·transfer + barrier`` (cycles
            from the first written beat to the last read beat; the module test measures
            this plus one).
    """

    ii: int
    transfer: int
    barrier: int
    latency: int


def link_cost(bits_per_frame: int, width_bits: int, latency_cycles: int,
              beats: int | None = None) -> LinkCost:
    """A stream of ``bits_per_frame`` over a link ``width_bits`` wide.

    ``beats`` (the frame's beats at the producer's lanes) makes the ii exact for the RTL
    link, which sends one beat in ``ceil(beat_bits / width)`` cycles; without it the bits
    are assumed packed (``ceil(bits / width)``, a lower bound).
    """
    if not beats:
        return LinkCost(ii=math.ceil(bits_per_frame / width_bits), latency=latency_cycles)
    per_beat = math.ceil(math.ceil(bits_per_frame / beats) / width_bits)
    return LinkCost(ii=beats * per_beat, latency=latency_cycles, beat_cycles=per_beat)


def buffer_cost(bytes_per_frame: int, bytes_per_cycle: float, latency_cycles: int,
                beats: int = 0) -> BufferCost:
    """An off-chip buffer of ``bytes_per_frame`` (``beats`` beats) at ``bytes_per_cycle``
    with its barrier of ``latency_cycles``."""
    transfer = max(beats, math.ceil(bytes_per_frame / bytes_per_cycle))
    both = max(beats, math.ceil(2 * bytes_per_frame / bytes_per_cycle))
    return BufferCost(ii=both, transfer=transfer, barrier=latency_cycles,
                      latency=2 * transfer + latency_cycles)


URAM_FIFO_BRAM18 = 16
"""A FIFO that would take at least this many RAMB18 (a URAM288's 288 Kb) goes to URAM on a
core that has URAM: the whole-frame FIFOs of squeeze-excite gates and long skips."""


def fifo_in_uram(lanes: int, depth: int) -> bool:
    """Whether a FIFO of ``depth`` beats of ``lanes`` lanes is big enough for URAM."""
    return memory(8 * lanes, depth).bram18 >= URAM_FIFO_BRAM18


def fifo_cost(lanes: int, depth: int, uram: bool = False) -> MemCost:
    """A FIFO ``depth`` beats deep of ``lanes`` int8 lanes (LUTRAM under 1,024 bits); with
    ``uram`` (the core has URAM) one of `URAM_FIFO_BRAM18` RAMB18 or more is built from
    URAM288 (HLS: ``BIND_STORAGE type=fifo impl=uram``)."""
    if uram and fifo_in_uram(lanes, depth):
        return uram_memory(8 * lanes, depth)
    return memory(8 * lanes, depth)


def fifo_profile(a: int, b: int) -> tuple[int, int]:
    """Arrival ``(first, last)`` beat cycles after a FIFO of a tensor written at ``(a, b)``."""
    return a + FIFO_DEPTH, b + FIFO_DEPTH


def width_converter_ii(elems: int, a: int, b: int) -> int:
    """Cycles per frame of a width converter from ``a`` to ``b`` lanes: one beat of the
    narrower side per cycle."""
    return elems // min(a, b)


LUT_TRIM = 30          # trim.sv control (fold/beat counters, NEED/FREE tables)
LUT_TRIM_FOLD = 2      # per input fold: its write enable and FREE entry
LUT_TRIM_WIDE = 0.53   # per output bit and beat choice of a multiplexer of more than 8 beats
LUT_NARROW = 13        # trim.sv with one input beat a pixel (a narrowing converter): its control
LUT_WIDEN = 10         # trim.sv with one output beat a pixel (a widening converter): its control
LUT_WIDEN_FOLD = 1.25  # ... and per input beat (write enable)


def trim_converter_lut(nf: int, lanes: int, kb: int) -> int:
    """LUTs of ``trim.sv``: ``nf`` input beats written side by side into a pixel buffer (one
    write enable each, no multiplexer), read out as ``kb`` beats of ``lanes`` lanes through a
    ``kb``-way multiplexer per output bit: ``ceil((kb−1)/3)`` LUT6 per bit up to 8 beats, about
    `LUT_TRIM_WIDE`·``(kb−1)`` above; at one output beat (widening) no multiplexer at all, at
    one input beat (narrowing) a lighter control (Yosys 0.70, ``synth_xilinx`` + ``abc -lut 6``: see
    `blocks.trim_lut` and docs/cost-model.md, "LUT"; the flip-flops are not LUTs)."""
    if kb == 1:  # the buffer is the output: write enables and the fold counter only
        return round(LUT_WIDEN + LUT_WIDEN_FOLD * nf)
    per_bit = -(-(kb - 1) // 3) if kb <= 8 else LUT_TRIM_WIDE * (kb - 1)
    return round((LUT_TRIM if nf > 1 else LUT_NARROW) + LUT_TRIM_FOLD * nf + 8 * lanes * per_bit)


def trim_folds(a: int, b: int) -> int | None:
    """Input beats per word of the width converter from ``a`` to ``b`` lanes when it is
    ``trim.sv`` without padding (one lane count divides the other: ``b/a`` widening, 1
    narrowing), None when it is ``dwc.sv``."""
    if b % a == 0:
        return b // a
    return 1 if a % b == 0 else None


def width_converter_lut(a: int, b: int) -> int:
    """LUTs of the width converter from ``a`` to ``b`` lanes (0 when ``a == b``): where one
    divides the other ``trim.sv`` without padding (`trim_converter_lut`: widening ``b/a``
    beats into one, narrowing one word into ``a/b`` beats); else ``dwc.sv``, whose
    ``a + b``-lane buffer takes an input lane at any offset: `LUT_CONVERTER` plus
    `LUT_DWC_BIT` per buffer bit and input lane choice (docs/cost-model.md, "LUT")."""
    if a == b:
        return 0
    nf = trim_folds(a, b)
    if nf is not None:
        return trim_converter_lut(nf, b, nf * a // b)
    return round(LUT_CONVERTER + LUT_DWC_BIT * 8 * (a + b) * -(-a // 3))


def stream_endpoint_lut(lanes: int) -> int:
    """LUTs of one end (or one forwarding hop) of an inter-core stream of ``lanes`` lanes."""
    return LUT_STREAM_ENDPOINT + LUT_PER_LINK_BIT * 8 * lanes

