"""``gen`` for a layer-engine plan: the whole output folder as ``{relative path: bytes}``
(docs/codegen.md, "Engine designs"; deterministic).

An `bbgrap_hls.model.engine_plan.EnginePlan` becomes one program
(`bbgrap_hls.codegen.engine_program.build` at the plan's ``PE`` x ``SIMD``) and the files
around it:

- ``engine/``: the program and weight images (`engine_files.program_files`);
- ``hls/``: the Vitis HLS kernel ``engine.cpp`` (three ``m_axi`` ports ``prog``, ``fmem``,
  ``wmem``, each its own bundle, ``s_axilite`` control) calling ``bb::engine_kernel``
  (``engine_kernel.h``, from templates/engine/: ``bb::engine_run`` once a frame),
  ``engine_config.h`` with the units' sizes the program needs, and the kernel library;
- ``host/``: ``host.cpp`` (XRT native API, one compute unit a core of the plan, frames
  round-robin), ``driver.py`` (the same with pyxrt, quantising and dequantising), and
  ``sim_kernels.cpp`` with the XRT stand-in headers (``host/xrt_sim``);
- ``vitis/``: ``engine.cfg``, ``link.cfg`` (``nk=engine:<cores>``, ``slr``, ``sp`` of every
  port of every CU to its core's home memory), ``Makefile``;
- ``tb/``: ``vectors.json``, ``engine_inputs.bin`` (the frames' input regions),
  ``engine_expected.npy`` (int8, ``(frames, *output shape)``, `quant.run_int8`),
  ``engine_tb.cpp`` (the C testbench ``csim`` builds with the kernel);
- ``rtl/``: the RTL twin when `bbgrap_hls.codegen.engine_rtl` exists, else a note;
- ``report.md``.

The program is built at the plan's beat (``plan.beat`` bytes a memory word): the HLS units
take it as their ``BEAT`` (``engine_cfg::BEAT``, the m_axi ports' width), the RTL twin as its
``DATA_W``, so the kernel, the twin and the plan's cycles describe one engine.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np

from bbgrap_hls.codegen import engine_files
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph

EBURST = 64
"""Beats a chunk of the element-wise unit (``Eltwise::BURST``; the plan's RTL burst)."""
FRAMES = 2
"""Frames in the test vectors: the seed input, then its negation (the second frame runs on
the memory the first left behind)."""
KERNEL = "engine"
TB_OPT = "-O1"
"""g++'s optimisation level of the engine testbench (the conv unit's loops dominate)."""


# -- the program -----------------------------------------------------------------------------------

def build_program(gq: Graph, plan) -> ep.EngineProgram:
    """The program of int8 graph ``gq`` on ``plan``'s engine (its ``PE`` x ``SIMD``, beat and,
    when a step runs in row bands, its conv input buffer: `engine_program.build`).

    Raises:
        NotImplementedError: an operator or layout no unit runs (named by ``build``).
    """
    frames = getattr(plan, "frames", 1)
    banded = any(st.bands > 1 for st in plan.steps if st.unit == "conv")
    return ep.build(gq, plan.pe, plan.simd, plan.beat, in_buffer=plan.in_buffer if banded or frames > 1 else None,
                    frames=frames)


def build_params(plan) -> dict:
    """The plan's build parameters kept in ``engine/program.json`` (`engine_files.PARAMS`)."""
    return {k: getattr(plan, k) for k in engine_files.PARAMS}


# -- files --------------------------------------------------------------------------------------------

def generate_engine(gq: Graph, plan, board, feeds: dict[str, np.ndarray]) -> dict[str, bytes]:
    """Every file of an engine design but ``plan.json`` and the manifest (gen adds them).

    Args:
        gq: the int8 graph (`bbgrap_hls.quant.quantize`).
        plan: the `EnginePlan`.
        board: the board the plan is for.
        feeds: float input arrays (the seed input) for the test vectors.
    """
    program = build_program(gq, plan)
    files = engine_files.program_files(program, build_params(plan))
    files.update(hls_files(program, plan, board))
    files.update(host_files(program, plan, gq))
    files.update(vitis_files(plan, board))
    files.update(tb_files(program, gq, feeds))
    files.update(rtl_files(program, plan))
    files["report.md"] = report(plan, program, board).encode()
    return files


def _env():
    from bbgrap_hls.codegen.emit import environment

    return environment()


def _template(name: str) -> bytes:
    return (resources.files("bbgrap_hls.templates") / "engine" / name).read_bytes()


def span(program: ep.EngineProgram, name: str) -> int:
    """Bytes of tensor ``name``'s region from its base to the end of its last block
    (`engine_program.Region.span`)."""
    return program.regions[name].span(program.pe)


def _layout(program: ep.EngineProgram) -> dict:
    """The sizes the kernel, testbench and host share."""
    rin, rout = program.regions[program.input], program.regions[program.output]
    n = len(program.steps)
    return {"steps": n, "program_words": 1 + n * (1 + engine_files.STEP_WORDS), "feature_bytes": program.feature_size,
            "feature_beats": program.feature_size // program.beat + 1, "weight_bytes": len(program.weights),
            "weight_beats": -(-len(program.weights) // program.beat) + 1, "in_base": rin.base,
            "in_bytes": span(program, program.input), "out_base": rout.base,
            "out_bytes": span(program, program.output), "input": program.input, "output": program.output,
            "frames": program.frames, "frame_stride": program.frame_stride}


def hls_files(program: ep.EngineProgram, plan, board) -> dict[str, bytes]:
    """``hls/engine.cpp``, ``hls/engine_config.h`` and the kernel library."""
    from bbgrap_hls.codegen import engine_eltwise as ee
    from bbgrap_hls.codegen import engine_image as ei
    from bbgrap_hls.codegen import engine_window as ew
    from bbgrap_hls.codegen.project import kernel_headers

    env = _env()
    ctx = dict(_layout(program), pe=program.pe, simd=program.simd, beat=program.beat, taps=plan.taps,
               eburst=EBURST, sizes=engine_files.unit_sizes(program), conv_words=len(ei.FIELDS),
               window_words=len(ew.WINDOW_FIELDS), eltwise_words=len(ee.ELTWISE_FIELDS),
               ibuf_uram=int(plan.ibuf_uram))
    files = kernel_headers()
    files.update({"hls/engine_config.h": env.get_template("engine/engine_config.h.j2").render(**ctx).encode(),
                  "hls/engine.cpp": env.get_template("engine/engine.cpp.j2").render(**ctx).encode(),
                  "hls/engine_kernel.h": _template("engine_kernel.h")})
    return files


def host_files(program: ep.EngineProgram, plan, gq: Graph) -> dict[str, bytes]:
    """``host/host.cpp``, ``host/driver.py``, ``host/sim_kernels.cpp`` and the XRT stand-in."""
    from bbgrap_hls.codegen.project import host_static

    lay, ops = _layout(program), _host_ops(program, gq)
    qi, qo = gq.tensors[program.input].quant, gq.tensors[program.output].quant
    ctx = dict(lay, beat=program.beat, blocks=plan.input_blocks.get(program.input, 0),
               patches=repr(getattr(plan, "input_patches", {}).get(program.input)),
               model_shape=list(gq.model_input_shape(program.input)), cores=plan.cores, cus=_cus(plan), program_bytes=4 * lay["program_words"],
               weight_buffer=lay["weight_beats"] * program.beat, in_shape=list(program.regions[program.input].shape),
               out_shape=list(program.regions[program.output].shape),
               in_scale=repr(float(np.ravel(qi.scale)[0])), in_zp=int(np.ravel(qi.zp)[0]),
               out_scale=repr(float(np.ravel(qo.scale)[0])), out_zp=int(np.ravel(qo.zp)[0]),
               host_ops=ops, host_ops_py=repr(ops))
    env = _env()
    files = {k: v for k, v in host_static().items() if k.startswith(("host/xrt_sim/", "host/host_ops.py"))}
    files["host/host.cpp"] = env.get_template("engine/host.cpp.j2").render(**ctx).encode()
    files["host/driver.py"] = env.get_template("engine/driver.py.j2").render(**ctx).encode()
    files["host/sim_kernels.cpp"] = _template("sim_kernels.cpp")
    return files


def _host_ops(program: ep.EngineProgram, gq: Graph) -> list[dict]:
    """The host ops ``host/driver.py`` applies after the fabric output, in order (`host_ops.py`):
    a chain from ``program.output`` to the graph's output, each op's input the one before's
    output (an engine has one fabric output).

    Raises:
        UnsupportedError: the graph's output is neither the fabric output nor made from it by a
            chain of host ops.
    """
    from bbgrap_hls.codegen.host import graph_host_ops
    from bbgrap_hls.errors import UnsupportedError

    ops, t = [], program.output
    by_input = {h.inputs[0]: h for h in graph_host_ops(gq)}
    while t not in gq.outputs:
        h = by_input.get(t)
        if h is None:
            raise UnsupportedError(f"layer engine: graph output {list(gq.outputs)} is not made from the fabric "
                                   f"output '{program.output}' by host ops")
        ops.append({"op": h.op, "shape": h.shape, "axis": h.axis, "flatten": h.flatten})
        t = h.outputs[0]
    return ops


def _cus(plan) -> list[str]:
    return [f"{KERNEL}_{k + 1}" for k in range(plan.cores)]


def link_lines(plan, board) -> tuple[list[str], list[str], list[str]]:
    """``slr=``, ``sp=`` and note lines of ``vitis/link.cfg``: CU ``engine_<k+1>`` runs on core
    ``k``; on a platform with memory banks (``xdma``) each of its three ports goes to that
    core's home memory (`Board.home_memory`)."""
    from bbgrap_hls.codegen.vitis import _bank

    cus = _cus(plan)
    slr = [f"{cu}:SLR{board.cores[k].slr}" for k, cu in enumerate(cus) if board.cores[k].slr is not None]
    with_sp = bool(board.platform) and "xdma" in str(board.platform)
    sp, notes = [], []
    for k, cu in enumerate(cus):
        mem = board.home_memory(k)
        if mem is None:
            notes.append(f"{cu}: core {k} reaches no memory of the board")
            continue
        for port in ("prog", "fmem", "wmem"):
            if with_sp:
                sp.append(f"{cu}.{port}:{_bank(list(board.memories), mem, k)}")
    if not with_sp:
        notes.append("no sp= lines: the board names no Vitis platform with memory banks (xdma); the "
                     f"ports go to the platform's default memory ({', '.join(m.name for m in board.memories)})")
    return slr, sp, notes


def vitis_files(plan, board) -> dict[str, bytes]:
    """``vitis/engine.cfg``, ``vitis/link.cfg`` and ``vitis/Makefile``."""
    from bbgrap_hls.codegen.vitis import PLACEHOLDER_PART, PLACEHOLDER_PLATFORM

    env = _env()
    slr, sp, notes = link_lines(plan, board)
    ctx = dict(part=board.part or PLACEHOLDER_PART, platform=board.platform or PLACEHOLDER_PLATFORM,
               clock_ns=f"{1000.0 / board.clock_mhz:.3f}", clock_mhz=f"{board.clock_mhz:g}", cores=plan.cores,
               cus=_cus(plan), slr=slr, sp=sp, notes=notes, board=board.name, frames=FRAMES)
    return {f"vitis/{name}": env.get_template(f"engine/{name}.j2").render(**ctx).encode()
            for name in ("engine.cfg", "link.cfg", "Makefile")}


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def seed_frames(feeds: dict[str, np.ndarray], name: str) -> np.ndarray:
    """The float frames of the test vectors (`FRAMES`): the seed input and its negation."""
    x = np.asarray(feeds[name], np.float32)
    return np.concatenate([x, -x])[:FRAMES]


def expected(gq: Graph, program: ep.EngineProgram, x: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """Per frame of float (or int8 code) frames ``x`` (N, ...): the input region's bytes and the
    expected int8 output (``run_int8`` on the quantised frame), stacked ``(N, *output shape)``."""
    from bbgrap_hls.quant.execute import quantize_inputs, run_int8

    shape = tuple(gq.model_input_shape(program.input))  # the model's (a stem over blocks: the host blocks it)
    x = np.asarray(x)
    if x.shape == shape[1:]:
        x = x[None]
    if x.ndim != len(shape) or tuple(x.shape[1:]) != shape[1:] or not len(x):
        raise BadInputError(f"input '{program.input}': shape {x.shape}, the engine takes frames (N, "
                            f"{', '.join(map(str, shape[1:]))})")
    regions, ys = [], []
    for f in range(len(x)):
        q = quantize_inputs(gq, {program.input: x[f:f + 1]})
        regions.append(engine_files.input_bytes(program, q[program.input]))
        ys.append(run_int8(gq, q, keep=True)[program.output])
    return regions, np.stack(ys).astype(np.int8).reshape((len(x),) + tuple(program.regions[program.output].shape))


def tb_files(program: ep.EngineProgram, gq: Graph, feeds: dict[str, np.ndarray]) -> dict[str, bytes]:
    """``tb/``: the vectors of `FRAMES` frames and the C testbench."""
    regions, ys = expected(gq, program, seed_frames(feeds, program.input))
    meta = {"architecture": "engine", "frames": len(regions), "input": program.input, "output": program.output,
            "input_shape": list(program.regions[program.input].shape), "output_shape": list(ys.shape[1:]),
            "input_bytes": len(regions[0]), "outputs": [{"tensor": program.output, "shape": list(ys.shape[1:])}]}
    return {"tb/vectors.json": (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode(),
            "tb/engine_inputs.bin": b"".join(regions), "tb/engine_expected.npy": _npy(ys),
            "tb/engine_tb.cpp": _template("engine_tb.cpp")}


def rtl_files(program: ep.EngineProgram, plan) -> dict[str, bytes]:
    """``rtl/``: `bbgrap_hls.codegen.engine_rtl.rtl_files` where that module exists, else (or
    when it refuses the program, as the dataflow twin refuses a design) ``rtl/UNSUPPORTED.txt``
    with the reason; the HLS output stays valid."""
    try:
        from bbgrap_hls.codegen import engine_rtl
    except ImportError:
        return _unsupported("the RTL twin of layer-engine designs is not generated yet")
    try:
        return engine_rtl.rtl_files(program, plan)
    except (ValueError, NotImplementedError, BadInputError) as e:
        return _unsupported(str(e))


def _unsupported(why: str) -> dict[str, bytes]:
    return {"rtl/UNSUPPORTED.txt": (f"The RTL twin does not support this design yet: {why}. `bbgrap-hls sim` cannot "
                                    "run this folder; `bbgrap-hls csim` checks the HLS kernel.\n").encode()}


def report(plan, program: ep.EngineProgram, board) -> str:
    """``report.md``: the engine's parameters and the plan's summary (`format_engine_plan`)."""
    stable = dataclasses.replace(plan, plan_seconds=0.0)  # report.md stays byte-identical
    try:
        from bbgrap_hls.commands.plan import format_engine_plan

        summary = "\n".join(ln for ln in format_engine_plan(stable).splitlines()
                            if not re.fullmatch(r"plan [0-9.]+ s", ln))  # the planner's time: machine-dependent
    except ImportError:
        summary = stable.to_json(stable=True)
    sizes = engine_files.unit_sizes(program)
    rows = [("PE x SIMD (conv unit)", f"{program.pe} x {program.simd}"), ("TAPS (window unit)", plan.taps),
            ("element-wise lanes (plan)", plan.lanes), ("DSP packing", "on" if plan.pack else "off"),
            ("memory word (AXI beat)", f"{program.beat} bytes"),
            ("conv input buffer (plan)", f"{plan.in_buffer:,} bytes"), ("memory latency / period",
                                                                         f"{plan.latency} / {plan.period} cycles"),
            ("compute units", f"{plan.cores} (one a core)"), ("steps", len(program.steps)),
            ("feature memory", f"{program.feature_size:,} bytes"), ("weight memory", f"{len(program.weights):,} bytes"),
            ("frame", f"{plan.cycles:,} cycles, {plan.fps:,.1f} frames/s on {plan.cores} engine(s)")]
    rows += [(f"unit size {k}", v) for k, v in sizes.items()]
    lines = [f"# {plan.model or 'model'} on {board.name}: layer engine", "",
             "The network runs as a program on one layer engine a core (docs/engine.md): a conv, a window "
             "and an element-wise unit, time-shared over the layers, the maps and weights in board memory. "
             "`engine/` holds the program, `hls/engine.cpp` the Vitis kernel, `host/` the XRT host, "
             "`vitis/` the build files (docs/codegen.md, \"Engine designs\").", "",
             "| parameter | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines + ["", "## Plan", "", "```", summary.rstrip("\n"), "```", ""])


# -- vectors and C simulation ---------------------------------------------------------------------

def vectors(out: Path, x: np.ndarray | None, int8_graph: Graph | None = None) -> tuple[list[bytes], np.ndarray]:
    """Per-frame input-region bytes and the expected int8 outputs ``(frames, *output shape)`` of
    the engine design in ``out``: gen's (``tb/``) when ``x`` is None, else ``x`` quantised and
    run through ``int8_graph`` (None: the model requantised as the manifest records, as
    ``csim --input`` does for a dataflow design)."""
    out = Path(out)
    program = engine_files.load_program(out)
    if x is None:
        return _tb_vectors(out, span(program, program.input))
    if int8_graph is None:
        from bbgrap_hls.commands.csim import int8_graph_of

        int8_graph = int8_graph_of(out)
    return expected(int8_graph, program, x)


def _tb_vectors(out: Path, size: int) -> tuple[list[bytes], np.ndarray]:
    """gen's test vectors in ``out/tb``: ``frames`` input regions of ``size`` bytes and the
    expected outputs.

    Raises:
        BadInputError: the files are missing, unreadable or of the wrong sizes.
    """
    tb = out / "tb"
    try:
        meta = json.loads((tb / "vectors.json").read_text())
        data = (tb / "engine_inputs.bin").read_bytes()
        want = np.load(tb / "engine_expected.npy", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise BadInputError(f"{out}: no engine test vectors in tb/ ({type(e).__name__}: {e})") from None
    n = int(meta["frames"])
    if len(data) != n * size or len(want) != n:
        raise BadInputError(f"{out}: tb/engine_inputs.bin has {len(data)} bytes and tb/engine_expected.npy "
                            f"{len(want)} frames; {n} frames of {size} bytes expected")
    return [data[i * size:(i + 1) * size] for i in range(n)], want.astype(np.int8)


def build_tb(out: Path) -> tuple[Path, float]:
    """Compile (or reuse, cached under ``out/.csim/<hash>``) the engine testbench: hls/engine.cpp
    with tb/engine_tb.cpp; its path and the build seconds."""
    import hashlib

    from bbgrap_hls.codegen.csim import flags

    if shutil.which("g++") is None:
        raise BadInputError("csim needs g++ (a C++17 compiler) on PATH")
    cxx = flags(opt=TB_OPT)
    srcs = [out / "hls" / "engine.cpp", out / "tb" / "engine_tb.cpp"]
    h = hashlib.sha256()
    for p in sorted((out / "hls").glob("*.h")) + srcs:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    h.update(" ".join(cxx).encode())
    exe = out / ".csim" / f"engine-{h.hexdigest()[:16]}" / "engine_tb"
    if exe.exists():
        return exe, 0.0
    exe.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = exe.with_name(f"engine_tb.{time.time_ns()}.tmp")
    r = subprocess.run(["g++", *cxx, "-I", str(out / "hls"), *map(str, srcs), "-o", str(tmp)],
                       capture_output=True, text=True)
    if r.returncode != 0 or r.stderr.strip():
        tmp.unlink(missing_ok=True)
        raise BadInputError(f"csim: g++ {'failed' if r.returncode else 'warned'} on {out}:\n{r.stderr[-3000:]}")
    tmp.replace(exe)
    return exe, time.perf_counter() - t0


def csim(out: Path, x: np.ndarray | None = None, int8_graph: Graph | None = None, threads: bool | None = None):
    """C-simulate the engine design in ``out`` on ``x`` (None: gen's frames): every frame's
    output region compared with the expected int8 output bit for bit. ``threads`` is accepted
    and ignored (the engine is one process; the message says so when it was asked for).
    Returns a `bbgrap_hls.codegen.csim.CsimResult` (``outputs``: the output tensor's frames,
    ``(frames, elements)`` in the tensor's own order)."""
    from bbgrap_hls.codegen.csim import CsimResult

    out = Path(out)
    program = engine_files.load_program(out)
    regions, want = vectors(out, x, int8_graph)
    exe, tb = build_tb(out)
    note = " (--threads ignored: the engine runs its steps one after another)" if threads else ""
    with tempfile.TemporaryDirectory(prefix="bbgrap-csim-engine-") as tmp:
        vec = Path(tmp)
        (vec / "inputs.bin").write_bytes(b"".join(regions))
        t0 = time.perf_counter()
        r = subprocess.run([str(exe), str(out / engine_files.DIR), str(vec), str(len(regions))],
                           capture_output=True, text=True)
        tr = time.perf_counter() - t0
        if r.returncode != 0:
            return CsimResult(False, {}, f"testbench exited {r.returncode}: {r.stderr.strip()[-2000:]}", tb, tr,
                              frames=len(regions))
        raw = (vec / "outputs.bin").read_bytes()
    status = [int(ln.split()[2]) for ln in r.stdout.splitlines() if ln.startswith("status ")]
    got = np.stack([_output(program, raw, f) for f in range(len(regions))])
    res = dict(outputs={program.output: got.reshape(len(regions), -1)}, build_seconds=tb, run_seconds=tr,
               frames=len(regions))
    bad_status = [(f, s) for f, s in enumerate(status) if s != 0]
    if bad_status or len(status) != len(regions):
        f, s = bad_status[0] if bad_status else (len(status), None)
        return CsimResult(False, message=f"FAIL: frame {f}: the engine's status is {s} (1 + the step its unit "
                                         f"refused; -1 a bad step count){note}", **res)
    diff = np.flatnonzero(got.reshape(-1) != want.reshape(-1)) if got.shape == want.shape else np.array([0])
    if diff.size:
        k = int(diff[0])
        per = int(np.prod(want.shape[1:]))
        return CsimResult(False, message=f"FAIL: output '{program.output}' frame {k // per} element {k % per} "
                                         f"(NCHW order) is {int(got.reshape(-1)[k])}, the integer reference says "
                                         f"{int(want.reshape(-1)[k])} ({diff.size} of {want.size} differ){note}",
                          **res)
    return CsimResult(True, message=f"PASS: output '{program.output}', {len(regions)} frame(s), {want.size} int8 "
                                    f"values bit-exact (layer engine, {len(program.steps)} steps){note}", **res)


def _output(program: ep.EngineProgram, raw: bytes, f: int) -> np.ndarray:
    """Frame ``f``'s output tensor from the testbench's output regions."""
    r, n = program.regions[program.output], span(program, program.output)
    mem = bytearray(r.base + n)
    mem[r.base:] = raw[f * n:(f + 1) * n]
    return engine_files.output_tensor(program, bytes(mem))
