"""``bbgrap-hls boards``: list the bundled boards with their totals."""

from __future__ import annotations

import argparse
import json


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("boards", help="list bundled boards", description=__doc__.splitlines()[0])
    p.add_argument("board", nargs="?", help="show one board (bundled name or path) in detail")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def run(args: argparse.Namespace) -> int:
    from bbgrap_hls.board import list_boards, load_board

    boards = [load_board(args.board)] if args.board else list_boards()
    if args.json:
        data = [b.to_dict() for b in boards]
        print(json.dumps(data[0] if args.board else data, indent=2, sort_keys=True))
        return 0
    head = f"{'board':<11} {'cores':>5} {'MHz':>5} {'DSP':>7} {'BRAM18':>7} {'URAM':>5} {'LUT':>10}  links"
    print(head)
    print("-" * len(head))
    for b in boards:
        links = ", ".join(f"{ln.a}-{ln.b}" for ln in b.links) or "-"
        print(f"{b.name:<11} {len(b.cores):>5} {b.clock_mhz:>5g} {b.total_dsp:>7,} {b.total_bram18:>7,} "
              f"{b.total_uram:>5,} {b.total_lut:>10,}  {links}")
    if args.board:
        b = boards[0]
        print(f"\n{b.description}\n")
        for c in b.cores:
            print(f"  core {c.id} {c.name:<8} slr={c.slr} dsp {c.dsp_limit:,}/{c.dsp:,}  bram18 "
                  f"{c.bram18_limit:,}/{c.bram18:,}  uram {c.uram_limit:,}/{c.uram:,}  lut {c.lut_limit:,}/{c.lut:,}"
                  f"  (limit/budget, cap {c.cap:g})")
        for m in b.memories:
            print(f"  memory {m.name}: {m.kind} {m.bandwidth_gbps:g} GB/s, cores {list(m.cores)}")
        print(f"  host: {b.host.kind} {b.host.bandwidth_gbps:g} GB/s")
        print(f"  source: {b.source}")
    return 0
