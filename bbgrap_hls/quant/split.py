"""Rescales that keep a narrow tensor out of a wide Concat's scale group (docs/numerics.md,
"Scale groups").

Move ops (Concat, MaxPool, Slice, ...) pass int8 codes unchanged, so the quantiser gives every
tensor they join one scale (`quantizer.scale_groups`). A tensor ``t`` read by a Concat whose
other inputs span a much wider range, and by something else as well (a second Concat, a
conv), would take the wide scale for all its readers: a narrow Concat elsewhere ran at 1/50
of its resolution on a small example (int8 cosine 0.913). `split_scale_groups` gives such an
edge ``t -> Concat`` a rescale, a ChannelAffine of gain 1 and offset 0 whose requantiser moves
``t`` onto the wide group's scale, so ``t`` keeps its own.

The rescale is a node of the float graph, so it runs before planning (`rescale_concat_inputs`,
called by ``gen``, ``csim`` and `bbgrap_hls.compile` on the canonical graph): the plan and the
quantised graph hold the same nodes. It needs calibrated ranges; graphs without a tensor read
by a move op and by something else skip the calibration run.
"""

from __future__ import annotations

import warnings

import numpy as np

from bbgrap_hls.ir.graph import Graph, Node, Tensor
from bbgrap_hls.quant import calib
from bbgrap_hls.quant.build import MOVE_KINDS
from bbgrap_hls.quant.quantizer import _Groups

#: an edge is cut when the Concat's group spans more than this many times the tensor's own
#: group (three bits of the tensor's resolution)
WIDE = 8.0


#: calibration samples the decision runs on: a range 8x wider is not a sampling accident, and
#: one float run of DenseNet-121 (the worst case of the zoo: many Concats) takes about 5 s
DECIDE_SAMPLES = 1


def _span(r: tuple[float, float]) -> float:
    """Width of the int8 grid a range needs (zero is always representable)."""
    return max(r[1], 0.0) - min(r[0], 0.0)


def _candidates(g: Graph) -> list[str]:
    """Tensors read by a fabric move op and by at least one other reader."""
    out = []
    for t, readers in g.consumers().items():
        moves = [n for n in readers if n.op in MOVE_KINDS and not n.host]
        if moves and len(readers) >= 2 and g.tensors[t].data is None:
            out.append(t)
    return out


def _group_spans(g: Graph, ranges: dict[str, tuple[float, float]], skip: str) -> tuple[_Groups, dict[str, float]]:
    """Scale groups joined by move ops, without the edges out of tensor ``skip``; span per root."""
    uf = _Groups()
    for node in g.nodes:
        if node.op in MOVE_KINDS and not node.host:
            for i in g.act_inputs(node):
                if i != skip:
                    uf.union(i, node.outputs[0])
    lows: dict[str, float] = {}
    highs: dict[str, float] = {}
    for name, (lo, hi) in ranges.items():
        root = uf.find(name)
        lows[root] = min(lows.get(root, 0.0), lo)
        highs[root] = max(highs.get(root, 0.0), hi)
    return uf, {root: highs[root] - lows[root] for root in lows}


def split_scale_groups(g: Graph, ranges: dict[str, tuple[float, float]]) -> list[str]:
    """Insert a rescale on each edge ``t -> Concat`` that would widen ``t``'s scale more than
    `WIDE` times while ``t`` has another reader; ``ranges`` gains the new tensors. Returns the
    rescale nodes' names (in place)."""
    added: list[str] = []
    for t in _candidates(g):
        if t not in ranges or len(g.shape(t)) < 2:
            continue
        uf, spans = _group_spans(g, ranges, t)
        own = spans.get(uf.find(t), _span(ranges[t]))
        readers = list({id(n): n for n in g.consumers()[t]}.values())  # a node reading t twice: once
        wide = [n for n in readers if n.op == "Concat" and not n.host
                and spans.get(uf.find(n.outputs[0]), 0.0) > WIDE * max(own, 1e-30)]
        if not wide or len(wide) == len(readers):
            continue  # nothing would widen, or every reader is wide anyway
        c = g.shape(t)[1]
        for n in wide:
            name = g.fresh_name(f"{t}_rescale")
            a = g.add_const(f"{name}_a", np.ones(c, np.float32))
            b = g.add_const(f"{name}_b", np.zeros(c, np.float32))
            out = g.fresh_name(f"{t}_rescaled")
            g.tensors[out] = Tensor(out, g.tensors[t].shape, g.tensors[t].dtype)
            node = Node(name, "ChannelAffine", [t, a, b], [out], {})
            g.nodes.insert(g.nodes.index(n), node)
            n.inputs = [out if i == t else i for i in n.inputs]
            ranges[out] = ranges[t]
            added.append(name)
    return added


def rescale_concat_inputs(graph: Graph, calib_data: dict[str, np.ndarray] | None = None, *,
                          observer: str = calib.DEFAULT_OBSERVER, seed: int = 0) -> Graph:
    """The canonical graph with `split_scale_groups`'s rescales (a copy when any is added).

    Calibrates on the first `DECIDE_SAMPLES` of the samples `quantizer.quantize` will use, and
    only when some tensor is read by a move op and by another reader; QDQ graphs keep their
    given scales."""
    from bbgrap_hls.quant.qdq import is_qdq

    if is_qdq(graph) or not _candidates(graph):
        return graph
    with warnings.catch_warnings():  # quantize() says it when it calibrates
        warnings.filterwarnings("ignore", message="no calibration samples given")
        samples = (calib.check_calibration(graph, calib_data) if calib_data is not None
                   else calib.synthetic_calibration(graph, seed=seed))
    # the decision needs the ranges' widths only roughly: a few samples (quantize() then
    # calibrates the scales on all of them)
    samples = {k: v[:DECIDE_SAMPLES] for k, v in samples.items()}
    ranges = calib.observe(graph, samples, observer, seed)
    g = graph.copy()
    return g if split_scale_groups(g, ranges) else graph
