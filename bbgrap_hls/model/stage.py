"""DDR frame stage (`hw/rtl/ddr_stage.sv`): cycles and resources of a frame buffer in board memory.

The stage sits in front of a block that takes no input while it computes (an off-chip conv
with one input slot): it takes the producer's beats into a write FIFO, writes frame ``k`` to
region ``k mod regions`` of the board memory (AXI4 INCR bursts, a burst issued once its beats
are buffered), and once the frame's write responses have all arrived (the barrier) reads it
back into an output FIFO, a burst only while that FIFO has room for it (docs/cost-model.md,
"DDR frame stage").

Memory (as `bbgrap_hls.rtlsim.axi_mem`): a read burst's first beat ``L`` cycles after its
address handshake, then a beat every ``P = max(1, beat/rate)`` cycles (beat ``k`` of a run of
bursts at the first cycle ``>= start + k·P``); W beats likewise accepted one per ``P``
cycles; a burst's write response ``L`` cycles after its last W beat. Reads and writes do not
share the rate (one rate per direction).

Cycles. A frame of ``F`` beats is cut into the same bursts every time, ``len(p) = min(burst,
F − p, beats to the next 4 KB)`` from frame beat ``p`` (regions are 4 KB aligned), ``NB`` of
them. With the producer offering a beat every cycle and the consumer always ready:

- an input beat at cycle ``c`` counts for an AW from ``c + 1``; a burst's W beats start the
  cycle after its AW at the earliest, one per ``P``; its B comes ``L`` after its last W beat;
- the frame is readable the cycle after its last B (``b_k``); its reads take about
  ``L + F·P`` (an AR once the output FIFO has room), its beats leave 2 cycles after they
  arrive (the FIFO's registered read);
- frame ``k + regions`` may start writing once frame ``k``'s last R beat is in.

So ``latency ≈ F + (n_last + 2) + L + 1 + L + F·P + 2`` for a fast memory (``P = 1``: the
last burst's wait for its beats, its W beats, the B, the read round trip), and in steady state

    ii = max(F·P_w, (regions_cycle) / regions)     regions_cycle ≈ 2·F·P + 2·L + c

the ring's turn: a region is busy from its frame's first W beat to its last R beat. These
closed forms are approximations (the FIFOs' depths and the burst cuts shift them by a few
cycles); the model steps the module's control and the memory cycle by cycle (`simulate`,
the same registers and rules as the RTL), which the module tests match exactly
(tests/test_rtl_stage.py). Its cost is ``O(F · P)`` Python steps (about 50 µs a beat, both
runs): frames up to `SIM_BEATS` are stepped whole, longer ones from two shorter frames with
the same burst cuts, page by page (`_cycles`); `ddr_stage` is cached.

``deliver``: with the frame complete in memory and the output FIFO prefetched (``Q`` beats,
at most ``odepth``), a consumer ready from ``t`` takes the first beat at ``t`` and the last at
``t + deliver − 1``: ``deliver = F`` when the reads keep up (``odepth ≳ L + 2·burst`` at
``P = 1``), else about ``Q + (F − Q)·P`` plus the refill's first wait.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from .kinds import divisors
from .memory import memory

STAGE_REGIONS = 3
"""Frame regions of a DDR frame stage's scratch area in the HLS kernel (hw/hls/offchip_stage.h
``STAGE_REGIONS``); the RTL module's ``REGIONS`` is a parameter (codegen gives 2)."""

MAX_STAGE_LANES = 128
"""The widest stream a stage takes: one beat in one AXI4 beat of at most 1,024 bits."""

LUT_DDR_STAGE = 420
"""LUTs of the stage's control besides its FIFO memories: two address generators (AW, AR),
the burst cuts, the beat/commit/room counters and the two `fifo.sv` controls. An estimate
(bench/resources.py ``ddr-stage-16``, 16 lanes, default FIFOs: Yosys 383 LUTs with the FIFOs' control, 8 RAMB18 as modelled)."""

LUT_DDR_STAGE_LANE = 0
"""No per-lane logic: data passes through the FIFOs (the write data is zero-extended)."""


def stage_beat_bytes(lanes: int) -> int:
    """AXI beat bytes for a stream of ``lanes`` int8 lanes: ``max(4, next power of two >= lanes)``.

    Raises:
        ValueError: ``lanes`` < 1 or > 128 (an AXI4 beat is at most 1,024 bits).
    """
    if lanes < 1 or lanes > MAX_STAGE_LANES:
        raise ValueError(f"stage_beat_bytes: {lanes} lanes (1..128 fit an AXI4 beat)")
    return max(4, 1 << (lanes - 1).bit_length())


def stage_region_bytes(beats: int, lanes: int) -> int:
    """Bytes between two frame regions: a frame of ``beats`` beats of `stage_beat_bytes`, rounded
    up to 4 KB (regions start on 4 KB boundaries, so a frame's bursts are cut alike)."""
    return -(-beats * stage_beat_bytes(lanes) // 4096) * 4096


@dataclass(frozen=True)
class StageCost:
    """Cycles and resources of a DDR frame stage (see module doc).

    Attributes:
        ii: cycles per frame in steady state (producer offering a beat every cycle,
            consumer always ready).
        deliver: a consumer ready from cycle ``t``, the frame complete in memory and the output
            FIFO prefetched, takes the frame's first beat at ``t``, its last at ``t + deliver − 1``.
        latency: frame 0's first input beat to its last output beat, both counted.
        bram18: RAMB18 of the two FIFOs.
        lut: LUTs (control + LUTRAM FIFOs).
        bytes_per_frame: board-memory traffic per frame, written plus read.
    """

    ii: int
    deliver: int
    latency: int
    bram18: int
    lut: int
    bytes_per_frame: int


def burst_cuts(frame_beats: int, beat_bytes: int, burst: int) -> list[int]:
    """The bursts of a frame from a 4 KB aligned region: ``min(burst, F − p, to 4 KB)``."""
    page, out, p = 4096 // beat_bytes, [], 0
    while p < frame_beats:
        n = min(burst, frame_beats - p, page - p % page)
        out.append(n)
        p += n
    return out


@dataclass
class Trace:
    """What `simulate` saw: per frame (first, last) handshake cycles of input and output."""

    inputs: list[tuple[int, int]]
    outputs: list[tuple[int, int]]
    cycles: int


def simulate(frame_beats: int, beat_bytes: int, period: float, latency: int, burst: int, regions: int,
             wdepth: int, odepth: int, frames: int, ready: Callable[[int, int], bool] | None = None,
             offer: Callable[[int], bool] | None = None, limit: int | None = None) -> Trace:
    """Step the stage's control and the memory cycle by cycle (the RTL's registers and rules).

    Args:
        period: the memory's cycles per beat (each direction), ``>= 1``.
        ready: the consumer's ``tready`` at cycle ``c`` given the frames it has fully taken
            (default: always ready).
        offer: whether the producer offers a beat at cycle ``c`` (default: every cycle, from 0).
        limit: give up after this many cycles (default: generous).
    """
    f, n_b = frame_beats, len(burst_cuts(frame_beats, beat_bytes, burst))
    page = 4096 // beat_bytes

    def blen(p: int) -> int:
        return min(burst, f - p, page - p % page)

    total = frames * f
    limit = limit or 64 + 8 * frames * (f * int(math.ceil(period)) + 4 * latency + 4 * burst)
    # stage registers
    wcnt = 0; wout = False  # write FIFO: words in memory, output register valid  # noqa: E702
    avail = apos = inuse = wcom = wpos = wleft = 0
    bcnt = rfr = rpos = occ = rcnt = 0
    ocnt = 0; oout = False  # output FIFO  # noqa: E702
    # memory: write side (AW queue, current burst, next W slot, B due cycles), read side
    awq: deque[int] = deque()
    ws_left, ws_nxt = 0, 0.0
    bq: deque[int] = deque()
    rq: deque[tuple[int, int]] = deque()
    rs_left, rs_nxt = 0, 0.0
    sent = taken = 0
    fin: list[tuple[int, int]] = []
    fout: list[tuple[int, int]] = []
    first_in = first_out = -1
    c = 0
    while taken < total:
        if c > limit:
            raise RuntimeError(f"ddr_stage model: no progress after {c} cycles ({taken}/{total} beats out)")
        # ---- the stage's outputs this cycle (from its registers)
        s_ready = wcnt != wdepth
        in_hs = s_ready and sent < total and (offer is None or offer(c))
        alen = blen(apos)
        aw = avail >= alen and (apos != 0 or inuse < regions)
        wlen = wleft if wleft else blen(wpos)
        wvalid = wout and wcom != 0
        rlen = blen(rpos)
        ar = rfr != 0 and occ + rlen <= odepth
        m_valid = oout
        m_ready = True if ready is None else ready(c, len(fout))
        # ---- the memory at this cycle's falling edge
        if aw:
            awq.append(alen)
        if ws_left == 0 and awq:
            ws_left = awq.popleft()
            ws_nxt = max(ws_nxt, float(c))
        wready = ws_left > 0 and c >= ws_nxt - 1e-9
        w_hs = wvalid and wready
        if w_hs:
            ws_left -= 1
            ws_nxt += period
            if ws_left == 0:
                bq.append(c + latency)
        bvalid = bool(bq) and bq[0] <= c
        if bvalid:
            bq.popleft()
        if ar:
            rq.append((c + latency, rlen))
        if rs_left == 0 and rq and rq[0][0] <= c:
            rs_left = rq.popleft()[1]
            rs_nxt = max(rs_nxt, float(c))
        rvalid = bool(rs_left) and c >= rs_nxt - 1e-9
        if rvalid:
            rs_left -= 1
            rs_nxt += period
        # ---- handshakes and the stage's next state
        m_hs = m_valid and m_ready
        if in_hs:
            if sent % f == 0:
                first_in = c
            sent += 1
            if sent % f == 0:
                fin.append((first_in, c))
        if m_hs:
            if taken % f == 0:
                first_out = c
            taken += 1
            if taken % f == 0:
                fout.append((first_out, c))
        wf_ready = wready and wcom != 0
        rd = wcnt != 0 and (not wout or wf_ready)
        wcnt += int(in_hs) - int(rd)
        wout = True if rd else (False if wf_ready else wout)
        rd = ocnt != 0 and (not oout or m_ready)
        ocnt += int(rvalid) - int(rd)
        oout = True if rd else (False if m_ready else oout)
        first_aw = aw and apos == 0
        avail += int(in_hs) - (alen if aw else 0)
        wcom += (alen if aw else 0) - int(w_hs)
        if aw:
            apos = 0 if apos + alen == f else apos + alen
        if w_hs:
            wpos = 0 if wpos == f - 1 else wpos + 1
            wleft = wlen - 1
        b_done = bvalid and bcnt == n_b - 1
        if bvalid:
            bcnt = 0 if b_done else bcnt + 1
        ar_end = ar and rpos + rlen == f
        rfr += int(b_done) - int(ar_end)
        if ar:
            rpos = 0 if ar_end else rpos + rlen
        occ += (rlen if ar else 0) - int(m_hs)
        r_end = rvalid and rcnt == f - 1
        if rvalid:
            rcnt = 0 if r_end else rcnt + 1
        inuse += int(first_aw) - int(r_end)
        c += 1
    return Trace(inputs=fin, outputs=fout, cycles=c)


def period_of(beat_bytes: int, rate: float | None) -> float:
    """Cycles per beat of a memory of ``rate`` bytes per cycle (None: one beat per cycle)."""
    if rate is None:
        return 1
    if rate <= 0:
        raise ValueError(f"ddr_stage: rate {rate} bytes per cycle")
    p = max(1.0, beat_bytes / rate)
    return int(p) if float(p).is_integer() else p


MODEL_FRAMES = 6
"""Frames the model runs for ii and latency (the module test's count: ii = the mean interval
between frame ends 1..5, latency of frame 0)."""


def pause_ready(gap: int) -> Callable[[int, int], bool]:
    """A consumer that, after each frame's last beat, waits ``gap`` cycles, then takes every beat."""
    state = {"done": 0, "until": gap}

    def ready(c: int, done: int) -> bool:
        if done != state["done"]:
            state["done"], state["until"] = done, c + gap
        return c >= state["until"]
    return ready


def deliver_gap(frame_beats: int, period: float, latency: int, burst: int) -> int:
    """A pause long enough for the next frame to be in memory and prefetched."""
    return 2 * math.ceil(frame_beats * period) + 4 * latency + 4 * burst + 64


SIM_BEATS = 4096
"""Frames up to this many beats are stepped whole (`exact_cycles`); longer ones are extrapolated
(`_cycles`)."""


def exact_cycles(frame_beats: int, db: int, period: float, latency: int, burst: int, regions: int,
                 wdepth: int, odepth: int) -> tuple[int, int, int]:
    """``(ii, deliver, latency)`` stepped cycle by cycle (`simulate`): ii the mean frame interval of
    frames 1..5 rounded up, latency frame 0's, deliver the third frame's behind `pause_ready`."""
    run = simulate(frame_beats, db, period, latency, burst, regions, wdepth, odepth, MODEL_FRAMES)
    ends = [e for _, e in run.outputs]
    steady = [b - a for a, b in zip(ends[1:], ends[2:], strict=False)]
    ii = math.ceil(sum(steady) / len(steady) - 1e-9)
    gap = deliver_gap(frame_beats, period, latency, burst)
    slow = simulate(frame_beats, db, period, latency, burst, regions, wdepth, odepth, 3, ready=pause_ready(gap))
    first, last = slow.outputs[2]
    return ii, last - first + 1, ends[0] - run.inputs[0][0] + 1


def _cycles(frame_beats: int, db: int, period: float, latency: int, burst: int, regions: int,
            wdepth: int, odepth: int) -> tuple[int, int, int]:
    """`exact_cycles`, extrapolated for long frames: once a frame is several times the FIFOs and
    the latency, every further 4 KB page of it (``page = 4096/db`` beats, cut into the same
    bursts) adds the same cycles to ii, deliver and latency (``page·P``, ``page·P`` and
    ``2·page·P`` where the memory binds). So a frame of ``q·page + r`` beats is computed from two
    of ``q1·page + r`` and ``(q1 + 1)·page + r`` beats, ``q1`` the least above that size
    (tests/test_rtl_stage.py checks it against `exact_cycles`)."""
    page = 4096 // db
    least = 4 * (odepth + wdepth + 2 * latency + burst) * math.ceil(period)
    r = frame_beats % page
    q1 = max(1, -(-(least - r) // page))
    f1 = q1 * page + r
    if frame_beats <= max(SIM_BEATS, f1 + page):
        return exact_cycles(frame_beats, db, period, latency, burst, regions, wdepth, odepth)
    a = exact_cycles(f1, db, period, latency, burst, regions, wdepth, odepth)
    b = exact_cycles(f1 + page, db, period, latency, burst, regions, wdepth, odepth)
    k = (frame_beats - f1) // page
    return tuple(x + k * (y - x) for x, y in zip(a, b, strict=True))  # type: ignore[return-value]


@functools.lru_cache(maxsize=4096)
def ddr_stage(frame_beats: int, lanes: int, rate: float | None, latency: int, burst: int = 64,
              regions: int = 2, wdepth: int | None = None, odepth: int | None = None,
              beat_bytes: int | None = None) -> StageCost:
    """The DDR frame stage of ``frame_beats`` beats of ``lanes`` lanes (see module doc).

    Args:
        rate: the memory's bytes per cycle per direction (None: one beat per cycle).
        latency: cycles from a read address handshake to its first beat, and from a burst's last
            W beat to its write response (0 counts as 1, the simulated memory's least).
        burst: the longest burst (beats, <= 256); regions: frame regions (>= 1).
        wdepth, odepth: the FIFOs' depths (default ``2·burst`` and ``2·burst + 128``, the RTL's).
        beat_bytes: AXI beat bytes (default `stage_beat_bytes`).

    ``ii`` is the mean frame interval of frames 1..5 (`MODEL_FRAMES`) rounded up (two regions
    alternate a short and a long interval where the ring binds); ``latency`` frame 0's, counted;
    ``deliver`` the third frame's behind a pausing consumer (`pause_ready`, `deliver_gap`).
    Frames longer than `SIM_BEATS` are extrapolated page by page (`_cycles`).
    """
    db = beat_bytes or stage_beat_bytes(lanes)
    if db < lanes or db & (db - 1) or not 4 <= db <= 128:
        raise ValueError(f"ddr_stage: beat of {db} bytes for {lanes} lanes")
    if frame_beats < 1 or not 1 <= burst <= 256 or regions < 1 or latency < 0:
        raise ValueError(f"ddr_stage: frame {frame_beats} beats, burst {burst}, regions {regions}, latency {latency}")
    wdepth = 2 * burst if wdepth is None else wdepth
    odepth = 2 * burst + 128 if odepth is None else odepth
    if wdepth < burst or odepth < burst:
        raise ValueError(f"ddr_stage: FIFOs of {wdepth}/{odepth} beats below a burst of {burst}")
    period = period_of(db, rate)
    latency = max(1, latency)  # the memory answers one cycle after a request at the soonest (axi_mem)
    ii, deliver, lat = _cycles(frame_beats, db, period, latency, burst, regions, wdepth, odepth)
    mem = memory(8 * lanes + 1, wdepth) + memory(8 * lanes + 1, odepth)
    return StageCost(ii=ii, deliver=deliver, latency=lat, bram18=mem.bram18,
                     lut=LUT_DDR_STAGE + LUT_DDR_STAGE_LANE * lanes + mem.lut,
                     bytes_per_frame=2 * frame_beats * db)


STAGE_BURST, STAGE_WDEPTH, STAGE_ODEPTH = 16, 32, 64
"""The stage a design builds (``ddr_stage.sv`` ``BURST``, ``WDEPTH``, ``ODEPTH``; codegen and the
planner's `offchip.staged`): FIFOs of at most 64 words, so LUTRAM however wide the beat (a
1,024-bit FIFO in BRAM takes 29 RAMB18 at any depth up to 512, more than the input slot the
stage saves). Behind a slow conv the output FIFO's shallow prefetch costs little: the frame
arrives at about ``max(P, (L + 18)/64)`` cycles a beat (`stage_bound`)."""


def built_stage(frame_beats: int, lanes: int, rate: float | None, latency: int) -> StageCost:
    """`ddr_stage` of the stage a design builds (`STAGE_BURST`, `STAGE_WDEPTH`, `STAGE_ODEPTH`)."""
    return ddr_stage(frame_beats, lanes, rate, latency, burst=STAGE_BURST, wdepth=STAGE_WDEPTH,
                     odepth=STAGE_ODEPTH)


DDR_FIFO_MARGIN = 64
"""Cycles `ddr_fifo_holds` adds to a frame's write, last write response and first read beat."""


def ddr_fifo_holds(depth: int, frame_beats: int, lanes: int, rate: float | None, latency: int) -> bool:
    """Whether a FIFO ``depth`` beats deep of ``lanes`` lanes, over a tensor of ``frame_beats``
    beats a frame, may be a ring of frame regions in board memory (a DDR stage; docs/cost-model.md
    "Skip FIFOs in board memory"): its reader takes a frame's first beat no sooner than the
    memory can give it back, ``depth >= ceil(F·P) + 2·L + DDR_FIFO_MARGIN`` (the frame written
    at ``P`` cycles a memory beat, its last write response and the first read ``L`` cycles
    each, counted in beats of a producer that writes at most one a cycle), and the stage takes
    its lanes (`MAX_STAGE_LANES`)."""
    if lanes > MAX_STAGE_LANES:
        return False
    period = period_of(stage_beat_bytes(lanes), rate)
    return depth >= math.ceil(frame_beats * period) + 2 * max(1, latency) + DDR_FIFO_MARGIN


MAX_FIFO_REGIONS = 128
"""Regions a ring in board memory may have (``bb::ddr_fifo``: a region index in an int8 token)."""

MIN_CHUNK_BEATS = 64
"""The fewest beats of a region when a FIFO's frame is split into several (`fifo_chunks`): each
region costs its own write burst, response and read request."""


_divisors = functools.lru_cache(maxsize=1 << 12)(divisors)  # a frame's, once per tensor size


def fifo_chunks(depth: int, frame_beats: int, lanes: int, rate: float | None,
                latency: int) -> tuple[int, int] | None:
    """``(chunks, regions)`` of a FIFO ``depth`` beats deep of ``lanes`` lanes over a tensor of
    ``frame_beats`` beats a frame as a ring in board memory (a DDR stage; docs/cost-model.md,
    "Skip FIFOs in board memory"), or None when no ring holds it. The ring's regions are
    ``regions`` = the regions in flight between writer and reader (the lag, the stage's own
    FIFOs' beats) plus one, at least 3 and at most `MAX_FIFO_REGIONS`.

    - A lag of a frame's write or more (`ddr_fifo_holds` with the whole frame): one region a
      frame, ``chunks`` 1.
    - A shorter one: the frame written in ``chunks`` equal regions (``chunks`` divides
      ``frame_beats``), the shortest chunk of at least `MIN_CHUNK_BEATS` beats (unless the frame
      is smaller) that the regions allow, if the depth rule holds for it. The reader can take a
      beat only once its whole chunk is written, so the producer must run a chunk ahead of where
      an on-chip FIFO's would: with a chunk as long as the rule allows (ResNet-50 on zcu102: 14,336
      beats for a lag of 21,857) the producer could not, and the threaded C simulation
      deadlocked; with the shortest (196 beats there) it passed."""
    if lanes > MAX_STAGE_LANES or frame_beats < 1:
        return None
    tail = STAGE_WDEPTH + STAGE_ODEPTH

    def regions(chunk: int) -> int:
        return max(3, -(-(depth + tail) // chunk) + 1)

    if ddr_fifo_holds(depth, frame_beats, lanes, rate, latency):
        r = regions(frame_beats)
        return (1, r) if r <= MAX_FIFO_REGIONS else None
    least = max(MIN_CHUNK_BEATS, -(-(depth + tail) // (MAX_FIFO_REGIONS - 1)))
    chunk = next((c for c in _divisors(frame_beats) if c >= least and c < frame_beats), None)
    if chunk is None or not ddr_fifo_holds(depth, chunk, lanes, rate, latency):
        return None
    return frame_beats // chunk, regions(chunk)


def ring_stage(frame_beats: int, chunks: int, regions: int, lanes: int, rate: float | None,
               latency: int) -> StageCost:
    """The stage of a ring of ``regions`` regions whose frame of ``frame_beats`` beats is written
    in ``chunks`` of them (`fifo_chunks`). One region a frame: `stage_bound`, as before. Several:
    the built stage stepped cycle by cycle over the ring's regions (`ddr_stage` with a chunk as
    its frame; cached, a few ms a call), a frame ``chunks`` chunks' ii and delivery (regions
    overlap, so a chunk takes about its beats, not its bursts' latency: a closed-form bound
    charging every chunk the latency would refuse rings the twin shows keeping up), its latency
    one chunk's, its traffic the frame's (written and read)."""
    if chunks == 1:
        return stage_bound(frame_beats, lanes, rate, latency)
    st = ddr_stage(frame_beats // chunks, lanes, rate, latency, burst=STAGE_BURST, regions=regions,
                   wdepth=STAGE_WDEPTH, odepth=STAGE_ODEPTH)
    return replace(st, ii=chunks * st.ii, deliver=chunks * st.deliver, bytes_per_frame=chunks * st.bytes_per_frame)


def stage_bound(frame_beats: int, lanes: int, rate: float | None, latency: int) -> StageCost:
    """Upper bounds of `built_stage`'s ``ii``, ``deliver`` and ``latency`` in closed form (its
    resources and traffic exact), for the planner's tables: `ddr_stage` steps the module cycle by
    cycle (about 0.1 s a call), too slow for every folding of every block; the plan's own
    blocks are costed by `built_stage`. With ``P`` cycles a memory beat and latency ``L``
    (at least 1), a frame of ``F`` beats:

    - ``deliver <= ceil(F·r) + L + 48``, ``r = max(P, (L + 24)/48)`` (at most 64 beats in
      flight or waiting in the output FIFO, a burst's first beat ``L`` after its request);
    - ``ii <= max(ceil(F·P), deliver) + L + 48`` (two regions: a frame's write and the
      previous frame's read overlap, each region busy from its first write to its last read);
    - ``latency <= ceil(F·P) + deliver + 2·L + 64`` (the frame written, its last response, read).

    tests/test_stage_plan.py checks the three against `built_stage` on random cases."""
    exact_res = _stage_resources(frame_beats, lanes)
    lat = max(1, latency)
    period = period_of(stage_beat_bytes(lanes), rate)
    r = max(period, (lat + 24) / 48)
    deliver = math.ceil(frame_beats * r - 1e-9) + lat + 48
    write = math.ceil(frame_beats * period - 1e-9)
    ii = max(write, deliver) + lat + 48
    return StageCost(ii=ii, deliver=deliver, latency=write + deliver + 2 * lat + 64, **exact_res)


def _stage_resources(frame_beats: int, lanes: int) -> dict:
    """The built stage's ``bram18``, ``lut`` and ``bytes_per_frame`` (as `ddr_stage` counts them)."""
    db = stage_beat_bytes(lanes)
    mem = memory(8 * lanes + 1, STAGE_WDEPTH) + memory(8 * lanes + 1, STAGE_ODEPTH)
    return dict(bram18=mem.bram18, lut=LUT_DDR_STAGE + LUT_DDR_STAGE_LANE * lanes + mem.lut,
                bytes_per_frame=2 * frame_beats * db)
