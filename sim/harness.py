"""Driver, monitor and scoreboard helpers shared by the module testbenches.

A testbench reads as: ``start`` (clock, reset, case), ``Source``/``Sink`` from
cocotbext-axi as drivers, ``BeatMonitor`` as the cycle monitor on each stream, the numpy
model in ``golden``, and ``check_frames`` / ``Timing`` as the scoreboard.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource


def case() -> dict:
    """The test case the pytest side prepared: HDL parameters plus the ``case.npz`` arrays."""
    meta = json.loads(os.environ["BBG_SIM_CASE"])
    with np.load(meta["npz"]) as z:
        meta["arrays"] = {k: z[k] for k in z.files}
    return meta


async def start(dut) -> None:
    """Start a 10 ns clock and hold the synchronous reset for 4 cycles."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


def source(dut, prefix: str, idle: bool) -> AxiStreamSource:
    """An AXI-Stream driver on ``<prefix>_t*``; with ``idle`` it inserts idle cycles."""
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, prefix), dut.clk, dut.rst)
    if idle:
        src.set_pause_generator(itertools.cycle([0, 1, 0, 0, 1, 1, 0]))
    return src


def sink(dut, prefix: str, backpressure: bool) -> AxiStreamSink:
    """An AXI-Stream receiver on ``<prefix>_t*``; with ``backpressure`` it drops tready at times."""
    snk = AxiStreamSink(AxiStreamBus.from_prefix(dut, prefix), dut.clk, dut.rst)
    if backpressure:
        snk.set_pause_generator(itertools.cycle([0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1]))
    return snk


class BeatMonitor:
    """Records the cycle of every handshake (valid and ready) on a stream and its tlast.

    Sampled on the falling edge, where the values that the next rising edge uses are stable.
    """

    def __init__(self, dut, prefix: str):
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.last = getattr(dut, f"{prefix}_tlast")
        self.beats: list[tuple[int, bool]] = []
        self.clk = dut.clk
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        cycle = 0
        while True:
            await FallingEdge(self.clk)
            if self.valid.value and self.ready.value:
                self.beats.append((cycle, bool(self.last.value)))
            cycle += 1

    def frames(self) -> list[tuple[int, int]]:
        """(cycle of first beat, cycle of last beat) of every frame seen."""
        out, first = [], None
        for cyc, last in self.beats:
            first = cyc if first is None else first
            if last:
                out.append((first, cyc))
                first = None
        return out


@dataclass(frozen=True)
class Timing:
    """Measured cycles: ``ii`` per frame in steady state and the first frame's latency."""

    ii: float
    latency: int
    intervals: tuple[int, ...]

    @classmethod
    def measure(cls, inputs: BeatMonitor, outputs: BeatMonitor) -> Timing:
        fin, fout = inputs.frames(), outputs.frames()
        ends = [e for _, e in fout]
        intervals = tuple(b - a for a, b in itertools.pairwise(ends))
        steady = intervals[1:] if len(intervals) > 1 else intervals
        ii = sum(steady) / len(steady) if steady else float("nan")
        # latency: first input beat of frame 0 to its last output beat, both counted
        return cls(ii=ii, latency=ends[0] - fin[0][0] + 1, intervals=intervals)


def to_bytes(a: np.ndarray) -> bytes | list[int]:
    """int8/int32 array, flattened in stream order, as little-endian bytes.

    int64 arrays are whole beats of a stream that is not byte-lane shaped: a list of ints.
    """
    a = np.ascontiguousarray(a).reshape(-1)
    if a.dtype == np.int64:
        return [int(v) for v in a]
    return a.astype(a.dtype.newbyteorder("<")).tobytes()


async def send_frames(src: AxiStreamSource, frames: list[np.ndarray]) -> None:
    """Queue every frame (an array flattened in stream order) on a source."""
    for f in frames:
        await src.send(AxiStreamFrame(to_bytes(f)))


async def recv_frames(snk: AxiStreamSink, n: int, dtype=np.int8) -> list[np.ndarray]:
    """Receive ``n`` frames from a sink as flat arrays."""
    out = []
    for _ in range(n):
        fr = await snk.recv()
        if dtype == np.int64:
            out.append(np.array(list(fr.tdata), dtype=np.int64))
        else:
            out.append(np.frombuffer(bytes(fr.tdata), dtype=dtype))
    return out


def check_frames(dut, got: list[np.ndarray], want: list[np.ndarray]) -> None:
    """Scoreboard: exact equality frame by frame, with the first mismatch in the message."""
    assert len(got) == len(want), f"{len(got)} frames received, {len(want)} expected"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        w = np.asarray(w).reshape(-1).astype(g.dtype)
        assert g.shape == w.shape, f"frame {i}: {g.size} values received, {w.size} expected"
        bad = np.flatnonzero(g != w)
        assert bad.size == 0, (f"frame {i}: {bad.size} of {w.size} values differ, first at {bad[0]}: "
                               f"got {g[bad[0]]}, want {w[bad[0]]}")
    dut._log.info("scoreboard: %d frames match exactly", len(got))


async def run_stream(dut, inputs: dict[str, list[np.ndarray]], want: list[np.ndarray], name: str,
                     backpressure: bool, idle: bool, predict: tuple[int, int],
                     out_dtype=np.int8) -> None:
    """Drive every input stream, collect the output, score it and, without stalls, time it.

    Args:
        inputs: stream prefix (``s_axis``, ``s0_axis``...) to its frames.
        want: golden frames of ``m_axis``.
        predict: (ii, latency) predicted; checked exactly when neither stall is on.
    """
    await start(dut)
    srcs = {p: source(dut, p, idle) for p in inputs}
    snk = sink(dut, "m_axis", backpressure)
    mon_in = BeatMonitor(dut, next(iter(inputs)))
    mon_out = BeatMonitor(dut, "m_axis")
    for p, frames in inputs.items():
        cocotb.start_soon(send_frames(srcs[p], frames))
    got = await recv_frames(snk, len(want), out_dtype)
    check_frames(dut, got, want)
    if not (backpressure or idle):
        check_timing(dut, Timing.measure(mon_in, mon_out), *predict, name)


def check_timing(dut, t: Timing, ii: int, latency: int, name: str) -> None:
    """Exact per-module check of measured ii and latency against the prediction."""
    dut._log.info("%s: ii measured %.2f predicted %d; latency measured %d predicted %d; intervals %s",
                  name, t.ii, ii, t.latency, latency, t.intervals)
    res = os.environ.get("BBG_SIM_TIMING")
    if res:
        with open(res, "w") as f:
            json.dump({"ii": t.ii, "latency": t.latency, "pred_ii": ii, "pred_latency": latency}, f)
    assert t.ii == ii, f"{name}: ii measured {t.ii} cycles, predicted {ii} (intervals {t.intervals})"
    assert t.latency == latency, f"{name}: latency measured {t.latency} cycles, predicted {latency}"


async def run_started(dut, mems, cycle: int, mark: str, limit: int, what: str) -> tuple[int, list[int], int]:
    """One run of a unit driven by a one-cycle ``start`` with memories stepped at every falling
    edge (`bbgrap_hls.rtlsim.axi_mem`): ``start`` high for the first cycle, then the cycles
    (from the start) at which ``mark`` pulses, until ``done``. Returns ``(cycles start to done
    inclusive, marks, the cycle counter after the run)``; fails after ``limit`` cycles."""
    t0, marks = None, []
    while True:
        await FallingEdge(dut.clk)
        for m in mems:
            m.step(cycle)
        if t0 is None:
            dut.start.value = 1
            t0 = cycle
        else:
            dut.start.value = 0
            if getattr(dut, mark).value:
                marks.append(cycle - t0)
            if dut.done.value:
                break
        cycle += 1
        assert cycle - t0 < limit, f"{what}: no done after {cycle - t0} cycles ({len(marks)} {mark} pulses)"
    return cycle - t0 + 1, marks, cycle + 1

