"""The engine's window unit (`hw/rtl/engine_window.sv`) in Verilator under cocotb against
simulated AXI4 memories: every layer's output bit-exact against
`codegen.engine_window.reference` and its cycles (start to done) equal to
`model.engine_window.cycles` for the memory's latency ``L`` and period ``P``.

One build per parameter set (`sim.engine_window.run`), all of a set's layers in one
simulation. Maps are small and odd-sized, so rows and blocks start mid-beat.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the sim/ testbench package lives next to tests/

from bbgrap_hls.codegen import engine_window as ew  # noqa: E402
from bbgrap_hls.model.engine_window import cycles, resources  # noqa: E402
from sim import engine_window as sew  # noqa: E402

_P1 = (1, 1, 1, 1)
_P0 = (0, 0, 0, 0)
# (mode, h, w, c, kernel, stride, pads, L, P[, (in gap, out gap)]): with the last, the maps'
# blocks are strided, each a whole number of beats plus that many beats of gap apart
LAYERS = {
    "G8": ({"G": 8, "DATA_W": 128, "WMAX": 16, "WOMAX": 16, "KB": 8, "KMAX": 9}, [
        ("max", 9, 9, 12, (3, 3), (2, 2), _P1, 5, 1),       # maxpool 3x3 s2 pad 1, two blocks
        ("avg", 6, 7, 8, (2, 2), (2, 2), _P0, 3, 1),        # avgpool 2x2 s2, odd width
        ("avg", 5, 5, 16, (5, 5), (1, 1), _P0, 4, 1),       # global average pool (window = map)
        ("dw", 7, 7, 8, (3, 3), (1, 1), _P1, 6, 1),         # depthwise 3x3 s1 pad 1
        ("dw", 8, 9, 16, (3, 3), (2, 2), _P1, 10, 2),       # depthwise 3x3 s2 pad 1, slow memory
        ("max", 7, 8, 8, (3, 3), (2, 2), (1, 1, 0, 0), 2, 3),  # maxpool, a memory 3 cycles a beat
        ("max", 9, 6, 8, (1, 1), (3, 2), _P0, 4, 1),        # 1x1 s3: rows no window reads
        ("max", 9, 9, 12, (3, 3), (2, 2), _P1, 5, 1, (1, 0)),   # strided: blocks of 648 / 200 bytes
        ("avg", 6, 7, 16, (2, 2), (2, 2), _P0, 3, 1, (2, 1)),
        ("avg", 5, 5, 24, (5, 5), (1, 1), _P0, 4, 1, (0, 0)),   # global: a beat a block of 8 bytes
        ("dw", 7, 7, 16, (3, 3), (1, 1), _P1, 6, 2, (1, 2)),
    ]),
    "G4": ({"G": 4, "DATA_W": 128, "WMAX": 16, "WOMAX": 16, "KB": 4, "KMAX": 9}, [
        ("dw", 6, 7, 6, (3, 3), (1, 1), _P1, 7, 1),         # four pixels a beat, channels padded
        ("max", 7, 9, 4, (3, 3), (2, 2), _P1, 3, 2),
        ("avg", 4, 5, 8, (2, 2), (2, 2), _P0, 5, 1),
        ("max", 7, 9, 8, (3, 3), (2, 2), _P1, 3, 1, (0, 1)),
        ("dw", 5, 6, 7, (3, 3), (2, 1), _P1, 4, 1, (1, 0)),
    ]),
    # one pixel a beat; long rows: a load of 300 beats and rows of 300 output beats, split at
    # 256 beats and at 4 KB pages
    "G8B8": ({"G": 8, "DATA_W": 64, "WMAX": 320, "WOMAX": 320, "KB": 4, "KMAX": 9}, [
        ("max", 5, 100, 8, (3, 3), (2, 2), _P1, 8, 1),
        ("max", 2, 300, 8, (1, 1), (1, 1), _P0, 3, 2),
        ("dw", 4, 5, 8, (3, 3), (1, 1), _P1, 2, 1),
        ("dw", 5, 7, 16, (3, 3), (1, 1), _P1, 3, 1, (1, 1)),   # blocks of whole beats, a beat of gap
    ]),
    # three taps a cycle (one 3-wide window row): four banks for two pixels a beat
    "G8T3": ({"G": 8, "DATA_W": 128, "WMAX": 16, "WOMAX": 16, "KB": 8, "KMAX": 9, "TAPS": 3}, [
        ("dw", 7, 7, 8, (3, 3), (1, 1), _P1, 6, 1),         # depthwise 3x3 s1 pad 1
        ("dw", 8, 9, 16, (3, 3), (2, 2), _P1, 10, 2),       # depthwise 3x3 s2 pad 1, slow memory
        ("max", 9, 9, 12, (3, 3), (2, 2), _P1, 5, 1),       # maxpool 3x3 s2 pad 1, two blocks
        ("avg", 5, 5, 16, (5, 5), (1, 1), _P0, 4, 1),       # global average pool: groups of 3 and 2
        ("avg", 6, 7, 8, (2, 2), (2, 2), _P0, 3, 1),        # a window row narrower than TAPS
        ("dw", 8, 9, 16, (3, 3), (2, 2), _P1, 10, 1, (1, 1)),
        ("avg", 5, 5, 16, (5, 5), (1, 1), _P0, 4, 1, (1, 0)),
    ]),
    # two taps a cycle on 3x3 windows (a partial last group a row), one pixel a beat, two banks
    "G8B8T2": ({"G": 8, "DATA_W": 64, "WMAX": 32, "WOMAX": 32, "KB": 4, "KMAX": 9, "TAPS": 2}, [
        ("dw", 5, 7, 8, (3, 3), (1, 1), _P1, 4, 1),
        ("max", 7, 9, 16, (3, 3), (2, 2), _P1, 3, 2),
    ]),
}


def layers_of(name: str) -> tuple[dict, list[sew.Layer]]:
    """Unit ``name``'s parameters and layers: seeded data, inputs at 0 or 4,032 (maps and
    bursts across 4 KB), weights at 0, 1 or 2 beats, strided maps' blocks a whole number of
    beats and the case's gap apart (also `tests/test_hls_engine_window.py`)."""
    hp, specs = LAYERS[name]
    beat = hp["DATA_W"] // 8
    out = []
    for i, (mode, h, w, c, k, s, p, lat, per, *gaps) in enumerate(specs):
        layer, x = sew.layer_case(mode, h, w, c, k, s, p, seed=100 + i)
        strides: dict = {}
        if gaps:
            (ho, wo), g = layer.out_hw, hp["G"]
            strides = {"in_stride": (-(-h * w * g // beat) + gaps[0][0]) * beat,
                       "out_stride": (-(-ho * wo * g // beat) + gaps[0][1]) * beat}
        out.append(sew.Layer(layer, x, L=lat, P=per, in_base=(i % 2) * (4096 - 64),
                             w_base=(i % 3) * beat, **strides))
    return hp, out


@pytest.mark.sim
@pytest.mark.parametrize("name", list(LAYERS))
def test_engine_window(name: str) -> None:
    pytest.importorskip("cocotb")
    hp, layers = layers_of(name)
    r = sew.run(hp, layers, name)
    assert r.timing is not None, f"no timing recorded: see {r.folder.parent / 'test.log'}"
    assert r.failed == 0, f"{r.failed} of {r.tests} failed: {r.timing}, see {r.folder.parent / 'test.log'}"
    assert r.timing["cycles"] == r.timing["predicted"]


def test_model_is_fast_on_resnet_sized_layers() -> None:
    """The model steps rows, not cycles: ResNet-50's max pool (112 x 112 x 64 to 56 x 56) and a
    MobileNet depthwise layer (112 x 112 x 32) take milliseconds; with rows prefetched their
    cycles stay within 1 % of one tap a cycle (``HO·WO·KH·KW·C/G``) at a latency of 64."""
    import time

    zeros = dict(weights=np.zeros((32, 3, 3), np.int8), bias=np.zeros(32), m=np.zeros(32), s=np.zeros(32))
    for layer in (ew.WindowLayer("max", 112, 112, 64, (3, 3), (2, 2), (1, 1, 1, 1)),
                  ew.WindowLayer("dw", 112, 112, 32, (3, 3), (1, 1), (1, 1, 1, 1), **zeros)):
        desc = ew.descriptor(layer, 8, 16)
        t0 = time.perf_counter()
        c = cycles(desc, 8, 16, 8, 64, 1)
        assert time.perf_counter() - t0 < 0.05
        ho, wo = layer.out_hw
        taps = ho * wo * 9 * desc[ew.WINDOW_FIELDS.index("C")] // 8
        assert taps < c < 1.01 * taps


def test_check_refuses_what_the_unit_cannot_run() -> None:
    layer = ew.WindowLayer("max", 4, 1, 8, (1, 1))
    desc = ew.descriptor(layer, 8, 16)
    with pytest.raises(ValueError, match=r"W=1 in 2\.\.WMAX"):
        ew.check(desc, 8, 16, wmax=16, womax=16, kb=4, kmax=9)
    gap = ew.descriptor(ew.WindowLayer("avg", 7, 7, 8, (7, 7), mult=1, shift=1), 8, 16)
    with pytest.raises(ValueError, match="KH=7 <= KB=4"):
        ew.check(gap, 8, 16, wmax=16, womax=16, kb=4, kmax=9)
    ew.check(gap, 8, 16, wmax=16, womax=16, kb=8, kmax=9)
    assert resources(8, 128, 112, 112, 8, 9).dsp == 33


def test_strides_are_contiguous_or_whole_beats() -> None:
    """A block stride is the block's bytes (the default) or a multiple of the beat at least
    that: the descriptor and `check` refuse others."""
    layer = ew.WindowLayer("max", 5, 5, 16, (3, 3), (2, 2))  # blocks of 200 / 32 bytes at G 8
    desc = ew.descriptor(layer, 8, 16)
    f = dict(zip(ew.WINDOW_FIELDS, desc, strict=True))
    assert (f["IN_STRIDE"], f["OUT_STRIDE"], f["OUT_BASE"]) == (200, 32, 400)
    assert ew.descriptor(layer, 8, 16, in_stride=208, out_stride=48)[-2:] == [208, 48]
    for bad in ({"in_stride": 204}, {"in_stride": 192}, {"out_stride": 16}):
        with pytest.raises(ValueError, match="STRIDE"):
            ew.descriptor(layer, 8, 16, **bad)
    odd = list(desc)
    odd[ew.WINDOW_FIELDS.index("OUT_STRIDE")] = 40
    with pytest.raises(ValueError, match="OUT_STRIDE=40"):
        ew.check(odd, 8, 16, wmax=16, womax=16, kb=4, kmax=9)
