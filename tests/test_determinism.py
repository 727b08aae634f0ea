"""Same inputs, same bytes: two ``gen`` runs give byte-identical output folders.

The second run is a separate process with another ``PYTHONHASHSEED`` and another working
folder, so set iteration order, ids or the current directory leaking into the output
would show. ``manifest.json`` must record the input hashes and the tool versions.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bbgrap_hls.cli import main
from tests import models

pytestmark = pytest.mark.filterwarnings("ignore:no calibration samples")


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` by relative path (csim's build cache excluded)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".csim" not in p.parts}


def _gen_subprocess(model: Path, board: str, out: Path, hashseed: str, cwd: Path, *extra: str) -> None:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    r = subprocess.run([sys.executable, "-m", "bbgrap_hls.cli", "gen", str(model), "--board", board,
                        "-o", str(out), *extra], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("det")
    return Path(models.save(models.inception_block(seed=3, c=8, hw=8), d / "inception.onnx"))


@pytest.mark.slow
@pytest.mark.parametrize("board", ["u250", "vu9p-quad"])
def test_two_gen_runs_byte_identical(model, tmp_path, board):
    a, b = tmp_path / "a", tmp_path / "b"
    (tmp_path / "cwd1").mkdir()
    (tmp_path / "cwd2").mkdir()
    _gen_subprocess(model, board, a, "1", tmp_path / "cwd1")
    _gen_subprocess(model, board, b, "2", tmp_path / "cwd2")
    ha, hb = tree_hashes(a), tree_hashes(b)
    assert sorted(ha) == sorted(hb)
    differ = [k for k in ha if ha[k] != hb[k]]
    assert differ == [], f"files differ between two identical runs: {differ}"
    assert len(ha) > 10


def test_in_process_runs_identical_and_seed_matters(model, tmp_path):
    outs = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        out = tmp_path / name
        assert main(["gen", str(model), "--board", "u250", "-o", str(out), "--seed", str(seed),
                     "--strategy", "exact"]) == 0
        outs[name] = tree_hashes(out)
    assert outs["a"] == outs["b"]
    assert outs["a"] != outs["c"], "--seed changes calibration and the test input, so some bytes must change"


def test_manifest_records_inputs_and_versions(model, tmp_path):
    import jinja2
    import numpy as np
    import onnx

    from bbgrap_hls import __version__

    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(0).standard_normal((4, 8, 8, 8)).astype(np.float32))
    out = tmp_path / "out"
    assert main(["gen", str(model), "--board", "u250", "-o", str(out), "--calib", str(calib),
                 "--strategy", "single"]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["inputs"]["model"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert man["inputs"]["calib"] == hashlib.sha256(calib.read_bytes()).hexdigest()
    assert man["inputs"]["board"] == "u250"
    v = man["versions"]
    assert v["bbgrap-hls"] == __version__ and v["numpy"] == np.__version__
    assert v["onnx"] == onnx.__version__ and v["jinja2"] == jinja2.__version__
    listed = tree_hashes(out)
    del listed["manifest.json"]
    assert man["files"] == listed, "the manifest lists exactly the files gen wrote, with their hashes"
