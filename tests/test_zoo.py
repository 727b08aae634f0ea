"""bench/zoo.py: two cheap members load like `bbgrap-hls inspect` and match torchvision's MACs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_ZOO = Path(__file__).resolve().parent.parent / "bench" / "zoo.py"


def _zoo():
    spec = importlib.util.spec_from_file_location("bench_zoo", _ZOO)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["squeezenet1_1", "mobilenet_v2"])
def test_macs_match_published(name):
    zoo = _zoo()
    _, info = zoo.measure(zoo.ZOO[name]())
    assert info["outputs"][0]["shape"] == [1, 1000]
    assert not info["unsupported"]
    assert info["macs"] / 1e9 == pytest.approx(zoo.published_macs(name), rel=0.02)


def test_every_member_has_a_published_figure():
    zoo = _zoo()
    assert set(zoo.ZOO) == set(zoo._PUBLISHED)
    with pytest.raises(KeyError):
        zoo.published_macs("alexnet")
