"""``bbgrap-hls gen``: model + board → a ready-to-build output folder (DESIGN.md, "Output folder")."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from bbgrap_hls.commands.common import add_model_args, add_plan_options, load_canonical
from bbgrap_hls.errors import BadInputError

MANIFEST = "manifest.json"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("gen", help="write HLS C++, testbench vectors and the plan for a model")
    add_model_args(p)
    p.add_argument("--board", required=True, help="bundled board name or board YAML path")
    p.add_argument("-o", "--out", required=True, metavar="OUT", help="output folder")
    p.add_argument("--calib", metavar="C.npy", help="calibration samples (default: synthetic)")
    p.add_argument("--strategy", default="search", help="plan strategy (see `bbgrap-hls plan`)")
    p.add_argument("--objective", default="throughput", choices=("throughput", "latency"))
    p.add_argument("--seed", type=int, default=0, help="seeds calibration, search and the test input")
    add_plan_options(p)
    p.add_argument("--kernels", choices=("hls", "rtl"), default="hls",
                   help="Vitis kernels of vitis/: HLS C++ (default) or the RTL twin's cores as RTL kernels "
                        "(rtl_kernel/, package_xo scripts; docs/codegen.md, \"RTL kernels\")")
    p.add_argument("--force", action="store_true", help="replace the files of an earlier gen in OUT")
    return p


def _seed_input(graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t: rng.standard_normal(graph.model_input_shape(t)).astype(np.float32) for t in graph.inputs}


def _npy_bytes(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    old = _check_out(out, args.force)
    # The report's figures (matplotlib: ~1-1.5 s to import, ~1 s to draw) are made by a child
    # process started now, so that they overlap loading, planning, quantising and codegen.
    worker = _ReportWorker()
    try:
        return _run(args, out, old, worker)
    finally:
        worker.close()


def _run(args: argparse.Namespace, out: Path, old: list[str], worker: _ReportWorker) -> int:
    from bbgrap_hls.board import load_board
    from bbgrap_hls.commands.common import plan_graph, stem_option
    from bbgrap_hls.quant import is_qdq
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.quant.split import rescale_concat_inputs

    board = load_board(args.board)
    graph = load_canonical(args)
    calib = None
    if args.calib:
        from bbgrap_hls.quant.calib import load_calibration

        calib = load_calibration(args.calib, graph)
    graph = rescale_concat_inputs(graph, calib, seed=args.seed)  # nodes the plan must see (quant/split.py)
    # Plan before quantising: an infeasible plan is refused before the calibration runs.
    # A QDQ model's Q/DQ pairs are gone from the int8 graph only (and quantising it runs
    # no calibration): plan on that one.
    qdq = is_qdq(graph)
    gq = quantize(graph, calib, seed=args.seed) if qdq else None
    plan = plan_graph(gq if qdq else graph, board, strategy=args.strategy, objective=args.objective,
                      seed=args.seed, parallel_window=args.parallel_window,
                      pixel_copies=args.pixel_copies, offchip_weights=args.offchip_weights,
                      dsp_packing=args.dsp_packing, lut_macs=args.lut_macs,
                      space_to_depth=stem_option(args.space_to_depth, qdq), lut_requant=args.lut_requant,
                      padded_folds=args.padded_folds, ddr_stages=args.ddr_stages, ddr_fifos=args.ddr_fifos,
                      pixel_pairs=args.pixel_pairs, row_bands=args.row_bands, short_rings=args.short_rings,
                      out_slot=args.one_output_slot, move_boundaries=args.move_boundaries, arch=args.arch,
                      max_batch=args.max_batch)
    if not qdq:  # the input layout the plan chose (passes/stem.py): quantised and generated so
        from bbgrap_hls.passes.stem import as_planned

        graph = as_planned(graph, plan.input_blocks, getattr(plan, "input_patches", {}))
    try:  # the temporary folder sits next to OUT so that the final moves stay on one file system
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_ctx = tempfile.TemporaryDirectory(prefix=".bbgrap-gen-", dir=out.parent)
    except OSError as e:
        raise BadInputError(f"{out}: cannot create the output folder ({e.strerror or e})") from None
    with tmp_ctx as tmp:
        tmpd = Path(tmp)
        try:
            if plan.architecture != "engine":  # an engine design's report has no figures (engine_gen.report)
                worker.submit(plan, graph, tmpd / "_report")
            return _finish(args, out, old, worker, board, graph, gq, calib, plan, tmpd)
        finally:
            worker.close()  # the child writes into tmpd: stop it before tmpd is removed


def _finish(args, out: Path, old: list[str], worker: _ReportWorker, board, graph, gq, calib, plan,
            tmpd: Path) -> int:
    from bbgrap_hls.codegen.project import generate, sha256
    from bbgrap_hls.quant.quantizer import quantize

    if gq is None:
        gq = quantize(graph, calib, seed=args.seed)
    feeds = _seed_input(graph, args.seed)
    from bbgrap_hls import progress

    engine = plan.architecture == "engine"
    with progress.task("gen: code", ticker=True):
        if engine:
            files = _engine_files(args, gq, plan, board, feeds)
        else:
            files, design = generate(gq, plan, board, feeds)
            if args.kernels == "rtl":
                from bbgrap_hls.codegen.vitis_rtl import rtl_kernel_files

                files = rtl_kernel_files(design, gq, plan, board, files)
    files["plan.json"] = plan.to_json(stable=True).encode()
    if engine:
        files["tb/seed_input.npy"] = _npy_bytes(next(iter(feeds.values())))  # the engine takes one input
        worker.close()  # nothing submitted: report.md is engine_gen's
    else:
        for t, x in feeds.items():
            ident = next(i for tt, i, _ in design.inputs if tt == t)
            files[f"tb/seed_{ident}.npy"] = _npy_bytes(x)
        worker.collect(plan, graph, tmpd / "_report", files)  # the report joins before the manifest
    # Inputs by content (the board as its resolved numbers, so an edited board file shows).
    # The model and calibration paths are recorded because `csim --input` recomputes the
    # reference from them.
    board_json = json.dumps(board.to_dict(), sort_keys=True).encode()
    inputs = {"model": sha256(Path(args.model).read_bytes()), "board": board.name,
              "board_sha256": sha256(board_json),
              "calib": sha256(Path(args.calib).read_bytes()) if args.calib else None}
    options = {"strategy": args.strategy, "objective": args.objective, "seed": args.seed,
               "parallel_window": args.parallel_window,
               "pixel_copies": args.pixel_copies, "offchip_weights": args.offchip_weights,
               "dsp_packing": args.dsp_packing, "lut_macs": args.lut_macs, "lut_requant": args.lut_requant,
               "padded_folds": args.padded_folds, "ddr_stages": args.ddr_stages, "ddr_fifos": args.ddr_fifos,
               "pixel_pairs": args.pixel_pairs, "row_bands": args.row_bands, "short_rings": args.short_rings,
               "one_output_slot": args.one_output_slot, "move_boundaries": args.move_boundaries, "arch": args.arch,
               "max_batch": args.max_batch, "kernels": args.kernels,
               "space_to_depth": args.space_to_depth,
               "input_shape": list(args.input_shape), "model_path": os.path.abspath(args.model),
               "board_arg": args.board, "calib_path": os.path.abspath(args.calib) if args.calib else None}
    manifest = {"tool": "bbgrap-hls", "versions": _versions(), "inputs": inputs, "options": options,
                "files": {k: sha256(v) for k, v in sorted(files.items())}}
    files[MANIFEST] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    for rel, data in files.items():
        p = tmpd / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    out.mkdir(parents=True, exist_ok=True)
    for rel in old:  # --force: only what an earlier gen wrote
        (out / rel).unlink(missing_ok=True)
    for rel in sorted(files, key=lambda r: (r == MANIFEST, r)):  # manifest last: marks completion
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmpd / rel, dst)
    if engine:
        per = "a frame" if plan.frames == 1 else f"a call of {plan.frames} frames"
        print(f"gen: {len(files)} files in {out} (layer engine on {plan.cores} core(s), {plan.cycles} cycles {per})")
    else:
        print(f"gen: {len(files)} files in {out} ({len(design.cores)} core(s), plan ii {plan.ii_cycles} cycles)")
    return 0


def _engine_files(args, gq, plan, board, feeds) -> dict[str, bytes]:
    """`bbgrap_hls.codegen.engine_gen.generate_engine`, with gen's refusals as errors."""
    from bbgrap_hls.codegen.engine_gen import generate_engine
    from bbgrap_hls.errors import UnsupportedError

    if args.kernels == "rtl":
        raise BadInputError("--kernels rtl: a layer-engine plan has no RTL kernels (its RTL twin is not a Vitis "
                            "kernel yet); use --kernels hls or --arch dataflow")
    try:
        return generate_engine(gq, plan, board, feeds)
    except NotImplementedError as e:
        raise UnsupportedError(str(e)) from None


def _check_out(out: Path, force: bool) -> list[str]:
    if out.exists() and not out.is_dir():
        raise BadInputError(f"{out}: exists and is not a folder")
    if not out.exists() or not any(out.iterdir()):
        return []
    man = out / MANIFEST
    if not force:
        raise BadInputError(f"{out}: folder is not empty (use --force to replace an earlier gen's files)")
    if not man.exists():
        raise BadInputError(f"{out}: not empty and has no {MANIFEST}: refusing to replace files gen did not write")
    try:
        listed = list(json.loads(man.read_text())["files"]) + [MANIFEST]
    except (ValueError, KeyError) as e:
        raise BadInputError(f"{out / MANIFEST}: unreadable ({e})") from None
    bad = [r for r in listed if Path(r).is_absolute() or ".." in Path(r).parts]
    if bad:
        raise BadInputError(f"{out / MANIFEST}: lists a path outside the folder: {bad[0]}")
    return listed


def _report_child(conn, parent: int) -> None:
    """Child process of `_ReportWorker`: import the report, then draw what the parent sends."""
    from bbgrap_hls.search.parallel import detach_child

    # a terminal's Ctrl-C reaches this child too: the parent reports it and stops the child
    # (`_ReportWorker.close`); without this the child printed a second line ("Process ...")
    detach_child(parent)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401

        from bbgrap_hls.report import _figures, write_report  # noqa: F401  (warms matplotlib)
    except ImportError:
        write_report = None
    try:
        job = conn.recv()
    except EOFError:
        return
    if job is None or write_report is None:
        conn.send("skipped")
        return
    from bbgrap_hls.plan import Plan

    plan_dict, graph, folder = job
    try:
        write_report(Plan.from_dict(plan_dict), graph, folder)
        conn.send("ok")
    except BaseException as e:  # the parent redoes it in process and raises with a traceback
        conn.send(f"error: {type(e).__name__}: {e}")


class _ReportWorker:
    """Writes ``report.md`` and its figures in a forked child process (see `run`).

    Falls back to drawing in process when no child can be started or the child fails, so
    that the output (and any error) is the same as without it.
    """

    def __init__(self) -> None:
        self.proc = self.conn = None
        try:
            import multiprocessing as mp

            ctx = mp.get_context("fork")
            sys.stdout.flush()  # a forked child must not write the parent's buffered text again
            sys.stderr.flush()
            self.conn, child = ctx.Pipe()
            self.proc = ctx.Process(target=_report_child, args=(child, os.getpid()), daemon=True)
            self.proc.start()
            child.close()
        except (OSError, ValueError, ImportError):
            self.proc = self.conn = None
        self.sent = False

    def submit(self, plan, graph, folder: Path) -> None:
        """Start drawing ``plan`` (the stable one: report.md stays byte-identical)."""
        if self.conn is None:
            return
        try:
            self.conn.send((plan.to_dict(stable=True), graph, folder))
            self.sent = True
        except (OSError, ValueError):
            self.close()

    def collect(self, plan, graph, folder: Path, files: dict[str, bytes]) -> None:
        """Wait for the report and add its files to ``files``."""
        status = None
        if self.sent and self.conn is not None:
            try:
                status = self.conn.recv()
            except (EOFError, OSError):
                status = None
        self.close()
        if status == "skipped":
            return
        if status != "ok":  # no child, or it failed: draw here (errors raise as usual)
            try:
                from bbgrap_hls.report import write_report
            except ImportError:
                return
            from bbgrap_hls.plan import Plan

            shutil.rmtree(folder, ignore_errors=True)
            write_report(Plan.from_dict(plan.to_dict(stable=True)), graph, folder)
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                files[str(p.relative_to(folder))] = p.read_bytes()

    def close(self) -> None:
        """Stop the child: at once when it has no job (gen failed early), else after its job."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            if not self.sent:
                self.proc.kill()
            self.proc.join(timeout=5)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()
            self.proc = None


def _versions() -> dict[str, str]:
    import jinja2
    import onnx

    from bbgrap_hls import __version__

    return {"bbgrap-hls": __version__, "numpy": np.__version__, "onnx": onnx.__version__,
            "jinja2": jinja2.__version__, "python": sys.version.split()[0]}

