"""``bbgrap-hls sim`` on an engine design (`bbgrap_hls.rtlsim.engine_sim`): the gen folder's
``rtl/engine_design.sv`` (`bbgrap_hls.codegen.engine_rtl`) in Verilator under cocotb, its
outputs bit-exact against the int8 reference and every frame's cycles equal to the plan's.

The folders are written here from the gen-folder contract (``plan.json`` of `plan_engine`,
``engine/`` of `engine_files.program_files`, ``rtl/`` of `engine_rtl.rtl_files`, ``tb/``
vectors of two seeded frames), on tests/test_engine_program.py's small networks with the
engine `plan_engine` sizes for a PYNQ-Z2 (PE 8, SIMD 8, 16-byte beats, 8 element-wise lanes,
a beat every 3 cycles) or a fixed small one on a ZCU102 (PE 4, SIMD 2, 8-byte beats). When
`bbgrap_hls.codegen.engine_gen` exists, ``bbgrap-hls gen --arch engine`` + ``sim`` run too.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.codegen import engine_files as ef
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_rtl as er
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model.engine_plan import plan_engine
from bbgrap_hls.model.engine_top import frame_cycles
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import quantize, run_int8
from tests.families import Net
from tests.models import _rename_output, save
from tests.test_engine_program import NETS

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "sim"
"""Verilator's runtime objects, shared with the module tests; the builds in ``engine/`` under
it (``engine-<hash>``), where ``sim`` puts them with ``BBGRAP_HLS_CACHE`` set to it."""
ENGINES = {"pynq": ("pynq-z2", {}), "small": ("zcu102", {"pe": 4, "simd": 2, "beat": 8})}
"""name: (board, `plan_engine` sizes)."""
FRAMES = 2


def _net(name: str, folder: Path):
    """(canonical graph, int8 graph, ONNX path) of a tests/test_engine_program.py network."""
    b = Net(seed=3)
    path = save(_rename_output(b, NETS[name](b), name), folder / f"{name}.onnx")
    g = canonicalize(load_model(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no calibration samples given
        return g, quantize(g, seed=0), path


def write_design(out: Path, g, gq, board: str, sizes: dict, seed: int = 7):
    """An engine gen folder by the contract (see the module's text); returns (plan, program)."""
    plan = plan_engine(g, load_board(board), **sizes)
    program = ep.build(gq, plan.pe, plan.simd, plan.beat)
    files = ef.program_files(program, {k: getattr(plan, k) for k in ef.PARAMS}) | er.rtl_files(program, plan)
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-128, 128, gq.shape(gq.inputs[0]), dtype=np.int8) for _ in range(FRAMES)]
    want = np.stack([run_int8(gq, {gq.inputs[0]: x}, keep=True)[program.output] for x in xs]).astype(np.int8)
    files["plan.json"] = plan.to_json(stable=True).encode()
    files["tb/vectors.json"] = json.dumps({"architecture": "engine", "frames": FRAMES, "input": program.input,
                                           "output": program.output, "output_shape": list(want.shape[1:])}).encode()
    files["tb/engine_inputs.bin"] = b"".join(ef.input_bytes(program, x) for x in xs)
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    np.save(out / "tb" / "engine_expected.npy", want)
    return plan, program


@pytest.fixture(scope="module")
def nets(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("nets")
    return {name: _net(name, d) for name in ("resnet_like", "se_like", "inception_like")}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_rtl_files_follow_the_plan(nets, tmp_path, engine):
    """``rtl/``: the top's parameters are the plan's (``TAPS``, ``PACK``, ``ELANES``, the
    element-wise burst and chunks its model assumes), the cycle model on them gives the plan's
    frame, the ROM is the program's and the wrapper sets every parameter."""
    board, sizes = ENGINES[engine]
    for name, (g, gq, _) in nets.items():
        out = tmp_path / name
        plan, program = write_design(out, g, gq, board, sizes)
        doc = er.load_params(out)
        hp = doc["parameters"]
        assert (hp["TAPS"], hp["PACK"], hp["ELANES"]) == (plan.taps, int(plan.pack), plan.lanes)
        assert (hp["EBURST"], hp["CHUNKS"], hp["PE"], hp["SIMD"], hp["DATA_W"]) == \
            (64, 4, plan.pe, plan.simd, 8 * plan.beat)
        assert hp["IBUF_WORDS"] * plan.simd == plan.in_buffer and len(doc["notes"]) == (not doc["exact"])
        assert doc["memory"] == {"latency": plan.latency, "period": plan.period, "beat": plan.beat}
        tp = er.top_params(hp, plan.latency, plan.period)
        if doc["exact"]:
            cyc = frame_cycles(ef.load_program(out), tp).cycles
            assert cyc == doc["model_cycles"] == doc["plan_cycles"] == plan.cycles, f"{name} on {engine}"
        else:  # a write-bound conv step: the plan charges a bound, the model refuses to time it
            assert doc["model_cycles"] is None and "no exact cycle model" in doc["notes"][-1]
            with pytest.raises(ValueError, match="would stall"):
                frame_cycles(ef.load_program(out), tp)
        rom = (out / "rtl" / "prog.mem").read_text().split()
        assert [int(w, 16) for w in rom] == er.rom_words(program) and len(rom) == hp["ROM_WORDS"]
        sv = (out / "rtl" / "engine_design.sv").read_text()
        assert "engine_top #(" in sv and all(f".{k}(" in sv for k in er.HDL_KEYS)


def _sim(out: Path, frames: int = FRAMES, **kw):
    from bbgrap_hls.commands.sim import sim_design

    return sim_design(out, frames=frames, cache=CACHE / "engine", runtime=CACHE, **kw)


@pytest.fixture(scope="module")
def designs(nets, tmp_path_factory) -> dict:
    """Engine gen folders: ``{(net, engine): (folder, plan)}``."""
    d = tmp_path_factory.mktemp("designs")
    out = {}
    for key in (("resnet_like", "pynq"), ("se_like", "small")):
        g, gq, _ = nets[key[0]]
        folder = d / "-".join(key)
        out[key] = (folder, write_design(folder, g, gq, *ENGINES[key[1]])[0])
    return out


@pytest.mark.sim
@pytest.mark.parametrize("key", [("resnet_like", "pynq"), ("se_like", "small")])
def test_sim_engine_design(designs, key):
    """Bit-exact, every frame's cycles equal to the plan's (3 frames: the vectors' 2 cycled)."""
    pytest.importorskip("cocotb")
    out, plan = designs[key]
    r = _sim(out, frames=3)
    assert r.match, r.message
    assert r.frame_intervals == [plan.cycles] * 3, r.message
    assert r.measured_ii_cycles == r.measured_latency_cycles == r.predicted_ii_cycles == plan.cycles
    assert "bit-exact" in r.message and ": equal" in r.message
    assert r.to_dict()["ii_error"] == 0.0
    print(f"{key}: {r.message}; build {r.build_seconds} s, run {r.run_seconds} s")


@pytest.mark.sim
def test_corrupted_weight_fails(designs, tmp_path, monkeypatch):
    """One weight byte changed: the outputs differ, ``sim`` says where and exits 1."""
    pytest.importorskip("cocotb")
    from bbgrap_hls import cli

    out = tmp_path / "bad"
    shutil.copytree(designs[("resnet_like", "pynq")][0], out)
    w = bytearray((out / "engine" / "weights.bin").read_bytes())
    w[100] ^= 0x5A  # in the first conv's tile
    (out / "engine" / "weights.bin").write_bytes(w)
    r = _sim(out)
    assert not r.match and "differ" in r.message and "frame 0" in r.message, r.message
    print(r.message)
    # the command: exit code 1 (its build in the default cache, here the module tests')
    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(CACHE))
    assert cli.main(["sim", str(out)]) == 1


def tiny_cnn(b: Net) -> str:
    """Every window step on a map at least 8 wide: the RTL window unit at gen's 64-byte beat
    and ``PE`` 8 needs a beat's 8 pixels a row (tests/test_engine_program.py's networks pool
    5-wide maps)."""
    x = b.cba(b.input("x", (1, 3, 16, 16)), 8, 3)
    x = b.node("MaxPool", [x], (1, 8, 8, 8), kernel_shape=[2, 2], strides=[2, 2])
    x = b.cba(x, 16, 3)
    return b.gemm(b.flatten(b.gap(x)), 5)


@pytest.mark.sim
@pytest.mark.slow
def test_gen_then_sim(tmp_path, capsys, monkeypatch):
    """``bbgrap-hls gen --arch engine`` then ``sim``, what a user runs: gen builds the program
    at the plan's beat (16 bytes on the PYNQ-Z2), so the RTL's frames take the plan's cycles
    exactly (every step of this plan timed by the exact model). One frame a call (``--max-batch
    1``: the planner would batch this memory-bound engine; `test_gen_then_sim_batched`)."""
    pytest.importorskip("cocotb")
    pytest.importorskip("bbgrap_hls.codegen.engine_gen")
    from bbgrap_hls import cli

    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(CACHE))  # builds beside the module tests', not in ~/.cache
    b = Net(seed=3)
    model = save(_rename_output(b, tiny_cnn(b), "tiny"), tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    assert cli.main(["gen", str(model), "--board", "pynq-z2", "--arch", "engine", "--max-batch", "1", "-o",
                     str(out)]) == 0
    assert (out / "rtl" / "engine_design.sv").is_file(), (out / "rtl" / "UNSUPPORTED.txt").read_text()
    doc = er.load_params(out)
    capsys.readouterr()
    assert cli.main(["sim", str(out), "--json", "--frames", "3"]) == 0
    res = json.loads(capsys.readouterr().out)
    plan = json.loads((out / "plan.json").read_text())
    assert res["match"] and res["predicted_ii_cycles"] == plan["cycles"], res["message"]
    assert plan["beat"] == doc["memory"]["beat"] and all(st["exact"] for st in plan["steps"])
    assert res["frame_intervals"] == [plan["cycles"]] * 3, res["message"]
    print(res["message"])


def test_gen_then_sim_batched(tmp_path, capsys, monkeypatch):
    """The same with two frames a kernel call (docs/engine.md, "Batched frames"; the planner's
    5 % rule relaxed so that it keeps the batched plan): ``sim --frames 3`` runs two starts of
    two frames, every frame bit-exact, each start's cycles the plan's exactly."""
    pytest.importorskip("cocotb")
    from bbgrap_hls import cli
    from bbgrap_hls.search import arch

    monkeypatch.setenv("BBGRAP_HLS_CACHE", str(CACHE))
    monkeypatch.setattr(arch, "BATCH_GAIN", 0.0)
    b = Net(seed=3)
    model = save(_rename_output(b, tiny_cnn(b), "tiny"), tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    assert cli.main(["gen", str(model), "--board", "pynq-z2", "--arch", "engine", "--max-batch", "2", "-o",
                     str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert plan["frames"] == 2 and all(st["exact"] for st in plan["steps"])
    capsys.readouterr()
    assert cli.main(["sim", str(out), "--json", "--frames", "3"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["match"] and res["frames"] == 4, res["message"]
    assert res["frame_intervals"] == [plan["cycles"]] * 2, res["message"]
    assert "a start of 2 frames" in res["message"]
