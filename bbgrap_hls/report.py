"""The plan report: ``report.md`` with figures, and ``partition.dot`` coloured by core.

`write_report` is called by ``gen``. Figures use matplotlib's Agg backend (no display);
the PNGs carry no timestamp metadata so that the same plan gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from bbgrap_hls.ir import Graph
from bbgrap_hls.plan import Plan

COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")


def _dot_id(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def partition_dot(plan: Plan, graph: Graph) -> str:
    """Graphviz DOT of the mapped graph: one cluster per core, nodes coloured by core,
    edges labelled with their channel kind (fifo, stream, host)."""
    lines = ["digraph partition {", "  rankdir=TB;", '  node [shape=box, style=filled, fontname="Helvetica"];']
    for c in plan.cores:
        if not c.nodes:
            continue
        col = COLOURS[c.id % len(COLOURS)]
        lines.append(f"  subgraph cluster_core{c.id} {{")
        lines.append(f'    label="core {c.id} ({c.name}) ii={c.ii_cycles}"; color="{col}";')
        for n in c.nodes:
            lines.append(f'    {_dot_id(n + "@" + str(c.id))} [label={_dot_id(n)}, fillcolor="{col}"];')
        lines.append("  }")
    for h in plan.host_ops:
        lines.append(f'  {_dot_id(h + "@host")} [label={_dot_id(h + " (host)")}, fillcolor="#dddddd"];')
    lines.append('  "@input" [shape=oval]; "@output" [shape=oval];')
    seen = set()
    for ch in plan.channels:
        src = "@input" if ch.src == "@input" else f"{ch.src}@{ch.src_core}"
        dst = "@output" if ch.dst == "@output" else f"{ch.dst}@{ch.dst_core}"
        key = (src, dst, ch.tensor)
        if key in seen:
            continue
        seen.add(key)
        style = {"fifo": "solid", "stream": "bold", "buffer": "dashed", "host": "dotted", "ddr_fifo": "dashed"}[ch.kind]
        lines.append(f"  {_dot_id(src)} -> {_dot_id(dst)} [label={_dot_id(f'{ch.kind} d={ch.depth}')}, "
                     f"style={style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _figures(plan: Plan, out: Path) -> list[str]:
    # The object API with the Agg canvas: no pyplot (its import alone costs ~1 s) and no
    # global figure state.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    def subplots(figsize):
        fig = Figure(figsize=figsize)
        FigureCanvasAgg(fig)
        return fig, fig.subplots()

    meta = {"Software": None}
    made = []
    used = [c for c in plan.cores if c.nodes]
    # 1. utilisation per core
    fig, ax = subplots(figsize=(7, 3.5))
    res = ("dsp", "bram18", "uram", "lut")
    width = 0.8 / len(res)
    for i, r in enumerate(res):
        vals = [100 * getattr(c, r) / max(1, getattr(c, f"{r}_limit")) for c in used]
        ax.bar([k + i * width for k in range(len(used))], vals, width, label=r)
    ax.axhline(100, color="k", lw=0.8, ls="--")
    ax.set_xticks([k + 1.5 * width for k in range(len(used))], [f"core {c.id}" for c in used])
    ax.set_ylabel("% of limit (budget x cap)")
    ax.set_title("Per-core utilisation")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "utilisation.png", dpi=100, metadata=meta)
    made.append("utilisation.png")
    # 2. per-layer ii with the bottleneck
    blocks = [n for n in plan.nodes if n.block not in ("host", "fused", "wire")]
    fig, ax = subplots(figsize=(max(6, 0.25 * len(blocks)), 3.5))
    cols = [COLOURS[(n.core or 0) % len(COLOURS)] for n in blocks]
    ax.bar(range(len(blocks)), [n.ii_cycles for n in blocks], color=cols)
    for k, n in enumerate(blocks):
        if n.name == plan.bottleneck:
            ax.bar([k], [n.ii_cycles], color="none", edgecolor="k", lw=2)
    ax.axhline(plan.ii_cycles, color="k", lw=0.8, ls="--", label=f"design ii {plan.ii_cycles}")
    ax.set_xticks(range(len(blocks)), [n.name for n in blocks], rotation=90, fontsize=6)
    ax.set_ylabel("ii (cycles/frame)")
    ax.set_title("Per-layer ii (colour = core, outlined = bottleneck)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "layer_ii.png", dpi=100, metadata=meta)
    made.append("layer_ii.png")
    # 3. pipeline timeline: three frames through the blocks, one row per block
    fig, ax = subplots(figsize=(8, max(3, 0.2 * len(blocks))))
    start = 0
    for k, n in enumerate(blocks):
        for f in range(3):
            ax.barh(k, max(1, n.ii_cycles), left=start + f * plan.ii_cycles, height=0.7,
                    color=COLOURS[(n.core or 0) % len(COLOURS)], alpha=1.0 - 0.25 * f)
        start += n.latency_cycles
    ax.set_yticks(range(len(blocks)), [n.name for n in blocks], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("cycles (frames 0, 1, 2 spaced by the design ii)")
    ax.set_title("Pipeline timeline")
    fig.tight_layout()
    fig.savefig(out / "timeline.png", dpi=100, metadata=meta)
    made.append("timeline.png")
    return made


def write_report(plan: Plan, graph: Graph, out_dir: str | Path) -> Path:
    """Write ``report.md``, its figures and ``partition.dot`` into ``out_dir``.

    Returns:
        The path of ``report.md``.
    """
    from bbgrap_hls.commands.plan import format_plan

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "partition.dot").write_text(partition_dot(plan, graph), encoding="utf-8")
    figs = _figures(plan, out)
    md = [f"# Plan of {plan.model} on {plan.board}", "",
          f"- ii: **{plan.ii_cycles} cycles** (bottleneck `{plan.bottleneck}`), "
          f"**{plan.fps:,.1f} frames/s** at {plan.clock_mhz:g} MHz",
          f"- latency: {plan.latency_cycles} cycles = {plan.latency_us:,.2f} us",
          *([f"- why not faster: {plan.bottleneck_note}"] if plan.bottleneck_note else []),
          f"- strategy `{plan.strategy}`, objective `{plan.objective}`, optimal: {plan.optimal}",
          f"- {plan.optimality_note}", ""]
    if plan.baselines:
        md += ["| baseline | frames/s | speed-up |", "|---|---:|---:|"]
        for k, v in sorted(plan.baselines.items()):
            md.append(f"| {k} | {v:,.1f} | {plan.fps / v:.2f}x |" if v > 0 else f"| {k} | infeasible | - |")
        md.append("")
    md += ["## Summary", "", "```", format_plan(plan).rstrip(), "```", ""]
    md += ["## Figures", ""] + [f"![{f}]({f})" for f in figs]
    md += ["", "Partition graph: `partition.dot` (render with `dot -Tsvg partition.dot`).", ""]
    path = out / "report.md"
    path.write_text("\n".join(md), encoding="utf-8")
    return path
