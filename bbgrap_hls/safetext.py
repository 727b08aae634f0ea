"""Terminal-safe output: names from a model file cannot drive the user's terminal.

ONNX node, tensor and graph names are arbitrary strings; printed raw, an ESC sequence in a
name could recolour, move or retitle the terminal, and a bidi override could make a name
read backwards. `SafeStream` wraps ``sys.stdout``/``sys.stderr`` for the duration of a
command and writes such characters as visible escapes (``\\x1b``, ``\\u202e``). Newline,
tab and carriage return pass. The plan command's progress line writes its own cursor
control through ``.raw``.
"""

from __future__ import annotations

import re
from typing import TextIO

# C0 controls except \t \n \r, DEL, C1 controls, bidi embeddings/overrides/isolates, and
# the line/paragraph separators some terminals treat as newlines.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029"
                     "\u2066-\u2069]")


def escape(text: str) -> str:
    """``text`` with every unsafe character replaced by its Python escape."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class SafeStream:
    """A text stream that escapes unsafe characters; ``raw`` is the stream it wraps."""

    def __init__(self, raw: TextIO):
        self.raw = raw

    def write(self, text: str) -> int:
        return self.raw.write(escape(text))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self.raw, name)
