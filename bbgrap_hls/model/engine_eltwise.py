"""Cost of the layer engine's element-wise unit (``hw/rtl/engine_eltwise.sv``; docs/engine.md,
"Element-wise unit"): a layer's exact cycles from the start pulse to the done pulse, and the
unit's DSP / BRAM18 / LUT estimate.

The memory is the one the module twin simulates (`sim.engine_eltwise`): a read burst's first
beat ``latency`` cycles after its address handshake, then one beat every ``period`` cycles,
bursts in order (a burst's first beat at ``max(address + L, previous beat + P)``); a write
burst's beats accepted one every ``period`` cycles from the cycle after its address (the
unit offers them then), its response ``latency`` cycles after its last beat, responses one a
cycle; address channels always ready. Each channel (feature read, feature write, weight read)
has its own rate.

The unit's schedule (the RTL's, cycle 0 the start pulse):

1. with a table (TABLE, or a fused one): its ``256/DB`` beats on the weight port, address
   from cycle 1, into a staging buffer; from the cycle after a beat arrived, `TABLE_WRITE`
   bytes a cycle go into every lane's copy (`table_load`); the feature reads do not wait, but
   a beat that starts a computation (below) is taken only from the cycle after the last
   write (``rready`` low: the memory holds it);
2. MULV: the vector first: its ``ceil(C/DB)`` beats (``B_STRIDE = G``), or one beat a block
   from ``B_BASE + b·B_STRIDE`` (a burst each, one a cycle);
3. the map in runs (`engine_eltwise.runs`: the whole map, or with strided blocks a block a
   run, run ``r`` from ``X_BASE + r·X_STRIDE`` of each map ``X``), each in chunks of
   ``len(p) = min(BURST, NB − p, beats to the next 4 KB of A, of B (ADD, MUL), of OUT)``
   beats (``NB = ceil(run bytes/DB)``, ``p`` the run's beats so far): per chunk an A burst
   on the feature port; chunk ``i``'s A waits until fewer than ``CHUNKS`` chunks are in
   flight (read and not wholly written: chunk ``i − CHUNKS``'s last W beat + 1); ADD, MUL:
   its B burst on the weight port, the cycle after its A request, after the previous B's and
   the table's requests (one a cycle from cycle 1); A beat ``k`` is taken (into the pair
   buffer, ``BURST`` beats) from the cycle after B beat ``k − BURST``, B beat ``k`` from the
   cycle after A beat ``k`` (beat by beat: O(beats), about 1 µs a beat);
4. a chunk's result beats leave the 3-stage datapath 3 cycles after their firing beat's
   last slice (``LANES`` lanes: a beat takes ``R = DB/LANES`` cycles, and a beat that starts
   one, B in ADD and MUL, A in MULV and TABLE, is taken, ``rready``, only ``R`` cycles after
   the previous such beat, the first not before the table is written: the memory holds it,
   its next beat ``P`` after it is taken); its
   write address goes out the cycle after its last result (``last data + R − 1 + 4``), its
   W beats from the cycle after that;
5. done: the cycle after the last write response.

The recurrence below follows that order chunk by chunk (ADD, MUL: beat by beat), milliseconds
for a ResNet-sized map.
"""

from __future__ import annotations

from dataclasses import dataclass

from bbgrap_hls.codegen.engine_eltwise import ADD, ELTWISE_FIELDS, MUL, MULV, TABLE, TABLE_BYTES, runs
from bbgrap_hls.model.blocks import ELTWISE_DSP, LUT_ELTWISE
from bbgrap_hls.model.memory import memory

PIPE = 3
"""Datapath stages (``hw/rtl/engine_eltwise.sv``): products, rounding and clamp (rq_round),
table or bypass; a beat's result is in the output buffer at the end of its third cycle."""

TABLE_WRITE = 4
"""Table bytes written a cycle into each lane's copy (``TK`` in ``hw/rtl/engine_eltwise.sv``:
a copy is ``TABLE_WRITE`` single-port banks of ``256/TABLE_WRITE`` bytes, one write port each,
so Yosys builds it in distributed RAM)."""

LUT_TABLE_LANE = 4 * 8 + 24
"""LUTs per byte lane of the table stage: its copy of the table, `TABLE_WRITE` single-port
banks of 64 × 8 bits (Yosys 0.70: eight RAM64X1S a bank, 32 LUTs a lane), and 24 of logic
(a guess: the bank address multiplexer, write group or the lane's entry, 6; the bank select
and the bypass, two a bit). Was 690: the table in 2,048 registers written a beat at a time,
read through a 256-to-1 multiplexer a lane (8 × 85 LUT6), and its output (lut_act's 10)."""

LUT_VECTOR_LANE = 195
"""LUTs per byte lane besides `LUT_ELTWISE` and `LUT_TABLE_LANE`: MULV's block select, the
operand and mode multiplexers of the shared add / mul products. Fitted to Yosys 0.70
(bench/resources.py ``--engine``) with `LUT_CONTROL`: 672 LUTs a lane with `LUT_ELTWISE` and
`LUT_TABLE_LANE`, memories apart (engine-eltwise-g8 less -g4 gives 682; 672 puts -g4, -g8 and
-g8-default at Yosys / model 0.99, 1.00, 1.01); was 299, the rest beside a 690-LUT table
lane."""

LUT_CONTROL = 1790
"""LUTs of the unit's control and its three AXI channels (descriptor, chunk lengths, counters,
the table's load). Fitted to Yosys 0.70 as the mean of 1,503 at BURST 4, CHUNKS 2, CMAX 64 and
2,077 at the RTL's 64, 4, 512 with the table in registers (engine-eltwise-g4/-g8,
-g8-default); kept with the table in LUTRAM, where the lanes' 672 (`LUT_VECTOR_LANE`) was
fitted beside it (was a guess of 4,600: `LUT_BASE_SIMPLE` and three `LUT_AXI_READ`)."""

LUT_BEAT_BYTE = 28
"""LUTs per beat byte outside the lanes of a unit narrower than its beat (``LANES`` below
``DATA_W/8``: the beat-wide operand selects, the held beat and its slice multiplexers, the
table's staging slice select). A compromise between two Yosys 0.70 runs
(bench/resources.py): engine-eltwise-g8-l4 (16-byte beats, 4 lanes: 21 a byte would match)
and engine-eltwise-g8-w64-l16 (64-byte beats, 16 lanes: 31 would match); 28 gives Yosys /
model 0.98 and 1.01 (was 96 with the table in registers: 186 and 28 would match then)."""

DESC_DSP = 6
"""DSP48E2s of the descriptor's 32-bit ``H·W`` and ``H·W·C`` (Yosys 0.70: 6 besides the lanes')."""


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


def chunks(row: list[int], beat: int, burst: int, g: int) -> list[int]:
    """The map's chunk lengths in beats, run after run (step 3 of the module doc; ``g`` the
    unit's ``G``)."""
    f = dict(zip(ELTWISE_FIELDS, row, strict=True))
    nrun, size = runs(row, g)
    nb = _ceil(size, beat)
    maps = ["A", "OUT"] + (["B"] if f["MODE"] in (ADD, MUL) else [])
    out = []
    for r in range(nrun):
        bases, p = [f[f"{m}_BASE"] + r * f[f"{m}_STRIDE"] for m in maps], 0
        while p < nb:
            n = min([burst, nb - p] + [_to4k(b + p * beat, beat) for b in bases])
            out.append(n)
            p += n
    return out


def table_load(base: int, beat: int, latency: int, period: int, burst: int) -> tuple[int, int]:
    """The table's load (step 1 of the module doc): the cycle of its last beat on the weight
    port (bursts from cycle 1, one address a cycle, beats as the read memory gives them) and the
    cycle after its last write into the lanes' copies, `TABLE_WRITE` bytes a cycle from the
    cycle after their beat arrived."""
    last = wrote = -(1 << 60)
    per_beat = beat // TABLE_WRITE  # writes a beat
    for j, n in enumerate(split(base, TABLE_BYTES // beat, beat, burst)):
        first = max(1 + j + latency, last + period)
        for i in range(n):
            wrote = max(wrote + 1, first + i * period + 1) + per_beat - 1
        last = first + (n - 1) * period
    return last, wrote + 1


@dataclass(frozen=True)
class EltwiseCycles:
    """A layer's cycles (start pulse to done pulse) and where they went.

    Attributes:
        cycles: start to done.
        table: cycle of the table's last beat (0 without a table).
        reads: beats read, the table's apart (vector and B, on the weight port, included).
        writes: beats written.
        chunks: chunks of the map.
        ready: the first cycle a beat that starts a computation may be taken: the cycle after
            the table's last write into the lanes' copies (0 without a table).
    """

    cycles: int
    table: int
    reads: int
    writes: int
    chunks: int
    ready: int = 0


def layer_cycles(row: list[int], beat: int, latency: int, period: int, burst: int = 64,
                 in_flight: int = 4, g: int | None = None, lanes: int | None = None) -> EltwiseCycles:
    """Exact cycles of one layer (descriptor ``row``, `ELTWISE_FIELDS`) on a unit of ``beat``
    bytes a beat, ``burst`` beats a burst at most, ``in_flight`` chunks in flight, ``g``
    channels a block and ``lanes`` byte lanes (the RTL's ``BURST``, ``CHUNKS``, ``G`` and
    ``LANES``; ``g`` None: blocks of the strides' own bytes, i.e. ``A_STRIDE/(H·W)`` when
    contiguous; ``lanes`` None: ``beat``), its memory ``latency`` and ``period`` as the module
    doc.

    Raises:
        ValueError: ``latency`` or ``period`` below 1, or ``lanes`` not dividing ``beat``.
    """
    if latency < 1 or period < 1:
        raise ValueError(f"engine_eltwise: latency={latency} and period={period} must be at least 1")
    lanes = beat if lanes is None else lanes
    if lanes < 1 or beat % lanes or lanes & (lanes - 1):
        raise ValueError(f"engine_eltwise: LANES={lanes} must be a power of two dividing the beat ({beat} bytes)")
    slow = beat // lanes  # cycles a beat in the lanes
    f = dict(zip(ELTWISE_FIELDS, row, strict=True))
    mode, lat, per = f["MODE"], latency, period
    if g is None:
        g = f["A_STRIDE"] // (f["H"] * f["W"]) if f["A_STRIDE"] % (f["H"] * f["W"]) == 0 else 0
        if not g or f["C"] % g:
            raise ValueError(f"engine_eltwise model: give g, A_STRIDE={f['A_STRIDE']} is not H·W·G")
    table = mode == TABLE or bool(f["LUT"])
    t0, t_last, t_ready, t_ar = 1, 0, 0, 0
    if table:
        t_last, t_ready = table_load(f["T_BASE"], beat, lat, per, burst)
        t_ar = len(split(f["T_BASE"], TABLE_BYTES // beat, beat, burst))  # its last address
    ar, rlast, reads = t0 - 1, -(1 << 60), 0
    # the last beat that started the lanes (a table: the first may be taken at t_ready)
    fired = t_ready - slow if table else -(1 << 60)

    def read(n: int, gate: int, fire: bool = False) -> None:
        nonlocal ar, rlast, reads, fired
        ar = max(ar + 1, gate)
        if fire:  # each beat taken once the lanes are free of the one before
            rlast = max(ar + lat, rlast + per, fired + slow) + (n - 1) * max(per, slow)
            fired = rlast
        else:
            rlast = max(ar + lat, rlast + per) + (n - 1) * per
        reads += n

    if mode == MULV and f["B_STRIDE"] != g:  # a strided vector: a beat a block
        for _ in range(f["C"] // g):
            read(1, t0)
    elif mode == MULV:
        for n in split(f["B_BASE"], _ceil(f["C"], beat), beat, burst):
            read(n, t0)
    lens = chunks(row, beat, burst, g)
    wlast: list[int] = []
    aw = w = b = -(1 << 60)
    two = mode in (ADD, MUL)
    # ADD, MUL: B on the weight port (after the table's addresses and beats); beat by beat,
    # A beat j taken from the cycle after B beat j - burst (the pair buffer), B beat j from the
    # cycle after A beat j (``alast``, ``blast``: each port's last beat taken)
    b_ar, alast, blast = t_ar, -(1 << 60), t_last if table else -(1 << 60)
    tb = [-(1 << 60)] * burst  # B beat j's cycle at j mod burst
    j = 0
    for i, n in enumerate(lens):
        gate = wlast[i - in_flight] + 1 if i >= in_flight else t0
        if not two:
            read(n, gate, fire=True)
        else:
            ar = max(ar + 1, gate)
            b_ar = max(b_ar + 1, ar + 1)
            a_off, b_off = ar + lat, b_ar + lat
            for _ in range(n):
                k = j % burst
                alast = max(a_off, alast + per, tb[k] + 1)
                blast = tb[k] = max(b_off, blast + per, alast + 1, fired + slow)
                fired, a_off, b_off, j = blast, -(1 << 60), -(1 << 60), j + 1
            rlast = blast
            reads += 2 * n
        aw = max(aw + 1, rlast + slow - 1 + PIPE + 1)
        w = max(aw + 1, w + per) + (n - 1) * per
        wlast.append(w)
        b = max(w + lat, b + 1)
    return EltwiseCycles(cycles=b + 1, table=t_last, reads=reads, writes=sum(lens), chunks=len(lens),
                         ready=t_ready)


@dataclass(frozen=True)
class EltwiseResources:
    """The unit's resources (docs/engine.md says which figures are fitted and which guessed)."""

    dsp: int
    bram18: int
    lut: int


def resources(g: int, beat: int, burst: int = 64, in_flight: int = 4, cmax: int = 512,
              lanes: int | None = None) -> EltwiseResources:
    """DSP48E2, RAMB18 and LUTs of ``engine_eltwise`` with ``beat``-byte beats and ``lanes`` byte
    lanes (None: ``beat``, a beat a cycle).

    - DSP: `ELTWISE_DSP` (2) a lane, as ``eltwise.sv`` (Add: two 9 × 25 products; Mul:
      9 × 9 then 18 × 25); here one pair serves both modes through operand multiplexers; and
      `DESC_DSP` for the descriptor's sizes.
    - BRAM18 / LUTRAM (`memory.memory`): the A pair buffer (``burst`` beats), the output
      buffer (``in_flight·burst`` beats), the vector buffer (``cmax`` bytes in beats and one
      more: a memory of ``8·g`` bits per ``g``-byte group of a beat, two copies each: read at
      two addresses, a block's word and the next's), the table's staging buffer (``256/beat``
      beats) and the chunk queue's OUT and B addresses (32 bits, ``in_flight`` words); each lane's
      copy of the table is in `LUT_TABLE_LANE`. Yosys 0.70 maps them so, LUT for LUT, on all
      five configurations of bench/resources.py ``--engine``.
    - LUT: `LUT_ELTWISE` a lane (fitted on ``eltwise.sv``'s lanes), `LUT_TABLE_LANE` and
      `LUT_VECTOR_LANE` a lane and `LUT_CONTROL`, fitted to Yosys on this module; with fewer
      lanes than beat bytes, `LUT_BEAT_BYTE` for each beat byte outside the lanes.
    """
    lanes = beat if lanes is None else lanes
    if beat % g:
        raise ValueError(f"engine_eltwise: G={g} must divide the beat ({beat} bytes)")
    if lanes < 1 or beat % lanes or lanes & (lanes - 1):
        raise ValueError(f"engine_eltwise: LANES={lanes} must be a power of two dividing the beat ({beat} bytes)")
    w = 8 * beat
    mem = (memory(w, burst) + memory(w, in_flight * burst)
           + memory(8 * g, _ceil(cmax, beat) + 1).times(2 * (beat // g))
           + memory(w, TABLE_BYTES // beat) + memory(32, in_flight).times(2))
    return EltwiseResources(
        dsp=ELTWISE_DSP * lanes + DESC_DSP,
        bram18=mem.bram18,
        lut=(LUT_CONTROL + (LUT_ELTWISE + LUT_TABLE_LANE + LUT_VECTOR_LANE) * lanes
             + LUT_BEAT_BYTE * (beat - lanes) + mem.lut),
    )
