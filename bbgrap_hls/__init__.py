"""bbgrap-hls: ONNX networks to multicore FPGA designs, verified in open-source simulation.

The Python API (docs/api.md): ``bbgrap_hls.compile(model, board) -> Design``, then
``Design.plan``, ``.predict(x)``, ``.write(out)``, ``.csim(x)``, ``.sim(x)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Design", "compile", "__version__"]

if TYPE_CHECKING:
    from bbgrap_hls.api import Design, compile


def __getattr__(name: str) -> Any:
    # the API imports onnx and numpy: load it on first use, so that `bbgrap-hls --version`
    # and the command line's start stay quick
    if name in ("compile", "Design"):
        from bbgrap_hls import api

        return getattr(api, name)
    raise AttributeError(f"module 'bbgrap_hls' has no attribute {name!r}")
