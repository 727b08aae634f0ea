"""The plan: where every node runs, its folding, every channel, and the predicted speed.

Schema: docs/plan.md. `Plan.to_json` writes deterministic text (sorted keys, floats with
at most 6 significant digits); `Plan.from_json` reads it back to an equal `Plan`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from bbgrap_hls.errors import BadInputError

SCHEMA_VERSION = 1


@dataclass
class SplitPart:
    """Output channels ``[co_begin, co_end)`` of a split node, computed on ``core``."""

    core: int
    co_begin: int
    co_end: int
    pe: int
    simd: int
    ii_cycles: int
    dsp: int
    bram18: int
    uram: int
    lut: int
    weights: str | None = None
    mmv: int = 1
    offchip_bytes_per_frame: int = 0
    pack: int = 1
    """Output lanes per DSP48E2 multiplier: 2 when the part packs (`NodePlan.pack`)."""
    requant: str = "dsp"
    """Where the part's requantisers multiply (`NodePlan.requant`)."""
    px: int = 1
    """Input pixels a beat (`NodePlan.px`; a part's output is one pixel a beat)."""


@dataclass
class NodePlan:
    """Placement, folding and cost of one node (docs/plan.md, "Node")."""

    name: str
    op: str
    block: str
    core: int | None
    pe: int
    simd: int
    ii_cycles: int
    latency_cycles: int
    dsp: int
    bram18: int
    uram: int
    lut: int
    fused_into: str | None = None
    split: list[SplitPart] | None = None
    weights: str | None = None
    """Where the weight memory lives: ``"bram"``, ``"uram"``, ``"lut"`` (LUTRAM) or None
    (no weights). HLS binds it with ``#pragma HLS bind_storage ... impl=<bram|uram|lutram>``."""
    mmv: int = 1
    """Conv only: copies of the matrix-vector unit behind one window generator, each taking
    every ``mmv``-th output pixel (docs/cost-model.md, "Pixel copies"); the output then
    streams one whole pixel (``Co`` lanes) per beat."""
    offchip_bytes_per_frame: int = 0
    """Bytes read from the core's board memory per frame (``weights == "ddr"``)."""
    pack: int = 1
    """Conv/dense: output lanes per DSP48E2 multiplier, 2 with DSP packing (lanes ``2i`` and
    ``2i+1`` share one 27 × 18 product per input lane; an odd ``pe``'s last lane alone), 1
    otherwise (option off, ``pe = 1``, weights off chip). 0: every product in LUTs
    (``lut_mul.sv``; a conv/dense with its weights on chip or a depthwise conv). A split node:
    each part says its own."""
    requant: str = "dsp"
    """Where the block's requantisers (or an add/mul's rescaling products) multiply: ``"dsp"``
    (DSP48E2s, 4 per lane) or ``"lut"`` (``rq_lane.sv``/``eltwise.sv`` ``RQ_LUT = 1``, no DSP;
    planned only when the board's DSPs are short: docs/cost-model.md, "LUT requantisers").
    ``"dsp"`` also for blocks without requantisers."""
    in_slots: int = 2
    """``weights == "ddr"``: input frame slots, 2 (the next frame stored while this one
    computes) or 1 (half the input frame memory: the next frame is taken after this one's
    compute, from an off-chip producer that holds it; docs/cost-model.md, "One input slot").
    2 for every other block."""
    in_stage: bool = False
    """``in_slots == 1`` only: the block's input passes through a DDR frame stage (the next
    frames written to a scratch area of the core's board memory while the block computes,
    read back into its one slot when it takes a frame; docs/cost-model.md, "DDR frame
    stage"), so its producer need not hold the frame. False: the producer holds it (an
    off-chip block with two output slots)."""
    px: int = 1
    """Conv only: input pixels a beat, 2 when its input streams two horizontally adjacent
    pixels a beat (``2·C`` lanes; the planner's ``pixel_pairs`` option, docs/cost-model.md
    "Two pixels a beat"); 1 otherwise. An elementwise block at ``2·C`` lanes says so by its
    ``pe``."""
    po: int = 1
    """Conv only: output pixels a beat (2: two halves of ``mmv/2`` copies, even and odd
    output columns, one beat of ``2·Co`` lanes per pixel pair)."""
    bands: int = 1
    """``weights == "ddr"``, two input slots, Conv only: the bands its ``Ho`` output rows are
    computed in, ``Ho/bands`` rows each, behind a band splitter (its frame memories a band's,
    each weight read once per band: docs/cost-model.md, "Row bands"; `bbgrap_hls.model.band`;
    HLS ``bb::conv2d_banded``). 1 for every other block."""
    short_ring: bool = False
    """A window block (conv with a window generator, one copy, one pixel a beat; depthwise
    conv; pool): its window generator's ring holds ``KH_eff + SH`` padded rows instead of the
    default (HLS ``P::ROWS``, RTL ``RING``), fewer BRAM18 for a few cycles a frame
    (docs/cost-model.md, "Short window rings"). A split node's parts keep the default."""
    out_slots: int = 2
    """``weights == "ddr"`` (no DDR frame stage): output frame slots, 2 (this frame's outputs
    stream out while the next frame computes) or 1 (half the output frame memory: the next
    frame's first fold waits for this one's outputs to have left; docs/cost-model.md, "One
    output slot"; HLS ``P::OSLOTS``, RTL ``OSLOTS``). 2 for every other block."""
    dense_groups: bool = False
    """A grouped conv (not depthwise) computed as a dense conv over its block-diagonal matrix
    (every output channel over the whole window, the other groups' weights zero), where that
    plans faster than the groups in turn (docs/cost-model.md, "Grouped convs"). False for every
    other block, and for a grouped conv computed group by group."""
    wide_groups: bool = False
    """A grouped conv computed group by group whose window generator takes whole pixels (``C``
    lanes a beat, a pixel a cycle) and slices each group's channels out of the word it reads,
    instead of ``C/group`` lanes (HLS ``WIDE = 1``, RTL ``WIDE``; docs/cost-model.md, "Grouped
    convs"). False otherwise."""
    ring_uram: bool = False
    """``short_ring`` only: the ring lives in URAM, several ring words a URAM word (8/lanes
    up to 8 lanes; HLS ``P::RING_URAM``, RTL ``RING_URAM``; docs/cost-model.md, "Window rings
    in URAM"), chosen like the short ring when a core is short of BRAM18. False otherwise."""


@dataclass
class CorePlan:
    """Use of one core against its limits (docs/plan.md, "Core")."""

    id: int
    name: str
    nodes: list[str]
    dsp: int
    bram18: int
    uram: int
    lut: int
    dsp_limit: int
    bram18_limit: int
    uram_limit: int
    lut_limit: int
    ii_cycles: int
    memory: str | None = None
    """The board memory holding this core's off-chip weights (None: it reaches none)."""
    bw: int = 0
    """Bandwidth of ``memory`` its blocks reserve, bytes per 1,024 cycles (each block at the
    rate its own ii reads its weights: docs/cost-model.md, "Off-chip weights")."""
    bw_limit: int = 0
    """This core's share of ``memory``'s usable bandwidth, same unit (0: off-chip weights off)."""
    offchip_bytes_per_frame: int = 0


@dataclass
class ChannelPlan:
    """One edge of the mapped graph: a tensor from its producer to one reader."""

    tensor: str
    src: str
    dst: str
    src_core: int | None
    dst_core: int | None
    kind: str
    transfer: int | None
    depth: int
    width_lanes: int
    bits_per_frame: int
    ii_cycles: int
    barrier: bool
    bram18: int
    uram: int = 0
    """URAM288 of the FIFO (a whole-frame FIFO on a core with URAM: `fifo_cost`; a smaller
    one on a core over its BRAM18: `fifo_memory.fifos_to_uram`)."""
    lutram: int = 0
    """LUTs of the FIFO when the plan put it in distributed RAM (a core over its BRAM18 with
    LUTs to spare: `fifo_memory.fifos_to_lutram`; ``bram18`` 0)."""
    regions: int = 0
    """``kind`` ``ddr_fifo``: the FIFO is a ring of this many regions in the core's board
    memory (`fifo_memory.fifos_to_ddr`; ``depth`` stays the lag it holds, ``bram18`` 0)."""
    chunks: int = 1
    """``kind`` ``ddr_fifo``: the regions a frame is written in (`model.stage.fifo_chunks`): 1,
    a region a frame, for a lag of a frame or more; more for a FIFO shorter than a frame."""


@dataclass
class TransferPlan:
    """A tensor leaving its core towards one destination core (deduplicated)."""

    id: int
    tensor: str
    src_core: int
    dst_core: int
    kind: str
    route: list[int]
    memory: str | None
    bits_per_frame: int
    ii_cycles: int
    latency_cycles: int
    barrier: bool
    readers: list[str]


@dataclass
class Plan:
    """The search result (docs/plan.md)."""

    model: str
    strategy: str
    objective: str
    ii_cycles: int
    bottleneck: str
    fps: float
    latency_cycles: int
    latency_us: float
    optimal: bool
    optimality_note: str
    search_seconds: float
    board: str
    clock_mhz: float
    core_order: list[int]
    cores: list[CorePlan]
    nodes: list[NodePlan]
    channels: list[ChannelPlan]
    transfers: list[TransferPlan]
    host_ops: list[str]
    baselines: dict[str, float] = field(default_factory=dict)
    optimizer: dict[str, Any] = field(default_factory=dict)
    bottleneck_note: str = ""
    roofline: dict[str, Any] = field(default_factory=dict)
    """The frames/s physics allows (compute, memory, input link), which binds, and the plan's
    fraction of it (`bbgrap_hls.search.roofline`; docs/plan.md)."""
    input_blocks: dict[str, int] = field(default_factory=dict)
    """Graph inputs the plan holds as s x s pixel blocks (s² pixels a beat; passes/stem.py)."""
    version: int = SCHEMA_VERSION

    # -- lookups -----------------------------------------------------------------
    def node(self, name: str) -> NodePlan:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def cores_of(self, name: str) -> list[int]:
        """Every core that runs (a part of) node ``name``."""
        n = self.node(name)
        if n.split:
            return [p.core for p in n.split]
        return [] if n.core is None else [n.core]

    # -- JSON ----------------------------------------------------------------------
    def to_dict(self, stable: bool = False) -> dict[str, Any]:
        d = _round(asdict(self))
        d["architecture"] = self.architecture
        if stable:
            d["search_seconds"] = 0.0
        return d

    def to_json(self, stable: bool = False) -> str:
        """Deterministic JSON text; ``stable`` zeroes the machine-dependent search time."""
        return json.dumps(self.to_dict(stable), sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        try:
            kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}
            kw["cores"] = [CorePlan(**c) for c in d["cores"]]
            kw["nodes"] = [_node(n) for n in d["nodes"]]
            kw["channels"] = [ChannelPlan(**c) for c in d["channels"]]
            kw["transfers"] = [TransferPlan(**t) for t in d["transfers"]]
            return cls(**kw)
        except (KeyError, TypeError) as e:
            raise BadInputError(f"plan.json: does not follow docs/plan.md ({type(e).__name__}: {e})") from None

    @classmethod
    def from_json(cls, text: str) -> Plan:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise BadInputError(f"plan.json: invalid JSON ({e})") from None
        return cls.from_dict(d)

    architecture = "dataflow"
    """What ``plan.json``'s ``architecture`` says (`load_plan`)."""


def load_plan(text: str):
    """A ``plan.json``'s plan: a dataflow `Plan`, or a layer engine's
    `bbgrap_hls.model.engine_plan.EnginePlan` when its ``architecture`` is ``"engine"``.

    Raises:
        BadInputError: not JSON, or not a plan of docs/plan.md.
    """
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInputError(f"plan.json: invalid JSON ({e})") from None
    if d.get("architecture", "dataflow") == "engine":
        from bbgrap_hls.model.engine_plan import EnginePlan

        try:
            return EnginePlan.from_dict(d)
        except (KeyError, TypeError) as e:
            raise BadInputError(f"plan.json: not an engine plan of docs/plan.md ({type(e).__name__}: {e})") from None
    return Plan.from_dict(d)


def _node(d: dict[str, Any]) -> NodePlan:
    d = dict(d)
    if d.get("split") is not None:
        d["split"] = [SplitPart(**p) for p in d["split"]]
    return NodePlan(**d)


def path_route(path: list[int], a: int, b: int) -> list[int]:
    """Cores from ``a`` to ``b`` along ``path`` (a plan's ``core_order``), both included."""
    ia, ib = path.index(a), path.index(b)
    return path[ia: ib + 1] if ia <= ib else path[ib: ia + 1][::-1]


def fmt_float(x: float) -> float:
    """A float rounded to 6 significant digits (what plan.json writes)."""
    return float(f"{x:.6g}")


def _round(v: Any) -> Any:
    if isinstance(v, float):
        return fmt_float(v)
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_round(x) for x in v]
    return v
