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

# the first parameter set of each module runs by default, and the first conv with pixel
# copies (M > 1); the others are marked slow
MMV_FIRST = next(i for i, p in enumerate(cases.PARAMS["conv"]) if p.get("M", 1) > 1)
CASES = [pytest.param(m, i, id=f"{m}-{i}", marks=[pytest.mark.slow] if i and (m, i) != ("conv", MMV_FIRST) else [])
         for m, sets in cases.PARAMS.items() for i in range(len(sets))]


@pytest.mark.parametrize(("module", "index"), CASES)
def test_rtl_module(module: str, index: int) -> None:
    pytest.importorskip("cocotb")
    from sim.runner import run_module

    run = run_module(module, cases.PARAMS[module][index])
    assert run.tests == 4, f"{module}: {run.tests} cocotb tests ran, 4 expected (see {run.folder}/test.log)"
    assert run.failed == 0, f"{module}: {run.failed} cocotb tests failed (see {run.folder}/test.log)"
    assert run.timing is not None, f"{module}: no timing measured (see {run.folder}/test.log)"


def test_mmv_formulas() -> None:
    """The pixel-copy timing (``expect.mmv_conv``) against the planner's closed forms: ii is
    ``N·SF·NF/M`` when M divides N (and on average over M frames otherwise), the first pixel
    leaves ``SF·NF + 6`` cycles after the swg may read, M = NF reads back to back."""
    from sim import expect

    for p in (q for q in cases.PARAMS["conv"] if q.get("M", 1) > 1):
        ready0, sf, nf, n, direct = expect.mmv_reads(p)
        m = p["M"]
        ii, latency, first = expect.mmv_conv(p)
        assert first == ready0 + sf * nf + (5 if direct else 6)
        assert latency == first + ((n - 1) // m) * sf * nf + ((n - 1) % m) * sf + 1
        assert expect.mmv_conv(p, frames=2 + m)[0] == n * sf * nf / m
        if n % m == 0:
            assert ii == n * sf * nf // m
        if not direct:  # the planner's cost model: the same latency, the same mean ii
            cost, in_beats = expect.block("conv", p)
            m_ii, m_latency = expect._block(cost, in_beats)
            assert m_latency == latency
            assert m_ii == -(-n * sf * nf // m)
    full = {"C": 4, "CO": 8, "SIMD": 4, "PE": 4, "M": 2, "H": 4, "W": 4, "KH": 1, "KW": 1, "SH": 1, "SW": 1,
            "PT": 0, "PL": 0, "PB": 0, "PR": 0}  # M = NF: one window a cycle, as with NF = 1
    assert expect.mmv_conv(full)[0] == 16
