"""`quantize`: a canonical float graph (or a QDQ model's graph) → the int8 graph.

Steps: (1) for a QDQ graph read the Q/DQ pairs' scales and drop the pairs, otherwise
observe activation ranges on calibration samples; (2) fuse a Relu/Relu6 that is the only
reader of a Conv/Dense/ChannelAffine/Add output into its clamp; (3) group tensors that
must share one scale (inputs and outputs of MaxPool, Concat, Pad and layout ops) and give
each group one `QuantParams`; (4) compute every fabric node's integer parameters.
"""

from __future__ import annotations

import numpy as np

from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph, Node, QuantParams
from bbgrap_hls.quant import calib
from bbgrap_hls.quant.build import FUSABLE_ACTS, FUSING_KINDS, MOVE_KINDS, build_q, range_params
from bbgrap_hls.quant.qdq import is_qdq, strip_qdq


def quantize(graph: Graph, calib_data: dict[str, np.ndarray] | None = None, *,
             observer: str = calib.DEFAULT_OBSERVER, seed: int = 0) -> Graph:
    """Quantise a canonical graph to int8 (see `bbgrap_hls.quant` for the result's form).

    Args:
        graph: canonical float graph, or the graph of a QDQ model (its scales are kept).
        calib_data: input name -> ``(N, *input_shape)`` samples (`calib.load_calibration`);
            None uses `calib.synthetic_calibration` (with a warning). Ignored for QDQ graphs.
        observer: ``"minmax"`` or ``"percentile"`` (`calib.observe`).
        seed: seeds the synthetic samples and the percentile subsampling.

    Returns:
        A new graph; ``graph`` is not modified.
    """
    g = graph.copy()
    if is_qdq(g):
        fixed = strip_qdq(g)
        ranges = None
    else:
        fixed = None
        samples = (calib.check_calibration(g, calib_data) if calib_data is not None
                   else calib.synthetic_calibration(g, seed=seed))
        ranges = calib.observe(g, samples, observer, seed)
    fuse_activations(g)
    assign_params(g, ranges, fixed)
    for node in g.nodes:
        if not node.host:
            if fixed is not None and node.op in ("Conv", "Dense"):
                node.attrs["qdq"] = True
            node.attrs["q"] = build_q(node, g)
    return g


def fuse_activations(g: Graph) -> None:
    """Fold a Relu/Relu6 into its producer's clamp (``attrs["act"]``) and remove it.

    Only when the producer is a Conv/Dense/ChannelAffine/Add/Sub whose output nobody else
    reads and that is not a graph output: then the clamp is the activation exactly.
    """
    producers, consumers = g.producers(), g.consumers()
    drop = set()
    for node in g.nodes:
        if node.op not in FUSABLE_ACTS or node.host:
            continue
        src = node.inputs[0]
        p = producers.get(src)
        if (p is None or p.op not in FUSING_KINDS or p.host or "act" in p.attrs
                or len(consumers.get(src, [])) != 1 or src in g.outputs):
            continue
        p.attrs["act"] = node.op
        p.outputs = [node.outputs[0]]
        drop.add(node.name)
        del g.tensors[src]
    g.nodes = [n for n in g.nodes if n.name not in drop]


class _Groups:
    """Union-find over tensor names (tensors that must share a scale)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, a: str) -> str:
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def scale_groups(g: Graph) -> dict[str, list[str]]:
    """Activation tensors grouped by shared scale, each group in production order."""
    uf = _Groups()
    order = list(g.inputs) + [o for n in g.nodes for o in n.outputs]
    for name in order:
        uf.find(name)
    for node in g.nodes:
        if node.op in MOVE_KINDS and not node.host:
            for i in g.act_inputs(node):
                uf.union(i, node.outputs[0])
    groups: dict[str, list[str]] = {}
    for name in order:
        groups.setdefault(uf.find(name), []).append(name)
    return groups


def _pick_fixed(g: Graph, members: list[str], fixed: dict[str, tuple[float, int]]) -> tuple[float, int] | None:
    """QDQ: a group's scale is the Concat output's if it has one, else the first member's."""
    producers = g.producers()
    known = [m for m in members if m in fixed]
    if not known:
        return None
    for m in known:
        p = producers.get(m)
        if p is not None and p.op == "Concat":
            return fixed[m]
    return fixed[known[0]]


def assign_params(g: Graph, ranges: dict[str, tuple[float, float]] | None,
                  fixed: dict[str, tuple[float, int]] | None) -> None:
    """Give every activation tensor per-tensor int8 `QuantParams` (one per scale group).

    Outputs of host ops keep their float dtype (they carry parameters only when a fabric
    node reads them).
    """
    producers = g.producers()
    for members in scale_groups(g).values():
        if fixed is not None:
            params = _pick_fixed(g, members, fixed)
        else:
            seen = [(m, ranges[m]) for m in members if m in ranges]
            bad = [m for m, r in seen if not np.all(np.isfinite(r))]
            lo, hi = (min(r[0] for _, r in seen), max(r[1] for _, r in seen)) if seen else (0, 0)
            params = range_params((bad or members)[0], lo, hi) if seen else None
        for m in members:
            p: Node | None = producers.get(m)
            host = p is not None and p.host
            if params is None:
                if host or (p is None and m not in _fabric_reads(g)):
                    continue  # a float tensor of the host part
                raise UnsupportedError(f"tensor '{m}' has no quantisation parameters "
                                       "(the QDQ model leaves it in float)")
            t = g.tensors[m]
            t.quant = QuantParams(np.asarray(params[0], np.float32), np.asarray(params[1], np.int32))
            if not host:
                t.dtype = "int8"


def _fabric_reads(g: Graph) -> set[str]:
    return {i for n in g.nodes if not n.host for i in g.act_inputs(n)}
