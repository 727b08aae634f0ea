"""Simulate a design's RTL kernels (``gen --kernels rtl``) through their control interfaces.

`simulate_kernels` builds ``OUT/rtl_kernel/platform.sv`` with Verilator (cached by the
hash of ``rtl_kernel/``), runs `bbgrap_hls.rtlsim.kernel_tb` (AxiLiteMaster per kernel, the
host schedule of ``host/design.json``, every buffer in one simulated memory) for ``runs``
runs of ``frames`` frames each, and compares every output buffer bit for bit with the
expected vectors of ``tb/``: frame ``f`` of run ``r`` is row ``(r·frames + f) mod B`` of the
``B`` test frames, so consecutive runs see different data.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from bbgrap_hls.errors import BadInputError
from bbgrap_hls.simtools import verilator_environ

PUBLIC_VLT = """`verilator_config
public_flat_rw -module "platform" -var "*"
"""


@dataclass
class KernelSimResult:
    match: bool
    message: str
    runs: list[dict] = field(default_factory=list)  # per run: cycles, ap_done cycle per kernel
    checks: list[dict] = field(default_factory=list)  # control-interface checks of the testbench
    build_seconds: float = 0.0
    run_seconds: float = 0.0


def _hash(rk: Path) -> str:
    import verilator

    h = hashlib.sha256(f"{verilator.__version__}|{PUBLIC_VLT}".encode())
    for p in sorted(rk.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(rk)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def build_kernels(out: Path, cache: Path) -> tuple[Path, float]:
    """Build (or reuse) the Verilator model of ``out/rtl_kernel/platform.sv``; (folder, seconds)."""
    from bbgrap_hls.rtlsim.build import _runner, makeflags

    rk = out / "rtl_kernel"
    if not (rk / "platform.sv").is_file():
        raise BadInputError(f"{out}: no rtl_kernel/platform.sv (not written by `bbgrap-hls gen --kernels rtl`)")
    spec = json.loads((rk / "kernels.json").read_text())
    folder = cache / f"kernels-{_hash(rk)}"
    if (folder / ".built").exists():
        return folder, 0.0
    folder.mkdir(parents=True, exist_ok=True)
    for m in spec["mem_files"]:
        shutil.copy2(rk / m, folder / Path(m).name)  # $readmemh reads from the working folder
    (folder / "public.vlt").write_text(PUBLIC_VLT)
    t0 = time.perf_counter()
    with verilator_environ():
        os.environ.update(makeflags(cache))
        try:
            _runner().build(sources=[folder / "public.vlt", *[rk / s for s in spec["sources"]]],
                            hdl_toplevel="platform", build_dir=folder, log_file=folder / "build.log")
        except (SystemExit, Exception) as e:
            log = (folder / "build.log").read_text(errors="replace")[-3000:] if (folder / "build.log").exists() else ""
            raise BadInputError(f"{out}: Verilator build of the RTL kernels failed ({e}):\n{log}") from None
    (folder / ".built").write_text("ok\n")
    return folder, time.perf_counter() - t0


def _frames(data: bytes, elems: int, rows: list[int]) -> bytes:
    return b"".join(data[r * elems:(r + 1) * elems] for r in rows)


def simulate_kernels(out: Path, frames: int = 2, runs: int = 2, cache: Path | None = None,
                     timeout_cycles: int = 2_000_000) -> KernelSimResult:
    """Run the RTL kernels of ``out`` as the host would and compare their outputs."""
    from cocotb_tools.runner import get_runner

    out = Path(out)
    cache = Path(cache) if cache else out / ".sim"
    folder, build_s = build_kernels(out, cache)
    spec = json.loads((out / "rtl_kernel" / "kernels.json").read_text())
    host = json.loads((out / "host" / "design.json").read_text())
    vec = json.loads((out / "tb" / "vectors.json").read_text())
    batch = int(vec["frames"])
    rows = [[(r * frames + f) % batch for f in range(frames)] for r in range(runs)]
    buffers, expect = [], {}
    for b in host["buffers"]:
        e = {"name": b["name"], "role": b["role"], "kernel": b["kernel"]}
        if b["role"] in ("weights", "ddr_weights"):
            e["bytes"] = int(b["elems"])
            if b["role"] == "ddr_weights":
                e["image"] = (out / "hls" / b["file"]).read_bytes().hex()
        else:
            e["bytes"] = int(b["elems"]) * frames
        if b["role"] == "input":
            data = (out / "tb" / f"in_{b['ident']}.bin").read_bytes()
            e["runs"] = [_frames(data, int(b["elems"]), rr).hex() for rr in rows]
        if b["role"] == "output":
            data = (out / "tb" / f"expect_{b['ident']}.bin").read_bytes()
            expect[b["name"]] = [_frames(data, int(b["elems"]), rr) for rr in rows]
        buffers.append(e)
    cfg = {"frames": frames, "runs": runs, "timeout_cycles": timeout_cycles, "buffers": buffers,
           "kernels": spec["kernels"], "host_kernels": host["kernels"], "schedule": host["schedule"],
           "results": str(folder / "results.json")}
    (folder / "results.json").unlink(missing_ok=True)
    (folder / "ksim.json").write_text(json.dumps(cfg))
    t0 = time.perf_counter()
    with verilator_environ():
        get_runner("verilator").test(test_module="bbgrap_hls.rtlsim.kernel_tb", hdl_toplevel="platform",
                                     hdl_toplevel_lang="verilog", build_dir=folder, test_dir=folder,
                                     extra_env={"BBG_KSIM": str(folder / "ksim.json")},
                                     results_xml=str(folder / "results.xml"), log_file=folder / "test.log")
    run_s = time.perf_counter() - t0
    if not (folder / "results.json").exists():
        log = (folder / "test.log").read_text(errors="replace")[-3000:] if (folder / "test.log").exists() else ""
        return KernelSimResult(False, f"the kernel testbench wrote no results:\n{log}", build_seconds=build_s,
                               run_seconds=run_s)
    res = json.loads((folder / "results.json").read_text())
    runs_out = [{"cycles": x["cycles"], "done_at": x["done_at"]} for x in res["runs"]]
    if "timeout" in res:
        t = res["timeout"]
        return KernelSimResult(False, f"run {t['run']}: {t['kernel']} not done after {t['cycles']} cycles "
                               f"(control register {t['status']:#x})", runs_out, res["checks"], build_s, run_s)
    bad = [c for c in res["checks"] if not c["ok"]]
    if bad:
        return KernelSimResult(False, f"control interface: {bad[0]}", runs_out, res["checks"], build_s, run_s)
    for r, x in enumerate(res["runs"]):
        for name, exp in expect.items():
            got = bytes.fromhex(x["outputs"][name])
            if got != exp[r]:
                i = next(j for j in range(len(exp[r])) if got[j] != exp[r][j])
                return KernelSimResult(False, f"run {r}: {name} differs first at byte {i} "
                                       f"(got {got[i]}, expected {exp[r][i]})", runs_out, res["checks"], build_s, run_s)
    return KernelSimResult(True, f"{runs} run(s) of {frames} frame(s): every output bit-exact", runs_out,
                           res["checks"], build_s, run_s)
