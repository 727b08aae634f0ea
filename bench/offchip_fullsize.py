"""Benchmark: off-chip weights on the full-size ResNet-18 (checks moved out of the test suite).

Usage: ``python bench/offchip_fullsize.py [--no-csim]`` (about 2 minutes on 2 cores; the C
simulation is most of it).

Three checks that need ImageNet shapes, which the tests run on small networks and boards
(tests/test_offchip.py: LeNet on a small core; tests/test_offchip_csim.py: the off-chip
kernel cases and a small design):

1. **u55c without its URAM** (every SLR shares the HBM): BRAM alone cannot hold ResNet-18's
   weights, so the on-chip plan is refused naming BRAM18; with off-chip weights it plans, the
   heaviest weights in the HBM, every core within its bandwidth share. On the real u55c (with
   URAM) the plan with off-chip weights allowed is never slower than the one without.
2. **zcu102**: ResNet-18 plans only with off-chip weights, within every core limit.
3. **gen + csim** of (1): `bbgrap-hls gen --offchip-weights` then `bbgrap-hls csim`
   (threaded, every stream bounded at its planned depth): bit-exact, no deadlock.

Each line prints the figure (ii, fps, the ratio with off-chip weights over without) and
``ok`` or ``FAILED``; the exit status is the number of failed checks.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bbgrap_hls.board import _bundled_dir, load_board  # noqa: E402
from bbgrap_hls.cli import main  # noqa: E402
from bbgrap_hls.errors import InfeasibleError  # noqa: E402
from bbgrap_hls.frontend import load_model  # noqa: E402
from bbgrap_hls.passes import canonicalize  # noqa: E402
from bbgrap_hls.search import make_plan  # noqa: E402
from tests import models  # noqa: E402


def _line(name: str, ok: bool, text: str, t0: float) -> bool:
    print(f"{name:<34} {'ok' if ok else 'FAILED':<7} {text} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return ok


def u55c_without_uram(graph) -> bool:
    t0 = time.perf_counter()
    full = load_board("u55c")
    board = dataclasses.replace(full, cores=[dataclasses.replace(c, uram=0) for c in full.cores])
    try:
        make_plan(graph, board, baselines=False)
        refused = ""
    except InfeasibleError as e:
        refused = str(e)
    with_off = make_plan(graph, full, baselines=False, offchip_weights=True)
    without = make_plan(graph, full, baselines=False)
    off = make_plan(graph, board, baselines=False, offchip_weights=True)
    ddr = [n.name for n in off.nodes if n.weights == "ddr"]
    ok = ("BRAM18" in refused and with_off.ii_cycles <= without.ii_cycles and bool(ddr)
          and {c.memory for c in off.cores} == {"hbm"} and all(c.bw <= c.bw_limit for c in off.cores)
          and off.roofline["fraction"] <= 1)
    return _line("resnet18 u55c without URAM", ok,
                 f"on chip refused ({'BRAM18' in refused}); {len(ddr)} convs off chip, {off.fps:,.1f} fps, "
                 f"{off.roofline['fraction']:.0%} of the roofline; u55c with URAM: off-chip allowed / "
                 f"on chip only ii = {with_off.ii_cycles / without.ii_cycles:.3f}", t0)


def zcu102_only_offchip(graph) -> bool:
    t0 = time.perf_counter()
    board = load_board("zcu102")
    try:
        make_plan(graph, board, baselines=False)
        refused = ""
    except InfeasibleError as e:
        refused = str(e)
    plan = make_plan(graph, board, baselines=False, offchip_weights=True)
    core = plan.cores[0]
    within = all(getattr(core, r) <= getattr(core, f"{r}_limit") for r in ("dsp", "bram18", "uram", "lut", "bw"))
    ok = "BRAM18" in refused and any(n.weights == "ddr" for n in plan.nodes) and within
    return _line("resnet18 zcu102 off chip only", ok,
                 f"on chip refused ({'BRAM18' in refused}); {plan.fps:,.1f} fps, BRAM18 "
                 f"{core.bram18:,}/{core.bram18_limit:,}, within limits {within}", t0)


def u55c_gen_csim(folder: Path) -> bool:
    t0 = time.perf_counter()
    model = models.save(models.resnet18(), str(folder / "resnet18.onnx"))
    board = folder / "u55c-nouram.yaml"
    text = (_bundled_dir() / "u55c.yaml").read_text()
    if "  uram: 320 " not in text:
        return _line("resnet18 u55c gen + csim", False, "u55c.yaml's URAM line changed", t0)
    board.write_text(text.replace("  uram: 320 ", "  uram: 0   ").replace("name: u55c", "name: u55c-nouram"))
    out = folder / "out"
    gen = main(["--quiet", "gen", model, "--board", str(board), "--offchip-weights", "-o", str(out)])
    if gen != 0:
        return _line("resnet18 u55c gen + csim", False, f"gen exited {gen}", t0)
    plan = json.loads((out / "plan.json").read_text())
    ddr = [n["name"] for n in plan["nodes"] if n["weights"] == "ddr"]
    csim = main(["--quiet", "csim", str(out)])
    ok = csim == 0 and len(ddr) >= 4 and all(c["bw"] <= c["bw_limit"] for c in plan["cores"])
    return _line("resnet18 u55c gen + csim", ok, f"{len(ddr)} convs off chip, csim exit {csim} (0: bit-exact)", t0)


def run(csim: bool = True) -> int:
    with tempfile.TemporaryDirectory() as d:
        graph = canonicalize(load_model(models.save(models.resnet18(), f"{d}/resnet18.onnx")))
        results = [u55c_without_uram(graph), zcu102_only_offchip(graph)]
        if csim:
            results.append(u55c_gen_csim(Path(d)))
    return results.count(False)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-csim", action="store_true", help="the two planning checks only")
    sys.exit(run(csim=not ap.parse_args().no_csim))
