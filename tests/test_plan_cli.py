"""``bbgrap-hls plan``: tables, JSON, exit codes; the report writer."""

from __future__ import annotations

import json

import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.plan import Plan
from tests import models


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return models.save(models.mlp_autoencoder(), tmp_path_factory.mktemp("m") / "ae.onnx")


def test_plan_prints_a_table_per_core_and_speedups(model_path, capsys):
    assert main(["plan", str(model_path), "--board", "u250"]) == 0
    out = capsys.readouterr()
    assert "core 0" in out.out and "core 1" in out.out and "vs even" in out.out
    # stderr is not a terminal: no bar (no cursor control); a plan that takes more than
    # progress.PLAIN_DELAY seconds (a loaded machine) may print plain progress lines only
    assert "\x1b" not in out.err and "\r" not in out.err
    assert all(line.startswith("bbgrap-hls") for line in out.err.splitlines()), out.err


def test_plan_json_round_trips(model_path, capsys):
    assert main(["plan", str(model_path), "--board", "u280", "--strategy", "exact", "--json"]) == 0
    text = capsys.readouterr().out
    d = json.loads(text)
    for key in ("strategy", "objective", "ii_cycles", "fps", "latency_cycles", "optimal", "search_seconds",
                "cores", "nodes", "channels", "baselines", "optimizer"):
        assert key in d
    assert d["optimal"] is True and d["strategy"] == "exact"
    assert Plan.from_json(text).to_json() == text


def test_infeasible_exits_3(model_path, tmp_path, capsys):
    board = tmp_path / "tiny.yaml"
    board.write_text("name: tiny\nsource: t\nclock_mhz: 100\ncores:\n  - {device: x, dsp: 4, bram18: 2, "
                     "uram: 0, lut: 2000}\nhost: {kind: t, bandwidth_gbps: 1, latency_us: 1}\n")
    assert main(["plan", str(model_path), "--board", str(board)]) == 3
    assert "short by" in capsys.readouterr().err


def test_bad_strategy_exits_2(model_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["plan", str(model_path), "--board", "u250", "--strategy", "magic"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_latency_objective(model_path, capsys):
    assert main(["plan", str(model_path), "--board", "u250", "--objective", "latency", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["objective"] == "latency"


def test_write_report(model_path, tmp_path):
    from bbgrap_hls.board import load_board
    from bbgrap_hls.report import write_report
    from bbgrap_hls.search import make_plan

    g = canonicalize(load_model(model_path))
    plan = make_plan(g, load_board("u250"), baselines=False)
    md = write_report(plan, g, tmp_path / "out")
    files = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"report.md", "partition.dot", "utilisation.png", "layer_ii.png", "timeline.png"} <= files
    assert "digraph partition" in (tmp_path / "out" / "partition.dot").read_text()
    assert "frames/s" in md.read_text()
    first = (tmp_path / "out" / "utilisation.png").read_bytes()
    write_report(plan, g, tmp_path / "out")
    assert (tmp_path / "out" / "utilisation.png").read_bytes() == first


@pytest.mark.parametrize("flag", [[], ["--no-narrow"]])
def test_narrowing_is_reported_and_can_be_turned_off(model_path, capsys, flag):
    """``even`` on u250 folds the autoencoder wider than its ii needs; the pass narrows it."""
    assert main(["plan", str(model_path), "--board", "u250", "--strategy", "even", "--json", *flag]) == 0
    d = json.loads(capsys.readouterr().out)
    lanes = sum(n["pe"] * n["simd"] for n in d["nodes"] if n["block"] in ("conv", "dense"))
    if flag:
        assert "narrowed_blocks" not in d["optimizer"]
    else:
        assert d["optimizer"]["narrowed_blocks"] > 0
        assert d["optimizer"]["lanes_after"] < d["optimizer"]["lanes_before"]
        assert d["optimizer"]["lanes_after"] == lanes
    assert main(["plan", str(model_path), "--board", "u250", "--strategy", "even", *flag]) == 0
    assert ("narrowing:" in capsys.readouterr().out) != bool(flag)
