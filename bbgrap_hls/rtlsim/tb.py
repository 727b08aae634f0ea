"""Design-level cocotb testbench of a generated top (run by `bbgrap_hls.rtlsim.run`).

Driver: one `_Feeder` per graph input (cocotbext-axi's source with ``feeder:
"cocotbext"``), frames back to back at one beat per cycle. Monitor: one cocotbext-axi sink
per output (no back-pressure); the frames' start and end times. Scoreboard: the Python side
(`run.simulate`) compares the received bytes with the integer reference; this file only
records. End: the run stops once every output has all its frames (looked for every
``check_cycles`` cycles). Watchdog: when no input frame starts or completes and no output
frame completes for a window of cycles, it reads every FIFO, link and buffer of the design
through the hierarchy and stops, naming the channels that stay full (their writer stalls)
and those whose reader never takes their beat.

Memory: every off-chip weight port (``m_axi_<layer>``) reads an `axi_mem.AxiReadMemory`
holding the core's image, at the rate and latency the plan assumed; the inputs start once
every such layer has its first two weight tiles (the cost model's frame 0 starts with them
loaded, as the module bench does). Every DDR frame stage's read-write port
(``m_axi_<layer>_stage``) gets an `axi_mem.AxiWriteMemory` and an `axi_mem.AxiReadMemory`
over one zeroed scratch area, at the same rate and latency.

Configuration: the JSON file named by ``BBG_RTLSIM`` (``run.py`` writes it).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotb.utils import get_sim_steps, get_sim_time
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

PERIOD_NS = 10


def _get(dut, path: str):
    h = dut
    for part in path.split("."):
        h = getattr(h, part)
    return h


def _bit(h, name: str) -> int:
    try:
        return int(getattr(h, name).value)
    except (AttributeError, ValueError):
        return 0


def stalled_channels(dut, channels: list[dict]) -> tuple[list[str], list[str]]:
    """(full, waiting): channels whose writer is refused, and whose reader refuses a beat."""
    full, waiting = [], []
    for ch in channels:
        try:
            h = _get(dut, ch["path"])
        except AttributeError:
            continue
        if _bit(h, "s_axis_tvalid") and not _bit(h, "s_axis_tready"):
            full.append(f"{ch['path']} ({ch['kind']}, depth {ch['depth']}: {ch['desc']})")
        if _bit(h, "m_axis_tvalid") and not _bit(h, "m_axis_tready"):
            waiting.append(f"{ch['path']} ({ch['desc']})")
    return full, waiting


class _Feeder:
    """One graph input driven from a list of prepared beats, frames back to back.

    The handshake is cocotbext-axi's ``AxiStreamSource`` loop, each beat offered at the same
    clock edge (so the cycles are the same; ``feeder: "cocotbext"`` in the configuration
    runs that source instead, and tests/test_sim_feeder.py compares the two): at every
    rising edge, when no beat is offered or the offered one is taken (``tready`` high, as
    read at that edge), the next beat goes on the bus, ``tlast`` with a frame's last one.
    What it saves per cycle: the frame's bytes are packed into one integer per beat before
    the run (cocotbext assembles each beat byte by byte, with ``tkeep``/``tid``/``tuser``
    bookkeeping, every cycle), one signal read instead of two, and ``tvalid``/``tlast``
    written only when they change. The loop ends after the last beat is taken, so no Python
    runs per cycle once the input is in.
    """

    def __init__(self, dut, port: str):
        self.clk = dut.clk
        self.tdata, self.tvalid = getattr(dut, f"{port}_tdata"), getattr(dut, f"{port}_tvalid")
        self.tlast, self.tready = getattr(dut, f"{port}_tlast"), getattr(dut, f"{port}_tready")
        self.beat_bytes = len(self.tdata) // 8
        self.tvalid.value = 0
        self.tlast.value = 0
        self.tdata.value = 0
        self.queue_occupancy_bytes = 0  # bytes of the frames not started yet (as cocotbext's)

    def _beats(self, frame: np.ndarray) -> list[int]:
        b = np.ascontiguousarray(frame, dtype=np.int8).view(np.uint8).reshape(-1, self.beat_bytes)
        if self.beat_bytes <= 7:  # byte k of a beat at bits 8k..8k+7 (little-endian), exact in uint64
            return (b.astype(np.uint64) << (8 * np.arange(self.beat_bytes, dtype=np.uint64))).sum(axis=1).tolist()
        return [int.from_bytes(row.tobytes(), "little") for row in b]

    def start(self, frames: list[np.ndarray], starts: list) -> None:
        """Queue ``frames`` (int8 arrays, NHWC order); each frame's start time goes to ``starts``
        when its last beat is offered (cocotbext's ``tx_complete``). Called at a rising edge
        (the run's ``t0``): the first beat goes on the bus at that edge, as cocotbext's source
        (waiting on the same edge) offered it."""
        beats = [self._beats(f) for f in frames]
        self.queue_occupancy_bytes = sum(f.size for f in frames)
        cocotb.start_soon(self._run(beats, [f.size for f in frames], starts))

    async def _run(self, frames: list[list[int]], sizes: list[int], starts: list) -> None:
        edge = RisingEdge(self.clk)
        tdata, tvalid, tlast, tready = self.tdata, self.tvalid, self.tlast, self.tready
        valid = last = False
        first = True
        for beats, size in zip(frames, sizes, strict=True):
            n = len(beats)
            for j, beat in enumerate(beats):
                if first:  # the edge the run starts at: the bus is free, offer at once
                    first = False
                else:
                    await edge
                    while valid and not tready.value:  # the offered beat is not taken yet
                        await edge
                if j == 0:
                    t_start = get_sim_time()
                    self.queue_occupancy_bytes -= size
                tdata.value = beat
                if not valid:
                    tvalid.value = 1
                    valid = True
                if (j == n - 1) != last:
                    last = not last
                    tlast.value = int(last)
            starts.append(t_start)
        await edge
        while not tready.value:
            await edge
        tvalid.value = 0
        tlast.value = 0


async def _report_progress(cfg: dict, t0: int, period: int, snks: list) -> None:
    """Write the cycles simulated and the frames out to ``cfg["progress"]`` about four times
    a second of wall time (the parent's progress display reads it); one timer per
    ``progress_cycles`` cycles, so the simulation pays almost nothing for it."""
    path = Path(cfg["progress"])
    tmp = path.with_suffix(".tmp")
    step = int(cfg.get("progress_cycles", 1024)) * PERIOD_NS
    last = 0.0
    while True:
        await Timer(step, unit="ns")
        now = time.monotonic()
        if now - last < 0.25:
            continue
        last = now
        cycle = (get_sim_time() - t0) // period
        tmp.write_text(json.dumps({"cycle": int(cycle), "frames_out": min(s.queue_occupancy_frames for s in snks)}))
        os.replace(tmp, path)  # the reader never sees half a file


def _memory(dut, a: dict):
    """The simulated board memory of off-chip weight port ``a`` (tb/rtl.json "axi")."""
    from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory

    lines = Path(a["image"]).read_text().split()
    image = b"".join(bytes.fromhex(x) for x in lines)
    return AxiReadMemory(dut, a["port"], image, 0, a["latency"], a["rate"], a["beat_bytes"])


def _stage_memory(dut, a: dict) -> list:
    """The simulated scratch memory of a DDR frame stage's read-write port ``a`` (tb/rtl.json
    "stages"): a write and a read slave over one zeroed ``bytearray`` at the stage's base."""
    from bbgrap_hls.rtlsim.axi_mem import AxiReadMemory, AxiWriteMemory

    image = bytearray(a["bytes"])
    lat = max(1, a["latency"])
    return [AxiWriteMemory(dut, a["port"], image, a["base"], lat, a["rate"], a["beat_bytes"]),
            AxiReadMemory(dut, a["port"], image, a["base"], lat, a["rate"], a["beat_bytes"])]


async def _preload(dut, mems: list, ports: list[dict]) -> None:
    """Wait until every off-chip layer holds its first two weight tiles (and the cycle that
    makes them ready): the empty pipeline the cost model's frame 0 assumes."""
    while any(m.beats < 2 * a["tile_beats"] for m, a in zip(mems, ports, strict=True)):
        await RisingEdge(dut.clk)
    if mems:
        await ClockCycles(dut.clk, 2)


async def _wait_for_outputs(dut, cfg: dict, srcs: list, snks: list, starts: list, t0: int, period: int,
                            window: int, limit: int) -> dict:
    """Simulate until every sink holds ``frames`` frames, or the watchdog's verdict.

    The end is checked every ``check`` cycles (a few hundred; one `Timer` each, no Python
    wake-up per cycle), so the run stops at most that many cycles after the last output
    beat (the frames' times come from the sinks, not from this check). The watchdog keeps
    its own clock: at every ``window`` cycles since ``t0`` it compares the progress state
    (input bytes queued, output frames, input frames sent) with the previous window's and
    reports a deadlock when nothing moved for a whole window, or when ``limit`` cycles pass.
    """
    frames = cfg["frames"]
    check = max(1, min(window, int(cfg.get("check_cycles", 256))))
    last, next_watch = None, 0
    while True:
        if all(s.queue_occupancy_frames >= frames for s in snks):
            return {"deadlock": None}
        cycle = (get_sim_time() - t0) // period
        if cycle >= next_watch:
            state = (tuple(s.queue_occupancy_bytes for s in srcs), tuple(s.queue_occupancy_frames for s in snks),
                     tuple(len(s) for s in starts))
            if state == last or cycle > limit:
                full, waiting = stalled_channels(dut, cfg["channels"])
                why = "no progress" if state == last else f"more than {limit} cycles"
                return {"deadlock": {"cycle": int(cycle), "reason": why, "full": full, "waiting": waiting,
                                     "frames_out": [s.queue_occupancy_frames for s in snks]}}
            last, next_watch = state, next_watch + window
        await Timer(check * PERIOD_NS, unit="ns")


async def _trace_channels(dut, channels: list[dict], t0: int, period: int, got: dict) -> None:
    """Debugging aid (environment ``BBG_TRACE=file.json``, written when the run ends): every
    channel's write and read handshakes, the cycles its writer was refused (``full``) and its
    reader refused a beat (``waits``), as cycles since ``t0``."""
    hs = []
    for ch in channels:
        try:
            hs.append((ch["path"], _get(dut, ch["path"])))
        except AttributeError:
            continue
    got.update({p: {"in": [], "out": [], "full": [], "waits": []} for p, _ in hs})
    while True:
        await RisingEdge(dut.clk)
        cyc = int((get_sim_time() - t0) // period)
        for p, h in hs:
            if _bit(h, "s_axis_tvalid"):
                got[p]["in" if _bit(h, "s_axis_tready") else "full"].append(cyc)
            if _bit(h, "m_axis_tvalid"):
                got[p]["out" if _bit(h, "m_axis_tready") else "waits"].append(cyc)


@cocotb.test()
async def run_design(dut) -> None:
    """Drive ``frames`` frames through the design, record outputs and cycle counts."""
    cfg = json.loads(Path(os.environ["BBG_RTLSIM"]).read_text())
    period = get_sim_steps(PERIOD_NS, "ns")
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    lean = cfg.get("feeder", "beats") == "beats"
    srcs = [_Feeder(dut, i["port"]) if lean else
            AxiStreamSource(AxiStreamBus.from_prefix(dut, i["port"]), dut.clk, dut.rst) for i in cfg["inputs"]]
    snks = [AxiStreamSink(AxiStreamBus.from_prefix(dut, o["port"]), dut.clk, dut.rst) for o in cfg["outputs"]]
    mems = [_memory(dut, a) for a in cfg.get("axi", [])]
    scratch = [m for a in cfg.get("stages", []) for m in _stage_memory(dut, a)]
    if mems or scratch:
        from bbgrap_hls.rtlsim.axi_mem import serve

        cocotb.start_soon(serve(mems + scratch, dut.clk, dut.rst))
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    await _preload(dut, mems, cfg.get("axi", []))
    t0 = get_sim_time()
    wall0 = time.monotonic()
    frames = cfg["frames"]
    starts: list[list[int]] = [[] for _ in srcs]
    for k, (src, i) in enumerate(zip(srcs, cfg["inputs"], strict=True)):
        data = np.load(i["file"])
        if lean:
            src.start([data[f % len(data)] for f in range(frames)], starts[k])
            continue
        for f in range(frames):
            src.send_nowait(AxiStreamFrame(data[f % len(data)].astype(np.uint8).tobytes(),
                                           tx_complete=lambda fr, k=k: starts[k].append(fr.sim_time_start)))
    if cfg.get("progress"):
        cocotb.start_soon(_report_progress(cfg, t0, period, snks))
    trace = os.environ.get("BBG_TRACE")
    traced: dict = {}
    if trace:
        cocotb.start_soon(_trace_channels(dut, cfg["channels"], t0, period, traced))
    window = int(cfg["watchdog_cycles"])
    limit = int(cfg["limit_cycles"])
    result = await _wait_for_outputs(dut, cfg, srcs, snks, starts, t0, period, window, limit)
    if trace:
        Path(trace).write_text(json.dumps(traced))
    result["cycles"] = int((get_sim_time() - t0) // period)
    result["sim_wall_seconds"] = round(time.monotonic() - wall0, 3)
    outs, ends, firsts = {}, [], []
    for snk, o in zip(snks, cfg["outputs"], strict=True):
        got, e, b = [], [], []
        while not snk.empty():
            fr = snk.recv_nowait()
            got.append(np.frombuffer(bytes(fr.tdata), dtype=np.uint8).astype(np.int8))
            e.append((fr.sim_time_end - t0) // period)
            b.append((fr.sim_time_start - t0) // period)
        outs[o["ident"]] = got
        ends.append(e)
        firsts.append(b)
    result["outputs"] = {k: [v.tolist() for v in vs] for k, vs in outs.items()}
    result["input_starts"] = [[(t - t0) // period for t in s] for s in starts]
    result["output_ends"] = ends
    result["output_starts"] = firsts
    Path(cfg["result"]).write_text(json.dumps(result))
