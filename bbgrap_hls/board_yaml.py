"""Reading a board file: YAML with unique keys, checked against the schema of docs/board.md.

Every problem raises :class:`BadInputError` naming the file, the key path
(``cores[2].dsp``) and what was expected; `bbgrap_hls.board.parse_board` is the entry.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from bbgrap_hls.board import DEFAULT_CAP, RESOURCES, Board, Core, HostLink, Link, Memory
from bbgrap_hls.errors import BadInputError


def parse(content: str, label: str) -> Board:
    """Build a board from YAML text; ``label`` names the file in error messages.

    Raises:
        BadInputError: YAML syntax errors or anything that breaks the schema.
    """
    try:
        data = yaml.load(content, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise BadInputError(f"{label}: {where}invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise BadInputError(f"{label}: invalid YAML: {exc}") from None
    if data is None:
        raise BadInputError(f"{label}: the file is empty; expected a board mapping")
    return _Parser(label).board(data)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key written twice in one mapping (YAML keeps the last)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let the base constructor report it
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# Value kinds: (what the message says was expected, test).
_POS_INT = ("a positive integer", lambda v: _is_int(v) and v > 0)
_NONNEG_INT = ("a non-negative integer", lambda v: _is_int(v) and v >= 0)
_SLR = ("a non-negative integer or null", lambda v: v is None or (_is_int(v) and v >= 0))
_POS_NUM = ("a positive number", lambda v: _is_num(v) and v > 0)
_NONNEG_NUM = ("a non-negative number", lambda v: _is_num(v) and v >= 0)
_CAP = ("a number in (0, 1]", lambda v: _is_num(v) and 0 < v <= 1)
_NAME = ("a non-empty string", lambda v: isinstance(v, str) and v.strip() != "")
_TEXT = ("a string", lambda v: isinstance(v, str))
_IDS = ("a non-empty list of core ids", lambda v: isinstance(v, list) and len(v) > 0)
_LIST = ("a list", lambda v: isinstance(v, list))

_MISSING = object()
_REQUIRED = object()

# Schema: key -> (kind, default or _REQUIRED), in the order docs/board.md lists them.
# fmt: off
_TOP = {
    "name": (_NAME, _REQUIRED), "description": (_TEXT, ""), "source": (_NAME, _REQUIRED),
    "clock_mhz": (_POS_NUM, _REQUIRED), "defaults": (None, None), "cores": (None, _REQUIRED),
    "links": (_LIST, []), "memories": (_LIST, []), "host": (None, _REQUIRED),
    "part": (_NAME, None), "platform": (_NAME, None),
}
_CORE = {
    "id": (_NONNEG_INT, None), "name": (_NAME, None), "slr": (_SLR, None), "device": (_NAME, _REQUIRED),
    "dsp": (_NONNEG_INT, _REQUIRED), "bram18": (_POS_INT, _REQUIRED), "uram": (_NONNEG_INT, _REQUIRED),
    "lut": (_POS_INT, _REQUIRED), "cap": (_CAP, DEFAULT_CAP),
}
_LINK = {
    "a": (_NONNEG_INT, _REQUIRED), "b": (_NONNEG_INT, _REQUIRED), "width_bits": (_POS_INT, _REQUIRED),
    "latency_cycles": (_NONNEG_INT, _REQUIRED), "kind": (_NAME, _REQUIRED),
}
_MEMORY = {
    "name": (_NAME, _REQUIRED), "kind": (_NAME, _REQUIRED), "bandwidth_gbps": (_POS_NUM, _REQUIRED),
    "cores": (_IDS, _REQUIRED), "latency_cycles": (_NONNEG_INT, _REQUIRED), "capacity_gb": (_POS_NUM, None),
    "ports": (_POS_INT, 1), "port_width_bits": (_POS_INT, 512), "cap": (_CAP, DEFAULT_CAP),
}
_HOST = {
    "kind": (_NAME, _REQUIRED), "bandwidth_gbps": (_POS_NUM, _REQUIRED),
    "latency_us": (_NONNEG_NUM, _REQUIRED),
}
# fmt: on
# Every core key but id and name may be given once under defaults; nothing there is required.
_DEFAULTS = {k: (kind, None) for k, (kind, _) in _CORE.items() if k not in ("id", "name")}


class _Parser:
    """Checks plain YAML data against the schema and builds a :class:`Board`."""

    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, where: str, message: str, got: Any = _MISSING) -> None:
        text = f"{self.label}: {where}: {message}" if where else f"{self.label}: {message}"
        if got is not _MISSING:
            text += f", got {got!r}"
        raise BadInputError(text)

    def fields(self, obj: Any, where: str, schema: dict, inherited: dict | None = None) -> dict:
        """Check keys and values of one mapping; return values with defaults filled in."""
        if not isinstance(obj, dict):
            self.fail(where, "expected a mapping", obj)
        unknown = sorted(str(k) for k in obj if k not in schema)
        if unknown:
            self.fail(_join(where, unknown[0]), f"unknown key; allowed keys: {', '.join(schema)}")
        values = {}
        for key, (kind, default) in schema.items():
            path, value = _join(where, key), obj.get(key, _MISSING)
            if value is _MISSING and inherited and key in inherited:
                path, value = inherited[key]
            if value is _MISSING:
                if default is _REQUIRED:
                    expected = f"; expected {kind[0]}" if kind else ""
                    self.fail(path, f"missing required key{expected}")
                value = default
            elif kind is not None and not kind[1](value):
                self.fail(path, f"expected {kind[0]}", value)
            values[key] = value
        return values

    def board(self, data: Any) -> Board:
        top = self.fields(data, "", _TOP)
        inherited = {}
        if top["defaults"] is not None:
            defaults = self.fields(top["defaults"], "defaults", _DEFAULTS)
            inherited = {k: (f"defaults.{k}", v) for k, v in defaults.items() if v is not None}
        cores = self.cores(top["cores"], inherited)
        links = self.links(top["links"], len(cores))
        memories = self.memories(top["memories"], len(cores))
        h = self.fields(top["host"], "host", _HOST)
        host = HostLink(h["kind"], float(h["bandwidth_gbps"]), float(h["latency_us"]))
        return Board(
            name=top["name"],
            description=top["description"],
            clock_mhz=float(top["clock_mhz"]),
            cores=cores,
            links=links,
            memories=memories,
            host=host,
            source=top["source"],
            part=top["part"],
            platform=top["platform"],
        )

    def cores(self, raw: Any, inherited: dict) -> tuple[Core, ...]:
        if not isinstance(raw, list) or not raw:
            self.fail("cores", "expected a non-empty list of core mappings", raw)
        cores, seen = [], {}
        for i, item in enumerate(raw):
            v = self.fields(item, f"cores[{i}]", _CORE, inherited)
            k = i if v["id"] is None else v["id"]
            if k in seen:
                self.fail(f"cores[{i}].id", f"duplicate core id {k} (also cores[{seen[k]}])")
            seen[k] = i
            if k != i:
                self.fail(f"cores[{i}].id", f"expected {i} (core ids are 0..N-1 in list order)", k)
            budgets = {res: v[res] for res in RESOURCES}
            name = v["name"] or f"core{k}"
            cores.append(Core(k, name, v["slr"], v["device"], **budgets, cap=float(v["cap"])))
        return tuple(cores)

    def core_id(self, value: Any, where: str, n: int) -> int:
        if not (_is_int(value) and 0 <= value < n):
            self.fail(where, f"expected the id of a core (0..{n - 1})", value)
        return value

    def links(self, raw: list, n: int) -> tuple[Link, ...]:
        links, seen = [], {}
        for i, item in enumerate(raw):
            v = self.fields(item, f"links[{i}]", _LINK)
            a = self.core_id(v["a"], f"links[{i}].a", n)
            b = self.core_id(v["b"], f"links[{i}].b", n)
            if a == b:
                self.fail(f"links[{i}].b", f"expected a core other than a ({a}); a link joins two cores", b)
            pair = (min(a, b), max(a, b))
            if pair in seen:
                self.fail(
                    f"links[{i}]",
                    f"duplicate link between cores {pair[0]} and {pair[1]} (also links[{seen[pair]}])",
                )
            seen[pair] = i
            links.append(Link(a, b, v["width_bits"], v["latency_cycles"], v["kind"]))
        return tuple(links)

    def memories(self, raw: list, n: int) -> tuple[Memory, ...]:
        memories, names = [], {}
        for i, item in enumerate(raw):
            v = self.fields(item, f"memories[{i}]", _MEMORY)
            if v["name"] in names:
                self.fail(
                    f"memories[{i}].name",
                    f"duplicate memory name (also memories[{names[v['name']]}])",
                    v["name"],
                )
            names[v["name"]] = i
            ids = [self.core_id(k, f"memories[{i}].cores[{j}]", n) for j, k in enumerate(v["cores"])]
            if len(set(ids)) != len(ids):
                self.fail(f"memories[{i}].cores", "expected distinct core ids", v["cores"])
            capacity = None if v["capacity_gb"] is None else float(v["capacity_gb"])
            bandwidth, latency = float(v["bandwidth_gbps"]), v["latency_cycles"]
            if v["port_width_bits"] % 8 or v["port_width_bits"] > 1024:
                self.fail(f"memories[{i}].port_width_bits",
                          "expected a whole number of bytes, at most 1024 bits (an AXI data width)",
                          v["port_width_bits"])
            memories.append(Memory(v["name"], v["kind"], bandwidth, tuple(ids), latency, capacity,
                                   v["ports"], v["port_width_bits"], float(v["cap"])))
        return tuple(memories)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else str(key)
