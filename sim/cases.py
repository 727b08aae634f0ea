"""Test cases per module: parameter sets (declared once), constants and inputs from a seed.

``prepare(module, params, seed, folder)`` writes the ``$readmemh`` files and ``case.npz``
into ``folder`` and returns the HDL parameters. Pure numpy: imported by the pytest side
(tests/test_rtl_modules.py) and, through the npz, used by the cocotb testbenches.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import golden
from .memfile import pack, write_mem

FRAMES = 4  # frames per run: frame 0 gives the latency, frames 2.. the steady-state ii


def _i8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-128, 128, size=shape, dtype=np.int64).astype(np.int8)


def _fifo(p: dict, rng, d: Path) -> tuple[dict, dict]:
    x = _i8(rng, FRAMES, p["beats"] * p["WIDTH"] // 8)
    return {"WIDTH": p["WIDTH"], "DEPTH": p["DEPTH"]}, {"x": x}


def _link(p: dict, rng, d: Path) -> tuple[dict, dict]:
    x = _i8(rng, FRAMES, p["beats"] * p["WIDTH"] // 8)
    return {k: p[k] for k in ("WIDTH", "LINK_W", "LATENCY")}, {"x": x}


def _requant(p: dict, rng, d: Path) -> tuple[dict, dict]:
    c, lanes = p["C"], p["LANES"]
    acc = rng.integers(-(2**20), 2**20, size=(FRAMES, p["pix"], c), dtype=np.int64).astype(np.int32)
    rq = golden.random_rq(rng, c, 2**19)
    rqf = write_mem(d / "rq.mem", pack(np.array(golden.rq_words(rq)).reshape(-1, lanes), 32), 32 * lanes)
    return {"C": c, "LANES": lanes, "RQ_FILE": rqf} | golden.rq_params(rq) | _rq_lut(p), {"acc": acc, "rq": rq}


def mvu_files(w: np.ndarray, bias: np.ndarray, rq: np.ndarray, simd: int, pe: int, d: Path) -> dict:
    """The mvu's W_FILE, B_FILE and RQ_FILE for weights [MH, MW] in fold order."""
    mh, mw = w.shape
    sf, nf = mw // simd, mh // pe
    # word nf*SF+sf, lane pe*SIMD+s = W[nf*PE+pe, sf*SIMD+s]
    wl = w.reshape(nf, pe, sf, simd).transpose(0, 2, 1, 3).reshape(nf * sf, pe * simd)
    rqw = np.array(golden.rq_words(rq), dtype=object).reshape(nf, pe)
    return {
        "W_FILE": write_mem(d / "w.mem", pack(wl, 8), 8 * pe * simd),
        "B_FILE": write_mem(d / "b.mem", pack(bias.reshape(nf, pe), 32), 32 * pe),
        "RQ_FILE": write_mem(d / "rq.mem", pack(rqw, 32), 32 * pe),
    } | golden.rq_params(rq)


def _mvu(p: dict, rng, d: Path) -> tuple[dict, dict]:
    mw, mh = p["MW"], p["MH"]
    w = _i8(rng, mh, mw)
    bias = rng.integers(-(2**12), 2**12, size=mh)
    rq = golden.random_rq(rng, mh, 128 * 128 * mw ** 0.5)
    x = _i8(rng, FRAMES, p["nvec"], mw)
    files = mvu_files(w, bias, rq, p["SIMD"], p["PE"], d)
    return {k: p[k] for k in ("MW", "MH", "SIMD", "PE")} | _pack(p) | files, {"x": x, "w": w, "bias": bias, "rq": rq}


def _pack(p: dict) -> dict:
    """``PACK`` when the case packs two output lanes per DSP (mvu.sv, mac2.sv) or puts its
    products in LUTs (``PACK = 0``, lut_mul.sv)."""
    return ({"PACK": p["PACK"]} if p.get("PACK", 1) != 1 else {}) | ({"W_STYLE": p["W_STYLE"]} if "W_STYLE" in p else {}) \
        | _rq_lut(p)


def _rq_lut(p: dict) -> dict:
    """``RQ_LUT`` when the case builds its requantisers' products from LUTs (rq_lane.sv, lut_mulw.sv)."""
    return {"RQ_LUT": 1} if p.get("RQ_LUT", 0) else {}


def _win(p: dict) -> dict:
    full = {"DH": 1, "DW": 1} | p
    # a short window ring; the ring in UltraRAM words of RING_URAM ring words (swg.sv)
    ring = {k: p[k] for k in ("RING", "RING_URAM") if p.get(k, 0)}
    return {k: full[k] for k in ("H", "W", "KH", "KW", "SH", "SW", "DH", "DW", "PT", "PL", "PB", "PR")} | ring


def _windows(x: np.ndarray, p: dict, pad_value: int) -> np.ndarray:
    """[frames, Ho, Wo, KH, KW, C] windows of NHWC frames."""
    w = _win(p)
    return np.stack([golden.windows(f, (w["KH"], w["KW"]), (w["SH"], w["SW"]), (w["DH"], w["DW"]),
                                    (w["PT"], w["PL"], w["PB"], w["PR"]), pad_value) for f in x])


def _conv(p: dict, rng, d: Path) -> tuple[dict, dict]:
    c, co, k, groups = p["C"], p["CO"], p["KH"] * p["KW"], p.get("GROUPS", 1)
    cg, cog = c // groups, co // groups
    zx = int(rng.integers(-10, 11))
    x = _i8(rng, FRAMES, p["H"], p["W"], c)
    wg = _i8(rng, co, p["KH"], p["KW"], cg)  # a grouped conv: each row over its group's channels
    w = np.zeros((co, p["KH"], p["KW"], c), dtype=wg.dtype)  # the dense (block-diagonal) weights
    for q in range(groups):
        w[q * cog:(q + 1) * cog, :, :, q * cg:(q + 1) * cg] = wg[q * cog:(q + 1) * cog]
    bias = rng.integers(-(2**12), 2**12, size=co)
    rq = golden.random_rq(rng, co, 128 * 128 * (k * cg) ** 0.5)
    files = mvu_files(wg.reshape(co, k * cg), bias, rq, p["SIMD"], p["PE"], d)
    hdl = {"C": c, "CO": co, "SIMD": p["SIMD"], "PE": p["PE"], "PAD_VAL": zx} | _win(p) | _pack(p) | files
    if groups > 1:
        hdl["GROUPS"] = groups
    if p.get("WIDE"):
        hdl["WIDE"] = 1
    if p.get("M", 1) > 1:  # pixel copies
        hdl["M"] = p["M"]
    hdl |= {k: p[k] for k in ("PX", "PO") if p.get(k, 1) > 1}  # pixels per input / output beat
    return hdl, {"win": _windows(x, p, zx), "x": x, "w": w, "bias": bias, "rq": rq}


def _uniform(bias, rq) -> tuple:
    """Channel 0's bias and requantiser for every channel (``UNIFORM = 1``: an average pool
    of a per-tensor activation, as gen writes it)."""
    return np.full_like(bias, bias[0]), np.repeat(rq[:1], len(rq), axis=0)


def _vector_files(w, bias, rq, c: int, lanes: int, d: Path, j: int = 1, uniform: bool = False) -> dict:
    """Memories of a vector unit; weights ``w[K, C]`` as words ``kb*C/lanes + g`` of ``j`` taps.
    ``uniform``: channel 0's bias and requantiser as module constants, no memories."""
    cg = c // lanes
    out = {}
    if w is not None:
        words = w.reshape(-1, j, cg, lanes).transpose(0, 2, 1, 3).reshape(-1, j * lanes)
        out["W_FILE"] = write_mem(d / "w.mem", pack(words, 8), 8 * j * lanes)
    if bias is not None and uniform:
        out |= {"UNIFORM": 1, "B_CONST": int(bias[0]), "RQ_CONST": f"32'h{golden.rq_words(rq[:1])[0]:08x}"}
        out |= golden.rq_params(rq)
    elif bias is not None:
        out["B_FILE"] = write_mem(d / "b.mem", pack(bias.reshape(cg, lanes), 32), 32 * lanes)
        rqw = np.array(golden.rq_words(rq), dtype=object).reshape(cg, lanes)
        out["RQ_FILE"] = write_mem(d / "rq.mem", pack(rqw, 32), 32 * lanes)
        out |= golden.rq_params(rq)
    return out


def _pool(mode: str) -> Callable:
    def prep(p: dict, rng, d: Path) -> tuple[dict, dict]:
        c, k = p["C"], p["KH"] * p["KW"]
        zx = -128 if mode == "max" else int(rng.integers(-10, 11))
        x = _i8(rng, FRAMES, p["H"], p["W"], c)
        w = _i8(rng, k, c) if mode == "mac" else None
        bias = None if mode == "max" else rng.integers(-(2**10), 2**10, size=c)
        rq = None if mode == "max" else golden.random_rq(rng, c, 128 * (k if mode == "sum" else 128 * k ** 0.5))
        if p.get("UNIFORM"):
            bias, rq = _uniform(bias, rq)
        j = p.get("J", 1)
        hdl = {"C": c, "P": p["P"], "PAD_VAL": zx} | ({"J": j} if j > 1 else {}) | _win(p) | \
            (_pack(p) if mode == "mac" else _rq_lut(p)) | _vector_files(w, bias, rq, c, p["P"], d, j,
                                                                         bool(p.get("UNIFORM")))
        arrays = {"win": _windows(x, p, zx), "x": x} | (
            {} if mode == "max" else {"bias": bias, "rq": rq}) | ({"w": w} if w is not None else {})
        return hdl, arrays
    return prep


def _gap(p: dict, rng, d: Path) -> tuple[dict, dict]:
    c = p["C"]
    x = _i8(rng, FRAMES, p["H"], p["W"], c)
    bias = rng.integers(-(2**10), 2**10, size=c)
    rq = golden.random_rq(rng, c, 128 * p["H"] * p["W"])
    if p.get("UNIFORM"):
        bias, rq = _uniform(bias, rq)
    hdl = {"C": c, "P": p["P"], "H": p["H"], "W": p["W"]} | _rq_lut(p) | \
        _vector_files(None, bias, rq, c, p["P"], d, uniform=bool(p.get("UNIFORM")))
    return hdl, {"x": x, "bias": bias, "rq": rq}


def _binary(p: dict, rng, d: Path) -> tuple[dict, dict]:
    hdl = {k: v for k, v in p.items() if k.isupper()}
    a = _i8(rng, FRAMES, p["pix"], p.get("C0", p.get("c", 0)))
    b = _i8(rng, FRAMES, p["pix"], p.get("C1", p.get("c", 0)))
    return hdl, {"a": a, "b": b}


def _lut(p: dict, rng, d: Path) -> tuple[dict, dict]:
    table = _i8(rng, 256)
    f = write_mem(d / "lut.mem", pack(table.reshape(256, 1), 8), 8)
    return {"P": p["P"], "LUT_FILE": f}, {"x": _i8(rng, FRAMES, p["pix"], p["C"]), "table": table}


def _affine(p: dict, rng, d: Path) -> tuple[dict, dict]:
    """bbgrap_hls.quant's affine form: signed mult (|mult| < 2^24), int64 bias, per-channel
    shift; one channel at each of the multiplier's extremes, outputs spanning the int8 range."""
    c, lanes = p["C"], p["P"]
    s = rng.integers(8, 25, size=c)
    mult = rng.integers(-(2 ** (s - 1)), 2 ** (s - 1))
    bias = rng.integers(-(2 ** (s + 6)), 2 ** (s + 6))
    s[0], mult[0], bias[0] = 32, -(2**24 - 1), -(2**38)
    s[-1], mult[-1], bias[-1] = 31, 2**24 - 1, 2**37
    zp_out = rng.integers(-20, 21, size=c)
    lo = np.where(rng.random(c) < 0.3, zp_out, -128)
    hi = np.full(c, 127)
    cg = c // lanes
    cfg = [(int(a) & 0xFF) << 24 | (int(b) & 0xFF) << 16 | (int(e) & 0xFF) << 8 | (int(f) & 0xFF)
           for a, b, e, f in zip(s, zp_out, lo, hi, strict=True)]
    hdl = {"C": c, "P": lanes, "ZP_IN": p["ZP_IN"],
           "M_FILE": write_mem(d / "m.mem", pack(mult.reshape(cg, lanes), 32), 32 * lanes),
           "B_FILE": write_mem(d / "b.mem", pack(bias.reshape(cg, lanes), 64), 64 * lanes),
           "RQ_FILE": write_mem(d / "rq.mem", pack(np.array(cfg, np.int64).reshape(cg, lanes), 32), 32 * lanes)}
    arrays = {"x": _i8(rng, FRAMES, p["pix"], c), "mult": mult, "bias": bias, "shift": s, "zp_in": p["ZP_IN"],
              "zp_out": zp_out, "lo": lo, "hi": hi}
    return hdl, arrays


def perm_literal(perm) -> str:
    """A permutation as channel_shuffle's PERM: a sized hex literal, perm[k] at bits 16k."""
    return f"{16 * len(perm)}'h{pack(np.asarray(perm).reshape(1, -1), 16)[0]:0{4 * len(perm)}x}"


def _shuffle(p: dict, rng, d: Path) -> tuple[dict, dict]:
    """A random permutation, or with ``groups`` the one of a grouped-conv channel shuffle."""
    c, lanes = p["C"], p["P"]
    g = p.get("groups")
    perm = np.arange(c).reshape(g, c // g).T.reshape(-1) if g else rng.permutation(c)
    return {"C": c, "P": lanes, "PERM": perm_literal(perm)}, {"x": _i8(rng, FRAMES, p["pix"], c), "perm": perm}


def _repeat(p: dict, rng, d: Path) -> tuple[dict, dict]:
    return {k: v for k, v in p.items() if k.isupper()}, {"x": _i8(rng, FRAMES, p["C"])}


def _frames(p: dict, rng, d: Path) -> tuple[dict, dict]:
    """FRAMES random (H, W, C) frames; the HDL parameters as given (slice, gmaxpool, upsample,
    zeroinsert)."""
    return {k: v for k, v in p.items() if k.isupper()}, {"x": _i8(rng, FRAMES, p["H"], p["W"], p["C"])}


def _bilinear(p: dict, rng, d: Path) -> tuple[dict, dict]:
    """FRAMES random (H, W, C) frames; HO, WO and the tap tables TY, TX (sized literals) of
    ``coord`` at scales ``sh``, ``sw`` as codegen writes them (`rtl_layers.tap_table`)."""
    from bbgrap_hls.codegen.rtl_layers import tap_table
    from bbgrap_hls.ops.resize_linear import taps

    hdl = {k: v for k, v in p.items() if k.isupper()}
    hdl |= {"HO": p["H"] * p["sh"], "WO": p["W"] * p["sw"], "TY": tap_table(taps(p["H"], p["sh"], p["coord"])),
            "TX": tap_table(taps(p["W"], p["sw"], p["coord"]))}
    return hdl, {"x": _i8(rng, FRAMES, p["H"], p["W"], p["C"])}


def lrn_q(p: dict) -> dict:
    """The int8 parameters of an LRN test case (`ops.lrn.LRN.quant` at the case's scales)."""
    from bbgrap_hls.ir import Node
    from bbgrap_hls.ops import get_op

    node = Node("lrn", "LRN", ["x"], ["y"], {"size": p["size"], "alpha": p["alpha"], "beta": p["beta"],
                                              "bias": p["bias"]})
    return get_op("LRN").quant(node, p["s_x"], p["zp_in"], p["s_y"], p["zp_out"], p["C"])


def _lrn(p: dict, rng, d: Path) -> tuple[dict, dict]:
    """FRAMES random pixels; the factor table of `lrn_q` as TAB_FILE."""
    q = lrn_q(p)
    t = np.asarray(q["table"], np.int64)
    f = write_mem(d / "tab.mem", pack(t.reshape(-1, 1), 16), 16)
    hdl = {"C": p["C"], "P": p["P"], "BEFORE": q["before"], "AFTER": q["after"], "MBITS": q["mbits"],
           "SHIFT": q["shift"], "ZP_IN": q["zp_in"], "ZP_OUT": q["zp_out"], "ENTRIES": len(t), "TAB_FILE": f}
    return hdl, {"x": _i8(rng, FRAMES, p["pix"], p["C"])}


def _plain(p: dict, rng, d: Path) -> tuple[dict, dict]:
    hdl, x = {k: v for k, v in p.items() if k.isupper()}, _i8(rng, FRAMES, p["bytes"])
    if "NF" not in p:
        return hdl, {"x": x}
    # the trimming converter (padded folds): each pixel's NF beats of IN lanes keep
    # (NF-1)·IN + LAST channels, the padding lanes of its last beat (random here) are dropped
    nf, lanes = p["NF"], p["IN"]
    co = (nf - 1) * lanes + p["LAST"]
    y = np.asarray(x).reshape(FRAMES, -1, nf * lanes)[:, :, :co].reshape(FRAMES, -1)
    return hdl, {"x": x, "y": y}


# parameter sets per module: HDL parameters in upper case, test sizes in lower case
PARAMS: dict[str, list[dict]] = {
    "fifo": [{"WIDTH": 8, "DEPTH": 4, "beats": 20}, {"WIDTH": 24, "DEPTH": 33, "beats": 50}],
    "link": [{"WIDTH": 16, "LINK_W": 16, "LATENCY": 3, "beats": 24},
             {"WIDTH": 32, "LINK_W": 8, "LATENCY": 12, "beats": 16}],
    "requant": [{"C": 4, "LANES": 1, "pix": 6}, {"C": 12, "LANES": 4, "pix": 5},
                # LUT requantisers (rq_lane.sv RQ_LUT = 1, lut_mulw.sv): no DSP
                {"C": 12, "LANES": 4, "pix": 5, "RQ_LUT": 1}],
    "mvu": [{"MW": 8, "MH": 4, "SIMD": 2, "PE": 2, "nvec": 3},
            {"MW": 12, "MH": 6, "SIMD": 12, "PE": 1, "nvec": 2},
            {"MW": 16, "MH": 8, "SIMD": 4, "PE": 8, "nvec": 3},
            {"MW": 4, "MH": 3, "SIMD": 1, "PE": 3, "nvec": 4},
            # DSP packing (mac2.sv): lane pairs per DSP; an odd PE's last lane alone
            {"MW": 8, "MH": 4, "SIMD": 2, "PE": 2, "PACK": 2, "nvec": 3},
            {"MW": 16, "MH": 6, "SIMD": 4, "PE": 3, "PACK": 2, "nvec": 2},
            # LUT multipliers (lut_mul.sv): no DSP for the products
            {"MW": 16, "MH": 6, "SIMD": 4, "PE": 3, "PACK": 0, "nvec": 2},
            # and LUT requantisers (RQ_LUT = 1): no DSP at all
            {"MW": 16, "MH": 6, "SIMD": 4, "PE": 3, "PACK": 0, "RQ_LUT": 1, "nvec": 2}],
    "conv": [{"C": 4, "CO": 4, "SIMD": 2, "PE": 2, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
              "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 2, "CO": 2, "SIMD": 2, "PE": 2, "H": 7, "W": 6, "KH": 3, "KW": 2, "SH": 2, "SW": 2,
              "PT": 1, "PL": 0, "PB": 0, "PR": 1},
             {"C": 8, "CO": 4, "SIMD": 4, "PE": 1, "H": 3, "W": 3, "KH": 1, "KW": 1, "SH": 1, "SW": 1,
              "PT": 0, "PL": 0, "PB": 0, "PR": 0},
             # parallel window: SIMD = C*J, J taps per beat (J = 3, then the whole window)
             {"C": 3, "CO": 4, "SIMD": 9, "PE": 2, "H": 6, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
              "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 2, "CO": 2, "SIMD": 12, "PE": 2, "H": 7, "W": 6, "KH": 3, "KW": 2, "SH": 2, "SW": 2,
              "PT": 1, "PL": 0, "PB": 0, "PR": 1},
             # pixel copies (M mvus behind one swg, output CO lanes a pixel): N = Ho·Wo a multiple
             # of M, then not (N = 25, M = 3; N = 9, M = 2 on the 1x1 path); parallel window; stride 2
             {"C": 4, "CO": 12, "SIMD": 4, "PE": 3, "M": 2, "H": 6, "W": 6, "KH": 3, "KW": 3, "SH": 1,
              "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 12, "SIMD": 4, "PE": 3, "M": 3, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1,
              "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 12, "SIMD": 12, "PE": 2, "M": 3, "H": 7, "W": 6, "KH": 3, "KW": 3, "SH": 1,
              "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 12, "SIMD": 2, "PE": 6, "M": 2, "H": 7, "W": 7, "KH": 3, "KW": 3, "SH": 2,
              "SW": 2, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 8, "CO": 8, "SIMD": 4, "PE": 2, "M": 2, "H": 3, "W": 3, "KH": 1, "KW": 1, "SH": 1,
              "SW": 1, "PT": 0, "PL": 0, "PB": 0, "PR": 0},
             # DSP packing (mac2.sv): plain; with a parallel window and pixel copies
             {"C": 4, "CO": 4, "SIMD": 2, "PE": 2, "PACK": 2, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
              "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 12, "SIMD": 12, "PE": 2, "M": 3, "PACK": 2, "H": 7, "W": 6, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             # LUT multipliers (lut_mul.sv)
             {"C": 4, "CO": 4, "SIMD": 2, "PE": 2, "PACK": 0, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
              "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             # and LUT requantisers (RQ_LUT = 1), with pixel copies
             {"C": 4, "CO": 12, "SIMD": 4, "PE": 3, "M": 2, "PACK": 0, "RQ_LUT": 1, "H": 6, "W": 6, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             # paired input (PX = 2: two pixels a beat, the swg writes a padded column pair a
             # cycle) and paired output (PO = 2: two halves, M/2 copies each, two pixels a beat):
             # (a) one mvu a half; (b) two copies a half; (c) PO = 1, stride 2; (d) the writer's
             # pace with a parallel window: PL odd at stride 2 (writer bound), PL = 0 (pad 0)
             # with PO = 2, PL odd with Wp odd; a 1x1 conv (a window generator with PX = 2)
             {"C": 4, "CO": 4, "SIMD": 4, "PE": 2, "M": 2, "PX": 2, "PO": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 12, "SIMD": 4, "PE": 3, "M": 4, "PX": 2, "PO": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 4, "SIMD": 4, "PE": 2, "PX": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 2, "SW": 2, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 4, "SIMD": 36, "PE": 4, "PX": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 2, "SW": 2, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 4, "SIMD": 36, "PE": 2, "M": 2, "PX": 2, "PO": 2, "H": 6, "W": 10, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 0, "PL": 0, "PB": 0, "PR": 0},
             {"C": 4, "CO": 4, "SIMD": 12, "PE": 4, "PX": 2, "H": 5, "W": 8, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 0, "PR": 0},
             {"C": 4, "CO": 8, "SIMD": 4, "PE": 4, "M": 2, "PX": 2, "PO": 2, "H": 4, "W": 8, "KH": 1, "KW": 1,
              "SH": 1, "SW": 1, "PT": 0, "PL": 0, "PB": 0, "PR": 0},
             # PO = 2: three copies a half with a parallel window (J = 3); the writer's pace with
             # PL odd (one fold); Ho*Wo/2 = 15 pixels a half, not a multiple of its 2 copies;
             # dilation 2 (every tap of a window in the same column bank)
             {"C": 4, "CO": 12, "SIMD": 12, "PE": 3, "M": 6, "PX": 2, "PO": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 4, "SIMD": 36, "PE": 4, "M": 2, "PX": 2, "PO": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 8, "SIMD": 4, "PE": 2, "M": 4, "PX": 2, "PO": 2, "H": 5, "W": 6, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 4, "CO": 8, "SIMD": 4, "PE": 4, "M": 4, "PX": 2, "PO": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "DH": 2, "DW": 2, "PT": 2, "PL": 2, "PB": 2, "PR": 2},
             # PX = 2, PO = 1 with pixel copies (one window generator, three copies)
             {"C": 4, "CO": 12, "SIMD": 4, "PE": 3, "M": 3, "PX": 2, "H": 6, "W": 8, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             # a short window ring (swg.sv RING = KHE + SH: 4 rows for 6), with a parallel window
             {"C": 4, "CO": 4, "SIMD": 36, "PE": 4, "RING": 4, "H": 6, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
              "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             # grouped (GROUPS: the window group by group, a new vector at each group's first
             # fold): two folds a group; a parallel window over a group's 2 channels (J = 3),
             # one fold a group; a 1x1 (no window generator), two folds a group; stride 2
             {"C": 8, "CO": 8, "SIMD": 2, "PE": 2, "GROUPS": 2, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1,
              "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 8, "CO": 12, "SIMD": 6, "PE": 3, "GROUPS": 4, "H": 6, "W": 5, "KH": 3, "KW": 3, "SH": 1,
              "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 8, "CO": 8, "SIMD": 2, "PE": 1, "GROUPS": 4, "H": 3, "W": 3, "KH": 1, "KW": 1, "SH": 1,
              "SW": 1, "PT": 0, "PL": 0, "PB": 0, "PR": 0},
             {"C": 6, "CO": 6, "SIMD": 1, "PE": 2, "GROUPS": 3, "H": 7, "W": 6, "KH": 3, "KW": 2, "SH": 2,
              "SW": 2, "PT": 1, "PL": 0, "PB": 0, "PR": 1},
             # grouped with whole pixels in (WIDE: a group a slice of the word read): stride 2,
             # one tap a beat, two groups a word; a parallel window (J = 3), three groups a word
             {"C": 8, "CO": 8, "SIMD": 4, "PE": 2, "GROUPS": 2, "WIDE": 1, "H": 7, "W": 6, "KH": 3, "KW": 3,
              "SH": 2, "SW": 2, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             {"C": 12, "CO": 6, "SIMD": 12, "PE": 2, "GROUPS": 3, "WIDE": 1, "H": 5, "W": 5, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
             # the ring in UltraRAM words (swg.sv RING_URAM = 4 ring words of 2 lanes a word), the
             # full ring, grouped: the first grouped conv's twin
             {"C": 8, "CO": 8, "SIMD": 2, "PE": 2, "GROUPS": 2, "RING_URAM": 4, "H": 5, "W": 5, "KH": 3, "KW": 3,
              "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1}],
    "dwconv": [{"C": 4, "P": 2, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
               {"C": 4, "P": 4, "J": 3, "H": 5, "W": 4, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                "PT": 1, "PL": 1, "PB": 1, "PR": 1},
               {"C": 3, "P": 1, "H": 7, "W": 6, "KH": 3, "KW": 3, "SH": 2, "SW": 1, "DH": 2, "DW": 1,
                "PT": 1, "PL": 1, "PB": 0, "PR": 0},
               # LUT multipliers (PACK = 0, lut_mul.sv in the vvu): plain, and with a parallel window
               {"C": 4, "P": 2, "PACK": 0, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                "PT": 1, "PL": 1, "PB": 1, "PR": 1},
               {"C": 4, "P": 4, "J": 3, "PACK": 0, "H": 5, "W": 4, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                "PT": 1, "PL": 1, "PB": 1, "PR": 1},
               # and LUT requantisers (RQ_LUT = 1)
               {"C": 4, "P": 2, "PACK": 0, "RQ_LUT": 1, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                "PT": 1, "PL": 1, "PB": 1, "PR": 1},
               # short window rings (swg.sv RING = KHE + SH): a 5x5 at stride 2 (read bound, 7 rows
               # for 11), a 3x3 with the whole window a beat (write bound, 4 rows for 6)
               {"C": 4, "P": 2, "RING": 7, "H": 7, "W": 6, "KH": 5, "KW": 5, "SH": 2, "SW": 2,
                "PT": 2, "PL": 2, "PB": 2, "PR": 2},
               {"C": 4, "P": 4, "J": 9, "RING": 4, "H": 6, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                "PT": 1, "PL": 1, "PB": 1, "PR": 1},
               # a short ring in UltraRAM words (swg.sv RING_URAM = 8 one-lane ring words a word)
               {"C": 8, "P": 1, "RING": 4, "RING_URAM": 8, "H": 5, "W": 4, "KH": 3, "KW": 3, "SH": 1, "SW": 1,
                "PT": 1, "PL": 1, "PB": 1, "PR": 1}],
    "maxpool": [{"C": 4, "P": 4, "H": 6, "W": 6, "KH": 2, "KW": 2, "SH": 2, "SW": 2, "PT": 0, "PL": 0, "PB": 0, "PR": 0},
                {"C": 2, "P": 1, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 2, "SW": 2, "PT": 1, "PL": 1, "PB": 1, "PR": 1},
                # a short window ring (RING = KHE + SH: 5 rows for 6)
                {"C": 2, "P": 2, "RING": 5, "H": 7, "W": 7, "KH": 3, "KW": 3, "SH": 2, "SW": 2, "PT": 1, "PL": 1,
                 "PB": 1, "PR": 1},
                # and in UltraRAM words (RING_URAM = 4 two-lane ring words a word)
                {"C": 8, "P": 2, "RING": 5, "RING_URAM": 4, "H": 7, "W": 7, "KH": 3, "KW": 3, "SH": 2, "SW": 2,
                 "PT": 1, "PL": 1, "PB": 1, "PR": 1},
                # a parallel window (J taps a beat): a window row a beat at stride 2 (input bound),
                # the whole window a beat at stride 1 with a short ring (swg.sv J read ports)
                {"C": 4, "P": 2, "J": 3, "H": 7, "W": 6, "KH": 3, "KW": 3, "SH": 2, "SW": 2, "PT": 1, "PL": 1,
                 "PB": 1, "PR": 1},
                {"C": 2, "P": 2, "J": 9, "RING": 4, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1, "PT": 1,
                 "PL": 1, "PB": 1, "PR": 1}],
    "avgpool": [{"C": 4, "P": 2, "H": 4, "W": 4, "KH": 2, "KW": 2, "SH": 2, "SW": 2, "PT": 0, "PL": 0, "PB": 0, "PR": 0},
                {"C": 4, "P": 2, "RQ_LUT": 1, "H": 4, "W": 4, "KH": 2, "KW": 2, "SH": 2, "SW": 2, "PT": 0, "PL": 0,
                 "PB": 0, "PR": 0},
                # the full ring in UltraRAM words (RING_URAM = 2: C/P = 2 ring words a word): avgpool-0's twin
                {"C": 4, "P": 2, "RING_URAM": 2, "H": 4, "W": 4, "KH": 2, "KW": 2, "SH": 2, "SW": 2, "PT": 0, "PL": 0,
                 "PB": 0, "PR": 0},
                # one bias' and requantiser for every channel as module constants (UNIFORM = 1, as gen writes)
                {"C": 6, "P": 3, "UNIFORM": 1, "H": 5, "W": 5, "KH": 3, "KW": 3, "SH": 1, "SW": 1, "PT": 1, "PL": 1,
                 "PB": 1, "PR": 1},
                # a parallel window: two taps a beat of a 2x2 (J = 2), as gen writes it (UNIFORM = 1)
                {"C": 4, "P": 2, "J": 2, "UNIFORM": 1, "H": 6, "W": 4, "KH": 2, "KW": 2, "SH": 2, "SW": 2, "PT": 0,
                 "PL": 0, "PB": 0, "PR": 0}],
    "gap": [{"C": 8, "P": 2, "H": 4, "W": 4}, {"C": 3, "P": 3, "H": 2, "W": 3}, {"C": 8, "P": 2, "H": 4, "W": 4, "RQ_LUT": 1},
            {"C": 12, "P": 4, "H": 3, "W": 3, "UNIFORM": 1}, {"C": 8, "P": 2, "H": 4, "W": 4, "RQ_LUT": 1, "UNIFORM": 1}],
    "add": [{"P": 2, "OP": 0, "c": 4, "pix": 6, "MA": 3 << 19, "MB": 5 << 18, "ZA": 3, "ZB": -7, "ZY": -2, "S": 20,
             "LO": -128, "HI": 127},
            # a Sub: negative MB; one lane
            {"P": 1, "OP": 0, "c": 3, "pix": 5, "MA": 1 << 18, "MB": -(3 << 17), "ZA": -4, "ZB": 6, "ZY": 1,
             "S": 19, "LO": -100, "HI": 120},
            # 24-bit multipliers as the quantiser writes them (MULT_BITS), DSP and LUT products (RQ_LUT = 1,
            # lut_mulw.sv), and a Sub
            {"P": 2, "OP": 0, "c": 4, "pix": 6, "MA": 14654985, "MB": -13550663, "ZA": 3, "ZB": -7, "ZY": -2,
             "S": 23, "LO": -128, "HI": 127},
            {"P": 2, "OP": 0, "c": 4, "pix": 6, "MA": 14654985, "MB": 13550663, "ZA": 3, "ZB": -7, "ZY": -2,
             "S": 23, "LO": -128, "HI": 127, "RQ_LUT": 1},
            {"P": 1, "OP": 0, "c": 3, "pix": 5, "MA": 1 << 18, "MB": -(3 << 17), "ZA": -4, "ZB": 6, "ZY": 1,
             "S": 19, "LO": -100, "HI": 120, "RQ_LUT": 1}],
    "mul": [{"P": 4, "OP": 1, "c": 4, "pix": 6, "M": 1 << 14, "ZA": -5, "ZB": 9, "ZY": 4, "S": 20, "LO": 4, "HI": 127},
            {"P": 4, "OP": 1, "c": 4, "pix": 6, "M": 14654985, "ZA": -5, "ZB": 9, "ZY": 4, "S": 33, "LO": -128,
             "HI": 127},
            {"P": 4, "OP": 1, "c": 4, "pix": 6, "M": 14654985, "ZA": -5, "ZB": 9, "ZY": 4, "S": 33, "LO": -128,
             "HI": 127, "RQ_LUT": 1}],
    "concat": [{"P": 2, "C0": 4, "C1": 2, "pix": 5}],
    "lut_act": [{"P": 3, "C": 6, "pix": 5}],
    "channel_affine": [{"C": 6, "P": 2, "pix": 5, "ZP_IN": -3}, {"C": 4, "P": 4, "pix": 3, "ZP_IN": 17}],
    "dwc": [{"IN": 2, "OUT": 3, "bytes": 36}, {"IN": 4, "OUT": 1, "bytes": 16}],
    # the trimming converter after a matrix-vector unit with padded folds (bytes: frames of
    # NF·IN-lane pixels, padding included)
    "trim": [{"IN": 5, "OUT": 6, "NF": 4, "LAST": 3, "bytes": 60},
             {"IN": 21, "OUT": 24, "NF": 7, "LAST": 18, "bytes": 441},
             {"IN": 3, "OUT": 10, "NF": 4, "LAST": 1, "bytes": 24},
             {"IN": 7, "OUT": 8, "NF": 28, "LAST": 3, "bytes": 392},
             # without padding: the width converters where one lane count divides the other
             {"IN": 2, "OUT": 8, "NF": 4, "LAST": 2, "bytes": 32},
             {"IN": 8, "OUT": 2, "NF": 1, "LAST": 8, "bytes": 32},
             {"IN": 12, "OUT": 3, "NF": 1, "LAST": 12, "bytes": 36}],
    "channel_shuffle": [{"C": 12, "P": 4, "pix": 5, "groups": 3}, {"C": 6, "P": 1, "pix": 4},
                        {"C": 8, "P": 8, "pix": 6}, {"C": 12, "P": 3, "pix": 3}],
    "repeat_pixel": [{"C": 6, "P": 2, "PIXELS": 5}, {"C": 4, "P": 4, "PIXELS": 1},
                     {"C": 8, "P": 1, "PIXELS": 3}],
    # crops (slice.sv): unaligned first channel with rows and columns; aligned channel half; all
    "slice": [{"C": 8, "CO": 4, "C0": 3, "P": 2, "H": 5, "W": 4, "Y0": 1, "X0": 1, "HO": 3, "WO": 2},
              {"C": 12, "CO": 4, "C0": 8, "P": 4, "H": 2, "W": 3, "Y0": 0, "X0": 0, "HO": 2, "WO": 3},
              {"C": 6, "CO": 6, "C0": 0, "P": 3, "H": 3, "W": 3, "Y0": 0, "X0": 0, "HO": 3, "WO": 3}],
    "gmaxpool": [{"C": 8, "P": 2, "H": 3, "W": 4}, {"C": 3, "P": 3, "H": 2, "W": 2}],
    "upsample": [{"C": 4, "P": 2, "H": 3, "W": 2, "SH": 2, "SW": 2}, {"C": 3, "P": 1, "H": 2, "W": 3, "SH": 3, "SW": 1},
                 {"C": 6, "P": 6, "H": 1, "W": 1, "SH": 1, "SW": 2}],
    "depth2space": [{"C": 8, "P": 2, "H": 3, "W": 2, "B": 2}, {"C": 18, "P": 1, "H": 2, "W": 3, "B": 3},
                    {"C": 16, "P": 4, "H": 1, "W": 2, "B": 2}],
    "zeroinsert": [{"C": 4, "P": 2, "H": 3, "W": 2, "SH": 2, "SW": 2, "PT": 0, "PL": 0, "PB": 0, "PR": 0, "ZP": -3},
                   {"C": 3, "P": 1, "H": 2, "W": 3, "SH": 3, "SW": 4, "PT": 0, "PL": 0, "PB": 1, "PR": 2, "ZP": 5},
                   {"C": 6, "P": 3, "H": 2, "W": 2, "SH": 1, "SW": 2, "PT": 1, "PL": 2, "PB": 0, "PR": 1, "ZP": 0}],
    "bilinear": [{"C": 4, "P": 2, "H": 3, "W": 2, "sh": 2, "sw": 2, "coord": "half_pixel"},
                 {"C": 3, "P": 1, "H": 3, "W": 3, "sh": 2, "sw": 3, "coord": "align_corners"},
                 {"C": 4, "P": 4, "H": 1, "W": 2, "sh": 4, "sw": 4, "coord": "asymmetric"},
                 {"C": 2, "P": 1, "H": 4, "W": 4, "sh": 4, "sw": 2, "coord": "align_corners"}],
    # LRN (lrn.sv): AlexNet's size 5 folded to 2 beats a pixel; an even window at one lane; a
    # window wider than the pixel at full width; size 3 at 3 beats
    "lrn": [{"C": 8, "P": 4, "pix": 5, "size": 5, "alpha": 0.5, "beta": 0.75, "bias": 1.0, "s_x": 0.05,
             "zp_in": -100, "s_y": 0.02, "zp_out": -5},
            {"C": 6, "P": 1, "pix": 4, "size": 4, "alpha": 1e-2, "beta": 0.6, "bias": 2.0, "s_x": 0.4,
             "zp_in": 7, "s_y": 0.3, "zp_out": 3},
            {"C": 4, "P": 4, "pix": 6, "size": 7, "alpha": 1.0, "beta": 1.0, "bias": 1.0, "s_x": 0.02,
             "zp_in": 0, "s_y": 0.01, "zp_out": 0},
            {"C": 12, "P": 4, "pix": 3, "size": 3, "alpha": 1e-4, "beta": 0.75, "bias": 2.0, "s_x": 1.0,
             "zp_in": -128, "s_y": 0.5, "zp_out": -128}],
    "offchip_buffer": [{"LANES": 2, "FRAME_BEATS": 12, "BYTES_PER_CYCLE": 4, "NFRAMES": 3, "BARRIER": 7,
                        "bytes": 24},
                       {"LANES": 4, "FRAME_BEATS": 8, "BYTES_PER_CYCLE": 4, "NFRAMES": 2, "bytes": 32}],
}

def _stage(p: dict, rng, d: Path) -> tuple[dict, dict]:
    """The DDR frame stage (ddr_stage.sv): ``frames`` random frames of FRAME_BEATS beats of LANES
    lanes; BASE as a sized literal (a 64-bit parameter)."""
    hdl = {k: v for k, v in p.items() if k.isupper()} | {"BASE": f"64'h{p['BASE']:x}"}
    return hdl, {"x": _i8(rng, p["frames"], p["FRAME_BEATS"] * p["LANES"])}


# DDR frame stage cases (tests/test_rtl_stage.py, sim/test_ddr_stage.py; not in PARAMS: their
# testbench runs three modes of its own). HDL parameters upper case; ``lat`` the memory's latency,
# ``rate`` its bytes per cycle per direction (None: a beat per cycle), ``frames`` per run (6: ii over
# the intervals 1..5, as the model).
STAGE_PARAMS: dict[str, dict] = {
    # a beat per cycle; a frame of 40 beats in bursts of 16, 16, 8 (not a multiple of BURST)
    "fast": {"LANES": 4, "FRAME_BEATS": 40, "DATA_W": 32, "BASE": 0x10000, "REGION_BYTES": 4096,
             "REGIONS": 2, "BURST": 16, "lat": 20, "rate": None, "frames": 6},
    # a slow memory: 4 bytes per cycle on 8-byte beats (a beat every 2 cycles each way)
    "slow": {"LANES": 8, "FRAME_BEATS": 48, "DATA_W": 64, "BASE": 0x4000, "REGION_BYTES": 4096,
             "REGIONS": 2, "BURST": 8, "lat": 12, "rate": 4, "frames": 6},
    # 24 lanes in 32-byte beats (not a power of two), a frame of 150 beats crossing 4 KB at beat
    # 128: bursts 48, 48, 32 | 22
    "wide_4k": {"LANES": 24, "FRAME_BEATS": 150, "DATA_W": 256, "BASE": 0, "REGION_BYTES": 8192,
                "REGIONS": 2, "BURST": 48, "lat": 30, "rate": None, "frames": 6},
    # 5 lanes in a 64-bit beat, a fractional period (6 bytes per cycle: 4/3 cycles a beat), three regions
    "lanes5_frac": {"LANES": 5, "FRAME_BEATS": 30, "DATA_W": 64, "BASE": 0x2000, "REGION_BYTES": 4096,
                    "REGIONS": 3, "BURST": 8, "lat": 9, "rate": 6, "frames": 6},
    # a long latency behind the default output FIFO (2·BURST + 128 = 160 beats): no bubble in deliver
    "latency100": {"LANES": 4, "FRAME_BEATS": 200, "DATA_W": 32, "BASE": 0, "REGION_BYTES": 4096,
                   "REGIONS": 2, "BURST": 16, "lat": 100, "rate": None, "frames": 6},
}

PREPARE: dict[str, Callable] = {
    "fifo": _fifo, "link": _link, "requant": _requant, "mvu": _mvu, "conv": _conv,
    "dwconv": _pool("mac"), "maxpool": _pool("max"), "avgpool": _pool("sum"), "gap": _gap,
    "add": _binary, "mul": _binary, "concat": _binary, "lut_act": _lut, "channel_affine": _affine,
    "dwc": _plain, "trim": _plain, "offchip_buffer": _plain, "channel_shuffle": _shuffle, "repeat_pixel": _repeat,
    "slice": _frames, "gmaxpool": _frames, "upsample": _frames, "zeroinsert": _frames, "depth2space": _frames,
    "bilinear": _bilinear, "lrn": _lrn, "ddr_stage": _stage,
}

# RTL files each toplevel needs (besides its own)
DEPS: dict[str, list[str]] = {
    "link": ["fifo"], "requant": ["rq_lane", "rq_round", "lut_mulw"],
    "mvu": ["mac2", "lut_mul", "rq_lane", "rq_round", "lut_mulw"],
    "conv": ["swg", "mvu", "mac2", "lut_mul", "rq_lane", "rq_round", "lut_mulw", "dwc", "mmv_split", "mmv_merge"],
    "dwconv": ["swg", "vvu", "lut_mul", "rq_lane", "rq_round", "lut_mulw"],
    "maxpool": ["swg", "vvu", "rq_lane", "rq_round", "lut_mulw"], "avgpool": ["swg", "vvu", "rq_lane", "rq_round", "lut_mulw"],
    "gap": ["vvu", "rq_lane", "rq_round", "lut_mulw"], "add": ["rq_round", "lut_mulw"], "mul": ["rq_round", "lut_mulw"],
    "channel_affine": ["rq_round"], "gmaxpool": ["vvu", "rq_lane", "rq_round", "lut_mulw"],
    "ddr_stage": ["fifo"],
}


def prepare(module: str, params: dict, seed: int, folder: Path) -> dict:
    """Write the case of ``module`` with ``params`` into ``folder``; return the HDL parameters."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    hdl, arrays = PREPARE[module](params, rng, folder)
    np.savez(folder / "case.npz", **arrays)
    return hdl

# toplevel module per tested module name, when they differ
TOP: dict[str, str] = {"add": "eltwise", "mul": "eltwise"}
