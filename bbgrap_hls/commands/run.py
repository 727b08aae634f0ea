"""``bbgrap-hls run MODEL --input x.npy [-o y.npy]``: the float (or int8) reference on an input.

One model input takes a ``.npy``; several take a ``.npz`` keyed by input name. One output
is written as ``.npy``, several as ``.npz`` keyed by output name. A one-line summary per
output is printed (shape, min, max, and the argmax of a classifier-shaped output).
"""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

import numpy as np

from bbgrap_hls.commands.common import add_model_args
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("run", help="run the float (or int8) reference of a model on an input")
    add_model_args(p)
    p.add_argument("--input", required=True, metavar="X", help=".npy (one input) or .npz keyed by input name")
    p.add_argument("-o", "--output", metavar="Y", help="write outputs: .npy (one output) or .npz (several)")
    p.add_argument("--int8", action="store_true", help="run the bit-exact int8 reference instead of float")
    p.add_argument("--calib", metavar="C", help="calibration samples for --int8 (.npy or .npz)")
    p.add_argument("--raw", action="store_true", help="with --int8: keep outputs as int8 codes")
    p.add_argument("--compare", action="store_true", help="with --int8: also run float and print the agreement")
    return p


def read_inputs(path: str, graph: Graph) -> dict[str, np.ndarray]:
    """Input arrays by graph input name from a ``.npy`` (one input) or ``.npz`` file."""
    p = Path(path)
    if not p.is_file():
        raise BadInputError(f"{p}: no such input file")
    try:
        data = np.load(p, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise BadInputError(f"{p}: not a readable .npy/.npz file ({type(e).__name__}: {e})") from None
    if isinstance(data, np.ndarray):
        if len(graph.inputs) != 1:
            raise BadInputError(f"{p}: one array given, the model has {len(graph.inputs)} inputs "
                                f"({', '.join(graph.inputs)}): use a .npz keyed by input name")
        return {graph.inputs[0]: data}
    with data:
        feeds = {k: data[k] for k in data.files}
    unknown = sorted(set(feeds) - set(graph.inputs))
    if unknown:
        raise BadInputError(f"{p}: arrays {', '.join(unknown)} name no model input "
                            f"(inputs: {', '.join(graph.inputs)})")
    return feeds


def write_outputs(path: str, outputs: dict[str, np.ndarray]) -> None:
    """``.npy`` for one output, ``.npz`` keyed by output name for several."""
    p = Path(path)
    if len(outputs) == 1 and p.suffix != ".npz":
        np.save(p, next(iter(outputs.values())))
    elif p.suffix == ".npz":
        np.savez(p, **outputs)
    else:
        raise BadInputError(f"{p}: the model has {len(outputs)} outputs; write them to a .npz file")


def summary(name: str, y: np.ndarray) -> str:
    """One line: shape, dtype, min, max; argmax per row of a classifier-shaped output."""
    line = f"{name}: shape {'x'.join(map(str, y.shape)) or 'scalar'} {y.dtype} min {y.min():.6g} max {y.max():.6g}"
    flat = y.reshape(y.shape[0], -1) if y.ndim >= 2 else None
    if flat is not None and 1 < flat.shape[1] and flat.shape[1] == max(y.shape[1:], default=0):
        line += " argmax " + ",".join(str(int(a)) for a in flat.argmax(axis=1))
    return line


def run(args: argparse.Namespace) -> int:
    from bbgrap_hls.commands.common import load_canonical
    from bbgrap_hls.reference import run_float

    if (args.calib or args.raw or args.compare) and not args.int8:
        raise BadInputError("--calib, --raw and --compare go with --int8")
    graph = load_canonical(args)
    feeds = read_inputs(args.input, graph)
    outputs = graph.declared_outputs(_run_int8(args, graph, feeds) if args.int8 else run_float(graph, feeds))
    for name, y in outputs.items():
        print(summary(name, y))
    if args.output:
        write_outputs(args.output, outputs)
    return 0


def _run_int8(args: argparse.Namespace, graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The int8 branch: QDQ check, calibration, quantisation, integer reference, --compare
    (all the quantiser's: `bbgrap_hls.quant.cli.run_int8_branch`)."""
    from bbgrap_hls.quant.cli import run_int8_branch

    return run_int8_branch(args, graph, feeds)
