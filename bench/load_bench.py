"""Time loading, canonicalising and inspecting the light DenseNet-121 (1,746 ONNX nodes).

Target (issue 2): under 3 s on a 2-core machine. Usage::

    python bench/load_bench.py [--repeat 3] [--model PATH]

Prints each stage's time for every repetition and the best total.
"""

from __future__ import annotations

import argparse
import os
import time

import onnx

from bbgrap_hls.commands.inspect import format_table, summarize
from bbgrap_hls.frontend import load_model
from bbgrap_hls.passes import canonicalize

DEFAULT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                       "light_densenet121.onnx")


def bench_once(path: str) -> dict[str, float]:
    """Seconds spent in each stage of one load → canonicalise → inspect."""
    t0 = time.perf_counter()
    graph = load_model(path)
    t1 = time.perf_counter()
    canon = canonicalize(graph)
    t2 = time.perf_counter()
    format_table(summarize(canon, canonical=True))
    t3 = time.perf_counter()
    return {"load": t1 - t0, "canonicalize": t2 - t1, "inspect": t3 - t2, "total": t3 - t0,
            "nodes_loaded": len(graph.nodes), "nodes_canonical": len(canon.nodes)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n_onnx = len(onnx.load(args.model, load_external_data=False).graph.node)
    runs = [bench_once(args.model) for _ in range(args.repeat)]
    for k, r in enumerate(runs):
        print(f"run {k}: load {r['load']:.2f} s, canonicalize {r['canonicalize']:.2f} s, "
              f"inspect {r['inspect']:.2f} s, total {r['total']:.2f} s")
    best = min(r["total"] for r in runs)
    print(f"{os.path.basename(args.model)}: {n_onnx} ONNX nodes -> {runs[0]['nodes_loaded']} loaded -> "
          f"{runs[0]['nodes_canonical']} canonical; best total {best:.2f} s (target < 3 s)")


if __name__ == "__main__":
    main()
