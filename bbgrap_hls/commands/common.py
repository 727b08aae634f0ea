"""Arguments and loading steps shared by several subcommands."""

from __future__ import annotations

import argparse

from bbgrap_hls.ir import Graph


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
