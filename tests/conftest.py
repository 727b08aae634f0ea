"""Shared fixtures: model files built by tests/models.py, the light model zoo's folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# One BLAS thread per process: the test run is already parallel (pytest -n 2) and our
# matrices are small; threads oversubscribe the cores and slow products 10-40x.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import onnx  # noqa: E402
import pytest  # noqa: E402

# `from tests.models import ...` must work however pytest is started (plain `pytest`
# puts tests/ on sys.path, not the repository root).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import models  # noqa: E402

LIGHT_ZOO = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(p.stem for p in LIGHT_ZOO.glob("*.onnx"))


@pytest.fixture(scope="session")
def model_file(tmp_path_factory):
    """``model_file(name, **kw)``: path of a tests/models.py model saved once per session."""
    cache: dict[tuple, str] = {}
    folder = tmp_path_factory.mktemp("models")

    def make(name: str, **kw) -> str:
        key = (name, tuple(sorted(kw.items())))
        if key not in cache:
            stem = name + "".join(f"_{k}{v}" for k, v in sorted(kw.items()))
            cache[key] = models.save(models.ALL[name](**kw), folder / f"{stem}.onnx")
        return cache[key]

    return make
