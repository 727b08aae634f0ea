"""``bbgrap-hls inspect MODEL [--json]``: ops, shapes, MACs, parameters, host and unsupported ops.

The listing is of the canonical graph (what the planner sees), or of the loaded graph
with ``--loaded``. A model with unsupported ops is still listed as far as it loads;
the command then exits 2 with the one-line refusal naming every unsupported op type.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bbgrap_hls.commands.common import add_model_args
from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph
from bbgrap_hls.ops import get_op


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("inspect", help="ops, shapes, MACs and parameters of a model; what is unsupported")
    add_model_args(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--loaded", action="store_true", help="list the graph as loaded, before canonicalisation")
    return p


def summarize(graph: Graph, unsupported: dict[str, str] | None = None, canonical: bool = False) -> dict[str, Any]:
    """The facts `inspect` prints, as a JSON-ready dict.

    Keys: ``model``, ``opset``, ``canonical``, ``inputs``/``outputs`` (name and shape),
    ``nodes`` (``name``, ``op``, ``inputs``, ``outputs``, ``shape`` of the first output,
    ``macs``, ``params``, ``host``), totals ``macs`` and ``params`` (ints), ``host_ops``
    (node names) and ``unsupported`` (``op`` and first ``node`` of each unsupported type).
    """
    nodes = []
    for n in graph.nodes:
        op = get_op(n.op)
        nodes.append({
            "name": n.name, "op": n.op, "inputs": [i for i in n.inputs if i], "outputs": list(n.outputs),
            "shape": list(graph.shape(n.outputs[0])), "macs": int(op.macs(n, graph)),
            "params": int(op.params(n, graph)), "host": bool(n.host),
        })
    return {
        "model": graph.name, "opset": graph.opset, "canonical": canonical,
        "inputs": [{"name": i, "shape": list(graph.shape(i))} for i in graph.inputs],
        "outputs": [{"name": o, "shape": list(graph.shape(o))} for o in graph.outputs if o in graph.tensors],
        "nodes": nodes,
        "macs": sum(n["macs"] for n in nodes),
        "params": sum(n["params"] for n in nodes),
        "host_ops": [n["name"] for n in nodes if n["host"]],
        "unsupported": [{"op": t, "node": nd} for t, nd in sorted((unsupported or {}).items())],
    }


def _dims(shape: list[int]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


def format_table(info: dict[str, Any]) -> str:
    """The readable listing: one row per node, then totals, host and unsupported ops."""
    stage = "canonical graph" if info["canonical"] else "loaded graph"
    ios = "; ".join(f"{k} " + ", ".join(f"{t['name']} {_dims(t['shape'])}" for t in info[k])
                    for k in ("inputs", "outputs") if info[k])
    lines = [f"model {info['model']} (opset {info['opset']}, {stage}): {ios}", ""]
    rows = [("node", "op", "output", "MACs", "params")]
    for n in info["nodes"]:
        rows.append((n["name"], n["op"] + (" [host]" if n["host"] else ""), _dims(n["shape"]),
                     f"{n['macs']:,}", f"{n['params']:,}"))
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if k < 3 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    lines += ["", f"total: {info['macs']:,} MACs, {info['params']:,} parameters, {len(info['nodes'])} nodes"]
    host = [n for n in info["nodes"] if n["host"]]
    lines.append("host ops: " + (", ".join(f"{n['name']} ({n['op']})" for n in host) or "none"))
    if info["unsupported"]:
        lines.append("unsupported: " + ", ".join(f"{u['op']} (first at node '{u['node']}')"
                                                 for u in info["unsupported"]))
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from bbgrap_hls.frontend import load_partial, parse_input_shapes, unsupported_message

    graph, unsupported = load_partial(args.model, parse_input_shapes(args.input_shape))
    canonical = False
    if not unsupported and not args.loaded:
        try:
            from bbgrap_hls.passes import canonicalize
        except ImportError:  # canonicalisation not built: list the loaded graph
            canonicalize = None
        if canonicalize is not None:
            graph, canonical = canonicalize(graph), True
    info = summarize(graph, unsupported, canonical)
    sys.stdout.write(json.dumps(info, indent=1) + "\n" if args.json else format_table(info))
    sys.stdout.flush()
    if unsupported:
        raise UnsupportedError(unsupported_message(args.model, unsupported))
    return 0
