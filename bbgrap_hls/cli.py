"""The ``bbgrap-hls`` command line.

Each subcommand lives in ``bbgrap_hls/commands/<name>.py`` with two functions:
``add_parser(subparsers)`` declares its arguments and ``run(args) -> int`` does the work.
Errors a user can cause are `BbgrapError`s: printed as one line with the documented
exit code (0 ok, 1 verification mismatch, 2 bad input, 3 infeasible); ``--debug``
shows the traceback instead. Long steps show progress on stderr (`bbgrap_hls.progress`);
``--quiet`` turns it off.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Our matrices are small: BLAS threads only fight each other (and the other processes of
# a parallel test run) for the cores. Measured: a 16×144 by 144×1024 product took 32 ms
# with OpenBLAS threads on a loaded 2-core machine, 0.7 ms with one thread.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import warnings  # noqa: E402

from bbgrap_hls import __version__  # noqa: E402
from bbgrap_hls.errors import BbgrapError  # noqa: E402
from bbgrap_hls.safetext import SafeStream  # noqa: E402

COMMANDS = ("inspect", "run", "boards", "plan", "gen", "csim", "sim")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors: one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bbgrap-hls", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"bbgrap-hls {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"bbgrap_hls.commands.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"bbgrap_hls.commands.{name}":
                continue  # command not built yet
            raise
        p = mod.add_parser(sub)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
        p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress display")
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    from bbgrap_hls import progress

    was_quiet = progress.is_quiet()
    progress.set_quiet(was_quiet or getattr(args, "quiet", False))
    progress.set_prefix(f"bbgrap-hls {args.command}")
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(out), SafeStream(err)
    try:
        with warnings.catch_warnings():
            if not getattr(args, "debug", False):  # one line per warning, like errors
                warnings.showwarning = lambda msg, *a, **k: print(
                    f"bbgrap-hls {args.command}: warning: {' '.join(str(msg).split())}", file=sys.stderr)
            return int(args._run(args) or 0)
    except BbgrapError as e:
        if getattr(args, "debug", False):
            raise
        print(f"bbgrap-hls {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"bbgrap-hls {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout, sys.stderr = out, err
        progress.set_quiet(was_quiet)
        progress.set_prefix("bbgrap-hls")


if __name__ == "__main__":
    sys.exit(main())
