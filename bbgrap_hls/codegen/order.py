"""The orders of a generated design: a core's kernel calls, so that every stream is
written before it is read (`sort_calls`), and the cores, producers first (`core_order`).
"""

from __future__ import annotations

import re

from bbgrap_hls.codegen.ports import CoreDesign
from bbgrap_hls.errors import BadInputError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def sort_calls(cd: CoreDesign) -> list[str]:
    """Order a core's calls so that every stream is written before it is read.

    The first stream argument written by a call is its output (kernels take inputs first,
    except `concat`, `const_stream` and `mem_to_stream`, handled by position); C
    simulation runs a DATAFLOW region's calls in order, so the order must be topological.
    """
    names = set(cd.streams) | {p.name for p in cd.ports if p.kind.startswith("axis")}
    io = []
    for call in cd.calls:
        args = [a for a in _IDENT.findall(call.split("(", 1)[1]) if a in names]
        kern = call.split("<", 1)[0]
        if kern in ("bb::concat", "bb::const_stream", "bb::mem_to_stream"):
            outs, ins = args[:1], args[1:]
            if kern == "bb::mem_to_stream":
                outs, ins = args[-1:], []
            if kern == "bb::const_stream":
                outs, ins = args[-1:], []
        elif kern == "bb::fanout":
            ins, outs = args[:1], args[1:]
        elif kern == "bb::stream_to_mem":
            ins, outs = args[:1], []
        elif kern in ("bb::add2", "bb::mul2"):
            ins, outs = args[:2], args[2:]
        else:
            ins, outs = args[:1], args[1:2]
        io.append((call, set(ins), set(outs)))
    written: set[str] = {p.name for p in cd.ports if p.kind == "axis_in"}
    done, order = [False] * len(io), []
    while len(order) < len(io):
        for i, (call, ins, outs) in enumerate(io):
            if not done[i] and ins <= written:
                done[i] = True
                order.append(call)
                written |= outs
                break
        else:
            raise RuntimeError(f"core{cd.id}: stream wiring has a cycle or an unwritten stream")
    return order


def core_order(ids: list[int], edges: set[tuple[int, int]]) -> list[int]:
    order, left = [], list(ids)
    while left:
        ready = [k for k in left if not any(d == k and s in left and s != k for s, d in edges)]
        if not ready:
            raise BadInputError(f"the plan's cores form a cycle: {sorted(edges)}")
        order.append(ready[0])
        left.remove(ready[0])
    return order

