"""``bbgrap-hls csim OUT``: g++ C simulation of a generated design vs the integer reference."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bbgrap_hls.errors import BadInputError, MismatchError
from bbgrap_hls.simtools import stop_children_on_interrupt

if TYPE_CHECKING:
    from bbgrap_hls.codegen.csim import CsimResult
    from bbgrap_hls.ir import Graph


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("csim", help="compile the generated HLS C++ with g++ and compare with the reference")
    p.add_argument("out", metavar="OUT", help="a folder written by `bbgrap-hls gen`")
    p.add_argument("--input", metavar="X.npy", help="input array (default: the seed input of gen)")
    p.add_argument("-o", "--output", metavar="Y.npy", help="write the fabric's int8 outputs here, (frames, elements) "
                   "per output: .npy for one output, .npz keyed by output name for several")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON (match, message, seconds; threaded: every stream's highest "
                        "fill against its depth, every process's counted cycles per frame next to its static "
                        "bound and the plan's ii)")
    p.add_argument("--threads", action=argparse.BooleanOptionalAction, default=None,
                   help="every DATAFLOW process a thread over bounded FIFOs of the generated depths, deadlocks "
                        "reported (the default); --no-threads: one process after another over unbounded streams")
    return p


def run(args: argparse.Namespace) -> int:
    x = _load_input(args.input) if args.input else None
    names = _output_names(Path(args.out), args.output) if args.output else []
    res = csim_design(Path(args.out), x, threads=args.threads, schedule=args.json)
    print(json.dumps(res.to_dict(), indent=2, sort_keys=True) if args.json else res.message)
    if args.output:
        meta = json.loads((Path(args.out) / "tb" / "vectors.json").read_text())
        frames = res.frames if meta.get("architecture") == "engine" else meta["frames"]  # engine: --input's frames
        ys = {n: res.outputs[n].reshape(frames, -1) for n in names if res.outputs.get(n) is not None}
        if len(ys) == len(names):
            _save(Path(args.output), ys)
    if not res.ok:
        raise MismatchError(res.message)
    return 0


def csim_design(out: Path, x: np.ndarray | None = None, int8_graph: Graph | None = None,
                threads: bool | None = None, schedule: bool = False) -> CsimResult:
    """C-simulate the design in ``out`` (a gen folder) on ``x`` (None: gen's seed input).

    ``threads``: the threaded C simulation (bounded FIFOs, deadlock detection) or the
    sequential one; None: `bbgrap_hls.codegen.csim.DEFAULT_THREADS`.

    ``int8_graph``: the int8 graph gen quantised for ``out`` when the caller has it (the
    API), so that the expected outputs for ``x`` need no second calibration.

    ``schedule`` (threaded, `csim --json`): after a passing run, run the testbench again at
    `SCHEDULE_REPEAT` times the vectors and fill ``CsimResult.schedule`` with every process's
    steady-state counted cycles per frame (the difference of the two runs), its static bound
    and the plan's ii (`bbgrap_hls.codegen.schedule`); a process over the plan's ii by more
    than 5 % is flagged there and named in the message.

    The ``csim`` command and `bbgrap_hls.Design.csim` both run here. A mismatch is the
    result's ``match`` False, not an exception.

    A layer-engine design (``tb/vectors.json`` says ``"architecture": "engine"``) runs
    `bbgrap_hls.codegen.engine_gen.csim`: its kernel and testbench with g++, every frame's
    output compared bit for bit; ``threads`` and ``schedule`` do not apply to it (ignored).

    Raises:
        BadInputError: ``out`` is not a gen folder, ``x`` is not a valid input, no g++.
    """
    from bbgrap_hls.codegen import csim

    meta_p = out / "tb" / "vectors.json"
    if not meta_p.exists():
        raise BadInputError(f"{out}: no tb/vectors.json (not a folder written by `bbgrap-hls gen`)")
    meta = json.loads(meta_p.read_text())
    if meta.get("architecture") == "engine":  # a layer-engine design (docs/codegen.md, "Engine designs")
        from bbgrap_hls.codegen.engine_gen import csim as csim_engine

        with stop_children_on_interrupt():
            return csim_engine(out, x, int8_graph, threads=threads)
    outputs = [(o["tensor"], o["ident"], o["elems"]) for o in meta["outputs"]]
    start = time.time()
    try:
        with stop_children_on_interrupt(), tempfile.TemporaryDirectory(prefix="bbgrap-csim-") as tmp:
            # the testbench reads in_/expect_*.bin and writes out_*.bin in one folder: a
            # temporary one, so that an interrupted run leaves no half-written file in ``out``
            vec = Path(tmp)
            if x is not None:
                _vectors_for(out, meta, x, vec, int8_graph)
            else:
                for o in meta["inputs"] + meta["outputs"]:
                    for name in (f"in_{o['ident']}.bin", f"expect_{o['ident']}.bin"):
                        if (out / "tb" / name).exists():
                            shutil.copyfile(out / "tb" / name, vec / name)
            threaded = csim.DEFAULT_THREADS if threads is None else threads
            res = csim.run(out, vec, outputs, threads=threaded, frames=meta["frames"])
            if schedule and threaded and res.ok:
                _schedule(out, vec, outputs, res)
            return res
    except KeyboardInterrupt:
        _drop_unfinished_builds(out / ".csim", start)
        raise


#: csim --json runs the vectors this many times for the steady-state cycle counts: 12 frames
#: more than the first run, whole groups of conv_mvu_mmv's M <= 4 pixels (docs/cost-model.md)
SCHEDULE_REPEAT = 13


def _schedule(out: Path, vec: Path, outputs, res: CsimResult) -> None:
    """Fill ``res.schedule`` (see `csim_design`) from a second run at `SCHEDULE_REPEAT`."""
    from bbgrap_hls.codegen import csim, schedule

    if not (out / "plan.json").exists():  # a folder of generated files without gen's plan: no ii to hold to
        return
    again = csim.run(out, vec, outputs, threads=True, repeat=SCHEDULE_REPEAT, frames=res.frames)
    if not again.ok:
        res.message += f"\nSCHEDULE: the run at {SCHEDULE_REPEAT}x the frames failed: {again.message[:300]}"
        return
    res.schedule = schedule.compare(schedule.design_bounds(out), again.procs, again.frames, res.frames, res.procs)
    over = [r for r in res.schedule if r["over"]]
    if over:
        res.message += (f"\nSCHEDULE: {len(over)} process(es) over the plan's ii by more than "
                        f"{schedule.TOLERANCE:.0%}: " + "; ".join(
                            f"{r['id']} {r['label']} counted {r['counted']}, bound {r['bound']:.0f}, "
                            f"plan {r['plan_ii']}" for r in over[:10]))


def _drop_unfinished_builds(cache: Path, since: float) -> None:
    """Remove the g++ build folders (``out/.csim/<hash>``) an interrupted csim left unfinished:
    touched since ``since`` and without a linked ``tb`` or still holding object files (a
    finished build deletes them), so that no later csim runs a half-linked binary."""
    if not cache.is_dir():
        return
    for d in cache.iterdir():
        try:
            recent = d.stat().st_mtime >= since - 1
        except OSError:
            continue
        if d.is_dir() and recent and (not (d / "tb").exists() or any(d.glob("*.o"))):
            shutil.rmtree(d, ignore_errors=True)


def _output_names(out: Path, path: str) -> list[str]:
    """The design's output tensors, in graph order; several need a ``.npz`` ``-o`` path
    (checked before the simulation runs, as ``run -o`` checks it)."""
    try:
        names = [o["tensor"] for o in json.loads((out / "tb" / "vectors.json").read_text())["outputs"]]
    except (OSError, ValueError, KeyError):
        return []  # not a gen folder: csim_design says so in its own words
    if len(names) > 1 and Path(path).suffix != ".npz":
        raise BadInputError(f"{path}: the design has {len(names)} outputs ({', '.join(names)}); "
                            "write them to a .npz file")
    return names


def _save(path: Path, ys: dict[str, np.ndarray]) -> None:
    """One output as ``.npy`` (or a ``.npz`` keyed by its name), several as a ``.npz`` keyed by
    output name, each ``(frames, elements)`` int8; written through a temporary file in the
    same folder and `os.replace`: the file is either absent or whole, even when the run is
    interrupted."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            if path.suffix == ".npz":
                np.savez(f, **ys)
            else:
                np.save(f, next(iter(ys.values())))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _load_input(path: str) -> np.ndarray:
    """The ``--input`` array; an unreadable file is a one-line BadInputError."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise BadInputError(f"{path}: not a readable .npy file ({type(e).__name__}: {e})") from None


def _vectors_for(out: Path, meta: dict, x: np.ndarray, vec: Path, gq: Graph | None = None) -> None:
    """Input and expected vectors for another input: from ``gq`` (the design's int8 graph)
    when given, else recomputed from the gen options the manifest records."""
    from bbgrap_hls.codegen.vectors import golden, to_stream_order

    if gq is None:
        gq = int8_graph_of(out)
    if len(meta["inputs"]) != 1:
        raise BadInputError("csim --input: the model has several inputs; give them through gen")
    env = golden(gq, {meta["inputs"][0]["tensor"]: x})
    for i in meta["inputs"]:
        (vec / f"in_{i['ident']}.bin").write_bytes(to_stream_order(env[i["tensor"]]).tobytes())
    for i in meta["outputs"]:
        (vec / f"expect_{i['ident']}.bin").write_bytes(to_stream_order(env[i["tensor"]]).tobytes())


def int8_graph_of(out: Path) -> Graph:
    """The int8 graph of the gen folder ``out``, requantised from the model, calibration, seed
    and input layout its manifest and plan record (as gen quantised it)."""
    from bbgrap_hls.frontend import load_model, parse_input_shapes
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.passes.stem import as_planned
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.quant.split import rescale_concat_inputs

    man = json.loads((out / "manifest.json").read_text())
    o = man["options"]
    graph = canonicalize(load_model(o["model_path"], parse_input_shapes(o["input_shape"])))
    calib = None
    if o.get("calib_path"):
        from bbgrap_hls.quant.calib import load_calibration

        calib = load_calibration(o["calib_path"], graph)
    doc = json.loads((out / "plan.json").read_text())
    held = as_planned(rescale_concat_inputs(graph, calib, seed=o["seed"]), doc.get("input_blocks", {}),
                      doc.get("input_patches", {}))
    return quantize(held, calib, seed=o["seed"])
