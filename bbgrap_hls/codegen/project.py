"""The whole output folder of ``gen`` as ``{relative path: bytes}`` (deterministic)."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import numpy as np

from bbgrap_hls.board import Board
from bbgrap_hls.codegen.design import build_design
from bbgrap_hls.codegen.emit import render_hls, weight_images
from bbgrap_hls.codegen.host import host_spec, render_host
from bbgrap_hls.codegen.ports import Design
from bbgrap_hls.codegen.vectors import golden, vectors
from bbgrap_hls.codegen.vitis import core_cards, render_vitis
from bbgrap_hls.ir import Graph
from bbgrap_hls.plan import Plan


def kernel_headers() -> dict[str, bytes]:
    """The kernel library (``hw/hls/*.h``) copied into ``hls/``."""
    root = resources.files("bbgrap_hls.hw") / "hls"
    return {f"hls/{p.name}": p.read_bytes() for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".h")}


def host_static() -> dict[str, bytes]:
    """``host/driver.py``, ``host/host_ops.py`` and the XRT stand-in headers (``host/xrt_sim/xrt/*.h``)."""
    host = resources.files("bbgrap_hls.templates") / "host"
    out = {"host/driver.py": (host / "driver.py").read_bytes(), "host/host_ops.py": (host / "host_ops.py").read_bytes()}
    root = resources.files("bbgrap_hls.hw") / "hls" / "xrt_sim" / "xrt"
    for p in sorted(root.iterdir(), key=lambda p: p.name):
        if p.name.endswith(".h"):
            out[f"host/xrt_sim/xrt/{p.name}"] = p.read_bytes()
    return out


def generate(g: Graph, plan: Plan, board: Board, feeds: dict[str, np.ndarray]) -> tuple[dict[str, bytes], Design]:
    """Files of hls/, tb/, host/ and vitis/ for ``plan``.

    Args:
        g: the int8 graph (`bbgrap_hls.quant.quantize`).
        plan: the plan made on the canonical graph.
        board: the board the plan is for.
        feeds: float input arrays (the seed input) for the test vectors.
    """
    if plan.input_blocks != g.input_blocks:
        raise ValueError(f"the plan holds inputs {plan.input_blocks} as pixel blocks, the graph {g.input_blocks}: "
                         "quantise passes.stem.as_planned(graph, plan.input_blocks)")
    frames = int(g.shape(g.inputs[0])[0])
    design = build_design(g, plan, frames)
    files = {k: v.encode() for k, v in render_hls(design, g, {c.id: c.name for c in board.cores}).items()}
    files.update(kernel_headers())
    files.update(weight_images(design))  # hls/weights_core<k>.bin: URAM weights, loaded at run time
    spec = host_spec(design, g, core_cards(design, board))
    files.update({k: v.encode() for k, v in render_host(spec, design).items()})
    files.update(host_static())
    files.update({k: v.encode() for k, v in render_vitis(design, board, plan).items()})
    from bbgrap_hls.codegen.rtl import rtl_files  # the RTL twin: rtl/ and tb/rtl.json

    files.update(rtl_files(design, g, plan, board))
    env = golden(g, feeds)
    for name, data in vectors(design, env).items():
        files[f"tb/{name}"] = data
    meta = {"frames": frames,
            "inputs": [{"tensor": t, "ident": i, "elems": n, "shape": list(g.shape(t))} for t, i, n in design.inputs],
            "outputs": [{"tensor": t, "ident": i, "elems": n, "shape": list(g.shape(t))} for t, i, n in design.outputs],
            "cores": [c.name for c in design.cores]}
    files["tb/vectors.json"] = (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode()
    return files, design


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
