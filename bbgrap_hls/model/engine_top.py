"""Cycles of the layer engine's top (``hw/rtl/engine_top.sv``): a whole program, one frame.

The top runs an `engine_program.EngineProgram`'s steps one after the other, one unit active
at a time. A frame's cycles are, exactly, the sum over its steps of each unit's own cycle
model (start to done) plus the sequencer's fixed cost a step, plus one (the frame counts its
start cycle and its done cycle):

- a step whose unit has ``NF`` descriptor words starts its unit ``NF + SEQ`` cycles after the
  frame's start or the previous step's done (its ROM record read one word a cycle, head word
  and descriptor, registered reads: ``NF + 2`` cycles; one cycle to pulse the unit's start);
- the unit's start-to-done cycles: the window unit's `engine_window.cycles`, the element-wise
  unit's `engine_eltwise.layer_cycles`, the conv unit's `engine.layer_timing` for one step
  with the descriptor taken from the top's register (``DESC_IN = 1``: its first RUN cycle
  `CONV_SETUP_IN` cycles after its start, instead of `engine.SETUP`);
- the top's ``done`` is the last step's done cycle (the same cycle).

The memory is the units' models' own (each channel: a read burst's first beat ``latency``
cycles after its address, beats at least ``period`` cycles apart as taken, a write response
``latency`` after a burst's last beat; sim/test_engine_top.py's). Steps do not overlap, so
each unit's model applies as if it ran alone: the previous step's last beat is long gone
when the next step's first request goes out.
"""

from __future__ import annotations

from dataclasses import dataclass

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.model import engine as conv_model
from bbgrap_hls.model.engine_eltwise import layer_cycles
from bbgrap_hls.model.engine_window import cycles as window_cycles

SEQ = 3
"""Sequencer cycles a step besides its descriptor words: the head word, one more cycle of the
registered ROM read, and the cycle that pulses the unit's start."""

CONV_SETUP_IN = 3
"""conv_engine.sv with ``DESC_IN = 1``: from its ``start`` to its first RUN cycle (DERIVE1,
DERIVE2; the descriptor is latched with the start)."""


def fields(unit: str) -> int:
    """Descriptor words of a unit's step (the ROM record holds one head word more)."""
    return {"conv": len(ei.FIELDS), "window": len(ew.WINDOW_FIELDS), "eltwise": len(ee.ELTWISE_FIELDS)}[unit]


def step_overhead(unit: str) -> int:
    """The sequencer's cycles before a step's unit starts: ``NF + SEQ``."""
    return fields(unit) + SEQ


@dataclass(frozen=True)
class TopParams:
    """What the cycles depend on besides the program: the memory (``latency``, ``period``
    whole cycles a beat) and the units' build parameters (the conv unit's write ``burst`` and
    queue, the window unit's ``kb`` and ``taps``, the element-wise unit's ``eburst``,
    ``chunks`` and ``lanes``, None: a beat a cycle)."""

    latency: int
    period: int = 1
    kb: int = 4
    taps: int = 1
    burst: int = conv_model.BURST
    queue: int = conv_model.QUEUE
    eburst: int = 64
    chunks: int = 4
    lanes: int | None = None


def unit_cycles(step, pe: int, simd: int, beat: int, p: TopParams) -> int:
    """A step's unit's cycles from its ``start`` (cycle 0) to its ``done`` (`ProgramStep`)."""
    row = step.words()
    if step.unit == "conv":
        lt = conv_model.layer_timing(row, CONV_SETUP_IN - conv_model.SETUP, pe, simd, beat, p.latency,
                                     p.period, 0, p.burst)
        if lt.queue + conv_model.ROOM > p.queue:
            raise ValueError(f"engine top: conv step {step.nodes[0]}'s writes may hold {lt.queue} beats, the queue "
                             f"has {p.queue} (less {conv_model.ROOM}): the compute would stall")
        return lt.end
    if step.unit == "window":
        return window_cycles(row, pe, beat, p.kb, p.latency, p.period, p.taps)
    return layer_cycles(row, beat, p.latency, p.period, p.eburst, p.chunks, g=pe, lanes=p.lanes).cycles


@dataclass(frozen=True)
class FrameTiming:
    """A frame on the top (its ``start`` at cycle 0): each step's unit start and ``step_end``
    cycle, and ``cycles``, start to ``done`` inclusive (the next frame may start the cycle
    after ``done``: the top's ii and latency)."""

    starts: list[int]
    ends: list[int]
    cycles: int


def frame_cycles(program, p: TopParams) -> FrameTiming:
    """The exact cycles of one frame of ``program`` (`engine_program.EngineProgram`) on
    ``engine_top.sv`` built with ``G = PE = program.pe`` on ``program.beat``-byte beats."""
    if p.period < 1 or int(p.period) != p.period:
        raise ValueError(f"engine top: period {p.period} must be a whole number of cycles")
    t, starts, ends = 0, [], []
    for st in program.steps:
        s = t + step_overhead(st.unit)
        t = s + unit_cycles(st, program.pe, program.simd, program.beat, p)
        starts.append(s)
        ends.append(t)
    return FrameTiming(starts, ends, t + 1)
