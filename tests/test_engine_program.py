"""A whole int8 network as a layer-engine program (`bbgrap_hls.codegen.engine_program`),
bit-exact against the graph's integer reference (`bbgrap_hls.quant.run_int8`).

The networks are built here, small, with channel counts that are not multiples of ``PE``:
ResNet-like (convs, adds, fused ReLU, global average pool, dense), depthwise-separable
(DS-CNN-like: depthwise + pointwise, ReLU6, a grouped conv, a whole-map average pool), squeeze-excite (a
hardsigmoid table, MULV with a fused ReLU table, MUL of two maps (a tanh gate) with a fused SiLU table,
an Add with a fused sigmoid table), inception-like (Concat of conv and max-pool branches, read by a conv and a max
pool: padding holes in the concatenated map) and a dense layer after the Flatten of a 3 x 3 map.
`run_reference` (each unit's Python reference on a bytearray feature memory) is checked on
every network at ``PE`` = ``SIMD`` and ``PE`` = 2·``SIMD`` on 16- to 64-byte beats, with whole
layers and with row bands (an input buffer so small that the largest convs run in bands, the
maps at beat-aligned block strides); the HLS top (`hw/hls/engine_top.h`) runs three networks,
and two of them in row bands, in g++ C simulation for two frames (marker ``csim``).
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.codegen import engine_files as ef
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_memory as em
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen.csim import flags
from bbgrap_hls.frontend import load_model
from bbgrap_hls.ir import Node, Tensor
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant import quantize, run_int8
from tests.families import Net
from tests.models import _rename_output, save
from tests.test_hls_kernels import hls_dir

FRAMES = 2


def resnet_like(b: Net) -> str:
    x = b.cba(b.input("x", (1, 3, 10, 10)), 6, 3)
    y = b.cba(b.cba(x, 6, 3), 6, 3, act=None)
    x = b.act(b.binary("Add", y, x))  # identity shortcut
    y = b.cba(b.cba(x, 10, 3, 2), 10, 3, act=None)
    x = b.act(b.binary("Add", y, b.cba(x, 10, 1, 2, act=None)))  # projection shortcut
    return b.gemm(b.flatten(b.gap(x)), 5)


def ds_like(b: Net) -> str:
    x = b.input("x", (1, 1, 12, 9))
    x = b.act(b.bn(b.node("Conv", [x, b.const("w", b.weights((10, 1, 4, 3), 12)),
                                   b.const("b", np.zeros(10, np.float32))], (1, 10, 6, 5),
                          kernel_shape=[4, 3], strides=[2, 2], pads=[1, 1, 2, 2])))
    for cout, stride in ((12, 1), (12, 2)):
        x = b.cba(b.cba(x, b.shapes[x][1], 3, stride, group=b.shapes[x][1], act="Relu6"), cout, 1)
    x = b.cba(x, 12, 3, group=2)  # grouped, not depthwise: one conv step, block-diagonal weights
    h, w = b.shapes[x][2:]
    x = b.node("AveragePool", [x], (1, 12, 1, 1), kernel_shape=[h, w])
    return b.gemm(b.flatten(x), 4)


def se_like(b: Net) -> str:
    x = b.cba(b.input("x", (1, 3, 8, 8)), 10, 3)
    s = b.act(b.conv(b.gap(x), 3, 1), "Relu")
    s = b.act(b.conv(s, 10, 1), "HardSigmoid")
    x = b.act(b.binary("Mul", x, s), "Relu")  # MULV with a fused table
    x = b.binary("Mul", x, b.act(b.cba(x, 10, 1, act=None), "Tanh"))  # a gate: MUL of two maps
    x = b.act(x, "SiLU")  # canonical Swish: a table fused into the MUL
    y = b.cba(x, 10, 3, act=None)
    return b.act(b.binary("Add", x, y), "Sigmoid")  # ADD with a fused table


def inception_like(b: Net) -> str:
    x = b.input("x", (1, 5, 6, 6))
    b1 = b.act(b.conv(x, 6, 1))
    b2 = b.act(b.conv(b.act(b.conv(x, 3, 1)), 5, 3))
    b3 = b.act(b.conv(b.maxpool(x, 3, 1, 1), 3, 1))
    b4 = b.maxpool(b1, 3, 1, 1)  # the window unit writes into the concat; b1 read from inside it
    x = b.concat([b1, b2, b3, b4])
    x = b.maxpool(b.act(b.conv(x, 7, 3)), 2, 2)
    x = b.concat([b.act(b.conv(x, 3, 1)), b.maxpool(x, 3, 1, 1)])
    return b.gemm(b.flatten(b.gap(b.act(b.conv(x, 6, 1)))), 4)


def flatten_dense(b: Net) -> str:
    x = b.maxpool(b.act(b.conv(b.input("x", (1, 3, 12, 12)), 5, 3, 2, pad=1)), 2, 2)  # 3 x 3 x 5
    return b.gemm(b.act(b.gemm(b.torch_flatten(x), 9)), 4)


NETS = {"resnet_like": resnet_like, "ds_like": ds_like, "se_like": se_like, "inception_like": inception_like,
        "flatten_dense": flatten_dense}
CONFIGS = {"pe4_simd4_b16": (4, 4, 16), "pe8_simd4_b64": (8, 4, 64), "pe8_simd8_b32": (8, 8, 32),
           "pe4_simd2_b16": (4, 2, 16)}
"""name: (pe, simd, beat bytes)."""


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> dict:
    """Each network quantised (synthetic calibration, seeded)."""
    d = tmp_path_factory.mktemp("nets")
    out = {}
    for name, make in NETS.items():
        b = Net(seed=3)
        model = _rename_output(b, make(b), name)
        g = canonicalize(load_model(save(model, d / f"{name}.onnx")))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no calibration samples given
            out[name] = quantize(g, seed=0)
    return out


def frames(gq, n: int = FRAMES, seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, gq.shape(gq.inputs[0]), dtype=np.int8) for _ in range(n)]


def want(gq, program: ep.EngineProgram, x: np.ndarray) -> np.ndarray:
    return run_int8(gq, {gq.inputs[0]: x}, keep=True)[program.output]


def assert_every_tensor(gq, program: ep.EngineProgram, mem: bytes, x: np.ndarray) -> None:
    """Every tensor with a region, read from the feature memory after the frame, equals
    `run_int8`'s: the output, and no map overwritten by a later step (Concat inputs inside
    their Concat's region, views)."""
    env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
    for name in program.regions:
        assert np.array_equal(em.read_tensor(program, mem, name), env[name]), name


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("net", NETS)
def test_reference_equals_run_int8(graphs, net, cfg):
    gq = graphs[net]
    program = ep.build(gq, *CONFIGS[cfg])
    for x in frames(gq):
        y = em.run_reference(program, x)
        assert y.dtype == np.int8
        assert np.array_equal(y, want(gq, program, x))
        assert_every_tensor(gq, program, em.run_memory(program, x), x)


def smallest_buffer(gq, pe: int, simd: int, beat: int) -> int | None:
    """The smallest conv input buffer (whole beats, below the largest whole conv input) that
    every conv of the program fits in row bands; None when even one beat less than the
    largest input is refused."""
    whole = ep.build(gq, pe, simd, beat)
    need = max(ei.in_buffer_bytes(s.desc, pe, beat) for s in whole.steps if s.unit == "conv")
    best = None
    for buf in range(need - beat, 0, -beat):
        try:
            ep.build(gq, pe, simd, beat, in_buffer=buf)
        except ep.BandError:
            break
        best = buf
    return best


def band_counts(program: ep.EngineProgram) -> dict[str, int]:
    """Conv steps a conv node runs as (its row bands)."""
    out: dict[str, int] = {}
    for s in program.steps:
        if s.unit == "conv":
            out[s.nodes[0]] = out.get(s.nodes[0], 0) + 1
    return out


NO_BANDS = {("resnet_like", "pe8_simd4_b64"), ("ds_like", "pe8_simd4_b64")}
"""Small maps on 64-byte beats: a band starts on a whole output beat (``m`` rows of a 10- or
6-wide map at ``PE`` 8), so no band of the largest conv is smaller than the whole map."""
BANDED = [(net, cfg) for net in NETS for cfg in CONFIGS if (net, cfg) not in NO_BANDS]


@pytest.mark.parametrize("net, cfg", BANDED)
def test_banded_reference_equals_run_int8(graphs, net, cfg):
    """The smallest buffer every conv bands into: the convs too big for it run in row bands
    (each band's input within the buffer, its descriptor run by the reference), every map at a
    beat-aligned block stride; every tensor equal to run_int8."""
    gq = graphs[net]
    pe, simd, beat = CONFIGS[cfg]
    buf = smallest_buffer(gq, pe, simd, beat)
    program = ep.build(gq, pe, simd, beat, in_buffer=buf)
    assert any(n > 1 for n in band_counts(program).values())
    conv = [s for s in program.steps if s.unit == "conv"]
    assert all(ei.in_buffer_bytes(s.desc, pe, beat) <= buf for s in conv)
    assert ef.unit_sizes(program)["IBUF_WORDS"] * simd <= buf
    assert all(r.stride is not None and r.stride % beat == 0 and r.base % beat == 0 for r in program.regions.values())
    for x in frames(gq):
        mem = em.run_memory(program, x)
        assert np.array_equal(em.read_tensor(program, mem, program.output), want(gq, program, x))
        assert_every_tensor(gq, program, mem, x)


BATCH = 3


@pytest.mark.parametrize("banded", [False, True])
@pytest.mark.parametrize("net", NETS)
def test_batched_reference_equals_run_int8(graphs, net, banded):
    """A program of `BATCH` frames a start (docs/engine.md, "Batched frames"): a conv whose
    `BATCH` whole inputs fit the buffer is one step computing every frame (``FRAMES``), any
    other runs once a frame in the whole buffer's bands, as does every window and element-wise
    step, its bases a frame stride (whole 4 KB pages) apart; the weight image is the one-frame
    program's (at the same block strides); every tensor of every frame equals run_int8.
    ``banded``: `BATCH` times the one-frame smallest buffer: the convs the one-frame program
    runs whole are batched, the banded ones run a frame at a time in fewer bands."""
    gq = graphs[net]
    pe, simd, beat = CONFIGS["pe4_simd4_b16"]
    buf = smallest_buffer(gq, pe, simd, beat) if banded else None
    one = ep.build(gq, pe, simd, beat, in_buffer=buf)
    program = ep.build(gq, pe, simd, beat, in_buffer=None if buf is None else BATCH * buf, frames=BATCH)
    assert (program.frames, program.frame_stride % ep.FRAME_ALIGN) == (BATCH, 0)
    assert program.feature_size == BATCH * program.frame_stride >= BATCH * one.feature_size
    if buf is not None:  # both laid out at whole-beat block strides: the same weight image
        assert program.weights == one.weights
    conv = [s for s in program.steps if s.unit == "conv"]
    ones = band_counts(one)
    for node, n in band_counts(program).items():
        steps = [s for s in conv if s.nodes[0] == node]
        if ones[node] == 1:  # whole in the one-frame program: batched
            assert n == 1 and steps[0].desc["FRAMES"] == BATCH and steps[0].desc["FRAME_STRIDE"] == program.frame_stride
        else:  # a frame at a time, in at most as many bands
            assert all(s.desc["FRAMES"] == 1 for s in steps) and n % BATCH == 0 and n // BATCH <= ones[node]
            assert [s.frame for s in steps] == list(range(BATCH)) * (n // BATCH)
    assert any(s.desc["FRAMES"] == 1 for s in conv) == (buf is not None and any(n > 1 for n in ones.values()))
    others = [s for s in program.steps if s.unit != "conv"]
    assert len(others) == BATCH * sum(s.unit != "conv" for s in one.steps)
    if buf is not None:
        assert all(ei.in_buffer_bytes(s.desc, pe, beat) <= BATCH * buf for s in conv)
    xs = frames(gq, BATCH, seed=11)
    mem = em.run_memory(program, xs)
    ys = em.run_reference(program, xs)
    for k, x in enumerate(xs):
        assert np.array_equal(ys[k], want(gq, program, x)), k
        env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
        for name in program.regions:
            assert np.array_equal(em.read_tensor(program, mem, name, k), env[name]), (k, name)


def test_bands_cover_each_layer_once(graphs):
    """A banded conv's steps: output rows top to bottom, each band's first output row on a
    whole beat of its block, the layer's weights (``W_BASE``) for all of them."""
    program = ep.build(graphs["se_like"], 8, 4, 64, in_buffer=384)
    assert sorted(band_counts(program).values()) == [1, 1, 2, 3, 6]
    for node, n in band_counts(program).items():
        steps = [s for s in program.steps if s.nodes[0] == node]
        dst = program.regions[steps[0].output]
        rows = [ei.step_out_hw(s.desc)[0] for s in steps]
        assert sum(rows) == dst.h and len({s.desc["W_BASE"] for s in steps}) == 1
        starts = [(s.desc["OUT_BASE"] - dst.base) // (dst.w * 8) for s in steps]
        assert starts == [sum(rows[:i]) for i in range(n)]
        assert all(s.desc["OUT_BASE"] % 64 == 0 for s in steps)


def test_big_buffer_builds_the_whole_layer_program(graphs):
    """A buffer that holds every conv's whole input: today's program, byte for byte."""
    gq = graphs["inception_like"]
    whole = ep.build(gq, 8, 4, 64)
    need = max(ei.in_buffer_bytes(s.desc, 8, 64) for s in whole.steps if s.unit == "conv")
    same = ep.build(gq, 8, 4, 64, in_buffer=need)
    assert same.regions == whole.regions and same.weights == whole.weights
    assert ef.step_rows(same) == ef.step_rows(whole)


def test_refuses_a_buffer_below_the_smallest_band(graphs):
    with pytest.raises(ep.BandError, match=r"Conv conv_\w+: .* the buffer has 768"):
        ep.build(graphs["resnet_like"], 8, 4, 64, in_buffer=768)


def test_networks_cover_the_units(graphs):
    """Each network's steps: what the test claims it checks."""
    seen = {net: sorted({(s.unit, s.desc["MODE"] if "MODE" in s.desc else "conv",
                          int(s.desc.get("LUT", 0))) for s in ep.build(graphs[net], 4, 4, 16).steps})
            for net in NETS}
    assert ("eltwise", 0, 0) in seen["resnet_like"] and ("window", 1, 0) in seen["resnet_like"]
    assert ("window", 2, 0) in seen["ds_like"] and ("window", 1, 0) in seen["ds_like"]
    assert any(s.nodes[0].startswith("conv") and s.layer.k == (3, 3) and s.layer.c == 12
               for s in ep.build(graphs["ds_like"], 4, 4, 16).steps if s.unit == "conv")  # the grouped one
    assert {("eltwise", 0, 1), ("eltwise", 1, 1), ("eltwise", 2, 1), ("eltwise", 3, 0)} <= set(seen["se_like"])
    assert ("window", 0, 0) in seen["inception_like"]


def test_concat_has_holes_and_offsets(graphs):
    """The concats' inputs start on beats inside their regions; the concatenated maps'
    channel maps skip the holes (G = 4 on 64-byte beats: an input of a 6 x 6 concat is rounded
    up to 16 channels, of a 3 x 3 one to 64)."""
    program = ep.build(graphs["inception_like"], 4, 4, 64)
    holes = [r for r in program.regions.values() if r.cp > -(-len(r.phys) // 4) * 4]
    assert len(holes) == 2
    assert [r.cp for r in holes] == [64, 128]
    assert all(r.base % 64 == 0 for r in program.regions.values())
    for r in holes:
        inside = [q for q in program.regions.values() if r.base <= q.base < r.base + r.nbytes and q is not r]
        assert len(inside) >= 2 and all((q.base - r.base) % 64 == 0 for q in inside)
        assert list(r.phys) == sorted(r.phys) and r.phys[-1] < r.cp


def test_dense_after_flatten_is_one_conv(graphs):
    program = ep.build(graphs["flatten_dense"], 4, 4, 16)
    dense = [s for s in program.steps if "gemm" in s.nodes[0]]
    assert [(s.desc["H"], s.desc["W"], s.desc["KH"], s.desc["KW"], s.desc["PT"]) for s in dense] == \
        [(3, 3, 3, 3, 0), (1, 1, 1, 1, 0)]


def unfolded_flatten(gq):
    """``gq`` (flatten_dense) with its first Dense reading a Flatten node (NCHW order, weight
    columns permuted to match) instead of the NHWC map canonicalize folded in."""
    g = gq.copy()
    dense = next(n for n in g.nodes if n.op == "Dense" and n.attrs.get("in_layout") == "NHWC")
    src = dense.inputs[0]
    _, c, h, w = g.shape(src)
    t = g.tensors[src]
    g.tensors["flat"] = Tensor("flat", (1, c * h * w), t.dtype, None, t.quant)
    g.nodes.insert(g.nodes.index(dense), Node("flatten", "Flatten", [src], ["flat"],
                                              {"axis": 1, "shape": (1, c * h * w), "q": {}}))
    q = dict(dense.attrs["q"])
    q["w"] = np.asarray(q["w"]).reshape(-1, h, w, c).transpose(0, 3, 1, 2).reshape(len(q["w"]), -1)
    dense.inputs[0] = "flat"
    dense.attrs = dict(dense.attrs, in_layout="NC", q=q)
    return g


@pytest.mark.parametrize("cfg", CONFIGS)
def test_dense_after_an_unfolded_flatten(graphs, cfg):
    """A Flatten node of a 3 x 3 map (a flat view of its region) read by a Dense: the Dense is
    a 3 x 3 conv, its weights permuted from the NCHW-flatten order."""
    gq, g = graphs["flatten_dense"], unfolded_flatten(graphs["flatten_dense"])
    program = ep.build(g, *CONFIGS[cfg])
    assert program.regions["flat"].flat
    for x in frames(g):
        y = em.run_reference(program, x)
        assert np.array_equal(y, want(g, program, x))
        assert np.array_equal(y, want(gq, program, x))  # the rewrite is the same network
        assert_every_tensor(g, program, em.run_memory(program, x), x)


@pytest.mark.parametrize("what", ["avgpool_uncounted_pad", "lrn"])
def test_refuses_with_the_op_named(tmp_path, what):
    b = Net(seed=1)
    x = b.act(b.conv(b.input("x", (1, 3, 6, 6)), 4, 3))
    if what == "lrn":
        y = b.node("LRN", [x], b.shapes[x], size=3)
    else:
        y = b.node("AveragePool", [x], b.shapes[x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)
    g = canonicalize(load_model(save(_rename_output(b, y, what), tmp_path / "m.onnx")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gq = quantize(g, seed=0)
    with pytest.raises(NotImplementedError, match="LRN" if what == "lrn" else "AveragePool"):
        ep.build(gq, 4, 4, 16)


# -- HLS C simulation --------------------------------------------------------------------------

CSIM_NETS = ("resnet_like", "se_like", "inception_like")
CSIM_CONFIGS = {"pe4_simd4": (4, 4), "pe8_simd4": (8, 4)}
BEAT = 64  # bb::DDR_BEAT: the element-wise unit's fixed beat


def _build(d: Path, pe: int, simd: int, sizes: dict[str, int]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    src = d / "engine_program_tb.cpp"
    shutil.copy(Path(__file__).with_name("engine_program_tb.cpp"), src)
    defs = {"PE_": pe, "SIMD_": simd, "BURST_": 4} | {f"{k}_": v for k, v in sizes.items()}
    r = subprocess.run(["g++", *flags(werror=True, opt="-O1"), *[f"-D{k}={v}" for k, v in defs.items()],
                        "-I", str(hls_dir()), str(src), "-o", str(d / "tb")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return d / "tb"


@pytest.fixture(scope="module")
def testbenches(graphs, tmp_path_factory) -> dict:
    """One testbench per engine configuration, its units sized for every network it runs."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not on PATH")
    root = tmp_path_factory.mktemp("tb")

    def one(cfg: str) -> Path:
        pe, simd = CSIM_CONFIGS[cfg]
        sizes: dict[str, int] = {}
        for net in CSIM_NETS:
            for n in (1, BATCH):
                for k, v in ef.unit_sizes(ep.build(graphs[net], pe, simd, BEAT, frames=n)).items():
                    sizes[k] = max(sizes.get(k, 0), v)
        return _build(root / cfg, pe, simd, sizes)

    with ThreadPoolExecutor(len(CSIM_CONFIGS)) as pool:
        return dict(zip(CSIM_CONFIGS, pool.map(one, CSIM_CONFIGS), strict=True))


def run_csim(tb: Path, d: Path, program: ep.EngineProgram, xs: list[np.ndarray]) -> tuple[list[int], list[bytes]]:
    """Write the program's images to ``d``, run the testbench for ``len(xs)`` frames (a batched
    program: ``program.frames`` of them a start); the statuses and each start's feature memory
    after it."""
    d.mkdir(parents=True, exist_ok=True)
    sizes = subprocess.run([str(tb), "sizes"], capture_output=True, text=True, check=True).stdout.split()
    rows = ef.step_rows(program, conv_words=int(sizes[1]))
    (d / "prog.bin").write_bytes(np.array([len(rows)] + [v for r in rows for v in r], np.uint32).astype("<u4")
                                 .tobytes())
    (d / "w.bin").write_bytes(program.weights)
    src = program.regions[program.input]
    (d / "mem.txt").write_text(f"{program.feature_size} {src.base}\n")
    nb = program.frames
    starts = len(xs) // nb
    for f in range(starts):
        mem = bytearray(program.feature_size)
        for k in range(nb):
            em.write_tensor(program, mem, program.input, xs[f * nb + k], k)
        end = src.base + (nb - 1) * program.frame_stride + src.span(program.pe)
        (d / f"in{f}.bin").write_bytes(bytes(mem[src.base:end]))
    r = subprocess.run([str(tb), str(d), str(starts)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    status = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("status")]
    return status, [(d / f"mem{f}.bin").read_bytes() for f in range(starts)]


@pytest.mark.csim
@pytest.mark.parametrize("cfg", CSIM_CONFIGS)
@pytest.mark.parametrize("net", CSIM_NETS)
def test_hls_top_equals_run_int8(graphs, testbenches, tmp_path, net, cfg):
    gq = graphs[net]
    program = ep.build(gq, *CSIM_CONFIGS[cfg], BEAT)
    xs = frames(gq)
    status, mems = run_csim(testbenches[cfg], tmp_path, program, xs)
    assert status == [0] * FRAMES
    for x, mem in zip(xs, mems, strict=True):
        assert np.array_equal(em.read_tensor(program, mem, program.output), want(gq, program, x))
        assert_every_tensor(gq, program, mem, x)


@pytest.mark.csim
@pytest.mark.parametrize("cfg", CSIM_CONFIGS)
@pytest.mark.parametrize("net", ["se_like", "inception_like"])
def test_hls_top_runs_row_bands(graphs, testbenches, tmp_path, net, cfg):
    """The program for the smallest buffer its convs band into (`smallest_buffer`, 64-byte
    beats): every band step run by the HLS top, every tensor equal to run_int8, two frames.
    inception_like at 4 x 4: the strided maps have no concat holes, its largest conv input
    shrinks below that buffer: strided maps, no conv in more than one band."""
    gq = graphs[net]
    pe, simd = CSIM_CONFIGS[cfg]
    program = ep.build(gq, pe, simd, BEAT, in_buffer=smallest_buffer(gq, pe, simd, BEAT))
    assert all(r.stride is not None for r in program.regions.values())
    assert any(n > 1 for n in band_counts(program).values()) != ((net, cfg) == ("inception_like", "pe4_simd4"))
    xs = frames(gq)
    status, mems = run_csim(testbenches[cfg], tmp_path, program, xs)
    assert status == [0] * FRAMES
    for x, mem in zip(xs, mems, strict=True):
        assert_every_tensor(gq, program, mem, x)


@pytest.mark.csim
def test_hls_top_changed_weights_change_the_output(graphs, testbenches, tmp_path):
    """The first conv's weight bytes flipped: the output is not run_int8's any more."""
    gq = graphs["se_like"]
    program = ep.build(gq, 4, 4, BEAT)
    first = next(s for s in program.steps if s.unit == "conv")
    w = bytearray(program.weights)
    start = first.desc["W_BASE"]
    w[start:start + first.desc["TILE_BEATS"] * BEAT] = bytes(b ^ 0x55 for b in w[start:start + first.desc["TILE_BEATS"] * BEAT])
    program.weights = bytes(w)
    x = frames(gq, 1)
    _, mems = run_csim(testbenches["pe4_simd4"], tmp_path, program, x)
    assert not np.array_equal(em.read_tensor(program, mems[0], program.output), want(gq, program, x[0]))


@pytest.mark.csim
def test_hls_top_refuses_a_step_that_does_not_fit(graphs, testbenches, tmp_path):
    """A conv step whose input map is larger than the built input buffer: status 1 + its
    index, nothing run."""
    program = ep.build(graphs["resnet_like"], 4, 4, BEAT)
    first = next(i for i, s in enumerate(program.steps) if s.unit == "conv")
    program.steps[first].desc["H"] = 4096
    status, _ = run_csim(testbenches["pe4_simd4"], tmp_path, program, frames(graphs["resnet_like"], 1))
    assert status == [first + 1]


@pytest.mark.csim
@pytest.mark.parametrize("cfg", CSIM_CONFIGS)
@pytest.mark.parametrize("net", CSIM_NETS)
def test_hls_top_runs_batched_frames(graphs, testbenches, tmp_path, net, cfg):
    """A program of `BATCH` frames a start on the HLS top (each conv step all frames with each
    tile, the other steps once a frame): two starts, every tensor of every frame equal to
    run_int8."""
    gq = graphs[net]
    program = ep.build(gq, *CSIM_CONFIGS[cfg], BEAT, frames=BATCH)
    xs = frames(gq, 2 * BATCH, seed=13)
    status, mems = run_csim(testbenches[cfg], tmp_path, program, xs)
    assert status == [0, 0]
    for f, mem in enumerate(mems):
        for k in range(BATCH):
            x = xs[f * BATCH + k]
            env = run_int8(gq, {gq.inputs[0]: x}, keep=True)
            for name in program.regions:
                assert np.array_equal(em.read_tensor(program, mem, name, k), env[name]), (f, k, name)
