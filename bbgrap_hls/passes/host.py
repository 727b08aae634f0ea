"""Host ops: which nodes the host driver runs, and which of them sit where it cannot."""

from __future__ import annotations

from bbgrap_hls.ir import Graph
from bbgrap_hls.ops import get_op
from bbgrap_hls.passes.base import Pass

# Kinds that only move elements: cheap for the host after a host op, and pointless to
# send back to the fabric.
SHAPE_ONLY = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Dropout")


class MarkHostOps(Pass):
    """Set ``node.host`` on host-only ops (Softmax, ...) and the shape ops after them.

    Marks every node whose op kind is ``host_only``, plus every shape-only node (Reshape,
    Transpose, ...) whose activation inputs all come from host ops (a Softmax followed
    by a Reshape to the output shape stays on the host). Only a flag changes: values
    are untouched. A host op with a fabric node downstream is still marked; the planner
    refuses it with `host_ops_in_middle`.
    """

    def apply(self, graph: Graph) -> bool:
        changed = False
        host: set[str] = set()
        producer = graph.producers()
        for node in graph.nodes:
            srcs = [producer[i] for i in graph.act_inputs(node) if i in producer]
            flag = get_op(node.op).host_only or (
                node.op in SHAPE_ONLY and bool(srcs) and all(s.name in host for s in srcs)
                and len(srcs) == len(graph.act_inputs(node)))
            if flag:
                host.add(node.name)
            if flag != node.host:
                node.host = flag
                changed = True
        return changed


def host_ops_in_middle(graph: Graph) -> list[str]:
    """Host ops from which a fabric (non-host) node is reachable, as messages.

    The fabric cannot hand a frame to the host and take it back mid-network, so a plan
    is impossible while this list is not empty. Each entry names the host node, its op
    and the first fabric node it feeds (directly or through other host ops), e.g.
    ``"node 'sm1' (Softmax) feeds fabric node 'conv2' (Conv)"``.
    """
    readers = graph.consumers()
    problems: list[str] = []
    for node in graph.nodes:
        if not node.host:
            continue
        seen, todo = {node.name}, list(node.outputs)
        hit = None
        while todo and hit is None:
            for r in readers.get(todo.pop(0), []):
                if not r.host:
                    hit = r
                    break
                if r.name not in seen:
                    seen.add(r.name)
                    todo.extend(r.outputs)
        if hit is not None:
            problems.append(f"node '{node.name}' ({node.op}) feeds fabric node '{hit.name}' ({hit.op})")
    return problems
