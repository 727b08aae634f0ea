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
    files, design = generate(gq, plan, board, {g.inputs[0]: x})
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    objs = []
    for src in sorted((out / "hls").glob("core*.cpp")) + [out / "host" / "sim_kernels.cpp"]:
        obj = out / (src.stem + ".o")
        subprocess.run([*FLAGS, "-I", str(out / "hls"), "-c", str(src), "-o", str(obj)], check=True)
        objs.append(str(obj))
    return out, gq, design, x, objs


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
