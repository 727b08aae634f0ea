"""The RTL twin of a `Design`: one SystemVerilog module per core, a top, ``$readmemh`` files.

The design's per-core kernel calls (`bbgrap_hls.codegen.design`) are read as a netlist:
every HLS stream becomes a `fifo` at its depth (the plan's depth for a layer input, 2
elsewhere; pass-through copies (``concat_part``, memory ports) merge into one FIFO), every
layer the ``hw/rtl`` module of `rtl_layers`, fan-outs a `broadcast`, width converters a
`dwc` (after a matrix-vector unit with padded folds a `trim`), gathers of split parts a chain of `concat`, channel shuffles a `channel_shuffle`
and the per-pixel broadcast of an Add/Mul operand a `repeat_pixel`. The top wires the cores with a `link`
per inter-core stream (the board's width, the route's latency) and an `offchip_buffer` per
buffer channel (the memory's bytes per cycle); graph inputs are ``s_axis_<ident>`` and
outputs ``m_axis_<ident>`` AXI-Stream ports. A layer whose weights the plan keeps in board
memory is a `conv_offchip` whose AXI4 read master is the top's ``m_axi_<layer>`` port; its
weights go into the core's image ``rtl/ddr_weights_core<k>.hex`` at the layer's base
address (`OffchipImage`). `rtl_manifest` lists every FIFO and link with its hierarchical
path, for the simulation's deadlock watchdog, and every off-chip port with its image and
the memory the plan assumed (rate, latency, beat).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from bbgrap_hls.board import Board
from bbgrap_hls.codegen.names import comment
from bbgrap_hls.codegen.ports import CoreDesign, Design
from bbgrap_hls.codegen.rtl_layers import (
    AXI_ADDR_W,
    StageInst,
    fifo_stage_inst,
    rtl_layer,
    rtl_offchip,
    rtl_shuffle,
    stage_inst,
)
from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph
from bbgrap_hls.model.links import trim_folds
from bbgrap_hls.plan import Plan, path_route

_CALL = re.compile(r"^bb::(\w+)<([^>]*)>\((.*)\);$")
PASS = ("concat_part", "mem_to_stream", "stream_to_mem")


@dataclass
class Inst:
    """A module instance: parameters (SV literal text) and port prefix -> net (or nets, packed)."""

    module: str
    name: str
    params: list[tuple[str, str]]
    conns: list[tuple[str, str | list[str]]]
    note: str = ""
    axi: list[tuple[str, str]] = field(default_factory=list)  # AXI4 read port prefix -> net prefix
    axi_rw: list[tuple[str, str]] = field(default_factory=list)  # AXI4 read-write port prefix -> net prefix


def width_converter(a: int, c: int) -> tuple[str, list[tuple[str, str]]]:
    """Module and parameters of the width converter from ``a`` to ``c`` lanes: ``trim`` without
    padding where one lane count divides the other (widening: ``c/a`` beats written side by
    side; narrowing: one word read out as ``a/c`` beats; no shifter), else ``dwc``
    (docs/cost-model.md, "LUT")."""
    nf = trim_folds(a, c)
    if nf is not None:
        return "trim", [("IN", str(a)), ("OUT", str(c)), ("NF", str(nf)), ("LAST", str(a))]
    return "dwc", [("IN", str(a)), ("OUT", str(c))]


@dataclass
class Module:
    """A generated module: ports (name, "in"|"out", width in bits), nets, instances."""

    name: str
    note: str
    ports: list[tuple[str, str, int]] = field(default_factory=list)
    nets: list[tuple[str, int]] = field(default_factory=list)
    insts: list[Inst] = field(default_factory=list)
    fifos: list[dict] = field(default_factory=list)  # watchdog entries (path relative to this module)
    axi: list[tuple[str, int, int]] = field(default_factory=list)  # AXI4 read masters: (prefix, data, addr bits)
    offchip: list[dict] = field(default_factory=list)  # their images and memory (tb/rtl.json "axi")
    axi_rw: list[tuple[str, int, int]] = field(default_factory=list)  # read-write masters (DDR frame stages)
    stages: list[dict] = field(default_factory=list)  # their scratch areas and memory (tb/rtl.json "stages")


@dataclass
class OffchipImage:
    """A core's off-chip weight image as the simulated board memory holds it: each off-chip
    layer's words (`rtl_layers.rtl_offchip`) from its base, bases aligned to ``align`` bytes
    (the beat, and at least 64 as the HLS image, so the two images agree for beats up to 64
    bytes)."""

    align: int
    data: bytearray = field(default_factory=bytearray)

    def next_base(self) -> int:
        """Where the next layer starts: the image's end, aligned."""
        return -(-len(self.data) // self.align) * self.align

    def add(self, words: bytes) -> int:
        """Append a layer's ``words`` at the next aligned base; return the base."""
        base = self.next_base()
        self.data += bytes(base - len(self.data)) + words
        return base

    def text(self) -> str:
        """One line per ``align`` bytes, hex, bytes in address order (padded with zeros)."""
        pad = bytes(-len(self.data) % self.align)
        b = bytes(self.data) + pad
        return "".join(b[i:i + self.align].hex() + "\n" for i in range(0, len(b), self.align))


def _lit(v: int | str) -> str:
    """SystemVerilog text of a parameter: a string quoted, a sized literal (``192'h…``) as is."""
    if isinstance(v, str):
        return v if re.fullmatch(r"\d+'h[0-9a-f]+", v) else f'"{v}"'
    return str(int(v))


class _Groups:
    """Union-find over stream and port names joined by pass-through copies."""

    def __init__(self) -> None:
        self.up: dict[str, str] = {}

    def find(self, a: str) -> str:
        self.up.setdefault(a, a)
        while self.up[a] != a:
            self.up[a] = self.up[self.up[a]]
            a = self.up[a]
        return a

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.up[max(ra, rb)] = min(ra, rb)


def _parse(call: str) -> tuple[str, list[str], list[str]]:
    m = _CALL.match(call)
    if not m:
        raise UnsupportedError(f"RTL twin: cannot read the kernel call '{call[:80]}'")
    return m.group(1), [a.strip() for a in m.group(2).split(",")], [a.strip() for a in m.group(3).split(",")]


def _add_stage(mod: Module, name: str, st: StageInst, src: str, dst: str) -> None:
    """A ``ddr_stage`` instance ``name`` from net ``src`` to net ``dst`` (``st``: a
    `rtl_layers.StageInst`), its read-write master on the core's ports and its scratch area in
    the testbench's manifest ("stages")."""
    mod.insts.append(Inst("ddr_stage", name, st.params, [("s_axis", src), ("m_axis", dst)], st.note,
                          axi_rw=[("m_axi", st.port)]))
    mod.axi_rw.append((st.port, st.data_w, AXI_ADDR_W))
    mod.stages.append(st.manifest)


def core_module(cd: CoreDesign, g: Graph, plan: Plan, files: dict[str, str],
                memory: tuple[float, int, int] | None = None) -> Module:
    """The SystemVerilog module of one core; its layers' memory files are added to ``files``.

    ``memory`` is the board memory as the planner modelled the off-chip layers
    (`bbgrap_hls.search.problem.offchip_memory`: bytes per cycle, latency, beat bytes).
    """
    mod = Module(f"core{cd.id}", f"core {cd.id}: {len(cd.layers)} layer(s)")
    image: OffchipImage | None = None
    in_ports = {p.name: p for p in cd.ports if p.kind in ("mem_in", "axis_in")}
    out_ports = {p.name: p for p in cd.ports if p.kind in ("mem_out", "axis_out")}
    for p in cd.ports:
        mod.ports.append((p.name, "in" if p.name in in_ports else "out", 8 * p.lanes))
    grp = _Groups()
    for call in cd.calls:
        kern, _, args = _parse(call)
        if kern in PASS:
            grp.join(args[0], args[1])
    layers = {lay.ident: lay for lay in cd.layers}
    ddr_fifos = {f"F_{f.ident}": f for f in cd.ddr_fifos}  # the HLS call's struct -> the FIFO in board memory
    writer: dict[str, str] = {}
    reader: dict[str, str] = {}
    lanes_of = {**{s: ln for s, (ln, _) in cd.streams.items()}, **{p.name: p.lanes for p in cd.ports}}

    def w(s: str, who: str) -> str:  # the net an instance writes into stream s
        writer[grp.find(s)] = who
        return f"{grp.find(s)}_w"

    def r(s: str, who: str) -> str:  # the net an instance reads stream s from
        reader[grp.find(s)] = who
        return f"{grp.find(s)}_r"

    n_glue = 0
    for call in cd.calls:
        kern, targs, args = _parse(call)
        if kern in PASS:
            continue
        n_glue += 1
        if kern in ("conv2d", "dwconv2d", "dense", "lut_act", "maxpool2d", "avgpool2d", "global_avgpool",
                    "add2", "mul2", "channel_affine", "conv2d_mmv", "conv2d_pairs",
                    "global_maxpool", "slice2d", "upsample2d", "zeroinsert2d", "depth2space", "bilinear2d", "lrn"):
            lay = layers[targs[0][:-2]]
            node = g.node(lay.node)
            pe, simd, rng = _folding(plan, lay)
            rl = rtl_layer(g, node, lay, pe, simd, rng)
            files.update(rl.files)
            name = f"u_{lay.ident}"
            note = f"{lay.ident}: {comment(node.name)} ({node.op})"
            if rl.two_inputs:
                conns = [("s0_axis", r(args[0], note)), ("s1_axis", r(args[1], note)), ("m_axis", w(args[2], note))]
            else:
                conns = [("s_axis", r(args[0], note)), ("m_axis", w(args[1], note))]
            mod.insts.append(Inst(rl.module, name, [(k, _lit(v)) for k, v in rl.params.items()], conns, note))
        elif kern in ("conv2d_offchip", "dense_offchip", "conv2d_banded"):
            lay = layers[targs[0][:-2]]
            node = g.node(lay.node)
            if memory is None:
                raise UnsupportedError(f"{lay.ident} ({comment(lay.node)}): weights off chip, but the board "
                                       f"has no memory for core {cd.id}")
            rate, latency, beat = memory
            image = image or OffchipImage(max(beat, 64))
            pe, simd, rng = _folding(plan, lay)
            rl = rtl_offchip(g, node, lay, pe, simd, rng, beat, image.next_base())
            base = image.add(rl.image)
            files.update(rl.files)
            note = f"{lay.ident}: {comment(node.name)} ({node.op}, weights off chip at {base:#x})"
            port = f"m_axi_{lay.ident}"
            src = r(args[0], note)
            if lay.in_stage:  # its input through a DDR frame stage (docs/rtl.md, "DDR frame stage")
                lanes = min(simd, rl.params["C"])
                st = stage_inst(lay, lanes, rl.params["H"] * rl.params["W"] * rl.params["C"] // lanes, memory)
                mod.nets.append((f"{lay.ident}_staged", 8 * lanes))
                _add_stage(mod, f"u_{lay.ident}_stage", st, src, f"{lay.ident}_staged")
                src = f"{lay.ident}_staged"
            mod.insts.append(Inst(rl.module, f"u_{lay.ident}", [(k, _lit(v)) for k, v in rl.params.items()],
                                  [("s_axis", src), ("m_axis", w(args[1], note))], note,
                                  axi=[("m_axi", port)]))
            mod.axi.append((port, 8 * beat, AXI_ADDR_W))
            sf = len(rl.image) // (rl.params["CO"] // pe) // (pe * simd)
            mod.offchip.append({"port": port, "layer": lay.ident, "node": lay.node, "core": cd.id,
                                "image": f"ddr_weights_core{cd.id}.hex", "base": base, "bytes": len(rl.image),
                                "beat_bytes": beat, "rate": rate, "latency": int(latency),
                                "tile_beats": pe * simd * sf // beat, "folds": rl.params["CO"] // pe})
        elif kern == "ddr_fifo":  # the plan's FIFO in board memory: a DDR frame stage (docs/rtl.md)
            f = ddr_fifos[targs[0]]
            name = f"u_{f.ident}_fifo"
            _add_stage(mod, name, fifo_stage_inst(f, memory), r(args[0], name), w(args[1], name))
            # the watchdog sees the stage's write FIFO: its writer is refused when the ring is full
            mod.fifos.append({"path": f"{name}.u_wfifo", "kind": "ddr_fifo", "depth": f.regions * f.beats,
                              "desc": f"FIFO in board memory {f.ident}"})
        elif kern == "channel_shuffle":
            lay = layers[args[2][: -len("_perm")]]
            rl = rtl_shuffle(lay, int(targs[1]), int(targs[2]))
            note = f"{lay.ident}: {comment(lay.node)} (channel shuffle)"
            mod.insts.append(Inst(rl.module, f"u_{lay.ident}", [(k, _lit(v)) for k, v in rl.params.items()],
                                  [("s_axis", r(args[0], note)), ("m_axis", w(args[1], note))], note))
        elif kern == "repeat_pixel":
            pixels, c, lanes = (int(x) for x in targs)
            name = f"u_rep{n_glue}"
            mod.insts.append(Inst("repeat_pixel", name, [("C", str(c)), ("P", str(lanes)), ("PIXELS", str(pixels))],
                                  [("s_axis", r(args[0], name)), ("m_axis", w(args[1], name))],
                                  f"one pixel repeated {pixels} times (broadcast operand)"))
        elif kern == "fanout":
            a = int(targs[1])
            name = f"u_bc{n_glue}"
            outs = [w(b, name) for b in args[2:]]
            mod.insts.append(Inst("broadcast", name, [("WIDTH", str(8 * a)), ("N", str(len(outs)))],
                                  [("s_axis", r(args[0], name)), ("m_axis", outs[::-1])], "fan-out"))
        elif kern == "width_convert":
            a, c = int(targs[1]), int(targs[2])
            name = f"u_dwc{n_glue}"
            module, params = width_converter(a, c)
            mod.insts.append(Inst(module, name, params, [("s_axis", r(args[0], name)), ("m_axis", w(args[1], name))],
                                  f"{a} -> {c} lanes"))
        elif kern == "trim_convert":  # padded folds: drop the last fold's padding lanes (trim.sv)
            _, nf, a, co, c = (int(x) for x in targs)
            name, last = f"u_trim{n_glue}", co - (nf - 1) * a
            mod.insts.append(Inst("trim", name, [("IN", str(a)), ("OUT", str(c)), ("NF", str(nf)), ("LAST", str(last))],
                                  [("s_axis", r(args[0], name)), ("m_axis", w(args[1], name))],
                                  f"{a} -> {c} lanes, the last of {nf} beats a pixel trimmed to {last}"))
        elif kern == "concat":
            _concat_chain(mod, f"u_cat{n_glue}", int(targs[1]), [int(x) for x in targs[2:]],
                          [r(s, f"u_cat{n_glue}") for s in args[2:]], w(args[0], f"u_cat{n_glue}"))
        else:
            raise UnsupportedError(f"core{cd.id}: the RTL twin has no module for 'bb::{kern}' yet "
                                   f"(HLS only): {call[:100]}")
    # One FIFO per group of streams; a port in the group replaces the FIFO's outer net.
    members: dict[str, list[str]] = {}
    for s in list(cd.streams) + list(in_ports) + list(out_ports):
        members.setdefault(grp.find(s), []).append(s)
    for root, names in sorted(members.items()):
        streams = [s for s in names if s in cd.streams]
        if not streams:
            continue
        width = 8 * lanes_of[root]
        depth = max(cd.streams[s][1] for s in streams)
        src = next((p for p in names if p in in_ports), None)
        dst = next((p for p in names if p in out_ports), None)
        wnet, rnet = src or f"{root}_w", dst or f"{root}_r"
        if src is None:
            mod.nets.append((wnet, width))
        if dst is None:
            mod.nets.append((rnet, width))
        if src:
            writer[root] = f"port {src}"
        if dst:
            reader[root] = f"port {dst}"
        name = f"q_{root}"
        desc = f"{writer.get(root, '?')} -> {reader.get(root, '?')}"
        mod.insts.append(Inst("fifo", name, [("WIDTH", str(width)), ("DEPTH", str(depth))],
                              [("s_axis", wnet), ("m_axis", rnet)], desc))
        mod.fifos.append({"path": name, "kind": "fifo", "depth": depth, "desc": desc})
    # Nets named <root>_w / _r that an instance uses but whose group has a port: rename.
    rename = {}
    for root, names in members.items():
        for p in names:
            if p in in_ports:
                rename[f"{root}_w"] = p
            if p in out_ports:
                rename[f"{root}_r"] = p
    for inst in mod.insts:
        inst.conns = [(k, [rename.get(x, x) for x in v] if isinstance(v, list) else rename.get(v, v))
                      for k, v in inst.conns]
    if image is not None:
        files[mod.offchip[0]["image"]] = image.text()
    return mod


def _concat_chain(mod: Module, name: str, lanes: int, cs: list[int], ins: list[str], out: str) -> None:
    """Channel concat of several inputs as a chain of two-input `concat` blocks (plain wires between)."""
    acc, c_acc = ins[0], cs[0]
    for k in range(1, len(ins)):
        last = k == len(ins) - 1
        dst = out if last else f"{name}_{k}"
        if not last:
            mod.nets.append((dst, 8 * lanes))
        mod.insts.append(Inst("concat", f"{name}_{k}" if len(ins) > 2 else name,
                              [("P", str(lanes)), ("C0", str(c_acc)), ("C1", str(cs[k]))],
                              [("s0_axis", acc), ("s1_axis", ins[k]), ("m_axis", dst)], "channel concat"))
        acc, c_acc = dst, c_acc + cs[k]


def _folding(plan: Plan, lay) -> tuple[int, int, tuple[int, int] | None]:
    npl = plan.node(lay.node)
    m = re.search(r"_p(\d+)$", lay.ident)
    if m and npl.split:
        part = npl.split[int(m.group(1))]
        return part.pe, part.simd, (part.co_begin, part.co_end)
    return npl.pe, npl.simd, None


def _hop_route(plan: Plan, board: Board, src: int, dst: int) -> list[int]:
    for t in plan.transfers:
        if t.src_core == src and t.kind == "stream" and dst in t.route:
            return t.route[: t.route.index(dst) + 1]
    if src in plan.core_order and dst in plan.core_order:  # no planned transfer: the core path
        return path_route(plan.core_order, src, dst)
    return [src, dst]


def top_module(design: Design, cores: list[Module], plan: Plan, board: Board) -> Module:
    """The top: cores, links, off-chip buffers and the design's AXI-Stream ports."""
    top = Module("top", f"design of {len(cores)} core(s) on board {comment(board.name)}")
    drivers: dict[str, list[tuple[str, str]]] = {}  # design ident -> [(core instance, port)]
    conns: dict[str, list[tuple[str, str]]] = {m.name: [] for m in cores}
    by_id = {cd.id: cd for cd in design.cores}
    for _t, ident, _ in design.inputs:
        lanes = next((p.lanes for cd in design.cores for p in cd.ports if p.kind == "mem_in" and p.link == ident), 1)
        top.ports.append((f"s_axis_{ident}", "in", 8 * lanes))
    for _t, ident, _ in design.outputs:
        lanes = next(p.lanes for cd in design.cores for p in cd.ports if p.kind == "mem_out" and p.link == ident)
        top.ports.append((f"m_axis_{ident}", "out", 8 * lanes))
    inputs = {ident for _, ident, _ in design.inputs}
    outputs = {ident for _, ident, _ in design.outputs}
    for m in cores:
        cd = by_id[int(m.name[4:])]
        for p in cd.ports:
            if p.link in inputs:
                drivers.setdefault(p.link, []).append((m.name, p.name, p.lanes))
            elif p.link in outputs:
                conns[m.name].append((p.name, f"m_axis_{p.link}"))
            else:
                net = f"{p.name}_{cd.id}"
                top.nets.append((net, 8 * p.lanes))
                conns[m.name].append((p.name, net))
    for ident, users in sorted(drivers.items()):
        width = next(wd for n, d, wd in top.ports if n == f"s_axis_{ident}")
        nets = [f"s_axis_{ident}"] if len(users) == 1 else [f"{port}_{core}" for core, port, _ in users]
        if len(users) > 1:
            top.nets += [(n, width) for n in nets]
            top.insts.append(Inst("broadcast", f"u_bc_{ident}", [("WIDTH", str(width)), ("N", str(len(nets)))],
                                  [("s_axis", f"s_axis_{ident}"), ("m_axis", nets[::-1])], "input to several cores"))
        for (core, port, lanes), net in zip(users, nets, strict=True):
            if 8 * lanes != width:  # this core reads the input at other lanes (an uneven split's part)
                top.nets.append((f"{port}_{core}_w", 8 * lanes))
                module, params = width_converter(width // 8, lanes)
                top.insts.append(Inst(module, f"u_dwc_{port}_{core}", params,
                                      [("s_axis", net), ("m_axis", f"{port}_{core}_w")],
                                      f"input {ident} to {core} at {lanes} lanes"))
                net = f"{port}_{core}_w"
            conns[core].append((port, net))
    for ident, (lanes, src, dst, po, pi) in sorted(design.links.items()):
        route = _hop_route(plan, board, src, dst)
        hops = [board.link(a, b) for a, b in zip(route, route[1:], strict=False)]
        if any(h is None for h in hops):
            raise UnsupportedError(f"link {ident}: no board link along the route {route}")
        lat = max(3, sum(h.latency_cycles for h in hops))
        lw = min(h.width_bits for h in hops)
        name = f"u_link_{ident}"
        top.insts.append(Inst("link", name, [("WIDTH", str(8 * lanes)), ("LINK_W", str(lw)), ("LATENCY", str(lat))],
                              [("s_axis", f"{po}_{src}"), ("m_axis", f"{pi}_{dst}")],
                              f"core{src} -> core{dst}, route {route}"))
        top.fifos.append({"path": name, "kind": "link", "depth": lat, "desc": f"link core{src} -> core{dst} ({ident})"})
    for ident, n in sorted(design.buffers.items()):
        src = next(cd for cd in design.cores for p in cd.ports if p.kind == "mem_out" and p.link == ident)
        dst = next(cd for cd in design.cores for p in cd.ports if p.kind == "mem_in" and p.link == ident)
        po = next(p for p in src.ports if p.link == ident)
        pi = next(p for p in dst.ports if p.link == ident)
        mem = board.memory_for(src.id, dst.id)
        bpc = max(1, int(board.bytes_per_cycle(mem))) if mem else 1
        barrier = int(mem.latency_cycles) if mem else 0
        beats = n // po.lanes
        nframes = 2 + -(-barrier // beats)  # the barrier's frames in flight on top of double buffering
        name = f"u_buf_{ident}"
        top.insts.append(Inst("offchip_buffer", name, [("LANES", str(po.lanes)), ("FRAME_BEATS", str(beats)),
                                                        ("BYTES_PER_CYCLE", str(bpc)), ("NFRAMES", str(nframes)),
                                                        ("BARRIER", str(barrier))],
                              [("s_axis", f"{po.name}_{src.id}"), ("m_axis", f"{pi.name}_{dst.id}")],
                              f"core{src.id} -> core{dst.id} through off-chip memory"))
        top.fifos.append({"path": name, "kind": "buffer", "depth": n // po.lanes,
                          "desc": f"off-chip buffer core{src.id} -> core{dst.id} ({ident})"})
    for m in cores:
        top.axi += m.axi  # each off-chip layer's read master is a port of the top
        top.axi_rw += m.axi_rw  # and each DDR frame stage's read-write master
        top.insts.append(Inst(m.name, f"u_{m.name}", [], sorted(conns[m.name]), m.note,
                              axi=[(p, p) for p, _, _ in m.axi], axi_rw=[(p, p) for p, _, _ in m.axi_rw]))
        top.fifos += [dict(f, path=f"u_{m.name}.{f['path']}", desc=f"{m.name}: {f['desc']}") for f in m.fifos]
    return top


def render_rtl(design: Design, g: Graph, plan: Plan, board: Board) -> dict[str, str]:
    """``{relative path: text}`` of ``rtl/`` (top, cores, memories) and ``tb/rtl.json``."""
    from bbgrap_hls.codegen.emit import environment
    from bbgrap_hls.search.problem import offchip_memory  # the memory the planner modelled

    files: dict[str, str] = {}
    memory = offchip_memory(board)
    cores = [core_module(cd, g, plan, files, memory) for cd in design.cores]
    top = top_module(design, cores, plan, board)
    env = environment()
    out = {f"rtl/{k}": v for k, v in sorted(files.items())}
    for m in cores:
        out[f"rtl/{m.name}.sv"] = env.get_template("rtl/core.sv.j2").render(m=m)
    out["rtl/top.sv"] = env.get_template("rtl/top.sv.j2").render(m=top)
    out["tb/rtl.json"] = json.dumps(rtl_manifest(design, top, cores, plan), indent=2, sort_keys=True) + "\n"
    return out


def rtl_manifest(design: Design, top: Module, cores: list[Module], plan: Plan) -> dict:
    """What the design-level testbench needs: ports, modules, FIFOs and links, predictions."""
    modules = sorted({i.module for m in [top, *cores] for i in m.insts} - {m.name for m in cores} | {"fifo"})
    width = {n: wd for n, _, wd in top.ports}
    return {
        "top": "top",
        "cores": [m.name for m in cores],
        "modules": modules,
        "mem_files": sorted({v.strip('"') for m in cores for i in m.insts for k, v in i.params if k.endswith("_FILE")}),
        "inputs": [{"tensor": t, "ident": i, "elems": n, "lanes": width[f"s_axis_{i}"] // 8, "port": f"s_axis_{i}"}
                   for t, i, n in design.inputs],
        "outputs": [{"tensor": t, "ident": i, "elems": n, "lanes": width[f"m_axis_{i}"] // 8, "port": f"m_axis_{i}"}
                    for t, i, n in design.outputs],
        "channels": top.fifos,
        "axi": [a for m in cores for a in m.offchip],
        "stages": [a for m in cores for a in m.stages],
        "predicted_ii_cycles": int(plan.ii_cycles),
        "predicted_latency_cycles": int(plan.latency_cycles),
        "bottleneck": plan.bottleneck,
    }


def rtl_files(design: Design, g: Graph, plan: Plan, board: Board) -> dict[str, bytes]:
    """`render_rtl` as gen writes it; a design the RTL twin cannot build yet gets
    ``rtl/UNSUPPORTED.txt`` with the reason instead (the HLS output stays valid)."""
    try:
        files = render_rtl(design, g, plan, board)
    except UnsupportedError as e:
        files = {"rtl/UNSUPPORTED.txt": f"The RTL twin does not support this design yet: {e}\n"}
    return {k: v.encode() for k, v in files.items()}

