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


# Seconds each of the longest test files took in a profiled CI run (stop 49: `python -m
# pytest -n 2 --dist loadfile --durations=0`, summed per file; a lower bound from the run's 25
# slowest tests where marked ~). `pytest -n 2 --dist loadfile` hands whole files to the two
# workers in collection order, a file to whichever worker runs dry; xdist's own order (most
# tests first) sent files of a few long tests (a 340 s Yosys fixture, an 80 s bench) last,
# where one of them ran alone while the other worker idled. Longest first is the classic
# schedule for this (LPT); files not listed follow in xdist's order. A stale figure only
# costs balance, never a test.
FILE_SECONDS = {
    "test_rtl_modules.py": 750, "test_families.py": 400, "test_search.py": 315,
    "test_resources.py": 340, "test_ops_resample.py": 190, "test_hls_schedule.py": 160,
    "test_sim_offchip.py": 160, "test_properties.py": 160, "test_core_synth.py": 100,  # ~
    "test_speed_bench.py": 80, "test_rebalance.py": 70,  # ~
    "test_memory_bench.py": 80, "test_engine_sim.py": 80, "test_pixel_pairs.py": 50,  # ~
    "test_engine_gen.py": 50,  # ~
}


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order below
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items):
    """Longest files first (`FILE_SECONDS`), then the others, most tests first; tests keep
    their order within a file."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item.path.name] = counts.get(item.path.name, 0) + 1
    rank = {item: (-FILE_SECONDS.get(item.path.name, 0), -counts[item.path.name], str(item.path), i)
            for i, item in enumerate(items)}
    items.sort(key=rank.__getitem__)
