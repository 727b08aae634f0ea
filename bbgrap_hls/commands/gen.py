"""``bbgrap-hls gen``: model + board → a ready-to-build output folder (DESIGN.md, "Output folder")."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from bbgrap_hls.commands.common import add_model_args, load_canonical
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
    p.add_argument("--parallel-window", action="store_true",
                   help="let convolutions read several window positions per cycle (simd > C; HLS only, "
                        "the RTL twin does not support it yet)")
    p.add_argument("--force", action="store_true", help="replace the files of an earlier gen in OUT")
    return p


def _seed_input(graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t: rng.standard_normal(graph.shape(t)).astype(np.float32) for t in graph.inputs}


def _npy_bytes(a: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def run(args: argparse.Namespace) -> int:
    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen.project import generate, sha256
    from bbgrap_hls.quant import is_qdq
    from bbgrap_hls.quant.quantizer import quantize
    from bbgrap_hls.search import make_plan

    out = Path(args.out)
    old = _check_out(out, args.force)
    board = load_board(args.board)
    graph = load_canonical(args)
    calib = None
    if args.calib:
        from bbgrap_hls.quant.calib import load_calibration

        calib = load_calibration(args.calib, graph)
    # Plan before quantising: an infeasible plan is refused before the calibration runs.
    # A QDQ model's Q/DQ pairs are gone from the int8 graph only (and quantising it runs
    # no calibration): plan on that one.
    qdq = is_qdq(graph)
    gq = quantize(graph, calib, seed=args.seed) if qdq else None
    plan = make_plan(gq if qdq else graph, board, strategy=args.strategy, objective=args.objective,
                     seed=args.seed, parallel_window=args.parallel_window)
    if gq is None:
        gq = quantize(graph, calib, seed=args.seed)
    feeds = _seed_input(graph, args.seed)
    files, design = generate(gq, plan, board, feeds)
    files["plan.json"] = plan.to_json(stable=True).encode()
    for t, x in feeds.items():
        ident = next(i for tt, i, _ in design.inputs if tt == t)
        files[f"tb/seed_{ident}.npy"] = _npy_bytes(x)
    try:  # the temporary folder sits next to OUT so that the final moves stay on one file system
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_ctx = tempfile.TemporaryDirectory(prefix=".bbgrap-gen-", dir=out.parent)
    except OSError as e:
        raise BadInputError(f"{out}: cannot create the output folder ({e.strerror or e})") from None
    with tmp_ctx as tmp:
        tmpd = Path(tmp)
        _report(graph, plan, board, tmpd, files)
        inputs = {"model": sha256(Path(args.model).read_bytes()), "board": board.name,
                  "calib": sha256(Path(args.calib).read_bytes()) if args.calib else None}
        options = {"strategy": args.strategy, "objective": args.objective, "seed": args.seed,
                   "parallel_window": args.parallel_window,
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
    print(f"gen: {len(files)} files in {out} ({len(design.cores)} core(s), plan ii {plan.ii_cycles} cycles)")
    return 0


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


def _report(graph, plan, board, tmpd: Path, files: dict[str, bytes]) -> None:
    try:
        from bbgrap_hls.report import write_report
    except ImportError:
        return
    from bbgrap_hls.plan import Plan

    rep = tmpd / "_report"
    rep.mkdir()
    # The stable plan (search time 0) keeps report.md byte-identical between runs.
    write_report(Plan.from_dict(plan.to_dict(stable=True)), graph, rep)
    for p in sorted(rep.rglob("*")):
        if p.is_file():
            files[str(p.relative_to(rep))] = p.read_bytes()


def _versions() -> dict[str, str]:
    import jinja2
    import onnx

    from bbgrap_hls import __version__

    return {"bbgrap-hls": __version__, "numpy": np.__version__, "onnx": onnx.__version__,
            "jinja2": jinja2.__version__, "python": sys.version.split()[0]}
