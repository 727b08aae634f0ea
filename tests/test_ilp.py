"""The joint folding choice on one core (`bbgrap_hls.search.ilp`): the integer program
against brute force, the row pruning, and plans it makes that the block-by-block rules miss."""

from __future__ import annotations

import itertools
import os
import signal
import time

import numpy as np
import pytest

from bbgrap_hls.board import load_board
from bbgrap_hls.frontend.onnx_loader import load_model
from bbgrap_hls.passes import canonicalize
from bbgrap_hls.search import build_problem, make_plan
from bbgrap_hls.search.couplings import Lag
from bbgrap_hls.search.ilp import joint_plan
from bbgrap_hls.search.program import _pareto, _rows_at, candidates, fit_rows
from bbgrap_hls.search.repair import violations
from bbgrap_hls.search.runs import _run_best
from bbgrap_hls.search.tables import N_RES, Table
from tests.test_sim_offchip import board_yaml


def _graph(model_file, name):
    return canonicalize(load_model(model_file(name)))


def _table(ii, res, ddr=None) -> Table:
    n = len(ii)
    z = np.zeros(n, dtype=bool)
    return Table(pe=np.ones(n, np.int64), simd=np.ones(n, np.int64), uram=z, ii=np.asarray(ii, np.int64),
                 res=np.asarray(res, np.int64).reshape(n, N_RES), mmv=np.ones(n, np.int64),
                 ddr=z if ddr is None else np.asarray(ddr, bool), lut=z, lutw=z, lutrq=z, padded=z)


def _brute(tables, limits, target):
    """Whether some choice of one row per table with ii <= target fits ``limits``."""
    rows = [[i for i in range(len(t)) if t.ii[i] <= target] for t in tables]
    for pick in itertools.product(*rows):
        if np.all(sum(t.res[i] for t, i in zip(tables, pick, strict=True)) <= limits):
            return True
    return False


def test_two_binding_resources_need_a_joint_choice():
    # Two blocks, each a DSP-heavy or a BRAM-heavy row. The cheapest row of each under any
    # one weighting is the same kind for both, which overflows that resource; one of each fits.
    a = _table([10, 10], [[8, 1, 0, 0, 0], [1, 8, 0, 0, 0]])
    b = _table([10, 10], [[8, 1, 0, 0, 0], [1, 8, 0, 0, 0]])
    limits = np.array([10, 10, 0, 0, 0])
    pick = fit_rows([a, b], limits, 10)
    assert pick is not None and sorted(pick) == [0, 1]
    assert fit_rows([a, b], np.array([8, 8, 0, 0, 0]), 10) is None  # 9 + 9 of nothing fits
    assert fit_rows([a, b], limits, 9) is None  # no row meets the target


def test_fit_rows_agrees_with_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(60):
        tables = [_table(rng.integers(1, 5, n), rng.integers(0, 9, (n, N_RES)))
                  for n in rng.integers(1, 5, rng.integers(1, 5))]
        limits = rng.integers(4, 25, N_RES)
        target = int(rng.integers(1, 5))
        pick = fit_rows(tables, limits, target)
        assert (pick is not None) == _brute(tables, limits, target)
        if pick is not None:
            assert all(t.ii[i] <= target for t, i in zip(tables, pick, strict=True))
            assert np.all(sum(t.res[i] for t, i in zip(tables, pick, strict=True)) <= limits)


def _brute_lags(tables, limits, target, lags):
    """Whether some choice fits ``limits`` with each lag's frames (the sum of the chosen rows'
    weights) in the cheapest mix of its memories: checked over frame splits in steps of 1/8."""
    rows = [[i for i in range(len(t)) if t.ii[i] <= target] for t in tables]
    for pick in itertools.product(*rows):
        used = sum(t.res[i] for t, i in zip(tables, pick, strict=True)).astype(float)
        frames = [sum(w[pick[ti]] for ti, w in lag.weights) for lag in lags]
        # each lag here has two memories: try its frames split between them
        for split in itertools.product(np.linspace(0, 1, 9), repeat=len(lags)):
            need = used + sum(f * (s * lag.per_frame[0] + (1 - s) * lag.per_frame[1])
                              for f, s, lag in zip(frames, split, lags, strict=True))
            if np.all(need <= limits + 1e-9):
                return True
    return False


def test_fit_rows_charges_the_lags_of_reconvergent_fifos():
    # Block a's off-chip row is cheap but makes b's other input wait two frames of 4 BRAM18
    # each (or 1 URAM each): with 6 BRAM18 and no URAM it cannot be chosen.
    a = _table([10, 10], [[4, 6, 0, 0, 0], [4, 0, 0, 0, 0]], ddr=[False, True])
    b = _table([10], [[1, 0, 0, 0, 0]])
    lag = Lag(np.array([[0, 4, 0, 0, 0], [0, 0, 1, 0, 0]], float), [(0, np.where(a.ddr, 2.0, 0.0))])
    assert fit_rows([a, b], np.array([9, 6, 0, 0, 0]), 10, lags=[lag]) == [0, 0]
    assert fit_rows([a, b], np.array([9, 5, 0, 0, 0]), 10, lags=[lag]) is None
    assert fit_rows([a, b], np.array([9, 5, 2, 0, 0]), 10, lags=[lag]) == [1, 0]  # the lag in URAM
    assert fit_rows([a, b], np.array([9, 5, 0, 0, 0]), 10) == [1, 0]  # without the lag: off chip
    rng = np.random.default_rng(11)
    for _ in range(40):
        tables = [_table(rng.integers(1, 4, n), rng.integers(0, 6, (n, N_RES)), ddr=rng.integers(0, 2, n))
                  for n in rng.integers(1, 4, rng.integers(1, 4))]
        lags = [Lag(rng.integers(0, 3, (2, N_RES)).astype(float),
                    [(int(ti), np.where(tables[ti].ddr, float(rng.integers(1, 3)), 0.0))
                     for ti in rng.choice(len(tables), rng.integers(1, len(tables) + 1), replace=False)])
                for _ in range(rng.integers(1, 3))]
        limits = rng.integers(4, 20, N_RES)
        target = int(rng.integers(1, 4))
        pick = fit_rows(tables, limits, target, lags=lags)
        assert (pick is not None) == _brute_lags(tables, limits, target, lags)


def test_rows_at_a_target_are_the_same_from_all_rows_as_from_candidates():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(5, 200))
        t = _table(rng.integers(1, 9, n), rng.integers(0, 5, (n, N_RES)), ddr=rng.integers(0, 2, n))
        for target in range(1, 9):
            assert np.array_equal(_rows_at(t, None, target), _rows_at(t, candidates(t), target))


def test_pruned_rows_each_have_a_kept_dominator():
    rng = np.random.default_rng(3)
    res = rng.integers(0, 4, (200, 3))
    rows = np.arange(200)
    kept = _pareto(res, rows)
    assert len(kept) < 200
    for i in rows:
        assert any(np.all(res[k] <= res[i]) for k in kept)
    # candidates keep off-chip rows apart from the others (`_at` may surcharge them)
    t = _table([5, 5], [[1, 1, 0, 0, 0], [2, 2, 0, 0, 0]], ddr=[False, True])
    assert list(candidates(t)) == [0, 1]
    t = _table([5, 5], [[1, 1, 0, 0, 0], [2, 2, 0, 0, 0]])
    assert list(candidates(t)) == [0]


def _pareto_brute(res, rows, tie):
    """`_pareto` by its definition: a row is dropped when another row matches or beats it in
    every column and is either better somewhere or equal and first by (tie, row)."""
    kept = []
    for i in rows:
        beaten = False
        for j in rows:
            if j == i or not np.all(res[j] <= res[i]):
                continue
            if np.any(res[j] < res[i]) or (tie[j], j) < (tie[i], i):
                beaten = True
                break
        if not beaten:
            kept.append(i)
    return np.array(kept, dtype=np.int64)


def test_pareto_keeps_exactly_the_undominated_rows_across_chunks_and_ties():
    rng = np.random.default_rng(11)
    for _ in range(30):
        n = int(rng.integers(0, 300))  # up to several `_CHUNK`s
        res = rng.integers(0, int(rng.integers(1, 8)), (n, int(rng.integers(1, 7))))
        rows = np.sort(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)) if n else np.arange(0)
        tie = rng.integers(0, 4, n)
        assert np.array_equal(_pareto(res, rows, tie=tie), _pareto_brute(res, rows, tie))
        assert np.array_equal(_pareto(res, rows), _pareto_brute(res, rows, np.zeros(n)))


@pytest.mark.parametrize("model,board", [("resnet8", "kv260"), ("lenet", "pynq-z2")])
def test_joint_choice_beats_the_rules_on_one_core(model_file, model, board):
    """On these the block-by-block rules stop at a slower ii (ResNet-8 on kv260: 12,288
    against 8,192; LeNet on pynq-z2: 1,176 against 1,024) though rows fitting faster exist.
    (DS-CNN on pynq-z2, 12,000 against 8,000 until stop 58: with smaller requantisers the
    rules reach 8,000 there too.)"""
    g = _graph(model_file, model)
    bd = load_board(board)
    prob = build_problem(g, bd)
    rules = _run_best(prob, "search", "throughput", 60.0, 0, None)[1]
    got = joint_plan(prob, "search", "throughput")
    assert got is not None
    plan = got[0]
    assert not violations(plan)
    assert plan.ii_cycles < rules.ii_cycles
    # make_plan keeps it and says how it was made
    mp = make_plan(g, bd, baselines=False)
    assert mp.ii_cycles <= plan.ii_cycles
    assert not mp.optimal and "integer program" in mp.optimality_note


def test_many_cores_keep_the_segmentation(model_file):
    """With several cores the program keeps the segmentation's cores and splits: ResNet-8 on
    u50 (two SLRs, one conv split over both) goes from 1,536 to 1,366 cycles."""
    prob = build_problem(_graph(model_file, "resnet8"), load_board("u50"))
    assert joint_plan(prob, "search", "throughput") is None  # needs the segmentation
    p, rules, seg = _run_best(prob, "search", "throughput", 60.0, 0, None)
    assert seg.split
    got = joint_plan(p, "search", "throughput", seg=seg, below=rules.ii_cycles)
    assert got is not None
    plan, jseg = got
    assert plan.ii_cycles < rules.ii_cycles and not violations(plan)
    assert jseg.core == seg.core and {u: [c for c, _ in ps] for u, ps in jseg.split.items()} == \
        {u: [c for c, _ in ps] for u, ps in seg.split.items()}


@pytest.mark.skipif(not hasattr(os, "fork") or not os.path.isdir("/proc/self/task"), reason="needs fork and /proc")
def test_a_fork_after_a_program_can_solve_one():
    """HiGHS keeps worker threads after a run unless told otherwise; `make_plan` forks its
    second planner after the first has solved programs, and a child whose HiGHS waits on
    threads it does not have never returns (seen on GoogLeNet)."""
    a = _table([1, 1], [[8, 1, 0, 0, 0], [1, 8, 0, 0, 0]])
    limits = np.array([10, 10, 0, 0, 0])
    threads = len(os.listdir("/proc/self/task"))
    assert fit_rows([a, a], limits, 1) is not None
    assert len(os.listdir("/proc/self/task")) == threads  # no HiGHS thread left behind
    pid = os.fork()
    if pid == 0:  # the child solves one program and exits 0 if it found the fit
        os._exit(0 if fit_rows([a, a], limits, 1) is not None else 1)
    for _ in range(300):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("a program in a forked child did not finish in 30 s")



def _pair_tables(rng):
    """A producer (off-chip rows of several ``pe``, and on-chip ones) and a reader with
    two-slot and one-slot off-chip rows of several ``simd``, random ii and resources."""
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    p = _table(rng.integers(5, 40, n), rng.integers(0, 9, (n, N_RES)), ddr=rng.random(n) < 0.6)
    p.pe = rng.choice([1, 2, 4, 8], n)
    r = _table(rng.integers(5, 40, m), rng.integers(0, 9, (m, N_RES)), ddr=np.ones(m, bool))
    r.in1, r.simd = rng.random(m) < 0.6, rng.choice([1, 2, 4, 8], m)
    return p, r


def _brute_pair(p, r, limits, target, elems):
    """Whether some pair of rows fits: the reader's one-slot row only with an off-chip
    producer row whose frame (elems / pe cycles) keeps the row's ii plus the slowdown within
    the target."""
    for i, j in itertools.product(range(len(p)), range(len(r))):
        if p.ii[i] > target or r.ii[j] > target or np.any(p.res[i] + r.res[j] > limits):
            continue
        if r.in1[j] and not (p.ddr[i] and r.ii[j] + -(-elems // p.pe[i]) - elems // r.simd[j] <= target):
            continue
        return True
    return False


def test_one_input_slot_rows_need_a_serving_producer():
    """`Pair`: a reader's one-input-slot row is chosen only with an off-chip producer row fast
    enough for it (brute force over random tables), and never without the constraint's
    producer off chip."""
    from bbgrap_hls.search.couplings import Pair

    rng = np.random.default_rng(31)
    seen = 0
    for _ in range(150):
        p, r = _pair_tables(rng)
        limits, target, elems = rng.integers(4, 16, N_RES), int(rng.integers(10, 45)), 16
        pick = fit_rows([p, r], limits, target, pairs=[Pair(1, 0, elems)])
        assert (pick is not None) == _brute_pair(p, r, limits, target, elems)
        if pick is not None and r.in1[pick[1]]:
            seen += 1
            assert p.ddr[pick[0]] and r.ii[pick[1]] + elems // p.pe[pick[0]] - elems // r.simd[pick[1]] <= target
    assert seen > 5  # the constraint was exercised, not only avoided


def test_joint_bisection_skips_met_targets_and_stops_within_its_tolerance(model_file, monkeypatch):
    """`joint_plan` never tries a target at or above a plan it already has (a plan meets every
    target above its ii), and stops once the least target not ruled out is within
    `JOINT_TOLERANCE` of its plan: at most that much slower than bisecting to the end, with
    no more programs."""
    from bbgrap_hls.search import ilp

    prob = build_problem(_graph(model_file, "resnet8"), load_board("kv260"))
    real = ilp._at

    def run(tolerance):
        tried = []

        def at(p, seg, items, target, *a, **kw):
            got = real(p, seg, items, target, *a, **kw)
            tried.append((target, None if got is None else got[0].ii_cycles))
            return got

        monkeypatch.setattr(ilp, "_at", at)
        monkeypatch.setattr(ilp, "JOINT_TOLERANCE", tolerance)
        plan = joint_plan(prob, "search", "throughput")[0]
        for n, (target, ii) in enumerate(tried):
            if ii is not None:
                assert ii <= target
                assert not any(ii <= later <= target for later, _ in tried[n + 1:])
        return plan.ii_cycles, tried

    exact, tried_exact = run(0.0)
    loose, tried_loose = run(0.05)
    assert len(tried_loose) < len(tried_exact)
    assert exact <= loose <= exact * 1.05
    failed = [t for t, ii in tried_exact if ii is None]
    assert all(t < exact for t in failed)


def test_a_target_the_on_chip_rows_meet_is_met_with_board_memory_allowed(model_file, monkeypatch, tmp_path):
    """`_at`'s last mode (`ilp.ON_CHIP`) keeps every block on its on-chip rows: where the
    refits with off-chip rows keep failing at every target (here made to: a built plan that
    reads board memory is declared over its limits), the joint plan with off-chip weights
    allowed is as fast as the one without them, all on chip; without the mode ResNet-8 on
    this board has none (RegNetY-400MF on u250 was 26,656 cycles against 25,088)."""
    from bbgrap_hls.search import ilp

    (tmp_path / "b.yaml").write_text(board_yaml(1, bram18=60, dsp=64, luts=40000))
    g, bd = _graph(model_file, "resnet8"), load_board(str(tmp_path / "b.yaml"))
    on_chip = joint_plan(build_problem(g, bd), "search", "throughput")[0]
    prob = build_problem(g, bd, offchip_weights=True)
    real, used = ilp.violations, []

    def offchip_never_fits(plan):
        reads = sum(c.offchip_bytes_per_frame for c in plan.cores)
        used.append(reads > 0)
        return real(plan) or ([(plan.cores[0].id, "bw", 1, 0)] if reads else [])

    monkeypatch.setattr(ilp, "violations", offchip_never_fits)
    plan = joint_plan(prob, "search", "throughput")[0]
    assert any(used)  # the programs did choose off-chip rows, which were refused
    assert not any(c.offchip_bytes_per_frame for c in plan.cores)
    assert plan.ii_cycles <= on_chip.ii_cycles
    # without the mode (no row counted as in board memory, so it is not added): none fits
    monkeypatch.setattr(ilp, "_in_board_memory", lambda t: np.zeros(len(t.ii), dtype=bool))
    assert joint_plan(prob, "search", "throughput") is None
