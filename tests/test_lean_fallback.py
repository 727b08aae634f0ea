"""`search/fallbacks.lean_replan`, lean buffers beyond a refusal: a plan that fits with the
default buffers but fills a core's BRAM18 or URAM while DSPs are left over
(`fallbacks.memory_full`) is planned again with short window rings and one output slot, and the
better plan kept (docs/cost-model.md, "Short window rings").

The design: `tests.models.lenet` with off-chip weights on one core of 3 BRAM18, 35,000 LUTs
and 40 DSPs. With the default buffers it fits at ii 40,000 with the 3 BRAM18 used and 31 of the
40 DSPs; with lean buffers, 20,000. On 32 DSPs the default plan uses 31 of them and is kept
without a second plan. (64 DSPs gave the first case until stop 57, 29,400 against 19,600;
since off-chip blocks pack, the default plan uses all 64 there. 40,000 LUTs until stop 58:
with requantisers 331 LUTs smaller the default plan reaches 20,000 there too.)
"""

from __future__ import annotations

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import make_plan
from bbgrap_hls.search.fallbacks import memory_full
from tests import models
from tests.test_sim_offchip import board_yaml

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def _plan(tmp_path, dsp: int, lean: bool | None, said: list[str] | None = None):
    (tmp_path / "board.yaml").write_text(board_yaml(1, 3, dsp, 35000))
    g = canonicalize(load_model(models.save(models.lenet(), tmp_path / "m.onnx")))
    return make_plan(g, load_board(str(tmp_path / "board.yaml")), baselines=False, padded_folds=False,
                     offchip_weights=True, short_rings=lean, out_slot=lean,
                     progress=None if said is None else said.append)


def test_a_plan_that_fills_memory_with_dsps_to_spare_is_planned_lean_too(tmp_path):
    default, lean = _plan(tmp_path, 40, False), _plan(tmp_path, 40, True)
    assert memory_full(default) == "core 0 uses 3 of its 3 BRAM18"
    assert lean.ii_cycles < default.ii_cycles
    said: list[str] = []
    auto = _plan(tmp_path, 40, None, said)
    assert auto.ii_cycles == lean.ii_cycles
    assert auto.optimizer["short_rings"] or auto.optimizer["out_slot"]
    assert any("planning with short window rings and one output slot too" in s for s in said)


def test_a_plan_that_uses_its_dsps_keeps_the_default_buffers(tmp_path):
    default = _plan(tmp_path, 32, False)
    assert default.cores[0].dsp >= 0.9 * default.cores[0].dsp_limit and memory_full(default) == ""
    said: list[str] = []
    auto = _plan(tmp_path, 32, None, said)
    assert auto.ii_cycles == default.ii_cycles and not any("lean" in s or "short window" in s for s in said)
    assert not auto.optimizer["short_rings"] and not auto.optimizer["out_slot"]
