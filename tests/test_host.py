"""Host drivers end to end against the C-simulated cores.

``host/host.cpp`` is compiled against the project's XRT stand-in (``host/xrt_sim``), whose
runs dispatch to the C-simulated cores and whose buffers only see a kernel's writes after
``run.wait()``; ``host/driver.py`` runs with its C-simulation backend. Both must give the
integer reference's int8 outputs bit for bit and its float outputs (host Softmax on the
dequantised logits) within 1e-6. One design (ResNet-8 on u250, an off-chip buffer between
two cores, the first and last weighted nodes forced into URAM so that their cores load
weight images at run time): the cores are compiled once (about 15 s), each host variant
links in 2 s; driver.py builds its shared library once (about 15 s).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.codegen.project import generate
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import run_int8
from bbgrap_hls.quant.quantizer import quantize
from bbgrap_hls.search import make_plan
from tests import models

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]
FLAGS = ["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """(folder, int8 graph, design, float input) of ResNet-8 on u250 with a buffer and URAM weights."""
    out = tmp_path_factory.mktemp("host")
    g = canonicalize(load_model(models.save(models.resnet8(seed=0), out / "m.onnx")))
    gq = quantize(g)
    board = load_board("u250")
    plan = make_plan(g, board, strategy="even")
    plan.transfers[0].kind = "buffer"  # at least one barrier between cores
    weighted = [n for n in plan.nodes if n.weights is not None]
    for n in (weighted[0], weighted[-1]):  # weights loaded through the cores' wts ports
        n.weights = "uram"
    x = np.random.default_rng(5).standard_normal(g.shape(g.inputs[0])).astype(np.float32)
    design, objs = _write_and_compile(out, gq, plan, board, {g.inputs[0]: x})
    return out, gq, design, x, objs


def _write_and_compile(out, gq, plan, board, feeds):
    """Generate the design into ``out`` and compile its cores and the XRT stand-in kernels."""
    files, design = generate(gq, plan, board, feeds)
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    objs = []
    for src in sorted((out / "hls").glob("core*.cpp")) + [out / "host" / "sim_kernels.cpp"]:
        obj = out / (src.stem + ".o")
        subprocess.run([*FLAGS, "-I", str(out / "hls"), "-c", str(src), "-o", str(obj)], check=True)
        objs.append(str(obj))
    return design, objs


def _host(out, objs, source, exe):
    r = subprocess.run([*FLAGS, "-I", str(out / "host" / "xrt_sim"), str(source), *objs, "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr[-2000:]


def _run(project, exe, tag):
    out, gq, design, x, _ = project
    d = out / f"run_{tag}"
    d.mkdir()
    ident = design.inputs[0][1]
    x.tofile(d / f"x_{ident}.f32")
    r = subprocess.run([str(exe), str(d), "design.xclbin", str(out / "hls")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d


def test_host_cpp_matches_reference(project):
    out, gq, design, x, objs = project
    assert design.buffers, "the design should have an off-chip buffer"
    _host(out, objs, out / "host" / "host.cpp", out / "host.exe")
    d = _run(project, out / "host.exe", "ok")
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    for t, ident, _ in design.outputs:
        got = np.fromfile(d / f"out_{ident}.bin", np.int8)
        np.testing.assert_array_equal(got, env[t].reshape(-1))  # (N, C) logits: NHWC == NCHW
    y = np.fromfile(d / "y0.f32", np.float32).reshape(gq.shape(gq.outputs[0]))
    np.testing.assert_allclose(y, env[gq.outputs[0]], rtol=0, atol=1e-6)
    assert gq.nodes[-1].host and gq.nodes[-1].op == "Softmax"


def test_host_cpp_needs_its_barriers(project):
    """Without the waits before a buffer's consumer, the stand-in gives stale memory."""
    out, gq, design, x, objs = project
    text = (out / "host" / "host.cpp").read_text()
    spec = json.loads((out / "host" / "design.json").read_text())
    first_start = [i for i, (v, _) in enumerate(spec["schedule"]) if v == "start"]
    barrier_before_start = any(spec["schedule"][i][0] == "wait" for i in range(first_start[-1]))
    assert barrier_before_start, "schedule should wait on a producer before starting a consumer"
    lines = text.splitlines(keepends=True)
    cut = []
    skip = 0
    for ln in lines:  # drop every wait that comes before the last start (the barriers)
        if skip:
            skip -= 1
            continue
        if "// barrier" in ln and text.index(ln) < text.rindex(".start();"):
            skip = 3
            continue
        cut.append(ln)
    (out / "host_nobarrier.cpp").write_text("".join(cut))
    _host(out, objs, out / "host_nobarrier.cpp", out / "host_nb.exe")
    d = _run(project, out / "host_nb.exe", "nb")
    t, ident, _ = design.outputs[0]
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    assert not np.array_equal(np.fromfile(d / f"out_{ident}.bin", np.int8), env[t].reshape(-1))


def test_host_cpp_needs_its_weight_loads(project):
    """URAM weights exist only once a run loads them: with load_weights = 0 the cores compute
    with empty weight memories and the outputs differ."""
    out, gq, design, x, objs = project
    text = (out / "host" / "host.cpp").read_text()
    uram_cores = [c.name for c in design.cores if any(lay.wmem is not None and lay.wmem.uram for lay in c.layers)]
    assert uram_cores and len(uram_cores) < len(design.cores), "the design mixes cores with and without URAM"
    assert text.count("kLoadWeights);  // load_weights") == len(uram_cores)
    (out / "host_noload.cpp").write_text(text.replace("const int kLoadWeights = 1;", "const int kLoadWeights = 0;"))
    _host(out, objs, out / "host_noload.cpp", out / "host_nl.exe")
    d = _run(project, out / "host_nl.exe", "nl")
    t, ident, _ = design.outputs[0]
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    assert not np.array_equal(np.fromfile(d / f"out_{ident}.bin", np.int8), env[t].reshape(-1))


def test_driver_py_csim_backend(project):
    out, gq, design, x, _ = project
    spec = importlib.util.spec_from_file_location("bb_driver", out / "host" / "driver.py")
    drv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drv)
    dev = drv.CsimDevice(out / "host")
    raw, ys = drv.run(dev, {gq.inputs[0]: x}, json.loads((out / "host" / "design.json").read_text()))
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    for t, ident, _ in design.outputs:
        np.testing.assert_array_equal(raw[ident], env[t].reshape(-1))
    np.testing.assert_allclose(ys[0], env[gq.outputs[0]], rtol=0, atol=1e-6)
    assert dev.leftover() == 0
    # A second batch on the same device without loading: the URAM weights stay.
    raw2, _ = drv.run(dev, {gq.inputs[0]: x}, json.loads((out / "host" / "design.json").read_text()),
                      load_weights=False)
    for t, ident, _ in design.outputs:
        np.testing.assert_array_equal(raw2[ident], env[t].reshape(-1))



_TWO_DESIGNS = """
import importlib.util, json, sys
import numpy as np
for host, x, y in zip(sys.argv[1::3], sys.argv[2::3], sys.argv[3::3]):
    spec = importlib.util.spec_from_file_location("drv", host + "/driver.py")
    drv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drv)
    d = json.loads(open(host + "/design.json").read())
    raw, _ = drv.run(drv.CsimDevice(drv.Path(host)), {next(b["tensor"] for b in d["buffers"] if b["role"] == "input"): np.load(x)}, d)
    np.save(y, raw[next(b["ident"] for b in d["buffers"] if b["role"] == "output")])
"""


def test_driver_py_two_designs_in_one_process(project, tmp_path):
    """Two designs' C-simulation libraries in one Python process, the smaller one loaded first:
    each gives its own reference. Both have a ``layer0_P`` window whose row memory is a static
    local; marked STB_GNU_UNIQUE, the second library would use the first one's (smaller) array."""
    out, gq, design, x, _ = project
    g2 = canonicalize(load_model(models.save(models.residual_block(seed=1, c=4, hw=4), tmp_path / "s.onnx")))
    gq2 = quantize(g2)
    board = load_board("u250")
    x2 = np.random.default_rng(2).standard_normal(g2.shape(g2.inputs[0])).astype(np.float32)
    design2, _ = _write_and_compile(tmp_path, gq2, make_plan(g2, board), board, {g2.inputs[0]: x2})
    np.save(tmp_path / "x2.npy", x2)
    np.save(tmp_path / "x1.npy", x)
    args = [str(tmp_path / "host"), str(tmp_path / "x2.npy"), str(tmp_path / "y2.npy"),
            str(out / "host"), str(tmp_path / "x1.npy"), str(tmp_path / "y1.npy")]
    r = subprocess.run([sys.executable, "-c", _TWO_DESIGNS, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    for g_, x_, d_, y in ((gq2, x2, design2, "y2.npy"), (gq, x, design, "y1.npy")):
        ref = run_int8(g_, {g_.inputs[0]: x_}, keep=True)[d_.outputs[0][0]]
        want = (ref.transpose(0, 2, 3, 1) if ref.ndim == 4 else ref).reshape(-1)  # the fabric's NHWC
        np.testing.assert_array_equal(np.load(tmp_path / y), want)

# ---- a board of two cards (2x-u250): one device per card --------------------------------


@pytest.fixture(scope="module")
def cards_project(tmp_path_factory):
    """(folder, int8 graph, design, float input, objects) of ResNet-8 on 2x-u250 over both cards,
    one of the two transfers between the cards forced to an off-chip buffer (no memory on
    both cards: the host copies it), the other kept a stream."""
    out = tmp_path_factory.mktemp("host_cards")
    g = canonicalize(load_model(models.save(models.resnet8(seed=0), out / "m.onnx")))
    gq = quantize(g)
    board = load_board("2x-u250")
    plan = make_plan(g, board, strategy="even")
    cross = [t for t in plan.transfers if (t.src_core < 4) != (t.dst_core < 4)]
    assert len(cross) >= 2 and all(t.kind == "stream" for t in cross), cross
    cross[0].kind = "buffer"
    x = np.random.default_rng(7).standard_normal(g.shape(g.inputs[0])).astype(np.float32)
    design, objs = _write_and_compile(out, gq, plan, board, {g.inputs[0]: x})
    return out, gq, design, x, objs


def _run_cards(project, exe, tag, *extra):
    out, gq, design, x, _ = project
    d = out / f"run_{tag}"
    d.mkdir()
    x.tofile(d / f"x_{design.inputs[0][1]}.f32")
    return d, subprocess.run([str(exe), str(d), ".", str(out / "hls"), *extra], capture_output=True, text=True)


def _outputs_match(project, d) -> bool:
    out, gq, design, x, _ = project
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    return all(np.array_equal(np.fromfile(d / f"out_{ident}.bin", np.int8), env[t].reshape(-1))
               for t, ident, _ in design.outputs)


def test_single_card_design_json_has_no_cards(project):
    spec = json.loads((project[0] / "host" / "design.json").read_text())
    assert "cards" not in spec and "copies" not in spec
    assert not any(v == "copy" for v, _ in spec["schedule"])
    text = (project[0] / "host" / "host.cpp").read_text()
    assert "xrt::device device(0);" in text and "design_card" not in text


def test_cards_spec_and_host_cpp(cards_project):
    """design.json lists both cards; host.cpp opens one device per card, loads each card's
    xclbin and puts every kernel and buffer on its card's device."""
    out, gq, design, x, objs = cards_project
    spec = json.loads((out / "host" / "design.json").read_text())
    assert [c["card"] for c in spec["cards"]] == [0, 1]
    assert [c["xclbin"] for c in spec["cards"]] == ["design_card0.xclbin", "design_card1.xclbin"]
    card = {k: c["card"] for c in spec["cards"] for k in c["kernels"]}
    assert card == {c.name: int(c.id >= 4) for c in design.cores}
    (cp,) = spec["copies"]
    buf = {b["name"]: b for b in spec["buffers"]}
    assert buf[cp["src"]]["ident"] == buf[cp["dst"]]["ident"]
    assert card[buf[cp["src"]]["kernel"]] == 0 and card[buf[cp["dst"]]["kernel"]] == 1
    steps = [tuple(s) for s in spec["schedule"]]
    i = steps.index(("copy", cp["dst"]))
    assert steps[i - 1] == ("wait", buf[cp["src"]]["kernel"])
    assert steps.index(("start", buf[cp["dst"]]["kernel"])) > i
    ident = buf[cp["src"]]["ident"]
    for d, port in ((0, f"{buf[cp['src']]['kernel']}_1.bo_{ident}:DDR["), (1, f"{buf[cp['dst']]['kernel']}_1.bi_{ident}:DDR[")):
        cfg = (out / "vitis" / f"link_card{d}.cfg").read_text()
        assert f"\nsp={port}" in cfg and f"# note: buffer {ident}: " in cfg and "hosts copy" in cfg
    text = (out / "host" / "host.cpp").read_text()
    assert 'device0.load_xclbin(xdir + "/design_card0.xclbin")' in text
    assert 'device1.load_xclbin(xdir + "/design_card1.xclbin")' in text
    for k in spec["kernels"]:
        n, d = k["name"], card[k["name"]]
        assert f'xrt::kernel k_{n}(device{d}, uuid{d}, "{n}:{{{n}_1}}");' in text
    for b in spec["buffers"]:
        assert f"xrt::bo {b['name']}(device{card[b['kernel']]}, " in text


def test_cards_host_cpp_matches_reference(cards_project):
    out, gq, design, x, objs = cards_project
    _host(out, objs, out / "host" / "host.cpp", out / "host_cards.exe")
    d, r = _run_cards(cards_project, out / "host_cards.exe", "ok")
    assert r.returncode == 0, r.stderr
    assert _outputs_match(cards_project, d)
    y = np.fromfile(d / "y0.f32", np.float32).reshape(gq.shape(gq.outputs[0]))
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    np.testing.assert_allclose(y, env[gq.outputs[0]], rtol=0, atol=1e-6)
    d, r = _run_cards(cards_project, out / "host_cards.exe", "devs", "--devices", "3,5")
    assert r.returncode == 0 and _outputs_match(cards_project, d), r.stderr
    d, r = _run_cards(cards_project, out / "host_cards.exe", "baddevs", "--devices", "1")
    assert r.returncode == 2 and "--devices needs 2 device indices" in r.stderr


def test_cards_host_cpp_fails_when_cards_are_mixed(cards_project):
    """The stand-in refuses a buffer of the other card and a kernel from the other card's xclbin;
    without the host copy the consumer card reads garbage."""
    out, gq, design, x, objs = cards_project
    text = (out / "host" / "host.cpp").read_text()
    spec = json.loads((out / "host" / "design.json").read_text())
    (cp,) = spec["copies"]
    out_buf = next(b["name"] for b in spec["buffers"] if b["role"] == "output")
    variants = {
        "wrongbo": text.replace(f"xrt::bo {out_buf}(device1, ", f"xrt::bo {out_buf}(device0, "),
        "wrongxclbin": text.replace('"/design_card1.xclbin"', '"/design_card0.xclbin"'),
        "nocopy": text.replace(f"    {cp['dst']}.write(t.data(), t.size(), 0);\n", ""),
    }
    for tag, src in variants.items():
        assert src != text, tag
        (out / f"host_{tag}.cpp").write_text(src)
        _host(out, objs, out / f"host_{tag}.cpp", out / f"host_{tag}.exe")
        d, r = _run_cards(cards_project, out / f"host_{tag}.exe", tag)
        if tag == "nocopy":
            assert r.returncode == 0 and not _outputs_match(cards_project, d)
        else:
            assert r.returncode != 0 and "xrt::" in r.stderr, (tag, r.stderr)


def test_cards_driver_py(cards_project):
    """driver.py on two cards: `CardsDevice` over the C-simulated cores gives the reference;
    without the copy step it does not; a buffer of the other card is refused."""
    out, gq, design, x, _ = cards_project
    spec_ = importlib.util.spec_from_file_location("bb_driver_cards", out / "host" / "driver.py")
    drv = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(drv)
    spec = json.loads((out / "host" / "design.json").read_text())
    csim = drv.CsimDevice(out / "host")
    dev = drv.CardsDevice({0: csim, 1: csim}, spec)
    raw, ys = drv.run(dev, {gq.inputs[0]: x}, spec)
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    for t, ident, _ in design.outputs:
        np.testing.assert_array_equal(raw[ident], env[t].reshape(-1))
    np.testing.assert_allclose(ys[0], env[gq.outputs[0]], rtol=0, atol=1e-6)
    nocopy = {**spec, "schedule": [s for s in spec["schedule"] if s[0] != "copy"]}
    raw2, _ = drv.run(dev, {gq.inputs[0]: x}, nocopy)
    assert not all(np.array_equal(raw2[ident], env[t].reshape(-1)) for t, ident, _ in design.outputs)
    k1 = spec["cards"][1]["kernels"][0]
    with pytest.raises(ValueError, match="given a buffer of card 0"):
        dev.start(k1, {0: dev.alloc(16, spec["cards"][0]["kernels"][0], 0)}, 1)
    with pytest.raises(ValueError, match="one per card"):
        drv.open_cards(spec, out / "vitis", [0])
