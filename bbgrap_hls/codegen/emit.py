"""Render a `Design` into files (Jinja2 templates with StrictUndefined).

Templates hold whole files; every value is computed here. File names are generated
(``core<k>``, ``layer<n>``); model text reaches the files only through `names.comment`.
"""

from __future__ import annotations

from importlib import resources

import jinja2

from bbgrap_hls.codegen.design import CoreDesign, Design
from bbgrap_hls.codegen.layers import storage_pragma
from bbgrap_hls.codegen.names import comment
from bbgrap_hls.ir import Graph


def environment() -> jinja2.Environment:
    """The template environment (package data ``bbgrap_hls.templates``)."""
    root = resources.files("bbgrap_hls.templates")
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(root)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=False, autoescape=False)


def signature(core: CoreDesign) -> str:
    """The C++ parameter list of a core's top function."""
    args = []
    for p in core.ports:
        if p.kind == "mem_in":
            args.append(f"const int8_t* {p.name}")
        elif p.kind == "mem_out":
            args.append(f"int8_t* {p.name}")
        else:
            args.append(f"bb::Stream<{p.lanes}>& {p.name}")
    return ", ".join(args + ["int frames"])


def tb_args(core: CoreDesign) -> str:
    """Arguments of a core call in the testbench: the design-level arrays and links."""
    out = []
    for p in core.ports:
        out.append(f"{p.link}.data()" if p.kind.startswith("mem") else p.link)
    return ", ".join(out + ["frames"])


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
        storage = [sp for sp in (storage_pragma(lay) for lay in core.layers) if sp]
        ctx = dict(core=core, core_name=cname, signature=signature(core), comments=comments, storage=storage,
                   streams=sorted(core.streams.items(), key=lambda kv: _num(kv[0])))
        files[f"hls/{core.name}.h"] = env.get_template("hls/core.h.j2").render(**ctx)
        files[f"hls/{core.name}.cpp"] = env.get_template("hls/core.cpp.j2").render(**ctx)
    files["tb/tb.cpp"] = env.get_template("tb/tb.cpp.j2").render(
        design=design, buffers=sorted(design.buffers.items()), links=sorted(design.links.items()),
        tb_args={c.name: tb_args(c) for c in design.cores})
    return files


def _num(name: str) -> tuple[str, int]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789"), int(digits or 0))
