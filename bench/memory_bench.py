"""Memory-hierarchy bench (issue 12): torchvision ImageNet classifiers x deployment boards.

For every model (built by ``bench/zoo.py`` at its real shapes) and board it prints:

- feasible or not under ``plan --arch auto`` (the faster feasible of the dataflow plan and the
  layer engine, `plan_engine`; the one-line refusals when neither fits), the dataflow plan with off-chip weights
  on (``make_plan(..., offchip_weights=True)``), the predicted frames/s, and the frames/s
  with off-chip weights off for comparison;
- a roofline, the least of
  (a) compute: the total DSP limit of all cores x clock / MACs per frame, at the MACs per
      DSP per cycle the default options allow (two with DSP packing, `MACS_PER_DSP`);
  (b) memory: the sum over cores of each core's usable off-chip rate
      (``board.offchip_share(k)`` bytes/cycle x clock) / the off-chip bytes per frame the
      plan moves (infinite when it moves none); the bound if *all* weights were off chip
      (bytes = parameters, int8) is printed beside it;
  (c) input link: ``board.host.bandwidth_gbps`` x 1e9 / input bytes per frame (int8 3x224x224);
- fps / roofline and which bound binds;
- the published Vitis AI DPU figure for the same model and board where one exists, with
  its source (``DPU`` below; never a figure without a source).

Every plan runs in a forked child with a wall-clock limit (``--plan-timeout``; the planner's
own ``time_limit`` only bounds its local search); a timed-out or crashed plan is a row that
says so, with the traceback on stderr.

Run: ``python bench/memory_bench.py [--quick] [--models a,b] [--boards x,y] [--markdown]``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zoo import ZOO, measure  # noqa: E402

from bbgrap_hls.board import load_board  # noqa: E402

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "googlenet",
          "squeezenet1_1", "regnety_400mf", "vgg16"]
BOARDS = ["zcu102", "kv260", "zcu104", "u250", "u280"]
QUICK_MODELS = ["squeezenet1_1"]  # (with ResNet-18 too the CI test took 100-133 s)
QUICK_BOARDS = ["zcu102", "u250"]  # (kv260's engines plan 2-4 times longer: the test stays short)
INPUT_BYTES = 3 * 224 * 224  # int8 NCHW input of one frame

# -- published Vitis AI DPU figures -------------------------------------------------------
# End-to-end throughput, multi-thread column, frames/s, as the Vitis AI model zoo README
# (or the Vitis AI Library user guide) prints it. Each entry names the table it comes from; the DPU model in that table is the
# closest one to the torchvision architecture (noted where it differs).
SOURCES = {
    "VAI-1.3": ("Xilinx/Vitis-AI models/AI-Model-Zoo/README.md (Vitis AI 1.3 model zoo, commit "
                "00638091302a5f242372de6a6db65565a6abc9b6), section \"Performance on {table}\", "
                "column \"E2E throughput -fps(Multi Thread)\""),
    "UG1354-2.5": ("Vitis AI Library User Guide UG1354 v2.5, \"{table}\", "
                   "https://docs.amd.com/r/2.5-English/ug1354-xilinx-ai-sdk/ZCU104-Evaluation-Board, "
                   "column \"Performance (fps) (Multiple thread)\""),
}
_TABLE = {("VAI-1.3", "zcu102"): "ZCU102 (0432055-05)", ("VAI-1.3", "zcu104"): "ZCU104",
          ("VAI-1.3", "u250"): "U250", ("VAI-1.3", "u280"): "U280",
          ("UG1354-2.5", "zcu104"): "ZCU104 Evaluation Board"}
# (model, board) -> (fps, source key, the zoo model it is measured on)
DPU: dict[tuple[str, str], tuple[float, str, str]] = {
    # ZCU102 (0432055-05), 3 x B4096 @ 281 MHz
    ("resnet18", "zcu102"): (469.1, "VAI-1.3", "cf_resnet18_imagenet_224_224_3.65G"),
    ("resnet50", "zcu102"): (164.7, "VAI-1.3", "cf_resnet50_imagenet_224_224_7.7G"),
    ("mobilenet_v2", "zcu102"): (712.0, "VAI-1.3", "cf_mobilenetv2_imagenet_224_224_0.59G"),
    ("googlenet", "zcu102"): (428.1, "VAI-1.3", "cf_inceptionv1_imagenet_224_224_3.16G (GoogLeNet, no BN)"),
    ("squeezenet1_1", "zcu102"): (1035.4, "VAI-1.3", "cf_squeeze_imagenet_227_227_0.76G (227x227)"),
    ("vgg16", "zcu102"): (40.5, "VAI-1.3", "tf_vgg16_imagenet_224_224_30.96G"),
    # ZCU104, 2 x B4096 @ 300 MHz
    ("resnet18", "zcu104"): (409.7, "VAI-1.3", "cf_resnet18_imagenet_224_224_3.65G"),
    ("resnet50", "zcu104"): (144.7, "VAI-1.3", "cf_resnet50_imagenet_224_224_7.7G"),
    ("mobilenet_v2", "zcu104"): (589.3, "VAI-1.3", "cf_mobilenetv2_imagenet_224_224_0.59G"),
    ("googlenet", "zcu104"): (368.0, "VAI-1.3", "cf_inceptionv1_imagenet_224_224_3.16G (GoogLeNet, no BN)"),
    ("squeezenet1_1", "zcu104"): (925.7, "VAI-1.3", "cf_squeeze_imagenet_227_227_0.76G (227x227)"),
    ("vgg16", "zcu104"): (36.8, "VAI-1.3", "tf_vgg16_imagenet_224_224_30.96G"),
    ("efficientnet_b0", "zcu104"): (146.1, "UG1354-2.5", "efficientnet-b0_tf2 (224x224, 0.36 GOPS)"),
    # Alveo U250, 4 x DPUv1 (DPUCADX8G) @ 350 MHz
    ("resnet18", "u250"): (2422.5, "VAI-1.3", "cf_resnet18_imagenet_224_224_3.65G"),
    ("resnet50", "u250"): (1223.95, "VAI-1.3", "cf_resnet50_imagenet_224_224_7.7G"),
    ("googlenet", "u250"): (4059.8, "VAI-1.3", "cf_inceptionv1_imagenet_224_224_3.16G (GoogLeNet, no BN)"),
    ("squeezenet1_1", "u250"): (2349.7, "VAI-1.3", "cf_squeeze_imagenet_227_227_0.76G (227x227)"),
    # Alveo U280, 14 x DPUv3E (DPUCAHX8H) @ 300 MHz
    ("resnet18", "u280"): (1649.2, "VAI-1.3", "cf_resnet18_imagenet_224_224_3.65G"),
    ("resnet50", "u280"): (801.2, "VAI-1.3", "cf_resnet50_imagenet_224_224_7.7G"),
    ("googlenet", "u280"): (1235.5, "VAI-1.3", "cf_inceptionv1_imagenet_224_224_3.16G (GoogLeNet, no BN)"),
    ("squeezenet1_1", "u280"): (2899.2, "VAI-1.3", "cf_squeeze_imagenet_227_227_0.76G (227x227)"),
    ("vgg16", "u280"): (183.7, "VAI-1.3", "tf_vgg16_imagenet_224_224_30.96G"),
}


def dpu_source(model: str, board: str) -> str:
    """The full citation of the DPU figure of ``model`` on ``board``."""
    _, key, zoo_model = DPU[(model, board)]
    return SOURCES[key].format(table=_TABLE[(key, board)]) + f", row {zoo_model}"


# -- planning in a child with a wall-clock limit -------------------------------------------

def _dataflow_row(graph, board_name: str, offchip: bool) -> dict:
    from bbgrap_hls.search import make_plan

    p = make_plan(graph, load_board(board_name), offchip_weights=offchip, baselines=False,
                  space_to_depth="auto")  # gen's and plan's default
    cores = [(c.id, c.memory, c.bw, c.bw_limit, c.offchip_bytes_per_frame) for c in p.cores]
    # bytes of transfers through a board memory (an off-chip buffer: written once, read once)
    buffers = sum(2 * (tr.bits_per_frame // 8) for tr in p.transfers if tr.memory)
    return {"fps": p.fps, "ii": p.ii_cycles, "bottleneck": p.bottleneck, "cores": cores,
            "ddr_nodes": sum(1 for n in p.nodes if n.weights == "ddr"), "buffer_bytes": buffers}


def _engine_row(graph, board_name: str) -> dict:
    from bbgrap_hls.search.arch import best_engine

    p = best_engine(graph, load_board(board_name))  # as plan --arch auto/engine plans it
    return {"fps": p.fps, "ii": p.cycles, "bottleneck": p.bottleneck, "bytes": sum(p.bytes.values()),
            "size": f"{p.pe}x{p.simd}{_layout(p)}{f', B={p.frames}' if p.frames > 1 else ''}"}


def _layout(p) -> str:
    """The input layout of engine plan ``p`` (passes/stem.py): s2d blocks, or the stem's window
    unfolded by the host, ``1xkw`` (a kernel row's taps) or ``khxkw`` (all of them)."""
    if p.input_blocks:
        return ", s2d"
    for d in p.input_patches.values():
        (kh, kw), rows = d["kernel"], d["rows"]
        return f", unfold {kh if rows else 1}x{kw}"
    return ""


def _child(conn, row, *args) -> None:
    """``row(*args)`` sent through ``conn`` with ``ok`` and ``seconds``; a refusal (infeasible,
    or an operator the engine does not run) as its first line, a crash with its traceback."""
    from bbgrap_hls.errors import InfeasibleError

    t = time.monotonic()
    try:
        conn.send({"ok": True, **row(*args), "seconds": time.monotonic() - t})
    except (InfeasibleError, NotImplementedError) as e:
        conn.send({"ok": False, "error": str(e).splitlines()[0], "seconds": time.monotonic() - t})
    except Exception as e:  # a crash: reported in the row and on stderr, never hidden
        conn.send({"ok": False, "crash": True, "error": f"CRASH {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                   "traceback": traceback.format_exc(), "seconds": time.monotonic() - t})
    finally:
        conn.close()


def plan(graph, board_name: str, offchip: bool | None, timeout: float) -> dict:
    """make_plan (``offchip`` None: the layer engine, `search.arch.best_engine`) in a forked child;
    ``{"ok": False, "error": "timeout ..."}`` past ``timeout`` s."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    t = time.monotonic()
    work = (_dataflow_row, graph, board_name, offchip) if offchip is not None else (_engine_row, graph, board_name)
    proc = ctx.Process(target=_child, args=(send, *work))
    proc.start()
    send.close()
    res = None
    if recv.poll(timeout):
        try:
            res = recv.recv()
        except EOFError:
            res = None
    if res is None:
        if proc.is_alive():
            proc.kill()
            res = {"ok": False, "timeout": True, "error": f"timeout: no plan within {timeout:.0f} s"}
        else:
            proc.join()
            res = {"ok": False, "crash": True, "error": f"CRASH: planner process died (exit {proc.exitcode})"}
    proc.join()
    res["wall"] = time.monotonic() - t
    if res.get("traceback"):
        print(f"[{graph.name if hasattr(graph, 'name') else ''} on {board_name}, offchip={offchip}]\n"
              f"{res['traceback']}", file=sys.stderr, flush=True)
    return res



from bbgrap_hls.model.blocks import LUT_MUL, LUT_PER_MAC  # noqa: E402
from bbgrap_hls.search.problem import DSP_PACKING, LUT_MACS  # noqa: E402

MACS_PER_DSP = 2 if DSP_PACKING else 1
"""int8 MACs per DSP per cycle the compute bound assumes (two products per DSP48E2 with DSP
packing, the planner's default)."""
LUTS_PER_MAC = LUT_MUL + LUT_PER_MAC if LUT_MACS else 0
"""LUTs of one LUT MAC lane (its product and adder-tree share) the compute bound counts, with
LUT multipliers on (the planner's default): every LUT of the limits spent on MACs."""

# -- rows ----------------------------------------------------------------------------------

def roofline(board, macs: int, params: int, offchip_bytes: int | None) -> dict:
    """The three bounds (frames/s), the roofline and what sets it."""
    hz = board.clock_mhz * 1e6
    # the MACs per DSP per cycle the planner's default options allow: two with DSP packing
    lanes = sum(c.dsp_limit for c in board.cores) * MACS_PER_DSP
    if LUTS_PER_MAC:  # plus the LUT MACs the LUT limits allow (the plan's own roofline does the same)
        lanes += sum(c.lut_limit for c in board.cores) // LUTS_PER_MAC
    compute = lanes * hz / macs
    bw = sum(board.offchip_share(c.id) for c in board.cores) * hz  # bytes/s
    mem_all = bw / params if bw > 0 else 0.0
    memory = None if offchip_bytes is None else (bw / offchip_bytes if offchip_bytes > 0 else math.inf)
    link = board.host.bandwidth_gbps * 1e9 / INPUT_BYTES
    bounds = {"compute": compute, "input link": link}
    if memory is not None:
        bounds["memory"] = memory
    binds = min(bounds, key=bounds.get)
    return {"compute": compute, "memory": memory, "memory_all": mem_all, "input": link,
            "roofline": bounds[binds], "binds": binds, "bw_gbs": bw / 1e9}


def run_pair(name: str, graph, info: dict, board_name: str, timeout: float) -> dict:
    board = load_board(board_name)
    on = plan(graph, board_name, True, timeout)
    off = plan(graph, board_name, False, timeout)
    eng = plan(graph, board_name, None, timeout)
    # what `plan --arch auto` keeps: the faster feasible one (its ceiling only skips engines
    # that cannot be faster)
    arch = "engine" if eng["ok"] and (not on["ok"] or eng["fps"] > on["fps"]) else "dataflow"
    chosen = eng if arch == "engine" else on
    offchip = None
    if chosen["ok"]:
        offchip = eng["bytes"] if arch == "engine" else sum(c[4] for c in on["cores"]) + on["buffer_bytes"]
    roof = roofline(board, info["macs"], info["params"], offchip)
    return {"model": name, "board": board_name, "on": on, "off": off, "engine": eng, "arch": arch,
            "chosen": chosen, "roof": roof, "offchip": offchip}


def _f(x: float | None, nd: int = 0) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:,.{nd}f}"


COLUMNS = ["model", "board", "feasible", "fps", "arch", "dataflow fps", "fps on-chip only", "engine fps", "compute",
           "memory", "memory all-weights", "input link", "roofline", "binds", "fps/roofline", "plan bottleneck",
           "off-chip MB/frame", "plan s", "DPU fps"]


def _refusal(error: str) -> str:
    """A refusal shortened to the resource it names ("refused: BRAM18 short by at least 1,394")."""
    import re

    m = re.search(r"(\w+) is short by at least (\d+)", error) or re.search(r"(\w+) is short by (\d+)", error)
    if m:
        return f"refused: {m.group(1)} short by {'at least ' if 'at least' in m.group(0) else ''}{int(m.group(2)):,}"
    return "refused: " + error[:120]


def _fps_or_why(p: dict) -> str:
    if p["ok"]:
        return _f(p["fps"], 1)
    return "timeout" if p.get("timeout") else "crash" if p.get("crash") else "infeasible"


def cells(r: dict) -> list[str]:
    on, off, eng, ch, roof = r["on"], r["off"], r["engine"], r["chosen"], r["roof"]
    feas = "yes" if ch["ok"] else f"no: {_refusal(on['error'])}; engine: {eng['error'][:160]}"
    fps = _f(ch["fps"], 1) if ch["ok"] else "-"
    ratio = f"{ch['fps'] / roof['roofline']:.0%}" if ch["ok"] else "-"
    mb = _f(r["offchip"] / 1e6, 2) if r["offchip"] is not None else "-"
    secs = f"{on['wall']:.1f} + {off['wall']:.1f} + {eng['wall']:.1f}"
    dpu = DPU.get((r["model"], r["board"]))
    dpu_s = f"{dpu[0]:,.1f} [{dpu[1]}]" if dpu else "-"
    return [r["model"], r["board"], feas, fps, r["arch"] if ch["ok"] else "-",
            _f(on["fps"], 1) if on["ok"] else _refusal(on["error"]), _fps_or_why(off),
            _fps_or_why(eng) + (f" ({eng['size']})" if eng["ok"] else ""),
            _f(roof["compute"]), _f(roof["memory"]), _f(roof["memory_all"]), _f(roof["input"]),
            _f(roof["roofline"]), roof["binds"] if ch["ok"] else "-", ratio, ch["bottleneck"] if ch["ok"] else "-",
            mb, secs, dpu_s]


def print_text(rows: list[dict]) -> None:
    table = [COLUMNS] + [cells(r) for r in rows]
    widths = [max(len(t[i]) for t in table) for i in range(len(COLUMNS))]
    for k, t in enumerate(table):
        print("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(t, widths, strict=True))))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def print_markdown(rows: list[dict]) -> None:
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(COLUMNS))) + "|")
    for r in rows:
        print("| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |")


def print_notes(rows: list[dict], boards: list[str]) -> None:
    print()
    print(f"Bounds in frames/s. compute: (sum of the cores' DSP limits x {MACS_PER_DSP} + their LUT limits / "
          f"{LUTS_PER_MAC or 'inf'}) x clock / MACs ({MACS_PER_DSP} int8 MACs per DSP per cycle, one per "
          f"{LUTS_PER_MAC} LUTs with LUT multipliers); memory: sum of offchip_share(k) x clock / off-chip bytes the plan moves per frame "
          "(inf: it moves none; '-': no plan); memory all-weights: the same rate / parameters (every weight "
          "off chip, int8); input link: host GB/s / 150,528 input bytes. 'binds' is the least of "
          "compute, memory and input link. 'plan s': wall seconds of the dataflow plan with off-chip weights + "
          "without + the layer engine's plan. 'arch': what `plan --arch auto` keeps, the faster feasible of the "
          "dataflow plan (off-chip weights allowed) and the layer engine (docs/engine.md; 'engine fps' with its "
          "conv unit's PE x SIMD); fps, roofline, memory, bottleneck and off-chip MB are that plan's. "
          "'plan bottleneck': the block or link the plan's ii comes from, or what bounds the engine.")
    for b in boards:
        bd = load_board(b)
        bw = sum(bd.offchip_share(c.id) for c in bd.cores)
        print(f"  {b}: {len(bd.cores)} core(s), {sum(c.dsp_limit for c in bd.cores):,} DSP (limit), "
              f"{bd.clock_mhz:g} MHz, off-chip {bw:.1f} B/cycle = {bw * bd.clock_mhz / 1e3:.2f} GB/s, "
              f"host {bd.host.bandwidth_gbps:g} GB/s")
    used = sorted({(r["model"], r["board"]) for r in rows if (r["model"], r["board"]) in DPU})
    if used:
        print()
        print("DPU figures (published, measured end to end, multi-thread; our figures are the plan's "
              "prediction at the board clock):")
        for m, b in used:
            print(f"  {m} on {b}: {DPU[(m, b)][0]:,.1f} fps; {dpu_source(m, b)}")
    crashes = [(r, k) for r in rows for k in ("on", "off", "engine") if r[k].get("crash") or r[k].get("timeout")]
    if crashes:
        print()
        print("Crashes / timeouts:")
        for r, k in crashes:
            what = "layer engine" if k == "engine" else f"offchip_weights={k == 'on'}"
            print(f"  {r['model']} on {r['board']} ({what}): {r[k]['error']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK_MODELS)} on {', '.join(QUICK_BOARDS)}")
    ap.add_argument("--models", help=f"comma-separated subset of the zoo (default: {', '.join(MODELS)})")
    ap.add_argument("--boards", help=f"comma-separated boards (default: {', '.join(BOARDS)})")
    ap.add_argument("--markdown", action="store_true", help="a markdown table (docs/benchmarks.md)")
    ap.add_argument("--plan-timeout", type=float, default=300.0, help="wall seconds per plan (default 300)")
    args = ap.parse_args(argv)
    models = QUICK_MODELS if args.quick else MODELS
    boards = QUICK_BOARDS if args.quick else BOARDS
    if args.models:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.boards:
        boards = [b.strip() for b in args.boards.split(",") if b.strip()]
    unknown = [m for m in models if m not in ZOO]
    if unknown:
        ap.error(f"unknown model(s): {', '.join(unknown)} (known: {', '.join(ZOO)})")
    for b in boards:
        load_board(b)  # a bad board name fails here, before any planning
    t0 = time.monotonic()
    rows = []
    for m in models:
        graph, info = measure(ZOO[m]())
        for b in boards:
            r = run_pair(m, graph, info, b, args.plan_timeout)
            rows.append(r)
            ch = r["chosen"]
            print(f"# {m} on {b}: {r['arch'] + ' fps ' + _f(ch['fps'], 1) if ch['ok'] else r['on']['error']} "
                  f"({r['on']['wall']:.1f} s + {r['off']['wall']:.1f} s + {r['engine']['wall']:.1f} s)",
                  file=sys.stderr, flush=True)
    (print_markdown if args.markdown else print_text)(rows)
    print_notes(rows, boards)
    print(f"\n{len(rows)} model/board pairs, {3 * len(rows)} plans, {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
