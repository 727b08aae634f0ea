"""Arguments and loading steps shared by several subcommands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bbgrap_hls import progress
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph
from bbgrap_hls.passes.stem import SPACE_TO_DEPTH
from bbgrap_hls.search.problem import DDR_FIFOS, DDR_STAGES, DSP_PACKING, LUT_MACS, PADDED_FOLDS, ROW_BANDS

if TYPE_CHECKING:
    from bbgrap_hls.board import Board
    from bbgrap_hls.plan import Plan


def add_model_args(p: argparse.ArgumentParser) -> None:
    """MODEL positional plus ``--input-shape``."""
    p.add_argument("model", metavar="MODEL", help="ONNX model file")
    p.add_argument("--input-shape", action="append", metavar="NAME=DxD...", default=[],
                   help="fix a dynamic input shape, e.g. input=1x3x224x224 (repeatable)")


def _positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: at least 1")
    return n


def add_plan_options(p: argparse.ArgumentParser) -> None:
    """The planner's hardware options, shared by ``plan`` and ``gen`` (`make_plan` keywords)."""

    p.add_argument("--arch", choices=("auto", "dataflow", "engine"), default="auto",
                   help="dataflow = every layer its own block on chip (FINN/hls4ml style); engine = a layer engine "
                        "time-shared over the layers, maps and weights in board memory (Vitis AI DPU style; "
                        "docs/engine.md); auto = the dataflow plan, or the engine where the dataflow plan does not "
                        "fit or the engine is faster (default auto)")
    p.add_argument("--max-batch", type=_positive, default=4, metavar="N",
                   help="layer engine: the most frames a kernel call may compute together (each conv's weight "
                        "tiles then read once for all of them, as the DPU's batch; a frame waits for its call's "
                        "others). The planner tries 1, 2 and 4 up to N and keeps the fastest; 1 = one frame a "
                        "call, the lowest latency (default 4; docs/engine.md, \"Batched frames\")")

    p.add_argument("--parallel-window", action=argparse.BooleanOptionalAction, default=True,
                   help="let convolutions read several window positions per cycle (simd = C·j, FINN's "
                        "parallel window; HLS kernels and RTL twin support it; default on)")
    p.add_argument("--pixel-copies", action=argparse.BooleanOptionalAction, default=True,
                   help="let a convolution run up to 4 copies of its matrix-vector unit behind one window "
                        "generator, each on every M-th output pixel (mmv; docs/cost-model.md; default on)")
    p.add_argument("--offchip-weights", action=argparse.BooleanOptionalAction, default=False,
                   help="let conv/dense layers keep their weights in the board memory, read once per frame, "
                        "with its bandwidth planned like DSPs (docs/cost-model.md; gen writes them: HLS "
                        "conv2d_offchip and the RTL twin's conv_offchip; default off)")
    p.add_argument("--dsp-packing", action=argparse.BooleanOptionalAction, default=DSP_PACKING,
                   help="let conv/dense layers with pe >= 2 compute two output lanes per DSP48E2 (two int8 "
                        "products of one input in one 27x18 multiply; HLS kernels and RTL twin; "
                        f"docs/cost-model.md; default {'on' if DSP_PACKING else 'off'})")
    p.add_argument("--lut-macs", action=argparse.BooleanOptionalAction, default=LUT_MACS,
                   help="let conv/dense layers with their weights on chip and depthwise convs compute their int8 products in LUTs "
                        "instead of DSP48E2s where a core's LUTs are spare (lut_mul.sv, about 110 LUTs per "
                        f"product; chosen per layer; docs/cost-model.md; default {'on' if LUT_MACS else 'off'})")
    p.add_argument("--padded-folds", action=argparse.BooleanOptionalAction, default=PADDED_FOLDS,
                   help="let conv/dense layers with their weights on chip take a pe that does not divide their "
                        "output channels: ceil(CO/pe) folds, the last one padded with zero rows whose outputs a "
                        "trimming width converter drops (finer steps than the divisors; docs/cost-model.md, "
                        f"\"Padded folds\"; default {'on' if PADDED_FOLDS else 'off'})")
    p.add_argument("--ddr-stages", action=argparse.BooleanOptionalAction, default=DDR_STAGES,
                   help="with --offchip-weights: let an off-chip conv/dense keep one input frame slot behind a "
                        "DDR frame stage (the next frames written to a scratch area of the board memory while it "
                        "computes, read back when it takes one; ddr_stage.sv; docs/cost-model.md, \"DDR frame "
                        f"stage\"; default {'on' if DDR_STAGES else 'off'})")
    p.add_argument("--ddr-fifos", action=argparse.BooleanOptionalAction, default=DDR_FIFOS,
                   help="with --offchip-weights: let a FIFO of a frame or more (a skip path around off-chip "
                        "layers) go to the core's board memory where the core runs out of BRAM (docs/cost-model.md, "
                        "\"Skip FIFOs in board memory\"; bb::ddr_fifo in HLS, ddr_stage.sv in the twin); "
                        f"default {'on' if DDR_FIFOS else 'off'}")
    p.add_argument("--row-bands", action=argparse.BooleanOptionalAction, default=ROW_BANDS,
                   help="with --offchip-weights: let an off-chip conv compute a band of output rows at a time "
                        "behind a band splitter, its frame buffers a band's and its weights read once per band "
                        f"(conv_band.sv, bb::conv2d_banded; docs/cost-model.md, \"Row bands\"; default "
                        f"{'on' if ROW_BANDS else 'off'})")
    p.add_argument("--pixel-pairs", choices=("auto", "on", "off"), default="auto",
                   help="let convolutions with a window generator and per-tensor Adds/Muls on images of even "
                        "width stream two pixels a beat (two halves of pixel copies for the even and odd "
                        "columns; bb::conv2d_pairs and the twin's conv PX/PO; docs/cost-model.md, \"Two pixels "
                        "a beat\"): auto = when a window generator's one-pixel floor binds, plan both and keep "
                        "the faster; on = always offer them; off = never (default auto)")
    p.add_argument("--lut-requant", action=argparse.BooleanOptionalAction, default=None,
                   help="let the requantisers (and add/mul lanes) build their 32x25-bit products from LUTs instead of "
                        "2 DSP48E2s a lane (rq_lane.sv RQ_LUT = 1, about 1,600 LUTs a lane; docs/cost-model.md, "
                        "\"LUT requantisers\"); default: only when the plan with DSP requantisers does not fit "
                        "(a board whose cores have few or no DSPs)")
    p.add_argument("--short-rings", action=argparse.BooleanOptionalAction, default=None,
                   help="let window blocks (convs with a window generator, depthwise convs, pools) keep a short "
                        "line-buffer ring of KH+SH padded rows instead of the default (fewer BRAM18; the writer "
                        "waits at each frame boundary, a few cycles a frame: docs/cost-model.md, \"Short window "
                        "rings\"), on a core with URAM also in URAM, 8/lanes ring words a URAM word (\"Window rings "
                        "in URAM\"); default: only when the plan with the default buffers is short of BRAM18 or URAM, or "
                        "fills a core's BRAM18 or URAM with DSPs to spare (then the better plan is kept)")
    p.add_argument("--one-output-slot", action=argparse.BooleanOptionalAction, default=None,
                   help="with --offchip-weights, let an off-chip conv/dense keep one output frame slot instead of "
                        "two (half its output frame memory; the next frame's first fold waits for this one's "
                        "outputs to have left: docs/cost-model.md, \"One output slot\"); default: with "
                        "--short-rings's default, when the plan with the default buffers is short of BRAM18 or "
                        "URAM or fills a core's BRAM18 or URAM with DSPs to spare")
    p.add_argument("--move-boundaries", action=argparse.BooleanOptionalAction, default=None,
                   help="with --strategy search on several cores, pack the blocks along the core path again with "
                        "integer programs where the segmentation's cores misjudge them (docs/plan.md, \"Moved "
                        "boundaries\"; seconds to tens of seconds more planning); default: only when a core of "
                        "the plan uses less than half its DSPs")
    p.add_argument("--space-to-depth", choices=SPACE_TO_DEPTH, default="auto",
                   help="send the graph input as s x s pixel blocks (s^2 pixels a beat) to a strided stem conv, "
                        "rewritten over the blocks (passes/stem.py; docs/plan.md, \"Pixels per beat\"): auto = "
                        "when the stem binds the ii, plan both and keep the faster; on = whenever the stem allows; "
                        "off = never (default auto)")


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
    """`bbgrap_hls.search.make_plan` with its phases on the progress display, or the layer
    engine (``arch``: `bbgrap_hls.search.arch.plan_arch`; default ``auto``).

    ``options`` are `make_plan`'s keywords (``strategy``, ``objective``, ``time_limit``,
    ``seed``, ``parallel_window``, ``narrow_folding``, ``pixel_copies``,
    ``offchip_weights``, ...). The ``plan`` command and `bbgrap_hls.compile` both plan here.
    """
    from bbgrap_hls.search import make_plan
    from bbgrap_hls.search.arch import plan_arch

    arch = options.pop("arch", "auto")
    max_batch = options.pop("max_batch", 4)
    with progress.task(f"planning ({options.get('strategy', 'search')})", ticker=True) as t:
        return plan_arch(graph, board, arch,
                         lambda: make_plan(graph, board, progress=progress.plan_callback(t), **options),
                         max_batch=max_batch)
