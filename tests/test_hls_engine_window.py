"""The engine's window unit as an HLS kernel (hw/hls/engine_window.h) in C simulation,
bit-exact against `codegen.engine_window.reference`; and that reference against the
project's int8 semantics (`bbgrap_hls.quant.kernels` ``run_avgpool`` / ``run_gap``).

The layers are `tests/test_rtl_engine_window.py`'s (the same seeds and memory placement):
each layer's feature and weight images (`sim.engine_window.images`) go through a small
testbench (`TB`, one g++ build per unit configuration, the repo's csim flags at -O1 with
-Werror), and the output map is read back from the feature memory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.codegen.csim import flags
from bbgrap_hls.codegen.engine_image import read_features

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sim import engine_window as sew  # noqa: E402
from tests.test_hls_kernels import hls_dir  # noqa: E402
from tests.test_rtl_engine_window import LAYERS, layers_of  # noqa: E402

TB = r"""// engine_window testbench: desc.bin (27 int32), fmem.bin, wmem.bin -> fmem.out.bin
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine_window.h"

struct P {
  static constexpr int G = CFG_G, BEAT = CFG_BEAT, WMAX = CFG_WMAX, KB = CFG_KB, KMAX = CFG_KMAX;
#ifdef CFG_TAPS
  static constexpr int TAPS = CFG_TAPS;  // else bb::window_taps gives 1
#endif
};

static std::vector<char> slurp(const char* path) {
  std::vector<char> v;
  if (FILE* f = std::fopen(path, "rb")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) v.insert(v.end(), buf, buf + n);
    std::fclose(f);
  }
  return v;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string d = argv[1];
  std::vector<char> desc = slurp((d + "/desc.bin").c_str()), f = slurp((d + "/fmem.bin").c_str()),
                    w = slurp((d + "/wmem.bin").c_str());
  bb::WindowLayer layer;
  if (desc.size() != sizeof layer) return 3;
  std::memcpy(&layer, desc.data(), sizeof layer);
  std::vector<bb::Word<P::BEAT>> fm(f.size() / P::BEAT), wm(w.size() / P::BEAT + 1);
  std::memcpy(fm.data(), f.data(), f.size());
  std::memcpy(wm.data(), w.data(), w.size());
  const int status = bb::engine_window<P>(layer, fm.data(), wm.data());
  FILE* o = std::fopen((d + "/fmem.out.bin").c_str(), "wb");
  std::fwrite(fm.data(), 1, f.size(), o);
  std::fclose(o);
  return status;
}
"""


def _build(d: Path, hp: dict) -> Path:
    src = d / "tb.cpp"
    src.write_text(TB)
    cfg = [f"-DCFG_{k}={v}" for k, v in (("G", hp["G"]), ("BEAT", hp["DATA_W"] // 8), ("WMAX", hp["WMAX"]),
                                           ("KB", hp["KB"]), ("KMAX", hp["KMAX"]))]
    cfg += [f"-DCFG_TAPS={hp['TAPS']}"] if "TAPS" in hp else []
    r = subprocess.run(["g++", *flags(werror=True, opt="-O1"), *cfg, "-I", str(hls_dir()), str(src), "-o",
                        str(d / "tb")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return d / "tb"


def _run(tb: Path, d: Path, desc: list[int], img: bytes, wimg: bytes) -> tuple[int, bytes]:
    d.mkdir(parents=True, exist_ok=True)
    (d / "desc.bin").write_bytes(np.array(desc, dtype="<i4").tobytes())
    (d / "fmem.bin").write_bytes(img)
    (d / "wmem.bin").write_bytes(wimg)
    r = subprocess.run([str(tb), str(d)], capture_output=True, text=True)
    return r.returncode, (d / "fmem.out.bin").read_bytes() if r.returncode == 0 else b""


@pytest.mark.csim
@pytest.mark.parametrize("name", list(LAYERS))
def test_hls_engine_window(name: str, tmp_path: Path) -> None:
    hp, layers = layers_of(name)
    tb = _build(tmp_path, hp)
    for i, lay in enumerate(layers):
        desc, img, wimg = sew.images(hp, lay)
        status, mem = _run(tb, tmp_path / f"l{i}", desc, img, wimg)
        assert status == 0, f"layer {i}: status {status}"
        f = dict(zip(ew.WINDOW_FIELDS, desc, strict=True))
        ho, wo = lay.layer.out_hw
        got = read_features(mem, f["OUT_BASE"], ho, wo, lay.layer.c, hp["G"], stride=f["OUT_STRIDE"])
        want = ew.reference(lay.layer, lay.x)
        assert np.array_equal(got, want), f"layer {i} ({lay.layer.mode}): {int((got != want).sum())} bytes differ"
        # the runs' tails zero, every other byte (input, stride gaps) unchanged
        runs = sew.out_runs(desc, hp["G"], hp["DATA_W"] // 8)
        used = ho * wo * f["C"] if len(runs) == 1 else ho * wo * hp["G"]
        kept = bytearray(img)
        for lo, hi in runs:
            assert not any(mem[lo + used:hi]), f"layer {i}: the tail of the run at {lo} is not zero"
            kept[lo:hi] = mem[lo:hi]
        assert mem == bytes(kept), f"layer {i}: a byte outside the written runs changed"


@pytest.mark.csim
def test_hls_engine_window_sees_input(tmp_path: Path) -> None:
    """One input byte flipped (a pixel some window reads): the kernel's output changes, so the
    comparison above is not passing on outputs that ignore the input; and a descriptor that
    does not fit (a window taller than KB) is refused without writing."""
    hp, layers = layers_of("G8")
    tb = _build(tmp_path, hp)
    lay = layers[3]  # depthwise 3x3 s1: every input pixel is read
    desc, img, wimg = sew.images(hp, lay)
    _, clean = _run(tb, tmp_path / "clean", desc, img, wimg)
    bad = bytearray(img)
    bad[lay.in_base + 5 * hp["G"] + 3] ^= 0x40  # pixel 5, channel 3
    _, dirty = _run(tb, tmp_path / "dirty", desc, bytes(bad), wimg)
    f = dict(zip(ew.WINDOW_FIELDS, desc, strict=True))
    ho, wo = lay.layer.out_hw
    a = read_features(clean, f["OUT_BASE"], ho, wo, lay.layer.c, hp["G"])
    b = read_features(dirty, f["OUT_BASE"], ho, wo, lay.layer.c, hp["G"])
    assert np.array_equal(a, ew.reference(lay.layer, lay.x))
    assert (a != b).any() and (a != b)[:, :, [j for j in range(lay.layer.c) if j != 3]].sum() == 0
    tall = list(desc)
    tall[ew.WINDOW_FIELDS.index("KH")] = hp["KB"] + 1
    status, _ = _run(tb, tmp_path / "tall", tall, img, wimg)
    assert status == 1


class _Node:
    """What ``run_avgpool`` / ``run_gap`` read of a graph node."""

    def __init__(self, attrs: dict):
        self.attrs = attrs


@pytest.mark.parametrize("case", ["avg2x2s2", "avg3x3s1_pad_counted", "gap"])
def test_reference_matches_quant_kernels(case: str) -> None:
    """`reference` of an average layer equals the project's int8 average pool / global
    average pool on the same data (count = KH·KW: no padding, or padding counted)."""
    from bbgrap_hls.quant import kernels

    specs = {"avg2x2s2": ((2, 2), (2, 2), (0, 0, 0, 0)), "avg3x3s1_pad_counted": ((3, 3), (1, 1), (1, 1, 1, 1)),
             "gap": ((5, 6), (1, 1), (0, 0, 0, 0))}
    k, s, p = specs[case]
    layer, x = sew.layer_case("avg", 5, 6, 7, k, s, p, seed=3)
    want = ew.reference(layer, x)
    xn = x.transpose(2, 0, 1)[None].astype(np.int64)
    q = {"zp_in": layer.zp_in, "zp_out": layer.zp_out, "mult": layer.mult, "shift": layer.shift}
    if case == "gap":
        got = kernels.run_gap(_Node({"q": q}), [xn], None)[0][0, :, 0, 0]
        assert np.array_equal(got, want[0, 0])
        return
    n = k[0] * k[1]
    q |= {"mult": np.full(n, layer.mult), "shift": np.full(n, layer.shift)}
    attrs = {"q": q, "kernel": k, "strides": s, "dilations": (1, 1), "pads": p, "out_hw": layer.out_hw,
             "count_include_pad": 1}
    got = kernels.run_avgpool(_Node(attrs), [xn], None)[0][0].transpose(1, 2, 0)
    assert np.array_equal(got, want)
