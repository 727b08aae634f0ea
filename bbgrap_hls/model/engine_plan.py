"""The layer engine planned for one core of a board (docs/engine.md, "Planning (library)").

`plan_engine(graph, board, core)` sizes the engine (the conv unit's ``PE x SIMD``, packed two
output lanes a DSP48E2 by default, the window unit's ``TAPS``, the conv unit's input buffer,
i.e. the row-band budget) to the core's limits
and times one frame with the units' exact models, as the sequencer (`model.engine_top`) runs
it. It reads shapes only: a canonical (float) graph is lowered as its int8 graph would be
(`quant.quantizer.fuse_activations`, then `engine_lower.lower` in its int8 form: tables fused
into Add/Mul/MulV), laid out in the feature memory as `engine_program.build` lays out the
int8 graph for the same input buffer (`engine_program.layout`: a region per tensor, Concat
inputs inside their Concat's region), and each step's descriptor is built as `build` builds
it (`engine_program.conv_rows`, the window and element-wise descriptors at the regions' block
strides), with zero weights and zero points (no cycle depends on them). So on a graph
`build` takes, the plan's frame cycles are those of ``build(..., in_buffer=plan.in_buffer)``
(`engine_top.frame_cycles`), equal (tests/test_engine_plan.py).

Row bands: when a conv's whole input does not fit the input buffer, every map is laid out at
beat-aligned block strides and each conv runs in the row bands that fit
(`engine_image.bands`), each band a step of its own, as `build` does. A conv step whose
writes cannot keep up with its compute (`model.engine.layer_timing`'s queue bound) is
charged its compute or its write beats at the period, whichever is more, plus its setup and
two latencies, and marked ``exact = False`` (`frame_cycles` refuses such a step).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.codegen.engine_lower import lower
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.ir import Graph
from bbgrap_hls.model import engine_eltwise, engine_top, engine_window
from bbgrap_hls.model import engine_resources as er
from bbgrap_hls.quant.quantizer import fuse_activations

CHANNELS = 3
"""AXI channels the units drive at once (feature read, feature write, weight read): the
memory period gives each a third of the core's share (`memory_timing`)."""

BUDGET_FLOOR = 16 * 1024
"""The smallest input buffer (bytes) the search tries before giving up."""


def memory_timing(board, core: int = 0, beat: int = 64) -> tuple[int, int]:
    """The memory ``(latency, period)`` the units see on ``core``'s home memory: the
    memory's latency, and the whole cycles a ``beat``-byte beat takes on each of the
    `CHANNELS` channels when each gets a third of the core's share of the memory
    (`Board.offchip_share`) and at most one port's width a cycle:
    ``P = max(ceil(8·beat/port_width_bits), ceil(3·beat/share))``. Conservative: the three
    channels are rarely busy together.

    Raises:
        InfeasibleError: the core reaches no memory.
    """
    mem = board.home_memory(core)
    share = board.offchip_share(core)
    if mem is None or share <= 0:
        raise InfeasibleError(f"engine: core {core} of {board.name} reaches no off-chip memory (the engine keeps "
                              "its maps and weights there)")
    return mem.latency_cycles, max(math.ceil(8 * beat / mem.port_width_bits), math.ceil(CHANNELS * beat / share))


@dataclass
class PlanStep:
    """One lowered step on its unit: ``unit``, ``mode``, the graph ``nodes``, ``bands`` (row
    bands: the sequencer's steps for it), ``cycles`` (its unit's start-to-done cycles, all
    bands), ``overhead`` (the sequencer's cycles before each band), ``exact`` (False: a
    write-bound conv band charged by the bound above), beats moved on the feature port
    (``f_read``, ``f_write``) and the weight port (``w_read``), ``macs`` useful."""

    unit: str
    mode: str
    nodes: list[str]
    bands: int
    cycles: int
    overhead: int
    exact: bool
    f_read: int
    f_write: int
    w_read: int
    macs: int


@dataclass
class EnginePlan:
    """An engine on one core and what a frame costs on it (`plan_engine`). Cycles are of the
    board's clock; ``cycles`` a frame start to done (the engine's ii); ``fps`` over all cores
    (one engine each, frames in turn), ``fps_core`` one engine's; bytes per frame per port;
    ``bandwidth`` their average rate against ``share`` (bytes a cycle); resources per part
    and in total against ``limits``; ``pack``: the conv unit's products two a DSP48E2
    (`conv_engine.sv` ``PACK = 1``); ``lanes``: the element-wise unit's byte lanes (``LANES``)."""

    board: str
    core: int
    pe: int
    simd: int
    taps: int
    beat: int
    in_buffer: int
    latency: int
    period: int
    clock_mhz: float
    cores: int
    steps: list[PlanStep]
    cycles: int
    fps_core: float
    fps: float
    by_unit: dict[str, int]
    sequencer: int
    bytes: dict[str, int]
    bandwidth: float
    share: float
    resources: dict[str, dict[str, int]]
    limits: dict[str, int]
    bottleneck: str
    macs: int
    notes: list[str] = field(default_factory=list)
    pack: bool = False
    lanes: int = 0
    ibuf_uram: bool = False
    """The conv unit's input buffer in URAM288 (``conv_engine.sv`` ``IBUF_URAM``)."""
    tile_uram: int = 0
    """72-bit columns of the conv unit's tile rows in URAM288 (``TMEM_URAM``)."""
    input_blocks: dict[str, int] = field(default_factory=dict)
    """Graph inputs the host writes as ``s × s`` pixel blocks for a stem conv rewritten over
    them (`bbgrap_hls.passes.stem`; as `bbgrap_hls.plan.Plan.input_blocks`): a 3-channel stem
    otherwise fills one ``PE``-channel block with 3 channels."""
    input_patches: dict[str, dict] = field(default_factory=dict)
    """Graph inputs the host writes as their stem conv's unfolded window taps
    (`bbgrap_hls.ir.graph.Patches.to_dict`; `bbgrap_hls.passes.stem.patches_stem`)."""
    frames: int = 1
    """Frames a start (docs/engine.md, "Batched frames"): a conv whose frames' inputs fit the
    buffer together computes them all with each fold's tile (its weights read once for them),
    the others run once a frame; ``cycles`` are a start's (its latency), ``fps`` counts
    ``frames`` frames a start, ``bytes`` are a frame's."""
    model: str = ""
    plan_seconds: float = 0.0
    why: str = ""
    """Why the engine was chosen (``plan --arch auto``: the dataflow plan's refusal, or its fps)."""

    architecture = "engine"
    """What ``plan.json``'s ``architecture`` says (a dataflow `bbgrap_hls.plan.Plan` says ``"dataflow"``)."""

    @property
    def ii_cycles(self) -> int:
        """Cycles between starts on one engine (a start's cycles: steps do not overlap starts;
        a start is ``frames`` frames)."""
        return self.cycles

    @property
    def efficiency(self) -> float:
        """Useful MACs over ``PE·SIMD`` a cycle of the start."""
        return self.macs * self.frames / (self.cycles * self.pe * self.simd)

    @property
    def approx(self) -> int:
        """Steps with a band timed by the write bound, not the exact model."""
        return sum(not s.exact for s in self.steps)

    def to_dict(self, stable: bool = False) -> dict:
        """JSON-ready: the sizes, memory, per-step unit/cycles/nodes, totals, resources;
        ``architecture`` ``"engine"``; ``stable`` zeroes the machine-dependent plan time."""
        from bbgrap_hls.plan import _round

        d = asdict(self)
        d["efficiency"] = self.efficiency
        d["architecture"] = self.architecture
        if stable:
            d["plan_seconds"] = 0.0
        return _round(d)

    def to_json(self, stable: bool = False) -> str:
        """Deterministic JSON text (docs/plan.md, "Engine plans")."""
        return json.dumps(self.to_dict(stable), sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> EnginePlan:
        """The plan `to_dict` wrote (``efficiency`` and ``architecture`` are derived)."""
        kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        kw["steps"] = [PlanStep(**s) for s in d["steps"]]
        return cls(**kw)


# -- the graph as the int8 program would see it ------------------------------------------------

def _int8_form(graph: Graph) -> Graph:
    """The graph with the quantiser's activation fusion and every fabric node marked int8
    (an empty ``attrs["q"]``), so that `lower` gives the int8 graph's steps; an int8 graph as it is."""
    if any("q" in n.attrs for n in graph.nodes):
        return graph
    g = graph.copy()
    fuse_activations(g)
    for n in g.nodes:
        if not n.host:
            n.attrs["q"] = {}
    return g


@dataclass
class _Layout:
    """The steps and regions at ``G = pe`` for an input buffer, and ``budget``: the buffer
    when the convs band or the program is batched (the maps strided), else None
    (`engine_program.layout`); ``frames`` a start, ``stride`` bytes apart (`engine_program.build`)."""

    graph: Graph
    steps: list
    regions: dict
    budget: int | None = None
    frames: int = 1
    stride: int = 0


def _layout(graph: Graph, steps: list, pe: int, beat: int, in_buffer: int | None = None, frames: int = 1) -> _Layout:
    regions, size, budget = ep.layout(graph, steps, pe, beat, in_buffer, frames)
    return _Layout(graph, steps, regions, budget, frames, ep.frame_stride(size, frames))


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


def _conv_layer(s, graph: Graph, regions, op: str) -> tuple[ei.EngineLayer, object, object]:
    """The conv step as `build`'s layer, shapes only: ``C`` the input region's physical
    channels (a grouped conv block-diagonal over them), a Dense an h x w conv over its
    input region's map (a flattened map keeps its h x w)."""
    src, dst = regions[s.inputs[0]], regions[s.output]
    co = graph.shape(s.output)[1]
    kh, kw = (src.h, src.w) if op != "Conv" else s.kernel
    zeros = np.broadcast_to(np.int8(0), (co, kh, kw, src.cp))
    z = np.zeros(co, np.int64)
    layer = ei.EngineLayer(src.h, src.w, zeros, z, z, z, stride=tuple(s.strides), pads=tuple(s.pads))
    if layer.out_hw != (dst.h, dst.w):
        raise NotImplementedError(f"engine plan: {s.nodes[0]}: output {dst.h}x{dst.w}, the conv unit gives "
                                  f"{layer.out_hw}")
    return layer, src, dst


class _NoBand(ValueError):
    """Not even a band of the fewest rows fits the input buffer."""


def _rows(lo: _Layout, pe: int, simd: int, beat: int) -> list[tuple]:
    """Each lowered step with its descriptor rows (one per band, ``lo.budget``; a batched
    layout: a conv's as `engine_program.conv_frames` makes them, the other rows one a frame,
    as `engine_program.frame_steps`): ``(step, unit, rows)``, the weight offsets as `build`
    assigns them (conv tiles, depthwise blocks, tables in order)."""
    out = _rows_one(lo, pe, simd, beat)
    if lo.frames == 1:
        return out
    return [(s, u, rs if u == "conv" else [d for f in rs for d in ep.frame_steps(u, f, lo.frames, lo.stride)])
            for s, u, rs in out]


def _rows_one(lo: _Layout, pe: int, simd: int, beat: int) -> list[tuple]:
    nodes = {n.name: n for n in lo.graph.nodes}
    out, wbase = [], 0
    for s in lo.steps:
        n = nodes[s.nodes[0]]
        try:
            if s.kind == "conv":
                layer, src, dst = _conv_layer(s, lo.graph, lo.regions, n.op)
                try:
                    rows = ep.conv_frames(layer, pe, simd, beat, src, dst, wbase, lo.budget, lo.frames, lo.stride)
                except ep.BandError as e:
                    raise _NoBand(str(e)) from e
                wbase += _up(layer.co, pe) // pe * rows[0]["TILE_BEATS"] * beat
                out.append((s, "conv", rows))
            elif s.kind == "window":
                src, dst = lo.regions[s.inputs[0]], lo.regions[s.output]
                kw = dict(k=tuple(s.kernel), stride=tuple(s.strides), pads=tuple(s.pads))
                wts = np.zeros((src.cp, *s.kernel), np.int8) if s.mode == "dw" else None
                layer = ew.WindowLayer(s.mode, src.h, src.w, src.cp, weights=wts, **kw)
                desc = ew.descriptor(layer, pe, beat, src.base, dst.base, wbase, src.stride, dst.stride)
                wbase += src.cp // pe * ew.block_beats(layer, pe, beat) * beat
                out.append((s, "window", [dict(zip(ew.WINDOW_FIELDS, desc, strict=True))]))
            else:
                dst, ins = lo.regions[s.output], list(s.inputs)
                lut = "lut" in s.extra
                mode = {"table": ee.TABLE, "add": ee.ADD, "mul": ee.MUL, "mulv": ee.MULV}[s.mode]
                if mode == ee.MULV and lo.regions[ins[0]].h * lo.regions[ins[0]].w == 1:
                    ins = ins[::-1]  # the vector second, as `build`
                layer = ee.EltwiseLayer(mode, dst.h, dst.w, dst.cp, lut=lut,
                                        table=np.zeros(ee.TABLE_BYTES, np.int8) if mode == ee.TABLE or lut else None)
                a, b = lo.regions[ins[0]], lo.regions[ins[1]] if len(ins) > 1 else None
                desc = ee.descriptor(layer, pe, beat, a.base, b.base if b else 0, dst.base, wbase, a_stride=a.stride,
                                     b_stride=b.stride if b else None, out_stride=dst.stride)
                if layer.uses_table():
                    wbase += _up(ee.TABLE_BYTES, beat)
                out.append((s, "eltwise", [dict(zip(ee.ELTWISE_FIELDS, desc, strict=True))]))
        except _NoBand:
            raise
        except ValueError as e:  # a unit's own check, as `build` reports it
            raise NotImplementedError(f"engine plan: {n.op} {n.name}: {e}") from e
    return out


def _sizes(beat: int, pe: int | None, simd: int | None) -> list[tuple[int, int]]:
    """Candidate ``(PE, SIMD)``: powers of two with ``4 ≤ SIMD ≤ PE ≤ beat`` (``SIMD | PE |
    beat``), the largest product first, then the smaller ``PE``."""
    pes = [pe] if pe else [1 << i for i in range(2, beat.bit_length()) if 1 << i <= beat]
    out = [(p, s) for p in pes for s in ([simd] if simd else [1 << i for i in range(2, p.bit_length())])
           if s <= p and p % s == 0 and beat % p == 0]
    return sorted(out, key=lambda ps: (-ps[0] * ps[1], ps[0]))


# -- the plan -------------------------------------------------------------------------------------

BEATS = (64, 32, 16)
"""AXI beats `plan_engine` tries when not given one: a wider beat moves more a cycle but widens
the element-wise unit (a beat a cycle: about 1,450 LUTs a byte lane at 64 bytes, Yosys-fitted),
which a small core cannot hold (kv260: 93,696 LUTs)."""


def lane_choices(board, core: int, beat: int) -> list[int]:
    """The element-wise unit's byte lanes `plan_engine` tries at ``beat``: a beat's, then halves
    down to ``beat/(2P)`` (``P`` `memory_timing`'s period). From ``beat/P`` up, its steps stay
    memory-paced (a beat every ``P`` cycles, ``beat/lanes ≤ P`` in the lanes); one halving
    below trades some of their speed for LUTs the other units may use."""
    period = memory_timing(board, core, beat)[1]
    return [beat >> k for k in range(beat.bit_length()) if 2 * period * (beat >> k) >= beat]


def plan_engine(graph: Graph, board, core: int = 0, *, pe: int | None = None, simd: int | None = None,
                taps: int = 3, beat: int | None = None, pack: bool = True, lanes: int | None = None,
                frames: int = 1) -> EnginePlan:
    """The fastest engine over the beats `BEATS` (or the one ``beat``) and, at each, the
    element-wise unit's lanes (`lane_choices`, or the one ``lanes``) by `plan_engine_at`; ties
    go to the wider beat and the more lanes. Fewer lanes are not tried once a plan has the
    largest ``PE × SIMD`` and ``TAPS`` asked for and whole maps (nothing left to gain).

    Raises:
        InfeasibleError: no beat gives an engine that fits (the widest beat's refusal, at a
            beat's lanes).
    """
    best, first_error = None, None
    for b in [beat] if beat is not None else BEATS:
        for n in [lanes] if lanes is not None else lane_choices(board, core, b):
            try:
                plan = plan_engine_at(graph, board, core, pe=pe, simd=simd, taps=taps, beat=b, pack=pack, lanes=n,
                                      frames=frames)
            except InfeasibleError as e:
                first_error = first_error or e
                continue
            if best is None or plan.fps > best.fps:
                best = plan
            if (plan.pe, plan.simd) == _sizes(b, pe, simd)[0] and plan.taps == taps and \
                    all(st.bands == 1 for st in plan.steps):
                break
    if best is None:
        raise first_error
    return best


def plan_engine_at(graph: Graph, board, core: int = 0, *, pe: int | None = None, simd: int | None = None,
                   taps: int = 3, beat: int = 64, pack: bool = True, lanes: int | None = None,
                   in_buffer: int | None = None, frames: int = 1) -> EnginePlan:
    """The layer engine for ``graph`` (canonical or int8; shapes only) on ``core`` of
    ``board`` with ``beat``-byte AXI beats; ``pack``: the conv unit's products two a DSP48E2
    (`conv_engine.sv` ``PACK = 1``, the same cycles; not at ``PE`` 1), counted so by
    `er.resources`; ``lanes``: the element-wise unit's byte lanes (``LANES``; None: a beat's);
    ``in_buffer``: the conv input buffer fixed (bytes, `engine_program.build`'s ``in_buffer``)
    instead of searched; ``frames``: frames a start (`engine_program.build`'s: each conv step
    computes them all with each tile, the buffer holds that many inputs).

    Sizing: the largest ``PE·SIMD`` (`_sizes`; ``pe``/``simd`` fix them), then the most
    window ``TAPS`` (``taps`` down to 1), then the largest conv input buffer (the largest
    conv input map, i.e. no bands, then halves of it down to `BUDGET_FLOOR`, whole beats)
    whose parts (`er.resources`) fit every one of the core's limits at its cap. Memory:
    `memory_timing`. Cycles: per band ``engine_top.step_overhead`` + the unit's exact
    model (`engine_top.unit_cycles`), the frame their sum + 1 (`engine_top.frame_cycles`).

    Raises:
        InfeasibleError: no engine fits (the smallest tried: its short resources named), the
            core reaches no memory, or a conv's smallest band does not fit ``in_buffer``.
        NotImplementedError: an operator or a layout no unit runs (as `engine_program.build`).
    """
    c = board.cores[core]
    limits = {k: c.limit(k) for k in ("dsp", "bram18", "uram", "lut")}
    latency, period = memory_timing(board, core, beat)
    g8 = _int8_form(graph)
    chosen, last = None, None
    steps = lower(g8)
    narrow = None
    for p, s in _sizes(beat, pe, simd):
        banded = {None: _rows(_layout(g8, steps, p, beat, None, frames), p, s, beat)}
        narrow = er.too_narrow(banded[None], p, beat)
        if narrow and pe is None:  # the RTL window unit reads a row start a beat: not this G here
            continue
        biggest = max((ei.in_buffer_bytes(f, p, beat) for _, u, rs in banded[None] if u == "conv" for f in rs),
                      default=0)
        budgets = [None] + [_up(biggest >> k, beat) for k in range(1, 12) if biggest >> k >= BUDGET_FLOOR]
        for t in range(taps, 0, -1):
            for b in budgets if in_buffer is None else [in_buffer]:
                try:
                    if b not in banded:
                        banded[b] = _rows(_layout(g8, steps, p, beat, b, frames), p, s, beat)
                except _NoBand as e:
                    if in_buffer is not None:
                        raise InfeasibleError(f"engine: input buffer {in_buffer:,} B at PE x SIMD {p} x {s}: {e}") from e
                    break
                rows = banded[b]
                for u in (0, limits["uram"]) if limits["uram"] else (0,):  # block RAM first, then URAM
                    res = er.resources(rows, p, s, beat, t, pack, lanes, u)
                    last = (p, s, t, b, res)
                    if not er.short(res["total"], limits):
                        chosen = (p, s, t, b, rows, res)
                        break
                if chosen:
                    break
            if chosen:
                break
        if chosen:
            break
    if chosen is None:
        if last is None and narrow:
            raise InfeasibleError(f"engine: at {beat}-byte beats {narrow}")
        if last is None:
            raise InfeasibleError(f"engine: no PE x SIMD for pe={pe}, simd={simd}, beat={beat}")
        p, s, t, b, res = last
        raise InfeasibleError(f"engine: even the smallest engine tried (PE x SIMD {p} x {s}, TAPS {t}, input buffer "
                              f"{'whole maps' if b is None else f'{b:,} B'}) does not fit core {core} of "
                              f"{board.name}: " + "; ".join(er.short(res["total"], limits)))
    p, s, t, b, rows, res = chosen
    plan = _timed(board, core, g8, p, s, t, beat, b, rows, res, limits, latency, period, lanes, frames)
    if narrow:  # a caller's PE: planned (the model and the HLS kernel run it), the RTL cannot
        plan.notes.append(f"{narrow}: the RTL twin refuses this program (gen writes rtl/UNSUPPORTED.txt)")
    plan.pack = pack and p >= 2  # PE = 1 (a caller's pe) has no lane pair
    plan.lanes = lanes or beat
    if res.get("conv", {}).get("uram"):  # the URAM the conv unit took: its RTL parameters
        u = er.conv_uram(*er.conv_sizers(rows, p, beat), p, s, beat, pack, limits["uram"])
        plan.ibuf_uram, plan.tile_uram = u["uram"], u["tile_uram"]
    return plan


def _conv_band(f: dict, pe: int, simd: int, beat: int, tp: engine_top.TopParams) -> tuple[int, bool]:
    """A conv band's unit cycles on the top, and whether the exact model timed it."""
    st = ep.ProgramStep("conv", ["band"], None, f, (), "")
    try:
        return engine_top.unit_cycles(st, pe, simd, beat, tp), True
    except ValueError:  # writes that cannot keep up: compute or writes, whichever is more
        ho, wo = ei.step_out_hw(f)
        compute = ho * wo * (f["CO"] // pe) * f["KH"] * f["KW"] * f["C"] // simd * f["FRAMES"]
        runs, beats, _ = ei.store_runs(f, pe, beat)
        return max(compute, runs * beats * f["FRAMES"] * tp.period) + engine_top.CONV_SETUP_IN + 2 * tp.latency, False


def _timed(board, core, g8, pe, simd, taps, beat, budget, rows, res, limits, latency, period,
           lanes=None, frames: int = 1) -> EnginePlan:
    z = er.window_sizes(rows, pe, beat)
    tp = engine_top.TopParams(latency=latency, period=period, kb=z["kb"], taps=taps)
    steps: list[PlanStep] = []
    bound = {"conv": 0, "window": 0, "eltwise": 0, "memory": 0}
    for s, unit, rs in rows:
        cyc, exact, fr, fw, wr = 0, True, 0, 0, 0
        for f in rs:
            vals = list(f.values())
            if unit == "conv":
                c1, ok = _conv_band(f, pe, simd, beat, tp)
                exact &= ok
                r, bts, _ = ei.load_runs(f, pe, beat)
                w, wb, _ = ei.store_runs(f, pe, beat)
                moved = (r * bts * f["FRAMES"], w * wb * f["FRAMES"], f["CO"] // pe * f["TILE_BEATS"])
            elif unit == "window":
                c1 = engine_top.unit_cycles(ep.ProgramStep(unit, s.nodes, None, f, (), ""), pe, simd, beat, tp)
                tr = engine_window.traffic(vals, pe, beat)
                moved = (tr["read"], tr["write"], tr["weights"])
            else:
                ec = engine_eltwise.layer_cycles(vals, beat, latency, period, tp.eburst, tp.chunks, g=pe, lanes=lanes)
                c1 = ec.cycles
                tbeats = ee.TABLE_BYTES // beat if f["MODE"] == ee.TABLE or f["LUT"] else 0
                moved = (ec.reads, ec.writes, tbeats)
            cyc += c1
            fr, fw, wr = fr + moved[0], fw + moved[1], wr + moved[2]
            # a band is memory-bound when one channel's beats at the period take most of it
            bound["memory" if max(moved) * period >= 0.8 * c1 else unit] += c1
        macs = s.macs * s.groups
        steps.append(PlanStep(unit, s.mode, list(s.nodes), len(rs), cyc, len(rs) * engine_top.step_overhead(unit),
                              exact, fr, fw, wr, macs))
    seq = sum(st.overhead for st in steps)
    cycles = sum(st.cycles for st in steps) + seq + 1
    by = {u: sum(st.cycles for st in steps if st.unit == u) for u in ("conv", "window", "eltwise")}
    fps_core = frames * board.clock_mhz * 1e6 / cycles
    nbytes = {"feature_read": beat * sum(st.f_read for st in steps) // frames,
              "feature_write": beat * sum(st.f_write for st in steps) // frames,
              "weight_read": beat * sum(st.w_read for st in steps) // frames}
    share = board.offchip_share(core)
    bw = frames * sum(nbytes.values()) / cycles
    if bw > share:
        neck = f"memory: {bw:.1f} B/cycle needed, {share:.1f} shared"
    else:
        k = max(bound, key=bound.get)
        what = "memory channels (steps bound by a channel's beats at the period)" if k == "memory" else \
            f"compute in the {k} unit"
        neck = f"{what}: {bound[k] / cycles:.0%} of the frame"
    notes = []
    banded = [st.nodes[0] for st in steps if st.bands > 1 and st.unit == "conv"]
    if banded:
        notes.append(f"{len(banded)} convs in row bands (maps at beat-aligned block strides)")
    if any(not st.exact for st in steps):
        notes.append(f"{sum(not st.exact for st in steps)} conv steps write-bound: charged by the write bound")
    if frames > 1:
        convs = [rs for _, u, rs in rows if u == "conv"]
        shared = sum(rs[0]["FRAMES"] > 1 for rs in convs)
        notes.append(f"{frames} frames a start: {shared} of {len(convs)} convs compute them together with each tile "
                     f"(their weights read once for {frames} frames), the others a frame at a time; a frame waits for "
                     f"its start's others (latency {cycles:,} cycles)")
    plan = EnginePlan(board.name, core, pe, simd, taps, beat,
                      budget if budget is not None else max(
                          (ei.in_buffer_bytes(f, pe, beat) for _, u, rs in rows if u == "conv" for f in rs), default=0),
                      latency, period, board.clock_mhz, len(board.cores), steps, cycles, fps_core,
                      fps_core * len(board.cores), by, seq, nbytes, bw, share, res, limits, neck,
                      sum(st.macs for st in steps), notes)
    plan.frames = frames
    return plan
