"""``bbgrap-hls sim OUT`` on an engine design (``plan.json`` with ``"architecture": "engine"``):
the folder's ``rtl/engine_design.sv`` in Verilator under cocotb (`engine_run`), frame after
frame, each frame's output region compared bit for bit with the expected outputs and its
cycles (start to ``done``) with the plan's (docs/rtl.md, "Engine designs").

- the build: the folder's wrapper (its parameters, `codegen.engine_rtl`), cached per
  parameter set in the per-user cache (``<cache>/engine/engine-<hash>``,
  `bbgrap_hls.usercache`; ``OUT/.sim`` when there is none), shared by every design with the
  same parameters; the ROM is the folder's ``rtl/prog.mem``, read at run time;
- the memory: `rtlsim.axi_mem` with the plan's ``latency`` and ``period`` (what its cycle
  model assumed; ``rtl/engine_params.json``'s ``memory``: at the program's beat when gen built
  the program at another beat than the plan's, `codegen.engine_rtl.memory`), the feature
  image at ``FEAT_BASE``, ``engine/weights.bin`` at ``W_BASE``;
- the inputs: ``tb/engine_inputs.bin`` (the input region's bytes of each of the
  ``tb/vectors.json`` ``frames``), expected ``tb/engine_expected.npy``; with ``x``,
  `codegen.engine_gen.vectors`; frames cycle through them;
- the cycles: every frame's, against ``plan.cycles`` and against the cycle model of the
  loaded program on this build (`model.engine_top.frame_cycles`, ``model_cycles``), equal
  when the plan's steps are all ``exact`` and the program is the plan's (its beat and bands).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bbgrap_hls import progress, usercache
from bbgrap_hls.codegen import engine_files as ef
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_rtl as er
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.rtlsim import build as rtlbuild
from bbgrap_hls.rtlsim import engine_run
from bbgrap_hls.rtlsim.run import SimResult


def is_engine(out: Path) -> bool:
    """Whether ``out/plan.json`` is an engine plan (``"architecture": "engine"``)."""
    try:
        return json.loads((Path(out) / "plan.json").read_text()).get("architecture") == "engine"
    except (OSError, ValueError, AttributeError):
        return False


def load_design(out: Path):
    """The plan, the program and ``rtl/engine_params.json`` of an engine gen folder.

    Raises:
        BadInputError: a file missing or unreadable.
    """
    from bbgrap_hls.plan import load_plan

    try:
        plan = load_plan((out / "plan.json").read_text())
        program = ef.load_program(out)
        params = er.load_params(out)
    except (OSError, ValueError, KeyError) as e:
        raise BadInputError(f"{out}: not an engine design written by `bbgrap-hls gen` ({type(e).__name__}: {e})") from None
    return plan, program, params


def vectors(out: Path, x: np.ndarray | None = None, int8_graph=None) -> tuple[list[bytes], np.ndarray]:
    """Each test frame's input region bytes and the expected outputs (int8, frames first):
    gen's (``tb/``), or ``x``'s (`codegen.engine_gen.vectors`)."""
    from bbgrap_hls.codegen import engine_gen

    ins, want = engine_gen.vectors(out, x, int8_graph=int8_graph)
    return [bytes(b) for b in ins], np.asarray(want, np.int8)


def _cache(out: Path, cache: Path | None) -> Path:
    if cache is not None:
        return Path(cache)
    user = usercache.folder()
    return user / "engine" if user is not None else out / ".sim"


def simulate(out: Path, x: np.ndarray | None = None, frames: int = 2, waves: bool = False, cache: Path | None = None,
             runtime: Path | None = None, int8_graph=None) -> SimResult:
    """Build (cached) and run ``frames`` frames of the engine design ``out`` (rounded up to whole
    starts of a batched design's ``frames`` frames); see the module's text. A mismatch is
    ``match`` False, not an exception.

    Raises:
        BadInputError: fewer than one frame, files missing, the simulator did not finish.
    """
    if frames < 1:
        raise BadInputError(f"--frames {frames}: at least one frame")
    out = Path(out).resolve()
    plan, program, params = load_design(out)
    frames = -(-frames // program.frames) * program.frames  # whole starts
    ins, want = vectors(out, x, int8_graph)
    wrapper = (out / er.DIR / f"{er.WRAPPER}.sv").read_text()
    hp = params["parameters"]
    with progress.task("sim: Verilator build (engine)", ticker=True):
        b = engine_run.build(wrapper, _cache(out, cache), runtime, waves,
                             rtlbuild.opt_for(frames // program.frames * plan.cycles))
    with engine_run.run_folder(b, keep=waves) as folder:
        mem = params["memory"]  # the plan's latency and period (at the program's beat: `engine_rtl.memory`)
        pred = engine_run.write_case(folder, program, hp, [ins[f % len(ins)] for f in range(frames)], mem["latency"],
                                     mem["period"], names=(program.output,), bound=plan.cycles)
        (folder / er.PROG_FILE).write_bytes((out / er.DIR / er.PROG_FILE).read_bytes())  # the folder's ROM
        with progress.task(f"sim: simulating {frames} engine frame(s)", ticker=True):
            run = engine_run.run_case(b, folder)
        if run.record is None:
            log = (folder / "test.log").read_text(errors="replace")[-3000:] if (folder / "test.log").exists() else ""
            raise BadInputError(f"{out}: the engine testbench did not finish:\n{log}")
    return _score(plan, program, pred, want, frames, b, run, params)


def _compare(program: ep.EngineProgram, got: np.ndarray | None, want: np.ndarray, frames: int) -> str | None:
    """The first difference of the output frames against ``want`` (cycled), None if none."""
    if got is None or len(got) < frames:
        return f"{0 if got is None else len(got)} of {frames} frames finished"
    for f in range(frames):
        g, w = got[f].reshape(-1), want[f % len(want)].reshape(-1)
        if g.size != w.size:
            return f"output '{program.output}' has {g.size} values a frame, the expected vectors {w.size}"
        bad = np.flatnonzero(g != w)
        if bad.size:
            k = int(bad[0])
            return (f"output '{program.output}' frame {f} element {k} (NCHW order) is {int(g[k])}, the integer "
                    f"reference says {int(w[k])} ({bad.size} of {w.size} differ)")
    return None


def _cycles_text(cycles: list[int], plan, model: int | None, params: dict) -> str:
    """"frame cycles measured … / plan …" with the model's and the verdict."""
    exact = f"model of this program and build {model:,}" if model is not None else \
        "no exact model of this program: a conv step's writes cannot keep up"
    what = "frame cycles" if getattr(plan, "frames", 1) == 1 else f"cycles a start of {plan.frames} frames"
    text = f"{what} measured {', '.join(f'{c:,}' for c in cycles)} / plan {plan.cycles:,} ({exact})"
    if all(c == plan.cycles for c in cycles):
        return text + ": equal"
    if params["memory"]["beat"] != plan.beat:
        same = model is not None and all(c == model for c in cycles)
        return text + (f": {'equal to the model' if same else 'differ from the model'}; the plan timed "
                       f"{plan.beat}-byte beats, this build runs the program's {params['memory']['beat']}-byte beats")
    worst = max(cycles, key=lambda c: abs(c - plan.cycles))
    why = f"; the plan charges {plan.approx} step(s) by a bound" if plan.approx else ""
    return text + f": {100 * (worst - plan.cycles) / plan.cycles:+.2f} % against the plan{why}"


def _score(plan, program: ep.EngineProgram, pred: dict, want: np.ndarray, frames: int, b, run,
           params: dict) -> SimResult:
    rec = run.record
    cycles = list(rec["cycles"])
    got = run.outputs.get(program.output)
    wall = rec.get("sim_wall_seconds")
    common = dict(frames=frames, predicted_ii_cycles=plan.cycles, predicted_latency_cycles=plan.cycles,
                  build_seconds=round(b.seconds, 3), run_seconds=round(run.seconds, 3), bottleneck=plan.bottleneck,
                  simulated_cycles=rec["cycle"], cycles_per_second=round(rec["cycle"] / wall) if wall else None,
                  waves=run.waves, frame_intervals=cycles,
                  outputs={program.output: got} if got is not None else {})
    bad = rec.get("error") or _compare(program, got, want, frames)
    if bad:
        return SimResult(False, measured_ii_cycles=cycles[-1] if cycles else None,
                         measured_latency_cycles=cycles[0] if cycles else None,
                         message=f"FAIL: engine design: {bad}", **common)
    msg = (f"PASS: engine design, output '{program.output}', {frames} frame(s), {got[0].size} int8 values a frame "
           f"bit-exact; {_cycles_text(cycles, plan, pred['cycles'], params)}")
    return SimResult(True, measured_ii_cycles=cycles[-1], measured_latency_cycles=cycles[0], message=msg, **common)
