"""Building a graph's folding tables ahead of planning, about half in a forked child process
(`parallel.Aside`): `prefetch`. A table is a function of its key alone (`tables._key`), so the
caches (`tables._TABLES`, `tables._EXTRAS`, `tables._RAW`) hold the same tables whichever process
built them."""

from __future__ import annotations

from bbgrap_hls.model import OFFCHIP_CAPABLE, foldings
from bbgrap_hls.search.tables import (
    _EXTRAS,
    _RAW,
    _TABLES,
    Table,
    _build,
    _extra,
    _extra_key,
    _key,
    _remember,
)

PREFETCH_ASIDE = 48
"""`prefetch` builds about half the tables in a second process when at least this many are missing."""

EXTRA_WORK = 0.2
"""`prefetch`'s estimate of an `extra` table's work against its table's (the share of the
one-input-slot rows' build time on DenseNet-121's tables)."""


def prefetch(calls: list[tuple], extras: bool = False) -> None:
    """Build and cache the tables of the `_table` calls ``calls`` (argument tuples) that are
    not cached yet, and with ``extras`` their `Table.extra` rows (those of the tables with
    off-chip rows: the integer program asks for them all when DDR frame stages are allowed).
    With `PREFETCH_ASIDE` or more missing and a child able to start (`parallel.Aside`), about
    half the work (by `_work`, the longest first to the less loaded side) is done in a
    forked child; else, or if it fails, here. A table is a function of its key alone, so the
    caches hold the same tables whichever process built them."""
    from bbgrap_hls.search.parallel import Aside

    wanted = list(dict.fromkeys(_key(*c) for c in calls))
    jobs = [(False, k) for k in wanted if k not in _TABLES]
    if extras:
        jobs += [(True, k) for k in dict.fromkeys(_extra_key(k) for k in wanted
                                                  if k[6] is not None and k[0] in OFFCHIP_CAPABLE)
                 if k not in _EXTRAS]
    aside = None
    if len(jobs) >= PREFETCH_ASIDE:
        jobs, theirs = _halves(jobs)

        def build_theirs() -> tuple[list[tuple[tuple, Table]], dict, dict]:
            before, before_x, before_r = set(_TABLES), set(_EXTRAS), set(_RAW)
            for job in theirs:
                _do(*job)
            return ([(k, t) for k, t in _TABLES.items() if k not in before],
                    {k: t for k, t in _EXTRAS.items() if k not in before_x},
                    {k: r for k, r in _RAW.items() if k not in before_r})

        aside = Aside(build_theirs)
    try:
        for job in jobs:
            _do(*job)
        if aside is not None:
            built, built_x, built_r = aside.result()
            for k, t in built:
                _remember(k, t)
            _EXTRAS.update(built_x)
            _RAW.update(built_r)  # (the rows a table with row bands adds its band rows to)
    finally:
        if aside is not None:
            aside.close()


def _do(extra: bool, key: tuple) -> None:
    """One of `prefetch`'s jobs: the tables of ``key``, or its `extra` rows."""
    if extra:
        _extra(key)
    elif key not in _TABLES:
        _build(key)


def _work(job: tuple[bool, tuple]) -> float:
    """`prefetch`'s estimate of a job's build time: its foldings (pixel copies, placements and
    multipliers multiply them about alike across a graph's blocks)."""
    extra, key = job
    kind, g, _, parallel_window, *_, padded, _ = key
    n = len(foldings(kind, g, parallel_window, padded))
    return EXTRA_WORK * n if extra else float(n)


def _halves(jobs: list) -> tuple[list, list]:
    """``jobs`` in two lists of about equal `_work` (longest first to the lighter one), each
    in its original order."""
    work = [_work(job) for job in jobs]
    load, side = [0.0, 0.0], [[], []]
    for j in sorted(range(len(jobs)), key=lambda j: -work[j]):
        s = int(load[1] < load[0])
        load[s] += work[j]
        side[s].append(j)
    return [jobs[j] for j in sorted(side[0])], [jobs[j] for j in sorted(side[1])]
