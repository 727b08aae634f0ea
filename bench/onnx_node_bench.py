"""The ONNX backend node suite through ``bbgrap-hls run``: pass / wrong / crash / refused.

Cases come from the generators that the onnx package ships
(``onnx.backend.test.case.node.collect_testcases``): every single-node case whose node
type is one bbgrap-hls supports (`bbgrap_hls.ops.ONNX_TYPES`) or one that issue 14 asks
for (`TARGETS`), and every function-expanded case whose nodes are all supported. Each case
becomes a model file in which weight-like inputs (every input but the activations of
`ACTIVATION_INPUTS`, and every non-float input: shapes, axes, pads) are initializers; its
activations go to ``run --input`` and the float reference's outputs are compared with the
stored ones at the case's own tolerance (rtol/atol of the generator).

Outcomes: ``pass``; ``wrong`` (exit 0, outputs differ); ``refused`` (exit 2 and exactly one
line on stderr, warnings aside); ``crash`` (an exception escaped ``main``, or a refusal that
is not one line). Prints the counts on one line, then every wrong and crashing case, then
the refusals grouped by reason.

    python bench/onnx_node_bench.py [--quick] [--list-refused] [-k SUBSTRING]

Exit code 1 when any case is wrong or crashes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bbgrap_hls.cli import main as cli_main  # noqa: E402
from bbgrap_hls.ops import ONNX_TYPES  # noqa: E402

#: Operators issue 14 asks for (families, cheap activations): counted, refused until supported.
TARGETS = frozenset({
    "Split", "Slice", "Resize", "Upsample", "ConvTranspose", "GlobalMaxPool", "Elu", "Selu",
    "Gelu", "Celu", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "PRelu",
    "LayerNormalization",
})
#: Inputs that stay graph inputs (activations), by op type; others: input 0 only.
ACTIVATION_INPUTS = {op: None for op in ("Add", "Sub", "Mul", "Div", "Sum", "Concat", "Max", "Min", "Mean")}
#: Cases of --quick: one per outcome that matters, fast.
QUICK = ("test_relu", "test_conv_with_strides_padding", "test_averagepool_2d_ceil_last_window_starts_on_pad",
         "test_maxpool_2d_ceil", "test_gemm_default_matrix_bias", "test_elu", "test_gelu_tanh_2",
         "test_softplus", "test_globalmaxpool", "test_averagepool_3d_default", "test_hardswish_expanded")


@dataclass
class Result:
    name: str
    outcome: str  # pass | wrong | crash | refused
    detail: str = ""


def select(cases, names: tuple[str, ...] | None = None, substring: str | None = None) -> list:
    """The node cases this bench runs (see the module docstring), sorted by name."""
    known = set(ONNX_TYPES) | TARGETS
    out = []
    for c in cases:
        types = [n.op_type for n in c.model.graph.node]
        single = len(types) == 1 and types[0] in known
        expanded = c.name.endswith("_expanded") and set(types) <= set(ONNX_TYPES)
        if not (single or expanded):
            continue
        if names is not None and c.name not in names:
            continue
        if substring and substring not in c.name:
            continue
        out.append(c)
    return sorted(out, key=lambda c: c.name)


def _is_activation(model: onnx.ModelProto, index: int, value) -> bool:
    if isinstance(value, onnx.TensorProto):  # float8, int4...: no numpy file holds it
        return False
    if index == 0:
        return True
    nodes = model.graph.node
    op = nodes[0].op_type if len(nodes) == 1 else None
    return op in ACTIVATION_INPUTS and np.asarray(value).dtype.kind == "f"


def _initializer(x, name: str) -> onnx.TensorProto:
    if isinstance(x, onnx.TensorProto):
        t = onnx.TensorProto()
        t.CopyFrom(x)
        t.name = name
        return t
    return numpy_helper.from_array(np.asarray(x), name)


def prepare(case, data: tuple[list, list], folder: Path) -> tuple[Path, Path, list[np.ndarray]]:
    """Write the case's model (weight-like inputs as initializers) and its activations.

    Returns the model path, the ``run --input`` file and the expected outputs.
    """
    ins, outs = data
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    g = model.graph
    feeds = {}
    keep = []
    for k, (vi, x) in enumerate(zip(list(g.input), ins, strict=False)):
        if _is_activation(model, k, x):
            x = np.asarray(x)
            feeds[vi.name] = x
            # the data's shape (the case may leave dimensions symbolic or unset)
            shape = vi.type.tensor_type.shape
            del shape.dim[:]
            for d in x.shape:
                shape.dim.add().dim_value = d
            keep.append(vi)
        else:
            g.initializer.append(_initializer(x, vi.name))
    del g.input[:]
    g.input.extend(keep)
    path = folder / f"{case.name}.onnx"
    onnx.save(model, path)
    if len(feeds) == 1:
        xin = folder / f"{case.name}_x.npy"
        np.save(xin, next(iter(feeds.values())))
    else:
        xin = folder / f"{case.name}_x.npz"
        np.savez(xin, **feeds)
    return path, xin, [np.asarray(o) for o in outs]


def _stderr_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip() and ": warning: " not in ln]


def run_case(case, folder: Path) -> Result:
    """Run every data set of one case; the first non-pass outcome wins."""
    for k, data in enumerate(case.data_sets or []):
        try:
            path, xin, want = prepare(case, data, folder)
        except Exception as e:  # the case itself cannot be written (not ours to judge)
            return Result(case.name, "refused", f"bench: cannot prepare ({type(e).__name__}: {e})")
        y = folder / f"{case.name}_y.npz"
        err, out = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rc = cli_main(["run", str(path), "--input", str(xin), "-o", str(y), "--quiet"])
        except Exception as e:
            tb = traceback.extract_tb(e.__traceback__)[-1]
            where = f"{Path(tb.filename).name}:{tb.lineno}"
            return Result(case.name, "crash", f"{type(e).__name__}: {e} ({where})".splitlines()[0][:300])
        lines = _stderr_lines(err.getvalue())
        if rc != 0:
            if rc == 2 and len(lines) == 1:
                return Result(case.name, "refused", lines[0])
            return Result(case.name, "crash", f"exit {rc}, {len(lines)} stderr lines: {' | '.join(lines)[:300]}")
        with np.load(y) as z:
            got = [z[n] for n in z.files]
            order = {n: i for i, n in enumerate(z.files)}
        names = [o.name for o in case.model.graph.output]
        got = [got[order[n]] for n in names if n in order]
        if len(got) != len(want):
            return Result(case.name, "wrong", f"data set {k}: {len(got)} outputs, expected {len(want)}")
        for n, a, b in zip(names, got, want, strict=True):
            if b.dtype.kind not in "fiub" or a.dtype.kind not in "fiub":
                return Result(case.name, "wrong", f"data set {k}, output '{n}': dtype {a.dtype}, expected {b.dtype}")
            if a.shape != b.shape:
                return Result(case.name, "wrong", f"data set {k}, output '{n}': shape {a.shape}, expected {b.shape}")
            if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=case.rtol, atol=case.atol,
                               equal_nan=True):
                diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                return Result(case.name, "wrong", f"data set {k}, output '{n}': max |diff| {diff:.3g} "
                                                  f"(rtol {case.rtol}, atol {case.atol})")
    return Result(case.name, "pass")


def _reason(detail: str) -> str:
    """A refusal's reason without the case's file and node names (for grouping)."""
    d = re.sub(r"^bbgrap-hls run: error: ", "", detail)
    d = re.sub(r"\S*/test_\w+\.onnx", "MODEL", d)
    d = re.sub(r"'[^']*'", "'…'", d)
    return d[:160]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"only the {len(QUICK)} cases of QUICK")
    ap.add_argument("--list-refused", action="store_true", help="list every refused case with its line")
    ap.add_argument("-k", metavar="SUBSTRING", help="only cases whose name contains SUBSTRING")
    args = ap.parse_args(argv)
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = select(collect_testcases(None), QUICK if args.quick else None, args.k)
    results = []
    with tempfile.TemporaryDirectory(prefix="bbgrap-node-") as tmp:
        for c in cases:
            results.append(run_case(c, Path(tmp)))
    counts = Counter(r.outcome for r in results)
    print(f"onnx node cases: {len(results)}: pass {counts['pass']}, wrong {counts['wrong']}, "
          f"crash {counts['crash']}, refused {counts['refused']} (onnx {onnx.__version__})")
    for kind in ("wrong", "crash"):
        for r in results:
            if r.outcome == kind:
                print(f"{kind.upper()} {r.name}: {r.detail}")
    refused = [r for r in results if r.outcome == "refused"]
    if args.list_refused:
        for r in refused:
            print(f"refused {r.name}: {r.detail}")
    else:
        for reason, n in Counter(_reason(r.detail) for r in refused).most_common():
            print(f"refused {n:3d} x {reason}")
    return 1 if counts["wrong"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
