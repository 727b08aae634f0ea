"""Dataflow design or layer engine (`bbgrap_hls.search.arch`, ``plan --arch``): the engine is
planned when asked for, when the dataflow plan does not fit, or when it is faster; its
plan.json reads back as an engine plan; the plan command prints it."""

from __future__ import annotations

import json

import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.cli import main
from bbgrap_hls.errors import InfeasibleError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.plan import Plan, load_plan
from bbgrap_hls.search.arch import engine_ceiling, plan_arch
from tests.families import Net
from tests.models import _rename_output, save

EXAMPLE = "examples/resnet8.onnx"


@pytest.fixture(scope="module")
def graph():
    return canonicalize(load_model(EXAMPLE))


@pytest.fixture(scope="module")
def wide_dense(tmp_path_factory) -> str:
    """A classifier whose 2 M dense weights cannot stay on the small board's chip."""
    b = Net(seed=1)
    x = b.act(b.conv(b.input("x", (1, 8, 8, 8)), 32, 3))
    y = b.gemm(b.flatten(x), 1024)
    return save(_rename_output(b, y, "wide_dense"), tmp_path_factory.mktemp("m") / "wide_dense.onnx")


@pytest.fixture(scope="module")
def small_board(tmp_path_factory) -> str:
    """kv260 with 140 BRAM18 and no URAM."""
    text = open("boards/kv260.yaml").read().replace("bram18: 288", "bram18: 140").replace("uram: 64", "uram: 0")
    p = tmp_path_factory.mktemp("b") / "kv260-small.yaml"
    p.write_text(text.replace("name: kv260", "name: kv260-small"))
    return str(p)


class _Slow:
    """A stand-in dataflow plan of a given speed."""

    def __init__(self, fps: float):
        self.fps, self.architecture = fps, "dataflow"


def _refuse():
    raise InfeasibleError("core 0: BRAM18 short by 1,000")


def test_engine_when_the_dataflow_plan_does_not_fit(graph):
    eng = plan_arch(graph, load_board("kv260"), "auto", _refuse)
    assert eng.architecture == "engine" and "infeasible" in eng.why and eng.fps > 0
    with pytest.raises(InfeasibleError, match="short by"):
        plan_arch(graph, load_board("kv260"), "dataflow", _refuse)


def test_engine_when_faster(graph):
    board = load_board("kv260")
    assert plan_arch(graph, board, "auto", lambda: _Slow(1.0)).architecture == "engine"
    fast = _Slow(10 * engine_ceiling(graph, board))
    assert plan_arch(graph, board, "auto", lambda: fast) is fast  # above the ceiling: no engine planned
    assert plan_arch(graph, board, "dataflow", lambda: _Slow(1.0)).architecture == "dataflow"


def test_ceiling_bounds_the_engine(graph):
    """The ceiling bounds the engine the planner keeps, batched or not: one frame a start under
    the one-frame ceiling, any batch under the ceiling at the largest batch tried."""
    for name in ("kv260", "u250", "pynq-z2"):
        board = load_board(name)
        one = plan_arch(graph, board, "engine", _refuse, max_batch=1)
        assert one.frames == 1 and one.fps <= engine_ceiling(graph, board)
        eng = plan_arch(graph, board, "engine", _refuse)
        assert eng.fps <= engine_ceiling(graph, board, eng.frames) <= engine_ceiling(graph, board, 4)


def test_both_refusals_named(graph, tmp_path):
    board = tmp_path / "tiny.yaml"  # no memory: no engine either
    board.write_text("name: tiny\nsource: t\nclock_mhz: 100\ncores:\n  - {device: x, dsp: 4, bram18: 2, "
                     "uram: 0, lut: 2000}\nhost: {kind: t, bandwidth_gbps: 1, latency_us: 1}\n")
    with pytest.raises(InfeasibleError, match="short by 1,000.*engine does not fit either.*no off-chip memory"):
        plan_arch(graph, load_board(board), "auto", _refuse)


def test_plan_json_round_trip(capsys):
    assert main(["plan", EXAMPLE, "--board", "kv260", "--arch", "engine", "--json"]) == 0
    text = capsys.readouterr().out
    d = json.loads(text)
    assert d["architecture"] == "engine" and d["model"] and d["fps"] > 0
    assert load_plan(text).to_json() == text


def test_dataflow_plan_json_says_so(capsys):
    assert main(["plan", EXAMPLE, "--board", "kv260", "--arch", "dataflow", "--json"]) == 0
    text = capsys.readouterr().out
    assert json.loads(text)["architecture"] == "dataflow"
    assert isinstance(load_plan(text), Plan)


def test_plan_table(capsys):
    assert main(["plan", EXAMPLE, "--board", "kv260", "--arch", "engine"]) == 0
    out = capsys.readouterr().out
    assert "architecture: layer engine" in out and "frames/s" in out and "bound by" in out
    assert "conv_2_node" in out  # the costliest steps


def test_auto_picks_the_engine_where_dataflow_does_not_fit(wide_dense, small_board, capsys):
    assert main(["plan", wide_dense, "--board", small_board, "--arch", "dataflow"]) == 3
    capsys.readouterr()
    assert main(["plan", wide_dense, "--board", small_board, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["architecture"] == "engine" and "infeasible" in d["why"]
