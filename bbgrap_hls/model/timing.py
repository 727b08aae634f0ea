"""Cycle timing of the RTL blocks: pipeline depths, window schedules, arrival profiles.

The numbers here are what the RTL twin (``hw/rtl``) does, cycle for cycle; the module
testbenches (``sim/``) check them exactly. docs/cost-model.md, "Latency", has the rules.

Conventions (one frame, empty pipeline, input offered every cycle from cycle 0):

- ``lead``: cycle of the block's last internal step before its first output beat,
- ``span``: cycle of its last internal step before the frame's last output beat,
- ``depth``: cycles from that internal step to the output handshake (pipeline registers),

so the first output beat leaves at ``lead + depth`` and the last at ``span + depth``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
        rows: padded rows the line buffer holds (``max(tail_rows + khe, khe + sh)``).
        cg: input beats per pixel.
        write: cycles to write one padded frame, ``Hp·Wp·cg``.
        read: cycles of reading, ``Ho·row_read``.
        lead: cycle of the first output's last read (first input beat at cycle 0).
        span: cycle of the frame's last read.
        last_in: cycle of the last input beat if the writer never waits.
        fill: fraction of the input beats written before the first window is complete.
        rows_due: per output row, ``(n, t_n, rest)``: the row's reading can finish only
            after the first ``n`` input beats are in, the ``n``-th at cycle ``t_n`` at full
            rate, and ``rest`` cycles after it (the writer's padding and the reader's rows
            left). ``max(t_n + rest)`` over rows is ``span`` (`out_profile`).
    """

    rows: int
    cg: int
    write: int
    read: int
    lead: int
    span: int
    last_in: int
    fill: float
    rows_due: tuple[tuple[int, int, int], ...] = ()


def taps(g: Geometry) -> tuple[int, int]:
    """Kernel taps ``(KH, KW)`` (the window span ``kh``, ``kw`` undone by the dilation)."""
    return (g.kh - 1) // g.dh + 1, (g.kw - 1) // g.dw + 1


def window_rows(g: Geometry) -> int:
    """Padded rows the window generator keeps so that its ii is exactly the larger of its
    write and read times, across frame boundaries too: the rows of the last output row,
    the unused bottom rows, and the next frame's first ``kh`` rows (written ahead)."""
    tail = g.hp - (g.ho - 1) * g.sh
    return max(tail + g.kh, g.kh + g.sh)


def window_schedule(g: Geometry, lanes: int, reads_per_window: int, first_reads: int) -> WindowSchedule:
    """Schedule of a window block whose input streams at ``lanes`` lanes.

    Args:
        g: geometry (dilation applied in ``kh``, ``kw``).
        lanes: input lanes per beat (``C/lanes`` beats per pixel).
        reads_per_window: cycles the reader spends on one output pixel (its consumer's
            folds included: the matrix-vector unit stalls the reader for ``Co/pe − 1`` folds).
        first_reads: reads until the first output beat's last contribution.
    """
    cg = g.c // lanes
    row_read = g.wo * reads_per_window
    before = (g.pads[0] * g.wp + g.pads[1]) * cg  # padding written before the first input beat
    span = max((oy * g.sh + g.kh) * g.wp * cg - before + (g.ho - oy) * row_read
               for oy in range(g.ho)) - 1
    ready0 = g.kh * g.wp * cg - before  # the first output row may be read from this cycle on
    last_in = ((g.pads[0] + g.h - 1) * g.wp + g.pads[1] + g.w) * cg - 1 - before
    rows_in = min(g.h, max(0, g.kh - g.pads[0]))
    due = []
    for oy in range(g.ho):
        n = min(g.h, max(0, oy * g.sh + g.kh - g.pads[0])) * g.w * cg  # input beats the row needs
        t_n = ((g.pads[0] + n // (g.w * cg) - 1) * g.wp + g.pads[1] + g.w) * cg - 1 - before if n else -1
        due.append((n, t_n, (oy * g.sh + g.kh) * g.wp * cg - before + (g.ho - oy) * row_read - 1 - t_n))
    return WindowSchedule(
        rows=window_rows(g), cg=cg, write=g.hp * g.wp * cg, read=g.ho * row_read,
        lead=ready0 + first_reads - 1, span=span, last_in=last_in,
        fill=rows_in * g.w / max(1, g.h * g.w), rows_due=tuple(due))


def out_profile(a_in: int, b_in: int, in_beats: int, lead: int, span: int, tail: int, fill: float,
                depth: int, rows_due: tuple[tuple[int, int, int], ...] = ()) -> tuple[int, int]:
    """Cycles ``(a_out, b_out)`` of a block's first and last output beat.

    ``a_in``/``b_in`` are the cycles of its first and last input beat (``in_beats`` beats).
    At full rate (``b_in − a_in = in_beats − 1``) this is exactly what the RTL does; a slower
    input stretches the first output by ``fill`` of the extra time. The last output: a block
    without ``rows_due`` finishes at ``b_in + tail``; a window block (``rows_due`` from
    `WindowSchedule`) reads each output row once its input rows are in, the input beats
    spread evenly over ``[a_in, b_in]``, so only the rows still unread when the last input
    rows come in count after ``b_in`` (its reader works while a slow input streams in).
    """
    stretch = max(0, (b_in - a_in + 1) - in_beats)
    a_out = a_in + lead + math.ceil(fill * stretch) + depth
    if rows_due and stretch:
        slope = (b_in - a_in) / max(1, in_beats - 1)
        b_out = max(a_in + span, *(a_in + max(t_n, math.ceil((n - 1) * slope)) + rest
                                   for n, t_n, rest in rows_due if n)) + depth
    else:
        b_out = max(b_in + tail, a_in + span) + depth
    return a_out, max(a_out, b_out)
