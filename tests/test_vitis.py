"""Vitis handoff consistency: what link.cfg and the HLS configs name exists in the C++.

No Vitis needed: the generated C++ is parsed (top-function signatures and INTERFACE
pragmas). Checks: every ``nk`` kernel is a core's top function with its own config; every
``sp`` port is an m_axi port of that kernel; every ``stream_connect`` joins an axis output
of the producer to an axis input of the consumer with the same lane count; every ``slr``
exists on the board and is the SLR of the plan's core.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from bbgrap_hls.board import _bundled_dir, load_board, parse_board
from bbgrap_hls.codegen import csim
from bbgrap_hls.codegen.project import generate
from bbgrap_hls.codegen.vitis import board_cards
from bbgrap_hls.frontend import load_model
from bbgrap_hls.model.memory import uram_halves
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
    return pe * simd * 8, (k // simd) * -(-co // pe)  # pe banks of simd lanes, side by side (padded folds: ceil)


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
            bits, depth = _weight_memory_shape(gq, plan, lay)
            # a wide, shallow URAM memory is two half-words per address, read through both ports
            halves = node.weights == "uram" and uram_halves(bits, depth)
            assert bound[var] == (("ram_t2p", "uram") if halves else want[node.weights]), \
                (lay.ident, node.weights, bound)
            assert f"AGGREGATE variable = {var} compact = bit" in text
            assert "ARRAY_PARTITION variable = " + var not in text  # one memory, not pe·simd
            decls = {name: (int(b), int(d)) for b, name, d in WORDS.findall(
                text if node.weights == "uram" else header)}
            if halves:
                assert f"static bb::Half<{bits // 16}> {var}[{2 * depth}];" in text
                assert f"bb::load_halves<{bits // 8}, {depth}>(wts + {image}, {var});" in text
                image += bits // 8 * depth
            elif node.weights == "uram":
                assert decls[var] == (bits // 8, depth), (lay.ident, decls)
                assert f"{var}[" not in header and f"static bb::Word<{bits // 8}> {var}[" in text
                assert f"bb::load_words<{bits // 8}, {depth}>(wts + {image}, {var});" in text
                image += bits // 8 * depth
            else:
                assert decls[var] == (bits // 8, depth), (lay.ident, decls)
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
    assert seen[weighted[0].name] in (want[placement], ("ram_t2p", "uram") if placement == "uram" else None)


# ---- boards of several cards: one link config and one xclbin per card --------------------

HOOK = re.compile(r"^# hook \d+: stream (\w+), direction (in|out)\n#   port    (\S+)   \((\d+) bits per beat, "
                  r"(\d+) bits per frame\)\n#   (?:to  |from)    (\S+) on card (\d+)\n#   link    (.*)\n", re.M)


def test_board_cards():
    assert board_cards(load_board("2x-u250")) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    for name in ("u250", "u280", "vu9p-quad", "zcu102"):
        b = load_board(name)
        assert board_cards(b) == [tuple(c.id for c in b.cores)], name
    text = (_bundled_dir() / "2x-u250.yaml").read_text()
    text3 = text.replace("{a: 5, b: 6, width_bits: 512, latency_cycles: 4, kind: slr-crossing}",
                         "{a: 5, b: 6, width_bits: 333, latency_cycles: 300, kind: network}")
    for k, cores in ((0, "[4, 5]"), (1, "[4, 5]"), (2, "[6, 7]"), (3, "[6, 7]")):
        text3 = re.sub(rf"(name: card1-ddr{k},.*?cores: )\[4, 5, 6, 7\]", rf"\g<1>{cores}", text3)
    assert board_cards(parse_board(text3, "3cards")) == [(0, 1, 2, 3), (4, 5), (6, 7)]
    # cores that share a memory are one FPGA even without links between them
    shared = parse_board(text3.replace("cores: [6, 7]", "cores: [4, 5, 6, 7]", 1), "shared")
    assert board_cards(shared) == [(0, 1, 2, 3), (4, 5, 6, 7)]


def _cards_design(tmp_path, model, strategy="even"):
    g = canonicalize(load_model(models.save(models.ALL[model](seed=0), tmp_path / "m.onnx")))
    board = load_board("2x-u250")
    plan = make_plan(g, board, strategy=strategy)
    x = np.zeros(g.shape(g.inputs[0]), np.float32)
    files, design = generate(quantize(g), plan, board, {g.inputs[0]: x})
    return board, plan, files, design


@pytest.mark.parametrize("model", ["resnet8", "lenet", "residual_block"])
def test_two_cards_one_link_config_each(tmp_path, model):
    """2x-u250: link_card<d>.cfg names only card d's cores, each SLR of the card at most once
    (the plan's), banks DDR[0..3] of the card's own memories, only streams inside the card;
    every stream between the cards is a hook on both cards naming both ports."""
    board, plan, files, design = _cards_design(tmp_path, model)
    cards = board_cards(board)
    card_of = {k: d for d, c in enumerate(cards) for k in c}
    used = sorted({card_of[c.id] for c in design.cores})
    assert "vitis/link.cfg" not in files
    assert sorted(p for p in files if p.startswith("vitis/link")) == [f"vitis/link_card{d}.cfg" for d in used]
    kernels = _kernels(files)
    by_name = {c.name: c for c in design.cores}
    hooks: dict[str, dict[str, tuple]] = {}
    n_sc = 0
    for d in used:
        text = files[f"vitis/link_card{d}.cfg"].decode()
        link = _cfg(text)
        mine = {c.name for c in design.cores if card_of[c.id] == d}
        cus = {}
        for nk in link["nk"]:
            k, n, cu = nk.split(":")
            assert k in mine and n == "1" and cu == f"{k}_1"
            cus[cu] = k
        assert set(cus.values()) == mine
        slrs = [s.split(":") for s in link["slr"]]
        assert len(slrs) == len(mine) and len({s for _, s in slrs}) == len(slrs) <= 4
        for cu, s in slrs:
            assert s == f"SLR{board.cores[by_name[cus[cu]].id].slr}"
        mem_ports = {(k, p) for k in mine for p, (kind, _) in kernels[k].items() if kind == "m_axi"}
        sp = [s.split(":") for s in link.get("sp", [])]
        assert {(cus[port.split(".")[0]], port.split(".")[1]) for port, _ in sp} == mem_ports
        assert all(re.fullmatch(r"DDR\[[0-3]\]", bank) for _, bank in sp)
        for s in link.get("stream_connect", []):
            src, dst, _ = s.split(":")
            assert src.split(".")[0] in cus and dst.split(".")[0] in cus, s
            n_sc += 1
        for ident, direction, port, bits, frame_bits, peer, peer_card, net in HOOK.findall(text):
            hooks.setdefault(ident, {})[direction] = (d, port, peer, int(peer_card), int(bits), int(frame_bits))
            assert port.split(".")[0] in cus and peer.split(".")[0] not in cus
            assert "333 bits/cycle, latency 300 cycles" in net
    cross = {i: v for i, v in design.links.items() if card_of[v[1]] != card_of[v[2]]}
    assert n_sc + len(cross) == len(design.links)
    assert set(hooks) == set(cross)
    for ident, (lanes, a, b, po, pi) in cross.items():
        d_out, p_out, peer_out, pc_out, bits, fbits = hooks[ident]["out"]
        d_in, p_in, peer_in, pc_in, bits_in, fbits_in = hooks[ident]["in"]
        assert (d_out, pc_out, d_in, pc_in) == (card_of[a], card_of[b], card_of[b], card_of[a])
        assert p_out == peer_in == f"core{a}_1.{po}" and p_in == peer_out == f"core{b}_1.{pi}"
        elems = next(p.elems for c in design.cores for p in c.ports if p.name == po)
        assert bits == bits_in == 8 * lanes and fbits == fbits_in == 8 * elems


def test_two_cards_memory_banks_per_card(tmp_path):
    """An off-chip buffer inside card 1 and the output port of card 1 use card 1's own DDR,
    numbered from DDR[0] (the whole board's order would say DDR[4..7])."""
    board, plan, files, design = _cards_design(tmp_path, "resnet8")
    text = files["vitis/link_card1.cfg"].decode()
    banks = [s.split(":")[1] for s in _cfg(text)["sp"]]
    assert banks and set(banks) <= {"DDR[0]", "DDR[1]", "DDR[2]", "DDR[3]"}
    assert "card 1" in files["vitis/README.md"].decode()


def test_two_cards_makefile(tmp_path):
    """make xclbin builds design_card<d>.xclbin per card with only its cores' .xo and the
    user's network cfg appended; without that cfg it stops at once with one line naming the
    unconnected ports (make -n: nothing runs)."""
    board, plan, files, design = _cards_design(tmp_path, "resnet8")
    make = files["vitis/Makefile"].decode()
    assert "XCLBINS := design_card0.xclbin design_card1.xclbin" in make and "design.xclbin" not in make
    assert shutil.which("make"), "make is a prerequisite (README, Quickstart): install it"
    vitis = tmp_path / "vitis"
    for rel, data in files.items():
        if rel.startswith(("vitis/", "hls/", "host/")):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(data)
    r = subprocess.run(["make", "-n", "xclbin"], cwd=vitis, capture_output=True, text=True)
    assert r.returncode != 0 and "v++" not in r.stdout
    (line,) = r.stderr.strip().splitlines()
    text0 = files["vitis/link_card0.cfg"].decode()
    ports0 = [m[2] for m in HOOK.findall(text0)]
    assert ports0 and "card 0: network ports not connected: " + " ".join(ports0) in line
    (tmp_path / "n0.cfg").write_text("[connectivity]\n")
    (tmp_path / "n1.cfg").write_text("[connectivity]\n")
    (vitis / "net.xo").write_bytes(b"")  # the user's network kernel
    r = subprocess.run(["make", "-n", "xclbin", "NETWORK_CFG_CARD0=../n0.cfg"], cwd=vitis, capture_output=True,
                       text=True)
    assert r.returncode != 0 and "card 1: network ports not connected" in r.stderr
    r = subprocess.run(["make", "-n", "xclbin", "NETWORK_CFG_CARD0=../n0.cfg", "NETWORK_CFG_CARD1=../n1.cfg",
                        "NETWORK_XO_CARD1=net.xo"], cwd=vitis, capture_output=True, text=True)
    links = [ln for ln in r.stdout.splitlines() if " -l " in ln]
    assert r.returncode == 0 and len(links) == 2, r.stderr
    cards = board_cards(board)
    for d, ln in enumerate(links):
        assert f"--config link_card{d}.cfg --config ../n{d}.cfg -o design_card{d}.xclbin" in ln
        xos = re.findall(r"(core\d+)\.xo", ln)
        assert xos == [c.name for c in design.cores if c.id in cards[d]]
    assert links[1].endswith("net.xo") and "net.xo" not in links[0]


def test_single_card_keeps_link_cfg(tmp_path):
    g = canonicalize(load_model(models.save(models.residual_block(seed=0), tmp_path / "m.onnx")))
    board = load_board("u250")
    files, _ = generate(quantize(g), make_plan(g, board, strategy="even"), board,
                        {g.inputs[0]: np.zeros(g.shape(g.inputs[0]), np.float32)})
    assert "vitis/link.cfg" in files and not any("link_card" in p for p in files)
    make = files["vitis/Makefile"].decode()
    assert "design.xclbin: $(XOS) link.cfg" in make and "NETWORK_CFG" not in make
    assert "network hook" not in files["vitis/link.cfg"].decode()


@pytest.mark.csim
@pytest.mark.parametrize("model", ["lenet", "resnet8"])
def test_two_cards_csim(tmp_path, model):
    """csim of a design over both cards of 2x-u250 (the streams between cards direct) passes."""
    board, plan, files, design = _cards_design(tmp_path, model)
    assert len({c.id >= 4 for c in design.cores}) == 2, "the design should use both cards"
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    res = csim.run(tmp_path, tmp_path / "tb", design.outputs, werror=True)
    assert res.ok, res.message


# ---- the HLS configs as v++ reads them (issue 15) -----------------------------------------


def _project(tmp_path, model="residual_block", board_name="u250"):
    g = canonicalize(load_model(models.save(models.ALL[model](seed=0), tmp_path / "m.onnx")))
    board = load_board(board_name)
    files, design = generate(quantize(g), make_plan(g, board, strategy="even"), board,
                             {g.inputs[0]: np.zeros(g.shape(g.inputs[0]), np.float32)})
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    return files, design


def _resolve(cfg_path, value):
    """A path of a cfg as v++ reads it: relative to the cfg's folder (UG1399's examples)."""
    return (cfg_path.parent / value).resolve()


def test_core_cfg_paths_resolve_where_the_makefile_expects(tmp_path):
    """Every path of core<k>.cfg, read from vitis/, names a generated file; the .xo is written
    where the Makefile and v++ -l take it (vitis/core<k>.xo, not ../core<k>.xo); the include
    folder of the flags is hls/; the testbench and the other cores are the cfg's tb files."""
    files, design = _project(tmp_path)
    vitis = tmp_path / "vitis"
    make = files["vitis/Makefile"].decode()
    r = subprocess.run(["make", "-n", "xclbin", "PLATFORM=p"], cwd=vitis, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (link,) = [ln for ln in r.stdout.splitlines() if " -l " in ln]
    linked = {(vitis / x).resolve() for x in re.findall(r"\S+\.xo", link)}
    names = [c.name for c in design.cores]
    for c in names:
        cfg_path = vitis / f"{c}.cfg"
        cfg = _cfg(cfg_path.read_text())
        assert [_resolve(cfg_path, f) for f in cfg["syn.file"]] == [(tmp_path / "hls" / f"{c}.cpp").resolve()]
        tb = [_resolve(cfg_path, f) for f in cfg["tb.file"]]
        assert tb[0] == (tmp_path / "tb" / "tb.cpp").resolve() and all(p.is_file() for p in tb)
        assert sorted(p.stem for p in tb[1:]) == sorted(set(names) - {c})  # the tb calls every core
        (xo,) = cfg["package.output.file"]
        assert _resolve(cfg_path, xo) == (vitis / f"{c}.xo").resolve() and cfg["package.output.format"] == ["xo"]
        assert _resolve(cfg_path, xo) in linked
        for key in ("syn.cflags", "syn.csimflags", "tb.cflags"):
            (flags,) = cfg[key]
            incs = re.findall(r"-I(\S+)", flags)
            assert incs and all(_resolve(cfg_path, i) == (tmp_path / "hls").resolve() for i in incs)
    assert "XOS := $(addsuffix .xo,$(CORES))" in make


def test_core_cfg_language_standard_is_what_csim_checks(tmp_path):
    """The cfgs compile the kernels as C++17 (syn, csim, tb flags), the standard of csim's
    g++ build, which is strict (-pedantic-errors); the kernels need C++17 (C++14 fails), and
    a non-standard construct fails the csim build."""
    files, design = _project(tmp_path)
    std = [f for f in csim.CXXFLAGS if f.startswith("-std=")]
    assert std == ["-std=c++17"] and "-pedantic-errors" in csim.CXXFLAGS
    for c in design.cores:
        cfg = _cfg(files[f"vitis/{c.name}.cfg"].decode())
        for key in ("syn.cflags", "syn.csimflags", "tb.cflags"):
            assert re.findall(r"-std=\S+", cfg[key][0]) == std, key
    hls = tmp_path / "hls"
    src = hls / f"{design.cores[0].name}.cpp"
    ok = subprocess.run(["g++", *csim.CXXFLAGS, "-I", str(hls), "-fsyntax-only", str(src)], capture_output=True,
                        text=True)
    assert ok.returncode == 0, ok.stderr[-2000:]
    old = subprocess.run(["g++", *[f for f in csim.CXXFLAGS if f != "-std=c++17"], "-std=c++14", "-I", str(hls),
                          "-fsyntax-only", str(src)], capture_output=True, text=True)
    assert old.returncode != 0  # fold expressions, [[maybe_unused]]: not C++14
    vla = tmp_path / "vla.cpp"
    vla.write_text('#include "bbgrap.h"\nint f(int n) { int a[n]; a[0] = n; return a[0]; }\n')
    bad = subprocess.run(["g++", *csim.CXXFLAGS, "-I", str(hls), "-fsyntax-only", str(vla)], capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "variable length array" in bad.stderr


def test_vitis_csim_and_cosim_setup(tmp_path):
    """make csim-core<k> / cosim-core<k> run vitis-run on core<k>.sim.cfg: the core's cfg plus
    csim.argv / cosim.argv naming the vectors (tb/) and weight images (hls/) by absolute path."""
    files, design = _project(tmp_path)
    vitis = tmp_path / "vitis"
    c = design.cores[0].name
    r = subprocess.run(["make", f"cosim-{c}", f"csim-{c}", "VITIS_RUN=echo vitis-run", "VPP=echo v++"], cwd=vitis,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"vitis-run --mode hls --cosim --config {c}.sim.cfg --work_dir build/{c}" in r.stdout
    assert f"vitis-run --mode hls --csim --config {c}.sim.cfg --work_dir build/{c}" in r.stdout
    sim = _cfg((vitis / f"{c}.sim.cfg").read_text())
    base = _cfg(files[f"vitis/{c}.cfg"].decode())
    assert all(sim[k] == v for k, v in base.items())
    for key in ("csim.argv", "cosim.argv"):
        (argv,) = sim[key]
        assert argv.split() == [str((tmp_path / "tb").resolve()), str((tmp_path / "hls").resolve())]
