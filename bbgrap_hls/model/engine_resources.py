"""What a planned layer engine's parts cost (`model.engine_plan`): DSP48E2, BRAM18, URAM288 and
LUTs of the conv, window and element-wise units and the sequencer, for the steps a plan lays
out (``rows``: each step with its unit and its bands' descriptors), and the sizes the units
take from those steps (the conv unit's input buffer and tile, the window unit's widest row and
tallest window, the element-wise unit's longest vector)."""

from __future__ import annotations

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.model import engine as conv_model
from bbgrap_hls.model import engine_eltwise, engine_top, engine_window
from bbgrap_hls.model.memory import memory

SEQ_LUT = 520
SEQ_LUT_BEAT = 9
"""LUTs of the sequencer besides its ROM, **a guess** (no synthesis run): its state machine,
ROM address and head decode (~300), the two ports' outputs muxed three ways at one LUT6 a bit
(addresses, lengths and handshakes ~125 bits, ``SEQ_LUT_BEAT`` a beat byte for the write
data and strobes) and three 32-bit base adders (96). The descriptor register
(``32·max(NF)`` flip-flops) is not counted: flip-flops are not budgeted."""

def window_sizes(rows: list[tuple], pe: int, beat: int) -> dict[str, int]:
    """The window unit's ``WMAX``, ``WOMAX``, ``KB`` (a power of two) and ``KMAX``, and the
    element-wise unit's ``CMAX``, as `sim.engine_top.build_params` sizes them."""
    z = {"wmax": beat // pe, "womax": 1, "kb": 2, "kmax": 1, "cmax": pe}
    for _, unit, rs in rows:
        f = rs[0]
        if unit == "window":
            z["wmax"], z["womax"] = max(z["wmax"], f["W"]), max(z["womax"], f["WO"])
            z["kb"] = max(z["kb"], 1 << (f["KH"] - 1).bit_length())
            if f["MODE"] == ew.DW:
                z["kmax"] = max(z["kmax"], f["KH"] * f["KW"])
        elif unit == "eltwise" and f["MODE"] == ee.MULV:
            z["cmax"] = max(z["cmax"], f["C"])
    return z


def too_narrow(rows: list[tuple], pe: int, beat: int) -> str | None:
    """Why the window unit of ``G = pe`` on ``beat``-byte words cannot run a window step of
    ``rows`` (a map narrower than the ``beat/G`` pixels a beat holds: its one-row-start-a-beat
    rule, `engine_window.check`), or None."""
    for s, unit, rs in rows:
        if unit == "window" and rs[0]["W"] < beat // pe:
            return (f"the window unit (G = {pe}) needs maps at least {beat // pe} pixels wide; "
                    f"{s.nodes[0]} reads one {rs[0]['W']} wide")
    return None


def resources(rows: list[tuple], pe: int, simd: int, beat: int, taps: int,
               pack: bool = False, lanes: int | None = None, uram: int = 0) -> dict[str, dict[str, int]]:
    """Each part's DSP/BRAM18/URAM/LUT: the conv unit (`engine.engine_cost` on the steps that
    set its input buffer and its tile memory; ``pack``: its products two a DSP48E2), the window unit (`engine_window.resources`),
    the element-wise unit (`engine_eltwise.resources`, the RTL's burst 64 and 4 chunks,
    ``lanes`` byte lanes, None a beat's), the
    sequencer (its ROM, ``1 + NF`` 32-bit words a step, through `memory`; `SEQ_LUT`).
    ``uram``: URAM288 the conv unit may take (0: none): its input buffer there
    (``IBUF_URAM``), then as many 72-bit columns of its tile rows as the rest holds
    (``TMEM_URAM``); the other parts stay in block RAM."""
    conv = conv_sizers(rows, pe, beat)
    out: dict[str, dict[str, int]] = {}
    if conv:
        big, tile = conv
        c = conv_model.engine_cost([big, tile], pe, simd, beat, 1, 1, pack=pack and pe >= 2, timed=False,
                                   **conv_uram(big, tile, pe, simd, beat, pack, uram))
        out["conv"] = {"dsp": c.dsp, "bram18": c.bram18, "uram": c.uram, "lut": c.lut}
    z = window_sizes(rows, pe, beat)
    w = engine_window.resources(pe, 8 * beat, z["wmax"], z["womax"], z["kb"], z["kmax"], taps)
    out["window"] = {"dsp": w.dsp, "bram18": w.bram18, "uram": 0, "lut": w.lut}
    e = engine_eltwise.resources(pe, beat, cmax=z["cmax"], lanes=lanes)
    out["eltwise"] = {"dsp": e.dsp, "bram18": e.bram18, "uram": 0, "lut": e.lut}
    words = sum((1 + engine_top.fields(unit)) * len(rs) for _, unit, rs in rows)
    rom = memory(32, words)
    out["sequencer"] = {"dsp": 0, "bram18": rom.bram18, "uram": 0, "lut": rom.lut + SEQ_LUT + SEQ_LUT_BEAT * beat}
    out["total"] = {k: sum(v[k] for v in out.values()) for k in ("dsp", "bram18", "uram", "lut")}
    return out


def conv_sizers(rows: list[tuple], pe: int, beat: int) -> tuple[dict, dict] | None:
    """The conv steps that size the conv unit: the one with the largest input buffer and the
    one with the largest tile (None: no conv step)."""
    conv = [f for _, unit, rs in rows if unit == "conv" for f in rs]
    if not conv:
        return None
    return (max(conv, key=lambda f: ei.in_buffer_bytes(f, pe, beat)),
            max(conv, key=lambda f: f["KH"] * f["KW"] * f["C"]))


def conv_uram(big: dict, tile: dict, pe: int, simd: int, beat: int, pack: bool, uram: int) -> dict:
    """`model.engine.engine_cost`'s URAM options for a conv unit that may take ``uram`` URAM288
    (0: none): ``uram`` (its input buffer there, ``IBUF_URAM``) and ``tile_uram`` (as many
    72-bit columns of its tile rows as the rest holds, ``TMEM_URAM``); ``big``/``tile`` the
    steps that size its input buffer and tile memory."""
    if not uram:
        return {}
    ib = conv_model.engine_cost([big, tile], pe, simd, beat, 1, 1, pack=pack and pe >= 2, uram=True, timed=False).uram
    return {"uram": True, "tile_uram": min(-(-8 * max(pe * simd, beat) // 72), max(0, uram - ib))}


def short(total: dict[str, int], limits: dict[str, int]) -> list[str]:
    return [f"{k} {total[k]:,} > {limits[k]:,} (short {total[k] - limits[k]:,})" for k in limits if total[k] > limits[k]]
