"""Benchmark: wall time of `gen`, `csim` and `sim` (and sim cycles per second) on ImageNet-size designs.

Usage: ``python bench/speed_bench.py [--board u250] [--quick] [--resnet18-sim] [--frames 20]
[--no-conv77]``.
Runs the CLI as a user would (one ``python -m bbgrap_hls.cli`` process per command, so the
times include start-up) on ResNet-8 (``examples/resnet8.onnx``), ResNet-18
(``tests.models.resnet18()``) and a single 77-GMAC conv (1×256×256×256, 3×3 → 512, gen
only). ``sim`` builds in a fresh cache (a cold Verilator build of the design; Verilator's
runtime objects come from the per-user store once any earlier sim kept them, as for a
user's new gen folder) and runs ``--frames`` frames; it reports the cycles the testbench simulated and their rate over the testbench's
own wall time (``cycles/s``); the bench adds the rate over the whole run (cocotb start-up and
model loading included, ``cycles/s with start-up``). ResNet-18's sim runs only with
``--resnet18-sim`` (one frame). Every line ends with the 1-minute load average after the
step. ``--quick``: ResNet-8 only, 2 frames (tests/test_speed_bench.py runs it). Targets
(issue 16 item 3; the bench prints whether each is met): gen of ResNet-18 <= 8 s, gen of
the 77-GMAC conv <= 60 s, sim of ResNet-18 (one frame, build + run) <= 120 s on 2 cores.
docs/benchmarks.md ("speed") records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cli(*args: str, check: bool = True) -> tuple[float, str]:
    """Run ``bbgrap-hls ARGS``; (wall seconds, stdout). A non-zero exit stops the bench when
    ``check``, else gives an empty stdout (the caller reports the step as failed)."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "bbgrap_hls.cli", *args, "--quiet"], capture_output=True,
                       text=True, cwd=ROOT)
    dt = time.perf_counter() - t0
    if p.returncode:
        msg = f"bbgrap-hls {' '.join(args)} failed (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
        if check:
            raise SystemExit(msg)
        print(msg, file=sys.stderr)
        return dt, ""
    return dt, p.stdout


def _json(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"):])


def _load() -> float:
    return round(os.getloadavg()[0], 2)


#: issue 16 item 3: (row key, limit in seconds, what)
TARGETS = [("resnet18", "gen_s", 8.0, "gen of ResNet-18"), ("conv77", "gen_s", 60.0, "gen of the 77-GMAC conv"),
           ("resnet18", "sim_s", 120.0, "sim of ResNet-18, one frame")]


def conv77_model(path: Path) -> str:
    """One 3×3 conv, 256 → 512 channels on 256×256 (77.3 GMAC), seeded weights."""
    from tests import models

    b = models.Builder(0)
    y = b.conv(b.input("x", (1, 256, 256, 256)), 512, 3, 1)
    b.nodes[-1].output[0] = "y"
    b.shapes["y"] = b.shapes[y]
    return models.save(b.model(["y"], "conv77"), path)


def bench(name: str, model: Path, board: str, tmp: Path, csim: bool, sim_frames: int) -> dict:
    """gen, then csim and sim (``sim_frames`` 0: no sim) of one model; prints a line per step."""
    out = tmp / f"{name}-{board}"
    t_gen, _ = _cli("gen", str(model), "--board", board, "-o", str(out), "--force")
    row: dict = {"model": name, "board": board, "gen_s": round(t_gen, 2), "gen_load": _load()}
    print(f"{name} on {board}: gen {t_gen:.2f} s (load {row['gen_load']})", flush=True)
    if csim:
        # csim failing (a g++ error) is reported, not fatal: gen and sim are still measured
        t, so = _cli("csim", str(out), "--json", check=False)
        r = _json(so) if so else {"match": "FAILED"}
        row.update(csim_s=round(t, 2), csim_match=r.get("match"),
                   csim_build_s=r.get("build_seconds"), csim_run_s=r.get("run_seconds"), csim_load=_load())
        print(f"{name} on {board}: csim {t:.2f} s (build {r.get('build_seconds')} s, run {r.get('run_seconds')} s, "
              f"match {r.get('match')}) (load {row['csim_load']})", flush=True)
    if sim_frames:
        t, so = _cli("sim", str(out), "--json", "--frames", str(sim_frames))
        r = _json(so)
        cycles = r["simulated_cycles"]
        wall = cycles / r["run_seconds"] if r["run_seconds"] else 0.0
        row.update(sim_s=round(t, 2), sim_build_s=r["build_seconds"], sim_run_s=r["run_seconds"],
                   sim_frames=sim_frames, sim_cycles=int(cycles), sim_cycles_per_s=r["cycles_per_second"],
                   sim_cycles_per_s_with_startup=round(wall), sim_latency=r["measured_latency_cycles"],
                   sim_ii=r["measured_ii_cycles"],
                   sim_match=r["match"], sim_load=_load())
        print(f"{name} on {board}: sim {t:.2f} s ({sim_frames} frame(s): build {r['build_seconds']} s, "
              f"run {r['run_seconds']} s, {cycles:,} cycles simulated (latency {r['measured_latency_cycles']}), "
              f"{r['cycles_per_second']:,} cycles/s, {wall:,.0f} cycles/s with start-up, match {r['match']}) "
              f"(load {row['sim_load']})", flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--board", default="u250")
    ap.add_argument("--quick", action="store_true", help="ResNet-8 only, sim of 2 frames")
    ap.add_argument("--frames", type=int, default=20,
                    help="frames of the ResNet-8 sim (enough cycles that start-up does not dominate)")
    ap.add_argument("--resnet18-sim", action="store_true", help="also simulate ResNet-18 (one frame; minutes)")
    ap.add_argument("--no-csim", action="store_true", help="skip csim")
    ap.add_argument("--no-conv77", action="store_true", help="skip gen of the 77-GMAC conv")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON at the end")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="speed-bench-") as d:
        tmp = Path(d)
        rows.append(bench("resnet8", ROOT / "examples" / "resnet8.onnx", a.board, tmp, not a.no_csim,
                          2 if a.quick else a.frames))
        if not a.quick:
            from tests import models

            m18 = models.save(models.resnet18(seed=0), tmp / "resnet18.onnx")
            rows.append(bench("resnet18", Path(m18), a.board, tmp, not a.no_csim, 1 if a.resnet18_sim else 0))
            if not a.no_conv77:
                rows.append(bench("conv77", Path(conv77_model(tmp / "conv77.onnx")), a.board, tmp, False, 0))
    for model, key, limit, what in TARGETS:
        got = next((r[key] for r in rows if r["model"] == model and key in r), None)
        if got is not None:
            print(f"target: {what} <= {limit:g} s: {got:.1f} s, {'met' if got <= limit else 'MISSED'}")
    if a.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
