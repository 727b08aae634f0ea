"""Model names → unique legal C++ / SystemVerilog identifiers.

Names from a model are arbitrary text. `Namer` maps each to an identifier that is ASCII,
starts with a letter, is at most 64 characters, is no keyword of C++ or SystemVerilog,
and differs from every other identifier it handed out (collisions after sanitising get
a numeric suffix; long names keep a prefix and a hash). Generated files are never named
after model text; comments quote it through `comment`.
"""

from __future__ import annotations

import hashlib
import re

MAX_LEN = 64

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq main std hls bb int8_t int16_t int32_t int64_t uint8_t size_t NULL
""".split())

SV_KEYWORDS = frozenset("""
accept_on alias always always_comb always_ff always_latch and assert assign assume automatic
before begin bind bins binsof bit break buf bufif0 bufif1 byte case casex casez cell chandle
checker class clocking cmos config const constraint context continue cover covergroup
coverpoint cross deassign default defparam design disable dist do edge else end endcase
endchecker endclass endclocking endconfig endfunction endgenerate endgroup endinterface
endmodule endpackage endprimitive endprogram endproperty endspecify endsequence endtable
endtask enum event eventually expect export extends extern final first_match for force
foreach forever fork forkjoin function generate genvar global highz0 highz1 if iff ifnone
ignore_bins illegal_bins implements implies import incdir include initial inout input inside
instance int integer interconnect interface intersect join join_any join_none large let
liblist library local localparam logic longint macromodule matches medium modport module
nand negedge nettype new nexttime nmos nor noshowcancelled not notif0 notif1 null or output
package packed parameter pmos posedge primitive priority program property protected pull0
pull1 pulldown pullup pulsestyle_ondetect pulsestyle_onevent pure rand randc randcase
randsequence rcmos real realtime ref reg reject_on release repeat restrict return rnmos rpmos
rtran rtranif0 rtranif1 s_always s_eventually s_nexttime s_until s_until_with scalared
sequence shortint shortreal showcancelled signed small soft solve specify specparam static
string strong strong0 strong1 struct super supply0 supply1 sync_accept_on sync_reject_on
table tagged task this throughout time timeprecision timeunit tran tranif0 tranif1 tri tri0
tri1 triand trior trireg type typedef union unique unique0 unsigned until until_with untyped
use uwire var vectored virtual void wait wait_order wand weak weak0 weak1 while wildcard wire
with within wor xnor xor
""".split())

RESERVED = CPP_KEYWORDS | SV_KEYWORDS


def _base(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", text.encode("ascii", "replace").decode("ascii"))
    s = re.sub(r"_+", "_", s).strip("_")
    if not s or not s[0].isalpha():
        s = "n_" + s if s else "n"
    # C++ reserves names with a double underscore or an underscore + capital at the start.
    return s


class Namer:
    """Hands out unique identifiers for model names (one instance per generated design).

    Args:
        prefix: prepended to every identifier (keeps them apart from generated names
            such as ``core0``), e.g. ``"t_"`` for tensors.
    """

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self._by_name: dict[str, str] = {}
        self._used: set[str] = set()

    def __call__(self, name: str) -> str:
        """The identifier of ``name`` (the same one every time for the same name)."""
        if name in self._by_name:
            return self._by_name[name]
        ident = self.prefix + _base(name)
        if len(ident) > MAX_LEN:
            digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
            ident = ident[:MAX_LEN - 9].rstrip("_") + "_" + digest
        if ident.lower() in RESERVED or ident in RESERVED:
            ident = ident + "_"
        cand, k = ident, 1
        while cand in self._used:
            suffix = f"_{k}"
            cand = ident[:MAX_LEN - len(suffix)].rstrip("_") + suffix
            k += 1
        self._used.add(cand)
        self._by_name[name] = cand
        return cand

    def reserve(self, ident: str) -> None:
        """Mark a generated identifier as taken so no model name maps onto it."""
        self._used.add(ident)


def legal_identifier(s: str) -> bool:
    """True when ``s`` is an identifier `Namer` could have produced."""
    return (bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", s)) and len(s) <= MAX_LEN
            and s not in RESERVED and "__" not in s)


def comment(text: str) -> str:
    """Model text made safe inside a ``//`` or ``/* */`` comment: printable ASCII only,
    no comment terminators, no line breaks, no trigraph-like or backslash line splices."""
    s = text.encode("ascii", "backslashreplace").decode("ascii")
    s = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in s)
    s = s.replace("\\", "/").replace("*/", "* /").replace("/*", "/ *").replace("??", "?_?")
    return s[:200]
