"""FIFO depths on reconvergent paths (docs/cost-model.md, "FIFOs on reconvergent paths").

Where a block reads several streams (Add of a residual, Concat of dense or inception
branches), the input that arrives early must hold what its producer emits until the late
input's matching beat arrives; a shallower FIFO fills, stalls the fork that feeds both
paths, and the late path starves: deadlock. Each tensor gets a *start* ``T`` in frames of
the design's steady state (graph input starts at 0):

    T(out) = max over inputs (T(in) + (1 + link latency) / ii) + fill + depth / ii

``fill`` is the fraction of its input frame a block needs before its first output (window
lookahead: a 3×3 conv with padding 1 needs one row and two pixels, ``(W + 2)/(H·W)``; a
1×1 conv one pixel; a dense layer or a global pool the whole frame; a streaming block
such as Add or Concat nothing), ``depth`` its pipeline cycles, and ``ii`` the design's
cycles per frame (in steady state every block moves one frame per ``ii``, so a lag of
``x`` frames is ``x·B`` beats of a stream of ``B`` beats per frame). An input ``k``
carrying ``B_k`` beats per frame then needs

    depth_k = ceil((T_max − T_k) · B_k) + 2      when T_max > T_k, else 2

beats: the beats it emits during the lag plus two for the FIFO's registers. One frame always
suffices for deadlock freedom (windows never reach into the next frame); a lag of more than
one frame (squeeze-excite: the scale needs the whole frame through a global pool and two
dense layers before the first product) needs the rest to keep the fork from stalling: with
one frame, a squeeze-excite block ran at 895 cycles per frame in the RTL twin instead of the
planned 576, with two at 576. The ``fill`` part alone is what deadlock freedom needs; the
cycle part keeps the fork from stalling in steady state. The depth used to be capped at two
frames; the twins of MobileNetV3-Small and a three-head YOLO (tests/test_families.py) then
ran at 2,976 and 5,156 cycles per frame against 1,156 planned: an SE block's inputs and a
skip around it, and the YOLO's stride-16 skip into its top-down Concat, filled about three
frames. The lags here over-count a block on a one-pixel map (its ``fill`` of one frame is
one burst of beats), so these depths are generous there.

A broadcast operand (an Add/Mul input with fewer elements than the output, the SE gate)
reaches the block through a repeat unit that replays one frame's vector over the whole
output frame and takes the next vector only then; its FIFO holds that next vector
(`broadcast_depth`), or the gate's chain, the global pool and the fork it shares with the
feature map stall (MobileNetV3-Small: 1,632 cycles without, 1,156 with).

A narrowing width converter drains one producer beat every ``a/c`` cycles, steadily, while a
window block emits each output row faster than its share of the frame (padding gives it
idle time between rows): the FIFO before the converter holds one output row of the producer
(`narrowing_depth`; MobileNetV3-Large: a depthwise conv at 1,152 of 1,156 cycles ran at
1,328 in the twin behind a four-beat FIFO).

A matrix-vector unit that reads its input FIFO directly (dense, 1×1 conv without window
generator: ``hw/rtl/mvu.sv``) takes the vector's beats during neuron fold 0 and stalls its
input during folds 1..NF−1. Its producer meanwhile emits the next vector at the design's
pace, so a FIFO of two beats passes the stall back upstream and the consumer's fold 0 then
waits on the producer: a vector costs (producer's spread) + (NF−1)·SF cycles instead of
NF·SF, more than the design ii when both are close to it (LeNet: the 120→84 dense after
the 400→120 dense, +5.5 % ii). Its input FIFO therefore holds one vector:

    depth = ceil(V / lanes) + 2        when NF = ceil(Co / PE) > 1

with ``V`` the vector's elements (a dense layer's flattened input, a 1×1 conv's ``C``).

A window generator (``hw/rtl/swg.sv``) writes the padding one beat per cycle and takes no
input meanwhile; the longest such run is at the frame boundary: the last row's right
padding, the bottom and the next frame's top padding rows, the first row's left padding,

    run = ((PT + PB)·Wp + PL + PR)·cg      (cg = C / window lanes)

cycles. A FIFO of two beats passes that stall back to a producer that runs at the design's
pace and never catches up: ResNet-8 on u250 (a 3×3 conv, 32×32, pad 1: run 70) ran at 2267
cycles per frame in the RTL twin instead of the planned 2048. The input FIFO therefore holds
what the producer emits during the run, at most the block's pace of ``B`` beats per ``ii``:

    depth = min(B, ceil(run · B / ii)) + 2

In steady state the run also delays the block's output by up to ``run`` cycles more than in
the first frame (whose top padding is written before its input arrives), so a reconvergent
path through padded window blocks lags by their runs too: the pipeline cycles of a window
block (``cycles`` in ``search/build.py``, ``_start`` in ``search/problem.py``) include its
run. Without them the residual skip of ResNet-8 (two padded 3×3 convs on the late path)
filled and ran at 2213 cycles per frame.
"""

from __future__ import annotations

import math

from bbgrap_hls.model.geometry import Geometry

DEFAULT_DEPTH = 2
"""Depth of a FIFO with nothing to wait for (one register each side)."""
FIFO_SLACK = 2
"""Beats added to a reconvergence depth for the FIFO's own registers."""


def reconvergence_depth(beats: int, lag_frames: float) -> int:
    """FIFO depth in beats of an input ``lag_frames`` frames earlier than the latest one."""
    if lag_frames <= 1e-12:
        return DEFAULT_DEPTH
    return math.ceil(lag_frames * beats - 1e-9) + FIFO_SLACK


def broadcast_depth(beats: int, out_beats: int) -> int:
    """Input FIFO depth of a broadcast operand (an Add/Mul input with fewer elements than the
    block's output, such as a squeeze-excite gate): the repeat unit replays one frame's
    operand over the whole output frame and takes the next only then, so the FIFO holds the
    next frame's operand (``beats`` beats) while it does; else the chain that computes it
    stalls and with it the fork it shares with the other input."""
    return beats + FIFO_SLACK if beats < out_beats else DEFAULT_DEPTH


def narrowing_depth(src: Geometry, src_window: bool, src_lanes: int, dst_lanes: int) -> int:
    """FIFO depth (producer beats) before a narrowing width converter behind a window block.

    The converter drains one producer beat every ``src_lanes / dst_lanes`` cycles, steadily;
    a window block emits an output row in less than its share of the frame (its generator's
    padding columns and rows produce no output), so a row's burst waits in the FIFO. Without
    room for it the block stalls, and a block at the design's ii loses cycles: a
    MobileNetV3-Large depthwise conv at 1,152 of 1,156 cycles ran at 1,328 in the twin behind
    a four-beat FIFO into an 8 -> 1 lane converter.

    Returns:
        one output row of the producer in its beats plus ``FIFO_SLACK`` when the producer is a
        window block and the converter narrows, else ``DEFAULT_DEPTH``.
    """
    if not src_window or src_lanes <= dst_lanes:
        return DEFAULT_DEPTH
    return -(-src.wo * src.co // src_lanes) + FIFO_SLACK


def input_depths(beats: list[int], starts: list[float], rows: int = 0) -> list[int]:
    """Depth of each input FIFO of a block whose inputs start at ``starts`` (frames).

    With ``rows`` (the inputs' height), an early input holds at least one row of its beats
    (`row_floor`)."""
    if len(starts) < 2:
        return [DEFAULT_DEPTH] * len(starts)
    late = max(starts)
    depths = [reconvergence_depth(b, late - s) for b, s in zip(beats, starts, strict=True)]
    if rows > 0:
        depths = [max(d, row_floor(b, rows)) if d > DEFAULT_DEPTH else d for d, b in zip(depths, beats, strict=True)]
    return depths


def row_floor(beats: int, rows: int) -> int:
    """Least depth of an early reconvergent input: one row of its ``beats`` per frame.

    The lags above treat each path as a steady flow, but blocks move a frame in row bursts
    (a window block emits an output row faster than its share of the frame; at stride 2 it
    emits on every other input row), and the bursts of two paths through different blocks
    are not in phase. A lag under one row then leaves the early input no room for its burst:
    the downsampling units of a 64 × 64 ShuffleNetV2 (dw 3×3 s2 → 1×1 on the short branch,
    1×1 → dw 3×3 s2 → 1×1 on the long one, into a Concat) were planned at 11 and 16 beats of
    192-beat rows and ran at 4,864 cycles per frame against 4,356 in the RTL twin."""
    return -(-beats // max(1, rows)) + FIFO_SLACK


def turn_depth(channels: list[int], k: int, pixels: int, lanes: int) -> int:
    """Input FIFO depth (beats) of input ``k`` of a Concat (``concat.sv``): the block reads its
    inputs in turn, pixel by pixel (``channels[0] / lanes`` beats of input 0, then input 1's,
    ...), so while it reads the others' beats of a pixel, input ``k``'s producer writes on, at
    most a beat a cycle: the FIFO holds those beats, else a producer at the design's ii loses
    the cycles. A 64 × 64 ShuffleNetV2 with a blocked stem (`passes.stem`, ii 2,304) ran at
    2,944 in the twin with its late Concat inputs two beats deep (48 beats of the other
    input a pixel at one lane). A split node's gather reads its parts the same way, so each
    part's FIFO into it is this deep (``channels`` the parts'): a split dense layer (one pixel,
    320 + 320 outputs of the MLP autoencoder on vu9p-quad) ran at 72 cycles a frame for a
    planned 52 with two-beat FIFOs, at 52 with these.

    Returns:
        the other inputs' beats of one pixel at ``lanes`` (at most a frame's beats of input
        ``k``) plus ``FIFO_SLACK``; ``DEFAULT_DEPTH`` with one input.
    """
    others = sum(-(-c // max(1, lanes)) for j, c in enumerate(channels) if j != k)
    if others == 0:
        return DEFAULT_DEPTH
    return min(others, pixels * -(-channels[k] // max(1, lanes))) + FIFO_SLACK


def gather_lanes(sizes: list[int], part_lanes: list[int], pixels: int, ii: int) -> int:
    """Lanes of the concatenation of a split node's parts (channel counts ``sizes``, output
    lanes ``part_lanes``) on the last part's core, one beat a cycle: uneven parts the gcd of
    their channel counts (the widest every part divides); equal parts the narrowest lanes
    dividing a part's channels that keep a frame's ``pixels·Co/lanes`` beats within ``ii``,
    at least the parts' common lanes (two parts of pe 8 on 16 + 16 channels would need 2x the
    ii at 8 lanes). `search.build` plans these lanes and `codegen.design` builds them."""
    chans = math.gcd(*sizes)
    if len(set(sizes)) > 1:
        return chans
    co = sum(sizes)
    fits = [d for d in range(1, chans + 1) if chans % d == 0 and pixels * co // d <= ii]
    return max(math.gcd(chans, *part_lanes), min(fits, default=chans))


def ring_depth(g: Geometry, lanes: int) -> int:
    """Input FIFO depth (beats) of a bilinear upsampling block (``bilinear.sv``): its ring of
    three rows takes an input row at most one past the lower source row of the output row it
    emits, so the ring refuses input while the output works through rows of the same source
    rows, then waits for the next row. A producer at the design ii that was refused has
    lost those cycles: an FPN (32 × 32, input in 2 × 2 blocks) planned at 1,024 cycles ran
    at 1,032 with two beats before its last bilinear block, at 1,026 with 4, at 1,024 with 8
    of its 16-beat rows. One input row lets the producer run on.

    Returns:
        one input row at ``lanes`` plus ``FIFO_SLACK``.
    """
    return g.w * -(-g.c // max(1, lanes)) + FIFO_SLACK


def feeds_mvu_directly(kind: str, g: Geometry) -> bool:
    """Whether a block's matrix-vector unit reads its input FIFO without a window generator."""
    return kind == "dense" or (kind == "conv" and g.pointwise)


def stall_depth(kind: str, g: Geometry, pe: int, lanes: int) -> int:
    """Input FIFO depth that absorbs a matrix-vector unit's input stall (one vector of beats).

    Args:
        kind: block kind (``model.kinds``).
        g: the block's geometry.
        pe: output lanes (neuron fold ``NF = ceil(Co / pe)``).
        lanes: lanes per beat of the FIFO (the producer's output lanes).

    Returns:
        ``ceil(V / lanes) + FIFO_SLACK`` (``V`` elements per vector) when the unit stalls its input (``NF > 1``), else
        ``DEFAULT_DEPTH``.
    """
    if not feeds_mvu_directly(kind, g) or math.ceil(g.co / max(1, pe)) <= 1:
        return DEFAULT_DEPTH
    vector = g.in_elems // max(1, g.ho * g.wo)  # a dense layer's whole (flattened) input
    return math.ceil(vector / max(1, lanes)) + FIFO_SLACK


def pad_run(g: Geometry, window_lanes: int) -> int:
    """Cycles a window generator writes padding between two frames, taking no input.

    Args:
        g: the block's geometry.
        window_lanes: lanes per beat of the window generator (the block's input lanes).

    Returns:
        ``((PT + PB)·Wp + PL + PR)·cg`` (``cg = C / window_lanes``); 0 without padding.
    """
    top, left, bottom, right = g.pads
    return ((top + bottom) * g.wp + left + right) * max(1, g.c // max(1, window_lanes))


def pad_depth(g: Geometry, window_lanes: int, fifo_lanes: int, ii: int) -> int:
    """Input FIFO depth that absorbs a window generator's padding writes at a frame boundary.

    Args:
        g: the block's geometry.
        window_lanes: lanes per beat of the window generator (the block's input lanes).
        fifo_lanes: lanes per beat of the FIFO.
        ii: the block's cycles per frame (its producer emits at most ``B`` beats per ``ii``).

    Returns:
        ``min(B, ceil(run · B / ii)) + FIFO_SLACK`` (``B`` beats per frame of the FIFO, ``run``
        the padding beats written between a frame's last input beat and the next frame's
        first) when the block pads its input, else ``DEFAULT_DEPTH``.
    """
    run = pad_run(g, window_lanes)
    if run <= 0:
        return DEFAULT_DEPTH
    beats = max(1, g.in_elems // max(1, fifo_lanes))
    return min(beats, math.ceil(run * beats / max(1, ii))) + FIFO_SLACK


def zeroinsert_run(g: Geometry, lanes: int) -> int:
    """Longest run of cycles a zero-insertion block (``zeroinsert.sv``) emits zeros and takes
    no input: from a row's last input pixel to the next row's first, the right and left
    padding and the ``s_h − 1`` inserted rows, or at a frame boundary the bottom and top
    padding rows instead.

    Args:
        g: the block's geometry (``pads``: its border rows and columns).
        lanes: the block's lanes (``cg = C / lanes`` beats a pixel).
    """
    top, left, bottom, right = g.pads
    cg = max(1, g.c // max(1, lanes))
    sh = max(1, (g.ho - top - bottom - 1) // max(1, g.h - 1)) if g.h > 1 else 1
    sw = max(1, (g.wo - left - right - 1) // max(1, g.w - 1)) if g.w > 1 else 1
    between_rows = (right + left) * cg + ((sh - 1) * g.wo * cg if g.h > 1 else 0)
    frame = (right + left) * cg + (bottom + top) * g.wo * cg
    return max(between_rows, frame, (sw - 1) * cg if g.w > 1 else 0)


def zeroinsert_depth(g: Geometry, block_lanes: int, fifo_lanes: int, ii: int) -> int:
    """Input FIFO depth of a zero-insertion block: what its producer emits while the block
    writes a run of zeros (`zeroinsert_run`), at most the block's pace of ``B`` beats per
    ``ii``: ``min(B, ceil(run · B / ii)) + FIFO_SLACK``.

    Without it the producer stalls during every inserted row and the block then waits on the
    producer during the next input row, so the two add up: ``unet_tiny(32, 8)`` on u250
    (default plan) ran its twin at 2351 cycles per frame against the planned 2048."""
    run = zeroinsert_run(g, block_lanes)
    if run <= 0:
        return DEFAULT_DEPTH
    beats = max(1, g.in_elems // max(1, fifo_lanes))
    return min(beats, math.ceil(run * beats / max(1, ii))) + FIFO_SLACK

