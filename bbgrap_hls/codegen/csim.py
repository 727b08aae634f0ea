"""C simulation: compile the generated HLS C++ and testbench with g++, run, compare.

The binary is cached under ``OUT/.csim/<hash of the sources>`` so that a second run with
other inputs does not recompile.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bbgrap_hls import progress
from bbgrap_hls.errors import BadInputError

CXXFLAGS = ["-std=c++17", "-O2", "-Wall", "-Wextra"]


@dataclass
class CsimResult:
    """Outcome of one C simulation: per output, got / expected arrays (NHWC frames)."""

    ok: bool
    outputs: dict[str, np.ndarray]
    message: str
    build_seconds: float
    run_seconds: float

    @property
    def match(self) -> bool:
        """True when every output is bit-exact (the name `sim`'s result uses)."""
        return self.ok

    def to_dict(self) -> dict:
        """The ``csim --json`` fields: ``match``, ``message``, ``build_seconds``, ``run_seconds``."""
        return {"match": self.ok, "message": self.message, "build_seconds": round(self.build_seconds, 3),
                "run_seconds": round(self.run_seconds, 3)}


def _sources(out: Path) -> list[Path]:
    return sorted((out / "hls").glob("*.cpp")) + [out / "tb" / "tb.cpp"]


def build(out: Path, werror: bool = False) -> tuple[Path, float]:
    """Compile (or reuse) the testbench binary; returns its path and the build time."""
    import time

    if shutil.which("g++") is None:
        raise BadInputError("csim needs g++ (a C++17 compiler) on PATH")
    h = hashlib.sha256()
    # sources only: the URAM weight images (hls/*.bin) are read when the testbench runs
    for p in sorted(q for q in (out / "hls").glob("*") if q.suffix in (".h", ".cpp")) + [out / "tb" / "tb.cpp"]:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    h.update(" ".join(CXXFLAGS + (["-Werror"] if werror else [])).encode())
    exe = out / ".csim" / h.hexdigest()[:16] / "tb"
    if exe.exists():
        return exe, 0.0
    exe.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    cmd = ["g++", *CXXFLAGS, *(["-Werror"] if werror else []), "-I", str(out / "hls"),
           *map(str, _sources(out)), "-o", str(exe)]
    with progress.task("csim: g++ build", ticker=True):
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise BadInputError(f"csim: g++ failed on {out}:\n{r.stderr[-3000:]}")
    if r.stderr.strip():
        raise BadInputError(f"csim: g++ warnings on {out}:\n{r.stderr[-3000:]}")
    return exe, time.perf_counter() - t0


def run(out: Path, vec_dir: Path, outputs: list[tuple[str, str, int]], werror: bool = False) -> CsimResult:
    """Run the testbench on ``vec_dir/in_*.bin`` and compare with ``vec_dir/expect_*.bin``."""
    import time

    exe, tb = build(out, werror)
    t0 = time.perf_counter()
    # argv[2]: where the URAM weight images (hls/weights_core<k>.bin) are
    r = subprocess.run([str(exe), str(vec_dir), str(out / "hls")], capture_output=True, text=True)
    tr = time.perf_counter() - t0
    if r.returncode != 0:
        return CsimResult(False, {}, f"testbench exited {r.returncode}: {r.stderr.strip()[-2000:]}", tb, tr)
    got: dict[str, np.ndarray] = {}
    for tensor, ident, _ in outputs:
        y = np.fromfile(vec_dir / f"out_{ident}.bin", dtype=np.int8)
        want = np.fromfile(vec_dir / f"expect_{ident}.bin", dtype=np.int8)
        got[tensor] = y
        bad = np.flatnonzero(y != want) if y.shape == want.shape else np.array([0])
        if bad.size:
            k = int(bad[0])
            msg = (f"FAIL: output '{tensor}' element {k} (NHWC order) is {int(y[k]) if k < y.size else None}, "
                   f"the integer reference says {int(want[k]) if k < want.size else None} "
                   f"({bad.size} of {want.size} differ)")
            return CsimResult(False, got, msg, tb, tr)
    n = sum(v.size for v in got.values())
    return CsimResult(True, got, f"PASS: {len(got)} output(s), {n} int8 values bit-exact", tb, tr)
