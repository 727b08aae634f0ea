"""FIFOs in URAM or distributed RAM while a core is over its BRAM18
(`search.fifo_memory.fifos_to_uram`, its second and third passes, and `room_to_free`, which
`ilp._at` uses to leave URAM or LUTs free for them).

A FIFO of 8 bits × 16 k beats (a one-lane skip FIFO a sixth of a ResNet-18 frame long) is 8
RAMB18 or 4 URAM288 cascaded: too small for the whole-frame rule (`fifo_in_uram`: 16 RAMB18
or more), a fair trade where a core runs short of BRAM18 and has URAM to spare."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from bbgrap_hls.model.memory import distributed_memory, memory, uram_memory
from bbgrap_hls.plan import ChannelPlan
from bbgrap_hls.search.fifo_memory import LUTRAM_PER_BRAM18, fifos_to_lutram, fifos_to_uram, room_to_free


class _Prob:
    """What `fifos_to_uram` asks of a problem: the board's URAM limits and `limits`."""

    def __init__(self, bram18: int, uram: int, lut: int = 0):
        self.board = SimpleNamespace(cores=[SimpleNamespace(uram_limit=uram)])
        self._lim = np.array([1000, bram18, uram, lut, 0], dtype=np.int64)

    def limits(self, k: int) -> np.ndarray:
        return self._lim


def _chan(lanes: int, depth: int, kind: str = "fifo", core: int = 0) -> ChannelPlan:
    b = memory(8 * lanes, depth).bram18
    return ChannelPlan("t", "a", "b", core, core, kind, None, depth, lanes, 8 * lanes * depth, depth, False, b)


def _use(chans, bram_else: int, uram: int) -> dict:
    return {0: np.array([0, bram_else + sum(c.bram18 for c in chans), uram, 0, 0], dtype=np.int64)}


def test_the_sizes_behind_the_trade():
    assert memory(8, 16384).bram18 == 8 and uram_memory(8, 16384).uram == 4
    # two lanes of 5.4 k beats: 6 RAMB18, 2 URAM288: the better trade per URAM
    assert memory(16, 5424).bram18 == 6 and uram_memory(16, 5424).uram == 2


def test_smaller_fifos_move_only_while_the_core_is_over_its_bram18():
    chans = [_chan(1, 16384), _chan(2, 5424), _chan(2, 5400), _chan(1, 300)]
    use = _use(chans, 200, 10)
    before = int(use[0][1])  # 200 + 8 + 6 + 6 + 1 = 221
    fifos_to_uram(_Prob(bram18=212, uram=20), use, chans, big=[])
    # 9 over: the two 2-lane FIFOs first (3 RAMB18 per URAM), then stop at 212 - 12 = 209
    assert [c.uram for c in chans] == [0, 2, 2, 0] and [c.bram18 for c in chans] == [8, 0, 0, 1]
    assert use[0][1] == before - 12 and use[0][2] == 14
    # within its BRAM18 nothing moves
    chans = [_chan(1, 16384)]
    use = _use(chans, 100, 0)
    fifos_to_uram(_Prob(bram18=200, uram=20), use, chans, big=[])
    assert chans[0].uram == 0 and chans[0].bram18 == 8


def test_no_fifo_moves_into_uram_the_weights_need():
    chans = [_chan(1, 16384), _chan(2, 5424)]
    use = _use(chans, 200, 19)
    fifos_to_uram(_Prob(bram18=200, uram=20), use, chans, big=[])
    assert all(c.uram == 0 for c in chans) and use[0][2] == 19
    # room for the 2-URAM one only: it moves, the 4-URAM one stays although still over
    use = _use(chans, 200, 18)
    fifos_to_uram(_Prob(bram18=200, uram=20), use, chans, big=[])
    assert [c.uram for c in chans] == [0, 2] and use[0][1] == 208


def test_a_fifo_never_takes_more_uram_than_its_bram18():
    # 128 lanes × 600 beats: 64 RAMB18 (1,024 bits wide, 600 deep) but 15 URAM288 columns
    c = _chan(128, 600)
    assert uram_memory(8 * 128, 600).uram == 15 and c.bram18 > 15
    tiny = _chan(72, 600)  # 576 bits x 600: 16 RAMB18, 8 URAM288
    narrow = _chan(1, 2048)  # 1 RAMB18, 1 URAM288: no gain
    assert room_to_free([narrow], 0, 1, "uram") == 0
    assert room_to_free([tiny], 0, 1, "uram") == uram_memory(8 * 72, 600).uram


def test_uram_to_free_counts_the_uram_that_gives_the_shortfall_back():
    chans = [_chan(1, 16384), _chan(2, 5424), _chan(2, 5400), _chan(1, 300, kind="stream")]
    assert room_to_free(chans, 0, 6, "uram") == 2      # one 2-lane FIFO
    assert room_to_free(chans, 0, 7, "uram") == 4      # both
    assert room_to_free(chans, 0, 20, "uram") == 8     # and the one-lane one: 20 RAMB18
    assert room_to_free(chans, 0, 21, "uram") == 0     # a link's FIFO is not a candidate: cannot
    assert room_to_free(chans, 1, 1, "uram") == 0      # another core's


def test_shallow_wide_fifos_go_to_distributed_ram_when_there_is_no_uram():
    # 33 lanes x 226 beats (an inception branch's FIFO): 8 RAMB18 or 1,484 LUTs (Yosys-exact)
    wide, deep = _chan(33, 226), _chan(1, 16384)
    assert wide.bram18 == 8 and distributed_memory(264, 226).lut == 1484
    assert distributed_memory(8, 16384).lut > LUTRAM_PER_BRAM18 * deep.bram18  # never a candidate
    chans = [wide, deep]
    use = _use(chans, 200, 0)
    fifos_to_lutram(_Prob(bram18=205, uram=0, lut=10_000), use, chans)
    assert (wide.lutram, wide.bram18, deep.lutram, deep.bram18) == (1484, 0, 0, 8)
    assert use[0][1] == 208 and use[0][3] == 1484  # still over: the plan is refused, not hidden
    # no LUTs to spare: nothing moves
    chans = [_chan(33, 226)]
    use = _use(chans, 200, 0)
    use[0][3] = 9_000
    fifos_to_lutram(_Prob(bram18=205, uram=0, lut=10_000), use, chans)
    assert chans[0].lutram == 0 and chans[0].bram18 == 8
    assert room_to_free([_chan(33, 226), _chan(1, 16384)], 0, 8, "lutram") == 1484
    assert room_to_free([_chan(33, 226), _chan(1, 16384)], 0, 9, "lutram") == 0


def test_uram_first_then_distributed_ram():
    chans = [_chan(2, 5424), _chan(33, 226)]
    use = _use(chans, 200, 18)
    prob = _Prob(bram18=200, uram=20, lut=10_000)
    fifos_to_uram(prob, use, chans, big=[])
    fifos_to_lutram(prob, use, chans)
    assert (chans[0].uram, chans[1].lutram) == (2, 1484) and use[0][1] == 200
    # within its BRAM18 after URAM: no LUTs spent
    chans = [_chan(2, 5424), _chan(33, 226)]
    use = _use(chans, 192, 18)
    fifos_to_uram(prob, use, chans, big=[])
    fifos_to_lutram(prob, use, chans)
    assert (chans[0].uram, chans[1].lutram, chans[1].bram18) == (2, 0, 8) and use[0][3] == 0


def test_gen_binds_each_moved_fifo_to_its_memory(tmp_path):
    """The channel's storage reaches the HLS: ``BIND_STORAGE type=fifo impl=uram`` or
    ``impl=lutram`` on the stream the reader takes, none on the others."""
    import copy
    import re

    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant import quantize
    from bbgrap_hls.search import make_plan
    from tests.test_csim import small_model

    g = canonicalize(load_model(small_model(tmp_path / "small.onnx")))
    board = load_board("u250")
    plan = make_plan(g, board, baselines=False)
    gq = quantize(g)
    x = np.random.default_rng(3).standard_normal(gq.shape(gq.inputs[0])).astype(np.float32)
    fifos = [c for c in plan.channels if c.kind == "fifo"]
    to_uram = next(c for c in fifos if c.dst == "conv2")
    to_lut = next(c for c in fifos if c.dst == "sig")
    for c, how in ((to_uram, "uram"), (to_lut, "lutram")):
        edited = copy.deepcopy(plan)
        ch = next(e for e in edited.channels if (e.tensor, e.dst) == (c.tensor, c.dst))
        setattr(ch, how, 3)
        files, design = generate(gq, edited, board, {gq.inputs[0]: x})
        cpp = "\n".join(v.decode() for k, v in files.items() if re.fullmatch(r"hls/core\d+\.cpp", k))
        bound = re.findall(r"BIND_STORAGE variable = (\w+) type = fifo impl = (\w+)", cpp)
        assert len(bound) == 1 and bound[0][1] == how, bound
        # the bound stream is one the reader of that channel takes
        reader = next(lay.ident for core in design.cores for lay in core.layers if lay.node == c.dst)
        assert any(re.search(rf"\b{bound[0][0]}\b", ln) and f"{reader}_P" in ln for ln in cpp.splitlines()), reader
    files, _ = generate(gq, plan, board, {gq.inputs[0]: x})
    assert "type = fifo impl" not in "\n".join(v.decode() for k, v in files.items() if k.endswith(".cpp"))


def test_a_narrowing_converter_takes_the_fifo_and_its_storage_before_it():
    """Before a narrowing converter the planned FIFO's elements move to the wider stream
    (`design._convert`); the plan's URAM or LUTRAM binding moves with them, so the deep FIFO
    is the one in that memory and the two-beat one after the converter stays in registers."""
    from types import SimpleNamespace

    from bbgrap_hls.codegen.design import _convert
    from bbgrap_hls.codegen.ports import CoreDesign

    cd = CoreDesign(0, "core0")
    cd.streams.update({"s1": (33, 2), "s2": (3, 228 * 11)})
    cd.fifo_impl["s2"] = "lutram"
    _convert(SimpleNamespace(cores={0: cd}), 0, "s1", 33, "s2", 3, 33 * 3 * 100)
    assert cd.streams["s1"] == (33, 230) and cd.streams["s2"] == (3, 2)
    assert cd.fifo_impl == {"s1": "lutram"}
