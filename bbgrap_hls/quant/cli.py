"""The int8 branch of ``bbgrap-hls run`` (``--int8 --calib --raw --compare``).

``run.py`` loads and canonicalises the model and reads the inputs, then calls
`run_int8_branch`; this module owns what happens after: QDQ scheme check, calibration,
quantisation, the integer reference, and the ``--compare`` table.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from bbgrap_hls.ir import Graph
from bbgrap_hls.quant.calib import load_calibration
from bbgrap_hls.quant.execute import compare, dequantize_outputs, run_int8
from bbgrap_hls.quant.qdq import check_qdq_model
from bbgrap_hls.quant.quantizer import quantize
from bbgrap_hls.quant.split import rescale_concat_inputs
from bbgrap_hls.reference import run_float


def run_int8_branch(args: argparse.Namespace, graph: Graph, feeds: dict[str, np.ndarray],
                    out=None) -> dict[str, np.ndarray]:
    """Quantise ``graph`` (canonical) and run the integer reference on ``feeds``.

    Args:
        args: parsed ``run`` arguments (``model``, ``calib``, ``raw``, ``compare``).
        graph: the canonical float (or QDQ) graph.
        feeds: input name -> array (float, or int8 raw codes).
        out: where the ``--compare`` table goes (default stdout).

    Returns:
        Output name -> array: dequantised float32, or the raw int8 codes with ``--raw``
        (outputs of host ops are float either way).
    """
    check_qdq_model(args.model)
    calib = load_calibration(args.calib, graph) if getattr(args, "calib", None) else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        qgraph = quantize(rescale_concat_inputs(graph, calib), calib)
    for w in caught:
        print(f"bbgrap-hls run: warning: {w.message}", file=sys.stderr)
    raw = run_int8(qgraph, feeds)
    deq = dequantize_outputs(qgraph, raw)
    if getattr(args, "compare", False):
        ref = run_float(graph, {k: v for k, v in feeds.items()})
        print(format_compare({name: compare(ref[name], deq[name]) for name in qgraph.outputs}),
              file=out or sys.stdout)
    return raw if getattr(args, "raw", False) else deq


def format_compare(stats: dict[str, dict[str, float]]) -> str:
    """A table of `compare` figures, one row per output."""
    lines = [f"{'output':24s} {'cosine':>9s} {'SQNR dB':>8s} {'max abs err':>12s} {'top-1':>6s}"]
    for name, s in stats.items():
        top = f"{s['top1']:.3f}" if "top1" in s else "-"
        lines.append(f"{name[:24]:24s} {s['cosine']:9.6f} {s['sqnr_db']:8.2f} {s['max_abs_err']:12.6g} {top:>6s}")
    return "\n".join(lines)
