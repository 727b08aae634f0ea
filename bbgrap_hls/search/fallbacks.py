"""The planner's fallbacks on refusal (docs/plan.md): when the plan with the default choices is
refused for a resource that another choice trades away, `make_plan` plans once more with that
choice offered, and names both refusals if that fails too.

- `lean_buffers`: BRAM18 or URAM short: short window rings and off-chip blocks of one output
  frame slot (docs/cost-model.md, "Short window rings", "One output slot"). `make_plan` also
  plans its chosen plan's configuration once more with them where that plan fills a core's
  BRAM18 or URAM with DSPs to spare (`memory_full`, `lean_replan`).
- `lut_requantisers`: DSPs short: requantisers whose products are LUTs (docs/cost-model.md,
  "LUT requantisers").

Each costs cycles or LUTs a frame, so a board with room to spare keeps the default and its
planning time; an option given True or False is used as given.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bbgrap_hls.board import Board
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.ir import Graph
from bbgrap_hls.plan import Plan
from bbgrap_hls.search.runs import _key


def lean_buffers(plan: Callable[..., Plan], graph: Graph, board: Board, short_rings: bool | None,
                 out_slot: bool | None, **kw) -> Plan:
    """``plan(graph, board, short_rings=, out1=, **kw)`` with short window rings and one output
    slot when asked, and those left auto (None) only if the plan without them is short of
    BRAM18 or URAM (then both together)."""
    what = _auto(short_rings, out_slot)
    if not what:
        return plan(graph, board, short_rings=short_rings, out1=out_slot, **kw)
    try:
        return plan(graph, board, short_rings=bool(short_rings), out1=bool(out_slot), **kw)
    except InfeasibleError as first:
        if not (short_of(str(first), "bram18") or short_of(str(first), "uram")):
            raise
        if kw.get("progress"):
            kw["progress"](f"{kw['strategy']}: no plan with the default buffers; planning with {what}")
        try:
            return plan(graph, board, short_rings=short_rings is not False, out1=out_slot is not False, **kw)
        except InfeasibleError as second:
            raise InfeasibleError(f"{second} (with {what}; without: {first})") from second


def _auto(short_rings: bool | None, out_slot: bool | None) -> str:
    """The lean-buffer options left auto (None), as a phrase ("" when both are given)."""
    return " and ".join(a for a, v in (("short window rings", short_rings), ("one output slot", out_slot))
                        if v is None)


FULL = 0.97
"""`memory_full`: the share of a core's BRAM18 or URAM limit above which a plan counts as
bound by on-chip memory, and `make_plan` plans with lean buffers too."""
SPARE_DSP = 0.9
"""`memory_full`: ...but only while the cores together use less than this share of their DSP
limits; a design whose DSPs are (nearly) all used gains nothing from lean buffers, which only
free memory (DenseNet-121 on u250: a core's URAM full, 91 % of the DSPs used; planned lean too,
the same ii in 28 s instead of 12 s)."""


def memory_full(plan: Plan) -> str:
    """Which core of ``plan`` uses at least `FULL` of its BRAM18 or URAM limit, as a phrase
    (empty when none does, or when the cores use `SPARE_DSP` of their DSPs or more)."""
    if sum(c.dsp for c in plan.cores) >= SPARE_DSP * sum(c.dsp_limit for c in plan.cores):
        return ""
    for c in plan.cores:
        for res in ("bram18", "uram"):
            used, limit = getattr(c, res), getattr(c, f"{res}_limit")
            if limit and used >= FULL * limit:
                return f"core {c.id} uses {used:,} of its {limit:,} {res.upper()}"
    return ""


def lean_replan(plan_one: Callable[..., Plan], plan: Plan, made: tuple[Graph, bool, bool], board: Board,
                kw: dict) -> Plan:
    """``plan``, or the plan (``plan_one(graph, board, pixel_pairs=, **kw)``, `search._make_plan`)
    of the same graph, pixel pairs and row bands (``made``) with short window rings and one
    output slot (those left auto) when that is better: tried only when ``plan`` was made without
    them and fills a core's BRAM18 or URAM with DSPs to spare (`memory_full`; docs/cost-model.md,
    "Short window rings"). Once, for the plan `make_plan` chose, not for each graph and band
    option it tried (EfficientNet-B0 on u280: 8 plans instead of 4 took 215 s instead of 57)."""
    short_rings, out_slot = kw["short_rings"], kw["out_slot"]
    what = _auto(short_rings, out_slot)
    if not what or plan.optimizer.get("short_rings") or plan.optimizer.get("out_slot"):
        return plan  # given, or planned lean already (a refusal with the default buffers)
    full = memory_full(plan)
    if not full:
        return plan
    g, pixel_pairs, bands = made
    if kw.get("progress"):
        kw["progress"](f"{kw['strategy']}: {full}; planning with {what} too")
    try:
        lean = plan_one(g, board, pixel_pairs=pixel_pairs, **{**kw, "row_bands": bands,
                                                                "short_rings": short_rings is not False,
                                                                "out_slot": out_slot is not False})
    except InfeasibleError:
        return plan
    return lean if _key(lean, kw["objective"]) < _key(plan, kw["objective"]) else plan


def lut_requantisers(plan: Callable[..., Plan], graph: Graph, board: Board, lut_requant: bool | None,
                     **kw) -> Plan:
    """``plan(graph, board, lut_requant=, **kw)`` with LUT requantisers when asked, and when
    auto (None) only if the plan without them is refused with DSPs short (or no resource named)."""
    if lut_requant is not None:
        return plan(graph, board, lut_requant=lut_requant, **kw)
    try:
        return plan(graph, board, lut_requant=False, **kw)
    except InfeasibleError as first:
        if not dsp_short(str(first)):
            raise  # LUT requantisers only trade DSPs for LUTs: another resource short stays short
        if kw.get("progress"):
            kw["progress"](f"{kw['strategy']}: no plan with DSP requantisers; planning with LUT requantisers")
        try:
            return plan(graph, board, lut_requant=True, **kw)
        except InfeasibleError as second:
            if str(second) == str(first):
                raise InfeasibleError(f"{first} (also with LUT requantisers)") from second
            raise InfeasibleError(f"{first}; with LUT requantisers: {second}") from second


_SHORT = re.compile(r"needs \d+ (\w+) (?:with every block|even at its lowest|at the lowest folding)"
                    r"|; (\w+) is short by")


def dsp_short(message: str) -> bool:
    """Whether an `InfeasibleError` message (`explain_infeasible`, `_run`) names DSPs as the
    resource that runs short (True when it names none)."""
    named = [a or b for a, b in _SHORT.findall(message)]
    return not named or short_of(message, "dsp")


def short_of(message: str, resource: str) -> bool:
    """Whether an `InfeasibleError` message names ``resource`` (lower case) as one that runs
    short."""
    return any((a or b).lower() == resource for a, b in _SHORT.findall(message))
