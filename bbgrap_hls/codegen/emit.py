"""Render a `Design` into files (Jinja2 templates with StrictUndefined).

Templates hold whole files; every value is computed here. File names are generated
(``core<k>``, ``layer<n>``); model text reaches the files only through `names.comment`.
"""

from __future__ import annotations

from importlib import resources

import jinja2

from bbgrap_hls.codegen import weights
from bbgrap_hls.codegen.names import comment
from bbgrap_hls.codegen.ports import DDR_IMAGE_KINDS, CoreDesign, Design, Port, core_ports, mem_bytes
from bbgrap_hls.codegen.weights import DDR_BEAT, ddr_image_bytes
from bbgrap_hls.ir import Graph

#: the burst options of the activation movers' m_axi ports (one direction each), as the
#: off-chip weight ports': 64-beat (4 KiB) bursts, 16 outstanding
MEM_BURST = {"mem_in": "max_read_burst_length = 64 num_read_outstanding = 16",
             "mem_out": "max_write_burst_length = 64 num_write_outstanding = 16"}


def environment() -> jinja2.Environment:
    """The template environment (package data ``bbgrap_hls.templates``)."""
    root = resources.files("bbgrap_hls.templates")
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(root)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=False, autoescape=False)


def signature(core: CoreDesign) -> str:
    """The C++ parameter list of a core's top function."""
    return ", ".join(_params(core_ports(core)) + ["int frames"])

def mem_pointer(p: Port) -> str | None:
    """The C++ type of a memory port's argument (the top function's, the testbench's and the
    host stand-in's casts); None for a stream or a scalar."""
    if p.kind == "mem_w":
        return "const int8_t*"
    if p.kind in ("mem_in", "mem_w_ddr"):
        return "const bb::Word<bb::DDR_BEAT>*"
    if p.kind == "mem_out":
        return "bb::Word<bb::DDR_BEAT>*"
    if p.kind == "mem_stage_w":  # scratch of a DDR frame stage or FIFO: written (the writer), read (the reader)
        return f"bb::Word<{p.lanes}>*"
    if p.kind == "mem_stage_r":
        return f"const bb::Word<{p.lanes}>*"
    return None



def _params(ports) -> list[str]:
    args = []
    for p in ports:
        ptr = mem_pointer(p)
        if ptr is not None:
            args.append(f"{ptr} {p.name}")
        elif p.kind == "load":
            args.append(f"int {p.name}")
        else:
            args.append(f"bb::Stream<{p.lanes}>& {p.name}")
    return args


def tb_args(core: CoreDesign) -> str:
    """Arguments of a core call in the testbench: the design-level arrays and links.

    The testbench loads the URAM weights on its (only) call: ``load_weights = 1``; every
    off-chip weight port and every DDR frame stage's scratch port gets the core's off-chip
    image.
    """
    out = []
    for p in core_ports(core):
        ptr = mem_pointer(p)
        if p.kind == "load":
            out.append("1")
        elif ptr is not None and p.kind != "mem_w":  # (the URAM image: int8 already)
            out.append(f"reinterpret_cast<{ptr}>({p.link}.data())")
        else:
            out.append(f"{p.link}.data()" if p.kind.startswith("mem") else p.link)
    return ", ".join(out + ["frames"])


def stream_beats(core: CoreDesign) -> dict[str, int]:
    """Beats per frame of each stream a core's region names (its elements / its lanes): its
    local streams and its AXI-Stream ports, for the threaded csim's dataflow rule check
    (``BB_FIFO_BEATS``, hw/hls/bb_dataflow.h)."""
    out = {name: core.elems[name] // lanes for name, (lanes, _) in core.streams.items() if name in core.elems}
    out.update({p.name: p.elems // p.lanes for p in core.ports if p.kind.startswith("axis")})
    return out


def _weights_ctx(core: CoreDesign) -> dict:
    """Template values of a core's weight memories (codegen/weights.py)."""
    rom = [sp for lay in core.layers if lay.wmem is not None and not lay.wmem.uram and not lay.wmem.ddr
           for sp in weights.pragmas(lay.ident, lay.wmem)]
    ddr = [p for p in core_ports(core) if p.kind == "mem_w_ddr"]
    stage = [p for p in core_ports(core) if p.kind in ("mem_stage_w", "mem_stage_r")]
    _, parts = weights.image(core.layers)
    by_ident = {lay.ident: lay for lay in core.layers}
    uram = [dict(ident=pt.ident, lanes=pt.lanes, depth=pt.depth, offset=pt.offset,
                 decl=weights.uram_decl(pt.ident, by_ident[pt.ident].wmem),
                 ctype=by_ident[pt.ident].wmem.ctype(),
                 load="load_halves" if by_ident[pt.ident].wmem.halves else "load_words",
                 pragmas=weights.pragmas(pt.ident, by_ident[pt.ident].wmem)) for pt in parts]
    body = _params(core.ports + ddr + stage) + [f"const {m['ctype'][0]} {m['ident']}_w[{m['ctype'][1]}]"
                                                 for m in uram]
    args = [p.name for p in core.ports + ddr + stage] + [f"{m['ident']}_w" for m in uram]
    return dict(rom_pragmas=rom, uram=uram, nbytes=sum(m["lanes"] * m["depth"] for m in uram), ddr_ports=ddr,
                stage_ports=stage, stages=sum(1 for lay in core.layers if lay.in_stage),
                ddr_image=ddr_image_bytes(core.layers, core.ddr_fifos),
                ddr_file=weights.ddr_image_file(core.name),
                image_file=weights.image_file(core.name), body_signature=", ".join(body + ["int frames"]),
                body_args=", ".join(args + ["frames"]))


def render_hls(design: Design, g: Graph, plan_core_names: dict[int, str]) -> dict[str, str]:
    """``{relative path: text}`` of the HLS sources and the testbench."""
    env = environment()
    files: dict[str, str] = {}
    for core in design.cores:
        comments = {lay.ident: comment(lay.node) for lay in core.layers}
        cname = comment(plan_core_names.get(core.id, core.name))
        for lay in core.layers:
            files[f"hls/{lay.ident}.h"] = env.get_template("hls/layer.h.j2").render(
                layer=lay, node_comment=comments[lay.ident])
        ctx = dict(core=core, core_name=cname, signature=signature(core), comments=comments,
                   streams=sorted(core.streams.items(), key=lambda kv: _num(kv[0])),
                   fifo_impl=core.fifo_impl, beats=stream_beats(core), **_weights_ctx(core),
                   mem_depth={p.name: mem_bytes(p.elems, design.frames) // DDR_BEAT for p in core.ports},
                   mem_burst=MEM_BURST)
        files[f"hls/{core.name}.h"] = env.get_template("hls/core.h.j2").render(**ctx)
        files[f"hls/{core.name}.cpp"] = env.get_template("hls/core.cpp.j2").render(**ctx)
    # (buffer, bytes, file, what) of every weight image: URAM images and off-chip images
    wts = [(p.link, p.elems, weights.image_file(c.name), f"URAM weight image of {c.name}")
           for c in design.cores for p in core_ports(c) if p.kind == "mem_w"]
    wts += [(f"wddr_{c.name}", ps[0].elems, weights.ddr_image_file(c.name), f"off-chip weight image of {c.name}")
            for c in design.cores for ps in [[p for p in core_ports(c) if p.kind in DDR_IMAGE_KINDS]] if ps]
    files["tb/tb.cpp"] = env.get_template("tb/tb.cpp.j2").render(
        design=design, buffers=sorted(design.buffers.items()), links=sorted(design.links.items()),
        tb_args={c.name: tb_args(c) for c in design.cores}, weight_images=wts)
    return files


def weight_images(design: Design) -> dict[str, bytes]:
    """``{hls/weights_core<k>.bin: bytes}`` for every core with URAM weights and
    ``{hls/ddr_weights_core<k>.bin: bytes}`` for every core with off-chip weights or FIFOs in
    board memory (their rings are scratch of that image)."""
    out = {}
    for c in design.cores:
        data, parts = weights.image(c.layers)
        if parts:
            out[f"hls/{weights.image_file(c.name)}"] = data
        data, parts = weights.ddr_image(c.layers, c.ddr_fifos)
        if parts or c.ddr_fifos:
            out[f"hls/{weights.ddr_image_file(c.name)}"] = data
    return out


def _num(name: str) -> tuple[str, int]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789"), int(digits or 0))
