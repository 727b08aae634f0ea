"""Simulate a generated design's RTL twin and compare it with the integer reference.

`simulate` builds (cached) ``OUT/rtl/top.sv``, drives ``frames`` frames of the test input
through the design-level testbench (`bbgrap_hls.rtlsim.tb`), compares every output frame
bit for bit with the expected vectors and measures:

- ``measured_ii_cycles``: cycles between the ends of consecutive output frames in steady
  state: the mean interval from frame 1 to the last when at least 3 frames run (frame 1 −
  frame 0 with 2); a long run (at least twice ``m`` intervals after frame 1, ``m`` the lcm
  of the plan's pixel copies, whose intervals repeat every ``m`` frames) averages only its
  last half, a multiple of ``m`` intervals, so that a deep design's fill (its first frames
  come slower while its FIFOs fill: a 64 × 64 ShuffleNetV2 with a blocked stem, 2,448,
  2,368, then 2,304 a frame) is not counted as throughput; None with one frame
  (``ii_measured`` False, "ii not measured" in the message);
- ``measured_latency_cycles``: frame 0's first input beat to its last output beat, in an
  empty pipeline with the input offered every cycle and no output back-pressure (the
  cost model's assumptions, docs/cost-model.md);
- ``simulated_cycles``: the cycles the testbench ran after reset and preload (it stops
  within a few hundred cycles of the last output beat, or at the watchdog's verdict), and
  ``cycles_per_second``: those cycles over the testbench's own wall time for them (the
  simulator's speed; cocotb's start-up and the model's loading are in ``run_seconds`` only).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bbgrap_hls import progress
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.rtlsim.build import Build, build, opt_for, run_tb


@dataclass
class SimResult:
    """Outcome of one RTL simulation (the ``--json`` fields of ``bbgrap-hls sim``)."""

    match: bool
    frames: int
    measured_ii_cycles: int | None
    predicted_ii_cycles: int
    measured_latency_cycles: int | None
    predicted_latency_cycles: int
    message: str
    build_seconds: float
    run_seconds: float
    bottleneck: str = ""
    simulated_cycles: int | None = None
    cycles_per_second: float | None = None
    deadlock: dict | None = None
    waves: str | None = None
    frame_intervals: list[int] = field(default_factory=list)  # cycles between output frame ends
    outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def ii_measured(self) -> bool:
        """False when no ii was measured (one frame, a mismatch or a deadlock):
        ``measured_ii_cycles`` and ``ii_error`` are then None (``null`` in JSON)."""
        return self.measured_ii_cycles is not None

    def to_dict(self) -> dict:
        """The ``sim --json`` fields (every field but ``outputs``, plus ``ii_measured``,
        ``ii_error`` and ``latency_error``)."""
        d = asdict(self)
        d.pop("outputs")
        d["ii_measured"] = self.ii_measured
        d["ii_error"] = _rel(self.measured_ii_cycles, self.predicted_ii_cycles)
        d["latency_error"] = _rel(self.measured_latency_cycles, self.predicted_latency_cycles)
        return d


def _rel(m: int | None, p: int) -> float | None:
    return None if m is None or not p else round((m - p) / p, 6)


def load_manifest(out: Path) -> tuple[dict, dict]:
    """``tb/rtl.json`` and ``tb/vectors.json`` of a gen folder."""
    paths = [out / "tb" / "rtl.json", out / "tb" / "vectors.json"]
    for p in paths:
        if not p.is_file():
            raise BadInputError(f"{out}: no {p.relative_to(out)} (not a folder written by `bbgrap-hls gen`)")
    return json.loads(paths[0].read_text()), json.loads(paths[1].read_text())


def simulate(out: Path, x: np.ndarray | None = None, frames: int = 2, waves: bool = False,
             cache: Path | None = None, runtime: Path | None = None, int8_graph=None) -> SimResult:
    """Build and run the RTL twin of ``out`` on ``frames`` frames (see module docstring).

    Args:
        out: a folder written by ``bbgrap-hls gen``.
        x: input array (float, the model's input shape; batch rows are cycled through the
            frames); None: the seed input gen wrote.
        frames: frames to run back to back (>= 1; 2 or more for an ii).
        waves: write an FST waveform (``dump.fst`` in the build folder).
        cache: build cache folder (default ``out/.sim``).
        runtime: folder sharing Verilator's runtime objects (default: one per user,
            `bbgrap_hls.rtlsim.build.default_runtime`).
        int8_graph: the int8 graph gen quantised for ``out``, when the caller has it (the
            expected outputs for ``x`` then need no second calibration).
    """
    man, meta = load_manifest(out)
    with tempfile.TemporaryDirectory(prefix="bbgrap-sim-") as tmp:
        vec = out / "tb"
        if x is not None:
            from bbgrap_hls.commands.csim import _vectors_for

            vec = Path(tmp)
            _vectors_for(out, meta, x, vec, int8_graph)
        ins = {i["ident"]: np.fromfile(vec / f"in_{i['ident']}.bin", np.int8).reshape(-1, i["elems"])
               for i in man["inputs"]}
        expect = {o["ident"]: np.fromfile(vec / f"expect_{o['ident']}.bin", np.int8).reshape(-1, o["elems"])
                  for o in man["outputs"]}
    res, b, tr = run_frames(out, ins, frames, waves, cache, runtime)
    return _score(man, res, expect, frames, b, tr, _copies_lcm(out))


def _copies_lcm(out: Path) -> int:
    """The lcm of the plan's pixel copies (``mmv``; 1 without a plan.json)."""
    try:
        plan = json.loads((out / "plan.json").read_text())
    except (OSError, ValueError):
        return 1
    ms = [n.get("mmv", 1) for n in plan.get("nodes", [])]
    ms += [q.get("mmv", 1) for n in plan.get("nodes", []) for q in n.get("split") or ()]
    return math.lcm(*ms) if ms else 1


def run_frames(out: Path, inputs: dict[str, np.ndarray], frames: int, waves: bool = False,
               cache: Path | None = None, runtime: Path | None = None) -> tuple[dict, Build, float]:
    """Drive int8 NHWC frames (``inputs[ident]``: rows cycled through ``frames``) through the
    RTL twin; returns the testbench's record (outputs, cycles, deadlock), the build and the
    simulation seconds. No comparison (the device backend of ``host/driver.py`` uses this)."""
    if frames < 1:
        raise BadInputError(f"--frames {frames}: at least one frame")
    out = Path(out).resolve()  # the testbench runs in the build folder: absolute paths only
    man, _ = load_manifest(out)
    planned = man["predicted_latency_cycles"] + (frames - 1) * man["predicted_ii_cycles"]
    b = build(out, man["modules"], Path(cache or out / ".sim").resolve(), runtime and Path(runtime).resolve(), waves,
              opt_for(planned))
    with tempfile.TemporaryDirectory(prefix="run-", dir=b.folder) as tmp:
        run = Path(tmp)
        _config(man, inputs, run, frames, out / "rtl")
        t0 = time.perf_counter()
        with progress.task(f"sim: simulating {frames} frame(s)", total=planned, unit="cycle",
                           poll=lambda: _progress(run / "progress.json", frames, planned)):
            run_tb(b, run / "config.json", waves)
        tr = time.perf_counter() - t0
        res_p = run / "result.json"
        if not res_p.exists():
            log = (b.folder / "test.log").read_text(errors="replace")[-3000:] if (b.folder / "test.log").exists() else ""
            raise BadInputError(f"{out}: the RTL testbench did not finish:\n{log}")
        return json.loads(res_p.read_text()), b, tr


def _progress(path: Path, frames: int, planned: int) -> tuple[int, int, str] | None:
    """What the testbench last wrote as a progress update: cycles simulated against the
    plan's total (frame 0's latency plus an ii per further frame), frames out."""
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):  # not written yet
        return None
    cycles = int(d["cycle"])
    return cycles, max(planned, cycles), f"frames out {d['frames_out']}/{frames}"


def _config(man: dict, ins: dict[str, np.ndarray], run: Path, frames: int, rtl: Path | None = None) -> dict:
    inputs = []
    for i in man["inputs"]:
        a = np.asarray(ins[i["ident"]], np.int8).reshape(-1, i["elems"])
        np.save(run / f"in_{i['ident']}.npy", a)
        inputs.append(dict(i, file=str(run / f"in_{i['ident']}.npy")))
    ii, lat = man["predicted_ii_cycles"], man["predicted_latency_cycles"]
    window = 2 * (ii + lat) + 2000
    cfg = {"inputs": inputs, "outputs": man["outputs"], "channels": man["channels"], "frames": frames,
           "watchdog_cycles": window, "limit_cycles": 4 * (frames * ii + lat) + 20 * window,
           "result": str(run / "result.json"), "progress": str(run / "progress.json"),
           "progress_cycles": max(256, min(ii, 4096)),
           # how often the testbench looks for the last output frame (a Timer, not a wake-up per cycle)
           "check_cycles": max(16, min(ii // 8, 256)),
           # the input driver: "beats" (tb._Feeder) or "cocotbext" (cocotbext-axi's source, as before)
           "feeder": os.environ.get("BBG_SIM_FEEDER", "beats"),
           # off-chip weight ports: the simulated memory's image (absolute path), rate, latency
           "axi": [dict(a, image=str(rtl / a["image"])) for a in man.get("axi", [])] if rtl else [],
           # DDR frame stages: each read-write port's scratch area (a zeroed memory), rate, latency
           "stages": man.get("stages", [])}
    (run / "config.json").write_text(json.dumps(cfg))
    return cfg


def _score(man: dict, res: dict, expect: dict, frames: int, b, tr: float, m: int = 1) -> SimResult:
    pred_ii, pred_lat = man["predicted_ii_cycles"], man["predicted_latency_cycles"]
    got = {k: np.array(v, dtype=np.int8).reshape(len(v), -1) if v else np.zeros((0, 0), np.int8)
           for k, v in res["outputs"].items()}
    waves = next((str(b.folder / f) for f in ("dump.fst", "dump.vcd") if (b.folder / f).exists()), None) if b.waves else None
    cycles, wall = res.get("cycles"), res.get("sim_wall_seconds")
    common = dict(frames=frames, predicted_ii_cycles=pred_ii, predicted_latency_cycles=pred_lat,
                  build_seconds=round(b.seconds, 3), run_seconds=round(tr, 3), bottleneck=man["bottleneck"],
                  simulated_cycles=cycles, cycles_per_second=round(cycles / wall) if cycles and wall else None,
                  waves=waves, outputs=got)
    if res["deadlock"]:
        d = res["deadlock"]
        full = "; ".join(d["full"]) or "none"
        waiting = "; ".join(d["waiting"][:6]) or "none"
        msg = (f"DEADLOCK at cycle {d['cycle']} ({d['reason']}; output frames done {d['frames_out']} of {frames}): "
               f"full (writer stalled): {full}; holding a beat its reader refuses: {waiting}")
        return SimResult(False, measured_ii_cycles=None, measured_latency_cycles=None, message=msg,
                         deadlock=d, **common)
    for o in man["outputs"]:
        y, want = got[o["ident"]], expect[o["ident"]]
        for f in range(frames):
            w = want[f % len(want)]
            if y.shape[1] != w.size:  # frames told apart by tlast: a wrong frame end
                msg = (f"FAIL: output '{o['tensor']}' came in frames of {y.shape[1]} values, the integer reference "
                       f"has {w.size} a frame")
                return SimResult(False, measured_ii_cycles=None, measured_latency_cycles=None, message=msg, **common)
            if not np.array_equal(y[f], w):
                bad = np.flatnonzero(y[f] != w)
                k = int(bad[0])
                msg = (f"FAIL: output '{o['tensor']}' frame {f} element {k} (NHWC order) is {int(y[f][k])}, the "
                       f"integer reference says {int(w[k])} ({bad.size} of {w.size} differ)")
                return SimResult(False, measured_ii_cycles=None, measured_latency_cycles=None, message=msg, **common)
    ends = res["output_ends"]
    first_in = min(s[0] for s in res["input_starts"])
    lat = max(e[0] for e in ends) - first_in
    ii = None
    if frames - 2 >= 2 * m:  # a long run: its last half, whole periods of the copies
        n_last = m * ((frames - 2) // (2 * m))
        ii = max(round((e[-1] - e[-1 - n_last]) / n_last) for e in ends)
    elif frames >= 3:
        ii = max(round((e[-1] - e[1]) / (frames - 2)) for e in ends)
    elif frames == 2:
        ii = max(e[1] - e[0] for e in ends)
    n = sum(v.size for v in got.values())
    gaps = [max(e[f] - e[f - 1] for e in ends) for f in range(1, frames)]
    ii_text = (f"ii {ii} cycles (plan {pred_ii})" if ii is not None else
               f"ii not measured (one frame; --frames 2 or more measures it; plan {pred_ii})")
    if len(gaps) >= 2 * m and gaps[-m:] != gaps[-2 * m:-m] or len(gaps) < 2 * m and ii is not None and ii != pred_ii:
        # the intervals still change (a deep design fills its FIFOs over its first frames)
        ii_text += (f"; frame intervals {', '.join(f'{g:,}' for g in gaps)}: not yet steady, "
                    f"--frames {max(6, 2 + 4 * m)} or more for the steady state")
    msg = (f"PASS: {len(got)} output(s), {frames} frame(s), {n} int8 values bit-exact; {ii_text}, "
           f"latency {lat} cycles (plan {pred_lat})")
    return SimResult(True, measured_ii_cycles=ii, measured_latency_cycles=int(lat), message=msg,
                     frame_intervals=gaps, **common)
