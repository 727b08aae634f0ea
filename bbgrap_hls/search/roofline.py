"""The roofline of a plan: the frames per second physics allows it, and which limit binds.

Three bounds (docs/plan.md, "Roofline"), each in frames per second at the board clock:

- ``compute``: the DSP limits of the cores on the path times the clock over the fabric's
  MACs per frame, at one int8 MAC per DSP per cycle, two with DSP packing (``dsp_packing``:
  two output lanes per DSP48E2), plus, with LUT multipliers (``lut_macs``), one MAC per
  cycle for every `LUT_MUL` + `LUT_PER_MAC` LUTs of the cores' LUT limits (what a LUT MAC
  lane costs: its product and its adder-tree share; nothing else counted against LUTs);
- ``memory``: the cores' shares of their board memories (bytes per cycle, `Board.offchip_share`)
  times the clock over the bytes the plan reads from them per frame (off-chip weights);
  absent when the plan reads nothing off chip;
- ``input``: the host link's bandwidth over the input bytes per frame (int8).

The least of them is the roofline; ``fraction`` is the plan's fps over it.
"""

from __future__ import annotations

import math

from bbgrap_hls.model.blocks import LUT_MUL, LUT_PER_MAC
from bbgrap_hls.ops import get_op
from bbgrap_hls.plan import Plan
from bbgrap_hls.search.problem import Problem


def roofline(prob: Problem, plan: Plan) -> dict:
    """``{compute_fps, memory_fps, input_fps, binds, roofline_fps, fraction}`` of ``plan``
    (``memory_fps`` None when nothing is read off chip)."""
    board, graph = prob.board, prob.graph
    clock = board.clock_mhz * 1e6
    macs = sum(int(get_op(n.op).macs(n, graph)) for n in graph.nodes if not n.host)
    dsp = sum(board.cores[k].dsp_limit for k in prob.core_path)
    lanes = dsp * (2 if prob.dsp_packing else 1)
    if prob.lut_macs:
        lanes += sum(board.cores[k].lut_limit for k in prob.core_path) // (LUT_MUL + LUT_PER_MAC)
    bounds: dict[str, float | None] = {
        "compute": clock * lanes / macs if macs else math.inf,
        "memory": None,
        "input": math.inf,
    }
    offchip = sum(c.offchip_bytes_per_frame for c in plan.cores)
    if offchip:
        share = sum(board.offchip_share(k) for k in prob.core_path if any(
            c.id == k and c.offchip_bytes_per_frame for c in plan.cores))
        bounds["memory"] = clock * share / offchip
    in_bytes = sum(math.prod(graph.shape(t)) for t in graph.inputs)
    if in_bytes:
        bounds["input"] = board.host.bandwidth_gbps * 1e9 / in_bytes
    known = {k: v for k, v in bounds.items() if v is not None and math.isfinite(v)}
    if not known:
        return {}
    binds = min(known, key=lambda k: known[k])
    top = known[binds]
    return {  # None where a bound does not apply (plan.json has no infinities)
        "compute_fps": known.get("compute"), "memory_fps": known.get("memory"), "input_fps": known.get("input"),
        "binds": binds, "roofline_fps": top, "fraction": plan.fps / top,
    }
