"""Cost of the layer engine's element-wise unit (``hw/rtl/engine_eltwise.sv``; docs/engine.md,
"Element-wise unit"): a layer's exact cycles from the start pulse to the done pulse, and the
unit's DSP / BRAM18 / LUT estimate.

The memory is the one the module twin simulates (`sim.engine_eltwise`): a read burst's first
beat ``latency`` cycles after its address handshake, then one beat every ``period`` cycles,
bursts in order (a burst's first beat at ``max(address + L, previous beat + P)``); a write
burst's beats accepted one every ``period`` cycles from the cycle after its address (the
unit offers them then), its response ``latency`` cycles after its last beat, responses one a
cycle; address channels always ready. Reads and writes do not share the memory's rate.

The unit's schedule (the RTL's, cycle 0 the start pulse):

1. with a table (TABLE, or a fused one): its ``256/DB`` beats on the weight port, address
   from cycle 1; the feature reads wait for the last table beat (from that cycle + 1);
2. MULV: the vector's ``ceil(C/DB)`` beats first;
3. the map in chunks of ``len(p) = min(BURST, NB − p, beats to the next 4 KB of A, of B
   (ADD, MUL), of OUT)`` beats (``NB = ceil(H·W·C/DB)``): per chunk an A burst, then a B burst
   (ADD, MUL) the next cycle; chunk ``i``'s A waits until fewer than ``CHUNKS`` chunks are in
   flight (read and not wholly written: chunk ``i − CHUNKS``'s last W beat + 1);
4. a chunk's result beats leave the 3-stage datapath 3 cycles after their (B, or A) beat; its
   write address goes out the cycle after its last result (``last data + 4``), its W beats
   from the cycle after that;
5. done: the cycle after the last write response.

The recurrence below follows that order chunk by chunk: O(chunks), milliseconds for a
ResNet-sized map.
"""

from __future__ import annotations

from dataclasses import dataclass

from bbgrap_hls.codegen.engine_eltwise import ADD, ELTWISE_FIELDS, MUL, MULV, TABLE, TABLE_BYTES
from bbgrap_hls.model.blocks import ELTWISE_DSP, LUT_AXI_READ, LUT_BASE_SIMPLE, LUT_ELTWISE
from bbgrap_hls.model.memory import MemCost, lutram, memory

PIPE = 3
"""Datapath stages (``hw/rtl/engine_eltwise.sv``): products, rounding and clamp (rq_round),
table or bypass; a beat's result is in the output buffer at the end of its third cycle."""

LUT_TABLE_LANE = 10
"""LUTs per byte lane of the table stage's select and output register besides the table's
copy (lut_act's per-lane figure in `blocks.lut_act`; a guess here, not synthesised)."""

LUT_VECTOR_LANE = 12
"""LUTs per byte lane of MULV's block select (two vector words, a comparator per lane
group, the mode multiplexers of the shared add / mul lane): a guess, not synthesised."""


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _to4k(addr: int, beat: int) -> int:
    return (4096 - addr % 4096) // beat


def split(base: int, beats: int, beat: int, burst: int) -> list[int]:
    """Burst lengths of ``beats`` beats from ``base``: at most ``burst``, none across 4 KB."""
    out, p = [], 0
    while p < beats:
        n = min(burst, beats - p, _to4k(base + p * beat, beat))
        out.append(n)
        p += n
    return out


def chunks(row: list[int], beat: int, burst: int) -> list[int]:
    """The map's chunk lengths in beats (step 3 of the module doc)."""
    f = dict(zip(ELTWISE_FIELDS, row, strict=True))
    nb = _ceil(f["H"] * f["W"] * f["C"], beat)
    bases = [f["A_BASE"], f["OUT_BASE"]] + ([f["B_BASE"]] if f["MODE"] in (ADD, MUL) else [])
    out, p = [], 0
    while p < nb:
        n = min([burst, nb - p] + [_to4k(b + p * beat, beat) for b in bases])
        out.append(n)
        p += n
    return out


@dataclass(frozen=True)
class EltwiseCycles:
    """A layer's cycles (start pulse to done pulse) and where they went.

    Attributes:
        cycles: start to done.
        table: cycle of the table's last beat (0 without a table).
        reads: beats read on the feature port (vector included).
        writes: beats written.
        chunks: chunks of the map.
    """

    cycles: int
    table: int
    reads: int
    writes: int
    chunks: int


def layer_cycles(row: list[int], beat: int, latency: int, period: int, burst: int = 64,
                 in_flight: int = 4) -> EltwiseCycles:
    """Exact cycles of one layer (descriptor ``row``, `ELTWISE_FIELDS`) on a unit of ``beat``
    bytes a beat, ``burst`` beats a burst at most and ``in_flight`` chunks in flight (the
    RTL's ``BURST`` and ``CHUNKS``), its memory ``latency`` and ``period`` as the module doc.

    Raises:
        ValueError: ``latency`` or ``period`` below 1.
    """
    if latency < 1 or period < 1:
        raise ValueError(f"engine_eltwise: latency={latency} and period={period} must be at least 1")
    f = dict(zip(ELTWISE_FIELDS, row, strict=True))
    mode, lat, per = f["MODE"], latency, period
    table = mode == TABLE or bool(f["LUT"])
    t0, t_last = 1, 0
    if table:  # the weight port: its own address and data channels
        last = -(1 << 60)
        for j, n in enumerate(split(f["T_BASE"], TABLE_BYTES // beat, beat, burst)):
            first = max(1 + j + lat, last + per)
            last = first + (n - 1) * per
        t_last, t0 = last, last + 1
    ar, rlast, reads = t0 - 1, -(1 << 60), 0

    def read(n: int, gate: int) -> None:
        nonlocal ar, rlast, reads
        ar = max(ar + 1, gate)
        rlast = max(ar + lat, rlast + per) + (n - 1) * per
        reads += n

    if mode == MULV:
        for n in split(f["B_BASE"], _ceil(f["C"], beat), beat, burst):
            read(n, t0)
    lens = chunks(row, beat, burst)
    wlast: list[int] = []
    aw = w = b = -(1 << 60)
    for i, n in enumerate(lens):
        read(n, wlast[i - in_flight] + 1 if i >= in_flight else t0)
        if mode in (ADD, MUL):
            read(n, t0)
        aw = max(aw + 1, rlast + PIPE + 1)
        w = max(aw + 1, w + per) + (n - 1) * per
        wlast.append(w)
        b = max(w + lat, b + 1)
    return EltwiseCycles(cycles=b + 1, table=t_last, reads=reads, writes=sum(lens), chunks=len(lens))


@dataclass(frozen=True)
class EltwiseResources:
    """The unit's resources (docs/engine.md says which figures are fitted and which guessed)."""

    dsp: int
    bram18: int
    lut: int


def resources(g: int, beat: int, burst: int = 64, in_flight: int = 4, cmax: int = 512) -> EltwiseResources:
    """DSP48E2, RAMB18 and LUTs of ``engine_eltwise`` with ``beat`` byte lanes.

    - DSP: `ELTWISE_DSP` (2) a lane, as ``eltwise.sv`` (Add: two 9 × 25 products; Mul:
      9 × 9 then 18 × 25); here one pair serves both modes through operand multiplexers.
    - BRAM18 / LUTRAM (`memory.memory`): the A chunk buffer (``burst`` beats), the output
      buffer (``in_flight·burst`` beats), the vector buffer (``cmax`` bytes in beats); the
      table, one 256 × 8 copy per lane (a read port each) in LUTRAM (`memory.lutram`).
    - LUT: `LUT_ELTWISE` a lane (fitted on ``eltwise.sv``'s lanes by Yosys, whose add and mul
      lanes this lane merges: not synthesised as this module), `LUT_AXI_READ` for each of the
      three AXI channels' control (the read master's fitted figure, reused as a guess for the
      write side and the table reader), and the guessed `LUT_TABLE_LANE` and `LUT_VECTOR_LANE`.
    """
    if beat % g:
        raise ValueError(f"engine_eltwise: G={g} must divide the beat ({beat} bytes)")
    w = 8 * beat
    mem = memory(w, burst) + memory(w, in_flight * burst) + memory(w, _ceil(cmax, beat) + 1)
    table = MemCost(0, lutram(8, 256)).times(beat)
    lanes = beat
    return EltwiseResources(
        dsp=ELTWISE_DSP * lanes,
        bram18=mem.bram18,
        lut=(LUT_BASE_SIMPLE + 3 * LUT_AXI_READ + (LUT_ELTWISE + LUT_TABLE_LANE + LUT_VECTOR_LANE) * lanes
             + mem.lut + table.lut),
    )
