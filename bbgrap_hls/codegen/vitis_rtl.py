"""The RTL twin's cores as Vitis RTL kernels (``gen --kernels rtl``).

Each core of the design becomes an XRT-managed RTL kernel ``core<k>`` (ap_ctrl_hs) whose
arguments are the HLS kernel's (`bbgrap_hls.codegen.ports.core_ports`, then ``frames``), in
the same order, so that ``host/host.cpp`` and ``vitis/link.cfg`` serve both kinds:

- a graph input, a graph output and an off-chip buffer (kinds ``mem_in``/``mem_out``) is a
  pointer argument on an AXI4 master ``m_axi_<arg>`` (read-only: `ctrl_mm2s`, write-only:
  `ctrl_s2mm`), its bytes laid out as the HLS ``mem_to_stream``/``stream_to_mem`` do;
- an inter-core stream (``axis_in``/``axis_out``) is an AXI4-Stream port named as the HLS
  port (``i_<x>``/``o_<x>``), ``8·lanes`` data bits and ``tlast`` on a frame's last beat,
  passed through a `ctrl_count` that lets exactly one run's beats through;
- an off-chip weight argument ``wddr_<layer>`` is the AXI4 read master of that layer's
  `conv_offchip` (``m_axi_wddr_<layer>``), its addresses offset by the pointer, held back
  until the first ap_start (the pointer is set then);
- ``wts`` (a core with URAM weights in the HLS kernel) is an AXI4 read master that never
  reads: the RTL keeps every weight in its ``$readmemh`` memories; ``load_weights`` is
  accepted and ignored;
- ``frames`` (a 32-bit scalar) is the run's frame count.

Control (`ctrl_axilite`, `ctrl_run`): s_axilite ``s_axi_control`` with 0x00 control
(ap_start, ap_done clear-on-read, ap_idle, ap_ready, auto_restart), 0x04 GIE, 0x08 IER,
0x0C ISR, then one 8-byte slot per non-stream argument from 0x10 in argument order. One
ap_start runs ``frames`` frames: every reader, writer and stream gate latches its argument,
and ap_done (with ap_ready) rises when the last output beat has left (a stream) or the last
write burst has been acknowledged (memory); ``interrupt`` is GIE and ISR.

Files: ``rtl_kernel/core<k>/`` (the kernel top ``core<k>.sv``, the twin's core renamed
``core<k>_dp``, its memory files, ``kernel.xml``), ``rtl_kernel/lib/`` (the ``hw/rtl``
modules used), ``rtl_kernel/platform.sv`` (a stand-in of what ``v++ -l`` builds for
simulation: the kernels, each ``stream_connect`` a `fifo` of its depth, every control and
memory port at the top), ``rtl_kernel/kernels.json`` (argument offsets, ports, used by the
testbench), and in ``vitis/``: ``package_core<k>.tcl`` (Vivado: package the IP and
``package_xo``), the Makefile, ``link.cfg`` as for HLS kernels, a README. The arguments,
register map, ports and ``kernel.xml`` are `bbgrap_hls.codegen.rtl_kernel_spec`'s.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from bbgrap_hls.board import Board
from bbgrap_hls.codegen.names import comment
from bbgrap_hls.codegen.ports import CoreDesign, Design
from bbgrap_hls.codegen.rtl_kernel_spec import (
    CTRL_ADDR_W,
    KernelArg,
    KernelPort,
    RtlKernel,
    kernel_spec,
    kernel_xml,
)
from bbgrap_hls.codegen.vitis import (
    PLACEHOLDER_PART,
    PLACEHOLDER_PLATFORM,
    design_cards,
    link_config,
    link_depth,
)
from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph
from bbgrap_hls.plan import Plan

KERNELS = ("hls", "rtl")
BURST = 16  # memory beats per burst of the readers and writers
CTRL_MODULES = ("ctrl_axilite", "ctrl_run", "ctrl_count", "ctrl_mm2s", "ctrl_s2mm", "fifo")


# ---- SystemVerilog signal lists: (suffix, direction seen from the kernel, width) ----------

def _axilite() -> list[tuple[str, str, int]]:
    a = CTRL_ADDR_W
    return [("awaddr", "in", a), ("awvalid", "in", 1), ("awready", "out", 1), ("wdata", "in", 32),
            ("wstrb", "in", 4), ("wvalid", "in", 1), ("wready", "out", 1), ("bresp", "out", 2),
            ("bvalid", "out", 1), ("bready", "in", 1), ("araddr", "in", a), ("arvalid", "in", 1),
            ("arready", "out", 1), ("rdata", "out", 32), ("rresp", "out", 2), ("rvalid", "out", 1),
            ("rready", "in", 1)]


def _mread(dw: int) -> list[tuple[str, str, int]]:
    return [("arid", "out", 1), ("araddr", "out", 64), ("arlen", "out", 8), ("arsize", "out", 3), ("arburst", "out", 2),
            ("arvalid", "out", 1), ("arready", "in", 1), ("rdata", "in", dw), ("rresp", "in", 2),
            ("rid", "in", 1), ("rlast", "in", 1), ("rvalid", "in", 1), ("rready", "out", 1)]


def _mwrite(dw: int) -> list[tuple[str, str, int]]:
    return [("awid", "out", 1), ("awaddr", "out", 64), ("awlen", "out", 8), ("awsize", "out", 3), ("awburst", "out", 2),
            ("awvalid", "out", 1), ("awready", "in", 1), ("wdata", "out", dw), ("wstrb", "out", dw // 8),
            ("wlast", "out", 1), ("wvalid", "out", 1), ("wready", "in", 1), ("bid", "in", 1), ("bresp", "in", 2),
            ("bvalid", "in", 1), ("bready", "out", 1)]


def _axis(width: int, inbound: bool) -> list[tuple[str, str, int]]:
    i, o = ("in", "out") if inbound else ("out", "in")
    return [("tvalid", i, 1), ("tready", o, 1), ("tdata", i, width), ("tlast", i, 1)]


def port_signals(p: KernelPort) -> list[tuple[str, str, int]]:
    """``(signal, "in"|"out", bits)`` of a kernel interface, signal names with the prefix."""
    if p.kind == "m_axi":
        sigs = _mwrite(p.width) if p.mode == "write" else _mread(p.width)
    else:
        sigs = _axis(p.width, p.kind == "axis_in")
    return [(f"{p.name}_{s}", d, w) for s, d, w in sigs]


def kernel_signals(k: RtlKernel) -> list[tuple[str, str, int]]:
    """Every port of kernel ``k``'s top module but the clock and reset."""
    out = [("interrupt", "out", 1)] + [(f"s_axi_control_{s}", d, w) for s, d, w in _axilite()]
    for p in k.ports:
        out += port_signals(p)
    return out


def _decl(sigs: list[tuple[str, str, int]], pad: str = "    ") -> list[str]:
    lines = []
    for name, d, w in sigs:
        rng = f"[{w - 1}:0] " if w > 1 else ""
        lines.append(f"{pad}{'input  wire ' if d == 'in' else 'output logic'} {rng}{name}")
    return lines


def _conn(prefix: str, sigs: list[str], net: str) -> str:
    return ",\n".join(f"      .{prefix}_{s}({net}_{s})" for s in sigs)


_AXIS = ("tvalid", "tready", "tdata", "tlast")


def kernel_top(cd: CoreDesign, k: RtlKernel, dp_axi: dict[str, str], frame_elems: dict[str, int]) -> str:
    """The kernel's top module ``core<k>``: control, run sequencer, memory adapters, stream
    gates and the datapath ``core<k>_dp``.

    ``dp_axi``: kernel argument ``wddr_<layer>`` -> the datapath's read master prefix
    (``m_axi_<layer>``); ``frame_elems``: port name -> bytes per frame.
    """
    ports = {p.name: p for p in cd.ports}
    nslots = sum(1 for a in k.args if a.kind != "stream")
    fr = next(a for a in k.args if a.name == "frames")
    fslot = (fr.offset - 0x10) // 8
    units: list[str] = []
    body: list[str] = []
    dp_conns: list[str] = []
    nets: list[str] = []

    def slot(a: KernelArg) -> int:
        return (a.offset - 0x10) // 8

    for a in k.args:
        if a.kind == "stream":
            p = ports[a.name]
            w = 8 * p.lanes
            beats = frame_elems[p.name] // p.lanes
            nets.append(f"  logic {a.name}_dp_tvalid, {a.name}_dp_tready, {a.name}_dp_tlast;\n"
                        f"  logic [{w - 1}:0] {a.name}_dp_tdata;")
            s_net, m_net = (a.name, f"{a.name}_dp") if p.kind == "axis_in" else (f"{a.name}_dp", a.name)
            body.append(
                f"  // stream {a.name}: {'in' if p.kind == 'axis_in' else 'out'}, {beats} beats a frame\n"
                f"  ctrl_count #(.WIDTH({w}), .FRAME_BEATS({beats})) u_cnt_{a.name} (\n"
                f"      .clk(ap_clk), .rst(rst), .go(go), .frames(frames), .busy(busy[{len(units)}]),\n"
                f"{_conn('s_axis', list(_AXIS), s_net)},\n{_conn('m_axis', list(_AXIS), m_net)}\n  );")
            units.append(a.name)
            dp_conns.append(_conn(a.name, list(_AXIS), f"{a.name}_dp"))
            continue
        if a.kind != "pointer":
            continue
        kp = next(q for q in k.ports if q.name == a.port)
        base = f"args[{64 * slot(a)} +: 64]"
        ids = ("aw", "b") if kp.mode == "write" else ("ar", "r")
        body.append(f"  assign {a.port}_{ids[0]}id = 1'b0;  // one ID: responses in order\n"
                    f"  /* verilator lint_off UNUSEDSIGNAL */\n  wire {a.port}_{ids[1]}id_unused = {a.port}_{ids[1]}id;\n"
                    "  /* verilator lint_on UNUSEDSIGNAL */")
        if a.name in ports:  # mem_in / mem_out
            p = ports[a.name]
            w = 8 * p.lanes
            nets.append(f"  logic {a.name}_dp_tvalid, {a.name}_dp_tready, {a.name}_dp_tlast;\n"
                        f"  logic [{w - 1}:0] {a.name}_dp_tdata;")
            sig = [s for s, _, _ in (_mread(kp.width) if kp.mode == "read" else _mwrite(kp.width)) if s not in ("arid", "rid", "awid", "bid")]
            mod = "ctrl_mm2s" if kp.mode == "read" else "ctrl_s2mm"
            what = "reads" if kp.mode == "read" else "writes"
            par = f".DATA_W({kp.width}), .LANES({p.lanes}), .FRAME_BYTES({frame_elems[p.name]}), .BURST({BURST})"
            axis = "m_axis" if kp.mode == "read" else "s_axis"
            body.append(
                f"  // {a.name}: {what} {frame_elems[p.name]} bytes a frame ({comment(p.tensor)})\n"
                f"  {mod} #({par}) u_mem_{a.name} (\n"
                f"      .clk(ap_clk), .rst(rst), .go(go), .base({base}), .frames(frames), .busy(busy[{len(units)}]),\n"
                f"{_conn('m_axi', sig, a.port)},\n{_conn(axis, list(_AXIS), f'{a.name}_dp')}\n  );")
            units.append(a.name)
            dp_conns.append(_conn(a.name, list(_AXIS), f"{a.name}_dp"))
        elif a.name in dp_axi:  # off-chip weights: the layer's own read master
            d = dp_axi[a.name]
            nets.append(f"  logic [31:0] {d}_araddr;\n  logic {d}_arvalid, {d}_arready;")
            body.append(
                f"  // {a.name}: the layer's weight reads, from the pointer on, once the host set it\n"
                f"  assign {a.port}_araddr = {base} + 64'({d}_araddr);\n"
                f"  assign {a.port}_arvalid = {d}_arvalid && armed;\n"
                f"  assign {d}_arready = {a.port}_arready && armed;")
            dp_conns.append(",\n".join(
                [f"      .{d}_araddr({d}_araddr)", f"      .{d}_arvalid({d}_arvalid)", f"      .{d}_arready({d}_arready)"]
                + [f"      .{d}_{s}({a.port}_{s})" for s in ("arlen", "arsize", "arburst", "rdata", "rresp",
                                                           "rlast", "rvalid", "rready")]))
        else:  # wts: never read
            body.append(f"  // {a.name}: URAM weight image of the HLS kernel; the RTL keeps its weights in ROMs\n"
                        f"  assign {a.port}_araddr = '0;\n  assign {a.port}_arlen = '0;\n"
                        f"  assign {a.port}_arsize = '0;\n  assign {a.port}_arburst = 2'b01;\n"
                        f"  assign {a.port}_arvalid = 1'b0;\n  assign {a.port}_rready = 1'b1;\n"
                        "  /* verilator lint_off UNUSEDSIGNAL */\n"
                        f"  wire {a.port}_unused = ^{{{a.port}_arready, {a.port}_rdata, {a.port}_rresp, "
                        f"{a.port}_rlast, {a.port}_rvalid}};\n  /* verilator lint_on UNUSEDSIGNAL */")
    n = len(units)
    sigs = kernel_signals(k)
    head = ["`default_nettype none", f"// Generated by bbgrap-hls (do not edit): Vitis RTL kernel {k.name} (ap_ctrl_hs),",
            f"// the RTL twin's {cd.name} ({len(cd.layers)} layer(s)) as {cd.name}_dp behind its control and",
            "// memory ports. Arguments (s_axi_control from 0x10):"]
    for a in k.args:
        where = f"0x{a.offset:02x}, {a.size} bytes" if a.kind != "stream" else "AXI4-Stream port"
        head.append(f"//   {a.id}: {a.name} ({a.kind}, {where})")
    head += ["// One ap_start runs `frames` frames; ap_done when the last output beat has left or been",
             "// written to memory (docs/codegen.md, \"RTL kernels\").",
             "/* verilator lint_off SYMRSVDWORD */  // `interrupt` is the name Vitis requires",
             f"module {k.name} (", "    input  wire ap_clk,", "    input  wire ap_rst_n,"]
    head.append(",\n".join(_decl(sigs)))
    head += [");", "  /* verilator lint_on SYMRSVDWORD */"]
    text = "\n".join(head) + "\n"
    text += (f"  localparam int NARGS = {nslots};\n"
             "  logic rst;  // the active-low reset, registered\n"
             "  always_ff @(posedge ap_clk) rst <= !ap_rst_n;\n"
             "  /* verilator lint_off UNUSEDSIGNAL */  // high words of scalars, unused pointers\n"
             "  logic [64*NARGS-1:0] args;\n  /* verilator lint_on UNUSEDSIGNAL */\n"
             f"  wire [31:0] frames = args[{64 * fslot} +: 32];\n"
             f"  logic ap_start, ap_done, ap_ready, ap_idle, go, armed;\n  logic [{n - 1}:0] busy;\n")
    text += "\n".join(nets) + "\n\n"
    ctrl = [s for s, _, _ in _axilite()]
    text += (f"  ctrl_axilite #(.NARGS(NARGS), .ADDR_W({CTRL_ADDR_W})) u_ctrl (\n      .clk(ap_clk), .rst(rst),\n"
             f"{_conn('s_axi_control', ctrl, 's_axi_control')},\n"
             "      .irq(interrupt), .ap_start(ap_start), .ap_done(ap_done), .ap_ready(ap_ready),\n"
             "      .ap_idle(ap_idle), .args(args)\n  );\n\n"
             f"  ctrl_run #(.N({n})) u_run (\n      .clk(ap_clk), .rst(rst), .ap_start(ap_start), .busy(busy),"
             " .go(go),\n      .ap_done(ap_done), .ap_ready(ap_ready), .ap_idle(ap_idle)\n  );\n\n"
             "  always_ff @(posedge ap_clk) armed <= !rst && (armed || go);  // arguments set once\n\n")
    text += "\n\n".join(body) + "\n\n"
    text += f"  {cd.name}_dp u_dp (\n      .clk(ap_clk),\n      .rst(rst),\n" + ",\n".join(dp_conns) + "\n  );\n"
    text += "endmodule\n`default_nettype wire\n"
    return text


def platform_top(design: Design, kernels: list[RtlKernel]) -> str:
    """``platform``: the kernels joined as link.cfg's ``stream_connect`` lines join them (a
    `fifo` of the same depth each), every control, interrupt and memory port at the top,
    prefixed ``<kernel>_``. For simulation only; ``v++ -l`` builds the real one."""
    sigs = []
    for k in kernels:
        sigs += [(f"{k.name}_{n}", d, w) for n, d, w in kernel_signals(k)
                 if not any(n.startswith(p.name + "_") for p in k.ports if p.kind.startswith("axis"))]
    lines = ["`default_nettype none",
             "// Generated by bbgrap-hls (do not edit): the RTL kernels connected as vitis/link.cfg connects",
             "// them, for simulation (rtl_kernel/kernels.json lists the ports and register maps).",
             "module platform (", "    input  wire ap_clk,", "    input  wire ap_rst_n,", ",\n".join(_decl(sigs)), ");"]
    body = []
    for ident, (lanes, a, b, po, pi) in sorted(design.links.items()):
        w = 8 * lanes
        for end in (f"core{a}_{po}", f"core{b}_{pi}"):
            body.append(f"  logic {end}_tvalid, {end}_tready, {end}_tlast;\n  logic [{w - 1}:0] {end}_tdata;")
        body.append(f"  // stream_connect core{a}_1.{po}:core{b}_1.{pi}:{link_depth(lanes)} ({ident})\n"
                    f"  fifo #(.WIDTH({w}), .DEPTH({link_depth(lanes)})) u_sc_{ident} (\n"
                    "      .clk(ap_clk), .rst(!ap_rst_n),\n"
                    f"{_conn('s_axis', list(_AXIS), f'core{a}_{po}')},\n"
                    f"{_conn('m_axis', list(_AXIS), f'core{b}_{pi}')}\n  );")
    for k in kernels:
        conns = [f"      .{n}({k.name}_{n})" for n, _, _ in kernel_signals(k)]
        body.append(f"  {k.name} u_{k.name} (\n      .ap_clk(ap_clk),\n      .ap_rst_n(ap_rst_n),\n"
                    + ",\n".join(conns) + "\n  );")
    return "\n".join(lines) + "\n" + "\n\n".join(body) + "\nendmodule\n`default_nettype wire\n"


def package_tcl(k: RtlKernel, sources: list[str], mems: list[str], part: str) -> str:
    """Vivado batch script packaging kernel ``k`` as an IP and an ``.xo`` (run from ``vitis/``)."""
    lines = [f"# Generated by bbgrap-hls: package the RTL kernel {k.name} as {k.name}.xo (run from vitis/):",
             f"#   vivado -mode batch -source package_{k.name}.tcl -tclargs $PART",
             "# UG1393 \"RTL Kernels\": every port in an interface, each interface on ap_clk, ap_rst_n the",
             "# clock's reset, sdx_kernel properties, then package_xo with our kernel.xml (register map).",
             f"set part [expr {{$argc > 0 ? [lindex $argv 0] : \"{part}\"}}]",
             "set here [file normalize [file dirname [info script]]]",
             "set src [file normalize $here/../rtl_kernel]",
             f"set build $here/build/{k.name}",
             "file delete -force $build",
             f"create_project -force pkg_{k.name} $build/project -part $part",
             "add_files -norecurse [list \\"]
    lines += [f"  $src/{s} \\" for s in sources + mems]
    lines += ["]",
              f"set_property top {k.name} [current_fileset]",
              "update_compile_order -fileset sources_1",
              "ipx::package_project -root_dir $build/ip -vendor bbgrap-hls -library kernel -taxonomy /KernelIP "
              "-import_files -set_current true",
              "set core [ipx::current_core]",
              "ipx::infer_bus_interfaces xilinx.com:interface:aximm_rtl:1.0 $core",
              "ipx::infer_bus_interfaces xilinx.com:interface:axis_rtl:1.0 $core"]
    busifs = ["s_axi_control"] + [p.name for p in k.ports]
    for b in busifs:
        lines.append(f"ipx::associate_bus_interfaces -busif {b} -clock ap_clk $core")
    lines += ["ipx::associate_bus_interfaces -clock ap_clk -reset ap_rst_n $core",
              "set_property sdx_kernel true $core",
              "set_property sdx_kernel_type rtl $core",
              "ipx::update_checksums $core",
              "ipx::check_integrity -kernel $core",
              "ipx::save_core $core",
              f"package_xo -force -xo_path $here/{k.name}.xo -kernel_name {k.name} -ip_directory $build/ip "
              f"-kernel_xml $src/{k.name}/kernel.xml",
              "close_project"]
    return "\n".join(lines) + "\n"


def _makefile(kernels: list[RtlKernel], board: Board, platform: str, part: str) -> str:
    names = " ".join(k.name for k in kernels)
    return f"""# Generated by bbgrap-hls: build the design from its RTL kernels (gen --kernels rtl).
#   make xo        package every core's RTL kernel (Vivado: package_core<k>.tcl, package_xo)
#   make xclbin    link (v++ -l) for TARGET=hw (default) or hw_emu
#   make host      the host driver ../host/host.cpp against XRT ($XILINX_XRT), as for HLS kernels
PLATFORM ?= {platform}
PART ?= {part}
TARGET ?= hw
VPP ?= v++
VIVADO ?= vivado
CXX ?= g++
XILINX_XRT ?= /opt/xilinx/xrt
CORES := {names}
XOS := $(addsuffix .xo,$(CORES))

.PHONY: all xo xclbin host clean
all: xclbin host

xo: $(XOS)

%.xo: package_%.tcl
\t$(VIVADO) -mode batch -nojournal -nolog -source $< -tclargs $(PART)

xclbin: design.xclbin

design.xclbin: $(XOS) link.cfg
\t$(VPP) -l -t $(TARGET) --platform $(PLATFORM) --kernel_frequency {board.clock_mhz:g} --config link.cfg -o $@ $(XOS)

host: host.exe

host.exe: ../host/host.cpp
\t$(CXX) -std=c++17 -O2 -Wall -I$(XILINX_XRT)/include $< -o $@ -L$(XILINX_XRT)/lib -lxrt_coreutil -pthread

clean:
\trm -rf build $(XOS) design.xclbin host.exe *.log _x .Xil
"""


def _readme(kernels: list[RtlKernel], board: Board) -> str:
    rows = []
    for k in kernels:
        for a in k.args:
            where = f"0x{a.offset:02x}" if a.kind != "stream" else "stream"
            rows.append(f"| {k.name} | {a.id} | `{a.name}` | {a.kind} | {where} | `{a.port}` |")
    return ("# Vitis build from RTL kernels (board " + comment(board.name) + ")\n\n"
            "Generated by `bbgrap-hls gen --kernels rtl`: every core is the RTL twin's SystemVerilog as an\n"
            "XRT-managed RTL kernel (ap_ctrl_hs). `make xo` packages them with Vivado (`package_core<k>.tcl`,\n"
            "sources in `../rtl_kernel/`), `make xclbin` links them with `link.cfg` (the same connectivity as\n"
            "the HLS kernels), `make host` builds `../host/host.cpp`, which drives either kind of kernel.\n\n"
            "Each run (ap_start) processes `frames` frames; ap_done follows the last output beat. Registers:\n"
            "0x00 control, 0x04 GIE, 0x08 IER, 0x0C ISR, arguments from 0x10:\n\n"
            "| kernel | id | argument | kind | offset | port |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\n"
            "Not run through Vivado or v++ by bbgrap-hls: the kernels are simulated with Verilator through\n"
            "their control and memory ports (`rtl_kernel/platform.sv`).\n")


def _closure(modules: set[str]) -> list[str]:
    """``modules`` and every ``hw/rtl`` module they instantiate, transitively."""
    import re

    from bbgrap_hls.simtools import rtl_dir

    texts = {p.stem: p.read_text() for p in rtl_dir().glob("*.sv")}
    todo, seen = [m for m in modules if m in texts], set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [n for n in texts if n != m and re.search(rf"^\s*{n}\s*(#|\w+\s*\()", texts[m], re.M)]
    return sorted(seen)


def render_vitis_rtl(design: Design, g: Graph, plan: Plan, board: Board) -> dict[str, str]:
    """``{relative path: text}`` of ``rtl_kernel/`` and the RTL kernel ``vitis/`` files.

    Raises:
        UnsupportedError: the RTL twin lacks a block of the design, or the board has several
            cards (not supported with RTL kernels yet).
    """
    from bbgrap_hls.codegen.emit import environment
    from bbgrap_hls.codegen.rtl import core_module
    from bbgrap_hls.search.problem import offchip_memory
    from bbgrap_hls.simtools import rtl_dir

    if design_cards(design, board, plan):
        raise UnsupportedError("--kernels rtl: boards of several cards are not supported yet (use --kernels hls)")
    env = environment()
    memory = offchip_memory(board)
    files: dict[str, str] = {}
    kernels: list[RtlKernel] = []
    used = set(CTRL_MODULES)
    for cd in design.cores:
        mems: dict[str, str] = {}
        mod = core_module(cd, g, plan, mems, memory)
        mod.name = f"{cd.name}_dp"
        mod.note = f"datapath of RTL kernel {cd.name}: " + mod.note
        used |= {i.module for i in mod.insts}
        k = kernel_spec(cd, memory[2] if memory else None)
        kernels.append(k)
        if mod.offchip and memory[2] > 64:  # the twin's image then differs from the host's (64-byte bases)
            raise UnsupportedError(f"--kernels rtl: {cd.name} reads off-chip weights in {memory[2]}-byte beats; "
                                   "the host's weight image is laid out for beats of at most 64 bytes")
        if mod.axi_rw:
            raise UnsupportedError(f"--kernels rtl: {cd.name} has a DDR frame stage (a layer's in_stage, or a "
                                   "FIFO in board memory); the RTL kernels do not wire its read-write master to "
                                   "a kernel argument yet (use --kernels hls, or plan with --no-ddr-stages and "
                                   "without --ddr-fifos)")
        dp_axi = {f"wddr_{o['layer']}": o["port"] for o in mod.offchip}
        elems = {p.name: p.elems for p in cd.ports}
        d = f"rtl_kernel/{cd.name}"
        files[f"{d}/{cd.name}_dp.sv"] = env.get_template("rtl/core.sv.j2").render(m=mod)
        files[f"{d}/{cd.name}.sv"] = kernel_top(cd, k, dp_axi, elems)
        files[f"{d}/kernel.xml"] = kernel_xml(k)
        for name, text in sorted(mems.items()):
            if not name.endswith(".hex"):  # the off-chip weight image comes from the host's buffer
                files[f"{d}/{name}"] = text
    lib = _closure(used)
    for m in lib:
        files[f"rtl_kernel/lib/{m}.sv"] = (rtl_dir() / f"{m}.sv").read_text()
    files["rtl_kernel/platform.sv"] = platform_top(design, kernels)
    part = board.part or PLACEHOLDER_PART
    for k in kernels:
        own = sorted(p.split("/", 2)[2] for p in files if p.startswith(f"rtl_kernel/{k.name}/"))
        srcs = [f"lib/{m}.sv" for m in lib] + [f"{k.name}/{f}" for f in own if f.endswith(".sv")]
        mem_files = [f"{k.name}/{f}" for f in own if not f.endswith((".sv", ".xml"))]
        files[f"vitis/package_{k.name}.tcl"] = package_tcl(k, srcs, mem_files, part)
    lc = link_config(design, board, plan)
    files["vitis/link.cfg"] = env.get_template("vitis/link.cfg.j2").render(link=lc, board=board)
    files["vitis/Makefile"] = _makefile(kernels, board, board.platform or PLACEHOLDER_PLATFORM, part)
    files["vitis/README.md"] = _readme(kernels, board)
    spec = {"kernels": [asdict(k) for k in kernels], "burst": BURST,
            "links": [{"ident": i, "lanes": ln, "src": f"core{a}", "dst": f"core{b}", "src_port": po, "dst_port": pi,
                       "depth": link_depth(ln)} for i, (ln, a, b, po, pi) in sorted(design.links.items())],
            "sources": [f"lib/{m}.sv" for m in lib] + sorted(p[len("rtl_kernel/"):] for p in files
                                                              if p.startswith("rtl_kernel/core") and p.endswith(".sv"))
            + ["platform.sv"],
            "mem_files": sorted(p[len("rtl_kernel/"):] for p in files if p.startswith("rtl_kernel/core")
                                and not p.endswith((".sv", ".xml")))}
    files["rtl_kernel/kernels.json"] = json.dumps(spec, indent=2, sort_keys=True) + "\n"
    return files


def rtl_kernel_files(design: Design, g: Graph, plan: Plan, board: Board, hls_files: dict[str, bytes]) -> dict[str, bytes]:
    """``hls_files`` (what gen writes for HLS kernels) with the ``vitis/`` HLS build files
    replaced by the RTL kernels' and ``rtl_kernel/`` added."""
    files = {k: v for k, v in hls_files.items() if not k.startswith("vitis/")}
    files.update({k: v.encode() for k, v in render_vitis_rtl(design, g, plan, board).items()})
    return files
