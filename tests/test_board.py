"""Tests of bbgrap_hls.board: bundled boards, derived numbers and bad-input messages."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import pytest
import yaml

from bbgrap_hls import board as board_module
from bbgrap_hls.board import (
    RESOURCES,
    Board,
    Core,
    bundled_board_names,
    list_boards,
    load_board,
)
from bbgrap_hls.errors import BadInputError

# name: (cores, dsp, bram18, uram, lut, clock_mhz); the same table is in docs/board.md.
EXPECTED_TOTALS = {
    "pynq-z2": (1, 220, 280, 0, 53_200, 100),
    "zcu102": (1, 2_520, 1_824, 0, 274_080, 200),
    "kv260": (1, 1_248, 288, 64, 117_120, 200),
    "zcu104": (1, 1_728, 624, 96, 230_400, 200),
    "u250": (4, 12_288, 5_376, 1_280, 1_728_000, 300),
    "u280": (3, 9_024, 4_032, 960, 1_303_680, 300),
    "u55c": (3, 9_024, 4_032, 960, 1_303_680, 300),
    "u50": (2, 5_952, 2_688, 640, 871_680, 300),
    "vu9p-quad": (4, 6_840, 4_320, 960, 1_182_240, 300),
    "2x-u250": (8, 24_576, 10_752, 2_560, 3_456_000, 300),
}


def test_bundled_names_are_the_documented_boards():
    assert bundled_board_names() == sorted(EXPECTED_TOTALS)


@pytest.mark.parametrize("name", sorted(EXPECTED_TOTALS))
def test_bundled_board_totals(name):
    board = load_board(name)
    cores, dsp, bram18, uram, lut, clock = EXPECTED_TOTALS[name]
    assert board.name == name
    assert len(board.cores) == cores
    assert (board.total_dsp, board.total_bram18, board.total_uram, board.total_lut) == (
        dsp,
        bram18,
        uram,
        lut,
    )
    assert board.clock_mhz == clock
    assert board.source.strip()
    assert [c.id for c in board.cores] == list(range(cores))


@pytest.mark.parametrize("name", sorted(EXPECTED_TOTALS))
def test_bundled_board_limits_are_floor_of_budget_times_cap(name):
    for core in load_board(name).cores:
        for res in RESOURCES:
            expected = math.floor(getattr(core, res) * core.cap)
            assert getattr(core, f"{res}_limit") == expected == core.limit(res)


@pytest.mark.parametrize("name", sorted(EXPECTED_TOTALS))
def test_link_lookup_is_symmetric(name):
    board = load_board(name)
    for a in range(len(board.cores)):
        for b in range(len(board.cores)):
            assert board.link(a, b) is board.link(b, a)
            assert (board.link(a, b) is not None) == (b in board.neighbours(a))
    for link in board.links:
        assert board.link(link.a, link.b) is link
        assert link.other(link.a) == link.b


@pytest.mark.parametrize("name", sorted(EXPECTED_TOTALS))
def test_to_dict_is_json(name):
    data = json.loads(json.dumps(load_board(name).to_dict()))
    assert data["name"] == name
    assert data["totals"]["dsp"] == EXPECTED_TOTALS[name][1]


def test_list_boards_in_name_order():
    assert [b.name for b in list_boards()] == bundled_board_names()


def test_load_by_path_equals_load_by_name(tmp_path):
    from bbgrap_hls import board as board_module

    text = (board_module._bundled_dir() / "u250.yaml").read_text(encoding="utf-8")
    path = tmp_path / "copy.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_board(str(path)) == load_board("u250")
    assert load_board(path) == load_board("u250")


def test_two_u250_cards_are_joined_only_by_network_links():
    board = load_board("2x-u250")
    card = {c.id: c.id // 4 for c in board.cores}
    crossing = [ln for ln in board.links if card[ln.a] != card[ln.b]]
    assert crossing
    assert all(ln.kind == "network" for ln in crossing)
    assert all(ln.kind != "network" for ln in board.links if card[ln.a] == card[ln.b])
    for mem in board.memories:
        assert len({card[k] for k in mem.cores}) == 1
    assert board.memory_for(0, 4) is None


def test_u250_chain_and_memories():
    board = load_board("u250")
    assert board.neighbours(0) == (1,)
    assert board.neighbours(1) == (0, 2)
    assert board.link(0, 2) is None
    assert all(ln.kind == "slr-crossing" for ln in board.links)
    # every SLR reaches every DDR4 channel through the shell interconnect
    assert board.memory_for(0, 3) is not None
    assert sum(m.bandwidth_gbps for m in board.memories) == pytest.approx(77, abs=0.5)
    # 19.2 GB/s at 300 MHz is 64 bytes per cycle.
    assert board.bytes_per_cycle(board.memories[0]) == pytest.approx(64.0)


def test_vu9p_quad_is_a_ring():
    board = load_board("vu9p-quad")
    assert [board.neighbours(k) for k in range(4)] == [(1, 3), (0, 2), (1, 3), (0, 2)]
    assert board.memory_for(0, 2).name == "ddr0"


def test_memory_for_prefers_highest_bandwidth():
    board = load_board("u280")
    assert board.memory_for(0, 0).kind == "hbm2"
    assert board.memory_for(0, 2).kind == "hbm2"


def test_limit_uses_the_written_decimal():
    # 100 * 0.29 is 28.999999999999996 in binary floating point; the limit is 29.
    core = Core(id=0, name="c", slr=None, device="d", dsp=100, bram18=100, uram=0, lut=100, cap=0.29)
    assert core.dsp_limit == 29
    assert core.uram_limit == 0


def test_board_is_frozen_and_hashable():
    board = load_board("pynq-z2")
    with pytest.raises(AttributeError):
        board.name = "x"  # type: ignore[misc]
    assert isinstance(hash(board), int)
    assert isinstance(board, Board)


# --- bad input -------------------------------------------------------------------------

VALID = {
    "name": "tiny",
    "source": "test",
    "clock_mhz": 200,
    "defaults": {"device": "xc", "cap": 0.5},
    "cores": [
        {"id": 0, "dsp": 10, "bram18": 20, "uram": 0, "lut": 1000},
        {"id": 1, "dsp": 10, "bram18": 20, "uram": 0, "lut": 1000},
        {"id": 2, "dsp": 10, "bram18": 20, "uram": 0, "lut": 1000},
    ],
    "links": [{"a": 0, "b": 1, "width_bits": 64, "latency_cycles": 2, "kind": "slr-crossing"}],
    "memories": [
        {"name": "ddr", "kind": "ddr4", "bandwidth_gbps": 10, "cores": [0, 1], "latency_cycles": 50}
    ],
    "host": {"kind": "pcie", "bandwidth_gbps": 12, "latency_us": 2},
}


def _write(tmp_path, data, name="board.yaml"):
    path = tmp_path / name
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_fixture_loads_with_defaults(tmp_path):
    board = load_board(str(_write(tmp_path, VALID)))
    assert [c.cap for c in board.cores] == [0.5] * 3
    assert board.cores[1].name == "core1"
    assert board.cores[1].dsp_limit == 5
    assert board.cores[0].slr is None
    assert board.description == ""


def _set(path, value):
    """Return a mutation that sets ``value`` at ``path`` (a tuple of keys and indices)."""

    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _drop(path):
    def mutate(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


BAD = {
    "unknown-top-key": (_set(("colour",), "red"), "colour: unknown key; allowed keys: name,"),
    "unknown-core-key": (_set(("cores", 1, "dsps"), 3), "cores[1].dsps: unknown key"),
    "missing-name": (_drop(("name",)), "name: missing required key"),
    "missing-core-dsp": (_drop(("cores", 2, "dsp")), "cores[2].dsp: missing required key"),
    "missing-host": (_drop(("host",)), "host: missing required key"),
    "missing-host-kind": (_drop(("host", "kind")), "host.kind: missing required key"),
    "dsp-not-int": (_set(("cores", 2, "dsp"), "abc"), "cores[2].dsp: expected a non-negative integer, got 'abc'"),
    "dsp-bool": (_set(("cores", 0, "dsp"), True), "cores[0].dsp: expected a non-negative integer, got True"),
    "dsp-float": (_set(("cores", 0, "dsp"), 1.5), "cores[0].dsp: expected a non-negative integer, got 1.5"),
    "lut-zero": (_set(("cores", 0, "lut"), 0), "cores[0].lut: expected a positive integer, got 0"),
    "uram-negative": (_set(("cores", 0, "uram"), -1), "cores[0].uram: expected a non-negative integer"),
    "clock-zero": (_set(("clock_mhz",), 0), "clock_mhz: expected a positive number, got 0"),
    "clock-text": (_set(("clock_mhz",), "fast"), "clock_mhz: expected a positive number, got 'fast'"),
    "cap-above-one": (_set(("cores", 1, "cap"), 1.5), "cores[1].cap: expected a number in (0, 1], got 1.5"),
    "cap-zero": (_set(("cores", 1, "cap"), 0), "cores[1].cap: expected a number in (0, 1], got 0"),
    "defaults-cap": (_set(("defaults", "cap"), 2), "defaults.cap: expected a number in (0, 1], got 2"),
    "defaults-id": (_set(("defaults", "id"), 0), "defaults.id: unknown key"),
    "cores-empty": (_set(("cores",), []), "cores: expected a non-empty list of core mappings"),
    "core-not-mapping": (_set(("cores", 1), 5), "cores[1]: expected a mapping, got 5"),
    "duplicate-core-id": (_set(("cores", 1, "id"), 0), "cores[1].id: duplicate core id 0 (also cores[0])"),
    "core-id-gap": (_set(("cores", 2, "id"), 5), "cores[2].id: expected 2"),
    "link-missing-core": (_set(("links", 0, "b"), 7), "links[0].b: expected the id of a core (0..2), got 7"),
    "link-self": (_set(("links", 0, "b"), 0), "links[0].b: expected a core other than a (0)"),
    "link-width": (_set(("links", 0, "width_bits"), 0), "links[0].width_bits: expected a positive integer"),
    "link-kind": (_drop(("links", 0, "kind")), "links[0].kind: missing required key"),
    "links-not-list": (_set(("links",), {"a": 0}), "links: expected a list"),
    "memory-missing-core": (
        _set(("memories", 0, "cores"), [0, 9]),
        "memories[0].cores[1]: expected the id of a core",
    ),
    "memory-no-cores": (_set(("memories", 0, "cores"), []), "memories[0].cores: expected a non-empty list"),
    "memory-repeated-core": (_set(("memories", 0, "cores"), [1, 1]), "memories[0].cores: expected distinct"),
    "memory-bandwidth": (
        _set(("memories", 0, "bandwidth_gbps"), -3),
        "memories[0].bandwidth_gbps: expected a positive",
    ),
    "host-latency": (_set(("host", "latency_us"), -1), "host.latency_us: expected a non-negative number"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_board_names_file_and_key(tmp_path, case):
    mutate, expected = BAD[case]
    data = copy.deepcopy(VALID)
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(BadInputError) as info:
        load_board(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert expected in message, message


def test_duplicate_link_is_rejected(tmp_path):
    data = copy.deepcopy(VALID)
    data["links"].append({"a": 1, "b": 0, "width_bits": 8, "latency_cycles": 1, "kind": "x"})
    with pytest.raises(
        BadInputError, match=r"links\[1\]: duplicate link between cores 0 and 1 \(also links\[0\]\)"
    ):
        load_board(str(_write(tmp_path, data)))


def test_duplicate_memory_name_is_rejected(tmp_path):
    data = copy.deepcopy(VALID)
    data["memories"].append(dict(data["memories"][0]))
    with pytest.raises(BadInputError, match=r"memories\[1\]\.name: duplicate memory name"):
        load_board(str(_write(tmp_path, data)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\ncores: [\n  {dsp: 1\n", "line "),
        ("name: a\nsource: s\nname: b\n", "line 3: invalid YAML: duplicate key 'name'"),
        ("", "the file is empty"),
        ("# only a comment\n", "the file is empty"),
        ("- 1\n- 2\n", "expected a mapping, got [1, 2]"),
    ],
)
def test_bad_yaml_text(tmp_path, text, expected):
    path = _write(tmp_path, text)
    with pytest.raises(BadInputError) as info:
        load_board(str(path))
    assert str(info.value).startswith(f"{path}: ")
    assert expected in str(info.value)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(BadInputError, match="nope.yaml: board file not found"):
        load_board(str(path))


def test_directory_is_not_a_board(tmp_path):
    with pytest.raises(BadInputError, match="got a directory"):
        load_board(tmp_path)


def test_unknown_bundled_name_lists_the_bundled_boards():
    with pytest.raises(BadInputError, match=r"unknown board 'u9999'.*u250"):
        load_board("u9999")


# --- docs/board.md stays true ------------------------------------------------------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "board.md"


def test_docs_example_loads(tmp_path):
    example = re.search(r"## Example\n\n```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)
    board = load_board(str(_write(tmp_path, example)))
    assert board.cores[1].cap == 0.7
    assert board.cores[1].dsp_limit == math.floor(3072 * 0.7)


def test_docs_table_matches_bundled_totals():
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 7 and cells[0].startswith("`"):
            numbers = [int(c.replace(",", "")) for c in cells[2:7]]
            rows[cells[0].strip("`")] = (int(cells[1].split()[0]), *numbers[1:], numbers[0])
    assert rows == EXPECTED_TOTALS


def test_bundled_boards_found_without_installed_package_data(monkeypatch):
    from bbgrap_hls import board as board_module

    def missing(name):
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(board_module.resources, "files", missing)
    assert bundled_board_names() == sorted(EXPECTED_TOTALS)
    assert load_board("u55c").total_dsp == 9_024


# name: (home memory of each core, bytes per cycle each core may read there). Worked by hand
# from the files: u250 64 B/cycle per DDR4 channel (19.2 GB/s at 300 MHz, one 512-bit port)
# x 0.8, one channel per SLR; zcu102, zcu104, kv260 four 128-bit ports (HP1-3 and HPC0: 64
# B/cycle, less than the DDR's 96) x 0.8; u280 HBM 32 x 256-bit ports = 1,024 B/cycle x 0.8 over three SLRs.
EXPECTED_OFFCHIP = {
    "u250": (["ddr0", "ddr1", "ddr2", "ddr3"], 51.2),
    "zcu102": (["ps-ddr"], 51.2),
    "kv260": (["ps-ddr"], 51.2),
    "zcu104": (["ps-ddr"], 51.2),
    "u280": (["hbm", "hbm", "hbm"], 1024 * 0.8 / 3),
    "vu9p-quad": (["ddr0"] * 4, 64 * 0.8 / 4),
    "pynq-z2": (["ddr"], 21 * 0.8),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_OFFCHIP))
def test_home_memory_and_offchip_share(name):
    board = load_board(name)
    homes, share = EXPECTED_OFFCHIP[name]
    assert [board.home_memory(c.id).name for c in board.cores] == homes
    for c in board.cores:
        assert board.offchip_share(c.id) == pytest.approx(share)


@pytest.mark.parametrize("key, value, expected", [
    ("ports", 0, "expected a positive integer"),
    ("port_width_bits", 100, "expected a whole number of bytes"),
    ("cap", 1.5, "expected a number in (0, 1]"),
])
def test_bad_memory_port_keys_name_the_key(tmp_path, key, value, expected):
    text = (board_module._bundled_dir() / "zcu102.yaml").read_text(encoding="utf-8").replace("    latency_cycles: 50", f"    latency_cycles: 50\n    {key}: {value}", 1)
    text = text.replace("    ports: 4\n", "", 1) if key == "ports" else text
    text = text.replace("    port_width_bits: 128\n", "", 1) if key == "port_width_bits" else text
    path = tmp_path / "b.yaml"
    path.write_text(text)
    with pytest.raises(BadInputError, match=rf"b.yaml: memories\[0\]\.{key}: {re.escape(expected)}"):
        load_board(path)
