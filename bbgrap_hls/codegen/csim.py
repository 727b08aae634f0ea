"""C simulation: compile the generated HLS C++ and testbench with g++, run, compare.

Two modes (docs/codegen.md, "C simulation"):

- threaded (``threads=True``, ``-DBB_CSIM_THREADS``): every DATAFLOW process and every core
  a thread, every stream a bounded blocking FIFO of the depth the generated code declares
  (``hw/hls/bb_dataflow.h``, ``bb_sim_threads.h``); a deadlock stops the testbench with exit
  status 1 and one ``deadlock: stream ...`` line per blocked stream; the testbench prints
  every stream's highest fill against its depth (`CsimResult.fifos`);
- the threaded run also checks the dataflow rules of Vitis ``config_dataflow -strict_mode``
  (UG1399): one producer and one consumer process per stream, every end a process of the
  region that declares it, producers before consumers, no conditionally executed process,
  and every stream written and read as many times as the beats per frame the codegen
  registers (``BB_FIFO_BEATS``) times the frames; one ``dataflow rule: stream ...`` line per
  violation (`CsimResult.violations`, the run fails). The statements of each core's DATAFLOW
  region are checked here too: process calls only (`region_rules`);
- sequential: the processes one after another over unbounded streams (Vitis HLS C
  simulation's semantics), which cannot see a FIFO that is too shallow.

Both compile as ISO C++17 (``-pedantic-errors``): the kernels must be what Vitis HLS reads
with ``-std=c++17`` (the cfgs' ``syn.cflags``). A design whose simulation is small (`work`
under `QUICK_WORK` lane-cycles) compiles at ``-O0``, any other at ``-O2`` (`opt_flag`: g++'s
optimiser is most of a small design's csim time and saves it nothing). The binary is cached under
``OUT/.csim/<hash of the sources and flags>`` so that a second run with other inputs does not
recompile; the translation units compile in parallel.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bbgrap_hls import progress
from bbgrap_hls.errors import BadInputError

CXXFLAGS = ["-std=c++17", "-pedantic-errors", "-Wall", "-Wextra"]
"""g++ flags of every csim build but the optimisation level (`opt_flag`)."""
OPT_FULL = "-O2"
OPT_QUICK = "-O0"
QUICK_WORK = 5e8
"""Lane-cycles (`work`) below which a csim build is ``-O0``. Measured on one 2-core machine
(threaded csim on u250 plans, g++ build + run seconds at -O2 / -O0): the README's ResNet-8
(1.25e7 lane-cycles, one frame) 6.6 + 0.14 / 3.6 + 0.26; EfficientNet-tiny 13.9 + 0.3 / 5.0 + 0.2;
ResNet-18 at 64x64 (1.6e8) 13.4 + 1.9 / 8.0 + 2.2; at 128x128 (5.8e8) 12.7 + 5.9 / 7.5 + 8.7
(-O1: 9.5 + 7.3). The run costs about 5e-9 s a lane-cycle more at -O0, the build about 5 s
less, so the two meet near 1e9; the threshold is half that."""
#: the threaded C simulation's extra flags (hw/hls/bb_dataflow.h)
THREAD_FLAGS = ["-DBB_CSIM_THREADS", "-pthread"]
#: ``csim`` runs threaded unless ``--no-threads`` (measured in docs/codegen.md)
DEFAULT_THREADS = True


@dataclass(frozen=True)
class FifoUse:
    """One stream of a threaded run: its highest fill against its depth (0: unbounded)."""

    name: str
    max_fill: int
    depth: int
    producer: str
    consumer: str

    def to_dict(self) -> dict:
        return {"name": self.name, "max_fill": self.max_fill, "depth": self.depth, "producer": self.producer,
                "consumer": self.consumer}


@dataclass(frozen=True)
class ProcUse:
    """One process of a threaded run: its pipelined-loop iterations × II over the run
    (``BB_PIPELINE``, hw/hls/bb_common.h), all its frames."""

    id: str
    label: str
    cycles: int

    def to_dict(self) -> dict:
        return {"id": self.id, "label": self.label, "cycles": self.cycles}


@dataclass
class CsimResult:
    """Outcome of one C simulation: per output, got / expected arrays (NHWC frames)."""

    ok: bool
    outputs: dict[str, np.ndarray]
    message: str
    build_seconds: float
    run_seconds: float
    threads: bool = False
    fifos: list[FifoUse] = field(default_factory=list)  # threaded runs: every stream
    deadlock: list[str] = field(default_factory=list)  # the ``deadlock: stream ...`` lines
    violations: list[str] = field(default_factory=list)  # the ``dataflow rule: ...`` lines
    procs: list[ProcUse] = field(default_factory=list)  # threaded runs: every process's counted cycles
    frames: int = 1  # frames the run computed (the vectors' frames × repeat)
    #: `bbgrap_hls.codegen.schedule.compare` rows (csim --json): per process counted cycles per
    #: frame, static bound, plan ii, over; empty unless asked for
    schedule: list[dict] = field(default_factory=list)

    @property
    def match(self) -> bool:
        """True when every output is bit-exact (the name `sim`'s result uses)."""
        return self.ok

    def to_dict(self) -> dict:
        """The ``csim --json`` fields: ``match``, ``message``, ``build_seconds``, ``run_seconds``,
        ``threads``; threaded runs add ``fifos`` (per stream ``max_fill`` against ``depth``, 0 =
        unbounded), ``deadlock`` (the blocked streams' lines, empty when none) and ``violations``
        (the dataflow rule lines, empty when none)."""
        d = {"match": self.ok, "message": self.message, "build_seconds": round(self.build_seconds, 3),
             "run_seconds": round(self.run_seconds, 3), "threads": self.threads}
        if self.threads:
            d["fifos"] = [f.to_dict() for f in self.fifos]
            d["deadlock"] = list(self.deadlock)
            d["violations"] = list(self.violations)
            d["frames"] = self.frames
            d["processes"] = [p.to_dict() for p in self.procs]
            if self.schedule:
                d["schedule"] = self.schedule
        return d


def _sources(out: Path) -> list[Path]:
    return sorted((out / "hls").glob("*.cpp")) + [out / "tb" / "tb.cpp"]


def work(out: Path) -> float:
    """Lane-cycles the testbench simulates: the vectors' frames times the sum over the plan's
    nodes of ``ii · pe · simd`` (a conv's or dense's MACs; a stream block's lanes times its
    cycles). Infinite when ``plan.json`` or ``tb/vectors.json`` is missing or unreadable."""
    try:
        nodes = json.loads((out / "plan.json").read_text())["nodes"]
        frames = int(json.loads((out / "tb" / "vectors.json").read_text()).get("frames", 1))
        return frames * float(sum(n["ii_cycles"] * max(1, n["pe"] * n["simd"]) for n in nodes))
    except (OSError, ValueError, KeyError, TypeError):
        return float("inf")


def opt_flag(out: Path) -> str:
    """`OPT_QUICK` for a design of less than `QUICK_WORK` lane-cycles, else `OPT_FULL`."""
    return OPT_QUICK if work(out) < QUICK_WORK else OPT_FULL


def flags(werror: bool = False, threads: bool = False, opt: str = OPT_FULL) -> list[str]:
    """The g++ flags of a csim build at optimisation level ``opt``."""
    return CXXFLAGS + [opt] + (["-Werror"] if werror else []) + (THREAD_FLAGS if threads else [])


def build(out: Path, werror: bool = False, threads: bool = False, opt: str | None = None) -> tuple[Path, float]:
    """Compile (or reuse) the testbench binary; returns its path and the build time.
    ``opt``: g++'s optimisation level, `opt_flag` (by the design's size) when None."""
    import time

    if shutil.which("g++") is None:
        raise BadInputError("csim needs g++ (a C++17 compiler) on PATH")
    if threads and not (out / "hls" / "bb_dataflow.h").exists():
        raise BadInputError(f"{out}: written by an older gen without the threaded C simulation; "
                            "run gen again or csim --no-threads")
    cxx = flags(werror, threads, opt_flag(out) if opt is None else opt)
    h = hashlib.sha256()
    # sources only: the URAM weight images (hls/*.bin) are read when the testbench runs
    for p in sorted(q for q in (out / "hls").glob("*") if q.suffix in (".h", ".cpp")) + [out / "tb" / "tb.cpp"]:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    h.update(" ".join(cxx).encode())
    exe = out / ".csim" / h.hexdigest()[:16] / "tb"
    if exe.exists():
        return exe, 0.0
    exe.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    srcs = _sources(out)
    objs = [exe.parent / f"{i}_{p.stem}.o" for i, p in enumerate(srcs)]
    kept = runtime_object(out, cxx) if threads else None
    fresh = kept is not None and not kept.exists()
    if kept is not None:
        cxx = cxx + [f"-D{RUNTIME_LINKED}"]
    if fresh:  # compiled beside the design's sources, then moved into the cache
        srcs.append(exe.parent / "runtime.cpp")
        srcs[-1].write_text(RUNTIME_CPP)
        objs.append(kept.with_name(f"{kept.name}.{uuid.uuid4().hex}.tmp"))

    def cc(src_obj: tuple[Path, Path]) -> subprocess.CompletedProcess:
        return subprocess.run(["g++", *cxx, "-I", str(out / "hls"), "-c", str(src_obj[0]), "-o", str(src_obj[1])],
                              capture_output=True, text=True)

    with progress.task("csim: g++ build", ticker=True):
        with ThreadPoolExecutor(max_workers=max(1, min(len(srcs), os.cpu_count() or 1))) as pool:
            rs = list(pool.map(cc, zip(srcs, objs, strict=True)))
        if fresh and all(r.returncode == 0 for r in rs) and not rs[-1].stderr.strip():
            os.replace(objs.pop(), kept)  # atomic: another build linking it meanwhile sees it whole
        links = objs + ([kept] if kept is not None else [])
        if all(r.returncode == 0 for r in rs):
            rs.append(subprocess.run(["g++", *cxx, *map(str, links), "-o", str(exe)], capture_output=True, text=True))
    err = "".join(r.stderr for r in rs)
    if any(r.returncode != 0 for r in rs):
        exe.unlink(missing_ok=True)
        raise BadInputError(f"csim: g++ failed on {out}:\n{err[-3000:]}")
    if err.strip():
        exe.unlink(missing_ok=True)
        raise BadInputError(f"csim: g++ warnings on {out}:\n{err[-3000:]}")
    for o in objs:
        o.unlink(missing_ok=True)
    return exe, time.perf_counter() - t0


RUNTIME_LINKED = "BB_SIM_RUNTIME_LINKED"
"""Defined in a threaded build that links the kept runtime object: the testbench (tb.cpp)
then does not compile the runtime's functions itself (``BB_SIM_THREADS_IMPL``)."""
RUNTIME_CPP = '#define BB_SIM_THREADS_IMPL\n#include "bb_sim_threads.h"\n'
"""The translation unit of the threaded runtime's out-of-line functions (bb_sim_threads_impl.h)."""
RUNTIME_HEADERS = ("bb_sim_threads.h", "bb_sim_threads_impl.h")
"""The files the runtime object is compiled from (both include only the standard library)."""


def runtime_object(out: Path, cxx: list[str]) -> Path | None:
    """Where the threaded C simulation's runtime object, compiled from the design's copy of
    `RUNTIME_HEADERS` with the flags ``cxx``, is kept in the per-user cache
    (`bbgrap_hls.usercache`): its name hashes the headers, the flags and g++'s version, so
    every design with the same runtime links the one object (it is most of the testbench's
    compile time: 1.0 of its 1.5 s at -O0). None when there is no writable cache folder, the
    design has no runtime headers or its testbench always compiles the runtime (written by a
    gen before `RUNTIME_LINKED`); the testbench then compiles the runtime itself."""
    from bbgrap_hls import usercache

    base = usercache.folder()
    if base is None or not all((out / "hls" / n).exists() for n in RUNTIME_HEADERS) \
            or RUNTIME_LINKED not in (out / "tb" / "tb.cpp").read_text():
        return None
    h = hashlib.sha256(" ".join(cxx).encode() + usercache.cxx_key("g++").encode())
    for n in RUNTIME_HEADERS:
        h.update(n.encode() + b"\0" + (out / "hls" / n).read_bytes())
    return base / f"csim-runtime-{h.hexdigest()[:16]}.o"


RULE = "dataflow rule: "


def region_rules(out: Path) -> list[str]:
    """The statements of each core's DATAFLOW region (after ``BB_DATAFLOW_REGION()``): Vitis'
    strict mode wants process calls only; anything else (an ``if`` around a call, a loop, an
    assignment) is a conditionally executed process or code between the processes."""
    lines = []
    inlined = _inlined_kernels(out / "hls")
    for cpp in sorted((out / "hls").glob("core*.cpp")):
        inside = False
        for no, ln in enumerate(cpp.read_text().splitlines(), 1):
            t = ln.strip()
            if t.startswith("BB_DATAFLOW_REGION()"):
                inside = True
                continue
            if not inside:
                continue
            if ln.startswith("}"):
                inside = False
            elif t and not t.startswith(("BB_PROCESS(", "//")):
                lines.append(f"{RULE}region {cpp.stem} line {no}: '{t[:80]}' is not a process call "
                             "(a conditionally executed process, or code between the processes)")
            elif t.startswith("BB_PROCESS("):
                m = _CALL.search(t)
                kern, args = (m.group(1), m.group(2)) if m else ("?", "")
                bad = [a.strip() for a in _split_args(args) if not _IDENT.fullmatch(a.strip())]
                if bad:
                    lines.append(f"{RULE}region {cpp.stem} line {no}: {kern} is called with '{bad[0]}', not a "
                                 "variable of the region (canonical form: process arguments are variables)")
                if kern in inlined:
                    lines.append(f"{RULE}region {cpp.stem} line {no}: {kern} is inlined into the region "
                                 "(BB_HLS(INLINE)): code between the processes, not a process")
    return lines


_CALL = re.compile(r"BB_PROCESS\(\s*(?:bb::)?(\w+)\s*(?:<.*?>)?\s*\((.*)\)\s*;\s*\)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _split_args(args: str) -> list[str]:
    """Top-level comma-separated arguments of a call (commas inside brackets kept)."""
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [a for a in (*out, cur) if a.strip()]


def _inlined_kernels(hls: Path) -> set[str]:
    """Kernels of the library (functions taking a stream) whose body asks to be inlined
    (``BB_HLS(INLINE)``); helpers such as the packed multiply ``bb::mul2`` are meant to be."""
    names = set()
    for h in sorted(hls.glob("*.h")):
        text = h.read_text()
        for m in re.finditer(r"\bvoid\s+(\w+)\s*\(([^)]*)\)\s*\{\s*BB_HLS\(INLINE\)", text):
            if "Stream<" in m.group(2):
                names.add(m.group(1))
    return names


def run(out: Path, vec_dir: Path, outputs: list[tuple[str, str, int]], werror: bool = False,
        threads: bool = DEFAULT_THREADS, repeat: int = 1, frames: int = 1, opt: str | None = None) -> CsimResult:
    """Run the testbench on ``vec_dir/in_*.bin`` and compare with ``vec_dir/expect_*.bin``.

    ``threads``: the threaded C simulation (bounded FIFOs, deadlock detection) rather than
    the sequential one. ``repeat``: the vectors' frames run that many times in one call (the
    testbench's third argument), the outputs compared with the expected ones repeated;
    ``frames``: the vectors' frames (tb/vectors.json), for `CsimResult.frames`. ``opt``:
    g++'s optimisation level (`build`).
    """
    import time

    exe, tb = build(out, werror, threads, opt)
    t0 = time.perf_counter()
    # argv[2]: where the URAM weight images (hls/weights_core<k>.bin) are; argv[3]: repeat
    r = subprocess.run([str(exe), str(vec_dir), str(out / "hls"), str(repeat)], capture_output=True, text=True)
    tr = time.perf_counter() - t0
    rows = [ln.split("\t") for ln in r.stdout.splitlines()]
    fifos = [FifoUse(f[1], int(f[2]), int(f[3]), f[4], f[5]) for f in rows if len(f) >= 6 and f[0] == "fifo"]
    procs = [ProcUse(f[1], f[2], int(f[3])) for f in rows if len(f) == 4 and f[0] == "proc"]
    deadlock = [ln for ln in r.stderr.splitlines() if ln.startswith("deadlock: stream ")]
    rules = (region_rules(out) + [ln for ln in r.stderr.splitlines() if ln.startswith(RULE)]) if threads else []

    def result(ok: bool, got: dict, msg: str) -> CsimResult:
        return CsimResult(ok, got, msg, tb, tr, threads, fifos, deadlock, rules, procs, frames * repeat)

    broken = (f"DATAFLOW RULES (threaded csim): {len(rules)} violation(s):\n" + "\n".join(rules[:50])) if rules else ""
    if r.returncode != 0:
        if deadlock:
            head = broken + "\n" if broken else ""
            return result(False, {}, head + "DEADLOCK (threaded csim): " + "\n".join(
                ln for ln in r.stderr.strip().splitlines() if not ln.startswith(RULE))[:3000])
        return result(False, {}, f"testbench exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    got: dict[str, np.ndarray] = {}
    for tensor, ident, _ in outputs:
        y = np.fromfile(vec_dir / f"out_{ident}.bin", dtype=np.int8)
        want = np.tile(np.fromfile(vec_dir / f"expect_{ident}.bin", dtype=np.int8), repeat)
        got[tensor] = y
        bad = np.flatnonzero(y != want) if y.shape == want.shape else np.array([0])
        if bad.size:
            k = int(bad[0])
            msg = (f"FAIL: output '{tensor}' element {k} (NHWC order) is {int(y[k]) if k < y.size else None}, "
                   f"the integer reference says {int(want[k]) if k < want.size else None} "
                   f"({bad.size} of {want.size} differ)")
            return result(False, got, (broken + "\n" if broken else "") + msg)
    if rules:
        return result(False, got, broken)
    n = sum(v.size for v in got.values())
    mode = f"threaded, {sum(f.depth > 0 for f in fifos)} bounded streams" if threads else "sequential"
    return result(True, got, f"PASS: {len(got)} output(s), {n} int8 values bit-exact ({mode})")
