"""Paired pixel streams: the kernel bb::conv2d_pairs (two horizontally adjacent pixels a beat).

Kernel cases are conv2d's cases of tests/test_hls_kernels.py (`_conv_case`) run through
conv2d_pairs (P::PX = 2; P::PO = 2 with P::M copies in two halves, or P::PO = 1): the input
is the same NHWC byte stream at 2·C lanes a beat, the output at 2·CO lanes (PO = 2), CO
lanes (PO = 1, M > 1) or PE lanes (PO = 1, M = 1). All cases are compiled into one g++
-Werror binary and compared bit for bit with the numpy reference; an illegal parameter
combination must not compile (the kernel's static_assert). The same cases built for the
threaded C simulation (bb_dataflow.h: the window stream bounded at its STREAM depth, the two
processes as threads) stay bit-exact and count (BB_PIPELINE) the cycles their loops are
written for.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from tests.test_hls_kernels import (
    FRAMES,
    PRELUDE,
    RNG_SEED,
    _conv_case,
    assert_bit_exact,
    hls_dir,
    run_cases,
    threaded_binary,
)

pytestmark = [pytest.mark.csim]

P1 = (1, 1, 1, 1)  # pads (PT, PL, PB, PR)
P0 = (0, 0, 0, 0)


def _pairs_case(name, rng, *args, m, po=2, **kw):
    """conv2d case ``args`` (see `_conv_case`: h, w, c, co, k, s, d, pads, simd, pe) through
    conv2d_pairs with ``m`` MVU copies and ``po`` output pixels a beat (``pack=True``: DSP packing)."""
    pack = kw.pop("pack", False)
    case = _conv_case(name, rng, *args, **kw)
    c, co, pe = args[2], args[3], args[9]
    case.decls = case.decls.replace("; };", f", M = {m}, PX = 2, PO = {po}" + (", PACK = 2" if pack else "") + "; };")
    case.body = case.body.replace("bb::conv2d<P>", "bb::conv2d_pairs<P>")
    (lanes, x), = case.inputs
    assert lanes == c  # _conv_case streams one pixel a beat; the bytes stay, the beat doubles
    case.inputs = [(2 * c, x)]
    case.out_lanes = 2 * co if po == 2 else co if m > 1 else pe
    case.geom = (*args, m, po, kw.get("frames", FRAMES))  # for `_cycles`
    return case


def _cycles(case) -> dict[str, int]:
    """The cycles conv2d_pairs' two processes are written for over the case's call (all
    loops II = 1): the window generator max(reads, window beats), Hp·ceil(Wp/2) and
    Ho·(Wo/PO)·SF a frame; the MVU's groups × NF·SF plus its first group's windows and last
    group's pixels (conv_mvu with M = 1: Ho·Wo·NF·SF a frame)."""
    h, w, c, co, k, s, d, pads, simd, pe, m, po, frames = case.geom
    hp, wp = h + pads[0] + pads[2], w + pads[1] + pads[3]
    ho, wo = (hp - (k[0] - 1) * d[0] - 1) // s[0] + 1, (wp - (k[1] - 1) * d[1] - 1) // s[1] + 1
    sf, nf = k[0] * k[1] * c // simd, co // pe
    swg = frames * max(hp * ((wp + 1) // 2), ho * (wo // po) * sf)
    beats = frames * ho * wo // po  # output beats: pixel pairs (PO = 2) or pixels
    if po == 1 and m == 1:
        return {"conv_swg_pairs": swg, "conv_pairs_mvu1": beats * nf * sf}
    q = m // po  # pairs (pixels) a group
    groups = -(-beats // q)
    mvu = groups * nf * sf + min(q, beats) * sf + beats - (groups - 1) * q
    return {"conv_swg_pairs": swg, "conv_mvu_pairs" if po == 2 else "conv_pairs_mvu1": mvu}


def pairs_cases():
    rng = np.random.default_rng(RNG_SEED + 29)
    return [
        # (h, w, c, co, k, s, d, pads, simd, pe)
        # (a) 3x3 s1 pad 1 (PL = 1, odd: an input pair straddles two column pairs), SIMD = C
        _pairs_case("pairs_m2", rng, 6, 6, 4, 8, (3, 3), (1, 1), (1, 1), P1, 4, 4, m=2),
        # (b) M = 4 = 2·NF; 5 rows: 15 pairs a frame, groups of 2 pairs straddle rows and frames
        _pairs_case("pairs_m4_nf2", rng, 5, 6, 4, 8, (3, 3), (1, 1), (1, 1), P1, 4, 4, m=4),
        # (c) M = 6, NF = 4 (pe = CO/4); 20 pairs a call: a partial last group of 2
        _pairs_case("pairs_m6_nf4", rng, 5, 4, 2, 8, (3, 3), (1, 1), (1, 1), P1, 2, 2, m=6),
        # (d) PO = 1: a stride-2 conv after a paired stream; M = 1 (conv2d's PE lanes) and M = 2
        _pairs_case("pairs_po1_s2", rng, 7, 8, 4, 8, (3, 3), (2, 2), (1, 1), P1, 4, 2, m=1, po=1),
        _pairs_case("pairs_po1_s2_m2", rng, 7, 8, 4, 8, (3, 3), (2, 2), (1, 1), P1, 4, 2, m=2, po=1),
        _pairs_case("pairs_po1_m3_dil", rng, 8, 6, 2, 6, (3, 3), (1, 2), (2, 2), (2, 3, 2, 1), 2, 2, m=3, po=1),
        # (e) parallel window: SIMD = C·9 (stem-like, C = 3), and C·3 with PO = 1, stride 2
        _pairs_case("pairs_pw_k", rng, 8, 8, 3, 8, (3, 3), (1, 1), (1, 1), P1, 27, 2, m=4),
        _pairs_case("pairs_pw_k_s2", rng, 8, 8, 3, 8, (3, 3), (2, 2), (1, 1), P1, 27, 4, m=2, po=1),
        _pairs_case("pairs_pw_kw", rng, 6, 6, 3, 6, (3, 3), (1, 1), (1, 1), P1, 9, 3, m=2),
        # (f) pads: 0 (valid conv), PL = 3 (odd), PL = 2 with dilation 2 (even), Wp odd (PR = 0)
        _pairs_case("pairs_pad0", rng, 6, 8, 4, 8, (3, 3), (1, 1), (1, 1), P0, 4, 4, m=2),
        _pairs_case("pairs_pl3", rng, 5, 6, 2, 4, (3, 3), (1, 1), (1, 1), (1, 3, 1, 1), 2, 2, m=2),
        _pairs_case("pairs_dil_pl2", rng, 8, 6, 2, 4, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 2, 1, m=4),
        _pairs_case("pairs_wp_odd", rng, 6, 6, 4, 4, (3, 2), (1, 1), (1, 1), (1, 1, 1, 0), 4, 2, m=2),
        _pairs_case("pairs_rows_s2", rng, 7, 6, 2, 4, (3, 3), (2, 1), (1, 1), P1, 2, 2, m=2),  # SH = 2
        # weights as PE banks
        _pairs_case("pairs_banks", rng, 6, 6, 4, 8, (3, 3), (1, 1), (1, 1), P1, 4, 2, m=4, banks=True),
        # (g) DSP packing (P::PACK = 2), operands at the int8 extremes
        _pairs_case("pairs_pack", rng, 6, 6, 4, 8, (3, 3), (1, 1), (1, 1), P1, 4, 4, m=4, pack=True, extreme=True),
        # (h) three frames in one call (the others stream FRAMES = 2)
        _pairs_case("pairs_frames3", rng, 5, 6, 4, 8, (3, 3), (1, 1), (1, 1), P1, 4, 2, m=6, frames=3),
    ]


@pytest.fixture(scope="module")
def pairs_outputs(tmp_path_factory):
    return run_cases(pairs_cases(), tmp_path_factory.mktemp("pairs"), "pairs")


@pytest.mark.parametrize("name", [c.name for c in pairs_cases()])
def test_conv2d_pairs_bit_exact(pairs_outputs, name):
    assert_bit_exact(name, *pairs_outputs[name])


@pytest.fixture(scope="module")
def threaded_exe(tmp_path_factory):
    """One threaded C simulation binary of every case: ``exe DIR CASE`` runs one and prints
    the run's report (BB_CSIM_REPORT: `proc` lines with each process's counted cycles)."""
    d = tmp_path_factory.mktemp("pairs_threads")
    return threaded_binary(pairs_cases(), d)


@pytest.mark.parametrize("name", [c.name for c in pairs_cases()])
def test_conv2d_pairs_threaded(threaded_exe, name):
    """Threads and a window stream bounded at its depth: bit-exact, and each process counts
    the cycles of `_cycles` (e.g. the stem-like pairs_pw_k: the generator's Hp·ceil(Wp/2) =
    50 reads a frame, not Hp·Wp = 100)."""
    d, cases = threaded_exe
    r = subprocess.run([str(d / "t"), str(d), name], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    case = cases[name]
    assert_bit_exact(name, case, np.fromfile(d / f"{name}.bin", dtype=np.int8))
    procs = [ln.split("\t") for ln in r.stdout.splitlines() if ln.startswith("proc\t")]
    assert {p[2].split("<")[0]: int(p[3]) for p in procs} == _cycles(case)


@pytest.mark.parametrize("bad, message", [
    ("M = 3, PX = 2, PO = 2", "PO = 2 needs M even and >= 2"),
    ("M = 6, PX = 2, PO = 2", "PO = 2 needs M/2 <= CO/PE"),  # NF = 2
    ("M = 2, PX = 1, PO = 2", "PX = 2 (one pixel a beat is conv2d / conv2d_mmv)"),
    ("M = 3, PX = 2, PO = 1", "PO = 1 needs 1 <= M <= CO/PE"),
])
def test_conv2d_pairs_illegal_does_not_compile(tmp_path, bad, message):
    """An illegal combination is the kernel's static_assert (g++ -fsyntax-only fails with its
    message); the same case with M = 2 compiles."""
    def src(fields):
        case = _conv_case("c", np.random.default_rng(0), 6, 6, 4, 8, (3, 3), (1, 1), (1, 1), P1, 4, 4)
        decls = case.decls.replace("; };", f", {fields}; }};")
        return (PRELUDE + decls + "\nvoid f(bb::Stream<8>& in, bb::Stream<bb::pairs_out_lanes<P>()>& out, const bb::Word<16>* w,"
                " const int32_t b[4][2], const int32_t m[4][2], const int32_t s[4][2]) {"
                " bb::conv2d_pairs<P>(in, out, w, b, m, s, 1); }\n")

    def compile_(text):
        (tmp_path / "c.cpp").write_text(text)
        return subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I",
                               str(hls_dir()), str(tmp_path / "c.cpp")], capture_output=True, text=True)

    good = compile_(src("M = 2, PX = 2, PO = 2"))
    assert good.returncode == 0, good.stderr[-2000:]
    r = compile_(src(bad))
    assert r.returncode != 0
    assert "static assertion failed" in r.stderr and f"conv2d_pairs: {message}" in r.stderr, r.stderr[-2000:]
