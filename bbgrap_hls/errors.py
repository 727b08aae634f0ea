"""Exceptions with the exit codes of the command line (DESIGN.md, "Command line").

Every error a user can cause is one of these; the CLI prints its message as one line
and exits with its ``exit_code``. Anything else is a bug and shows a traceback.
"""

from __future__ import annotations


class BbgrapError(Exception):
    """Base of all errors the command line reports without a traceback."""

    exit_code = 2


class BadInputError(BbgrapError):
    """Bad model, board, calibration or input file, or bad usage (exit code 2)."""

    exit_code = 2


class UnsupportedError(BadInputError):
    """The model uses operators or schemes bbgrap-hls does not implement (exit 2)."""

    exit_code = 2


class InfeasibleError(BbgrapError):
    """No plan fits the board's budgets (exit code 3); the message says what is short."""

    exit_code = 3


class MismatchError(BbgrapError):
    """A simulation disagreed with the integer reference (exit code 1)."""

    exit_code = 1
