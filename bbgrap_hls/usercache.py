"""The per-user cache folder: objects that depend only on the installed tools and on files
bbgrap-hls ships, kept so that a new design does not compile them again.

``$BBGRAP_HLS_CACHE``, else ``$XDG_CACHE_HOME/bbgrap-hls`` or ``~/.cache/bbgrap-hls``. Two
kinds live there: the Verilator runtime objects of the RTL twin (`bbgrap_hls.rtlsim.build`)
and the threaded C simulation's runtime object (`bbgrap_hls.codegen.csim`). Each entry's name
holds a hash of what it was built from (sources, flags, compiler), so a changed input builds
a new entry and a stale one is never linked.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from pathlib import Path


def folder() -> Path | None:
    """The cache folder, made if missing; None when it cannot be made and written, or its
    path has a space (make's list of objects would split it)."""
    env = os.environ.get("BBGRAP_HLS_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bbgrap-hls"
    if " " in str(base):
        return None
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return base if os.access(base, os.W_OK) else None


@functools.lru_cache(maxsize=4)
def cxx_key(compiler: str = "c++") -> str:
    """A short hash of ``compiler``'s version line (objects of another compiler are not reused)."""
    try:
        v = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        v = ""
    return hashlib.sha256(v.split("\n")[0].encode()).hexdigest()[:8]
