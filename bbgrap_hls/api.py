"""The Python API: `compile` a model for a board into a `Design`, then predict, write, simulate.

Each step is the command line's own code path (docs/api.md):

- `compile` loads and canonicalises the model (as every command does), validates the
  calibration samples, and plans through `bbgrap_hls.commands.common.plan_graph`, as
  ``plan`` does;
- `Design.predict` runs the integer reference on the same int8 graph gen writes, with
  outputs as ``run --int8`` writes them;
- `Design.write` runs ``gen`` itself (`bbgrap_hls.commands.gen.run`), so a written folder
  is byte for byte what ``bbgrap-hls gen`` writes with the same options;
- `Design.csim` / `Design.sim` are ``csim`` / ``sim`` (`csim_design`, `sim_design`).

Errors are the command line's: `bbgrap_hls.errors.BbgrapError` subclasses whose message
is the line the CLI prints after ``error:`` and whose ``exit_code`` is its exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from bbgrap_hls.board import Board, load_board
from bbgrap_hls.errors import BadInputError

if TYPE_CHECKING:
    from bbgrap_hls.codegen.csim import CsimResult
    from bbgrap_hls.ir import Graph
    from bbgrap_hls.plan import Plan
    from bbgrap_hls.rtlsim.run import SimResult

#: `compile`'s planning keywords and their types; defaults are `make_plan`'s (and the CLI's)
PLAN_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "strategy": str, "objective": str, "time_limit": (int, float), "seed": int,
    "parallel_window": bool, "pixel_copies": bool, "offchip_weights": bool, "narrow_folding": bool,
    "dsp_packing": bool, "lut_macs": bool, "lut_requant": bool, "space_to_depth": str, "padded_folds": bool,
    "ddr_stages": bool, "ddr_fifos": bool, "pixel_pairs": str, "row_bands": bool, "short_rings": bool,
    "one_output_slot": bool, "move_boundaries": bool, "arch": str, "max_batch": int,
}
#: what ``gen`` plans with when not told (`Design.write` warns when the design's plan differs)
_GEN_DEFAULTS = {"time_limit": 10.0, "narrow_folding": True, "offchip_weights": False}


def compile(model: str | os.PathLike | onnx.ModelProto, board: str | os.PathLike | Board = "u250",
            calib: str | os.PathLike | np.ndarray | dict[str, np.ndarray] | None = None, *,
            input_shape: dict[str, tuple[int, ...]] | None = None, **plan_options: Any) -> Design:
    """Plan a model on a board: the first half of ``bbgrap-hls gen`` (no files written).

    Args:
        model: an ONNX file's path, or an ``onnx.ModelProto`` (saved to a file named by its
            hash under the system's temporary folder, which `Design.write`'s manifest records).
        board: a bundled board's name (``bbgrap-hls boards``), a board ``.yaml`` path, or a
            `bbgrap_hls.board.Board`.
        calib: calibration samples: a ``.npy``/``.npz`` path (as ``--calib``), an array
            ``(N, *input_shape[1:])`` for a one-input model, or a dict by input name. None:
            synthetic samples, with the same warning as the CLI.
        input_shape: fixed shapes of dynamic inputs, by name (``--input-shape``).
        **plan_options: `bbgrap_hls.search.make_plan`'s keywords: ``strategy`` ("search"),
            ``objective`` ("throughput"), ``time_limit`` (10.0 s), ``seed`` (0; also seeds
            the synthetic calibration and the test input, as ``gen --seed``),
            ``parallel_window`` (True), ``pixel_copies`` (True), ``offchip_weights``
            (False), ``narrow_folding`` (True), ``dsp_packing``, ``lut_macs`` and
            ``padded_folds``, ``ddr_stages`` (`make_plan`'s defaults), ``lut_requant`` (default: only when the plan with DSP requantisers
            does not fit), ``short_rings`` and ``one_output_slot`` (default: only when the plan
            with the default buffers is short of BRAM18 or URAM or fills a core's), ``move_boundaries`` (default: only
            when a core of the plan uses under half its DSPs), ``pixel_pairs`` ("auto" as gen, "on" or "off"),
            ``max_batch`` (a layer engine's most frames a call, default 4: ``--max-batch``).

    Returns:
        The planned `Design`; quantisation (calibration) runs on first use.

    Raises:
        BadInputError: a missing or bad model, board or calibration file, a wrong
            argument type, an unknown option (exit code 2).
        UnsupportedError: operators or QDQ schemes not supported (exit code 2).
        InfeasibleError: no plan fits the board (exit code 3).
    """
    from bbgrap_hls.commands.common import plan_graph, stem_option
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant import is_qdq
    from bbgrap_hls.quant.qdq import check_qdq_model
    from bbgrap_hls.quant.split import rescale_concat_inputs

    options = _check_options(plan_options)
    model_path = _model_path(model)
    shapes = _check_shapes(input_shape)
    board_obj, board_arg = _board(board)
    graph = canonicalize(load_model(model_path, shapes))
    check_qdq_model(model_path)  # as run --int8, once the file is known to load
    calib_arrays, calib_path = _calibration(calib, graph)
    graph = rescale_concat_inputs(graph, calib_arrays, seed=options.get("seed", 0))  # quant/split.py
    design = Design(model_path, board_obj, board_arg, graph, calib_arrays, calib_path, shapes, options)
    # As gen: a QDQ model plans on its int8 graph (its Q/DQ pairs gone), any other before
    # quantising, so that an infeasible plan is refused before calibration runs.
    target = design.int8_graph if is_qdq(graph) else graph
    stem = stem_option(options.get("space_to_depth", "auto"), target is not graph)  # gen's default
    planned = dict(options)
    if "one_output_slot" in planned:  # the CLI's name; make_plan's is out_slot
        planned["out_slot"] = planned.pop("one_output_slot")
    design.plan = plan_graph(target, board_obj, **{**planned, "space_to_depth": stem,
                                                   "pixel_pairs": options.get("pixel_pairs", "auto")})  # gen's
    if target is graph:  # the input layout the plan chose (passes/stem.py)
        from bbgrap_hls.passes.stem import as_planned

        design.graph = as_planned(graph, design.plan.input_blocks, getattr(design.plan, "input_patches", {}))
    return design


class Design:
    """A planned model: its plan, its int8 reference, and the gen / csim / sim steps.

    Attributes:
        plan: the `bbgrap_hls.plan.Plan` (``.fps``, ``.ii_cycles``, ``.latency_cycles``,
            ``.cores`` with per-core use and limits, ``.nodes``, ``.baselines`` ...; the
            fields of ``plan --json``, ``plan.to_dict()``).
        board: the `bbgrap_hls.board.Board`.
        graph: the canonical float graph (`bbgrap_hls.ir.Graph`).
        model_path: the ONNX file the design comes from.
        options: the planning options in force (defaults filled in).
        out: the folder `write` last wrote, or None.
    """

    def __init__(self, model_path: str, board: Board, board_arg: str | None, graph: Graph,
                 calib: dict[str, np.ndarray] | None, calib_path: str | None,
                 input_shape: dict[str, tuple[int, ...]], options: dict[str, Any]) -> None:
        self.model_path = model_path
        self.board = board
        self.graph = graph
        self.options = {"strategy": "search", "objective": "throughput", "seed": 0, "parallel_window": True,
                        "pixel_copies": True, **_GEN_DEFAULTS, **options}
        self.plan: Plan
        self.out: Path | None = None
        self._board_arg = board_arg
        self._calib = calib
        self._calib_path = calib_path
        self._input_shape = input_shape
        self._gq: Graph | None = None
        self._scratch: Path | None = None
        self._warned = False  # the synthetic-calibration warning was given

    def __repr__(self) -> str:
        p = getattr(self, "plan", None)
        what = f"ii {p.ii_cycles} cycles, {p.fps:,.1f} frames/s" if p is not None else "not planned"
        return f"<Design {self.graph.name} on {self.board.name}: {what}>"

    @property
    def inputs(self) -> list[str]:
        """The model's input names."""
        return list(self.graph.inputs)

    @property
    def outputs(self) -> list[str]:
        """The model's output names."""
        return list(self.graph.outputs)

    @property
    def int8_graph(self) -> Graph:
        """The quantised graph (calibrated on first use, as ``gen`` does it)."""
        if self._gq is None:
            from bbgrap_hls.quant.quantizer import quantize

            with warnings.catch_warnings():
                if self._warned:  # gen already said it (write ran first)
                    warnings.filterwarnings("ignore", message="no calibration samples given")
                self._gq = quantize(self.graph, self._calib, seed=self.options["seed"])
            self._warned = True
        return self._gq

    def predict(self, x: np.ndarray | dict[str, np.ndarray] | str | os.PathLike) -> np.ndarray | dict[str, np.ndarray]:
        """The integer reference on ``x``: float outputs exactly as ``run --int8`` writes them.

        Args:
            x: an array (a one-input model), a dict of arrays by input name, or a
                ``.npy``/``.npz`` path (as ``run --input``). Float arrays are quantised with
                the input's parameters; int8 arrays are taken as raw codes.

        Returns:
            The dequantised float32 output, or a dict by output name when there are several.

        Raises:
            BadInputError: a missing or unreadable file, an unknown input name, a wrong
                shape or dtype, NaN or Inf (the CLI's messages).
        """
        from bbgrap_hls.quant.execute import dequantize_outputs, run_int8

        feeds = self._feeds(x)
        out = self.int8_graph.declared_outputs(dequantize_outputs(self.int8_graph, run_int8(self.int8_graph, feeds)))
        return next(iter(out.values())) if len(out) == 1 else out

    def write(self, out: str | os.PathLike, force: bool = False) -> Path:
        """Write the project folder: what ``bbgrap-hls gen MODEL --board B -o OUT`` writes.

        Runs gen itself (`bbgrap_hls.commands.gen.run`) with this design's model, board,
        calibration and options, so the folder is byte-identical to the CLI's.

        Args:
            out: the output folder (created; must be empty unless ``force``).
            force: replace the files of an earlier gen in ``out`` (``--force``).

        Returns:
            ``out`` as a Path (also kept in `out`, for `csim` and `sim`).

        Raises:
            BadInputError: ``out`` is not empty (without ``force``), is a file, cannot be
                created; a `Board` object that is neither bundled nor from a file.
            InfeasibleError: gen's plan does not fit (only if the board changed on disk).
        """
        if not isinstance(out, (str, os.PathLike)):
            raise BadInputError(f"out: expected a folder path, got {type(out).__name__}")
        if not isinstance(force, bool):
            raise BadInputError(f"force: expected True or False, got {force!r}")
        self._write(Path(out), force)
        self.out = Path(out)
        return self.out

    def csim(self, x: np.ndarray | str | os.PathLike | None = None) -> CsimResult:
        """C-simulate the design with g++ against the integer reference (``bbgrap-hls csim``).

        Uses the folder `write` last wrote, else writes one to a temporary folder that
        lives as long as this object.

        Args:
            x: the input (array or ``.npy`` path); None: the seed input gen wrote.

        Returns:
            A `bbgrap_hls.codegen.csim.CsimResult`: ``.match``, ``.message``,
            ``.build_seconds``, ``.run_seconds`` (``csim --json``, ``.to_dict()``) and
            ``.outputs`` (int8 codes, NHWC frames, by output name). A mismatch is
            ``match`` False, not an exception.
        """
        from bbgrap_hls.commands.csim import csim_design

        out = self._folder()
        return csim_design(out, self._one_input(x), self._own_int8(out, x))

    def sim(self, x: np.ndarray | str | os.PathLike | None = None, frames: int = 2, *, waves: bool = False,
            cache: str | os.PathLike | None = None, runtime: str | os.PathLike | None = None) -> SimResult:
        """Simulate the RTL twin in Verilator under cocotb (``bbgrap-hls sim``).

        Args:
            x: the input (array or ``.npy`` path); None: the seed input gen wrote.
            frames: frames back to back (2 or more measure the ii).
            waves: write a waveform (path in ``.waves``).
            cache: Verilator build cache (default ``OUT/.sim``); a design built once is
                never built again.
            runtime: folder sharing Verilator's runtime objects between designs.

        Returns:
            A `bbgrap_hls.rtlsim.run.SimResult`: ``.match``, ``.measured_ii_cycles``
            (None with one frame: ``.ii_measured`` False), ``.predicted_ii_cycles``,
            latencies, ``.message`` ... (``sim --json``, ``.to_dict()``).
        """
        from bbgrap_hls.commands.sim import sim_design

        if isinstance(frames, bool) or not isinstance(frames, int):
            raise BadInputError(f"frames: expected an integer, got {frames!r}")
        out = self._folder()
        return sim_design(out, self._one_input(x), frames=frames, waves=bool(waves),
                          cache=Path(cache) if cache else None, runtime=Path(runtime) if runtime else None,
                          int8_graph=self._own_int8(out, x))

    # -- helpers ---------------------------------------------------------------------------

    def _feeds(self, x: Any) -> dict[str, np.ndarray]:
        from bbgrap_hls.commands.run import read_inputs

        if isinstance(x, (str, os.PathLike)):
            return read_inputs(str(x), self.graph)
        if isinstance(x, dict):
            unknown = sorted(set(map(str, x)) - set(self.graph.inputs))
            if unknown:
                raise BadInputError(f"x: arrays {', '.join(unknown)} name no model input "
                                    f"(inputs: {', '.join(self.graph.inputs)})")
            return {k: _array(v, f"x[{k!r}]") for k, v in x.items()}
        arr = _array(x, "x")
        if len(self.graph.inputs) != 1:
            raise BadInputError(f"x: one array given, the model has {len(self.graph.inputs)} inputs "
                                f"({', '.join(self.graph.inputs)}): give a dict by input name")
        return {self.graph.inputs[0]: arr}

    def _own_int8(self, out: Path, x: Any) -> Graph | None:
        """The int8 graph, when ``out`` is this design's own gen folder and ``x`` needs it."""
        return self.int8_graph if x is not None and out in (self.out, self._scratch) else None

    def _one_input(self, x: Any) -> np.ndarray | None:
        if x is None:
            return None
        if isinstance(x, (str, os.PathLike)):
            from bbgrap_hls.commands.csim import _load_input

            return _load_input(str(x))
        if isinstance(x, dict):
            if len(x) != 1:
                raise BadInputError("csim/sim input: the model has several inputs; give them through gen")
            x = next(iter(x.values()))
        return _array(x, "x")

    def _folder(self) -> Path:
        if self.out is not None:
            return self.out
        if self._scratch is None:
            tmp = Path(tempfile.mkdtemp(prefix="bbgrap-design-"))
            weakref.finalize(self, shutil.rmtree, tmp, True)
            self._write(tmp / "out", False)
            self._scratch = tmp / "out"
        return self._scratch

    def _write(self, out: Path, force: bool) -> None:
        from bbgrap_hls.cli import build_parser
        from bbgrap_hls.commands import gen
        from bbgrap_hls.plan import load_plan

        if self._board_arg is None:
            raise BadInputError(f"write: board '{self.board.name}' was given as a Board object that is not a "
                                "bundled board: give compile() the board's .yaml path")
        o = self.options
        argv = ["gen", self.model_path, "--board", self._board_arg, "-o", str(out), "--strategy", o["strategy"],
                "--objective", o["objective"], "--seed", str(o["seed"]),
                "--parallel-window" if o["parallel_window"] else "--no-parallel-window",
                "--pixel-copies" if o["pixel_copies"] else "--no-pixel-copies"]
        if "dsp_packing" in o:
            argv.append("--dsp-packing" if o["dsp_packing"] else "--no-dsp-packing")
        if "lut_macs" in o:
            argv.append("--lut-macs" if o["lut_macs"] else "--no-lut-macs")
        if "padded_folds" in o:
            argv.append("--padded-folds" if o["padded_folds"] else "--no-padded-folds")
        if "ddr_stages" in o:
            argv.append("--ddr-stages" if o["ddr_stages"] else "--no-ddr-stages")
        if "ddr_fifos" in o:
            argv.append("--ddr-fifos" if o["ddr_fifos"] else "--no-ddr-fifos")
        if "row_bands" in o:
            argv.append("--row-bands" if o["row_bands"] else "--no-row-bands")
        if o.get("lut_requant") is not None:
            argv.append("--lut-requant" if o["lut_requant"] else "--no-lut-requant")
        if o.get("short_rings") is not None:
            argv.append("--short-rings" if o["short_rings"] else "--no-short-rings")
        if o.get("one_output_slot") is not None:
            argv.append("--one-output-slot" if o["one_output_slot"] else "--no-one-output-slot")
        if o.get("move_boundaries") is not None:
            argv.append("--move-boundaries" if o["move_boundaries"] else "--no-move-boundaries")
        if "space_to_depth" in o:
            argv += ["--space-to-depth", o["space_to_depth"]]
        if "pixel_pairs" in o:
            argv += ["--pixel-pairs", o["pixel_pairs"]]
        if "arch" in o:
            argv += ["--arch", o["arch"]]
        if "max_batch" in o:
            argv += ["--max-batch", str(o["max_batch"])]
        for name, dims in self._input_shape.items():
            argv += ["--input-shape", f"{name}={'x'.join(map(str, dims))}"]
        if self._calib_path:
            argv += ["--calib", self._calib_path]
        if force:
            argv.append("--force")
        args = _parse(build_parser(), argv)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():  # gen's summary line
            if self._warned:  # quantising, gen repeats what int8_graph said
                warnings.filterwarnings("ignore", message="no calibration samples given")
            gen.run(args)
        self._warned = True
        written = load_plan((out / "plan.json").read_text())  # a dataflow Plan or an EnginePlan
        if written.to_json(stable=True) != self.plan.to_json(stable=True):
            differs = [k for k, v in _GEN_DEFAULTS.items() if o[k] != v]
            warnings.warn(f"{out}/plan.json differs from Design.plan (ii {written.ii_cycles} vs "
                          f"{self.plan.ii_cycles} cycles): gen plans "
                          + (f"without {', '.join(differs)}" if differs else "with its own search"),
                          stacklevel=3)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    try:
        return parser.parse_args(argv)
    except SystemExit:  # argparse's usage error: say what we asked for
        raise BadInputError(f"write: gen refused its arguments: {' '.join(argv)}") from None


def _array(x: Any, what: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple, float, int)) and not isinstance(x, bool):
        try:
            return np.asarray(x, dtype=np.float32)
        except (TypeError, ValueError):
            pass
    raise BadInputError(f"{what}: expected a numpy array, got {type(x).__name__}")


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    for k, v in options.items():
        if k not in PLAN_OPTIONS:
            raise BadInputError(f"unknown plan option '{k}': expected one of {', '.join(PLAN_OPTIONS)}")
        want = PLAN_OPTIONS[k]
        if (isinstance(v, bool) and want is not bool) or not isinstance(v, want):
            names = " or ".join(t.__name__ for t in (want if isinstance(want, tuple) else (want,)))
            raise BadInputError(f"{k}: expected {names}, got {v!r}")
    if "max_batch" in options and not options["max_batch"] >= 1:
        raise BadInputError(f"max_batch: expected a whole number of frames of at least 1, got {options['max_batch']!r}")
    if "time_limit" in options and not options["time_limit"] > 0:
        raise BadInputError(f"time_limit: expected a positive number of seconds, got {options['time_limit']!r}")
    return dict(options)


def _check_shapes(shapes: Any) -> dict[str, tuple[int, ...]]:
    from bbgrap_hls.frontend import parse_input_shapes

    if shapes is None:
        return {}
    if not isinstance(shapes, dict):
        raise BadInputError(f"input_shape: expected a dict of name -> shape, got {type(shapes).__name__}")
    specs = []
    for name, dims in shapes.items():
        try:
            specs.append(f"{name}={'x'.join(str(int(d)) for d in dims)}")
        except (TypeError, ValueError):
            raise BadInputError(f"input_shape[{name!r}]: expected a tuple of positive integers, got {dims!r}") from None
    return parse_input_shapes(specs)  # the CLI's checks and messages


def _store(data: bytes, suffix: str) -> str:
    """Save ``data`` under the temporary folder, named by its hash (the same bytes, the same
    path: a manifest that records it stays valid while the file lives)."""
    folder = Path(tempfile.gettempdir()) / "bbgrap-hls-inputs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(data).hexdigest()[:20]}{suffix}"
    if not path.is_file() or path.read_bytes() != data:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return str(path)


def _model_path(model: Any) -> str:
    if isinstance(model, onnx.ModelProto):
        return _store(model.SerializeToString(deterministic=True), ".onnx")
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    raise BadInputError(f"model: expected an ONNX file path or an onnx.ModelProto, got {type(model).__name__}")


def _board(board: Any) -> tuple[Board, str | None]:
    if isinstance(board, Board):
        try:
            same = load_board(board.name) == board
        except BadInputError:
            same = False
        return board, board.name if same else None
    if isinstance(board, (str, os.PathLike)):
        text = os.fspath(board)
        # a path as load_board tells them apart; gen gets the text as given (its manifest records it)
        return load_board(Path(text) if isinstance(board, os.PathLike) else text), text
    raise BadInputError(f"board: expected a bundled board name, a board .yaml path or a Board, "
                        f"got {type(board).__name__}")


def _calibration(calib: Any, graph: Graph) -> tuple[dict[str, np.ndarray] | None, str | None]:
    from bbgrap_hls.quant.calib import check_calibration, load_calibration

    if calib is None:
        return None, None
    if isinstance(calib, (str, os.PathLike)):
        return load_calibration(calib, graph), os.path.abspath(calib)
    if isinstance(calib, np.ndarray):
        if len(graph.inputs) != 1:
            raise BadInputError(f"calib: the model has {len(graph.inputs)} inputs; give a dict by input name "
                                f"({', '.join(graph.inputs)})")
        calib = {graph.inputs[0]: calib}
    if not isinstance(calib, dict) or not all(isinstance(v, np.ndarray) for v in calib.values()):
        raise BadInputError(f"calib: expected a .npy/.npz path, an array or a dict of arrays, "
                            f"got {type(calib).__name__}")
    arrays = check_calibration(graph, calib, "calib")
    buf = io.BytesIO()
    np.savez(buf, **{k: np.ascontiguousarray(v) for k, v in sorted(calib.items())})
    return arrays, _store(buf.getvalue(), ".npz")
