"""bench/onnx_node_bench.py --quick: the ONNX node cases run, none wrong, none crashing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_onnx_node_bench_quick():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "onnx_node_bench.py"), "--quick", "--list-refused"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    head = lines[0]
    assert head.startswith("onnx node cases: 11: ") and "wrong 0, crash 0" in head, out.stdout
    assert not any(ln.startswith(("WRONG", "CRASH")) for ln in lines)
    refused = {ln.split()[1].rstrip(":"): ln for ln in lines if ln.startswith("refused ")}
    # 3-D pooling is refused with one line; the rest pass (GlobalMaxPool too, since issue 14)
    assert sorted(refused) == ["test_averagepool_3d_default"], out.stdout
    assert "only 2-D pooling" in refused["test_averagepool_3d_default"]
    assert "pass 10," in head
