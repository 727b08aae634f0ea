"""Cost of the layout and resampling blocks (issue 14): crop, global max pool, nearest
and bilinear upsampling, zero insertion, depth-to-space, LRN. Each registers itself in
`bbgrap_hls.model.blocks.BLOCKS` (imported by `bbgrap_hls.model`)."""

from __future__ import annotations

from bbgrap_hls.model.blocks import BLOCKS, LUT_BASE_SIMPLE, LUT_PER_LANE, BlockCost, _ceil
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.memory import lutram, memory, rom
from bbgrap_hls.model.timing import RTL_DEPTH

# -- Slice (crop), GlobalMaxPool, nearest upsampling (issue 14) -------------------------------
# Self-contained: `bbgrap_hls.model.kinds` maps the op kinds Slice, GlobalMaxPool and Resize
# to these block kinds; modules hw/rtl/slice.sv, gmaxpool.sv, upsample.sv.

def slice_block(g: Geometry, pe: int, simd: int) -> BlockCost:
    """A crop of the stream (``slice.sv``): rows, columns and a channel range kept, the rest
    dropped. The crop is ``g.pads`` (negative: top, left, bottom, right). Every input beat is
    read in one cycle; a kept pixel's ``CO/p`` output beats leave with its last ``CO/p`` input
    beats (output register), whatever the first channel, so the timing does not depend on it.
    Per output bit a multiplexer over the ``CO/p`` beats (a LUT6 per 4 inputs; the pixel's
    earlier channels held in flip-flops, not counted). Yosys: 419 / 306 LUTs (C 256, CO 128 at
    p 16, C0 = 0), 170 / 114 (48, 24 at 4, C0 = 5), 88 / 114 (64, 16 at 8, C0 = 20); fewer where
    the kept channels end the pixel (no multiplexer: 147 / 306 for C0 = 128 above)."""
    p = pe
    n, no = g.c // p, g.co // p
    y0, x0 = -g.pads[0], -g.pads[1]
    in_beats = g.h * g.w * n
    lead = (y0 * g.w + x0) * n + n - no
    span = ((y0 + g.ho - 1) * g.w + x0 + g.wo - 1) * n + n - 1
    return BlockCost(ii=in_beats, depth=RTL_DEPTH["shuffle"], fill=lead / in_beats, tail=span - (in_beats - 1),
                     lead=lead, span=span, lut=LUT_BASE_SIMPLE // 2 + 8 * p * _ceil(no, 4))


def gmaxpool(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Global max pool: the vvu's max mode over ``K = H·W`` (one running maximum per channel
    in its accumulator memory), one pixel out per frame; no requantisation, no DSP."""
    p = pe
    cg = g.c // p
    ii = g.h * g.w * cg
    mem = memory(32 * p, cg)
    return BlockCost(ii=ii, depth=RTL_DEPTH["vvu"], fill=1.0, tail=0, lead=ii - cg, span=ii - 1,
                     bram18=mem.bram18, lut=LUT_BASE_SIMPLE + 2 * LUT_PER_LANE * p + mem.lut)


def upsample(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Nearest upsampling by integer ``Ho/H × Wo/W`` (``upsample.sv``): two row buffers
    (``2·W·C/p`` words of ``8p`` bits) written as input rows come, whenever a buffer is free;
    the reader emits each row's copies one beat per cycle into the output register, chasing
    the row being written. ii = the output beats. The memory is read at a registered address,
    so Yosys maps it as `memory` counts it. Yosys: 2 / 2 RAMB18 and 58 / 58 LUTs (C 64, p 8,
    8 × 8), 4 / 4 RAMB18 and 69 / 66 LUTs (C 128, p 16, 26 × 26)."""
    p = pe
    n = g.c // p
    ii = g.ho * g.wo * n
    mem = memory(8 * p, 2 * g.w * n)
    # fill: a copy row needs its whole input row, so the output lags the input by up to one
    # input row (what a reconvergent path around the block must hold; the first beat needs one)
    return BlockCost(ii=ii, depth=2, fill=1.0 / g.h, tail=(g.wo // g.w - 1) * n, span=ii - 1,  # depth: write, read
                     bram18=mem.bram18, lut=LUT_BASE_SIMPLE // 2 + p + mem.lut)


BLOCKS.update({"slice": slice_block, "gmaxpool": gmaxpool, "upsample": upsample})


# -- ZeroInsert: the upsampling half of a lowered ConvTranspose (issue 14) ---------------------
# `bbgrap_hls.model.kinds` maps the op kind ZeroInsert to this block; module hw/rtl/zeroinsert.sv.

def zeroinsert(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Zero insertion (``zeroinsert.sv``): ``Ho × Wo`` output pixels of ``C/p`` beats, an
    input pixel every ``s_h``-th row and ``s_w``-th column after the ``pads`` (top, left), the
    zero point elsewhere. No memory: the output register takes the input beat where an input
    pixel lands and the constant otherwise, one output beat per cycle, so ii = the output beats
    and the output keeps pace with the input (fill 0); ``tail`` is the padding and inserted
    beats after the last input pixel. Leading padding (``pads`` top/left, ``z`` beats) leaves
    once the frame's first input beat is offered, before that beat is taken: counted from the
    first input beat taken, the last output beat is ``ii − 1 − z`` (+ depth). LUTs: about 30 for
    the counters and one LUT per output bit (the input bit or the zero point's). Yosys: 89 / 94
    (C 64, p 8, 8 × 8, 2 × 2), 162 / 158 (C 128, p 16, 26 × 26, 2 × 2, pads 1), 68 / 62 (C 32,
    p 4, 16 × 16, 4 × 4)."""
    p = pe
    n = g.c // p
    ii = g.ho * g.wo * n
    sh = (g.ho - g.pads[0] - g.pads[2] - 1) // max(1, g.h - 1) if g.h > 1 else 1
    sw = (g.wo - g.pads[1] - g.pads[3] - 1) // max(1, g.w - 1) if g.w > 1 else 1
    last = ((g.pads[0] + (g.h - 1) * sh) * g.wo + g.pads[1] + (g.w - 1) * sw) * n + n - 1  # last input beat out
    lead0 = (g.pads[0] * g.wo + g.pads[1]) * n  # padding beats before the first input pixel
    return BlockCost(ii=ii, depth=1, fill=0.0, tail=ii - 1 - last, lead=0, span=ii - 1 - lead0,
                     lut=30 + 8 * p)


BLOCKS["zeroinsert"] = zeroinsert


def depth2space(g: Geometry, pe: int, simd: int) -> BlockCost:
    """DepthToSpace in DCR mode (``depth2space.sv``), block ``b = Ho/H``: two row buffers of
    ``W·C/p`` words written as input rows come, whenever a buffer is free; the reader emits
    output row ``(y, i)`` as the ``b·Co/p``-beat runs at ``(x·b + i)·b·Co/p`` of every pixel,
    one beat per cycle, chasing the writer. ii = the beats; the first phase row of the first
    input row is paced by the writer (its last beat needs the row's last pixel), the rest of
    the frame then streams: the last output beat leaves ``(b − 1)/b`` of a row plus the later
    rows after it. A reconvergent path holds up to an input row (``fill = 1/H``, as upsample).
    Yosys (measured / model): 2 / 2 RAMB18 and 54 / 58 LUTs (C 64, p 8, 8 × 8, b 2), 4 / 4 and
    61 / 66 (C 128, p 16, 13 × 13, b 2), 1 / 1 and 65 / 52 (C 32, p 2, 16 × 16, b 4)."""
    p = pe
    n = g.c // p
    ii = g.h * g.w * n
    b = max(1, g.ho // g.h)
    nb = n // b
    row = g.w * n
    first = (g.w - 1) * n + nb - 1  # the last beat of the first phase row of row 0
    mem = memory(8 * p, 2 * row)
    return BlockCost(ii=ii, depth=2, fill=1.0 / g.h, tail=row - row // b - (row - 1 - first), span=first + ii - row // b,
                     bram18=mem.bram18, lut=LUT_BASE_SIMPLE // 2 + p + mem.lut)


BLOCKS["depth2space"] = depth2space


# -- bilinear Resize (issue 14): op kind ResizeBilinear declares `cost_block = "bilinear"` ---------

def bilinear(g: Geometry, pe: int, simd: int) -> BlockCost:
    """Bilinear upsampling by integer ``Ho/H × Wo/W`` (``bilinear.sv``, ``bb::bilinear2d``): a
    ring of three input rows (``3·W·C/p`` words of ``8p`` bits); output row ``oy`` starts once its lower
    source row (``y1``) is complete, then one output beat per cycle from four taps
    (rows ``y0, y1`` × columns ``x0, x1``) while the next input row is taken ahead into the
    third buffer. ii = the output beats. The first output row needs input row 0 only (the
    weight of row 1 is 0 there in every accepted coordinate mode): lead = the cycle its last
    beat is written. Later the output lags further: output row 1 already needs input row 1
    complete (half_pixel, align_corners and asymmetric alike), and the lag, input fraction
    taken minus output fraction given, peaks there at ``(2 − 1/s_h)/H``: that is ``fill``,
    what a reconvergent path around the block must hold (so the design latency counts it as
    if the first output waited for it: pessimistic by up to ``(1 − 1/s_h)/H`` of a frame).
    Resources as Yosys maps ``bilinear.sv`` (bench/resources.py's flow): the six products per
    lane (four 9 × 8-bit vertical, two 9 × 19-bit horizontal) become DSP48E2s, and the ring,
    read at four addresses a cycle (two rows × two columns), is distributed RAM (no BRAM):
    about 88 LUTs per lane and 64-word bank. Yosys / model: 48 / 48 DSP, 0 / 0 RAMB18,
    1495 / 1508 LUTs (C 32, p 8, 8 × 8, s 2, half_pixel); 96 / 96, 0 / 0, 2896 / 2916 (C 64,
    p 16, 8 × 8); 25 / 24, 0 / 0, 2671 / 1156 (C 16, p 4, 13 × 13, align_corners: a 52-word
    row and 26-entry tables, LUTs under-counted, not yet modelled). Module test: ii and
    latency exact (bilinear-0..3)."""
    p = pe
    n = g.c // p
    ii = g.ho * g.wo * n
    row = g.w * n
    banks = -(-3 * row // 64)  # 64-word distributed-RAM banks of the ring
    lead = row - 1  # the last beat of input row 0 written; read into the output register after it
    span = lead + ii - 1
    s_h = max(1, g.ho // g.h)
    tail = max(0, span - (g.h * row - 1))  # input at full rate: every input row taken by then (module test)
    return BlockCost(ii=ii, depth=2, fill=min(1.0, (2 - 1 / s_h) / g.h), tail=tail,
                     lead=lead, span=span, dsp=6 * p, lut=LUT_BASE_SIMPLE + 88 * p * banks)


BLOCKS["bilinear"] = bilinear


# -- LRN across channels (issue 14): op kind LRN declares `cost_block = "lrn"` -----------------
LUT_LRN = 30  # control and flags (Yosys fit, below)
LUT_LRN_LANE = 185  # per lane: d² into the 22-bit prefix sum, the window sum's subtraction, its code, rounding, clamp


def lrn(g: Geometry, pe: int, simd: int) -> BlockCost:
    """LRN across channels (``lrn.sv``, ``bb::lrn``): the pixel buffer of ``channel_shuffle`` (two
    banks, one written while the other is read), each bank also holding the prefix sums of
    squares ``P[0..C]`` accumulated as the pixel's beats come in; the reader starts a pixel the
    cycle after its last input beat, one beat per cycle: per lane ``S = P[c+after+1] − P[c−before]``
    and its code (stage 1), then the factor table, ``d·T``, rounding and clamp (stage 2).
    Timing as `shuffle` with depth ``RTL_DEPTH["lrn"]``: ii = ``H·W·C/p``, a pixel's output
    leaves ``C/p`` beats after its input. Per lane two products (``d²``, 9 × 9 bits, and
    ``d·T``, 9 × 16) in DSP48E2s and a copy of the factor table (``ops.lrn.table_len``
    16-bit words, 800-880 for size ≤ 7: one RAMB18 per lane, ``rom_style = "block"``, charged with `rom`);
    the banks are distributed RAM, a row of ``p`` lanes per word (``2·C/p`` words: ``9·p``
    bits of ``d``, read once, and ``22·p`` of prefix sums, read at two row offsets, `lutram`;
    the reads are combinational, so never block RAM). Yosys / model (bench/resources.py):
    937 / 906 LUT (C 8, p 4), 294 / 295 (32, 1), 591 / 536 (64, 2), 1,652 / 1,766 (64, 8),
    3,437 / 3,494 (96, 16); DSP and RAMB18 equal."""
    from bbgrap_hls.ops.lrn import table_len

    p = pe
    n = g.c // p
    ii = g.h * g.w * n
    mem = rom(16, table_len(MAX_LRN_SIZE_COSTED, g.c)).times(p)
    banks = lutram(9 * p, 2 * n) + 2 * lutram(22 * p, 2 * n)
    return BlockCost(ii=ii, depth=RTL_DEPTH["lrn"], fill=1.0 / (g.h * g.w), tail=n, lead=n, span=ii - 1 + n,
                     dsp=2 * p, bram18=mem.bram18,
                     lut=LUT_LRN + LUT_LRN_LANE * p + banks + mem.lut)


MAX_LRN_SIZE_COSTED = 7  # the table length charged (the geometry has no size; AlexNet and GoogLeNet use 5)
BLOCKS["lrn"] = lrn
