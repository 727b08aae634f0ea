"""Write ``$readmemh`` files: lanes packed little-endian into words, one word per line."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def pack(lanes: np.ndarray, bits: int) -> list[int]:
    """Pack a [words, lanes] integer array into words, lane i at bits [i*bits +: bits]."""
    lanes = np.asarray(lanes, dtype=np.int64)
    mask = (1 << bits) - 1
    return [sum((int(v) & mask) << (i * bits) for i, v in enumerate(row)) for row in lanes]


def write_mem(path: Path, words: list[int], width: int) -> str:
    """Write words of ``width`` bits as hex lines; returns the path as a string."""
    digits = (width + 3) // 4
    Path(path).write_text("".join(f"{w:0{digits}x}\n" for w in words))
    return str(path)
