"""The Python API on a bundled example: compile, predict, write, C-simulate (docs/api.md).

    python examples/api_example.py [OUT]

OUT (default: a temporary folder) receives what ``bbgrap-hls gen`` would write.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import bbgrap_hls

HERE = Path(__file__).resolve().parent


def main(out: Path) -> int:
    # Plan the MLP autoencoder over the SLRs of an Alveo U250, calibrated on 32 samples
    # (random here; real ones in practice: a .npy path or an (N, ...) array).
    rng = np.random.default_rng(1)
    calib = rng.standard_normal((32, 640)).astype(np.float32)
    design = bbgrap_hls.compile(HERE / "mlp_autoencoder.onnx", board="u250", calib=calib)
    plan = design.plan
    print(f"{design.graph.name}: ii {plan.ii_cycles} cycles, {plan.fps:,.0f} frames/s on "
          f"{sum(1 for c in plan.cores if c.nodes)} core(s)")

    # The bit-exact integer reference, as `bbgrap-hls run --int8` computes it.
    shape = design.graph.shape(design.inputs[0])
    x = rng.standard_normal(shape).astype(np.float32)
    y = design.predict(x)
    print(f"predict: output {y.shape}, values {y.min():.3f} .. {y.max():.3f}")

    # The project folder (HLS C++, host code, Vitis files, RTL twin), then g++ C simulation
    # of the generated HLS C++ on the same input, compared bit for bit with the reference.
    design.write(out, force=True)
    res = design.csim(x)
    print(f"wrote {out}; csim: {res.message}")
    return 0 if res.match else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1])))
    with tempfile.TemporaryDirectory(prefix="bbgrap-example-") as tmp:
        sys.exit(main(Path(tmp) / "out"))
