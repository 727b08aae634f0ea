"""Vitis handoff (``vitis/``): per-core HLS configs, the link config, Makefile, README.

Flow: Vitis 2023.2 or later (the unified ``v++ -c --mode hls`` compiler with a config
file per core), then ``v++ -l`` with ``link.cfg``:

- ``nk=core<k>:1:core<k>_1``: one compute unit per core;
- ``slr=core<k>_1:SLR<n>``: the plan's core → the board's ``Core.slr`` (cores that are not
  SLRs get no ``slr`` line);
- ``sp=core<k>_1.<port>:<bank>``: every m_axi port to a memory bank the core reaches
  (both ends of an off-chip buffer share one bank), the ``wts`` port of a core with URAM
  weights (its weight image) included;
- ``stream_connect=core<a>_1.o_<x>:core<b>_1.i_<x>:<depth>``: every inter-core stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from bbgrap_hls.board import Board, Memory
from bbgrap_hls.codegen.design import Design, core_ports
from bbgrap_hls.plan import Plan

#: Part used when the board names none (the files say so; override with PART=...).
PLACEHOLDER_PART = "PART_NOT_GIVEN_IN_BOARD"
PLACEHOLDER_PLATFORM = "PLATFORM_NOT_GIVEN_IN_BOARD"


@dataclass
class LinkConfig:
    nk: list[str]
    slr: list[str]
    sp: list[str]
    stream_connect: list[str]
    notes: list[str]


def _bank(board: Board, mem: Memory, k: int) -> str:
    """The Vitis bank name of memory ``mem`` (``DDR[i]``, ``HBM[i]``, else ``HOST``-less name)."""
    same = [m for m in board.memories if m.kind[:3] == mem.kind[:3]]
    i = same.index(mem)
    if mem.kind.startswith("hbm"):
        return f"HBM[{k % 32}]"  # spread the ports of the one HBM stack over its 32 channels
    if mem.kind.startswith("ddr"):
        return f"DDR[{i}]"
    return mem.name.upper()


def link_config(design: Design, board: Board, plan: Plan) -> LinkConfig:
    """The ``[connectivity]`` lines of ``link.cfg`` for ``design`` on ``board``."""
    cu = {c.name: f"{c.name}_1" for c in design.cores}
    by_id = {c.id: c for c in board.cores}
    nk = [f"{c.name}:1:{cu[c.name]}" for c in design.cores]
    slr = [f"{cu[c.name]}:SLR{by_id[c.id].slr}" for c in design.cores if by_id[c.id].slr is not None]
    sp, notes = [], []
    buffer_mem: dict[str, Memory] = {}
    producer = {p.link: c.id for c in design.cores for p in c.ports if p.kind == "mem_out" and p.link in design.buffers}
    consumer = {p.link: c.id for c in design.cores for p in c.ports if p.kind == "mem_in" and p.link in design.buffers}
    for ident in sorted(design.buffers):
        m = board.memory_for(producer[ident], consumer[ident])
        if m is not None:
            buffer_mem[ident] = m
    n = 0
    with_sp = bool(board.platform) and "xdma" in str(board.platform)
    for c in design.cores:
        reach = [m for m in board.memories if c.id in m.cores]
        for p in core_ports(c):
            if not p.kind.startswith("mem"):
                continue
            m = buffer_mem.get(p.link) or (reach[n % len(reach)] if reach else None)
            if m is None:
                notes.append(f"{cu[c.name]}.{p.name}: core {c.id} reaches no memory of the board")
                continue
            if with_sp:
                sp.append(f"{cu[c.name]}.{p.name}:{_bank(board, m, n)}")
            n += 1
    sc = []
    for ident, (lanes, a, b, po, pi) in sorted(design.links.items()):
        ln = board.link(a, b)
        if ln is None:
            notes.append(f"stream {ident}: cores {a} and {b} have no direct link; the linker routes it "
                         "through the device (crossing the SLRs between them)")
        elif ln.kind == "network":
            notes.append(f"stream {ident}: cores {a} and {b} sit on different FPGAs ({ln.kind} link); "
                         "v++ cannot connect it: a network kernel must carry it (not generated)")
        sc.append(f"core{a}_1.{po}:core{b}_1.{pi}:{max(16, 2 * lanes)}")
    return LinkConfig(nk, slr, sp, sc, notes)


def render_vitis(design: Design, board: Board, plan: Plan) -> dict[str, str]:
    """``{relative path: text}`` of the ``vitis/`` folder."""
    from bbgrap_hls.codegen.emit import environment

    env = environment()
    lc = link_config(design, board, plan)
    part = board.part or PLACEHOLDER_PART
    platform = board.platform or PLACEHOLDER_PLATFORM
    period = 1000.0 / board.clock_mhz
    files = {}
    for c in design.cores:
        files[f"vitis/{c.name}.cfg"] = env.get_template("vitis/core.cfg.j2").render(
            core=c.name, part=part, clock_ns=f"{period:.3f}")
    ctx = dict(cores=[c.name for c in design.cores], link=lc, part=part, platform=platform, board=board,
               has_part=board.part is not None, has_platform=board.platform is not None,
               clock_mhz=f"{board.clock_mhz:g}",
               weight_cores=[c.name for c in design.cores if any(p.kind == "mem_w" for p in core_ports(c))])
    files["vitis/link.cfg"] = env.get_template("vitis/link.cfg.j2").render(**ctx)
    files["vitis/Makefile"] = env.get_template("vitis/Makefile.j2").render(**ctx)
    files["vitis/README.md"] = env.get_template("vitis/README.md.j2").render(**ctx)
    return files
