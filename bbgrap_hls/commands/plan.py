"""``bbgrap-hls plan MODEL --board B``: partition a model over a board's cores."""

from __future__ import annotations

import argparse
import sys

from bbgrap_hls.commands.common import (
    add_model_args,
    add_plan_options,
    load_canonical,
    plan_graph,
    stem_option,
)
from bbgrap_hls.plan import Plan


def add_parser(sub) -> argparse.ArgumentParser:
    from bbgrap_hls.search import OBJECTIVES, STRATEGIES

    p = sub.add_parser("plan", help="partition a model over a board's cores (prints the plan)")
    add_model_args(p)
    p.add_argument("--board", required=True, help="bundled board name or board .yaml path")
    p.add_argument("--strategy", choices=STRATEGIES, default="search")
    p.add_argument("--objective", choices=OBJECTIVES, default="throughput")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="T",
                   help="seconds for the local search of --strategy search (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calib", default=None, help="ignored by plan (accepted for symmetry with gen)")
    p.add_argument("--json", action="store_true", help="print plan.json instead of the tables")
    add_plan_options(p)
    p.add_argument("--no-narrow", action="store_true",
                   help="keep the strategy's own foldings (skip the final pass that gives every block "
                        "the cheapest folding meeting the design ii; docs/plan.md)")
    return p


def run(args: argparse.Namespace) -> int:
    from bbgrap_hls.board import load_board
    from bbgrap_hls.quant import is_qdq
    from bbgrap_hls.quant.split import rescale_concat_inputs

    board = load_board(args.board)
    graph = rescale_concat_inputs(load_canonical(args), seed=args.seed)  # as gen (quant/split.py)
    qdq = is_qdq(graph)
    if qdq:  # as gen: a QDQ model plans on its int8 graph (its Q/DQ pairs gone; no calibration)
        from bbgrap_hls.quant.quantizer import quantize

        graph = quantize(graph, None, seed=args.seed)
    plan = plan_graph(graph, board, strategy=args.strategy, objective=args.objective,
                      time_limit=args.time_limit, seed=args.seed, parallel_window=args.parallel_window,
                      narrow_folding=not args.no_narrow, pixel_copies=args.pixel_copies,
                      offchip_weights=args.offchip_weights, dsp_packing=args.dsp_packing, lut_macs=args.lut_macs,
                      space_to_depth=stem_option(args.space_to_depth, qdq),
                      lut_requant=args.lut_requant, padded_folds=args.padded_folds, ddr_stages=args.ddr_stages,
                      ddr_fifos=args.ddr_fifos, pixel_pairs=args.pixel_pairs, row_bands=args.row_bands,
                      short_rings=args.short_rings, out_slot=args.one_output_slot,
                      move_boundaries=args.move_boundaries, arch=args.arch, max_batch=args.max_batch)
    if args.json:
        sys.stdout.write(plan.to_json())
    else:
        sys.stdout.write(format_engine_plan(plan) if plan.architecture == "engine" else format_plan(plan))
    return 0


def input_layout_lines(plan) -> list[str]:
    """How the host writes each input the plan holds in another layout (passes/stem.py)."""
    from bbgrap_hls.ir.graph import Patches

    lines = [f"input {t} as {s}x{s} pixel blocks ({s * s} pixels a beat; the stem conv reads them)"
             for t, s in sorted(plan.input_blocks.items())]
    for t, d in sorted(getattr(plan, "input_patches", {}).items()):
        p = Patches.from_dict(d)
        (kh, kw), (_, c, _, _), (_, ch, h, w) = p.kernel, p.model, p.shape()
        taps = f"all {kh}x{kw} taps" if p.rows else f"the {kw} taps of each kernel row"
        lines.append(f"input {t} as the stem conv's window, {taps} unfolded into channels by the host "
                     f"({c} -> {ch} channels, {h}x{w} positions)")
    return lines


def format_engine_plan(plan) -> str:
    """The readable summary of a layer-engine plan (`bbgrap_hls.model.engine_plan.EnginePlan`):
    why the engine, its sizes, memory, resources per unit against the core's limits, the
    costliest steps, the frame and what bounds it."""
    mhz = plan.clock_mhz
    nb = getattr(plan, "frames", 1)
    banded = sum(st.bands > 1 for st in plan.steps if st.unit == "conv")
    lines = [f"model {plan.model or '?'} on {plan.board} ({mhz:g} MHz), architecture: layer engine "
             f"(docs/engine.md){f'; {plan.why}' if plan.why else ''}", "",
             f"engine on each of {plan.cores} core(s), "
             f"{'frames in turn' if nb == 1 else f'{nb} frames a start'}: conv unit {plan.pe} x {plan.simd} "
             f"({'two products a DSP48E2' if plan.pack else 'one product a DSP48E2'}), window unit {plan.taps} "
             f"tap(s) a cycle, element-wise unit {plan.lanes} byte lanes, {plan.beat}-byte AXI beats, conv input "
             f"buffer {plan.in_buffer:,} bytes ({f'{banded} conv(s) in row bands' if banded else 'whole maps'}"
             f"{', in URAM' if plan.ibuf_uram else ''}{f', {plan.tile_uram} columns of its tile rows in URAM' if plan.tile_uram else ''})",
             *input_layout_lines(plan),
             f"memory: latency {plan.latency} cycles, a beat every {plan.period} cycle(s) a channel; per frame "
             + ", ".join(f"{k.replace('_', ' ')} {v:,} B" for k, v in plan.bytes.items())
             + f"; {plan.bandwidth:.1f} of {plan.share:.1f} B/cycle on average", "",
             f"  {'part':<10} {'dsp':>7} {'bram18':>7} {'uram':>6} {'lut':>9}"]
    for part, r in plan.resources.items():
        lines.append(f"  {part:<10} {r['dsp']:>7} {r['bram18']:>7} {r['uram']:>6} {r['lut']:>9}")
    lim = plan.limits
    lines.append(f"  {'limit':<10} {lim['dsp']:>7} {lim['bram18']:>7} {lim['uram']:>6} {lim['lut']:>9}")
    lines += ["", f"  {'step':<34} {'unit':<8} {'mode':<6} {'bands' if nb == 1 else 'runs':>5} {'cycles':>12} "
                  f"{'share':>6}"]
    for st in sorted(plan.steps, key=lambda st: -st.cycles)[:12]:
        lines.append(f"  {st.nodes[0][:34]:<34} {st.unit:<8} {st.mode[:6]:<6} {st.bands:>5} {st.cycles:>12,} "
                     f"{st.cycles / plan.cycles:>6.1%}{'' if st.exact else ' (write bound)'}")
    if len(plan.steps) > 12:
        lines.append(f"  ... {len(plan.steps) - 12} more steps ({len(plan.steps)} in all)")
    what = "a frame" if nb == 1 else f"a start of {nb} frames"
    lines += ["", ("frame: " if nb == 1 else "start: ") + ", ".join(f"{u} unit {c:,}" for u, c in plan.by_unit.items())
              + f", sequencer {plan.sequencer:,} cycles; MAC efficiency {plan.efficiency:.0%}",
              f"ii {plan.cycles:,} cycles {what} on one engine -> {plan.fps_core:,.1f} frames/s, "
              f"{plan.fps:,.1f} on {plan.cores} engine(s); latency {plan.cycles / mhz:,.1f} us",
              f"bound by {plan.bottleneck}"]
    lines += [f"note: {n}" for n in plan.notes]
    lines.append(f"plan {plan.plan_seconds:.2f} s")
    return "\n".join(lines) + "\n"


def format_plan(plan: Plan) -> str:
    """The readable summary: one table per core, totals, speed-ups over the baselines."""
    lines = [f"model {plan.model} on {plan.board} ({plan.clock_mhz:g} MHz), strategy {plan.strategy}, "
             f"objective {plan.objective}", ""]
    lines[-1:-1] = input_layout_lines(plan)  # --space-to-depth (passes/stem.py)
    by_name = {n.name: n for n in plan.nodes}
    for c in plan.cores:
        if not c.nodes:
            continue
        lines.append(f"core {c.id} ({c.name}): ii {c.ii_cycles} cycles")
        lines.append(f"  {'node':<32} {'op':<18} {'pe':>5} {'simd':>5} {'mmv':>3} {'ii':>10} {'dsp':>6} {'bram18':>7} "
                     f"{'uram':>5} {'lut':>8}  weights")
        for name in c.nodes:
            n = by_name[name]
            part = next((p for p in n.split or [] if p.core == c.id), None)
            src = part or n
            tag = f" [co {part.co_begin}:{part.co_end}]" if part else ""
            mark = " *" if name == plan.bottleneck else ""
            lines.append(f"  {name[:32]:<32} {(n.op + tag)[:18]:<18} {src.pe:>5} {src.simd:>5} {src.mmv:>3} {src.ii_cycles:>10} "
                         f"{src.dsp:>6} {src.bram18:>7} {src.uram:>5} {src.lut:>8}  {src.weights or '-'}"
                         f"{', packed' if src.pack == 2 else ', LUT MACs' if src.pack == 0 else ''}"
                         f"{', LUT requant' if src.requant == 'lut' else ''}"
                         f"{', short ring' if not part and n.short_ring else ''}{' in URAM' if not part and n.ring_uram else ''}"
                         f"{', 1 out slot' if not part and n.out_slots == 1 else ''}"
                         f"{', dense groups' if n.dense_groups else ', whole px in' if n.wide_groups else ''}"
                         f"{f', {src.px} px in / {1 if part else n.po} out' if src.px > 1 else ''}{mark}")
        lines.append(f"  {'use / limit':<55} {'':>10} {_frac(c.dsp, c.dsp_limit):>6} "
                     f"{_frac(c.bram18, c.bram18_limit):>7} {_frac(c.uram, c.uram_limit):>5} "
                     f"{_frac(c.lut, c.lut_limit):>8}")
        lines.append(f"  {'':<55} {'':>10} {c.dsp:>6} {c.bram18:>7} {c.uram:>5} {c.lut:>8}  used")
        lines.append(f"  {'':<55} {'':>10} {c.dsp_limit:>6} {c.bram18_limit:>7} {c.uram_limit:>5} "
                     f"{c.lut_limit:>8}  limit")
        if c.bw_limit:
            gbs = plan.clock_mhz * 1e6 / 1024 / 1e9
            lines.append(f"  off-chip weights in {c.memory}: {c.offchip_bytes_per_frame:,} bytes/frame, "
                         f"{c.bw * gbs:.2f} of {c.bw_limit * gbs:.2f} GB/s reserved "
                         f"({_frac(c.bw, c.bw_limit).strip()})")
        lines.append("")
    tot = {r: sum(getattr(c, r) for c in plan.cores) for r in ("dsp", "bram18", "uram", "lut")}
    lines.append(f"total: {tot['dsp']} DSP, {tot['bram18']} BRAM18, {tot['uram']} URAM, {tot['lut']} LUT "
                 f"on {sum(1 for c in plan.cores if c.nodes)} core(s)")
    if plan.host_ops:
        lines.append(f"host ops: {', '.join(plan.host_ops)}")
    in_memory = [c for c in plan.channels if c.kind == "ddr_fifo"]
    if in_memory:
        lines.append("FIFOs in board memory: " + ", ".join(
            f"{c.src} -> {c.dst} ({c.depth:,} beats of {c.width_lanes} lanes, {c.regions} "
            + ("frame regions)" if c.chunks == 1 else f"regions, a frame in {c.chunks})")
            for c in in_memory))
    lines.append(f"ii {plan.ii_cycles} cycles (bottleneck {plan.bottleneck}) -> {plan.fps:,.1f} frames/s; "
                 f"latency {plan.latency_cycles} cycles = {plan.latency_us:,.2f} us")
    if plan.bottleneck_note:
        lines.append(f"why not faster: {plan.bottleneck_note}")
    if plan.roofline:
        r = plan.roofline
        def fmt(v):
            return "-" if v is None else f"{v:,.0f}"

        lines.append(f"roofline: compute {fmt(r['compute_fps'])}, memory {fmt(r['memory_fps'])}, input link "
                     f"{fmt(r['input_fps'])} frames/s; {r['binds']} binds; this plan reaches "
                     f"{100 * r['fraction']:.0f} % of it")
    opt = plan.optimizer
    lines.append(f"optimizer: {opt.get('transfers_before', 0)} cross-core edges -> {opt.get('transfers_after', 0)} "
                 f"transfers; buffers {opt.get('buffers_before', 0)} -> {opt.get('buffers_after', 0)}, barriers "
                 f"{opt.get('barriers_before', 0)} -> {opt.get('barriers_after', 0)}; off-chip bytes/frame "
                 f"{opt.get('offchip_bytes_per_frame_before', 0)} -> {opt.get('offchip_bytes_per_frame_after', 0)}")
    if "narrowed_blocks" in opt:
        lines.append(f"narrowing: {opt['narrowed_blocks']} block(s) refolded to the cheapest folding meeting "
                     f"the ii; pe*simd lanes {opt['lanes_before']} -> {opt['lanes_after']}")
    lines.append(f"optimal: {'yes' if plan.optimal else 'no'} ({plan.optimality_note}); "
                 f"search {plan.search_seconds:.2f} s")
    for name, fps in sorted(plan.baselines.items()):
        ratio = f"{plan.fps / fps:.2f}x" if fps > 0 else "baseline infeasible"
        lines.append(f"  vs {name:<7} {fps:>16,.1f} frames/s  speed-up {ratio}")
    return "\n".join(lines) + "\n"


def _frac(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"
