"""Regenerate the bundled example models (seeded, so the bytes are reproducible).

    python examples/make_examples.py

The models are built by the same builders the tests use (`tests/models.py`): small
networks with seeded random weights, exported as plain float ONNX.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests import models  # noqa: E402

EXAMPLES = {
    "resnet8.onnx": lambda: models.resnet8(seed=0),
    "ds_cnn.onnx": lambda: models.ds_cnn(seed=0),
    "mlp_autoencoder.onnx": lambda: models.mlp_autoencoder(seed=0),
}

if __name__ == "__main__":
    for name, build in EXAMPLES.items():
        models.save(build(), HERE / name)
        print(f"wrote {HERE / name}")
