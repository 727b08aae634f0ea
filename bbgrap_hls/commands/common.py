"""Arguments and loading steps shared by several subcommands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bbgrap_hls import progress
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph

if TYPE_CHECKING:
    from bbgrap_hls.board import Board
    from bbgrap_hls.plan import Plan


def add_model_args(p: argparse.ArgumentParser) -> None:
    """MODEL positional plus ``--input-shape``."""
    p.add_argument("model", metavar="MODEL", help="ONNX model file")
    p.add_argument("--input-shape", action="append", metavar="NAME=DxD...", default=[],
                   help="fix a dynamic input shape, e.g. input=1x3x224x224 (repeatable)")


def load_canonical(args: argparse.Namespace) -> Graph:
    """Load ``args.model`` and run the canonicalisation pipeline."""
    from bbgrap_hls.frontend import load_model, parse_input_shapes
    from bbgrap_hls.passes import canonicalize

    graph = load_model(args.model, parse_input_shapes(args.input_shape))
    return canonicalize(graph)


def stem_option(space_to_depth: str, qdq: bool) -> str:
    """The ``space_to_depth`` a model plans with: a QDQ model (planned and generated on its
    int8 graph, whose stem `passes.stem` does not rewrite yet) keeps one pixel a beat.

    Raises:
        BadInputError: ``on`` for a QDQ model.
    """
    if not qdq or space_to_depth == "off":
        return space_to_depth
    if space_to_depth == "on":
        raise BadInputError("--space-to-depth on: a QDQ (pre-quantised) model's stem is not rewritten "
                            "over pixel blocks yet; use auto or off")
    return "off"


def plan_graph(graph: Graph, board: Board, **options: Any) -> Plan:
    """`bbgrap_hls.search.make_plan` with its phases on the progress display.

    ``options`` are `make_plan`'s keywords (``strategy``, ``objective``, ``time_limit``,
    ``seed``, ``parallel_window``, ``narrow_folding``, ``pixel_copies``,
    ``offchip_weights``, ...). The ``plan`` command and `bbgrap_hls.compile` both plan here.
    """
    from bbgrap_hls.search import make_plan

    with progress.task(f"planning ({options.get('strategy', 'search')})", ticker=True) as t:
        return make_plan(graph, board, progress=progress.plan_callback(t), **options)
