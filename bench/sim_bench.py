"""Benchmark: the RTL twin of a ResNet-8-sized design, 2 frames, Verilator build + cocotb run.

Usage: ``python bench/sim_bench.py [--board u250] [--par 8] [--frames 2] [--warm] [--models all]``.
``--models all`` runs every model of `tests/models.py` but the two ImageNet-sized ones
(each on the board's cores, folded to ``--par`` lanes) and prints a line per model and a
summary: how many are bit-exact, the largest ii and latency errors against the plan.
Writes the design with `sim.design.flow.small_design` (the ``even`` plan over the board's
cores, every block folded to at most ``--par`` lanes), then builds it in a fresh cache
(cold: Verilator + C++; with ``--warm`` the Verilator runtime objects kept by an earlier
build in ``build/sim`` are linked, as the tests do) and simulates. Prints build and
simulation seconds and the cycle figures; docs/benchmarks.md ("sim") records them. Target
(issue 6): build + simulation under 120 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bbgrap_hls.rtlsim.run import simulate  # noqa: E402
from sim.design.flow import small_design  # noqa: E402
from tests import models  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--board", default="u250")
    ap.add_argument("--par", type=int, default=8)
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--warm", action="store_true", help="link the runtime objects kept in build/sim")
    ap.add_argument("--models", default="resnet8", help="a model of tests/models.py, or 'all'")
    a = ap.parse_args()
    if a.models != "resnet8":
        return every_model(a)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        t0 = time.perf_counter()
        plan = small_design(models.resnet8(seed=0), a.board, out, a.par)
        tg = time.perf_counter() - t0
        runtime = ROOT / "build" / "sim" if a.warm else None
        t1 = time.perf_counter()
        r = simulate(out, frames=a.frames, cache=Path(tmp) / "cache", runtime=runtime)
        total = time.perf_counter() - t1
    cores = sorted({n.core for n in plan.nodes if n.core is not None})
    fig = {"board": a.board, "cores": len(cores), "par": a.par, "frames": a.frames, "gen_s": round(tg, 2),
           "build_s": r.build_seconds, "sim_s": r.run_seconds, "build_plus_sim_s": round(total, 2),
           "match": r.match, "ii": [r.measured_ii_cycles, r.predicted_ii_cycles],
           "latency": [r.measured_latency_cycles, r.predicted_latency_cycles],
           "load_average": round(os.getloadavg()[0], 2)}
    print(json.dumps(fig))
    return 0 if r.match else 1


def every_model(a) -> int:
    names = [n for n in models.ALL if n not in ("resnet18", "mobilenet_v2")] if a.models == "all" else [a.models]
    runtime = ROOT / "build" / "sim"
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            plan = small_design(models.ALL[name](seed=0), a.board, out, a.par)
            r = simulate(out, frames=a.frames, cache=ROOT / "build" / "sim", runtime=runtime)
        cores = len({n.core for n in plan.nodes if n.core is not None})
        ii_err = r.measured_ii_cycles / r.predicted_ii_cycles - 1
        lat_err = r.measured_latency_cycles / r.predicted_latency_cycles - 1
        rows.append((name, r.match, ii_err, lat_err))
        print(json.dumps({"model": name, "cores": cores, "match": r.match,
                          "ii": [r.measured_ii_cycles, r.predicted_ii_cycles],
                          "latency": [r.measured_latency_cycles, r.predicted_latency_cycles],
                          "ii_error": round(ii_err, 4), "latency_error": round(lat_err, 4),
                          "build_s": r.build_seconds, "sim_s": r.run_seconds}), flush=True)
    exact = sum(m for _, m, _, _ in rows)
    print(f"bit-exact {exact}/{len(rows)}; largest |ii error| {max(abs(x[2]) for x in rows):.2%}; "
          f"largest |latency error| {max(abs(x[3]) for x in rows):.2%}")
    return 0 if exact == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
