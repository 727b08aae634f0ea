"""Cycle timing of the RTL blocks: pipeline depths, window schedules, arrival profiles.

The numbers here are what the RTL twin (``hw/rtl``) does, cycle for cycle; the module
testbenches (``sim/``) check them exactly. docs/cost-model.md, "Latency", has the rules.

Conventions (one frame, empty pipeline, input offered every cycle from cycle 0):

- ``lead``: cycle of the block's last internal step before its first output beat,
- ``span``: cycle of its last internal step before the frame's last output beat,
- ``depth``: cycles from that internal step to the output handshake (pipeline registers),

so the first output beat leaves at ``lead + depth`` and the last at ``span + depth``.

The design latency (`search.build`) follows each tensor row by row instead (``Rows``: the
cycles of each row's first and last beat): `window_rows_out` for window blocks,
`stream_rows_out` for pixel-by-pixel blocks and links, `out_profile` for blocks that need
their whole input.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from bbgrap_hls.model.geometry import Geometry

# Pipeline depth of every RTL unit (cycles from its last input-side step to its output beat).
RTL_DEPTH: dict[str, int] = {
    "mvu": 5,         # read 1, product 1, accumulate 1, requantise 2
    "vvu": 4,         # read 1, accumulate 1, requantise 2
    "swg": 1,         # output register of the sliding-window generator
    "affine": 4,      # channel_affine: read, product, requantise 2
    "requant": 3,     # standalone requantiser
    "fifo": 2,        # a beat written at t is readable at t + 2
    "lut": 2,         # table read, output register
    "eltwise2": 2,    # add / mul: products, rounding and clamp
    "converter": 1,   # width converter (dwc)
    "concat": 0,      # a multiplexer
    "shuffle": 1,     # channel_shuffle: output register after the bank read
    "lrn": 2,         # lrn: window sum and its code, then table · d, rounding, clamp into the output register
    "repeat": 0,      # repeat_pixel: first repetition passes through, the others from LUTRAM
    "copies": 1,      # pixel copies: the pixel collector and the merge (conv.sv, M > 1)
}

FIFO_DEPTH = RTL_DEPTH["fifo"]
"""Cycles a FIFO adds between two blocks (design-level latency)."""


@dataclass(frozen=True)
class WindowSchedule:
    """What the sliding-window generator does in one frame (``hw/rtl/swg.sv``).

    The writer stores the padded image one beat per cycle (padding included) into a ring of
    ``rows`` padded rows; the reader starts an output row once its ``khe`` rows are written
    and spends ``row_read`` cycles on it (its consumer's folds included).

    Attributes:
        rows: padded rows the line buffer holds (`window_rows`, or `short_ring_rows`).
        cg: input beats per pixel.
        write: cycles to write one padded frame, ``Hp·Wp·cg``.
        read: cycles of reading, ``Ho·row_read``.
        ii: cycles per frame in steady state: ``max(write, read)`` with `window_rows`, a
            short ring's `ring_period`.
        lead: cycle of the first output's last read (first input beat at cycle 0).
        span: cycle of the frame's last read.
        last_in: cycle of the last input beat if the writer never waits.
        fill: fraction of the input beats written before the first window is complete.
        by_row: the schedule row by row, for `window_rows_out` (design latency).
    """

    rows: int
    cg: int
    write: int
    read: int
    ii: int
    lead: int
    span: int
    last_in: int
    fill: float
    by_row: WindowRows | None = None


@dataclass(frozen=True)
class WindowRows:
    """Row-level schedule of a window block (``swg`` writer and reader, `window_rows_out`).

    Attributes:
        top: beats of the top padding rows (written before the first input row).
        row: beats of one padded row, ``Wp·cg``.
        body: beats of an input row's left padding and data, ``(pad_left + W)·cg``.
        right: beats of its right padding.
        kh, sh, pad_top, h, ho: window height (dilated), row stride, top padding, input and
            output rows: output row ``oy`` reads padded rows up to ``oy·sh + kh − 1``.
        row_read: cycles of reading one output row (the consumer's folds included).
        first_reads: reads until a row's first output beat's last contribution.
        drain: cycles a row's last output beat comes after its reads (pixel copies: the
            last copy's folds run on after the mean read time).
    """

    top: int
    row: int
    body: int
    right: int
    kh: int
    sh: int
    pad_top: int
    h: int
    ho: int
    row_read: int
    first_reads: int
    drain: int = 0


def taps(g: Geometry) -> tuple[int, int]:
    """Kernel taps ``(KH, KW)`` (the window span ``kh``, ``kw`` undone by the dilation)."""
    return (g.kh - 1) // g.dh + 1, (g.kw - 1) // g.dw + 1


def window_rows(g: Geometry) -> int:
    """Padded rows the window generator keeps so that its ii is exactly the larger of its
    write and read times, across frame boundaries too: the rows of the last output row,
    the unused bottom rows, and the next frame's first ``kh`` rows (written ahead)."""
    tail = g.hp - (g.ho - 1) * g.sh
    return max(tail + g.kh, g.kh + g.sh)


def short_ring_rows(g: Geometry) -> int:
    """Padded rows of a window generator's short ring: the output row's ``kh`` rows and the
    next one's ``sh`` new rows, so that the writer fills the next output row while this one
    is read, within a frame; across a frame boundary the writer waits (`ring_frames`)."""
    return g.kh + g.sh


def ring_rows(g: Geometry, short: bool = False) -> int:
    """Padded rows of a window generator's ring: `short_ring_rows` or `window_rows`."""
    return short_ring_rows(g) if short else window_rows(g)


def short_ring_pays(g: Geometry) -> bool:
    """Whether the short ring holds fewer rows than `window_rows` (a window whose last
    output row leaves more rows than its stride: a padded 3×3 at stride 1 keeps 4 rows
    instead of 6, a padded 5×5 at stride 2 keeps 7 instead of 11)."""
    return not g.pointwise and short_ring_rows(g) < window_rows(g)


@functools.lru_cache(maxsize=1 << 14)
def ring_frames(hp: int, ho: int, sh: int, khe: int, row: int, row_read: int, rows: int,
                frames: int = 6) -> tuple[int, ...]:
    """Cycle of each frame's last read of a window generator whose ring holds ``rows``
    padded rows (``hw/rtl/swg.sv`` ``ROWS``), frames back to back, input offered every cycle.

    Row by row, as the RTL does it: the writer writes padded row ``p`` (``row`` beats, one a
    cycle) once the rows before it are written and ``p − rows`` is released; the reader reads
    output row ``k`` (``row_read`` cycles) once its ``khe`` rows are complete (the cycle after
    the last one's last beat) and row ``k − 1`` is read; the cycle after an output row's last
    read it releases its first ``sh`` rows (the frame's last: the ``hp − (ho−1)·sh`` rows that
    remain). With `window_rows` the frames follow each other at ``max(hp·row, ho·row_read)``;
    a shorter ring makes the writer wait at the frame boundary until the last output row is
    read.
    """
    if rows <= khe:
        raise ValueError(f"a ring of {rows} rows must exceed the window height {khe}")

    def released(k: int) -> int:  # rows released once output row k is read
        f, oy = divmod(k, ho)
        return f * hp + (oy + 1) * sh if oy < ho - 1 else (f + 1) * hp

    n_w, n_r = frames * hp, frames * ho
    we = [0] * n_w  # cycle of each padded row's last beat
    re = [0] * n_r  # cycle of each output row's last read
    w = kk = 0
    ends = []
    for r in range(n_r):
        while w < n_w:  # the writer runs ahead as far as the released rows let it
            need = w - rows + 1  # rows released before row w may be written
            gate = 0
            if need > 0:
                while released(kk) < need:
                    kk += 1
                if kk >= r:
                    break  # waits for an output row not yet read
                gate = re[kk] + 1
            we[w] = max(we[w - 1] + 1 if w else 0, gate) + row - 1
            w += 1
        last = (released(r - 1) if r else 0) + khe - 1
        re[r] = max(re[r - 1] + 1 if r else 0, we[last] + 1) + row_read - 1
        if r % ho == ho - 1:
            ends.append(re[r])
    return tuple(ends)


def ring_period(hp: int, ho: int, sh: int, khe: int, row: int, row_read: int, rows: int) -> int:
    """Cycles per frame in steady state of a window generator with a ring of ``rows`` rows
    (`ring_frames`): the mean of the last four frame intervals, rounded up."""
    ends = ring_frames(hp, ho, sh, khe, row, row_read, rows)
    return -(-(ends[-1] - ends[-5]) // 4)


@functools.lru_cache(maxsize=1 << 16)
def window_schedule(g: Geometry, lanes: int, reads_per_window: int, first_reads: int,
                    copies: int = 1, px: int = 1, po: int = 1, short: bool = False) -> WindowSchedule:
    """Schedule of a window block whose input streams at ``lanes`` lanes.

    Args:
        g: geometry (dilation applied in ``kh``, ``kw``).
        lanes: input lanes per beat (``C/lanes`` beats per pixel).
        reads_per_window: cycles the reader spends on one output pixel (its consumer's
            folds included: the matrix-vector unit stalls the reader for ``Co/pe − 1`` folds).
        first_reads: reads until the first output beat's last contribution.
        copies: consumers taking the windows in turn (pixel copies): ``reads_per_window /
            copies`` cycles per pixel on average (a row: rounded up; a frame: its total
            rounded up).
        px: input pixels per beat. 2 (``lanes = C``, ``W`` even): a beat carries two
            horizontally adjacent pixels and the writer stores one padded column pair a cycle
            (``swg.sv`` ``PX = 2``): a padded row takes ``ceil(Wp/2)`` cycles, the pair
            ``q`` takes input beat ``q − PL div 2`` of the row (an odd left padding shifts
            the pairs by a pixel: the pair's even column is the previous beat's high pixel).
        po: the reader emits the windows of every ``po``-th output column only (``swg.sv``
            ``OXS``; conv.sv ``PO = 2``: each of two generators one parity, ``Wo`` even), so a
            row reads ``ceil(Wo/po)`` windows.
        short: the ring holds `short_ring_rows` rows (``swg.sv`` ``ROWS``; one copy, one
            pixel a beat in and out): ``ii`` from `ring_period`.
    """
    if short and (copies != 1 or px != 1 or po != 1):
        raise ValueError("a short ring is for one pixel a beat in and out, without pixel copies")
    if px == 2:
        if lanes != g.c or g.w % 2:
            raise ValueError(f"a paired input needs lanes = C and W even (lanes={lanes}, C={g.c}, W={g.w})")
        cg, row = 1, -(-g.wp // 2)  # padded column pairs a row
        left, body = g.pads[1] // 2, (g.pads[1] + g.w) // 2  # pairs before the first input beat; to the last, +1
    elif px == 1:
        cg = g.c // lanes
        row = g.wp * cg
        left, body = g.pads[1] * cg, (g.pads[1] + g.w) * cg
    else:
        raise ValueError(f"px={px}: one or two input pixels per beat")
    wo = -(-g.wo // po)  # output columns read a row
    row_read = -(-wo * reads_per_window // copies)
    before = g.pads[0] * row + left  # padding written before the first input beat
    # the last output row is read once its rows are written and the rows before it are read;
    # linear in the output row oy, so the latest is the first or the last row's
    span = max((oy * g.sh + g.kh) * row - before + (g.ho - oy) * row_read
               for oy in {0, g.ho - 1}) - 1
    ready0 = g.kh * row - before  # the first output row may be read from this cycle on
    last_in = (g.pads[0] + g.h - 1) * row + body - 1 - before
    rows_in = min(g.h, max(0, g.kh - g.pads[0]))
    by_row = WindowRows(top=g.pads[0] * row, row=row, body=body, right=row - body, kh=g.kh, sh=g.sh,
                        pad_top=g.pads[0], h=g.h, ho=g.ho, row_read=row_read, first_reads=first_reads)
    write, read = g.hp * row, -(-g.ho * wo * reads_per_window // copies)
    rows = ring_rows(g, short)
    ii = ring_period(g.hp, g.ho, g.sh, g.kh, row, row_read, rows) if short else max(write, read)
    return WindowSchedule(
        rows=rows, cg=cg, write=write, read=read, ii=ii,
        lead=ready0 + first_reads - 1, span=span, last_in=last_in,
        fill=rows_in * g.w / max(1, g.h * g.w), by_row=by_row)


def out_profile(a_in: int, b_in: int, in_beats: int, lead: int, span: int, tail: int, fill: float,
                depth: int) -> tuple[int, int]:
    """Cycles ``(a_out, b_out)`` of a block's first and last output beat.

    ``a_in``/``b_in`` are the cycles of its first and last input beat (``in_beats`` beats).
    At full rate (``b_in − a_in = in_beats − 1``) this is exactly what the RTL does (the
    module tests); a slower input stretches the first output by ``fill`` of the extra time
    and the last finishes ``tail`` after the last input beat. The design latency uses it for
    blocks that need their whole input (global pool, dense on a vector); the others go row
    by row (`stream_rows_out`, `window_rows_out`).
    """
    stretch = max(0, (b_in - a_in + 1) - in_beats)
    a_out = a_in + lead + math.ceil(fill * stretch) + depth
    b_out = max(b_in + tail, a_in + span) + depth
    return a_out, max(a_out, b_out)


# -- row profiles (design latency) -----------------------------------------------------------
# A tensor's arrival is described row by row: ``(s, e)``, int64 arrays of the cycles of the
# first and the last beat of each row (a row: ``W`` pixels; a vector is one row).

Rows = tuple[np.ndarray, np.ndarray]


def _chain(x: np.ndarray, period: int) -> np.ndarray:
    """``y[i] = max(x[i], y[i−1] + period)``: a unit that needs ``period`` cycles per item
    and item ``i`` no earlier than ``x[i]`` (in closed form, a running maximum)."""
    k = np.arange(len(x), dtype=np.int64) * period
    return k + np.maximum.accumulate(x - k)


def input_rows(rows: int, beats_per_row: int, start: int = 0) -> Rows:
    """A tensor offered one beat per cycle from ``start`` (the testbench's graph input)."""
    s = start + np.arange(rows, dtype=np.int64) * beats_per_row
    return s, s + beats_per_row - 1


def resample(r: Rows, n: int) -> Rows:
    """``r`` seen as ``n`` rows (a flatten, a pad, a broadcast operand): row ``j`` starts with
    the input row holding its first beat and ends with the one holding its last."""
    s, e = r
    m = len(s)
    if m == n:
        return r
    j = np.arange(n, dtype=np.int64)
    return s[j * m // n], e[((j + 1) * m - 1) // n]


def shift(r: Rows, d: int) -> Rows:
    """``r`` delayed by ``d`` cycles (FIFO registers, link latency)."""
    return r[0] + d, r[1] + d


def latest(rs: list[Rows], n: int) -> Rows:
    """Rows of a block reading several tensors (each as ``n`` rows): the latest of each."""
    rs = [resample(r, n) for r in rs]
    return np.maximum.reduce([r[0] for r in rs]), np.maximum.reduce([r[1] for r in rs])


def stream_rows_out(r: Rows, n: int, row_cycles: int, lead: int, tail: int, depth: int) -> Rows:
    """Rows of a pixel-by-pixel block (matrix-vector unit on vectors, lookup, affine,
    add/mul, concat, link): ``row_cycles`` cycles per row at its own rate, its first
    output ``lead`` cycles after a row's first input beat, its last ``tail`` after the
    row's last beat; a row ends no earlier than ``row_cycles`` after it starts, nor before
    the previous row's end plus ``row_cycles`` (a slow block paces a fast producer)."""
    s, e = resample(r, n)
    end = _chain(np.maximum(e + tail, s + row_cycles - 1), row_cycles)
    prev = np.concatenate(([np.iinfo(np.int64).min // 2], end[:-1]))
    start = np.maximum(s + lead, prev + 1 + lead)
    return start + depth, np.maximum(end, start) + depth


def zeroinsert_rows_out(r: Rows, h: int, sh: int, pads: tuple[int, int, int, int], wo: int, n: int,
                        depth: int) -> Rows:
    """Rows of a zero-insertion block (``zeroinsert.sv``) from its ``h`` input rows ``r``.

    Output row ``oy`` holds ``wo·n`` beats, one per cycle after the previous row; a row that
    carries input row ``y`` (``oy = top + y·sh``) also waits for that row: it starts no
    earlier than its first beat less the left padding, ends no earlier than its last beat
    plus the right padding and inserted beats after it. Rows of zeros need no input (which
    `stream_rows_out` would charge them: the next input row). A frame's first row waits for
    its first input beat (the module holds its leading padding until then).
    """
    s, e = resample(r, h)
    top, left = pads[0], pads[1]
    ho = top + (h - 1) * sh + 1 + pads[2]
    wi = wo - pads[1] - pads[3]
    row = wo * n
    after = (wo - left - wi) * n  # right padding beats after the row's last input pixel
    starts = np.empty(ho, np.int64)
    ends = np.empty(ho, np.int64)
    prev = np.iinfo(np.int64).min // 2
    for oy in range(ho):
        k = oy - top
        st = prev + 1
        en_min = st
        if oy == 0:
            st = max(st, int(s[0]))
        if 0 <= k < (h - 1) * sh + 1 and k % sh == 0:
            y = k // sh
            st = max(st, int(s[y]) - left * n)
            en_min = int(e[y]) + after
        starts[oy] = st
        ends[oy] = prev = max(st + row - 1, en_min)
    return starts + depth, ends + depth


def depth2space_rows_out(r: Rows, h: int, b: int, w: int, n: int, depth: int) -> Rows:
    """Rows of a DepthToSpace block (``depth2space.sv``, DCR, block ``b``) from its ``h`` input
    rows ``r`` (``w`` pixels of ``n`` beats): each input row gives ``b`` output rows of
    ``w·n/b`` beats, one per cycle after the previous. The first chases the writer: it starts
    with the row's first beat and ends no earlier than the row's last beat of phase 0
    (``n − n/b`` beats before the row's last); the others read the stored row.
    """
    s, e = resample(r, h)
    nb = max(1, n // b)
    row = w * nb
    starts = np.empty(h * b, np.int64)
    ends = np.empty(h * b, np.int64)
    prev = np.iinfo(np.int64).min // 2
    for y in range(h):
        for i in range(b):
            st = max(prev + 1, int(s[y])) if i == 0 else prev + 1
            en = st + row - 1
            if i == 0:
                en = max(en, int(e[y]) - (n - nb))
            starts[y * b + i], ends[y * b + i] = st, en
            prev = en
    return starts + depth, ends + depth


def bilinear_rows_out(r: Rows, h: int, need: np.ndarray, row: int, depth: int) -> Rows:
    """Rows of a bilinear upsampling block (``bilinear.sv``) from its ``h`` input rows ``r``: output
    row ``oy`` (``row`` beats, one per cycle) starts the cycle after input row ``need[oy]`` (its
    lower source row ``y1``, `ops.resize_linear.taps`) is complete and after the previous output
    row; the writer takes each input row as it comes (it may run one row past ``need``).
    The design latency's profile of the block (``search.build``); at full rate its last row
    ends where `out_profile` with the block's cost does.
    """
    _, e = resample(r, h)
    ready = e[np.asarray(need, np.int64)]
    end = _chain(ready + row, row)  # one past the row's last read
    return end - row + depth, end - 1 + depth


def crop_rows_out(r: Rows, h: int, y0: int, x0: int, ho: int, wo: int, w: int, n: int, no: int,
                  depth: int) -> Rows:
    """Rows of a crop (``slice.sv``) from its ``h`` input rows ``r`` (``w`` pixels of ``n``
    beats; kept: rows ``y0 … y0+ho−1``, columns ``x0 … x0+wo−1``, ``no`` beats a pixel). Output
    row ``j`` is input row ``y0 + j``'s kept beats: it starts with the row's beat
    ``x0·n + n − no`` and ends with its beat ``(x0 + wo)·n − 1``, i.e. ``(w − x0 − wo)·n``
    before the row's last (at the row's own pace), and not before the previous output row.
    `stream_rows_out` would charge every row the frame's lead (the rows cropped above)."""
    s, e = resample(r, h)
    starts = np.empty(ho, np.int64)
    ends = np.empty(ho, np.int64)
    prev = np.iinfo(np.int64).min // 2
    for j in range(ho):
        y = y0 + j
        st = max(prev + 1, int(s[y]) + x0 * n + n - no)
        en = max(st + wo * no - 1, int(e[y]) - (w - x0 - wo) * n)
        starts[j], ends[j] = st, en
        prev = en
    return starts + depth, ends + depth


def window_rows_out(r: Rows, w: WindowRows, depth: int, t0: int = 0) -> Rows:
    """Rows of a window block (``swg`` → mvu / vvu) from its input rows ``r``.

    The writer starts at ``t0`` (the top padding first) and writes one beat per cycle,
    padding included: input row ``y`` is complete at ``max(e_y, previous + body) + right``.
    The reader starts output row ``oy`` the cycle after its last row is complete and the
    previous output row is read, and reads it in ``row_read`` cycles; its output beats
    leave ``depth`` cycles after their last read.
    """
    _, e = r
    first = t0 - 1 + w.top - w.right  # the writer's row before the first input row
    v = _chain(np.concatenate(([first], e)), w.row)  # last data beat written, per row
    done = v + w.right  # done[0]: the top padding, done[y + 1]: input row y with its padding
    last = np.arange(w.ho, dtype=np.int64) * w.sh + w.kh - w.pad_top - 1  # last row read, from the top
    need = np.clip(last, -1, w.h - 1)  # ... among the input rows (-1: padding only)
    ready = done[need + 1] + (last - need) * w.row + 1  # + bottom padding rows
    end = _chain(ready + w.row_read, w.row_read)  # one past the row's last read
    return end - w.row_read + w.first_reads - 1 + depth, end - 1 + depth + w.drain
