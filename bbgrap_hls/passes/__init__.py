"""Canonicalisation: the passes that remove redundant operations before quantisation.

`canonicalize` runs `CANONICAL` (a list of pass classes, in order) to a fixed point.
Every pass keeps the float reference's values (exactly, or up to float rounding where
it moves a scale into a constant); docs/passes.md lists them with why each is safe.
"""

from __future__ import annotations

from bbgrap_hls.ir import Graph
from bbgrap_hls.passes.arith import (
    ClipToRelu6,
    FuseSwish,
    LowerArithmetic,
    LowerChannelAffine,
    ReduceMeanToGlobalPool,
)
from bbgrap_hls.passes.base import Pass, copy_graph, tidy
from bbgrap_hls.passes.cleanup import FoldConstants, LowerShapeOps, RemoveIdentity
from bbgrap_hls.passes.conv_transpose import LowerConvTranspose, MoveActivationBeforeDepthToSpace
from bbgrap_hls.passes.host import MarkHostOps, host_ops_in_middle
from bbgrap_hls.passes.linear import FoldBatchNorm, FoldFlattenIntoDense, FoldPadIntoConv, LowerGemm

CANONICAL: list[type[Pass]] = [
    RemoveIdentity,
    FoldConstants,
    LowerShapeOps,
    LowerArithmetic,
    ClipToRelu6,
    FuseSwish,
    ReduceMeanToGlobalPool,
    LowerGemm,
    LowerConvTranspose,
    MoveActivationBeforeDepthToSpace,
    FoldBatchNorm,
    LowerChannelAffine,
    FoldFlattenIntoDense,
    FoldPadIntoConv,
    MarkHostOps,
]

CANONICAL_KINDS = frozenset({
    "Conv", "Dense", "Relu", "Relu6", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
    "Clip", "Add", "Mul", "ChannelAffine", "Concat", "MaxPool", "AveragePool", "GlobalAveragePool",
    "Transpose", "Reshape", "Pad", "Softmax", "LRN",
    "Elu", "Selu", "Celu", "Gelu", "Softplus", "Softsign", "Mish", "Swish", "ThresholdedRelu",
    "Slice", "GlobalMaxPool", "Resize", "ZeroInsert", "DepthToSpace", "ResizeBilinear",
})

MAX_ROUNDS = 8


def canonicalize(graph: Graph) -> Graph:
    """The canonical form of ``graph`` (a new graph; the argument is left untouched).

    Runs the passes of `CANONICAL` in order, again and again until a whole round
    changes nothing (a fold can expose another: Sub → Add, then Add folds into a Conv's
    bias), and leaves the nodes in topological order. Afterwards only these op kinds
    remain (`CANONICAL_KINDS`): Conv, Dense, Relu, Relu6, LeakyRelu, Sigmoid, Tanh,
    HardSigmoid, HardSwish, the other lookup-table activations (Elu, Selu, Celu, Gelu,
    Softplus, Softsign, Mish, Swish, ThresholdedRelu), Clip (general bounds), Add and Mul (two activations, possibly
    broadcast as in squeeze-excite, or a constant that is not per-channel),
    ChannelAffine, Concat, MaxPool, AveragePool, GlobalAveragePool, Transpose and
    Reshape (channel shuffles, or a Reshape that only drops unit dimensions, e.g.
    (N, C, 1, 1) → (N, C) before a graph output), Pad, Slice (also Split's parts),
    GlobalMaxPool, Resize (nearest, integer scales), ResizeBilinear (Resize mode linear,
    integer scales), ZeroInsert (a lowered ConvTranspose's
    upsampling half), DepthToSpace, LRN, and the host op Softmax
    (``node.host`` set; `host_ops_in_middle` lists those a plan cannot place).

    Anything else left (e.g. MatMul of two activations, Div by an activation) was not
    lowerable; the planner refuses it by kind.
    """
    g = copy_graph(graph)
    for _ in range(MAX_ROUNDS):
        changed = False
        for cls in CANONICAL:
            if cls().apply(g):
                changed = True
                tidy(g)
        if not changed:
            break
    tidy(g)
    return g


__all__ = [
    "CANONICAL", "CANONICAL_KINDS", "ClipToRelu6", "FoldBatchNorm", "FoldConstants",
    "FoldFlattenIntoDense", "FoldPadIntoConv", "LowerArithmetic", "LowerChannelAffine", "LowerConvTranspose", "LowerGemm",
    "LowerShapeOps", "MoveActivationBeforeDepthToSpace",
    "FuseSwish", "MarkHostOps", "Pass", "ReduceMeanToGlobalPool", "RemoveIdentity", "canonicalize",
    "host_ops_in_middle",
]
