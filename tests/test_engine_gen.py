"""``gen`` and ``csim`` of layer-engine designs (`bbgrap_hls.codegen.engine_gen`; docs/codegen.md,
"Engine designs"): the bundled ResNet-8 on kv260 and u250 with ``--arch engine``, a model whose
dataflow plan does not fit a small board under ``--arch auto``, and the squeeze-excite network
of tests/test_engine_program.py, each generated and C-simulated bit-exact against
`quant.run_int8`. Also: gen is deterministic, a changed weight byte fails csim, the link config
maps every port of every compute unit, the host runs on the XRT stand-in, the API takes the
same path.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.cli import main
from bbgrap_hls.codegen import engine_files, engine_gen
from bbgrap_hls.commands.csim import csim_design

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples given")]

ROOT = Path(__file__).resolve().parents[1]
RESNET8 = str(ROOT / "examples" / "resnet8.onnx")


def _gen(out: Path, model: str, board: str, *extra: str) -> Path:
    assert main(["gen", model, "--board", board, "-o", str(out), "--quiet", *extra]) == 0
    return out


def load_driver(out: Path):
    """The gen folder ``out``'s ``host/driver.py`` as a fresh module (with its ``host_ops``)."""
    sys.path.insert(0, str(out / "host"))
    try:
        import driver
    finally:
        sys.path.remove(str(out / "host"))
        sys.modules.pop("driver", None)
        sys.modules.pop("host_ops", None)
    return driver


@pytest.fixture(scope="module", autouse=True)
def _needs_gxx():
    if shutil.which("g++") is None:
        pytest.skip("g++ not on PATH")


@pytest.fixture(scope="module")
def kv260(tmp_path_factory) -> Path:
    """ResNet-8 on kv260 as a layer engine (one core, PE 16 x SIMD 16, 64-byte beats)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _gen(tmp_path_factory.mktemp("kv260") / "out", RESNET8, "kv260", "--arch", "engine")


@pytest.fixture(scope="module")
def u250(tmp_path_factory) -> Path:
    """ResNet-8 on u250 as a layer engine: four compute units, one an SLR."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _gen(tmp_path_factory.mktemp("u250") / "out", RESNET8, "u250", "--arch", "engine")


def test_folder_and_vectors(kv260):
    plan = json.loads((kv260 / "plan.json").read_text())
    assert plan["architecture"] == "engine"
    meta = json.loads((kv260 / "tb" / "vectors.json").read_text())
    assert meta["architecture"] == "engine" and meta["frames"] == engine_gen.FRAMES
    assert meta["input"] == "x" and meta["output_shape"] == [1, 10]
    for rel in ("engine/program.bin", "engine/weights.bin", "hls/engine.cpp", "hls/engine_config.h",
                "hls/engine_kernel.h", "hls/engine_top.h", "host/host.cpp", "host/driver.py", "vitis/Makefile",
                "vitis/engine.cfg", "vitis/link.cfg", "tb/engine_tb.cpp", "report.md"):
        assert (kv260 / rel).is_file(), rel
    assert any((kv260 / "rtl").iterdir())
    manifest = json.loads((kv260 / "manifest.json").read_text())
    assert manifest["options"]["arch"] == "engine"
    assert set(manifest["files"]) == {str(p.relative_to(kv260)) for p in kv260.rglob("*")
                                      if p.is_file() and p.name != "manifest.json" and ".csim" not in p.parts}
    ys = np.load(kv260 / "tb" / "engine_expected.npy")
    assert ys.dtype == np.int8 and ys.shape == (engine_gen.FRAMES, 1, 10)
    program = engine_files.load_program(kv260)
    regions, want = engine_gen.vectors(kv260, None)
    assert len(regions) == engine_gen.FRAMES and np.array_equal(want, ys)
    assert all(len(r) == program.regions[program.input].span(program.pe) for r in regions)


def test_csim_is_bit_exact(kv260, capsys):
    assert main(["csim", str(kv260)]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and f"{engine_gen.FRAMES} frame(s), 20 int8 values bit-exact" in out
    res = csim_design(kv260, threads=True)
    assert res.match and "--threads ignored" in res.message
    assert res.outputs["gemm_78"].shape == (engine_gen.FRAMES, 10)


def test_csim_input_recomputes_the_reference(kv260, tmp_path):
    """``csim --input``: the expected outputs recomputed through the model the manifest names
    (requantised), equal to gen's for gen's own frames; ``-o`` writes (frames, elements)."""
    seed = np.load(kv260 / "tb" / "seed_input.npy")
    x = np.concatenate([seed, -seed])
    regions, want = engine_gen.vectors(kv260, x)
    assert b"".join(regions) == (kv260 / "tb" / "engine_inputs.bin").read_bytes()
    assert np.array_equal(want, np.load(kv260 / "tb" / "engine_expected.npy"))
    np.save(tmp_path / "x.npy", seed)
    assert main(["csim", str(kv260), "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "y.npy"), want[:1].reshape(1, -1))


def test_gen_twice_gives_identical_files(kv260, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = _gen(tmp_path / "again", RESNET8, "kv260", "--arch", "engine")
    files = sorted(str(p.relative_to(kv260)) for p in kv260.rglob("*") if p.is_file() and ".csim" not in p.parts)
    assert files == sorted(str(p.relative_to(again)) for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (kv260 / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_a_changed_weight_byte_fails(kv260, tmp_path, capsys):
    """The dense layer's first tile (its records and weights) changed in engine/weights.bin:
    csim fails and names the first element that differs."""
    bad = tmp_path / "bad"
    shutil.copytree(kv260, bad)
    doc = engine_files.load_doc(bad)
    last = dict([s for s in doc["steps"] if s["unit"] == "conv"][-1]["desc"])
    w = bytearray((bad / "engine" / "weights.bin").read_bytes())
    beat = doc["beat"]
    for i in range(last["W_BASE"], last["W_BASE"] + last["TILE_BEATS"] * beat):
        w[i] ^= 0x40
    (bad / "engine" / "weights.bin").write_bytes(bytes(w))
    res = csim_design(bad)
    assert not res.match and res.message.startswith("FAIL: output 'gemm_78' frame 0")
    assert main(["csim", str(bad)]) == 1


def test_link_config_maps_every_port(u250):
    """u250: nk=engine:4, one CU an SLR, every m_axi port of the kernel (read from its pragmas)
    of every CU on its SLR's DDR bank."""
    ports = re.findall(r"INTERFACE m_axi port = (\w+)", (u250 / "hls" / "engine.cpp").read_text())
    assert ports == ["prog", "fmem", "wmem"]
    bundles = re.findall(r"INTERFACE m_axi port = \w+ offset = slave bundle = (\w+)",
                         (u250 / "hls" / "engine.cpp").read_text())
    assert len(set(bundles)) == 3
    lines = [ln for ln in (u250 / "vitis" / "link.cfg").read_text().splitlines() if ln and not ln.startswith("#")]
    assert "nk=engine:4:engine_1.engine_2.engine_3.engine_4" in lines
    assert [ln for ln in lines if ln.startswith("slr=")] == [f"slr=engine_{k + 1}:SLR{k}" for k in range(4)]
    sp = [ln for ln in lines if ln.startswith("sp=")]
    assert sp == [f"sp=engine_{k + 1}.{p}:DDR[{k}]" for k in range(4) for p in ports]


def test_u250_csim_at_the_plans_beat(u250):
    """The plan times 32-byte beats: the program, the HLS kernel's ports and the RTL twin use them."""
    assert json.loads((u250 / "plan.json").read_text())["beat"] == 32
    assert engine_files.load_doc(u250)["beat"] == 32
    cfg = (u250 / "hls" / "engine_config.h").read_text()
    assert "constexpr int BEAT = 32;" in cfg
    # the input buffer's binding as the plan counted it (bb::EngineIbufUram)
    uram = int(json.loads((u250 / "plan.json").read_text())["ibuf_uram"])
    assert f"static constexpr int IBUF_URAM = {uram};" in cfg
    res = csim_design(u250)
    assert res.match, res.message


def run_host(out: Path, tmp_path: Path, frames: int) -> bytes:
    """host/host.cpp of gen folder ``out`` with host/sim_kernels.cpp and the kernel against
    host/xrt_sim, on ``frames`` frames cycling through gen's vectors: its output file."""
    exe = tmp_path / "host"
    r = subprocess.run(["g++", "-std=c++17", "-pedantic-errors", "-Wall", "-Wextra", "-O1", "-I",
                        str(out / "host" / "xrt_sim"), "-I", str(out / "hls"), str(out / "host" / "host.cpp"),
                        str(out / "host" / "sim_kernels.cpp"), str(out / "hls" / "engine.cpp"), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr[-3000:]
    inputs = (out / "tb" / "engine_inputs.bin").read_bytes()
    n = len(inputs) // engine_gen.FRAMES
    (tmp_path / "in.bin").write_bytes((inputs * frames)[:frames * n])
    r = subprocess.run([str(exe), "design.xclbin", str(tmp_path / "in.bin"), str(frames), str(tmp_path / "out.bin"),
                        str(out / "engine")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return (tmp_path / "out.bin").read_bytes()


def test_host_runs_on_the_xrt_stand_in(u250, tmp_path):
    """host/host.cpp with host/sim_kernels.cpp and the kernel against host/xrt_sim: four CUs,
    frames round-robin; the outputs read by host/driver.py's layout functions equal gen's."""
    frames = 5  # more frames than CUs: the second round reuses engine_1 and engine_2
    raw = run_host(u250, tmp_path, frames)
    inputs = (u250 / "tb" / "engine_inputs.bin").read_bytes()
    driver = load_driver(u250)
    doc = engine_files.load_doc(u250)
    rout = doc["regions"][doc["output"]]
    m = len(raw) // frames
    want = np.load(u250 / "tb" / "engine_expected.npy")
    for f in range(frames):
        assert np.array_equal(driver.from_region(raw[f * m:(f + 1) * m], rout, doc["pe"]), want[f % 2])
    seed = np.load(u250 / "tb" / "seed_input.npy")
    q = driver.quantize(driver.held(np.concatenate([seed, -seed])))  # the stem's window unfolded
    rin = doc["regions"][doc["input"]]
    assert b"".join(driver.to_region(q[f], rin, doc["pe"]) for f in range(2)) == inputs


@pytest.fixture(scope="module")
def batched(tmp_path_factory) -> Path:
    """ResNet-8 on kv260 as a layer engine of two frames a kernel call (docs/engine.md, "Batched
    frames"; the planner's 5 % rule relaxed so that it keeps the batched plan, 1 % faster)."""
    from bbgrap_hls.search import arch

    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setattr(arch, "BATCH_GAIN", 1.0)
        return _gen(tmp_path_factory.mktemp("batched") / "out", RESNET8, "kv260", "--arch", "engine",
                    "--max-batch", "2")


def test_batched_design_csim_and_host(batched, tmp_path):
    """The batched design end to end in C: its plan and program say two frames a call (each
    conv step once for both, its tile used for both), csim bit-exact on gen's two frames and
    on three (the second call short of a frame), and host/host.cpp on the XRT stand-in over
    five frames (three calls) gives gen's outputs frame by frame."""
    plan = json.loads((batched / "plan.json").read_text())
    program = engine_files.load_program(batched)
    assert plan["frames"] == program.frames == 2 and program.frame_stride % 4096 == 0
    assert all(st.desc["FRAMES"] == 2 for st in program.steps if st.unit == "conv")
    assert "2 frames a start" in (batched / "report.md").read_text()
    res = csim_design(batched)
    assert res.match and res.outputs["gemm_78"].shape == (2, 10), res.message
    seed = np.load(batched / "tb" / "seed_input.npy")
    res3 = csim_design(batched, x=np.concatenate([seed, -seed, seed]))
    assert res3.match and res3.outputs["gemm_78"].shape == (3, 10), res3.message
    frames = 5  # three calls, the last short of a frame
    raw = run_host(batched, tmp_path, frames)
    driver = load_driver(batched)
    doc = engine_files.load_doc(batched)
    assert (driver.FRAMES, driver.FRAME_STRIDE) == (2, program.frame_stride)
    m = len(raw) // frames
    want = np.load(batched / "tb" / "engine_expected.npy")
    for f in range(frames):
        got = driver.from_region(raw[f * m:(f + 1) * m], doc["regions"][doc["output"]], doc["pe"])
        assert np.array_equal(got, want[f % 2]), f


def test_kernels_rtl_is_refused(tmp_path, capsys):
    assert main(["gen", RESNET8, "--board", "kv260", "--arch", "engine", "--kernels", "rtl", "-o",
                 str(tmp_path / "o"), "--quiet"]) == 2
    assert "--kernels rtl" in capsys.readouterr().err


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> tuple[Path, Path]:
    """A model with two 256-channel 3 x 3 convs (590 K weights) and a kv260 with 100 BRAM18 and
    no URAM: its dataflow plan cannot hold the weights."""
    from tests.families import Net
    from tests.models import _rename_output, save

    d = tmp_path_factory.mktemp("wide")
    b = Net(seed=3)
    x = b.cba(b.cba(b.input("x", (1, 16, 8, 8)), 256, 3), 256, 3)
    model = save(_rename_output(b, b.gemm(b.flatten(b.gap(x)), 10), "wide"), d / "wide.onnx")
    text = (ROOT / "boards" / "kv260.yaml").read_text()
    board = d / "small.yaml"
    board.write_text(text.replace("name: kv260", "name: kv260-small").replace("bram18: 288", "bram18: 100")
                     .replace("uram: 64", "uram: 0"))
    return Path(model), board


def test_auto_picks_the_engine_when_dataflow_does_not_fit(wide, tmp_path, capsys):
    model, board = wide
    assert main(["plan", str(model), "--board", str(board), "--arch", "dataflow"]) == 3
    capsys.readouterr()
    assert main(["plan", str(model), "--board", str(board), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["architecture"] == "engine" and "dataflow plan is infeasible" in plan["why"]
    out = _gen(tmp_path / "out", str(model), str(board))
    assert json.loads((out / "plan.json").read_text())["architecture"] == "engine"
    res = csim_design(out)
    assert res.match, res.message


def test_squeeze_excite_network(tmp_path):
    """tests/test_engine_program.py's se_like (tables, MULV, MUL of two maps, a fused add table)."""
    from tests.families import Net
    from tests.models import _rename_output, save
    from tests.test_engine_program import se_like

    b = Net(seed=3)
    model = save(_rename_output(b, se_like(b), "se_like"), tmp_path / "se_like.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _gen(tmp_path / "out", str(model), "kv260", "--arch", "engine")
    units = {s["unit"] for s in engine_files.load_doc(out)["steps"]}
    assert units == {"conv", "window", "eltwise"}
    res = csim_design(out)
    assert res.match, res.message


def test_api_takes_the_same_path(kv260, tmp_path):
    import bbgrap_hls

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = bbgrap_hls.compile(RESNET8, board="kv260", arch="engine")
        assert design.plan.architecture == "engine"
        out = design.write(tmp_path / "api")
    assert (out / "engine" / "program.bin").read_bytes() == (kv260 / "engine" / "program.bin").read_bytes()
    assert (out / "plan.json").read_bytes() == (kv260 / "plan.json").read_bytes()
    res = design.csim()
    assert res.match, res.message


def test_row_banded_plan(tmp_path):
    """Two 32-channel convs on a 64 x 64 map, a kv260 with 70 BRAM18 and no URAM: the plan runs
    both convs in row bands (``build(in_buffer=)``), the kernel's input buffer sized for a band."""
    from tests.families import Net
    from tests.models import _rename_output, save

    b = Net(seed=3)
    x = b.cba(b.cba(b.input("x", (1, 16, 64, 64)), 32, 3), 32, 3)
    model = save(_rename_output(b, b.gemm(b.flatten(b.gap(x)), 10), "banded"), tmp_path / "banded.onnx")
    board = tmp_path / "b70.yaml"
    board.write_text((ROOT / "boards" / "kv260.yaml").read_text().replace("bram18: 288", "bram18: 70")
                     .replace("uram: 64", "uram: 0"))
    out = _gen(tmp_path / "out", str(model), str(board), "--arch", "engine")
    plan = json.loads((out / "plan.json").read_text())
    assert [s["bands"] > 1 for s in plan["steps"]][:2] == [True, True]
    doc = engine_files.load_doc(out)
    assert len(doc["steps"]) == sum(s["bands"] for s in plan["steps"])
    assert doc["sizes"]["IBUF_WORDS"] * plan["simd"] <= plan["in_buffer"]
    res = csim_design(out)
    assert res.match, res.message


def test_stem_over_pixel_blocks(tmp_path):
    """A 3-channel 2 x 2 stride-2 stem: the engine plan takes the input as 2 x 2 pixel blocks (12
    channels fill the conv unit's blocks better than 3; the stem's unfolded window, the same
    12 channels, ties and the blocks come first: tests/test_stem_patches.py has the stems
    where unfolding wins), gen rewrites the stem as planned, csim is bit-exact on model-shaped
    seed frames, and the driver blocks frames as the graph does."""
    from bbgrap_hls.ir.graph import space_to_depth
    from tests.families import Net
    from tests.models import _rename_output, save

    b = Net(seed=5)
    x = b.cba_rect(b.input("x", (1, 3, 32, 32)), 16, (2, 2), 2)
    x = b.cba(b.cba(x, 16, 3), 32, 3, 2)
    model = save(_rename_output(b, b.gemm(b.flatten(b.gap(x)), 10), "stem"), tmp_path / "stem.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _gen(tmp_path / "out", model, "kv260", "--arch", "engine")
    plan = json.loads((out / "plan.json").read_text())
    assert plan["input_blocks"] == {"x": 2}
    assert engine_files.load_doc(out)["regions"]["x"]["shape"] == [1, 12, 16, 16]
    res = csim_design(out)
    assert res.match, res.message
    driver = load_driver(out)
    frames = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    assert driver.BLOCKS == 2 and driver.PATCHES is None
    assert np.array_equal(driver.held(frames), space_to_depth(frames, 2))


def test_driver_applies_the_host_softmax(kv260):
    """The bundled ResNet-8 ends in a Softmax, a host op: host/driver.py applies it to the
    dequantised fabric output (host/host_ops.py, shared with dataflow drivers), so its result
    is the graph's output as the integer reference computes it (run_int8: host ops in float)."""
    from bbgrap_hls.commands.csim import int8_graph_of
    from bbgrap_hls.quant.execute import run_int8

    driver = load_driver(kv260)
    assert [op["op"] for op in driver.HOST_OPS] == ["Softmax"]
    gq = int8_graph_of(kv260)
    seed = np.load(kv260 / "tb" / "seed_input.npy")
    frames = np.concatenate([seed, -seed])
    codes = np.load(kv260 / "tb" / "engine_expected.npy")  # the fabric output of both frames
    got = driver.outputs(driver.dequantize(codes))
    (name,) = gq.outputs
    want = np.concatenate([run_int8(gq, {next(iter(gq.inputs)): f[None]})[name] for f in frames])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    assert np.allclose(got.sum(axis=-1), 1.0)
