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
    rqf = write_mem(d / "rq.mem", pack(np.array(golden.rq_words(rq)).reshape(-1, lanes), 64), 64 * lanes)
    return {"C": c, "LANES": lanes, "RQ_FILE": rqf}, {"acc": acc, "rq": rq}


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
        "RQ_FILE": write_mem(d / "rq.mem", pack(rqw, 64), 64 * pe),
    }


def _mvu(p: dict, rng, d: Path) -> tuple[dict, dict]:
    mw, mh = p["MW"], p["MH"]
    w = _i8(rng, mh, mw)
    bias = rng.integers(-(2**12), 2**12, size=mh)
    rq = golden.random_rq(rng, mh, 128 * 128 * mw ** 0.5)
    x = _i8(rng, FRAMES, p["nvec"], mw)
    files = mvu_files(w, bias, rq, p["SIMD"], p["PE"], d)
    return {k: p[k] for k in ("MW", "MH", "SIMD", "PE")} | files, {"x": x, "w": w, "bias": bias, "rq": rq}


# parameter sets per module: HDL parameters in upper case, test sizes in lower case
PARAMS: dict[str, list[dict]] = {
    "fifo": [{"WIDTH": 8, "DEPTH": 4, "beats": 20}, {"WIDTH": 24, "DEPTH": 33, "beats": 50}],
    "link": [{"WIDTH": 16, "LINK_W": 16, "LATENCY": 3, "beats": 24},
             {"WIDTH": 32, "LINK_W": 8, "LATENCY": 12, "beats": 16}],
    "requant": [{"C": 4, "LANES": 1, "pix": 6}, {"C": 12, "LANES": 4, "pix": 5}],
    "mvu": [{"MW": 8, "MH": 4, "SIMD": 2, "PE": 2, "nvec": 3},
            {"MW": 12, "MH": 6, "SIMD": 12, "PE": 1, "nvec": 2},
            {"MW": 16, "MH": 8, "SIMD": 4, "PE": 8, "nvec": 3},
            {"MW": 4, "MH": 3, "SIMD": 1, "PE": 3, "nvec": 4}],
}

PREPARE: dict[str, Callable] = {"fifo": _fifo, "link": _link, "requant": _requant, "mvu": _mvu}

# RTL files each toplevel needs (besides its own)
DEPS: dict[str, list[str]] = {
    "link": ["fifo"], "requant": ["rq_lane", "rq_round"], "mvu": ["rq_lane", "rq_round"],
}


def prepare(module: str, params: dict, seed: int, folder: Path) -> dict:
    """Write the case of ``module`` with ``params`` into ``folder``; return the HDL parameters."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    hdl, arrays = PREPARE[module](params, rng, folder)
    np.savez(folder / "case.npz", **arrays)
    return hdl

# toplevel module per tested module name, when they differ
TOP: dict[str, str] = {}
