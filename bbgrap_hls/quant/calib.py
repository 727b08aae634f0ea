"""Calibration samples and observers (activation ranges for post-training quantisation).

Samples come from ``--calib samples.npy|.npz``: for a model with one input, a ``.npy``
array of N samples, shaped ``(N, *input_shape[1:])`` or ``(N, *input_shape)``; for several
inputs a ``.npz`` keyed by input name (every array with the same N). Without a file the
synthetic default is `synthetic_count` seeded standard-normal samples per input (32, fewer
for models past `SYNTHETIC_MACS` multiply-accumulates over all samples), with a warning:
accuracy depends on calibrating with real samples.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from bbgrap_hls import progress
from bbgrap_hls.errors import BadInputError
from bbgrap_hls.ir import Graph
from bbgrap_hls.ops import get_op
from bbgrap_hls.reference import run_float

SYNTHETIC_SAMPLES = 32
#: Budget of the synthetic calibration in multiply-accumulates (all samples together): the
#: float reference runs about 5-15 GMAC/s on 2 cores, so ImageNet-size models take fewer
#: samples (ResNet-18, 1.8 GMAC: 8; a 77-GMAC conv: 1) and gen stays in seconds. Synthetic
#: ranges say little about real data either way (docs/numerics.md, "Calibration").
SYNTHETIC_MACS = 16_000_000_000
OBSERVERS = ("minmax", "percentile")
#: Chosen by measured accuracy (docs/numerics.md, "Calibration"): min/max wins on the test
#: models with 32 samples; percentile clips real outliers that few samples do not repeat.
DEFAULT_OBSERVER = "minmax"
PERCENTILE = 99.99
_MAX_VALUES = 1 << 16  # per tensor and sample kept by the percentile observer


def _as_samples(graph: Graph, name: str, x: np.ndarray, where: str) -> np.ndarray:
    """Validate one input's calibration array; returns shape ``(N, *input_shape)`` float32."""
    want = graph.tensors[name].shape
    x = graph.held_input(name, x)  # samples of the model's shape for an input held in blocks
    if x.dtype.kind not in "fiu":
        raise BadInputError(f"{where}: calibration data for input '{name}' has dtype {x.dtype}, "
                            "expected a numeric array")
    if x.shape[1:] == want:
        pass
    elif want[0] == 1 and x.shape[1:] == want[1:]:
        x = x.reshape((x.shape[0],) + want)
    else:
        raise BadInputError(f"{where}: calibration data for input '{name}' has shape {x.shape}, "
                            f"expected (N, {', '.join(map(str, want[1:]))}) or (N, {', '.join(map(str, want))})")
    if x.shape[0] == 0:
        raise BadInputError(f"{where}: calibration data for input '{name}' has no samples")
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise BadInputError(f"{where}: calibration data for input '{name}' contains NaN or Inf")
    return x.astype(np.float32)


def load_calibration(path: str | os.PathLike, graph: Graph) -> dict[str, np.ndarray]:
    """Read and validate a calibration file; input name -> ``(N, *shape)`` float32."""
    p = Path(path)
    if not p.is_file():
        raise BadInputError(f"{p}: no such calibration file")
    try:
        data = np.load(p, allow_pickle=False)
    except Exception as e:
        raise BadInputError(f"{p}: not a readable .npy/.npz file ({type(e).__name__}: {e})") from None
    if isinstance(data, np.ndarray):
        if len(graph.inputs) != 1:
            raise BadInputError(f"{p}: the model has {len(graph.inputs)} inputs; give a .npz keyed by "
                                f"input name ({', '.join(graph.inputs)})")
        arrays = {graph.inputs[0]: data}
    else:
        with data:
            arrays = {k: data[k] for k in data.files}
    return check_calibration(graph, arrays, str(p))


def check_calibration(graph: Graph, arrays: dict[str, np.ndarray], where: str = "calibration") -> dict[str, np.ndarray]:
    """Validate in-memory calibration arrays (same rules as `load_calibration`)."""
    missing = [n for n in graph.inputs if n not in arrays]
    if missing:
        raise BadInputError(f"{where}: no calibration data for input '{missing[0]}' "
                            f"(have: {', '.join(sorted(arrays)) or 'none'})")
    out = {n: _as_samples(graph, n, np.asarray(arrays[n]), where) for n in graph.inputs}
    counts = {n: v.shape[0] for n, v in out.items()}
    if len(set(counts.values())) > 1:
        raise BadInputError(f"{where}: inputs have different sample counts {counts}")
    return out


def synthetic_count(graph: Graph) -> int:
    """Synthetic samples for ``graph``: `SYNTHETIC_SAMPLES`, or as many as `SYNTHETIC_MACS`
    allows (at least one) when the model's MACs per frame times 32 exceed it."""
    macs = sum(get_op(n.op).macs(n, graph) for n in graph.nodes)
    return max(1, min(SYNTHETIC_SAMPLES, SYNTHETIC_MACS // macs)) if macs else SYNTHETIC_SAMPLES


def synthetic_calibration(graph: Graph, n: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """``n`` (default `synthetic_count`) seeded standard-normal samples per input, with a
    warning about accuracy. For a one-input model a smaller ``n`` draws the first ``n`` of a
    larger one's samples."""
    n = synthetic_count(graph) if n is None else n
    warnings.warn(f"no calibration samples given: using {n} synthetic standard-normal samples; "
                  "int8 accuracy depends on calibrating with real samples (--calib)", stacklevel=3)
    rng = np.random.default_rng(seed)
    return {name: graph.held_input(name, rng.standard_normal((n,) + graph.model_input_shape(name)).astype(np.float32))
            for name in graph.inputs}


def observe(graph: Graph, samples: dict[str, np.ndarray], observer: str = DEFAULT_OBSERVER,
            seed: int = 0) -> dict[str, tuple[float, float]]:
    """Range ``(lo, hi)`` of every activation tensor over the samples (float reference).

    ``minmax``: smallest and largest value seen. ``percentile``: the `PERCENTILE` and
    ``100 - PERCENTILE`` percentiles of the values seen (at most 65,536 per tensor and
    sample, subsampled with a seeded generator).
    """
    if observer not in OBSERVERS:
        raise BadInputError(f"unknown observer '{observer}' (expected one of {', '.join(OBSERVERS)})")
    rng = np.random.default_rng(seed)
    n = next(iter(samples.values())).shape[0]
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    values: dict[str, list[np.ndarray]] = {}
    bar = progress.task("calibrating", total=n, unit="sample")  # closed below, or dropped with an error
    for k in range(n):
        env = run_float(graph, {name: v[k] for name, v in samples.items()}, keep=True)
        for name, v in env.items():
            t = graph.tensors.get(name)
            if t is None or t.data is not None or not np.issubdtype(np.asarray(v).dtype, np.floating):
                continue
            v = np.asarray(v, np.float32).ravel()
            lo[name] = min(lo.get(name, np.inf), float(v.min()))
            hi[name] = max(hi.get(name, -np.inf), float(v.max()))
            if observer == "percentile":
                if v.size > _MAX_VALUES:
                    v = rng.choice(v, _MAX_VALUES, replace=False)
                values.setdefault(name, []).append(v)
        bar.update(1)
    bar.close()
    if observer == "minmax":
        return {name: (lo[name], hi[name]) for name in lo}
    out = {}
    for name, vs in values.items():
        v = np.concatenate(vs)
        out[name] = (float(np.percentile(v, 100 - PERCENTILE)), float(np.percentile(v, PERCENTILE)))
    return out
