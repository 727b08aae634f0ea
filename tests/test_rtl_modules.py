"""Every RTL module in Verilator under cocotb: exact outputs, measured cycles vs prediction.

Each parameter set of ``sim/cases.py`` builds once into ``build/sim/<module>-<hash>`` and
runs its cocotb testbench (``sim/test_<module>.py``): without stalls, with back-pressure,
with idle input cycles, and both. The testbench asserts bit-exact output and, in the run
without stalls, ii and latency equal to the cost model's prediction (``sim/expect.py``),
which this side checks again from the measured cycles. A conv with ``M`` pixel copies
averages its ii over a multiple of ``M`` frames (``expect.frames``), the span over which the
model's ii is exact.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from sim import cases, expect  # noqa: E402

pytestmark = pytest.mark.sim

# the first parameter set of each module runs by default, the first conv with pixel
# copies (M > 1), the first conv with two pixels a beat in and out (PX = PO = 2), the first mvu and conv with DSP packing (PACK = 2) and the first
# depthwise conv with LUT multipliers (PACK = 0); the others are marked slow
MMV_FIRST = next(i for i, p in enumerate(cases.PARAMS["conv"]) if p.get("M", 1) > 1)
PAIR_FIRST = next(i for i, p in enumerate(cases.PARAMS["conv"]) if p.get("PX", 1) > 1 and p.get("PO", 1) > 1)
PACK_FIRST = {(m, next(i for i, p in enumerate(cases.PARAMS[m]) if p.get("PACK", 1) > 1)) for m in ("mvu", "conv")}
LUT_FIRST = {("dwconv", next(i for i, p in enumerate(cases.PARAMS["dwconv"]) if p.get("PACK", 1) == 0))}
# the LUT requantisers (RQ_LUT = 1) of requant, mvu and add run by default, the others are slow
RQ_LUT_FIRST = {(m, next(i for i, p in enumerate(cases.PARAMS[m]) if p.get("RQ_LUT", 0)))
                for m in ("requant", "mvu", "add")}
# the first depthwise conv with a short window ring (RING > 0) runs by default
RING_FIRST = {("dwconv", next(i for i, p in enumerate(cases.PARAMS["dwconv"]) if p.get("RING", 0)))}
# and the first with its ring in UltraRAM words (RING_URAM > 0)
URAM_FIRST = {("dwconv", next(i for i, p in enumerate(cases.PARAMS["dwconv"]) if p.get("RING_URAM", 0)))}
# the first grouped conv (GROUPS > 1) runs by default
GROUPS_FIRST = {("conv", next(i for i, p in enumerate(cases.PARAMS["conv"]) if p.get("GROUPS", 1) > 1))}
# the first global average pool with its bias' and requantiser as module constants (UNIFORM = 1)
UNIFORM_FIRST = {("gap", next(i for i, p in enumerate(cases.PARAMS["gap"]) if p.get("UNIFORM", 0)))}
DEFAULT = {("conv", MMV_FIRST), ("conv", PAIR_FIRST)} | PACK_FIRST | LUT_FIRST | RQ_LUT_FIRST | RING_FIRST \
    | URAM_FIRST | GROUPS_FIRST | UNIFORM_FIRST


def _case_id(module: str, index: int) -> str:
    """``conv-3``; a short window ring ends in ``-ring``, a ring in UltraRAM words in ``-uram``,
    constant requantisers in ``-uniform`` (for ``-k``)."""
    p = cases.PARAMS[module][index]
    return f"{module}-{index}" + "".join(f"-{t}" for k, t in (("RING", "ring"), ("RING_URAM", "uram"),
                                                               ("UNIFORM", "uniform")) if p.get(k, 0))


CASES = [pytest.param(m, i, id=_case_id(m, i), marks=[pytest.mark.slow] if i and (m, i) not in DEFAULT else [])
         for m, sets in cases.PARAMS.items() for i in range(len(sets))]


@pytest.mark.parametrize(("module", "index"), CASES)
def test_rtl_module(module: str, index: int) -> None:
    pytest.importorskip("cocotb")
    from sim.runner import run_module

    run = run_module(module, cases.PARAMS[module][index])
    assert run.tests == 4, f"{module}: {run.tests} cocotb tests ran, 4 expected (see {run.folder}/test.log)"
    assert run.failed == 0, f"{module}: {run.failed} cocotb tests failed (see {run.folder}/test.log)"
    assert run.timing is not None, f"{module}: no timing measured (see {run.folder}/test.log)"
    # the testbench asserted these; again here, against the cost model evaluated on this side
    want = expect.predict(module, cases.PARAMS[module][index])
    got = (run.timing["ii"], run.timing["latency"])
    assert got == want, f"{module}-{index}: measured (ii, latency) {got}, cost model {want}"


def test_pointwise_copies_are_not_planned() -> None:
    """conv-9 (pixel copies on the 1x1 path without window generator) is checked against the
    RTL's own schedule (`expect.pointwise_copies_timing`), not the cost model: the model refuses
    it, so the planner never generates it. Should that change, the model must predict it."""
    pointwise = [p for p in cases.PARAMS["conv"] if expect.pointwise_copies(p)]
    assert pointwise
    for p in pointwise:
        with pytest.raises(ValueError, match="pixel copies need a window generator"):
            expect.block("conv", p)


def test_module_builds_link_the_kept_verilator_runtime(tmp_path, monkeypatch) -> None:
    """After one module build the Verilator runtime objects are kept (`rtlbuild.keep_runtime`),
    and a fresh build links them rather than compiling them again. Until stop 28 the module
    runner never kept them: each of the ~95 builds compiled verilated*.cpp anew, about 6 of its
    9 seconds (test_rtl_modules.py took 1,727 s of a 2,824 s CI run)."""
    pytest.importorskip("cocotb")
    from bbgrap_hls.rtlsim import build as rtlbuild
    from sim import runner

    monkeypatch.setattr(runner, "CACHE", tmp_path)  # a cache of its own: no kept runtime yet
    params = cases.PARAMS["fifo"][0]
    run = runner.run_module("fifo", params)
    assert run.failed == 0
    assert "VK_GLOBAL_OBJS" in rtlbuild.makeflags(tmp_path)["MAKEFLAGS"], "no kept runtime objects after a module build"
    folder = runner.build_folder("fifo", params, 7)  # another seed: a build of its own
    run = runner.run_module("fifo", params, seed=7)
    assert run.failed == 0 and run.tests == 4
    log = (folder / "build.log").read_text()
    assert "Vtop__ALL" in log, "the fresh build compiled nothing: not a fresh build"
    assert "-o verilated.o" not in log, "a fresh module build compiled Verilator's runtime again"
