"""The RTL form of a layer-engine design: ``rtl/`` of an engine gen folder (docs/rtl.md,
"Engine designs").

The engine's RTL is one module, ``hw/rtl/engine_top.sv`` (the sequencer and the three
units), whose HDL parameters size it for a program; the program itself is its ROM
(``$readmemh``), and the maps and weights live in board memory. `rtl_files` writes, for an
`engine_program.EngineProgram` and the `model.engine_plan.EnginePlan` it was built for:

- ``rtl/engine_params.json``: the top's parameters (`hdl_params`: ``PE``, ``SIMD``,
  ``DATA_W``, ``ROM_WORDS``, ``IBUF_WORDS``, ``TILE_WORDS``, ``TAPS``, ``PACK``, ``ELANES``,
  ``EBURST``, ``CHUNKS``, ``KB``, ...), the memory the plan assumed (``latency``,
  ``period``), the memory map, the plan's frame cycles and the cycle model's for this build;
- ``rtl/prog.mem``: the ROM (`rom_words`, one 32-bit hex word a line);
- ``rtl/engine_design.sv``: a wrapper ``engine_design`` instantiating ``engine_top`` with
  those parameters, its ports those of the top: what a user synthesises and what ``sim``
  builds.

The parameters are those the plan's cycle model assumed (`model.engine_plan._timed`'s
``engine_top.TopParams``): the conv unit's write burst and queue (`model.engine.BURST`,
``QUEUE``), the element-wise unit's burst and chunks (``TopParams``' defaults, 64 and 4, which
`engine_resources.resources` also counts), the window unit's ``KB`` sized as the plan sizes it,
``TAPS``, ``PACK`` and ``ELANES`` the plan's; so `model.engine_top.frame_cycles` of the
program with `top_params` of these parameters is the plan's frame when the program is the
plan's (its beat, its row bands). gen's program is at the HLS kernels' 64-byte beat whatever
beat the plan timed (`codegen.engine_gen`); for a plan at another beat the RTL is built at the
program's beat (the element-wise lanes the same share of a beat) on the memory's timing at
that beat (`memory`), and ``engine_params.json`` says so in its ``notes``: its frame cycles
are then the model's of this build (``model_cycles``), not the plan's.
"""

from __future__ import annotations

import json
from pathlib import Path

from bbgrap_hls.codegen import engine_eltwise as ee
from bbgrap_hls.codegen import engine_files
from bbgrap_hls.codegen import engine_image as ei
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.codegen import engine_window as ew
from bbgrap_hls.model import engine as conv_model
from bbgrap_hls.model.engine_top import TopParams, frame_cycles

DIR = "rtl"
TOP = "engine_top"
WRAPPER = "engine_design"
PROG_FILE = "prog.mem"
MODULES = ("engine_top", "conv_engine", "conv_load", "axi_bursts", "mac2", "engine_window", "engine_eltwise", "rq_lane",
           "rq_round")
"""The ``hw/rtl`` modules the top instantiates."""
HDL_KEYS = ("PE", "SIMD", "DATA_W", "FEAT_BASE", "W_BASE", "ROM_WORDS", "IBUF_WORDS", "TILE_WORDS", "BURST", "WQ",
            "WMAX", "WOMAX", "KB", "KMAX", "TAPS", "WNF", "EBURST", "CHUNKS", "CMAX", "ENF", "PACK", "ELANES",
            "IBUF_URAM", "TMEM_URAM")
"""The top's parameters a build sets (``ADDR_W`` and the counters' widths keep their defaults)."""
ADDRESS_KEYS = ("FEAT_BASE", "W_BASE")
"""Parameters that are 64-bit addresses (sized literals in SystemVerilog)."""
LAST = 1 << 31
"""The head word's last-step bit."""
PAGE = 4096
"""The units cut bursts at 4 KB: the images start on 4 KB boundaries."""
ADDR_W = 32
"""The top's address width (its default)."""

_DEFAULTS = TopParams(latency=1)
EBURST = _DEFAULTS.eburst
"""The element-wise unit's burst (beats) the plan's model and resources assume."""
CHUNKS = _DEFAULTS.chunks
"""The element-wise unit's chunks in flight the plan's model and resources assume."""


def _up(n: int, k: int) -> int:
    return -(-n // k) * k


def rom_words(program: ep.EngineProgram) -> list[int]:
    """The top's program ROM: per step a head word (its unit's index in ``engine_program.UNITS``,
    `LAST` on the last step), then its descriptor's words (two's complement)."""
    words: list[int] = []
    for i, st in enumerate(program.steps):
        words.append(ep.UNITS.index(st.unit) | (LAST if i == len(program.steps) - 1 else 0))
        words += [v & 0xFFFFFFFF for v in st.words()]
    return words


def rom_text(program: ep.EngineProgram) -> str:
    """``prog.mem``: `rom_words`, one 8-digit hex word a line (``$readmemh``)."""
    return "".join(f"{w:08x}\n" for w in rom_words(program))


def hdl_params(programs: list[ep.EngineProgram], taps: int = 1, eburst: int = EBURST, chunks: int = CHUNKS,
               pack: int = 0, lanes: int | None = None, feat_base: int = PAGE, in_buffer: int | None = None) -> dict:
    """The top's HDL parameters (`HDL_KEYS`) sized for every program in ``programs`` (same
    ``pe``, ``simd``, ``beat``); each window step checked against them (`engine_window.check`).

    Args:
        taps: the window unit's ``TAPS``.
        eburst, chunks: the element-wise unit's ``EBURST`` and ``CHUNKS`` (default: the
            plan's, `EBURST` and `CHUNKS`).
        pack: the conv unit's ``PACK`` (the same cycles).
        lanes: the element-wise unit's ``ELANES`` (None: a beat's).
        feat_base: ``FEAT_BASE``, the feature image's address (4 KB aligned); ``W_BASE``, the
            weight image's, is the next 4 KB boundary after every program's feature image.
        in_buffer: the conv unit's input buffer in bytes (``IBUF_WORDS`` = ``in_buffer /
            SIMD``); None or less than a program needs: what the programs need.
    """
    pe, simd, beat = programs[0].pe, programs[0].simd, programs[0].beat
    assert all((p.pe, p.simd, p.beat) == (pe, simd, beat) for p in programs)
    assert feat_base % PAGE == 0, f"FEAT_BASE {feat_base} is not 4 KB aligned"
    hp = {"PE": pe, "SIMD": simd, "DATA_W": 8 * beat, "FEAT_BASE": feat_base, "W_BASE": feat_base + PAGE,
          "ROM_WORDS": 1, "IBUF_WORDS": max(1, (in_buffer or 0) // simd), "TILE_WORDS": 1,
          "BURST": conv_model.BURST, "WQ": conv_model.QUEUE, "WMAX": beat // pe, "WOMAX": 1, "KB": 2, "KMAX": 1,
          "TAPS": taps, "WNF": len(ew.WINDOW_FIELDS), "EBURST": eburst, "CHUNKS": chunks, "CMAX": pe,
          "ENF": len(ee.ELTWISE_FIELDS), "PACK": int(pack), "ELANES": lanes or beat, "IBUF_URAM": 0, "TMEM_URAM": 0}
    for prog in programs:
        _fit(hp, prog)
    for prog in programs:
        for st in prog.steps:
            if st.unit == "window":
                ew.check(st.words(), pe, beat, hp["WMAX"], hp["WOMAX"], hp["KB"], hp["KMAX"])
    return hp


def _fit(hp: dict, prog: ep.EngineProgram) -> None:
    """Grow ``hp``'s sizes to what ``prog`` needs (`engine_files.unit_sizes`, the ROM, the
    conv steps' input buffer, the window steps' output width)."""
    sizes = engine_files.unit_sizes(prog)
    hp["ROM_WORDS"] = max(hp["ROM_WORDS"], len(rom_words(prog)))
    hp["W_BASE"] = max(hp["W_BASE"], hp["FEAT_BASE"] + _up(prog.feature_size, PAGE))
    for k in ("TILE_WORDS", "KMAX", "CMAX", "WMAX"):
        hp[k] = max(hp[k], sizes[k])
    hp["KB"] = max(hp["KB"], 1 << (sizes["KB"] - 1).bit_length())
    for st in prog.steps:
        if st.unit == "conv":
            hp["IBUF_WORDS"] = max(hp["IBUF_WORDS"], ei.in_buffer_bytes(st.words(), prog.pe, prog.beat) // prog.simd)
        elif st.unit == "window":
            hp["WOMAX"] = max(hp["WOMAX"], st.desc["WO"])


def top_params(hp: dict, latency: int, period: int) -> TopParams:
    """The cycle model's parameters of a build on a memory of ``latency`` and ``period``."""
    return TopParams(latency=latency, period=period, kb=hp["KB"], taps=hp["TAPS"], burst=hp["BURST"],
                     queue=hp["WQ"], eburst=hp["EBURST"], chunks=hp["CHUNKS"], lanes=hp["ELANES"])


def memory(program: ep.EngineProgram, plan, board=None) -> tuple[int, int, list[str]]:
    """The memory ``(latency, period)`` the build runs on, and notes: the plan's, when the
    program is at the plan's beat; else (gen's HLS kernels take 64-byte words whatever beat
    the plan timed) `engine_plan.memory_timing` at the program's beat on ``board`` (None: the
    bundled board the plan names; a board not bundled: the plan's period scaled by the beats)."""
    if program.beat == plan.beat:
        return plan.latency, plan.period, []
    from bbgrap_hls.model.engine_plan import memory_timing

    if board is None:
        from bbgrap_hls.board import bundled_board_names, load_board

        board = load_board(plan.board) if plan.board in bundled_board_names() else None
    if board is not None:
        latency, period = memory_timing(board, plan.core, program.beat)
        how = f"the memory's period at {program.beat}-byte beats on {board.name}"
    else:
        latency, period = plan.latency, -(-plan.period * program.beat // plan.beat)
        how = "the plan's period scaled by the beats (board not bundled)"
    return latency, period, [f"the plan timed {plan.beat}-byte beats, the program (gen's) is at {program.beat}: "
                             f"the RTL is built at the program's beat, memory latency {latency}, period {period} "
                             f"({how}); its frame cycles are the model's of this build, not the plan's"]


def plan_params(program: ep.EngineProgram, plan) -> dict:
    """The top's parameters for ``program`` on the engine ``plan`` (an `EnginePlan`) chose:
    its ``taps``, ``pack``, the element-wise lanes (the plan's share of a beat at the
    program's beat) and input buffer (at the plan's beat), the conv unit's URAM
    (``IBUF_URAM``, ``TMEM_URAM``), the feature image at address 0."""
    same = program.beat == plan.beat
    lanes = plan.lanes * program.beat // plan.beat if plan.lanes else None
    hp = hdl_params([program], taps=plan.taps, pack=int(plan.pack), lanes=lanes, feat_base=0,
                    in_buffer=plan.in_buffer if same else None)
    hp["IBUF_URAM"], hp["TMEM_URAM"] = int(getattr(plan, "ibuf_uram", False)), getattr(plan, "tile_uram", 0)
    return hp


def _notes(hp: dict, program: ep.EngineProgram, plan) -> list[str]:
    """Where the build differs from what the plan counted (empty when it does not)."""
    notes = []
    if program.beat == plan.beat and hp["IBUF_WORDS"] * program.simd > plan.in_buffer:
        notes.append(f"the program's convs need a {hp['IBUF_WORDS'] * program.simd:,}-byte input buffer, the plan "
                     f"counted {plan.in_buffer:,}: IBUF_WORDS sized for the program")
    bands = sum(st.bands for st in plan.steps if st.unit == "conv")
    convs = sum(st.unit == "conv" for st in program.steps)
    if bands != convs:
        notes.append(f"the plan times {bands} conv steps (row bands), the program runs {convs}: its frame cycles "
                     "differ from the plan's")
    return notes


def _literal(k: str, v: int) -> str:
    return f"64'h{v:x}" if k in ADDRESS_KEYS else str(v)


def wrapper(hp: dict, name: str = WRAPPER, prog_file: str = PROG_FILE) -> str:
    """``engine_design.sv``: module ``name`` instantiating `TOP` with ``hp`` (`HDL_KEYS`),
    ``PROG_FILE`` a parameter (default ``prog_file``, read relative to the simulator's or
    synthesis tool's working folder), the top's ports passed through."""
    params = ",\n".join(f"    .{k}({_literal(k, hp[k])})" for k in HDL_KEYS)
    ports = ",\n".join(f"    {d} {t}{n}" for d, t, n in _ports(hp["DATA_W"]))
    conns = ",\n".join(f"    .{n}({n})" for _, _, n in _ports(hp["DATA_W"]))
    return (f"`default_nettype none\n"
            f"// Generated by bbgrap-hls (codegen/engine_rtl.py): the layer engine sized for this design's\n"
            f"// program (rtl/engine_params.json), its ROM read from PROG_FILE (rtl/prog.mem). Feature image\n"
            f"// at FEAT_BASE, weight image (engine/weights.bin) at W_BASE, both behind the AXI4 ports.\n"
            f"module {name} #(\n    parameter PROG_FILE = \"{prog_file}\"\n) (\n{ports}\n);\n"
            f"  {TOP} #(\n{params},\n    .PROG_FILE(PROG_FILE)\n  ) u_engine (\n{conns}\n  );\n"
            f"endmodule\n\n`default_nettype wire\n")


def _ports(data_w: int) -> list[tuple[str, str, str]]:
    """The top's ports: (direction, type and width, name) on ``data_w``-bit data (32-bit addresses)."""
    a, d, s = f"[{ADDR_W - 1}:0] ", f"[{data_w - 1}:0] ", f"[{data_w // 8 - 1}:0] "
    out = [("input ", "wire  ", "clk"), ("input ", "wire  ", "rst"), ("input ", "wire  ", "start"),
           ("output", "logic ", "busy"), ("output", "logic ", "step_end"), ("output", "logic ", "done")]
    for p, write in (("f", True), ("w", False)):
        m = f"m_axi_{p}_"
        out += [("output", "logic " + a, m + "araddr"), ("output", "logic [7:0] ", m + "arlen"),
                ("output", "logic [2:0] ", m + "arsize"), ("output", "logic [1:0] ", m + "arburst"),
                ("output", "logic ", m + "arvalid"), ("input ", "wire  ", m + "arready"),
                ("input ", "wire  " + d, m + "rdata"), ("input ", "wire  [1:0] ", m + "rresp"),
                ("input ", "wire  ", m + "rlast"), ("input ", "wire  ", m + "rvalid"), ("output", "logic ", m + "rready")]
        if write:
            out += [("output", "logic " + a, m + "awaddr"), ("output", "logic [7:0] ", m + "awlen"),
                    ("output", "logic [2:0] ", m + "awsize"), ("output", "logic [1:0] ", m + "awburst"),
                    ("output", "logic ", m + "awvalid"), ("input ", "wire  ", m + "awready"),
                    ("output", "logic " + d, m + "wdata"), ("output", "logic " + s, m + "wstrb"),
                    ("output", "logic ", m + "wlast"), ("output", "logic ", m + "wvalid"),
                    ("input ", "wire  ", m + "wready"), ("input ", "wire  [1:0] ", m + "bresp"),
                    ("input ", "wire  ", m + "bvalid"), ("output", "logic ", m + "bready")]
    return out


def params_doc(program: ep.EngineProgram, plan, hp: dict, board=None) -> dict:
    """``engine_params.json``: the parameters, the memory (`memory`) and map, the plan's frame
    cycles and the cycle model's for this build (None when a conv step's writes cannot keep
    up, which the plan charges by a bound: ``exact`` false)."""
    latency, period, notes = memory(program, plan, board)
    notes += _notes(hp, program, plan)
    try:
        model = frame_cycles(program, top_params(hp, latency, period)).cycles
    except ValueError as e:  # a write-bound conv step: the plan charges it by a bound too
        model = None
        notes.append(f"no exact cycle model: {e}")
    return {"top": TOP, "wrapper": WRAPPER, "modules": list(MODULES), "prog_file": PROG_FILE,
            "parameters": {k: hp[k] for k in HDL_KEYS},
            "memory": {"latency": latency, "period": period, "beat": program.beat},
            "plan_memory": {"latency": plan.latency, "period": plan.period, "beat": plan.beat},
            "map": {"feature_base": hp["FEAT_BASE"], "feature_bytes": program.feature_size,
                    "weight_base": hp["W_BASE"], "weight_bytes": len(program.weights)},
            "rom_words": len(rom_words(program)), "plan_cycles": plan.cycles, "model_cycles": model,
            "exact": all(st.exact for st in plan.steps), "notes": notes}


def rtl_files(program: ep.EngineProgram, plan, board=None) -> dict[str, bytes]:
    """``rtl/engine_params.json``, ``rtl/prog.mem`` and ``rtl/engine_design.sv`` for
    ``program`` on ``plan`` (see the module's text; ``board``: `memory`'s, for a program at
    another beat than the plan's).

    Raises:
        ValueError: the program's ``PE`` x ``SIMD`` are not the plan's, or a window step does
            not fit the sizes (`engine_window.check`).
    """
    if (program.pe, program.simd) != (plan.pe, plan.simd):
        raise ValueError(f"engine rtl: program of PE x SIMD {program.pe} x {program.simd}, plan of "
                         f"{plan.pe} x {plan.simd}")
    hp = plan_params(program, plan)
    doc = params_doc(program, plan, hp, board)
    return {f"{DIR}/engine_params.json": (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode(),
            f"{DIR}/{PROG_FILE}": rom_text(program).encode(),
            f"{DIR}/{WRAPPER}.sv": wrapper(hp).encode()}


def load_params(folder: str | Path) -> dict:
    """``rtl/engine_params.json`` of a gen folder, as written."""
    return json.loads((Path(folder) / DIR / "engine_params.json").read_text())
