"""Boards: the cores of a multicore FPGA, their budgets, links, memories and host link.

A board is read from YAML (schema in ``docs/board.md``) into frozen dataclasses. Derived
numbers (per-core limits, totals, the link and neighbour maps) are computed once when the
objects are built. Every problem in a board file raises :class:`BadInputError` with a
message naming the file, the key path (``cores[2].dsp``) and what was expected.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

from bbgrap_hls.errors import BadInputError

DEFAULT_CAP = 0.8
"""Utilisation cap when a core gives none: the usual timing-closure headroom."""

RESOURCES = ("dsp", "bram18", "uram", "lut")
"""Resource kinds every core budgets, in the order reports list them."""


def _limit(budget: int, cap: float) -> int:
    # The cap is taken as the decimal written in the file (0.29 is 29/100), so that an
    # exact product is not pulled one below an integer by binary rounding.
    return math.floor(budget * Fraction(repr(float(cap))))


@dataclass(frozen=True)
class Core:
    """A budgeted region that runs a set of layers (an SLR, a device region, an FPGA).

    Attributes:
        id: Index of the core on its board (0..N-1).
        name: Human-readable name, e.g. ``"slr0"``.
        slr: SLR index on the device, or None when the core is not an SLR.
        device: Part name of the FPGA the core sits on, e.g. ``"xcu250"``.
        dsp: DSP slices in the core.
        bram18: 18 Kb block RAMs in the core (one BRAM36 counts as two).
        uram: 288 Kb UltraRAM blocks in the core.
        lut: CLB look-up tables in the core.
        cap: Fraction of each budget a plan may use, in (0, 1].
        dsp_limit: floor(dsp × cap), and likewise ``bram18_limit``, ``uram_limit``,
            ``lut_limit``; derived, not passed to the constructor.
    """

    id: int
    name: str
    slr: int | None
    device: str
    dsp: int
    bram18: int
    uram: int
    lut: int
    cap: float = DEFAULT_CAP
    dsp_limit: int = field(init=False)
    bram18_limit: int = field(init=False)
    uram_limit: int = field(init=False)
    lut_limit: int = field(init=False)

    def __post_init__(self) -> None:
        for res in RESOURCES:
            object.__setattr__(self, f"{res}_limit", _limit(getattr(self, res), self.cap))

    def budget(self, resource: str) -> int:
        """Return the raw budget of ``resource`` (one of :data:`RESOURCES`)."""
        return getattr(self, _resource(resource))

    def limit(self, resource: str) -> int:
        """Return the usable amount of ``resource``: floor(budget × cap)."""
        return getattr(self, f"{_resource(resource)}_limit")


def _resource(name: str) -> str:
    if name not in RESOURCES:
        raise ValueError(f"unknown resource {name!r}; expected one of {', '.join(RESOURCES)}")
    return name


@dataclass(frozen=True)
class Link:
    """A stream connection between two cores, usable in both directions.

    Attributes:
        a: Id of one end.
        b: Id of the other end (distinct from ``a``).
        width_bits: Bits moved per clock cycle in each direction.
        latency_cycles: Cycles from a beat entering the link to leaving it.
        kind: What carries it, e.g. ``"slr-crossing"`` or ``"network"``.
    """

    a: int
    b: int
    width_bits: int
    latency_cycles: int
    kind: str

    def other(self, k: int) -> int:
        """Return the end of the link that is not core ``k``."""
        if k == self.a:
            return self.b
        if k == self.b:
            return self.a
        raise ValueError(f"core {k} is not an end of link {self.a}-{self.b}")


@dataclass(frozen=True)
class Memory:
    """Off-chip memory that some cores reach (buffers between cores, off-chip weights).

    Attributes:
        name: Unique name on the board, e.g. ``"ddr0"``.
        kind: Technology, e.g. ``"ddr4"`` or ``"hbm2"``.
        bandwidth_gbps: Peak bandwidth in GB/s (10^9 bytes per second).
        cores: Ids of the cores that reach it.
        latency_cycles: Read latency in clock cycles.
        capacity_gb: Size in GB (10^9 bytes), or None when not given.
        ports: AXI ports the fabric reaches it through (a Zynq's HP ports, a Vitis
            platform's memory-controller ports).
        port_width_bits: Data width of each port; at most one word per port per cycle.
        cap: Fraction of the lesser of the peak and the ports' rate a plan may use (refresh,
            page misses and read/write turnarounds keep DDR below its peak).
    """

    name: str
    kind: str
    bandwidth_gbps: float
    cores: tuple[int, ...]
    latency_cycles: int
    capacity_gb: float | None = None
    ports: int = 1
    port_width_bits: int = 512
    cap: float = DEFAULT_CAP


@dataclass(frozen=True)
class HostLink:
    """The connection between the host and the board.

    Attributes:
        kind: e.g. ``"pcie-gen3x16"`` or ``"axi-hp"``.
        bandwidth_gbps: Effective bandwidth in GB/s.
        latency_us: One-way latency of a transfer in microseconds.
    """

    kind: str
    bandwidth_gbps: float
    latency_us: float


@dataclass(frozen=True)
class Board:
    """A set of cores with their links, memories, host link and clock.

    Core ids are the indices of ``cores``. Totals (``total_dsp``, ``total_bram18``,
    ``total_uram``, ``total_lut``) and the lookup maps are derived at construction.

    Attributes:
        name: Board name, e.g. ``"u250"``.
        description: One line about the board.
        clock_mhz: Kernel clock in MHz; cycles everywhere are of this clock.
        cores: The cores, ``cores[k].id == k``.
        links: Stream links between cores (at most one per pair).
        memories: Off-chip memories.
        host: The host link.
        source: Where the numbers come from (vendor documents).
        part: Full FPGA part number for synthesis (e.g. ``"xcu250-figd2104-2L-e"``), or None.
        platform: Vitis platform the design links against (e.g.
            ``"xilinx_u250_gen3x16_xdma_4_1_202210_1"``), or None.
    """

    name: str
    description: str
    clock_mhz: float
    cores: tuple[Core, ...]
    links: tuple[Link, ...]
    memories: tuple[Memory, ...]
    host: HostLink
    source: str
    part: str | None = None
    platform: str | None = None
    total_dsp: int = field(init=False)
    total_bram18: int = field(init=False)
    total_uram: int = field(init=False)
    total_lut: int = field(init=False)
    _by_pair: dict[tuple[int, int], Link] = field(init=False, repr=False, compare=False)
    _neighbours: dict[int, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _home: dict[int, Memory] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for res in RESOURCES:
            object.__setattr__(self, f"total_{res}", sum(getattr(c, res) for c in self.cores))
        by_pair = {(min(ln.a, ln.b), max(ln.a, ln.b)): ln for ln in self.links}
        near: dict[int, set[int]] = {c.id: set() for c in self.cores}
        for link in self.links:
            near[link.a].add(link.b)
            near[link.b].add(link.a)
        object.__setattr__(self, "_by_pair", by_pair)
        object.__setattr__(self, "_neighbours", {k: tuple(sorted(v)) for k, v in near.items()})
        home: dict[int, Memory] = {}
        count = [0] * len(self.memories)
        for c in self.cores:
            offers = [(self.usable_bytes_per_cycle(m) / (count[i] + 1), -i) for i, m in enumerate(self.memories)
                      if c.id in m.cores]
            if offers:
                i = -max(offers)[1]
                home[c.id] = self.memories[i]
                count[i] += 1
        object.__setattr__(self, "_home", home)

    def link(self, a: int, b: int) -> Link | None:
        """Return the link between cores ``a`` and ``b`` (either order), or None."""
        return self._by_pair.get((min(a, b), max(a, b)))

    def neighbours(self, k: int) -> tuple[int, ...]:
        """Return the ids of the cores linked to core ``k``, ascending."""
        if k not in self._neighbours:
            raise ValueError(f"board {self.name} has no core {k}")
        return self._neighbours[k]

    def memory_for(self, a: int, b: int) -> Memory | None:
        """Return a memory both cores reach, or None.

        Among several, the one with the highest bandwidth wins; ties go to the one
        listed first, so the choice is deterministic.
        """
        best = None
        for mem in self.memories:
            if a in mem.cores and b in mem.cores:
                if best is None or mem.bandwidth_gbps > best.bandwidth_gbps:
                    best = mem
        return best

    def bytes_per_cycle(self, memory: Memory | HostLink) -> float:
        """Return the bandwidth of a memory (or the host link) in bytes per clock cycle."""
        return memory.bandwidth_gbps * 1e9 / (self.clock_mhz * 1e6)

    def usable_bytes_per_cycle(self, memory: Memory) -> float:
        """What a plan may read from ``memory`` per cycle: ``cap`` times the lesser of its
        peak and its ports (``ports·port_width_bits/8`` bytes per cycle)."""
        ports = memory.ports * memory.port_width_bits / 8
        return memory.cap * min(self.bytes_per_cycle(memory), ports)

    def home_memory(self, k: int) -> Memory | None:
        """The memory core ``k`` keeps its off-chip weights in (None: it reaches none).

        Assigned once, core by core in id order: each core takes the memory it reaches that
        offers it the most, ``usable_bytes_per_cycle / (cores already there + 1)`` (ties: the
        first listed). On u250 SLR ``k`` gets ``ddr<k>``; on u280 every SLR shares the HBM.
        """
        return self._home.get(k)

    def offchip_share(self, k: int) -> float:
        """Bytes per cycle core ``k`` may read from its home memory: the memory's usable rate
        split evenly over the cores whose home it is (a static split; docs/board.md)."""
        mem = self.home_memory(k)
        if mem is None:
            return 0.0
        sharing = sum(1 for c in self.cores if self._home.get(c.id) is mem)
        return self.usable_bytes_per_cycle(mem) / sharing

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict with the board's data and derived numbers."""
        memories = [{**asdict(m), "bytes_per_cycle": self.bytes_per_cycle(m),
                     "usable_bytes_per_cycle": self.usable_bytes_per_cycle(m)} for m in self.memories]
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "part": self.part,
            "platform": self.platform,
            "clock_mhz": self.clock_mhz,
            "cores": [asdict(c) for c in self.cores],
            "links": [asdict(ln) for ln in self.links],
            "memories": memories,
            "host": asdict(self.host),
            "totals": {res: getattr(self, f"total_{res}") for res in RESOURCES},
        }


def bundled_board_names() -> list[str]:
    """Return the names of the boards shipped with the package, sorted."""
    return sorted(p.name[: -len(".yaml")] for p in _bundled_dir().iterdir() if p.name.endswith(".yaml"))


def list_boards() -> list[Board]:
    """Return every bundled board, in name order."""
    return [load_board(name) for name in bundled_board_names()]


def load_board(name_or_path: str | Path) -> Board:
    """Load a bundled board by name (``"u250"``) or a board file by path.

    A string ending in ``.yaml``/``.yml`` or containing a path separator is a path;
    anything else is a bundled name.

    Raises:
        BadInputError: unknown name, unreadable file, or a file that breaks the schema.
    """
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith((".yaml", ".yml")) or "/" in text or "\\" in text:
        path = Path(name_or_path)
        try:
            content = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BadInputError(f"{text}: board file not found") from None
        except IsADirectoryError:
            raise BadInputError(f"{text}: expected a board .yaml file, got a directory") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInputError(f"{text}: cannot read board file ({exc})") from None
        return parse_board(content, text)
    names = bundled_board_names()
    if text not in names:
        raise BadInputError(
            f"unknown board {text!r}: expected a bundled board ({', '.join(names)}) or a path to a .yaml file"
        )
    content = (_bundled_dir() / f"{text}.yaml").read_text(encoding="utf-8")
    return parse_board(content, f"boards/{text}.yaml")


def parse_board(content: str, label: str) -> Board:
    """Build a board from YAML text; ``label`` names the file in error messages.

    The YAML checks live in `bbgrap_hls.board_yaml` (schema, messages, duplicate keys).

    Raises:
        BadInputError: YAML syntax errors or anything that breaks the schema.
    """
    from bbgrap_hls.board_yaml import parse  # it builds the dataclasses of this module

    return parse(content, label)


def _bundled_dir() -> Any:
    try:
        return resources.files("bbgrap_hls.boards")
    except ModuleNotFoundError:
        # A source checkout not installed: the boards folder sits next to the package.
        return Path(__file__).resolve().parent.parent / "boards"
