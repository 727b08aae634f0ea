"""The command-line shell and the ``boards`` command."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bbgrap_hls.board import bundled_board_names
from bbgrap_hls.cli import main


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["frobnicate"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and len(err.strip().splitlines()) == 1


def test_boards_json_lists_every_bundled_board(capsys):
    assert main(["boards", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in data] == bundled_board_names()
    u250 = next(b for b in data if b["name"] == "u250")
    assert len(u250["cores"]) == 4


def test_boards_table_and_detail(capsys):
    assert main(["boards"]) == 0
    out = capsys.readouterr().out
    for name in bundled_board_names():
        assert name in out
    assert main(["boards", "u280"]) == 0
    assert "core 2" in capsys.readouterr().out


def test_unknown_board_is_one_line_exit_2(capsys):
    assert main(["boards", "no-such-board"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-board" in err[0]


def test_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "bbgrap_hls.cli", "boards", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)
