"""Every RTL module in Verilator under cocotb: exact outputs, measured cycles vs prediction.

Each parameter set of ``sim/cases.py`` builds once into ``build/sim/<module>-<hash>`` and
runs its cocotb testbench (``sim/test_<module>.py``): without stalls, with back-pressure,
with idle input cycles, and both. The testbench asserts bit-exact output and, in the run
without stalls, ii and latency equal to the prediction (``sim/expect.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from sim import cases  # noqa: E402

pytestmark = pytest.mark.sim

# the first parameter set of each module runs by default; the others are marked slow
CASES = [pytest.param(m, i, id=f"{m}-{i}", marks=[pytest.mark.slow] if i else [])
         for m, sets in cases.PARAMS.items() for i in range(len(sets))]


@pytest.mark.parametrize(("module", "index"), CASES)
def test_rtl_module(module: str, index: int) -> None:
    pytest.importorskip("cocotb")
    from sim.runner import run_module

    run = run_module(module, cases.PARAMS[module][index])
    assert run.tests == 4, f"{module}: {run.tests} cocotb tests ran, 4 expected (see {run.folder}/test.log)"
    assert run.failed == 0, f"{module}: {run.failed} cocotb tests failed (see {run.folder}/test.log)"
    assert run.timing is not None, f"{module}: no timing measured (see {run.folder}/test.log)"
