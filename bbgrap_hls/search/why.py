"""Why the design ii is what it is: one sentence about the bottleneck, for the user.

A plan's ii is set by its slowest block or link. The user's next question is what stops it
going faster; `bottleneck_note` answers from the cost tables the search used:

- a link: its width against the bits per frame that cross it;
- a block already at its fastest folding: that ii is the block's floor on any board;
- a block whose next faster folding does not fit one core: which resource, by how much;
- otherwise the core is full: what the next faster folding needs against what the core
  has free for it (the other blocks on the core use the rest).
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.plan import Plan
from bbgrap_hls.search.problem import BW_CYCLES, RES, Problem, Table

_NAMES = {"dsp": "DSP", "bram18": "BRAM18", "uram": "URAM", "lut": "LUT",
          "bw": "bytes per 1,024 cycles of memory bandwidth"}


def _own(x) -> np.ndarray:
    """A node's or split part's resources in `RES` order (its bandwidth at its own ii)."""
    bw = -(-BW_CYCLES * x.offchip_bytes_per_frame // max(1, x.ii_cycles))
    return np.array([x.dsp, x.bram18, x.uram, x.lut, bw], dtype=np.int64)


def _used(cp) -> np.ndarray:
    return np.array([cp.dsp, cp.bram18, cp.uram, cp.lut, cp.bw], dtype=np.int64)


def _limit(cp) -> np.ndarray:
    return np.array([cp.dsp_limit, cp.bram18_limit, cp.uram_limit, cp.lut_limit, cp.bw_limit], dtype=np.int64)


def bottleneck_note(prob: Problem, plan: Plan) -> str:
    """One sentence on what keeps ``plan.ii_cycles`` from going lower (empty if unknown).

    Several blocks may sit at the design ii; the sentence is about the one that binds
    hardest: a floor first, then a folding too big for one core, then a full core.
    """
    if plan.bottleneck.startswith("link:"):
        return _link_note(prob, plan)
    at_ii = [n.name for n in plan.nodes if n.ii_cycles == plan.ii_cycles and n.block not in ("host", "fused")]
    notes = sorted((_block_note(prob, plan, name) for name in at_ii or [plan.bottleneck]),
                   key=lambda x: x[0])
    if not notes:
        return ""
    if notes[0][0] >= 3:
        if plan.strategy in ("even", "greedy"):
            return (f"{len(at_ii)} block(s) at this ii could fold faster within their cores' room; "
                    f"the {plan.strategy} baseline does not use it")
        return _together_note(prob, plan, at_ii)
    more = f" ({len(at_ii)} blocks run at this ii)" if len(at_ii) > 1 else ""
    return notes[0][1] + more


def _next_faster(table: Table, rows, inv: np.ndarray) -> int:
    """Of ``rows``, the next faster folding: the largest ii, then the least resources."""
    return min(rows, key=lambda f: (-int(table.ii[f]), float(table.res[f] @ inv)))


def _link_note(prob: Problem, plan: Plan) -> str:
    a, c = (int(x) for x in plan.bottleneck[5:].split("-"))
    w = prob.link_width(a, c) or 0
    return (f"the link core {a} -> core {c} ({w} bits/cycle) is the bottleneck: a wider link, or a "
            "partition that cuts the model where less data crosses, would be faster")


def _block_note(prob: Problem, plan: Plan, b: str) -> tuple[int, str]:
    """(rank, sentence): 0 floor, 1 too big for one core, 2 core full or a split's gather,
    3 nothing binds."""
    unit = next((u for u in prob.units if u.node.name == b), None)
    if unit is None:
        return 3, ""
    node = plan.node(b)
    parts = node.split or []
    sizes = [p.co_end - p.co_begin for p in parts]
    slow = 0
    if len(set(sizes)) > 1:  # an uneven split: the part that sets the ii
        slow = max(range(len(parts)), key=lambda p: parts[p].ii_cycles)
        table = unit.part_tables[sizes[slow]]
    else:
        table = unit.split_tables[len(parts)] if parts else unit.table
    cur = node.ii_cycles
    faster = np.nonzero(table.ii < cur)[0]
    copies = (f", mmv={node.mmv}" if node.mmv > 1 else "") + _pairs_text(node.px, node.po)
    what = (f"{b} ({unit.node.op}, pe={node.pe}, simd={node.simd}{copies}"
            f"{f', split over {len(parts)} cores' if parts else ''})")
    if len(faster) == 0 and parts:
        return 2, (f"{what} is at the fastest rate of its split: the {len(parts)} parts are gathered "
                   f"on core {parts[-1].core} one part per beat at most ({cur:,} cycles per frame)")
    if len(faster) == 0:
        return 0, (f"{what} is at its fastest folding: {cur:,} cycles per frame is its floor on any "
                   "board (no folding of this block is faster)")
    lims = [prob.limits(k) for k in prob.core_path]
    big = np.max(np.array(lims), axis=0)
    fits_one = [f for f in faster if np.all(table.res[f] <= big)]
    inv = 1.0 / np.maximum(big.astype(float), 1.0)
    if not fits_one:
        f = _next_faster(table, faster, inv)
        r = int(np.argmax(table.res[f] * inv))
        return 1, (f"the next faster folding of {what} ({_folding(table, f)}, "
                   f"ii {int(table.ii[f]):,}) needs {int(table.res[f][r]):,} {_NAMES[RES[r]]}, more than "
                   f"a core has ({int(big[r]):,})")
    f = _next_faster(table, fits_one, inv)
    core = parts[slow].core if parts else node.core
    cp = next(c for c in plan.cores if c.id == core)
    mine = parts[slow] if parts else node  # a split node: the part on `core`
    free = _limit(cp) - _used(cp) + _own(mine)
    short = table.res[f] - free
    r = int(np.argmax(short * inv))
    if short[r] <= 0:
        return 3, ""
    return 2, (f"core {core} is full: the next faster folding of {what} ({_folding(table, f)}, "
               f"ii {int(table.ii[f]):,}) needs {int(table.res[f][r]):,} "
               f"{_NAMES[RES[r]]}, the core has {int(free[r]):,} for it (short by {int(short[r]):,})"
               + ("; no other partition does better under the model" if plan.optimal else ""))


def _folding(table, f: int) -> str:
    copies = table.copies(f)
    return (f"pe={int(table.pe[f])}, simd={int(table.simd[f])}" + (f", mmv={copies}" if copies > 1 else "")
            + _pairs_text(*table.pairs(f)))


def _pairs_text(px: int, po: int) -> str:
    """A conv's pixels a beat in a folding's text (`pair_modes`), empty at one."""
    return f", {px} pixels in / {po} out a beat" if px > 1 else ""


def _together_note(prob: Problem, plan: Plan, at_ii: list[str]) -> str:
    """Each block at the ii could go faster alone: say which core cannot take them all."""
    extra: dict[int, np.ndarray] = {}
    for b in at_ii:
        unit = next((u for u in prob.units if u.node.name == b), None)
        node = plan.node(b)
        if unit is None or node.split:
            continue
        t = unit.table
        faster = np.nonzero(t.ii < node.ii_cycles)[0]
        if len(faster) == 0:
            continue
        inv = 1.0 / np.maximum(prob.limits(node.core).astype(float), 1.0)
        f = _next_faster(t, faster, inv)
        extra[node.core] = extra.get(node.core, 0) + t.res[f] - _own(node)
    for cp in plan.cores:
        if cp.id not in extra:
            continue
        free = _limit(cp) - _used(cp)
        short = extra[cp.id] - free
        inv = 1.0 / np.maximum(prob.limits(cp.id).astype(float), 1.0)
        r = int(np.argmax(short * inv))
        if short[r] > 0:
            n = sum(1 for b in at_ii if plan.node(b).core == cp.id)
            return (f"core {cp.id} is full: its {n} block(s) at this ii would need {int(extra[cp.id][r]):,} "
                    f"more {_NAMES[RES[r]]} together to fold one step faster, it has {int(free[r]):,} free")
    return ""
