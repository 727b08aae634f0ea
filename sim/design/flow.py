"""Small multi-core designs for the design-level RTL tests and the sim benchmark.

`small_design` writes what ``bbgrap-hls gen`` writes (through `codegen.project.generate`)
for a test model on a bundled board, with the plan of the ``even`` baseline (equal layer
counts per core along the core path, so residuals cross cores) but every block folded to
at most ``par`` lanes: the bundled boards' budgets would otherwise fold blocks hundreds of
lanes wide, and a Verilator build of that takes minutes. The plan is rebuilt by the
planner's own `build_plan`, so its predicted ii and latency are the cost model's for the
folding simulated.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx

from bbgrap_hls.board import load_board
from bbgrap_hls.codegen.project import generate
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model.kinds import PARALLEL_WINDOW_LANES
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.plan import Plan
from bbgrap_hls.quant.quantizer import quantize
from bbgrap_hls.search.build import build_plan
from bbgrap_hls.search.dp import Segmentation
from bbgrap_hls.search.problem import DSP_PACKING, LUT_MACS, build_problem
from bbgrap_hls.search.strategies import _uniform, even


def _widest_window(prob, u: int, fold: int, cap: int) -> int:
    """The folding of unit ``u`` with ``fold``'s pe and the widest simd ≤ ``cap`` (a parallel
    window where the table has one: conv ``simd = C·j``, depthwise conv and window pools
    ``simd = pe·j``)."""
    t = prob.units[u].table
    if prob.units[u].kind != "conv" and prob.units[u].kind not in PARALLEL_WINDOW_LANES:
        return fold
    ok = np.nonzero((t.pe == t.pe[fold]) & (t.simd <= cap) & (t.uram == t.uram[fold])
                    & (t.mmv == t.mmv[fold]) & (t.dense == t.dense[fold]) & (t.wide == t.wide[fold]))[0]
    # (the same pixel copies, one: `_uniform`; a grouped conv computed as the fold's is)
    return int(max(ok, key=lambda i: (int(t.simd[i]), -i))) if len(ok) else fold


def small_plan(graph, board, par: int, parallel_window: bool = False, dsp_packing: bool = DSP_PACKING,
               lut_macs: bool = LUT_MACS) -> Plan:
    """The ``even`` plan's core assignment with every unit at its folding for parallelism ``par``.

    With ``parallel_window`` a conv, depthwise conv or window pool takes the widest simd up
    to ``4·par`` at the same pe, so that small-channel convs get several window taps per beat;
    ``dsp_packing`` as the planner's (conv/dense with pe >= 2 pack lane pairs per DSP);
    ``lut_macs=False`` keeps every product in DSPs.
    """
    prob = build_problem(graph, board, parallel_window=parallel_window, dsp_packing=dsp_packing,
                         lut_macs=lut_macs)
    seg = even(prob)
    folds = [_uniform(prob, u, par) for u in range(prob.m)]
    if parallel_window:
        folds = [_widest_window(prob, u, f, 4 * par) for u, f in enumerate(folds)]
    return build_plan(prob, Segmentation(core=seg.core, fold=folds), "even", "throughput")


def small_design(model: onnx.ModelProto, board: str, out: Path, par: int = 4, seed: int = 0,
                 parallel_window: bool = False, dsp_packing: bool = DSP_PACKING,
                 lut_macs: bool = LUT_MACS) -> Plan:
    """Write a gen folder for ``model`` on ``board`` into ``out`` (see module docstring;
    ``parallel_window``, ``dsp_packing`` and ``lut_macs`` as `small_plan`)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "m.onnx"
        onnx.save(model, p)
        graph = canonicalize(load_model(str(p)))
    b = load_board(board)
    kw = {"parallel_window": True} if parallel_window else {}
    if dsp_packing != DSP_PACKING:
        kw["dsp_packing"] = dsp_packing
    if lut_macs != LUT_MACS:
        kw["lut_macs"] = lut_macs
    plan = small_plan(graph, b, par, **kw)
    write_design(model, graph, b, plan, out, seed)
    return plan


def write_design(model: onnx.ModelProto, graph, board, plan: Plan, out: Path, seed: int = 0):
    """Write the gen folder of ``model`` (canonical graph ``graph``) on ``board`` (a `Board`)
    with ``plan`` into ``out``, as `small_design` does (seeded synthetic calibration and
    input, plan.json, the manifest `sim --input` reads); returns gen's `Design`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # synthetic calibration
        gq = quantize(graph, None, seed=seed)
    rng = np.random.default_rng(seed)
    feeds = {t: rng.standard_normal(graph.shape(t)).astype(np.float32) for t in graph.inputs}
    files, design = generate(gq, plan, board, feeds)
    files["plan.json"] = plan.to_json(stable=True).encode()
    # what `sim --input` / `csim --input` read to recompute the reference for another input
    (out / "model").mkdir(parents=True, exist_ok=True)
    onnx.save(model, out / "model" / "m.onnx")
    opts = {"model_path": str(out / "model" / "m.onnx"), "input_shape": [], "seed": seed, "calib_path": None}
    files["manifest.json"] = json.dumps({"options": opts}).encode()
    for rel, data in files.items():
        f = out / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    return design
