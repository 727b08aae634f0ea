"""Build and run one module testbench in Verilator through cocotb's runner, with a build cache.

One build folder per (module, parameter set): ``build/sim/<module>-<hash>``, where the
hash covers the parameters, the seed and the RTL sources, so a changed module rebuilds.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from bbgrap_hls.rtlsim import build as rtlbuild
from bbgrap_hls.simtools import rtl_sources, verilator_environ

from . import cases

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "sim"


@dataclass(frozen=True)
class ModuleRun:
    """Outcome of one testbench run: cocotb test counts and measured timing (if any)."""

    tests: int
    failed: int
    folder: Path
    timing: dict | None


def _hdl_value(v) -> object:
    """A parameter for Verilator's -G: strings quoted, sized literals (``192'h…``) as they are."""
    if isinstance(v, str) and not re.fullmatch(r"\d+'h[0-9a-f]+", v):
        return f'"{v}"'
    return v


def build_folder(module: str, params: dict, seed: int) -> Path:
    srcs = rtl_sources(cases.TOP.get(module, module), *cases.DEPS.get(module, []))
    h = hashlib.sha256(json.dumps([module, params, seed], sort_keys=True).encode())
    for s in srcs:
        h.update(s.read_bytes())
    return CACHE / f"{module}-{h.hexdigest()[:12]}"


#: No C++ optimisation of the model: a module testbench simulates a few thousand cycles (well
#: under a second), so the build is nearly all of a case's time; -O0 instead of Verilator's -Os
#: cut 11 builds from 50 to 42 s. The runtime objects, kept in ``CACHE`` and shared with the
#: design builds that keep theirs there (`bbgrap_hls.rtlsim.build`), keep Verilator's flags.
OPT = "OPT_FAST=-O0 OPT_SLOW=-O0"


def run_module(module: str, params: dict, seed: int = 1) -> ModuleRun:
    """Prepare the case, build (cached) and run ``sim/test_<module>.py`` on ``module``."""
    folder = build_folder(module, params, seed)
    hdl = cases.prepare(module, params, seed, folder)
    top = cases.TOP.get(module, module)
    srcs = rtl_sources(top, *cases.DEPS.get(module, []))
    timing_file = folder / "timing.json"
    timing_file.unlink(missing_ok=True)
    env = {
        "BBG_SIM_CASE": json.dumps({"npz": str(folder / "case.npz"), "params": params | hdl}),
        "BBG_SIM_TIMING": str(timing_file),
        "PYTHONPATH": str(ROOT),
    }
    tests, failed, timing = build_and_test(srcs, top, f"sim.test_{module}", folder, hdl, env, timing_file)
    return ModuleRun(tests=tests, failed=failed, folder=folder, timing=timing)


def build_and_test(srcs: list[Path], top: str, test_module: str, folder: Path, hdl: dict, env: dict,
                   timing_file: Path) -> tuple[int, int, dict | None]:
    """Build ``top`` (cached in ``folder``, linking the runtime objects kept in `CACHE`) and run
    the cocotb module ``test_module``; returns its tests, its failures and the timing record."""
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    with verilator_environ():
        os.environ.update(rtlbuild.makeflags(CACHE, OPT))
        runner = get_runner("verilator")
        runner.build(sources=srcs, hdl_toplevel=top, build_dir=folder, log_file=folder / "build.log",
                     parameters={k: _hdl_value(v) for k, v in hdl.items()})
        rtlbuild.keep_runtime(folder, CACHE)
        xml = runner.test(test_module=test_module, hdl_toplevel=top, build_dir=folder,
                          test_dir=folder, extra_env=env, results_xml=str(folder / "results.xml"),
                          log_file=folder / "test.log")
    tests, failed = get_results(Path(xml))
    timing = json.loads(timing_file.read_text()) if timing_file.exists() else None
    return tests, failed, timing
