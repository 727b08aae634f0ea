"""Numpy arrays as C++ array initialisers (deterministic text, fixed line width)."""

from __future__ import annotations

import numpy as np

CTYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t"}
_PER_LINE = 24


def c_init(arr: np.ndarray) -> str:
    """Nested brace initialiser of an integer array (any rank >= 1)."""
    a = np.asarray(arr)
    if a.dtype.kind not in "iu":
        raise TypeError(f"c_init: integer array expected, got {a.dtype}")
    if a.ndim == 1:
        vals = [_lit(int(x)) for x in a.tolist()]
        lines = [", ".join(vals[i:i + _PER_LINE]) for i in range(0, len(vals), _PER_LINE)]
        return "{" + ",\n ".join(lines) + "}"
    return "{\n" + ",\n".join(c_init(sub) for sub in a) + "}"


def _lit(v: int) -> str:
    # INT32_MIN and INT64_MIN have no literal of their own type.
    if v == -(1 << 31):
        return "(-2147483647 - 1)"
    if v < -(1 << 31) or v >= (1 << 31):
        return f"INT64_C({v})"
    return str(v)


def c_array(name: str, arr: np.ndarray, ctype: str | None = None, static: bool = True) -> str:
    """A ``[static] const T name[d0][d1]... = {...};`` definition."""
    a = np.asarray(arr)
    t = ctype or CTYPES[str(a.dtype)]
    dims = "".join(f"[{d}]" for d in a.shape)
    prefix = "static const" if static else "const"
    return f"{prefix} {t} {name}{dims} = {c_init(a)};\n"


def c_words(name: str, words: np.ndarray, const: bool = True) -> str:
    """A ``static [const] bb::Word<L> name[d0]...[dn-2] = {...};`` definition.

    ``words`` has the word lanes as its last axis (``L = words.shape[-1]``); every word is
    written with its own braces (``{{lane0, lane1, ...}}``: the struct, then its array).
    """
    a = np.asarray(words)
    if a.dtype.kind not in "iu" or a.ndim < 2:
        raise TypeError(f"c_words: integer array of rank >= 2 expected, got {a.dtype} {a.shape}")
    lanes = a.shape[-1]

    def init(sub: np.ndarray) -> str:
        if sub.ndim == 2:  # a word wider than a line is wrapped every _PER_LINE lanes
            ws = ["{{" + ",\n  ".join(", ".join(map(str, w[i:i + _PER_LINE])) for i in range(0, lanes, _PER_LINE))
                  + "}}" for w in sub.tolist()]
            per = max(1, _PER_LINE // lanes)
            return "{" + ",\n ".join(", ".join(ws[i:i + per]) for i in range(0, len(ws), per)) + "}"
        return "{\n" + ",\n".join(init(s) for s in sub) + "}"

    dims = "".join(f"[{d}]" for d in a.shape[:-1])
    prefix = "static const" if const else "static"
    return f"{prefix} bb::Word<{lanes}> {name}{dims} = {init(a)};\n"
