"""Where a plan's FIFOs live, once `build` has sized them: BRAM18 by default, URAM for the
whole-frame ones a core with URAM has room for and for smaller ones while a core is over its
BRAM18 (`fifos_to_uram`), with the ``ddr_fifos`` option a ring of regions in the
core's board memory for those a core short of BRAM18 can move there (`fifos_to_ddr`;
docs/cost-model.md, "Skip FIFOs in board memory"), and last distributed RAM for shallow wide
ones while a core still is (`fifos_to_lutram`).
"""

from __future__ import annotations

from bbgrap_hls.model.blocks import SHORT_RING_KINDS
from bbgrap_hls.model.links import fifo_cost
from bbgrap_hls.model.memory import LUTRAM_PER_BRAM18, distributed_memory, uram_memory
from bbgrap_hls.model.stage import MAX_STAGE_LANES, fifo_chunks, ring_stage
from bbgrap_hls.model.timing import short_ring_rows
from bbgrap_hls.plan import ChannelPlan
from bbgrap_hls.search.problem import BW_CYCLES, RES, Problem


def fifos_to_uram(prob: Problem, use: dict, chans: list[ChannelPlan], big: list[tuple[int, int, int, int]]) -> None:
    """Move FIFOs from BRAM to URAM while the core's URAM (its blocks' included) stays within
    its limit: URAM is not spent where the weights need it.

    First the whole-frame ones (``big``, `fifo_in_uram`), per core the ones that save the most
    BRAM first. Then, on a core still over its BRAM18, the smaller ones (a skip FIFO of a
    sixth of a frame, say), the most BRAM18 saved per URAM first, until the core fits: a FIFO
    of 8 bits × 16 k beats is 8 RAMB18 or 4 URAM288 cascaded, a fair trade only where the
    BRAM18 runs short (HLS: ``BIND_STORAGE type=fifo impl=uram``, as for the big ones).
    Distributed RAM comes last, after board memory (`fifos_to_lutram`)."""
    board = prob.board
    for i, core, lanes, d in sorted(big, key=lambda x: (-chans[x[0]].bram18, x[0])):
        u = fifo_cost(lanes, d, uram=True)
        if use[core][2] + u.uram > board.cores[core].uram_limit:
            continue
        use[core][1] -= chans[i].bram18
        use[core][2] += u.uram
        chans[i].bram18, chans[i].uram = 0, u.uram
    _give_back(prob, use, chans, "uram")


def fifos_to_lutram(prob: Problem, use: dict, chans: list[ChannelPlan]) -> None:
    """On a core still over its BRAM18 once `fifos_to_uram` and `fifos_to_ddr` have moved
    what they can, move FIFOs to distributed RAM (`distributed_memory`), the fewest LUTs per
    RAMB18 first and at most `LUTRAM_PER_BRAM18` of them, while the core's LUTs stay within
    their limit (HLS: ``BIND_STORAGE type=fifo impl=lutram``): the shallow wide FIFOs of
    inception branches, never a deep narrow one."""
    _give_back(prob, use, chans, "lutram")


def _give_back(prob: Problem, use: dict, chans: list[ChannelPlan], field: str) -> None:
    """On each core over its BRAM18, move its FIFOs to ``field`` (``uram``: URAM288;
    ``lutram``: LUTs) in `_order`, each while that resource stays within the core's limit,
    until the core fits."""
    r = RES.index("uram" if field == "uram" else "lut")
    for k in use:
        lim = prob.limits(k)
        for i, n in _order(chans, k, field) if use[k][1] > lim[1] else []:
            if use[k][1] <= lim[1]:
                break
            if use[k][r] + n > lim[r]:
                continue
            use[k][1] -= chans[i].bram18
            use[k][r] += n
            chans[i].bram18 = 0
            setattr(chans[i], field, n)


def _in_bram(ch: ChannelPlan, k: int) -> bool:
    """Whether ``ch`` is a FIFO into core ``k`` (same-core or from the host) still in BRAM18:
    one the passes here may move."""
    return ch.kind in ("fifo", "host") and ch.dst_core == k and ch.bram18 > 0


def _order(chans: list[ChannelPlan], k: int, field: str) -> list[tuple[int, int]]:
    """(channel, cost) of core ``k``'s BRAM18 FIFOs that ``field`` may hold, the least cost
    per RAMB18 given back first. ``uram``: URAM288 (`uram_memory`), fewer than the RAMB18 it
    replaces (a URAM288 holds 16 RAMB18's bits: never trade one for fewer of them);
    ``lutram``: LUTs (`distributed_memory`), at most `LUTRAM_PER_BRAM18` a RAMB18."""
    cands = []
    for i, ch in enumerate(chans):
        if not _in_bram(ch, k):
            continue
        if field == "uram":
            n = uram_memory(8 * ch.width_lanes, ch.depth).uram
            ok = 0 < n < ch.bram18
        else:
            n = distributed_memory(8 * ch.width_lanes, ch.depth).lut
            ok = n <= LUTRAM_PER_BRAM18 * ch.bram18
        if ok:
            cands.append((i, n))
    return sorted(cands, key=lambda x: (x[1] / chans[x[0]].bram18, x[0]))


def room_to_free(chans: list[ChannelPlan], k: int, short: int, field: str,
                 order: list[tuple[int, int]] | None = None) -> int:
    """URAM288 (``field`` ``uram``) or LUTs (``lutram``) that would let `fifos_to_uram` or
    `fifos_to_lutram` give back ``short`` BRAM18 on core ``k`` from its FIFOs (0 when they
    cannot): what an integer program leaves free when a built plan is over its BRAM18
    (`ilp._at`). ``order``: `_order`'s list made earlier, the channels it holds that have
    since left BRAM18 skipped (`fifos_to_ddr`: the same list as `_order` now gives while no
    other channel has changed)."""
    saved = need = 0
    for i, n in _order(chans, k, field) if order is None else order:
        if saved >= short:
            break
        if order is not None and not _in_bram(chans[i], k):
            continue
        saved += chans[i].bram18
        need += n
    return need if saved >= short else 0


def fifos_to_ddr(prob: Problem, use: dict, chans: list[ChannelPlan], core_ii: dict[int, int]) -> dict[int, int]:
    """Move FIFOs from BRAM to a ring of regions in their core's board memory (a
    ``ddr_stage``, docs/cost-model.md "Skip FIFOs in board memory"), per core the ones that
    save the most BRAM18 first, while the core is over its BRAM18. A FIFO qualifies when its
    reader takes a frame's first beat no sooner than the memory can give it back
    (`fifo_chunks`: a frame in one region, or in several for a FIFO shorter than a frame), and
    when the stage (`ring_stage`) keeps the core's ii (``core_ii``: its blocks'
    slowest) and the core's bandwidth and LUTs hold it. It stops where `fifos_to_lutram` can
    give the rest back within the core's LUTs (each stage takes LUTs too: moving FIFOs one by
    one to board memory first would leave none for it). The channel's ``kind``
    becomes ``ddr_fifo`` with its ``chunks`` and ``regions``; returns the bytes per frame this
    adds per core (written and read)."""
    rate, latency, _ = prob.offchip_memory
    added: dict[int, int] = {}
    paths = None  # the channels into each node and the units by name, for `_top_ups` (built once)
    for k in use:
        lim = prob.limits(k)
        # `_settled`'s order of the core's FIFOs for distributed RAM, made again only when a
        # move tops up other FIFOs (a move alone takes just its own FIFO out of BRAM18)
        order = _order(chans, k, "lutram")
        if _settled(chans, use[k], lim, k, order):
            continue
        ii = max(1, int(core_ii.get(k, 0)))
        cands = [i for i, ch in enumerate(chans) if _in_bram(ch, k) and ch.width_lanes <= MAX_STAGE_LANES]
        for i in sorted(cands, key=lambda i: (-chans[i].bram18, i)):
            ch = chans[i]
            frame = max(1, ch.bits_per_frame // 8 // ch.width_lanes)
            ring = fifo_chunks(ch.depth, frame, ch.width_lanes, rate, latency)
            if ring is None:
                continue
            st = ring_stage(frame, *ring, ch.width_lanes, rate, latency)
            bw = -(-BW_CYCLES * st.bytes_per_frame // ii)
            if st.ii > ii or st.deliver > ii or use[k][4] + bw > lim[4] or use[k][3] + st.lut > lim[3]:
                continue
            ups = []
            if ring[0] > 1:
                paths = paths or _paths(prob, chans)
                ups = _top_ups(chans, paths, i, st.latency)
            up_bram = sum(new.bram18 - old.bram18 for _, _, old, new in ups)
            up_lut = sum(new.lut - old.lut for _, _, old, new in ups)
            if up_bram >= ch.bram18 or use[k][3] + st.lut + up_lut > lim[3]:
                continue  # the other path's FIFOs would take what the ring frees
            for j, depth, _, new in ups:
                chans[j].depth, chans[j].bram18 = depth, new.bram18
            use[k][1] += up_bram
            use[k][3] += up_lut
            use[k][1] -= ch.bram18
            use[k][3] += st.lut
            use[k][4] += bw
            added[k] = added.get(k, 0) + st.bytes_per_frame
            ch.bram18, ch.kind = 0, "ddr_fifo"
            ch.chunks, ch.regions = ring
            if ups:
                order = _order(chans, k, "lutram")
            if _settled(chans, use[k], lim, k, order):
                break
    return added


RING_HOLDS = float("inf")
"""What a FIFO in board memory holds, for `_upstream` (its ring's regions: a frame or more)."""


def _paths(prob: Problem, chans: list[ChannelPlan]) -> tuple[dict[str, list[int]], dict]:
    """The channels into each node (indices into ``chans``) and the units by node name: the
    graph `_top_ups` walks. Moves to board memory change neither."""
    into: dict[str, list[int]] = {}
    for j, c in enumerate(chans):
        into.setdefault(c.dst, []).append(j)
    return into, {u.node.name: u for u in getattr(prob, "units", [])}


def _top_ups(chans: list[ChannelPlan], paths: tuple[dict, dict], i: int, latency: int) -> list[tuple]:
    """The deeper FIFOs a ring of chunks for channel ``i`` needs on the other paths into its
    reader (``paths``: `_paths`): ``(channel, depth, old cost, new cost)`` each.

    The ring's reader takes a chunk's first beat only once the whole chunk is written and read
    back, so its producer runs up to the chunk's stage ``latency`` (first beat in to last beat
    out, `ring_stage`: the chunk written, the memory's round trip, the chunk read) ahead of the reader's
    other inputs, and what it runs ahead by waits on the other paths from that producer to the
    reader: their FIFOs and blocks (`_upstream`) must hold it, else the producer stalls before
    the chunk is complete and the design deadlocks (EfficientNet-B0 on zcu102 in the threaded
    C simulation: a SiLU's skip FIFO in 96-beat chunks, its sigmoid path a few beats deep). The
    FIFO into the reader on each such path is deepened by what the path lacks."""
    ch = chans[i]
    ahead, ch_frame = latency * ch.width_lanes, max(1, ch.bits_per_frame // 8)  # elements, of a frame
    into, units = paths
    memo: dict[str, float | None] = {}
    ups = []
    for j in into.get(ch.dst, []):
        s = chans[j]
        if j == i or s.tensor == ch.tensor or s.dst_core != ch.dst_core or s.kind != "fifo" or s.uram:
            continue
        up = _upstream(s.src, ch.src, into, chans, units, memo, 0)
        if up is None:  # not fed by the ring's producer
            continue
        held = s.depth * s.width_lanes + up  # elements of the path (of its own tensor)
        need = -(-ahead * max(1, s.bits_per_frame // 8) // ch_frame)  # what runs ahead, in them
        if held >= need:
            continue
        depth = s.depth + -(-(need - int(held)) // s.width_lanes)
        ups.append((j, depth, fifo_cost(s.width_lanes, s.depth), fifo_cost(s.width_lanes, depth)))
    return ups


def _upstream(node: str, fork: str, into: dict, chans: list[ChannelPlan], units: dict, memo: dict,
              level: int) -> float | None:
    """Elements the blocks and FIFOs between ``fork``'s output and ``node``'s output hold (the
    least over ``node``'s inputs fed by ``fork``), None when ``fork`` does not feed ``node``."""
    if node == fork:
        return 0.0
    if node in memo:
        return memo[node]
    memo[node] = None
    best = None
    if level < 64:
        for j in into.get(node, []):
            c = chans[j]
            up = _upstream(c.src, fork, into, chans, units, memo, level + 1)
            if up is not None:
                fifo = RING_HOLDS if c.kind == "ddr_fifo" else c.depth * c.width_lanes
                best = up + fifo if best is None else min(best, up + fifo)
    if best is not None:
        best += _block_holds(units.get(node))
    memo[node] = best
    return best


def _block_holds(unit) -> float:
    """Elements a block takes in before its output waits: a reduction over the frame (global
    pooling) all of them, a window block its line buffer's short ring (`short_ring_rows` padded
    rows), any other block none (its pipeline registers)."""
    if unit is None:
        return 0.0
    g = unit.geom
    if unit.kind in ("gap", "gmaxpool"):
        return RING_HOLDS
    if unit.kind in SHORT_RING_KINDS and not g.pointwise:
        return float(short_ring_rows(g) * g.wp * g.c)
    return 0.0


def _settled(chans: list[ChannelPlan], use, lim, k: int, order: list[tuple[int, int]] | None = None) -> bool:
    """Whether core ``k`` (its ``use`` and ``lim`` rows) needs no more rings: it is within its
    BRAM18, or distributed RAM gives the rest back within its LUTs (`fifos_to_lutram`, which
    takes no bandwidth). ``order``: as for `room_to_free`."""
    if use[1] <= lim[1]:
        return True
    rest = room_to_free(chans, k, use[1] - lim[1], "lutram", order)
    return bool(rest) and use[3] + rest <= lim[3]
