"""C++ unit tests of the HLS kernel library (hw/hls) against independent numpy models.

All cases are written into one C++ file that is compiled once with g++ -Werror (the
kernels must be warning-free under -Wall -Wextra) and run once; each test then compares
one case's output bit for bit with numpy. Every case streams two frames so that state
left over from a frame would show.
"""

from __future__ import annotations

import copy
import subprocess
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.codegen.carray import c_array, c_words
from bbgrap_hls.codegen.fold import conv_matrix, fold_channels, fold_dw, fold_mvu, wide_words
from bbgrap_hls.ops.conv import Conv

pytestmark = pytest.mark.csim
FRAMES = 2
RNG_SEED = 1234


def rq(acc, mult, shift, zp, lo=-128, hi=127):
    """Numpy model of the requantisation step (docs/numerics.md)."""
    acc = np.asarray(acc, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    p = acc * np.asarray(mult, dtype=np.int64) + np.where(shift > 0, np.left_shift(1, np.maximum(shift - 1, 0)), 0)
    return np.clip(zp + (p >> shift), lo, hi).astype(np.int8)


def nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(x.shape[0], -1)


@dataclass
class Case:
    name: str
    decls: str
    body: str
    inputs: list[tuple[int, np.ndarray]]  # (lanes, frames x N)
    out_lanes: int
    expected: np.ndarray  # frames x N
    extra_outputs: int = 0
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    banks: bool = False  # weights "w" as PE separate banks instead of one wide memory (what gen declares)
    frames: int = FRAMES  # frames the case streams (its inputs' and expected outputs' rows)

    def cpp(self) -> str:
        # the movers' memory layout: the frames back to back, padded to whole 64-byte words
        ins = "".join(c_array(f"x{i}", np.pad(d.reshape(-1), (0, -d.size % 64))) for i, (_, d) in enumerate(self.inputs))
        consts = "".join(_const(k, v, self.banks) for k, v in self.consts.items())
        n_out = self.expected.shape[1]
        lines = [f"namespace {self.name} {{", self.decls, ins, consts, "int run(const char* path) {"]
        for i, (lanes, d) in enumerate(self.inputs):
            lines.append(f"  bb::Stream<{lanes}> in{i};")
            lines.append(f"  bb::mem_to_stream<{d.shape[1]}, {lanes}>("
                         f"reinterpret_cast<const bb::Word<bb::DDR_BEAT>*>(x{i}), in{i}, {self.frames});")
        lines.append(f"  bb::Stream<{self.out_lanes}> out;")
        lines.append(self.body)
        lines.append(f"  static int8_t y[bb::mem_bytes({n_out}, {self.frames})];")
        lines.append(f"  bb::stream_to_mem<{n_out}, {self.out_lanes}>(out, reinterpret_cast<bb::Word<bb::DDR_BEAT>*>(y), "
                     f"{self.frames});")
        checks = " || ".join([f"!in{i}.empty()" for i in range(len(self.inputs))] + ["!out.empty()"])
        lines.append(f"  if ({checks}) return 3;")
        lines.append(f"  return write_bytes(path, y, {self.frames * n_out});\n}}\n}}  // namespace")
        return "\n".join(lines)


def _const(name: str, v: np.ndarray, banks: bool) -> str:
    """A constant of a case: weight memories ("w") as bb::Word arrays, the rest plain."""
    if name != "w":
        return c_array(name, v)
    # wide (gen's layout): const Word<banks·lanes>[depth]; banks: const Word<lanes>[banks][depth]
    return c_words(name, v) if banks else c_words(name, wide_words(v))


EXTREMES = np.array([-128, -127, -1, 0, 127], dtype=np.int8)  # −128 × −128 = 16384: a packed field's largest


def _conv_case(name, rng, h, w, c, co, k, s, d, pads, simd, pe, group=1, banks=False, extreme=False, frames=FRAMES):
    x = rng.integers(-128, 128, (frames, c, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (co, c // group, k[0], k[1]), dtype=np.int8)
    if extreme:  # operands at the int8 extremes only
        x, wt = rng.choice(EXTREMES, x.shape), rng.choice(EXTREMES, wt.shape)
    bias = rng.integers(-5000, 5000, co).astype(np.int32)
    mult = rng.integers(1 << 14, 1 << 15, co).astype(np.int32)
    shift = rng.integers(18, 24, co).astype(np.int32)
    zin, zout, lo, hi = 3, -7, -100, 120
    attrs = {"pads": pads, "group": group, "strides": s, "dilations": d}
    acc = Conv.conv(x, wt, attrs, pad_value=zin, acc_dtype=np.int64) + bias.reshape(1, -1, 1, 1)
    y = rq(acc, mult.reshape(1, -1, 1, 1), shift.reshape(1, -1, 1, 1), zout, lo, hi)
    decls = (f"struct P {{ static constexpr int H = {h}, W = {w}, C = {c}, CO = {co}, KH = {k[0]}, KW = {k[1]}, "
             f"SH = {s[0]}, SW = {s[1]}, DH = {d[0]}, DW = {d[1]}, PT = {pads[0]}, PL = {pads[1]}, "
             f"PB = {pads[2]}, PR = {pads[3]}, SIMD = {simd}, PE = {pe}, ZP_IN = {zin}, ZP_OUT = {zout}, "
             f"LO = {lo}, HI = {hi}; }};")
    consts = {"w": fold_mvu(conv_matrix(wt, group), pe, simd), "bias": fold_channels(bias, pe),
              "mult": fold_channels(mult, pe), "shift": fold_channels(shift, pe)}
    body = f"  bb::conv2d<P>(in0, out, w, bias, mult, shift, {frames});"
    # simd = C·j (parallel window): the input still streams one pixel (C lanes) per beat
    return Case(name, decls, body, [(min(simd, c), nhwc(x))], pe, nhwc(y), consts=consts, banks=banks, frames=frames)


def _dense_case(name, rng, c, co, simd, pe, banks=False, frames=FRAMES):
    x = rng.integers(-128, 128, (frames, c), dtype=np.int8)
    wt = rng.integers(-128, 128, (co, c), dtype=np.int8)
    bias = rng.integers(-5000, 5000, co).astype(np.int32)
    mult = rng.integers(1 << 14, 1 << 15, co).astype(np.int32)
    shift = np.full(co, 20, dtype=np.int32)
    acc = x.astype(np.int64) @ wt.T.astype(np.int64) + bias
    y = rq(acc, mult, shift, 5)
    decls = (f"struct P {{ static constexpr int C = {c}, CO = {co}, SIMD = {simd}, PE = {pe}, ZP_OUT = 5, "
             "LO = -128, HI = 127; };")
    consts = {"w": fold_mvu(wt, pe, simd), "bias": fold_channels(bias, pe), "mult": fold_channels(mult, pe),
              "shift": fold_channels(shift, pe)}
    return Case(name, decls, f"  bb::dense<P>(in0, out, w, bias, mult, shift, {frames});", [(simd, x)], pe, y,
                consts=consts, banks=banks, frames=frames)


def _loaded_dense_case(name, rng, c, co, simd, pe):
    """A dense layer whose weight RAM (the URAM case) is filled by bb::load_words from a byte
    image laid out as gen writes weights_core<k>.bin (word after word)."""
    case = _dense_case(name, rng, c, co, simd, pe)
    words = wide_words(case.consts.pop("w"))
    depth, lanes = words.shape
    case.consts["img"] = words.reshape(-1)
    case.decls += f"\nstatic bb::Word<{lanes}> wmem[{depth}];"
    case.body = f"  bb::load_words<{lanes}, {depth}>(img, wmem);\n" + case.body.replace("(in0, out, w,", "(in0, out, wmem,")
    return case


def _window_decl(h, w, c, k, s, d, pads, p, extra=""):
    return (f"struct P {{ static constexpr int H = {h}, W = {w}, C = {c}, KH = {k[0]}, KW = {k[1]}, SH = {s[0]}, "
            f"SW = {s[1]}, DH = {d[0]}, DW = {d[1]}, PT = {pads[0]}, PL = {pads[1]}, PB = {pads[2]}, "
            f"PR = {pads[3]}, LANES = {p}{extra}; }};")


def _dw_case(name, rng, h, w, c, k, s, pads, p, j=1, banks=False, extreme=False):
    x = rng.integers(-128, 128, (FRAMES, c, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (c, 1, k[0], k[1]), dtype=np.int8)
    if extreme:  # operands at the int8 extremes only
        x, wt = rng.choice(EXTREMES, x.shape), rng.choice(EXTREMES, wt.shape)
    bias = rng.integers(-3000, 3000, c).astype(np.int32)
    mult = rng.integers(1 << 14, 1 << 15, c).astype(np.int32)
    shift = rng.integers(14, 18, c).astype(np.int32)
    attrs = {"pads": pads, "group": c, "strides": s, "dilations": (1, 1)}
    acc = Conv.conv(x, wt, attrs, pad_value=-2, acc_dtype=np.int64) + bias.reshape(1, -1, 1, 1)
    y = rq(acc, mult.reshape(1, -1, 1, 1), shift.reshape(1, -1, 1, 1), 1)
    decls = _window_decl(h, w, c, k, s, (1, 1), pads, p, f", SIMD = {p * j}, ZP_IN = -2, ZP_OUT = 1, LO = -128, HI = 127")
    consts = {"w": fold_dw(wt, p, p * j), "bias": fold_channels(bias, p), "mult": fold_channels(mult, p),
              "shift": fold_channels(shift, p)}
    return Case(name, decls, "  bb::dwconv2d<P>(in0, out, w, bias, mult, shift, 2);", [(p, nhwc(x))], p, nhwc(y),
                consts=consts, banks=banks)


def _pool_windows(x, k, s, pads, fill):
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill)
    ho = (xp.shape[2] - k[0]) // s[0] + 1
    wo = (xp.shape[3] - k[1]) // s[1] + 1
    out = np.empty(x.shape[:2] + (ho, wo, k[0] * k[1]), dtype=np.int64)
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = xp[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].reshape(x.shape[:2] + (-1,))
    return out


def _maxpool_case(name, rng, h, w, c, k, s, pads, p, j=1):
    x = rng.integers(-128, 128, (FRAMES, c, h, w), dtype=np.int8)
    y = _pool_windows(x, k, s, pads, -1000).max(-1).astype(np.int8)
    extra = f", SIMD = {p * j}" if j > 1 else ""  # a parallel window: j taps a cycle
    return Case(name, _window_decl(h, w, c, k, s, (1, 1), pads, p, extra), "  bb::maxpool2d<P>(in0, out, 2);",
                [(p, nhwc(x))], p, nhwc(y))


def _avgpool_case(name, rng, h, w, c, k, s, pads, p, count_pad, j=1):
    x = rng.integers(-128, 128, (FRAMES, c, h, w), dtype=np.int8)
    zin, zout = 4, -3
    kk = k[0] * k[1]
    mult = np.array([0] + [round((1 << 20) / n) for n in range(1, kk + 1)], dtype=np.int32)
    shift = np.full(kk + 1, 20, dtype=np.int32)
    win = _pool_windows(x, k, s, pads, 1 << 20)
    valid = win != (1 << 20)
    acc = np.where(valid, win - zin, 0).sum(-1)
    n = np.full(acc.shape, kk) if count_pad else valid.sum(-1)
    y = rq(acc, mult[n], shift[n], zout)
    extra = f", ZP_IN = {zin}, ZP_OUT = {zout}, LO = -128, HI = 127, COUNT_PAD = {int(count_pad)}" + (
        f", SIMD = {p * j}" if j > 1 else "")
    return Case(name, _window_decl(h, w, c, k, s, (1, 1), pads, p, extra),
                "  bb::avgpool2d<P>(in0, out, mult, shift, 2);", [(p, nhwc(x))], p, nhwc(y),
                consts={"mult": mult, "shift": shift})


def _gap_case(name, rng, h, w, c, p):
    x = rng.integers(-128, 128, (FRAMES, c, h, w), dtype=np.int8)
    acc = (x.astype(np.int64) - 6).sum((2, 3))
    m, sh = round((1 << 24) / (h * w)), 24
    y = rq(acc, m, sh, -1)
    decls = (f"struct P {{ static constexpr int H = {h}, W = {w}, C = {c}, LANES = {p}, ZP_IN = 6, ZP_OUT = -1, "
             f"LO = -128, HI = 127, MULT = {m}, SHIFT = {sh}; }};")
    return Case(name, decls, "  bb::global_avgpool<P>(in0, out, 2);", [(p, nhwc(x))], p, y)


def _eltwise_cases(rng):
    n, p = 96, 4
    a = rng.integers(-128, 128, (FRAMES, n), dtype=np.int8)
    b = rng.integers(-128, 128, (FRAMES, n), dtype=np.int8)
    cases = []
    ma, mb, sh = 23456, 17000, 15
    acc = (a.astype(np.int64) - 3) * ma + (b.astype(np.int64) + 5) * mb + (1 << (sh - 1))
    y = np.clip(2 + (acc >> sh), -128, 127).astype(np.int8)
    decls = (f"struct P {{ static constexpr int N = {n}, LANES = {p}, ZA = 3, ZB = -5, MA = {ma}, MB = {mb}, "
             f"SHIFT = {sh}, ZP_OUT = 2, LO = -128, HI = 127; }};")
    cases.append(Case("add", decls, "  bb::add2<P>(in0, in1, out, 2);", [(p, a), (p, b)], p, y))
    acc = (a.astype(np.int64) - 3) * (b.astype(np.int64) + 5)
    y = rq(acc, 20000, 22, 2, 0, 127)
    decls = (f"struct P {{ static constexpr int N = {n}, LANES = {p}, ZA = 3, ZB = -5, MULT = 20000, SHIFT = 22, "
             "ZP_OUT = 2, LO = 0, HI = 127; };")
    cases.append(Case("mul", decls, "  bb::mul2<P>(in0, in1, out, 2);", [(p, a), (p, b)], p, y))
    lut = rng.integers(-128, 128, 256, dtype=np.int8)
    decls = f"struct P {{ static constexpr int N = {n}, LANES = {p}; }};"
    cases.append(Case("lut", decls, "  bb::lut_act<P>(in0, out, lut, 2);", [(p, a)], p,
                      lut[a.astype(np.int64) + 128], consts={"lut": lut}))
    c = 12
    mv = rng.integers(-(1 << 23), 1 << 23, c).astype(np.int32)  # signed multipliers
    mv[0] = -(2**24 - 1)  # extremes of the quantiser's range (|mult| < 2^24, MULT_BITS)
    mv[1] = 2**24 - 1
    sv = rng.integers(20, 40, c).astype(np.int32)
    bv = rng.integers(-(1 << 45), 1 << 45, c).astype(np.int64)  # 64-bit bias at the product's scale
    ch = np.arange(n) % c
    prod = (a.astype(np.int64) - 5) * mv[ch].astype(np.int64) + bv[ch]
    y = np.clip(-3 + ((prod + (np.int64(1) << (sv[ch].astype(np.int64) - 1))) >> sv[ch]), -120, 100).astype(np.int8)
    decls = (f"struct P {{ static constexpr int N = {n}, C = {c}, LANES = {p}, ZP_IN = 5, ZP_OUT = -3, "
             "LO = -120, HI = 100; };")
    consts = {"mult": fold_channels(mv, p), "bias": fold_channels(bv, p), "shift": fold_channels(sv, p)}
    cases.append(Case("affine", decls, "  bb::channel_affine<P>(in0, out, mult, bias, shift, 2);",
                      [(p, a)], p, y, consts=consts))
    decls = (f"struct P {{ static constexpr int N = {n}, LANES = {p}, ZP_IN = -9, MULT = 11718750, SHIFT = 24, "
             "ZP_OUT = 4, LO = -128, HI = 127; };")
    cases.append(Case("requant", decls, "  bb::requantize<P>(in0, out, 2);", [(p, a)], p,
                      rq(a.astype(np.int64) + 9, 11718750, 24, 4)))  # 24-bit MULT_BITS
    # plumbing
    cases.append(Case("widen", "", "  bb::width_convert<96, 4, 6, 12>(in0, out, 2);", [(4, a)], 6, a))
    cases.append(Case("narrow", "", "  bb::width_convert<96, 6, 4, 12>(in0, out, 2);", [(6, a)], 4, a))
    perm = rng.permutation(c).astype(np.int16)
    y = a.reshape(FRAMES, -1, c)[:, :, perm].reshape(FRAMES, n)
    cases.append(Case("shuffle", "", "  bb::channel_shuffle<8, 12, 4>(in0, out, perm, 2);", [(4, a)], 4, y,
                      consts={"perm": perm}))
    a2 = rng.integers(-128, 128, (FRAMES, 8 * 8), dtype=np.int8)
    y = np.concatenate([a.reshape(FRAMES, 8, 12), a2.reshape(FRAMES, 8, 8)], axis=2).reshape(FRAMES, -1)
    cases.append(Case("concat", "", "  bb::concat<8, 4, 12, 8>(out, 2, in0, in1);", [(4, a), (4, a2)], 4, y))
    body = ("  bb::Stream<4> t1, t2;\n  bb::fanout<24, 4>(in0, 2, t1, t2);\n"
            "  bb::add2<P>(t1, t2, out, 2);")
    decls = (f"struct P {{ static constexpr int N = {n}, LANES = 4, ZA = 0, ZB = 0, MA = 1, MB = 1, SHIFT = 0, "
             "ZP_OUT = 0, LO = -128, HI = 127; };")
    y = np.clip(2 * a.astype(np.int64), -128, 127).astype(np.int8)
    cases.append(Case("fanout", decls, body, [(4, a)], 4, y))
    img = a.reshape(FRAMES, 2, 4, 12)  # H=2, W=4, C=12
    y = np.pad(img, ((0, 0), (1, 2), (0, 1), (0, 0)), constant_values=-7).reshape(FRAMES, -1)
    cases.append(Case("pad", "", "  bb::pad2d<2, 4, 12, 4, 1, 0, 2, 1>(in0, out, -7, 2);", [(4, a)], 4, y))
    px = a[:, :12]
    y = np.tile(px, (1, 5))
    cases.append(Case("repeat", "", "  bb::repeat_pixel<5, 12, 6>(in0, out, 2);", [(6, px)], 6, y))
    return cases


def all_cases() -> list[Case]:
    rng = np.random.default_rng(RNG_SEED)
    return [
        _conv_case("conv3x3", rng, 6, 5, 4, 8, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, 4),
        _conv_case("conv_stride_pads", rng, 7, 6, 3, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 3, 2),
        _conv_case("conv_dilated", rng, 8, 8, 2, 4, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 1, 1),
        _conv_case("conv1x1", rng, 4, 4, 8, 16, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 8, 16),
        _conv_case("conv_grouped", rng, 5, 5, 4, 6, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 4, 3, group=2),
        _conv_case("conv_stride_gt_k", rng, 9, 9, 2, 2, (2, 2), (3, 3), (1, 1), (0, 0, 0, 0), 2, 1),
        _dense_case("dense", rng, 48, 10, 12, 5),
        _dense_case("dense_full", rng, 8, 4, 8, 4),
        _dw_case("dwconv", rng, 6, 7, 8, (3, 3), (2, 1), (1, 1, 1, 1), 4),
        # parallel window: simd = C·j, j in {1, kw, kh·kw} (conv), simd = p·j (depthwise)
        _conv_case("conv_pw_j1", rng, 6, 5, 3, 4, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 3, 2),
        _conv_case("conv_pw_kw", rng, 7, 6, 3, 4, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 9, 2),
        _conv_case("conv_pw_k", rng, 7, 6, 3, 6, (3, 3), (2, 1), (1, 1), (2, 0, 1, 1), 27, 3),
        _conv_case("conv_pw_rows", rng, 6, 6, 2, 4, (2, 3), (1, 2), (1, 1), (1, 1, 0, 1), 4, 4),
        _conv_case("conv_pw_1ch", rng, 8, 8, 1, 4, (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), 25, 1),
        _dw_case("dwconv_pw_kw", rng, 6, 7, 8, (3, 3), (2, 1), (1, 1, 1, 1), 4, j=3),
        _dw_case("dwconv_pw_k", rng, 5, 5, 4, (3, 3), (1, 2), (0, 1, 1, 0), 2, j=9),
        _maxpool_case("maxpool", rng, 6, 6, 4, (2, 2), (2, 2), (0, 0, 0, 0), 2),
        _maxpool_case("maxpool_pad", rng, 5, 7, 4, (3, 3), (2, 2), (1, 1, 1, 1), 4),
        _avgpool_case("avgpool", rng, 6, 6, 4, (2, 2), (2, 2), (0, 0, 0, 0), 4, False),
        _avgpool_case("avgpool_pad", rng, 5, 5, 2, (3, 3), (1, 1), (1, 1, 1, 1), 1, False),
        _avgpool_case("avgpool_countpad", rng, 5, 5, 2, (3, 3), (2, 2), (1, 1, 1, 1), 2, True),
        # parallel window: j taps a cycle (a window row, the whole window), border counts over j taps
        _maxpool_case("maxpool_pw_kw", rng, 7, 6, 4, (3, 3), (2, 2), (1, 1, 1, 1), 2, j=3),
        _maxpool_case("maxpool_pw_k", rng, 5, 5, 2, (3, 3), (1, 1), (1, 1, 1, 1), 2, j=9),
        _avgpool_case("avgpool_pw_kw", rng, 5, 6, 4, (3, 3), (1, 2), (1, 1, 1, 1), 2, False, j=3),
        _avgpool_case("avgpool_pw_2", rng, 6, 6, 4, (2, 2), (2, 2), (0, 0, 1, 1), 4, False, j=2),
        _gap_case("gap", rng, 4, 3, 8, 2),
        *_eltwise_cases(rng),
        # weights as separate banks (the kernels' other layout)
        _conv_case("conv3x3_banks", rng, 6, 5, 4, 8, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 2, 4, banks=True),
        _conv_case("conv_pw_k_banks", rng, 7, 6, 3, 6, (3, 3), (2, 1), (1, 1), (2, 0, 1, 1), 27, 3, banks=True),
        _dense_case("dense_banks", rng, 48, 10, 12, 5, banks=True),
        _dw_case("dwconv_pw_kw_banks", rng, 6, 7, 8, (3, 3), (2, 1), (1, 1, 1, 1), 4, j=3, banks=True),
        _loaded_dense_case("dense_loaded", rng, 24, 6, 4, 3),
        *pack_cases(),
        *lut_cases(),
        *ring_cases(),
    ]


def _packed(case):
    """``case`` with DSP packing (P::PACK = 2, hw/hls/bb_pack.h): lanes 2i, 2i+1 per product."""
    case.name += "_pack"
    case.decls = case.decls.replace("; };", ", PACK = 2; };")
    return case


def pack_cases() -> list[Case]:
    """conv2d and dense with DSP packing: even and odd PE (the last lane alone), a parallel
    window, weight banks, operands at the int8 extremes (−128 × −128 included)."""
    rng = np.random.default_rng(RNG_SEED + 13)
    p1 = (1, 1, 1, 1)
    return [
        _packed(_conv_case("conv3x3", rng, 6, 5, 4, 8, (3, 3), (1, 1), (1, 1), p1, 2, 4)),
        _packed(_conv_case("conv_extreme", rng, 5, 5, 4, 6, (3, 3), (1, 1), (1, 1), p1, 4, 6, extreme=True)),
        _packed(_conv_case("conv_pw_k", rng, 7, 6, 3, 6, (3, 3), (2, 1), (1, 1), (2, 0, 1, 1), 27, 3)),
        _packed(_conv_case("conv1x1", rng, 4, 4, 8, 16, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 8, 16)),
        _packed(_conv_case("conv3x3_banks", rng, 6, 5, 4, 8, (3, 3), (1, 1), (1, 1), p1, 2, 4, banks=True)),
        _packed(_dense_case("dense", rng, 48, 10, 12, 5)),
        _packed(_dense_case("dense_full", rng, 8, 4, 8, 4)),
    ]


def _lut(case):
    """``case`` with LUT multipliers (P::PACK = 0, hw/hls/bb_pack.h: BIND_OP impl = fabric)."""
    case.name += "_lut"
    case.decls = case.decls.replace("; };", ", PACK = 0; };")
    return case


def lut_cases() -> list[Case]:
    """Depthwise conv (dwconv2d's `mul_lane`) and conv with every product in LUTs: several
    lanes, a parallel window of three and of all nine taps, weight banks, operands at the
    int8 extremes (−128 × −128 included)."""
    rng = np.random.default_rng(RNG_SEED + 17)
    p1 = (1, 1, 1, 1)
    return [
        _lut(_dw_case("dwconv", rng, 6, 7, 8, (3, 3), (2, 1), p1, 4)),
        _lut(_dw_case("dwconv_pw_kw", rng, 6, 7, 8, (3, 3), (2, 1), p1, 4, j=3)),
        _lut(_dw_case("dwconv_pw_k", rng, 5, 5, 4, (3, 3), (1, 2), (0, 1, 1, 0), 2, j=9)),
        _lut(_dw_case("dwconv_pw_kw_banks", rng, 6, 7, 8, (3, 3), (2, 1), p1, 4, j=3, banks=True)),
        _lut(_dw_case("dwconv_extreme", rng, 5, 5, 4, (3, 3), (1, 1), p1, 2, extreme=True)),
        _lut(_conv_case("conv3x3", rng, 6, 5, 4, 8, (3, 3), (1, 1), (1, 1), p1, 2, 4)),
    ]


def _with_fields(case, suffix, fields):
    """A copy of ``case`` named ``name + suffix`` whose struct also declares ``fields``
    (same inputs and expected output)."""
    c = copy.deepcopy(case)
    c.name += suffix
    assert c.decls.count("; };") == 1
    c.decls = c.decls.replace("; };", f", {fields}; }};")
    return c


def ring_cases() -> list[Case]:
    """Window rings in URAM words (P::RING_URAM = R, bb_window.h): each case and its twin
    with R ring words a memory word, the twin bit-exact with the same numpy output. Depthwise
    with a short ring (ROWS = KHE + SH) at one lane, R = 8, one copy and a parallel window of
    three; max and average pools; conv_swg at IN = 1, 2, 4 and 8 (R = 1), with a short ring,
    a parallel window (R = 1) and a grouped conv (block-diagonal weights)."""
    rng = np.random.default_rng(RNG_SEED + 19)
    p1 = (1, 1, 1, 1)
    pairs = [
        (_dw_case("dw_short_l1", rng, 6, 7, 8, (3, 3), (1, 1), p1, 1), "ROWS = 4", 8),
        (_dw_case("dw_short_pw", rng, 7, 6, 16, (3, 3), (2, 1), (1, 0, 1, 1), 1, j=3), "ROWS = 5", 8),
        (_dw_case("dw_l2", rng, 5, 6, 8, (3, 3), (1, 2), p1, 2), "", 4),
        (_maxpool_case("maxpool_l2", rng, 5, 7, 8, (3, 3), (2, 2), p1, 2), "", 4),
        (_maxpool_case("maxpool_short_l2", rng, 6, 6, 8, (2, 2), (2, 2), (0, 0, 0, 0), 2), "ROWS = 4", 4),
        (_avgpool_case("avgpool_l1", rng, 5, 5, 8, (3, 3), (1, 1), p1, 1, False), "", 8),
        (_conv_case("conv_in1", rng, 6, 5, 8, 4, (3, 3), (1, 1), (1, 1), p1, 1, 2), "", 8),
        (_conv_case("conv_in2_short", rng, 7, 6, 8, 6, (3, 3), (2, 1), (1, 1), (2, 0, 1, 1), 2, 3), "ROWS = 5", 4),
        (_conv_case("conv_in4_dilated", rng, 8, 8, 8, 4, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 4, 4), "", 2),
        (_conv_case("conv_in8", rng, 5, 5, 8, 8, (3, 3), (1, 1), (1, 1), p1, 8, 4), "", 1),
        (_conv_case("conv_pw_in2", rng, 6, 5, 2, 4, (3, 3), (1, 1), (1, 1), p1, 6, 2), "", 1),
        (_conv_case("conv_grouped_in2", rng, 5, 5, 8, 6, (3, 3), (1, 1), (1, 1), p1, 2, 3, group=2), "", 4),
    ]
    cases = []
    for case, rows, r in pairs:
        case.name = "ring_" + case.name
        cases.append(case if not rows else _with_fields(case, "", rows))
        cases.append(_with_fields(cases[-1], f"_uram{r}", f"RING_URAM = {r}"))
    return cases


PRELUDE = """// generated by tests/test_hls_kernels.py
#include <cstdio>
#include <cstring>
#include "bbgrap.h"
static int write_bytes(const char* path, const int8_t* p, size_t n) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return 2;
  size_t w = std::fwrite(p, 1, n, f);
  std::fclose(f);
  return w == n ? 0 : 2;
}
"""


def hls_dir() -> Path:
    return Path(str(resources.files("bbgrap_hls.hw") / "hls"))


def run_cases(cases, d: Path, what: str) -> dict:
    """Compile every case's kernel into one g++ -Werror binary in ``d``, run it and return
    ``{name: (case, output bytes)}``."""
    src = [PRELUDE] + [c.cpp() for c in cases]
    main = ["int main(int argc, char** argv) {", "  if (argc < 2) return 2;", "  std::string dir(argv[1]);"]
    main += [f'  if (int e = {c.name}::run((dir + "/{c.name}.bin").c_str())) return e;' for c in cases]
    main += ["  return 0;", "}"]
    (d / "k.cpp").write_text("\n".join(src) + "\n#include <string>\n" + "\n".join(main) + "\n")
    exe = d / "k"
    r = subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(hls_dir()),
                        str(d / "k.cpp"), "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([str(exe), str(d)], capture_output=True, text=True)
    assert r.returncode == 0, f"{what} test binary exited {r.returncode}: {r.stderr[-2000:]}"
    return {c.name: (c, np.fromfile(d / f"{c.name}.bin", dtype=np.int8)) for c in cases}


def threaded_binary(cases, d: Path) -> tuple[Path, dict]:
    """One threaded C simulation binary of every case in ``d`` (``d/t DIR CASE`` runs one and
    prints the run's report, BB_CSIM_REPORT: `proc` lines with each process's counted
    cycles): ``(d, {name: case})``."""
    from bbgrap_hls.codegen.csim import flags

    main = ["int main(int argc, char** argv) {", "  if (argc < 3) return 2;",
            "  const std::string dir(argv[1]), name(argv[2]);", "  int e = 2;"]
    main += [f'  if (name == "{c.name}") e = {c.name}::run((dir + "/{c.name}.bin").c_str());' for c in cases]
    main += ["  BB_CSIM_REPORT()", "  return e;", "}"]
    src = "#define BB_SIM_THREADS_IMPL\n" + PRELUDE + "#include <string>\n" + "\n".join(c.cpp() for c in cases)
    (d / "t.cpp").write_text(src + "\n" + "\n".join(main) + "\n")
    r = subprocess.run(["g++", *flags(werror=True, threads=True, opt="-O1"), "-I", str(hls_dir()), str(d / "t.cpp"),
                        "-o", str(d / "t")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return d, {c.name: c for c in cases}


def assert_bit_exact(name: str, case, got: np.ndarray) -> None:
    want = case.expected.reshape(-1)
    assert got.shape == want.shape
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{name}: first mismatch at {bad[0]}: got {got[bad[0]]}, want {want[bad[0]]}"


_WIN = ("H = 6, W = 6, KH = 3, KW = 3, SH = 1, SW = 1, DH = 1, DW = 1, PT = 1, PL = 1, PB = 1, PR = 1, "
        "ZP_IN = 0, ZP_OUT = 0, LO = -128, HI = 127")


@pytest.mark.parametrize("fields, call, message", [
    ("C = 8, LANES = 2, RING_URAM = 8", "bb::Stream<2> i, o; bb::maxpool2d<P>(i, o, 1);", "RING_URAM must divide C/L"),
    ("C = 6, LANES = 1, RING_URAM = 3", "bb::Stream<1> i, o; bb::maxpool2d<P>(i, o, 1);", "RING_URAM is a power of two"),
    ("C = 4, CO = 4, SIMD = 4, PE = 4, M = 1, PX = 2, PO = 1, RING_URAM = 1",
     "bb::Stream<8> i; bb::Stream<4> o; bb::conv2d_pairs<P>(i, o, w, b, b, b, 1);", "RING_URAM is for one pixel a beat"),
], ids=["not_dividing", "not_pow2", "pairs"])
def test_ring_uram_rejected(tmp_path, fields, call, message):
    """RING_URAM that does not divide C/L (a URAM word across two pixels), that is not a power
    of two, or on the paired-pixel window generator fails to compile with a clear message."""
    src = tmp_path / "bad.cpp"
    src.write_text(f'#include "bbgrap.h"\nstruct P {{ static constexpr int {_WIN}, {fields}; }};\n'
                   "static bb::Word<16> w[9];\nstatic int32_t b[4][1];\n"
                   f"void f() {{ {call} }}\n")
    r = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-I", str(hls_dir()), str(src)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and message in r.stderr, r.stderr[-3000:]


@pytest.fixture(scope="module")
def kernel_outputs(tmp_path_factory):
    return run_cases(all_cases(), tmp_path_factory.mktemp("kernels"), "kernel")


@pytest.mark.parametrize("name", [c.name for c in all_cases()])
def test_kernel_bit_exact(kernel_outputs, name):
    assert_bit_exact(name, *kernel_outputs[name])


def test_fold_dw_layout():
    w = np.arange(4 * 9).reshape(4, 1, 3, 3)
    f = fold_dw(w, lanes=2, simd=6)  # J = 3 window positions per cycle
    assert f.shape == (6, 2 * 3, 1)  # 6 one-lane banks of 6 words
    for ch in range(4):
        for k in range(9):
            cf, p_, kf, j = ch // 2, ch % 2, k // 3, k % 3
            assert f[p_ * 3 + j, cf * 3 + kf, 0] == w[ch, 0, k // 3, k % 3]
    assert (fold_dw(w, 2) == fold_dw(w, 2, 2)).all()


def test_fold_mvu_layout():
    mat = np.arange(6 * 8).reshape(6, 8)
    f = fold_mvu(mat, pe=2, simd=4)
    assert f.shape == (2, 3 * 2, 4)  # PE banks of NF·SF words of SIMD lanes
    wide = wide_words(f)
    assert wide.shape == (3 * 2, 2 * 4)  # one memory: the PE banks side by side in a word
    # lane s of bank pe at address nf*SF+sf holds mat[nf*PE+pe, sf*SIMD+s]
    for co in range(6):
        for k in range(8):
            nf, pe, sf, s = co // 2, co % 2, k // 4, k % 4
            assert f[pe, nf * 2 + sf, s] == mat[co, k]
            assert wide[nf * 2 + sf, pe * 4 + s] == mat[co, k]
