"""Folding tables: every legal folding (and weight placement) of a block with its cost.

`_table` builds a block's `Table` (cached across the variants `make_plan` plans); the
partitioning problem (`problem.py`) holds one per unit and split part.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from bbgrap_hls.model import (
    OFFCHIP_CAPABLE,
    URAM_CAPABLE,
    WEIGHTED,
    block_cost,
    foldings,
    in_lanes,
    lut_capable,
    lut_requant_capable,
    packs,
    pair_modes,
    pixel_copies,
)
from bbgrap_hls.model.band import band_counts
from bbgrap_hls.model.blocks import PACK_CAPABLE, SHORT_RING_KINDS, pack_change
from bbgrap_hls.model.geometry import Geometry
from bbgrap_hls.model.offchip import folds
from bbgrap_hls.model.rings import ring_lanes, ring_uram_fits
from bbgrap_hls.model.stage import MAX_STAGE_LANES
from bbgrap_hls.model.timing import short_ring_pays
from bbgrap_hls.search.input_fifos import _input_fifos, _Inputs

RES = ("dsp", "bram18", "uram", "lut", "bw")
"""Resources every core has a limit for, in the column order of `Table.res`. ``bw`` is the
bandwidth of the core's board memory the block reserves, in bytes per `BW_CYCLES` cycles
(``ceil(BW_CYCLES·offchip_bytes / ii)`` at the row's own ii: the rate it reads at)."""
BW_CYCLES = 1024
N_RES = len(RES)

FIFO_DDR_KINDS = ("eltwise2",)
"""Kinds whose tables, with off-chip memory allowed, also have each row with its frame-sized
input FIFOs in the core's board memory (`Table.fifo_ddr`): an Add/Sub/Mul, whose operand read
whole may wait a frame or more (a squeeze-excite gate, a long skip). gen builds such FIFOs on
a layer's input read whole (codegen/design.py `_operand`), a Concat's too, but no design has
checked that one yet."""

@dataclass
class Table:
    """All legal foldings of a unit (or of a split part) with their costs, as arrays.

    A block with a weight memory has each folding twice when the board has URAM: weights
    in BRAM (``uram[i]`` False) and in URAM (True); with off-chip weights allowed, a conv or
    dense block also has each folding with its weights in the core's board memory
    (``ddr[i]``; ``uram[i]`` then says where its frame buffers are); with LUT multipliers
    allowed, an on-chip conv or dense block and a depthwise conv have each folding once more
    with their products in LUTs (``lut[i]``); with LUT requantisers allowed, those LUT rows and
    every folding of the other requantising kinds once more with the requantisers' products in
    LUTs (``lutrq[i]``: no DSP at all); a block with a weight memory of at most `LUT_ROM_DEPTH` words (and
    more than LUTRAM-sized) also has each folding with that memory in LUTs (``lutw[i]``). The
    search picks per core what fits.
    """

    pe: np.ndarray
    simd: np.ndarray
    uram: np.ndarray  # bool: weights in URAM (frame buffers, for a ddr row)
    ii: np.ndarray
    res: np.ndarray  # (n_rows, 5): dsp, bram18, uram, lut, bw (block + its input FIFOs/converters)
    mmv: np.ndarray  # a conv's pixel copies (1 for every other block)
    ddr: np.ndarray  # bool: weights in the core's board memory
    lut: np.ndarray  # bool: the block's products in LUTs (no product DSPs)
    lutw: np.ndarray  # bool: the block's weight memory in LUTs (`lut_rom`), placement "lut"
    lutrq: np.ndarray  # bool: the block's requantisers' products in LUTs (`lut_requantised`)
    padded: np.ndarray  # bool: pe does not divide the block's Co (padded folds, `padded_lanes`)
    # bool: an off-chip row with one input frame slot (`offchip_mvu` ``in_slots=1``), legal only
    # after an off-chip producer that holds the next frame (`couplings.Pair`); none in a table the
    # rules and the DP choose from: they are its `extra` rows, which `full` appends
    in1: np.ndarray | None = None
    # bool: a one-input-slot row behind a DDR frame stage (`offchip.staged`): legal after any
    # producer (its resources and bandwidth in the row); also an `extra` row
    stage: np.ndarray | None = None
    # a conv's input and output pixels a beat (`pair_modes`; 1 and 1 for every other row)
    px: np.ndarray | None = None
    po: np.ndarray | None = None
    # an off-chip conv's bands of output rows a frame (`band.banded`; 1 for every other row)
    bands: np.ndarray | None = None
    # bool: the block's frame-sized input FIFOs in the core's board memory (`FIFO_DDR_KINDS`,
    # `_input_fifos`): their stages' LUTs and bandwidth in the row instead of their BRAM18/URAM
    fifo_ddr: np.ndarray | None = None
    # the block's window generator's ring: 0 the default, 1 a short ring (`timing.short_ring_rows`;
    # with the planner's ``short_rings``, a row of fewer BRAM18 than its folding's default ring),
    # 2 a short ring in URAM (`RING_URAM`: with ``short_rings`` on a core with URAM)
    ring: np.ndarray | None = None
    # bool: an off-chip row whose output frame buffer has one slot (`offchip_mvu` ``out_slots=1``;
    # with the planner's ``out1``, a row of fewer BRAM18 and URAM than its two-slot row)
    out1: np.ndarray | None = None
    # bool: a grouped conv computed as a dense conv over its block-diagonal matrix (the
    # plan's ``dense_groups``; a grouped conv's other rows compute its groups in turn)
    dense: np.ndarray | None = None
    # bool: a grouped conv computed group by group whose window generator takes whole pixels
    # (`blocks.mvu` ``wide``; the plan's ``wide_groups``)
    wide: np.ndarray | None = None
    # the `_table` key of a table with off-chip rows: its `extra` rows are built from it when
    # first asked for (only the integer program asks, for the blocks a pair allows)
    extra_key: tuple | None = field(default=None, repr=False, compare=False)
    # the rows with FIFOs in board memory (`fifo_ddr`), kept apart from a unit's table
    # (`problem.build_problem`): only the integer program chooses them (`full` appends them
    # after the `extra` rows), whose target prices their bandwidth (`at_target`); the rules,
    # the DP and the baselines see the table without them
    more: Table | None = field(default=None, repr=False, compare=False)
    # `fold.make_chooser`'s cache: a chooser per rule, and under b"ties" the rule-independent
    # tie order (`fold._chooser`); `_table`'s copies of a cached table share it, any other
    # copy starts empty (entries are checked against the arrays they were made for)
    choosers: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.in1 is None:
            self.in1 = np.zeros(len(self.ii), dtype=bool)
        if self.stage is None:
            self.stage = np.zeros(len(self.ii), dtype=bool)
        if self.px is None:
            self.px = np.ones(len(self.ii), dtype=np.int64)
        if self.po is None:
            self.po = np.ones(len(self.ii), dtype=np.int64)
        if self.bands is None:
            self.bands = np.ones(len(self.ii), dtype=np.int64)
        if self.fifo_ddr is None:
            self.fifo_ddr = np.zeros(len(self.ii), dtype=bool)
        if self.ring is None:
            self.ring = np.zeros(len(self.ii), dtype=np.int64)
        if self.out1 is None:
            self.out1 = np.zeros(len(self.ii), dtype=bool)
        if self.dense is None:
            self.dense = np.zeros(len(self.ii), dtype=bool)
        if self.wide is None:
            self.wide = np.zeros(len(self.ii), dtype=bool)

    @property
    def extra(self) -> Table | None:
        """The table's off-chip foldings with one input frame slot (`in1`), without and with
        a DDR frame stage (`stage`), or None."""
        return None if self.extra_key is None else _extra(self.extra_key)

    def full(self) -> Table:
        """The rows and, after them, the `extra` rows and the `more` rows (the same row indices
        below ``len(self)``)."""
        parts = tuple(x for x in (self.extra, self.more) if x is not None)
        if not parts:
            return self
        got = self.choosers.get(b"full")
        if got is None or len(got[0]) != len(parts) or any(a is not b for a, b in zip(got[0], parts, strict=True)):
            t = Table(**{k: np.concatenate([getattr(x, k) for x in (self, *parts)]) for k in _COLUMNS})
            got = self.choosers[b"full"] = (parts, t)
        return got[1]

    @property
    def paired(self) -> np.ndarray:
        """Rows with one input slot and no stage: legal only after a producer that holds the
        frame (`couplings.Pair`)."""
        return self.in1 & ~self.stage

    def copies(self, i: int) -> int:
        """Pixel copies of row ``i``."""
        return int(self.mmv[i])

    def pairs(self, i: int) -> tuple[int, int]:
        """Input and output pixels a beat of row ``i`` (`pair_modes`)."""
        return int(self.px[i]), int(self.po[i])

    def subset(self, mask: np.ndarray) -> Table:
        """The rows where ``mask`` is true, in the same order."""
        i = np.nonzero(mask)[0]
        return Table(**{k: getattr(self, k)[i] for k in _COLUMNS}, extra_key=self.extra_key)

    def whole_frame(self) -> Table:
        """The table without its row-band rows (itself when it has none)."""
        return self.subset(self.bands == 1) if self.bands.max(initial=1) > 1 else self

    def at_target(self, target: int) -> Table:
        """The table with its `fifo_ddr` rows' bandwidth charged at ``target`` cycles a frame
        instead of at the row's own ii (itself when it has none): a FIFO's DDR stage moves a
        frame's bytes each frame, the producer's writes and the reader's reads paced by the
        design, as `fifo_memory.fifos_to_ddr` charges it at the core's ii and `couplings`
        charges a lag's stage; a block with off-chip weights keeps the rate it reads at."""
        if not self.fifo_ddr.any():
            return self
        res = self.res.copy()
        bw = RES.index("bw")
        f = self.fifo_ddr
        res[f, bw] = -(-res[f, bw] * self.ii[f] // max(1, int(target)))
        return replace(self, res=res)

    def __len__(self) -> int:
        return len(self.ii)


_COLUMNS = ("pe", "simd", "uram", "ii", "res", "mmv", "ddr", "lut", "lutw", "lutrq", "padded", "in1", "stage",
            "px", "po", "bands", "fifo_ddr", "ring", "out1", "dense", "wide")
"""`Table`'s per-row arrays."""


def _key(kind: str, g: Geometry, inputs: _Inputs, parallel_window: bool, uram: bool, copies: bool = True,
         memory: tuple[float, int, int] | None = None, pack: bool = False, lut_macs: bool = False,
         lut_requant: bool = False, padded: bool = False, short_rings: bool = False, out1: bool = False,
         bands: bool = True) -> tuple:
    """`_table`'s cache key for its arguments: the options the kind ignores dropped (a pool's
    table is the same with or without packing or off-chip weights). Its last element is the
    triple ``(short_rings, out1, bands)``; ``bands`` False: the table without its row-band
    rows (`Table.whole_frame`), built without them (`_band_rows`)."""
    if kind not in SHORT_RING_KINDS or g.pointwise or not (short_ring_pays(g) or uram):
        short_rings = False  # (with URAM, a ring that keeps its rows may still move there)
    if (kind not in OFFCHIP_CAPABLE and kind not in FIFO_DDR_KINDS) or (kind == "conv" and g.grouped):
        memory = None  # (a grouped conv keeps its weights on chip: its groups' weights are few)
    if kind not in OFFCHIP_CAPABLE or memory is None:
        out1 = False
    if kind not in PACK_CAPABLE:
        pack = False
    elif pack == ONCHIP and (memory is None or kind not in OFFCHIP_CAPABLE):
        pack = True  # (no off-chip rows: the same table as packing them all)
    if not lut_capable(kind):
        lut_macs = False
    if not lut_requant_capable(kind) or (lut_capable(kind) and not lut_macs):
        lut_requant = False  # (a conv/dense/dwconv takes them on its LUT-product rows only)
    if kind not in WEIGHTED:
        padded = False
    if not _band_rows(kind, g, copies, memory):
        bands = False
    return (kind, g, inputs, parallel_window, uram, copies, memory, pack, lut_macs, lut_requant, padded,
            (short_rings, out1, bands))


def _band_rows(kind: str, g: Geometry, copies: bool, memory: tuple[float, int, int] | None) -> bool:
    """Whether the table of a block has row-band rows (`_tables_of`): an off-chip conv's, in
    a table with pixel copies, where a band count divides its output rows."""
    return kind == "conv" and memory is not None and copies and not g.grouped and bool(band_counts(g))


def _build(key: tuple) -> None:
    """The tables of ``key`` (`_key`) into the cache. A conv/dense table with packing is built
    together with the one without (`make_plan` asks for both; most rows are the same and are
    computed once), and a table with off-chip rows leaves its on-chip rows as the table without
    them: the same rows in the same order (the off-chip rows take no part in the on-chip rows'
    construction, and the order is a stable sort, which a subset keeps). A table with row-band
    rows is its rows without them (`_RAW`, kept from the table without band rows or built now)
    merged with its band rows in the order one pass over both would give (`_raw_rows`): the
    first plan of `make_plan` has no band rows, and a plan that keeps everything on chip never
    builds them (they were a third of DenseNet-121's table time on u250)."""
    kind, g, inputs, parallel_window, uram, copies, memory, pack, lut_macs, lut_requant, padded, lean = key
    short_rings, out1, bands = lean
    modes = _modes(pack)
    args = (kind, g, inputs, parallel_window, uram, copies, memory, modes, lut_macs, lut_requant, padded)
    if _band_rows(kind, g, copies, memory):
        plain_key = (*key[:11], (short_rings, out1, False))
        raw = _RAW.get(plain_key)
        if raw is None:
            raw = _raw_rows(*args, short_rings=short_rings, out1=out1, part=PLAIN)
            _RAW[plain_key] = raw
            while len(_RAW) > TABLES_CACHED:
                _RAW.popitem(last=False)
        if bands:
            more = _raw_rows(*args, short_rings=short_rings, out1=out1, part=BANDS)
            raw = [_merge(a, b) for a, b in zip(raw, more, strict=True)]
    else:
        raw = _raw_rows(*args, short_rings=short_rings, out1=out1)
    for p, a in zip(modes, raw, strict=True):
        t = _finish_table(kind, g, memory, a)
        if memory is not None and kind in OFFCHIP_CAPABLE:
            t.extra_key = (*key[:7], p, *key[8:])  # (its own packing mode's one-slot rows)
        _remember((*key[:7], p, *key[8:]), t)
        if memory is not None:
            _remember(_key(kind, g, inputs, parallel_window, uram, copies, None, p, lut_macs, lut_requant, padded,
                           short_rings=short_rings), t.subset(~t.ddr & ~t.fifo_ddr))


def _table(*args, **kw) -> Table:
    """`_tables_of`, cached (`_key`, `_build`): `make_plan` builds the same graph's tables for
    several variants (with and without packing or off-chip weights), most of them equal. Each
    call gets its own `Table` object (its arrays shared and never written in place; callers
    may rebind them) sharing the cached table's choosers (`fold.make_chooser`)."""
    key = _key(*args, **kw)
    if key not in _TABLES:
        _build(key)
    t = _TABLES[key]
    _TABLES.move_to_end(key)
    copy = replace(t)
    # the copies share the choosers: `fold.make_chooser` checks that a hit was made for the
    # same arrays, so a copy whose arrays are rebound gets its own
    copy.choosers = t.choosers
    return copy


def _extra_key(key: tuple) -> tuple:
    """The `_EXTRAS` key of the table of ``key``: its packing mode kept (off-chip rows pack as
    on-chip ones), the same with or without row bands (one-slot rows have none)."""
    return (*key[:11], (*key[11][:2], False))


def _extra(key: tuple) -> Table | None:
    """`Table.extra` of the table of ``key`` (`_key`): built once per packing mode, a packed
    table's together with the unpacked one (as `_build`: packing changes a row's DSPs and LUTs
    only)."""
    k = _extra_key(key)
    if k not in _EXTRAS:
        kind, g, inputs, parallel_window, uram, copies, memory, pack, lut_macs, lut_requant, padded, lean = key
        modes = _modes(pack)
        for p, t in zip(modes, _tables_of(kind, g, inputs, parallel_window, uram, copies, memory, modes, lut_macs,
                                          lut_requant, padded, in1=True, out1=lean[1]), strict=True):
            _EXTRAS[(*k[:7], p, *k[8:])] = t if len(t) else None
    return _EXTRAS[k]


_EXTRAS: dict[tuple, Table | None] = {}
"""`_extra`'s cache."""

_TABLES: OrderedDict[tuple, Table] = OrderedDict()
"""`_table`'s cache, least recently used first."""
TABLES_CACHED = 8192

_RAW: OrderedDict[tuple, list[np.ndarray]] = OrderedDict()
"""`_build`'s rows of the tables that could have row-band rows, without them (`_raw_rows`,
one array per packing mode), by the key of the table without them: what the table with
them adds its band rows to."""


def _remember(key: tuple, table: Table) -> None:
    _TABLES[key] = table
    _TABLES.move_to_end(key)
    while len(_TABLES) > TABLES_CACHED:
        _TABLES.popitem(last=False)


def _tables_of(kind: str, g: Geometry, inputs: _Inputs, parallel_window: bool, uram: bool, copies: bool,
               memory: tuple[float, int, int] | None, modes: tuple[bool, ...], lut_macs: bool,
               lut_requant: bool, padded: bool, in1: bool = False, short_rings: bool = False,
               out1: bool = False) -> list[Table]:
    """`_raw_rows` (every row) as one `Table` per packing mode of ``modes``."""
    return [_finish_table(kind, g, memory, a)
            for a in _raw_rows(kind, g, inputs, parallel_window, uram, copies, memory, modes, lut_macs,
                               lut_requant, padded, in1=in1, short_rings=short_rings, out1=out1)]


ONCHIP = "onchip"
"""A packing mode (`_key`'s ``pack``): the on-chip rows pack, the off-chip ones do not (the
planner's third problem where packing off-chip blocks steers its heuristics to a slower plan:
`search._make_plan_with`)."""


def _modes(pack) -> tuple:
    """The packing modes one pass builds for a table keyed with ``pack``: it and the unpacked
    one (packing changes a row's DSPs and LUTs only), or the unpacked one alone."""
    return (pack, False) if pack else (False,)


def _packs_row(mode, ddr: bool) -> bool:
    """Whether a packable row packs in packing mode ``mode`` (True, False or `ONCHIP`)."""
    return bool(mode) and (mode is True or not ddr)


ALL, PLAIN, BANDS = 0, 1, 2
"""`_raw_rows`'s parts of a table: every row, the rows without row bands, the row-band rows."""


def _merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two parts of a table's rows (`_raw_rows`) in the order of one pass over both (by tag)."""
    both = np.concatenate([a, b])
    return both[np.argsort(both[:, 0], kind="stable")]


def _raw_rows(kind: str, g: Geometry, inputs: _Inputs, parallel_window: bool, uram: bool, copies: bool,
              memory: tuple[float, int, int] | None, modes: tuple[bool, ...], lut_macs: bool,
              lut_requant: bool, padded: bool, in1: bool = False, short_rings: bool = False,
              out1: bool = False, part: int = ALL) -> list[np.ndarray]:
    """Every folding (and weight placement) of a block with its cost, one table per packing
    mode of ``modes``. ``memory`` (rate
    bytes/cycle, latency, beat bytes: `offchip_memory`) adds off-chip weight rows for
    conv/dense, their weight tiles whole beats of the port. A packing mode True: on-chip conv/dense rows
    with ``pe >= 2`` pack two output lanes per DSP (`bbgrap_hls.model.packs`). ``lut_macs``:
    on-chip conv/dense and depthwise rows also come with their products in LUTs (`lut_capable`).
    ``lut_requant``: the LUT-product rows of conv/dense/dwconv (when ``lut_macs``) and every
    on-chip row of the other requantising kinds also come with LUT requantisers
    (`lut_requant_capable`): the block without any DSP. One pass over the foldings for all
    modes: packing changes a row's DSPs and LUTs only (never its ii, memories or whether it is
    kept), so the tables have the same rows, each with its own cost. ``in1``: the off-chip rows
    with one input frame slot only (`Table.extra`). ``short_rings``: each on-chip folding of
    one pixel a beat without pixel copies also comes with a short window ring (`Table.ring`)
    where that takes fewer BRAM18. ``out1``: each off-chip row without a DDR frame stage also
    comes with one output frame slot (`Table.out1`) where that takes fewer BRAM18 or URAM.
    ``part``: every row (`ALL`), the rows without row bands (`PLAIN`) or the row-band rows
    alone (`BANDS`). The rows are arrays (one a packing mode) of `_finish_table`'s 25 columns
    after a tag, each row's place in the pass over every row (`_merge`)."""
    rows: list[list[tuple]] = [[] for _ in modes]
    # on_uram: the weights and the whole-frame input FIFOs in URAM (a block without weights:
    # its FIFOs only; the final plan places FIFOs by what each core's URAM has left)
    # (on_uram, ddr, lutw, one input frame slot, a DDR frame stage in front)
    placements = [(False, False, False, False, False), (True, False, False, False, False)] \
        if uram and kind != "wire" else [(False, False, False, False, False)]
    if kind in URAM_CAPABLE:
        placements.append((False, False, True, False, False))  # the weights in LUTs (shallow memories: `lut_rom`)
    if in1:  # (a kind with off-chip rows): after a producer that holds the frame, or behind a stage
        placements = [(uram, True, False, True, False), (uram, True, False, True, True)]
    elif memory is not None and kind in OFFCHIP_CAPABLE:
        for frames_uram in (False, True) if uram else (False,):  # frame buffers in BRAM, or URAM
            placements.append((frames_uram, True, False, False, False))
            if kind == "conv" and copies:  # (not an uneven part's table, built without copies; the
                # equal parts' drop theirs: `problem._add_split_tables`, `Table.whole_frame`)
                placements += [(frames_uram, True, False, False, False, b) for b in band_counts(g)]  # row bands
    grid = foldings(kind, g, parallel_window, padded)
    # (pe, simd, copies, px, po, grouped conv: 1 dense, 2 groups in turn with whole pixels in)
    rows_of = [(p, q, m, 1, 1, 0) for p, q in grid for m in (pixel_copies(kind, g, p) if copies else [1])]
    if g.pairs and copies and not in1:  # two pixels a beat (`pair_modes`): after the plain rows
        rows_of += [(p, q, m, px, po, 0) for p, q in grid for px, po, m in pair_modes(kind, g, p, q)]
    if kind == "conv" and g.grouped:
        if not g.pointwise:  # whole pixels into the window generator (`wide_groups`)
            rows_of += [(p, q, 1, 1, 1, 2) for p, q in grid if q % g.cgi == 0]
        g1 = replace(g, group=1)  # dense over the block-diagonal matrix (`dense_groups`)
        rows_of += [(p, q, m, 1, 1, 1) for p, q in foldings(kind, g1, parallel_window, padded)
                    for m in (pixel_copies(kind, g1, p) if copies else [1])]
    prev_ii = 0
    macs = [(False, False), (True, False)] if lut_macs and lut_capable(kind) else [(False, False)]
    if lut_requant and lut_requant_capable(kind):
        # a LUT requantiser where the block then needs no DSP: on LUT products, or a block without products
        if not lut_capable(kind):
            macs.append((False, True))
        elif lut_macs:
            macs.append((True, True))
    fifos: dict = {}
    n_place, n_mac = len(placements), len(macs)
    chosen = [(i, p) for i, p in enumerate(placements) if part == ALL or (len(p) > 5) == (part == BANDS)]
    for n_row, (pe, simd, mmv, px, po, mode) in enumerate(rows_of):
        dense, wide = mode == 1, mode == 2
        base = {}  # the folding's cost with its weights in BRAM, per kind of multiplier
        for (n_p, (on_uram, ddr, lutw, in1, stage, *band)), (n_m, (lut, lutrq)) in (
                (p, m) for p in chosen for m in enumerate(macs)):
            tag = ((n_row * n_place + n_p) * n_mac + n_m) * 6  # (+ 2·variant + moved)
            bands = band[0] if band else 1
            if ddr and (px > 1 or lut or lutrq or not _offchip_ok(kind, g, pe, simd, mmv, memory[2])):
                continue
            if stage and min(simd, g.c) > MAX_STAGE_LANES:
                continue
            if lut and g.co % pe:
                continue  # padded folds with DSP products only (LUT ones: twice the rows, no gain measured)
            # the row's cost per packing mode (packing where it applies only)
            packable = not lut and packs(kind, pe)
            c = block_cost(kind, g, pe, simd, uram=on_uram, mmv=mmv, ddr=ddr, memory=memory if ddr else None,
                           lut_macs=lut, lutw=lutw, lut_requant=lutrq, in_slots=1 if in1 else 2, stage=stage,
                           stage_bound=stage, px=px, po=po, bands=bands, timing=False, dense_groups=dense,
                           wide_groups=wide)
            # packing changes the DSPs and LUTs only (`pack_change`, as `block_cost` with ``pack``)
            change = pack_change(pe, simd, mmv) if packable else (0, 0)
            cs = [(c.dsp + change[0], c.lut + change[1]) if _packs_row(m, ddr) else (c.dsp, c.lut) for m in modes]
            if not (on_uram or ddr or lutw):
                base[(lut, lutrq)] = c
            elif lutw and c == base[(lut, lutrq)]:
                continue  # too deep for LUTs, or LUTRAM-sized anyway: the same row as in BRAM
            if not ddr and on_uram and kind in URAM_CAPABLE and c.weights != "uram":
                continue  # LUTRAM-sized weights: no URAM variant
            if not on_uram and not ddr and not lut and not lutw and not lutrq and px == 1:
                if mmv > 1 and c.ii >= prev_ii:
                    break  # the window generator's writes already bound it: a copy buys nothing
                prev_ii = c.ii
            variants = [(c, cs, 0, 0)]
            if short_rings and not ddr and mmv == 1 and px == 1 and po == 1:
                cr = block_cost(kind, g, pe, simd, uram=on_uram, lut_macs=lut, lutw=lutw, lut_requant=lutrq,
                                timing=False, short_ring=True, dense_groups=dense, wide_groups=wide)
                if cr.bram18 < c.bram18:  # (a LUTRAM-sized line buffer keeps its default ring)
                    variants.append((cr, cs, RING_SHORT, 0))
                if uram and _ring_uram_ok(kind, g, pe, simd, dense, wide):
                    cu = block_cost(kind, g, pe, simd, uram=on_uram, lut_macs=lut, lutw=lutw, lut_requant=lutrq,
                                    timing=False, short_ring=True, ring_uram=True, dense_groups=dense)
                    if cu.bram18 < cr.bram18:  # (a ring in LUTRAM stays there)
                        variants.append((cu, [(d, u + cu.lut - cr.lut) for d, u in cs], RING_URAM, 0))
            if out1 and ddr and not stage:
                co = block_cost(kind, g, pe, simd, uram=on_uram, ddr=True, memory=memory, in_slots=1 if in1 else 2,
                                bands=bands, timing=False, out_slots=1)
                if co.bram18 + co.uram < c.bram18 + c.uram:  # (a LUTRAM-sized output buffer keeps two slots)
                    variants.append((co, [(co.dsp + change[0], co.lut + change[1]) if _packs_row(m, True)
                                          else (co.dsp, co.lut) for m in modes], 0, 1))
            for n_v, (c, cs, ring, one_out) in enumerate(variants):
                # an off-chip row reads its weights at the memory's rate through its own port
                bw = -(-BW_CYCLES * c.offchip_bytes // c.ii) if ddr else 0
                bram, uram_use, f_lut = c.bram18, c.uram, 0
                big_fifo = False
                moved = None
                if kind != "wire":
                    key = (in_lanes(kind, g, pe, simd, px, dense, wide), max(1, c.ii), pe, c.window is not None,
                           on_uram)
                    if key not in fifos:
                        fifos[key] = _input_fifos(kind, g, inputs, *key,
                                                  memory=memory if kind in FIFO_DDR_KINDS else None)
                    f_bram, f_uram, f_lut, big_fifo, moved = fifos[key]
                    bram += f_bram
                    uram_use += f_uram
                if on_uram and kind not in URAM_CAPABLE and not ddr and not big_fifo:
                    continue  # no weights and no FIFO big enough for URAM: the same row twice
                flags = (mmv, int(ddr), int(lut), int(lutw), int(lutrq), int(kind in WEIGHTED and g.co % pe != 0),
                         int(in1), int(stage), px, po, bands)
                for out, (dsp, lut_use) in zip(rows, cs, strict=True):
                    out.append((tag + 2 * n_v, pe, simd, int(on_uram), c.ii, dsp, bram, uram_use, lut_use + f_lut,
                                bw, *flags, 0, ring, one_out, int(dense), int(wide)))
                    if moved is not None and not on_uram:  # the frame FIFOs in board memory instead
                        m_bram, m_uram, m_lut, m_bytes, m_ii = moved
                        ii = max(c.ii, m_ii)
                        out.append((tag + 2 * n_v + 1, pe, simd, 0, ii, dsp, bram - m_bram, uram_use - m_uram,
                                    lut_use + f_lut + m_lut, -(-BW_CYCLES * m_bytes // ii), *flags, 1, ring, one_out,
                                    int(dense), int(wide)))
    return [np.array(r, dtype=np.int64).reshape(len(r), 26) for r in rows]


RING_SHORT, RING_URAM = 1, 2
"""`Table.ring`'s values beside 0 (the default ring): a short ring, a short ring in URAM."""


def _ring_uram_ok(kind: str, g: Geometry, pe: int, simd: int, dense: bool, wide: bool) -> bool:
    """Whether a folding's window generator may keep its ring in URAM (`rings.ring_uram_fits`
    at its input lanes: ``pe`` for a depthwise conv or pool, ``min(simd, C)`` for a conv,
    ``min(simd, C/group)`` for a grouped one computed group by group; not with whole pixels in)."""
    return not wide and ring_uram_fits(g, ring_lanes(kind, g, pe, simd, dense))


def _finish_table(kind: str, g: Geometry, memory: tuple[float, int, int] | None, tagged: np.ndarray) -> Table:
    """A `Table` of ``tagged``'s rows (`_raw_rows`, in tag order) sorted by ii descending,
    with the slower off-chip rows added."""
    a = tagged[:, 1:]
    # (two-slot whole-frame off-chip rows)
    offchip = np.nonzero((a[:, 10] != 0) & (a[:, 15] == 0) & (a[:, 19] == 1) & (a[:, 22] == 0))[0]
    if len(offchip):
        # The slowest off-chip folding may also read its weights slower (its AXI reader given
        # a rate halving 12 times), so that a memory too slow for every block's compute still
        # plans, bound by its bandwidth. (The first of the slowest, then fewest DSPs.)
        r = a[offchip[np.lexsort((a[offchip, 4], -a[offchip, 3]))[0]]].tolist()
        rate, latency, beat = memory
        slower = []
        for k in range(1, 13):
            c = block_cost(kind, g, int(r[0]), int(r[1]), uram=bool(r[2]), ddr=True,
                           memory=(rate / (1 << k), latency, beat))
            if c.ii > r[3]:
                slower.append((*r[:3], c.ii, *r[4:8], -(-BW_CYCLES * c.offchip_bytes // c.ii), *r[9:]))
        if slower:
            a = np.concatenate([a, np.array(slower, dtype=np.int64)])
    order = np.lexsort((a[:, 4:9].sum(axis=1), a[:, 3]))[::-1]  # ii descending
    a = a[order]
    return Table(pe=a[:, 0], simd=a[:, 1], uram=a[:, 2].astype(bool), ii=a[:, 3], res=a[:, 4:9].copy(),
                 mmv=a[:, 9].copy(), ddr=a[:, 10].astype(bool), lut=a[:, 11].astype(bool),
                 lutw=a[:, 12].astype(bool), lutrq=a[:, 13].astype(bool), padded=a[:, 14].astype(bool),
                 in1=a[:, 15].astype(bool), stage=a[:, 16].astype(bool), px=a[:, 17].copy(), po=a[:, 18].copy(),
                 bands=a[:, 19].copy(), fifo_ddr=a[:, 20].astype(bool), ring=a[:, 21].copy(),
                 out1=a[:, 22].astype(bool), dense=a[:, 23].astype(bool), wide=a[:, 24].astype(bool))


def _offchip_ok(kind: str, g: Geometry, pe: int, simd: int, mmv: int, beat: int) -> bool:
    """Foldings the off-chip kernels build (hw/rtl/conv_offchip.sv, hw/hls/conv2d_offchip.h):
    no pixel copies, ``simd | C`` (no parallel window), ``pe·simd`` and the beat dividing one
    another and every fold's tile whole beats."""
    if mmv > 1 or simd > g.c or g.co % pe:
        return False
    word = pe * simd
    if word % beat and beat % word:
        return False
    return (word * folds(g, pe, simd)[0]) % beat == 0
