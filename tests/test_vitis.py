"""Vitis handoff consistency: what link.cfg and the HLS configs name exists in the C++.

No Vitis needed: the generated C++ is parsed (top-function signatures and INTERFACE
pragmas). Checks: every ``nk`` kernel is a core's top function with its own config; every
``sp`` port is an m_axi port of that kernel; every ``stream_connect`` joins an axis output
of the producer to an axis input of the consumer with the same lane count; every ``slr``
exists on the board and is the SLR of the plan's core.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.codegen.project import generate
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.quant.quantizer import quantize
from bbgrap_hls.search import make_plan
from tests import models

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")

SIG = re.compile(r"^void (core\d+)\((.*)\) \{$", re.M)
PRAGMA = re.compile(r"BB_HLS\(INTERFACE (\w+) port = (\w+)")


def _kernels(files: dict[str, bytes]) -> dict[str, dict[str, tuple[str, int]]]:
    """kernel -> port -> (interface, lanes) from hls/core*.cpp."""
    out = {}
    for path, data in files.items():
        if not re.fullmatch(r"hls/core\d+\.cpp", path):
            continue
        text = data.decode()
        (name, params), = SIG.findall(text)
        lanes = {}
        for p in params.split(", "):
            m = re.fullmatch(r"bb::Stream<(\d+)>& (\w+)", p)
            if m:
                lanes[m.group(2)] = int(m.group(1))
        ports: dict[str, tuple[str, int]] = {}
        for kind, port in PRAGMA.findall(text):  # m_axi ports also get an s_axilite offset
            if kind != "s_axilite" or port not in ports:
                ports[port] = (kind, lanes.get(port, 0))
        assert set(lanes) <= set(ports), f"{name}: stream argument without an INTERFACE pragma"
        out[name] = ports
    return out


def _cfg(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for ln in text.splitlines():
        if "=" in ln and not ln.startswith("#"):
            k, v = ln.split("=", 1)
            out.setdefault(k.strip(), []).append(v.strip())
    return out


@pytest.mark.parametrize("model", ["se_block", "channel_shuffle", "residual_block"])
@pytest.mark.parametrize("board_name", ["u250", "u280", "vu9p-quad"])
def test_link_config_names_existing_kernels_and_ports(tmp_path, model, board_name):
    g = canonicalize(load_model(models.save(models.ALL[model](seed=0), tmp_path / "m.onnx")))
    board = load_board(board_name)
    plan = make_plan(g, board, strategy="even")
    x = np.zeros(g.shape(g.inputs[0]), np.float32)
    files, design = generate(quantize(g), plan, board, {g.inputs[0]: x})
    kernels = _kernels(files)
    link = _cfg(files["vitis/link.cfg"].decode())
    cus = {}
    for nk in link["nk"]:
        k, n, cu = nk.split(":")
        assert k in kernels and n == "1"
        cus[cu] = k
        cfg = _cfg(files[f"vitis/{k}.cfg"].decode())
        assert cfg["syn.top"] == [k] and cfg["syn.file"] == [f"../hls/{k}.cpp"]
        assert cfg["flow_target"] == ["vitis"] and cfg["part"] == [board.part]
    assert sorted(cus.values()) == sorted(kernels)
    slr_of = {c.name: c for c in design.cores}
    for s in link.get("slr", []):
        cu, slr = s.split(":")
        core = board.cores[slr_of[cus[cu]].id]
        assert slr == f"SLR{core.slr}" and core.slr is not None
    if any(c.slr is not None for c in board.cores):
        assert len(link.get("slr", [])) == len(design.cores)
    for s in link.get("sp", []):
        port, bank = s.split(":")
        cu, name = port.split(".")
        assert kernels[cus[cu]][name][0] == "m_axi", s
        assert re.fullmatch(r"(DDR|HBM)\[\d+\]", bank)
    mem_ports = [(k, p) for k, ps in kernels.items() for p, (kind, _) in ps.items() if kind == "m_axi"]
    if board.platform and "xdma" in board.platform:
        assert len(link.get("sp", [])) == len(mem_ports)
    for s in link.get("stream_connect", []):
        src, dst, depth = s.split(":")
        (scu, sport), (dcu, dport) = src.split("."), dst.split(".")
        skind, slanes = kernels[cus[scu]][sport]
        dkind, dlanes = kernels[cus[dcu]][dport]
        assert skind == dkind == "axis" and sport.startswith("o_") and dport.startswith("i_")
        assert slanes == dlanes > 0 and int(depth) > 0
    axis_ports = sum(kind == "axis" for ps in kernels.values() for kind, _ in ps.values())
    assert axis_ports == 2 * len(link.get("stream_connect", []))
    make = files["vitis/Makefile"].decode()
    assert "--mode hls" in make and "link.cfg" in make and f"PLATFORM ?= {board.platform or 'PLATFORM'}" in make


STORAGE = re.compile(r"BB_HLS\(BIND_STORAGE variable = (\w+) type = (\w+) impl = (\w+)\)")
WORDS = re.compile(r"(?:static const|static) bb::Word<(\d+)> (\w+)\[(\d+)\]")


def _weight_memory_shape(gq, plan, lay) -> tuple[int, int]:
    """(word bits, depth) of a layer's weight memory as model/blocks.py counts it."""
    node, part = gq.node(lay.node), plan.node(lay.node)
    pe, simd = part.pe, part.simd
    m = re.search(r"_p(\d+)$", lay.ident)
    if m:
        sp = part.split[int(m.group(1))]
        pe, simd, co = sp.pe, sp.simd, sp.co_end - sp.co_begin
    else:
        co = gq.shape(node.outputs[0])[1]
    w = np.asarray(node.attrs["q"]["w"])
    if "dwconv2d" in lay.call:
        return simd * 8, w.shape[0] * w.shape[2] * w.shape[3] // simd  # simd one-lane banks
    k = int(np.prod(w.shape[1:])) * (node.attrs.get("group", 1) if node.op == "Conv" else 1)
    return pe * simd * 8, (k // simd) * (co // pe)  # pe banks of simd lanes, side by side


@pytest.mark.parametrize("placement", ["uram", "bram", "lut"])
def test_weight_memories_follow_the_plan(tmp_path, placement):
    """Every weight memory has the model's shape (one memory of pe·simd·8-bit words) and sits
    where the plan put it: a ROM bound to BRAM/LUTRAM, or a RAM in URAM that the core fills
    through its m_axi port ``wts`` (its weight image) when ``load_weights`` is set."""
    g = canonicalize(load_model(models.save(models.residual_block(seed=0), tmp_path / "m.onnx")))
    gq = quantize(g)
    board = load_board("u250")
    plan = make_plan(g, board, strategy="single")
    weighted = [n for n in plan.nodes if n.weights is not None]
    assert weighted, "residual_block has weighted blocks"
    weighted[0].weights = placement
    x = np.zeros(g.shape(g.inputs[0]), np.float32)
    files, design = generate(gq, plan, board, {g.inputs[0]: x})
    want = {"bram": ("rom_2p", "bram"), "uram": ("ram_1p", "uram"), "lut": ("rom_2p", "lutram")}
    kernels = _kernels(files)
    link = _cfg(files["vitis/link.cfg"].decode())
    seen = {}
    for c in design.cores:
        text = files[f"hls/{c.name}.cpp"].decode()
        bound = {v: (t, i) for v, t, i in STORAGE.findall(text)}
        image = 0
        for lay in c.layers:
            node = plan.node(lay.node)
            if lay.op not in ("Conv", "Dense"):
                continue
            header = files[f"hls/{lay.ident}.h"].decode()
            var = f"{lay.ident}_w"
            assert bound[var] == want[node.weights], (lay.ident, node.weights, bound)
            assert f"AGGREGATE variable = {var} compact = bit" in text
            assert "ARRAY_PARTITION variable = " + var not in text  # one memory, not pe·simd
            decls = {name: (int(bits), int(depth)) for bits, name, depth in WORDS.findall(
                text if node.weights == "uram" else header)}
            bits, depth = _weight_memory_shape(gq, plan, lay)
            assert decls[var] == (bits // 8, depth), (lay.ident, decls)
            if node.weights == "uram":
                assert f"{var}[" not in header and f"static bb::Word<{bits // 8}> {var}[" in text
                assert f"bb::load_words<{bits // 8}, {depth}>(wts + {image}, {var});" in text
                image += bits // 8 * depth
            else:
                assert f"static const bb::Word<{bits // 8}> {var}[{depth}]" in header
            seen[lay.node] = bound[var]
        ports = kernels[c.name]
        if image:
            assert ports["wts"][0] == "m_axi" and ports["load_weights"][0] == "s_axilite"
            assert len(files[f"hls/weights_{c.name}.bin"]) == image
            assert f"{c.name}_1.wts" in {s.split(":")[0] for s in link.get("sp", [])} or not board.platform
            assert re.search(rf"^void {c.name}\(.*const int8_t\* wts, int load_weights, int frames\) \{{$",
                             text, re.M)
        else:
            assert "wts" not in ports and f"hls/weights_{c.name}.bin" not in files
    assert seen[weighted[0].name] == want[placement]
