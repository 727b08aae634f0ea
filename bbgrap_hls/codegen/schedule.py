"""Kernel schedules: a static bound per DATAFLOW process of a generated design, from the loop
nests of the kernel templates (hw/hls), compared with the plan's ii (docs/codegen.md,
"Kernel schedules").

Each kernel's bound mirrors its C++: pipelined loops' trip counts per frame × their declared
II, sequential loops added; a window block's one loop (bb_window.h) takes the iterations of
its read/emit schedule, simulated row by row (`window_cycles`); and every array a loop
reads or writes in one iteration has its accesses counted per memory (`port_ii`): a memory
takes two accesses per cycle (a dual-port BRAM), so more raise the loop's effective II.

The processes are read from the generated ``hls/core<k>.cpp`` (the ``BB_PROCESS`` calls, in
order: process ``core<k>.p<i>``, inside a conv ``core<k>.p<i>.p0`` / ``.p1``; a layer's call
is followed by ``// layer<n>``) and the layer structs of ``hls/layer<n>.h``; the plan's ii of a layer's block from ``plan.json``. A process
that is not a layer's (width converters, copies, fan-outs, memory movers) is compared with
the design's ii.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bbgrap_hls.codegen.names import comment
from bbgrap_hls.model.band import band_geometry, split_beats
from bbgrap_hls.model.geometry import Geometry

#: a process may exceed the plan's ii by this much (issue 15: within 5 %)
TOLERANCE = 0.05
#: accesses per cycle of one memory (a true dual-port BRAM)
PORTS = 2
#: bytes per beat of the memory movers' m_axi ports (bb::DDR_BEAT: 512 bits)
MEM_WORD = 64
#: the kernels `kernel_bounds` models (every kernel a design calls)
MODELLED = frozenset({
    "conv2d", "conv2d_mmv", "conv2d_pairs", "dense", "dwconv2d", "maxpool2d", "avgpool2d", "global_avgpool", "add2", "mul2",
    "lut_act", "channel_affine", "requantize", "concat_part", "fanout", "mem_to_stream", "stream_to_mem",
    "const_stream", "width_convert", "trim_convert", "channel_shuffle", "concat", "repeat_pixel", "pad2d", "lrn",
    "conv2d_offchip", "conv2d_banded", "dense_offchip", "slice2d", "global_maxpool", "upsample2d", "zeroinsert2d", "depth2space",
    "bilinear2d", "ddr_fifo"})

_PROCESS = re.compile(r"^\s*BB_PROCESS\((.*)\)\s*(?://\s*(\w+))?\s*$")  # the call, its layer
_STRUCT = re.compile(r"static constexpr int ([^;]*);")
_NODE = re.compile(r"^// node: (.*) \(op \w+\)$", re.M)


@dataclass(frozen=True)
class ProcBound:
    """One process: its static cycles per frame (steady state), the plan's ii it is held to,
    and what it runs."""

    id: str
    label: str
    node: str  # the plan node of its layer ("" for plumbing)
    bound: float  # cycles per frame: trip counts × effective II, phases added
    plan_ii: int  # the node's ii, or the design's
    port_ii: int = 1  # the effective II its memory accesses allow (1: the declared)

    @property
    def over(self) -> float:
        """Fraction over the plan's ii (negative: under)."""
        return self.bound / self.plan_ii - 1 if self.plan_ii else 0.0


def port_ii(accesses: list[tuple[tuple[int, ...], tuple[str, ...], list[tuple]]]) -> int:
    """The II one loop iteration's array accesses allow.

    ``accesses``: per array (shape, partitioning per dim: ``"complete"``, ``"cyclic<f>"`` or
    ``"none"``, the iteration's accesses as index tuples with ``None`` for an index known only
    at run time, or ``("k", m, c)`` for ``k·m + c`` with ``k`` a run-time value). An access
    touches one memory per partition it may reach: a run-time index on a partitioned dim
    reaches every partition of it (the tool builds a multiplexer), ``k·m + c`` on a cyclic
    ``f`` dim with ``f | m`` only partition ``c mod f``. A memory takes `PORTS` accesses per
    cycle; a fully partitioned array (registers) any number."""
    ii = 1
    for shape, parts, acc in accesses:
        banks = [1 if p == "none" else n if p == "complete" else int(p[6:]) for n, p in zip(shape, parts, strict=True)]
        if all(p == "complete" for p in parts):
            continue  # registers
        use: Counter = Counter()
        for idx in acc:
            reach = [[]]
            for i, nb, p in zip(idx, banks, parts, strict=True):
                if nb == 1:
                    opts = [0]
                elif i is None:
                    opts = list(range(nb))
                elif isinstance(i, tuple):
                    _, m, c = i
                    opts = [c % nb] if p != "complete" and m % nb == 0 else list(range(nb))
                else:
                    opts = [i % nb if p != "complete" else i]
                reach = [r + [o] for r in reach for o in opts]
            for r in reach:
                use[tuple(r)] += 1
        ii = max(ii, max(math.ceil(n / PORTS) for n in use.values()))
    return ii


def window_rows(hp: int, khe: int, sh: int) -> int:
    """The rows of a window block's buffer (bb_window.h: window_rows)."""
    return (hp - khe) % sh + 2 * khe if (hp - khe) % sh + khe > sh else khe + sh


def window_cycles(hp: int, wp: int, cb: int, kh: int, dh: int, sh: int, eb: int, frames: int = 4,
                  rows: int | None = None) -> float:
    """Cycles per frame (steady state: frames 3 and 4 of a run) of bb_window.h's read/emit loop:
    input rows of ``wp·cb`` beats, read while fewer than ``rows`` are buffered ahead of the
    current output row's first; an output row of ``eb`` beats emitted once its ``span(kh, dh)``
    rows are complete; both in the same iterations (no stream stalls)."""
    khe = (kh - 1) * dh + 1
    ho = (hp - khe) // sh + 1
    rows = window_rows(hp, khe, sh) if rows is None else rows
    rb = wp * cb
    n_rows, n_out = frames * hp, frames * ho

    def base(o: int) -> int:
        return (o // ho) * hp + (o % ho) * sh

    r_end = [0] * n_rows  # iteration after which input row w is complete
    e_end = [0] * n_out  # iteration after which output row o is out
    w = o = 0
    total = []
    while w < n_rows or o < n_out:
        progressed = False
        if w < n_rows:
            # row w may start once the current output row's base is past w - rows
            need = w - rows + 1
            k = 0
            while k < n_out and base(k) < need:
                k += 1
            if k == 0 or k <= o:  # rbase reaches base(k) after output row k-1 is out
                start = max(r_end[w - 1] if w else 0, e_end[k - 1] if k else 0)
                r_end[w] = start + rb
                w += 1
                progressed = True
        if o < n_out and base(o) + khe - 1 < w:
            start = max(e_end[o - 1] if o else 0, r_end[base(o) + khe - 1])
            e_end[o] = start + eb
            o += 1
            progressed = True
            if o % ho == 0:
                total.append(max(e_end[o - 1], r_end[min(w, n_rows) - 1]))
        if not progressed:
            raise RuntimeError("window schedule stuck (rows <= window height)")
    return (total[-1] - total[-3]) / 2 if len(total) >= 3 else float(total[-1])


def _struct(text: str) -> dict[str, int]:
    m = _STRUCT.search(text)
    if m is None:
        return {}
    return {k.strip(): int(v) for k, v in (kv.split("=") for kv in m.group(1).split(","))}


def _targs(call: str) -> list[str]:
    m = re.match(r"bb::\w+<([^>]*)>", call)
    return [a.strip() for a in m.group(1).split(",")] if m else []


def _geom(p: dict[str, int]) -> dict[str, int]:
    hp, wp = p["H"] + p["PT"] + p["PB"], p["W"] + p["PL"] + p["PR"]
    ho = (hp - ((p["KH"] - 1) * p["DH"] + 1)) // p["SH"] + 1
    wo = (wp - ((p["KW"] - 1) * p["DW"] + 1)) // p["SW"] + 1
    return {"HP": hp, "WP": wp, "HO": ho, "WO": wo}


def _window_ports(j: int, lanes: int, words: int) -> int:
    """The row buffer `rows[J][WORDS][L]` (dims 1 and 3 complete): lane block j of a beat
    reads copy j at a run-time word, the input beat writes every copy."""
    acc = [(jj, None, i) for jj in range(j) for i in range(lanes)]  # reads
    acc += [(jj, None, i) for jj in range(j) for i in range(lanes)]  # writes
    return port_ii([((j, words, lanes), ("complete", "none", "complete"), acc)])


def kernel_name(call: str) -> str:
    """The kernel a BB_PROCESS call runs (``conv2d`` of ``bb::conv2d<layer3_P>(...)``)."""
    return call.split("<", 1)[0].split("(", 1)[0].strip().removeprefix("bb::")


def layer_calls(out: Path) -> list[tuple[str, str, str]]:
    """(process id, kernel, layer ident) of every layer's call in the design in ``out``."""
    res = []
    for cpp in sorted((out / "hls").glob("core*.cpp")):
        calls = [(m.group(1), m.group(2)) for ln in cpp.read_text().splitlines() if (m := _PROCESS.match(ln))]
        res += [(f"{cpp.stem}.p{i}", kernel_name(c), ident) for i, (c, ident) in enumerate(calls) if ident]
    return res


def kernel_bounds(call: str, p: dict[str, int]) -> list[tuple[str, str, float, int]]:
    """(sub-process suffix, label, cycles per frame, port II) of one BB_PROCESS call."""
    kern = kernel_name(call)
    args = _targs(call)
    if kern in ("conv2d", "conv2d_mmv"):
        g = _geom(p)
        k, c, simd = p["KH"] * p["KW"] * p["C"], p["C"], p["SIMD"]
        lanes = min(simd, c)
        sf, nf = k // simd, p["CO"] // p["PE"]
        j = simd // lanes
        rows = p.get("ROWS") or window_rows(g["HP"], (p["KH"] - 1) * p["DH"] + 1, p["SH"])  # ROWS: a short ring
        swg = window_cycles(g["HP"], g["WP"], c // lanes, p["KH"], p["DH"], p["SH"], g["WO"] * sf, rows=rows)
        swg_ii = _window_ports(j, lanes, rows * g["WP"] * (c // lanes))
        # the MVU's window: `win[K]` cyclic SIMD, beat sf written (fold 0) and read at sf·SIMD + s
        mvu_ii = port_ii([((k,), (f"cyclic{simd}",), [(("sf", simd, s),) for s in range(simd)] * 2)])
        if kern == "conv2d":
            mvu = g["HO"] * g["WO"] * nf * sf
            return [(".p0", "conv_swg<P>", swg * swg_ii, swg_ii), (".p1", "conv_mvu<P>", mvu * mvu_ii, mvu_ii)]
        m = p["M"]
        mvu = g["HO"] * g["WO"] / m * nf * sf  # groups of M pixels over rows and frames
        return [(".p0", "conv_swg<P>", swg * swg_ii, swg_ii), (".p1", "conv_mvu_mmv<P>", mvu, 1)]
    if kern == "conv2d_pairs":
        # conv_swg_pairs writes a padded row's column pairs, ceil(Wp/2) beats, and emits an
        # output row's Wo/PO window beats of SF taps (both windows of a pair in one beat with
        # PO = 2), each bank one read and one write an iteration; the MVU as conv2d_mmv's
        # (M = 1, PO = 1: conv_mvu's Ho·Wo·NF·SF)
        g = _geom(p)
        sf, nf, po, m = p["KH"] * p["KW"] * p["C"] // p["SIMD"], p["CO"] // p["PE"], p["PO"], p["M"]
        swg = window_cycles(g["HP"], -(-g["WP"] // 2), 1, p["KH"], p["DH"], p["SH"], g["WO"] // po * sf)
        mvu = g["HO"] * g["WO"] / m * nf * sf
        return [(".p0", "conv_swg_pairs<P>", swg, 1),
                (".p1", "conv_mvu_pairs<P>" if po == 2 else "conv_pairs_mvu1<P>", mvu, 1)]
    if kern == "dense":
        return [("", "dense", p["CO"] // p["PE"] * (p["C"] // p["SIMD"]), 1)]
    if kern in ("dwconv2d", "maxpool2d", "avgpool2d"):  # (SIMD = LANES·j: a parallel window, j taps an iteration)
        g = _geom(p)
        kk, cf, j = p["KH"] * p["KW"], p["C"] // p["LANES"], p.get("SIMD", p["LANES"]) // p["LANES"]
        rows = p.get("ROWS") or window_rows(g["HP"], (p["KH"] - 1) * p["DH"] + 1, p["SH"])
        cyc = window_cycles(g["HP"], g["WP"], cf, p["KH"], p["DH"], p["SH"], g["WO"] * cf * (kk // j), rows=rows)
        ii = _window_ports(j, p["LANES"], rows * g["WP"] * cf)
        return [("", kern, cyc * ii, ii)]
    if kern == "global_avgpool":
        return [("", kern, p["H"] * p["W"] * p["C"] // p["LANES"], 1)]
    if kern in ("add2", "mul2", "lut_act", "channel_affine", "requantize"):
        return [("", kern, p["N"] // p["LANES"], 1)]
    if kern == "concat_part":
        return [("", kern, int(args[1]), 1)]
    if kern == "fanout":
        return [("", kern, int(args[0]), 1)]
    if kern in ("mem_to_stream", "stream_to_mem"):
        # one loop over the call's beats or 64-byte memory words, whichever are more (frames
        # back to back: a frame's words are N/64 on average); stream_to_mem's partial last
        # word is written after its loop, once per call
        n, lanes = int(args[0]), int(args[1])
        return [("", kern, max(n // lanes, n / MEM_WORD), 1)]
    if kern == "const_stream":
        return [("", kern, int(args[0]) // int(args[1]), 1)]
    if kern == "width_convert":
        n, a, b, gg = map(int, args)
        return [("", kern, n // gg * max(gg // a, gg // b), 1)]
    if kern == "trim_convert":  # one iteration per input beat: NF a pixel
        pixels, nf = int(args[0]), int(args[1])
        return [("", kern, pixels * nf, 1)]
    if kern == "channel_shuffle":
        pixels, c, lanes = map(int, args)
        return [("", kern, pixels * c // lanes, 1)]
    if kern == "lrn":  # as channel_shuffle: C/L iterations per pixel (the banks are registers)
        return [("", kern, p["PIXELS"] * p["C"] // p["L"], 1)]
    if kern == "concat":
        pixels, lanes, *cs = map(int, args)
        return [("", kern, pixels * sum(cs) // lanes, 1)]
    if kern == "repeat_pixel":
        pixels, c, lanes = map(int, args)
        return [("", kern, pixels * c // lanes, 1)]
    if kern == "pad2d":
        h, w, c, lanes, pt, pl, pb, pr = map(int, args)
        return [("", kern, (h + pt + pb) * (w + pl + pr) * c // lanes, 1)]
    if kern in ("conv2d_offchip", "dense_offchip"):
        return [("", kern, offchip_cycles(p if kern == "conv2d_offchip" else _dense_as_conv(p)), 1)]
    if kern == "conv2d_banded":
        return banded_cycles(p)
    if kern in RESAMPLE:
        return [("", kern, resample_cycles(kern, p), 1)]
    if kern == "ddr_fifo":  # writer and reader: one beat a cycle each (p: the core's F_<fifo> struct)
        beats = p["BEATS"] * p.get("CHUNKS", 1)  # a frame's regions
        return [(".p0", "ddr_fifo_write<F>", beats, 1), (".p1", "ddr_fifo_read<F>", beats, 1)]
    return []


_FIFO_STRUCT = re.compile(r"struct (F_\w+) \{ static constexpr int ([^;]*); static constexpr long ([^;]*); \};")


def _fifo_structs(cpp: str) -> dict[str, dict[str, int]]:
    """The ``F_<fifo>`` structs of a core's FIFOs in board memory (core<k>.cpp, ``ports.DdrFifo``)."""
    return {m.group(1): {k.strip(): int(v) for part in (m.group(2), m.group(3)) for k, v in
                         (kv.split("=") for kv in part.split(","))} for m in _FIFO_STRUCT.finditer(cpp)}


def _dense_as_conv(p: dict[str, int]) -> dict[str, int]:
    """dense_offchip's struct as conv2d_offchip's one-pixel 1×1 convolution (DenseAsConv)."""
    one = dict(H=1, W=1, KH=1, KW=1, SH=1, SW=1, DH=1, DW=1, PT=0, PL=0, PB=0, PR=0)
    return {**p, **one}


def offchip_cycles(p: dict[str, int]) -> float:
    """Cycles per frame of conv2d_offchip.h's DATAFLOW region in the frame loop: its slowest
    stage (consecutive frames overlap through the ping-pong frame buffers): the store of the
    input frame (H·W·C/SIMD), the fetch of the NF·SF weight words (one loop iteration per word
    or per 64-byte beat, whichever are more, plus the first, which only reads), the compute
    (fold 0's SF words, then NF folds of HO·WO·SF; the next fold's words arrive during a fold,
    one a cycle, as the fetch delivers them) and the emit of the output frame (HO·WO·CO/PE).
    With one input frame slot (``ISLOTS = 1``) the store and the compute are one process,
    one after the other; with one output frame slot (``OSLOTS = 1``) the compute and the emit
    (the emit no stage of its own); with both, the store, the compute and the emit. With a
    DDR frame stage (``STAGE = 1``) the stage's writer takes the input stream (H·W·C/SIMD,
    the store's count) and the read-back of the frame from board memory, counted at one word
    a cycle, replaces the store before the compute (and, with ``OSLOTS = 1``, the emit): a
    bound, which leaves out the memory's latency (the read burst's first word) and any stall
    of the scratch's read or write port on the memory's bandwidth (shared with the weights'
    fetch)."""
    g = _geom(p)
    cb = p["C"] // p["SIMD"]
    sf, nf, n = p["KH"] * p["KW"] * cb, p["CO"] // p["PE"], p["PE"] * p["SIMD"]
    words = nf * sf
    beats = -(-words * n // MEM_WORD)
    store, fetch = p["H"] * p["W"] * cb, max(words, beats) + 1
    compute, emit = sf + nf * g["HO"] * g["WO"] * sf, g["HO"] * g["WO"] * nf
    if p.get("OSLOTS", 2) == 1:  # compute then emit, one process
        compute, emit = compute + emit, 0
    if p.get("STAGE", 0) == 1:  # writer; read-back (one word a cycle) + compute; fetch; emit
        return max(store, store + compute, fetch, emit)
    if p.get("ISLOTS", 2) == 1:
        return max(store + compute, fetch, emit)
    return max(store, fetch, compute, emit)


def _conv_geometry(p: dict[str, int]) -> Geometry:
    """The model's geometry of a conv struct (its window as spans, as `Geometry` has it)."""
    g = _geom(p)
    return Geometry(h=p["H"], w=p["W"], c=p["C"], ho=g["HO"], wo=g["WO"], co=p["CO"],
                    kh=(p["KH"] - 1) * p["DH"] + 1, kw=(p["KW"] - 1) * p["DW"] + 1, sh=p["SH"], sw=p["SW"],
                    dh=p["DH"], dw=p["DW"], pads=(p["PT"], p["PL"], p["PB"], p["PR"]))


def banded_cycles(p: dict[str, int]) -> list[tuple[str, str, float, int]]:
    """conv2d_banded.h's two processes per frame: band_split, one iteration per band beat it
    emits or input beat it drops (`bbgrap_hls.model.band.split_beats`), and conv2d_offchip on
    the band's struct (BandView: ``H = Hb``, ``PT = PB = 0``) run ``BANDS`` times a frame
    (`offchip_cycles` of that struct, each band a frame of it)."""
    bands = p["BANDS"]
    g = _conv_geometry(p)
    view = {**p, "H": band_geometry(g, bands).h, "PT": 0, "PB": 0}
    return [(".p0", "band_split<P>", split_beats(g, bands, p["SIMD"]), 1),
            (".p1", "conv2d_offchip<BandView<P>>", bands * offchip_cycles(view), 1)]


#: resample.h's kernels (`resample_cycles`)
RESAMPLE = frozenset({"slice2d", "global_maxpool", "upsample2d", "zeroinsert2d", "depth2space", "bilinear2d"})


def resample_cycles(kern: str, p: dict[str, int]) -> float:
    """Cycles per frame of a resample.h kernel (all loops II = 1): crop, one iteration per input
    beat; global max pool, one per input beat and one per output beat; nearest upsampling, zero
    insertion, one per output beat (the reads ride along: upsampling takes the next row ahead
    in the same iterations); DepthToSpace, one per output beat (phase row 0 takes the part of
    its row not taken ahead while the other B-1 phase rows were emitted); bilinear, one per output beat
    and one per input beat that was not taken ahead while an earlier output row was emitted
    (`bilinear_cycles`: with the input always there; a late producer moves more reads into
    the waiting loop)."""
    n = p["C"] // p["L"]
    if kern in ("slice2d", "global_maxpool"):
        return p["H"] * p["W"] * n + (n if kern == "global_maxpool" else 0)
    if kern == "upsample2d":
        return p["H"] * p["SH"] * p["W"] * p["SW"] * n
    if kern == "zeroinsert2d":
        ho = p["PT"] + (p["H"] - 1) * p["SH"] + 1 + p["PB"]
        wo = p["PL"] + (p["W"] - 1) * p["SW"] + 1 + p["PR"]
        return ho * wo * n
    if kern == "depth2space":
        # per input row: phase row 0's W·N/B beats out while the rest of the row comes in
        # (the row was taken ahead during the previous row's other phase rows: (B-1)·W·N/B of
        # its W·N beats), then phase rows 1..B-1 of W·N/B beats from the row buffer
        return p["H"] * p["B"] * p["W"] * (n // p["B"])
    return bilinear_cycles(p["H"], p["W"] * n, p["WO"] * n, p["TY"])


def bilinear_cycles(h: int, rb: int, wob: int, ty: tuple[int, ...], frames: int = 4) -> float:
    """Cycles per frame (steady state: frames 3 and 4 of a run) of resample.h's bilinear2d
    with its input always there (no stalls, as `window_cycles`): output row ``oy`` first reads
    (one beat an iteration) until its row ``y1 = ty[4·oy+1]`` is complete, then emits ``wob``
    beats, each iteration taking one beat of row y1 + 1 ahead (of the next frame's first row
    after the last); ``rb`` beats a row."""
    rows, done, part, it, ends = frames * h, 0, 0, 0, []
    for f in range(frames):
        for oy in range(len(ty) // 4):
            need = f * h + ty[4 * oy + 1]
            while done <= need:  # bil_wait
                it, part = it + 1, part + 1
                if part == rb:
                    part, done = 0, done + 1
            for _ in range(wob):  # bil_beat
                it += 1
                if done == need + 1 and done < rows:
                    part += 1
                    if part == rb:
                        part, done = 0, done + 1
        ends.append(it)
    return (ends[-1] - ends[-3]) / 2


def design_bounds(out: Path) -> list[ProcBound]:
    """The static bound of every process of the design in ``out`` (a gen folder)."""
    plan = json.loads((out / "plan.json").read_text())
    node_ii = {comment(n["name"]): int(n["ii_cycles"]) for n in plan["nodes"]}
    design_ii = int(plan["ii_cycles"])
    res = []
    for cpp in sorted((out / "hls").glob("core*.cpp"), key=lambda q: int(re.sub(r"\D", "", q.stem) or 0)):
        core_text = cpp.read_text()
        calls = [(m.group(1), m.group(2)) for ln in core_text.splitlines() if (m := _PROCESS.match(ln))]
        fifos = _fifo_structs(core_text)
        for i, (call, ident) in enumerate(calls):
            p, node = {}, ""
            if kernel_name(call) == "ddr_fifo":
                p = fifos[_targs(call)[0]]
            if ident and (out / "hls" / f"{ident}.h").exists():
                text = (out / "hls" / f"{ident}.h").read_text()
                p = _struct(text)
                ty = re.search(rf"{ident}_ty\[\d+\] = \{{([^}}]*)\}}", text)
                if ty:  # bilinear2d's row taps
                    p["TY"] = tuple(int(v) for v in ty.group(1).split(","))
                m = _NODE.search(text)
                node = m.group(1) if m else ""
            plan_ii = node_ii.get(node, 0) or design_ii
            for suffix, label, cyc, pii in kernel_bounds(call, p):
                res.append(ProcBound(f"{cpp.stem}.p{i}{suffix}", label, node, cyc, plan_ii, pii))
    return res


def compare(bounds: list[ProcBound], procs, frames: int, frames0: int = 0, procs0=None) -> list[dict]:
    """Per process: counted cycles per frame (``procs``: a threaded csim's `ProcUse` list over
    ``frames`` frames; with ``procs0`` over ``frames0`` the steady state, the difference per
    frame), the static bound and the plan's ii, and whether either exceeds it by more than
    `TOLERANCE`."""
    first = {q.id: q.cycles for q in (procs0 or [])}
    rows = []
    for b in bounds:
        q = next((q for q in procs if q.id == b.id), None)
        counted = None
        if q is not None:
            counted = (q.cycles - first.get(b.id, 0)) / (frames - frames0) if procs0 else q.cycles / frames
        lim = b.plan_ii * (1 + TOLERANCE)
        rows.append({"id": b.id, "label": b.label, "node": b.node, "plan_ii": b.plan_ii,
                     "counted": counted, "bound": b.bound, "port_ii": b.port_ii,
                     "over": (counted is not None and counted > lim) or b.bound > lim})
    return rows
