"""Vitis handoff (``vitis/``): per-core HLS configs, the link config, Makefile, README.

Flow: Vitis 2023.2 or later (the unified ``v++ -c --mode hls`` compiler with a config
file per core), then ``v++ -l`` with ``link.cfg``:

- ``nk=core<k>:1:core<k>_1``: one compute unit per core;
- ``slr=core<k>_1:SLR<n>``: the plan's core → the board's ``Core.slr`` (cores that are not
  SLRs get no ``slr`` line);
- ``sp=core<k>_1.<port>:<bank>``: every m_axi port to a memory bank the core reaches
  (both ends of an off-chip buffer share one bank), the ``wts`` port of a core with URAM
  weights (its weight image) included; the ``wddr_<layer>`` ports of a core with off-chip
  weights all to the bank of the plan core's ``memory`` (`offchip_memory`), and with them
  the ``sddr_w_<layer>``/``sddr_r_<layer>`` ports of its DDR frame stages (same image);
- ``stream_connect=core<a>_1.o_<x>:core<b>_1.i_<x>:<depth>``: every inter-core stream.

A board of several cards (FPGAs joined by ``network`` links, `board_cards`) gets one link
config and one xclbin per card: ``link_card<d>.cfg`` names only the cores of card ``d``,
their SLRs, the banks of that card's memories (``DDR[i]`` counted per card) and the streams
inside the card. A stream between cards cannot be a ``stream_connect``: each end is written
as a commented hook (`NetworkHook`) that the user's network kernel config must connect
(``NETWORK_CFG_CARD<d>`` in the Makefile). A single-card board keeps ``link.cfg`` and
``design.xclbin``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bbgrap_hls.board import Board, Memory
from bbgrap_hls.codegen.ports import DDR_IMAGE_KINDS, Design, core_ports
from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.plan import Plan

#: Part used when the board names none (the files say so; override with PART=...).
PLACEHOLDER_PART = "PART_NOT_GIVEN_IN_BOARD"
PLACEHOLDER_PLATFORM = "PLATFORM_NOT_GIVEN_IN_BOARD"


@dataclass
class NetworkHook:
    """One end of a stream between two cards, left for the user's network kernel.

    Attributes:
        ident: Design name of the stream.
        port: This card's kernel port, e.g. ``core3_1.o_t_x`` (``direction`` "out") or
            ``core4_1.i_t_x`` (``direction`` "in").
        peer: The port at the other end, on card ``peer_card``.
        direction: "out" (this card sends) or "in" (this card receives).
        peer_card: Index of the other card.
        width_bits: Bits of one AXI4-Stream beat (``8·lanes``).
        bits_per_frame: Bits the stream carries per frame.
        link: The board's modelled link(s) between the cards (width, latency).
        plan: The plan's transfer (route, cycles per frame, latency), or "" if none matched.
    """

    ident: str
    port: str
    peer: str
    direction: str
    peer_card: int
    width_bits: int
    bits_per_frame: int
    link: str
    plan: str = ""


@dataclass
class LinkConfig:
    nk: list[str]
    slr: list[str]
    sp: list[str]
    stream_connect: list[str]
    notes: list[str]
    hooks: list[NetworkHook] = field(default_factory=list)


@dataclass
class Card:
    """The part of a design on one card: ``index`` (board numbering), its cores, its link config."""

    index: int
    cores: list[str]
    link: LinkConfig


def board_cards(board: Board) -> list[tuple[int, ...]]:
    """The cards (FPGAs) of ``board``: groups of core ids, card ``d`` at index ``d``.

    A card is a connected component of the cores over the links that are not of kind
    ``network`` (SLR crossings and on-chip links stay inside one FPGA; a network link
    joins two) and over the memories (cores that reach the same DDR/HBM bank sit on one
    card: two regions joined only through memory are one FPGA). Cards are ordered by their
    lowest core id, core ids ascending inside a card. A core with neither forms a card of
    its own.
    """
    parent = {c.id: c.id for c in board.cores}

    def root(k: int) -> int:
        while parent[k] != k:
            k = parent[k]
        return k

    pairs = [(ln.a, ln.b) for ln in board.links if ln.kind != "network"]
    pairs += [(m.cores[0], k) for m in board.memories for k in m.cores[1:]]
    for x, y in pairs:
        a, b = root(x), root(y)
        parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for c in board.cores:
        groups.setdefault(root(c.id), []).append(c.id)
    return sorted(tuple(sorted(v)) for v in groups.values())


def _bank(mems: list[Memory], mem: Memory, k: int) -> str:
    """The Vitis bank name of ``mem`` among ``mems`` (``DDR[i]``, ``HBM[i]``, else its name)."""
    same = [m for m in mems if m.kind[:3] == mem.kind[:3]]
    i = same.index(mem)
    if mem.kind.startswith("hbm"):
        return f"HBM[{k % 32}]"  # spread the ports of the one HBM stack over its 32 channels
    if mem.kind.startswith("ddr"):
        return f"DDR[{i}]"
    return mem.name.upper()


def offchip_memory(board: Board, plan: Plan, k: int) -> Memory | None:
    """The board memory holding core ``k``'s off-chip weights: the plan core's ``memory``
    (by name), else the board's `Board.home_memory` (what the planner charged)."""
    name = next((c.memory for c in plan.cores if c.id == k), None)
    return next((m for m in board.memories if m.name == name), None) or board.home_memory(k)


def _plan_transfer(plan: Plan, tensor: str, a: int, b: int) -> str:
    """The plan's transfer of ``tensor`` from core ``a`` to ``b`` in words, or ""."""
    base = tensor.split("#part")[0]
    cands = [t for t in plan.transfers if t.src_core == a and (t.dst_core == b or b in t.route)]
    if cands:
        t = min(cands, key=lambda t: (t.tensor != base, t.dst_core != b, t.id))
        return (f"plan transfer {t.id} ({t.tensor}): route {'-'.join(map(str, t.route))}, "
                f"{t.bits_per_frame} bits/frame, ii {t.ii_cycles} cycles, latency {t.latency_cycles} cycles")
    return ""


def _network_links(board: Board, cards: list[tuple[int, ...]], ca: int, cb: int) -> str:
    """The board's network links between cards ``ca`` and ``cb`` in words."""
    out = []
    for ln in board.links:
        ends = {next(i for i, c in enumerate(cards) if k in c) for k in (ln.a, ln.b)}
        if ln.kind == "network" and ends == {ca, cb}:
            out.append(f"core {ln.a} - core {ln.b} ({ln.kind}): {ln.width_bits} bits/cycle, "
                       f"latency {ln.latency_cycles} cycles at {board.clock_mhz:g} MHz")
    return "; ".join(out) or f"no direct link between cards {ca} and {cb} on board {board.name}"


def link_depth(lanes: int) -> int:
    """The FIFO depth (beats) of an inter-core ``stream_connect`` of ``lanes`` int8 lanes; the
    threaded C simulation bounds the link at the same depth (templates/tb/tb.cpp.j2)."""
    return max(16, 2 * lanes)


def link_config(design: Design, board: Board, plan: Plan, card: int | None = None) -> LinkConfig:
    """The ``[connectivity]`` lines for ``design`` on ``board``: of the whole design
    (``link.cfg``, ``card`` None) or of card ``card`` of a multi-card board (``link_card<d>.cfg``)."""
    cards = board_cards(board)
    card_of = {k: i for i, c in enumerate(cards) for k in c}
    mine = set(cards[card]) if card is not None else {c.id for c in board.cores}
    mems = [m for m in board.memories if card is None or mine & set(m.cores)]
    cores = [c for c in design.cores if c.id in mine]
    cu = {c.name: f"{c.name}_1" for c in design.cores}
    by_id = {c.id: c for c in board.cores}
    nk = [f"{c.name}:1:{cu[c.name]}" for c in cores]
    slr = [f"{cu[c.name]}:SLR{by_id[c.id].slr}" for c in cores if by_id[c.id].slr is not None]
    sp, notes = [], []
    buffer_mem: dict[str, Memory] = {}
    producer = {p.link: c.id for c in design.cores for p in c.ports if p.kind == "mem_out" and p.link in design.buffers}
    consumer = {p.link: c.id for c in design.cores for p in c.ports if p.kind == "mem_in" and p.link in design.buffers}
    for ident in sorted(design.buffers):
        m = board.memory_for(producer[ident], consumer[ident])
        if m is not None:
            buffer_mem[ident] = m
        elif card is not None and card_of[producer[ident]] != card_of[consumer[ident]] and \
                card in (card_of[producer[ident]], card_of[consumer[ident]]):
            notes.append(f"buffer {ident}: cores {producer[ident]} and {consumer[ident]} sit on different cards "
                         "and share no memory: each end gets a bank of its own card and the generated hosts copy "
                         "the frames between them after the producer's run (host traffic the plan does not model)")
    n = 0
    with_sp = bool(board.platform) and "xdma" in str(board.platform)
    for c in cores:
        reach = [m for m in mems if c.id in m.cores]
        ddr_bank = ""  # every off-chip weight port of a core on the one bank of its image
        for p in core_ports(c):
            if not p.kind.startswith("mem"):
                continue
            if p.kind in DDR_IMAGE_KINDS:  # weights and DDR frame stages: the image's bank
                m = offchip_memory(board, plan, c.id)
                if m is None or m not in mems:
                    raise UnsupportedError(f"{cu[c.name]}.{p.name}: core {c.id} keeps weights off chip but reaches "
                                           "no memory of the board")
                ddr_bank = ddr_bank or _bank(mems, m, n)
                if with_sp:
                    sp.append(f"{cu[c.name]}.{p.name}:{ddr_bank}")
                n += 1
                continue
            m = buffer_mem.get(p.link) or (reach[n % len(reach)] if reach else None)
            if m is None:
                notes.append(f"{cu[c.name]}.{p.name}: core {c.id} reaches no memory of the board")
                continue
            if with_sp:
                sp.append(f"{cu[c.name]}.{p.name}:{_bank(mems, m, n)}")
            n += 1
    sc, hooks = [], []
    elems = {(c.id, p.name): p for c in design.cores for p in c.ports}
    for ident, (lanes, a, b, po, pi) in sorted(design.links.items()):
        if card is not None and card_of[a] != card_of[b]:
            if card in (card_of[a], card_of[b]):
                port = elems[(a, po)]
                out = card_of[a] == card
                hooks.append(NetworkHook(
                    ident, f"core{a}_1.{po}" if out else f"core{b}_1.{pi}",
                    f"core{b}_1.{pi}" if out else f"core{a}_1.{po}", "out" if out else "in",
                    card_of[b] if out else card_of[a], 8 * lanes, 8 * port.elems,
                    _network_links(board, cards, card_of[a], card_of[b]), _plan_transfer(plan, port.tensor, a, b)))
            continue
        if card is not None and card_of[a] != card:
            continue
        ln = board.link(a, b)
        if ln is None:
            notes.append(f"stream {ident}: cores {a} and {b} have no direct link; the linker routes it "
                         "through the device (crossing the SLRs between them)")
        elif ln.kind == "network":
            notes.append(f"stream {ident}: cores {a} and {b} sit on different FPGAs ({ln.kind} link); "
                         "v++ cannot connect it: a network kernel must carry it (not generated)")
        sc.append(f"core{a}_1.{po}:core{b}_1.{pi}:{link_depth(lanes)}")
    return LinkConfig(nk, slr, sp, sc, notes, hooks)


def core_cards(design: Design, board: Board) -> dict[str, int]:
    """Core name -> card index for a multi-card board ({} on a single-card board)."""
    cards = board_cards(board)
    if len(cards) < 2:
        return {}
    card_of = {k: i for i, c in enumerate(cards) for k in c}
    return {c.name: card_of[c.id] for c in design.cores}


def design_cards(design: Design, board: Board, plan: Plan) -> list[Card]:
    """The cards of a multi-card board that hold cores of ``design`` ([] on a single-card board)."""
    cards = board_cards(board)
    if len(cards) < 2:
        return []
    used = {c.id for c in design.cores}
    return [Card(d, [c.name for c in design.cores if c.id in ids], link_config(design, board, plan, d))
            for d, ids in enumerate(cards) if used & set(ids)]


def render_vitis(design: Design, board: Board, plan: Plan) -> dict[str, str]:
    """``{relative path: text}`` of the ``vitis/`` folder."""
    from bbgrap_hls.codegen.emit import environment

    env = environment()
    part = board.part or PLACEHOLDER_PART
    platform = board.platform or PLACEHOLDER_PLATFORM
    period = 1000.0 / board.clock_mhz
    files = {}
    for c in design.cores:
        files[f"vitis/{c.name}.cfg"] = env.get_template("vitis/core.cfg.j2").render(
            core=c.name, part=part, clock_ns=f"{period:.3f}", others=[o.name for o in design.cores if o is not c])
    cards = design_cards(design, board, plan)
    lc = link_config(design, board, plan) if not cards else None
    ctx = dict(cores=[c.name for c in design.cores], link=lc, part=part, platform=platform, board=board,
               has_part=board.part is not None, has_platform=board.platform is not None,
               clock_mhz=f"{board.clock_mhz:g}", cards=cards,
               weight_cores=[c.name for c in design.cores if any(p.kind == "mem_w" for p in core_ports(c))],
               ddr_cores=[c.name for c in design.cores if any(p.kind == "mem_w_ddr" for p in core_ports(c))])
    if not cards:
        files["vitis/link.cfg"] = env.get_template("vitis/link.cfg.j2").render(**ctx)
        files["vitis/Makefile"] = env.get_template("vitis/Makefile.j2").render(**ctx)
    else:
        for card in cards:
            files[f"vitis/link_card{card.index}.cfg"] = env.get_template("vitis/link_card.cfg.j2").render(
                card=card, link=card.link, board=board)
        files["vitis/Makefile"] = env.get_template("vitis/Makefile_cards.j2").render(**ctx)
    files["vitis/README.md"] = env.get_template("vitis/README.md.j2").render(**ctx)
    return files
