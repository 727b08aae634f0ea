"""Operator kinds: one module each, collected in `REGISTRY`.

Importing this package imports every op module so that the registry is complete.
"""

import importlib
import pkgutil

from bbgrap_hls.ops.base import ONNX_TYPES, REGISTRY, Op, get_op, register

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _m not in ("base", "util"):
        importlib.import_module(f"{__name__}.{_m}")

__all__ = ["ONNX_TYPES", "REGISTRY", "Op", "get_op", "register"]
