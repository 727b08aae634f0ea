"""Row bands on the HLS path: bb::conv2d_banded (hw/hls/conv2d_banded.h: bb::band_split in
front of conv2d_offchip on the band geometry) against the integer reference, and its two
processes' counted cycles against their static bound (`schedule.kernel_bounds`).

The cases are tests/test_offchip_csim.py's off-chip conv cases (tests/test_hls_kernels.py's
numpy model, the weights as the off-chip image) with ``BANDS`` added: padding rows above and
below, overlap rows replayed (one band a row, a middle count), strides whose bands skip input
rows (dropped), dilation, two and three frames, one output frame slot (``OSLOTS = 1``).
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from bbgrap_hls.codegen import schedule
from bbgrap_hls.model.band import band_geometry, dropped_rows, overlap_rows
from tests.test_csim import graphs  # noqa: F401  (graphs: module fixture)
from tests.test_hls_kernels import _conv_case, assert_bit_exact, run_cases, threaded_binary
from tests.test_offchip_csim import _offchip

pytestmark = [pytest.mark.csim, pytest.mark.filterwarnings("ignore:no calibration samples")]

P1 = (1, 1, 1, 1)


def _banded(name, rng, bands, *args, frames=2, off=0, uram=0, oslots=2):
    """`_conv_case` ``args`` (h, w, c, co, k, s, d, pads, simd, pe) off chip (`_offchip`) as
    bb::conv2d_banded with ``BANDS = bands`` over ``frames`` frames; ``oslots`` 1: one output
    frame slot (``P::OSLOTS``, which the band's struct inherits)."""
    case = _offchip(_conv_case(name, rng, *args, frames=frames), off, uram, rng, oslots=oslots)
    case.name = f"{name}_b{bands}" + ("" if oslots == 2 else f"_out{oslots}")
    case.decls = case.decls.replace("; };", f", BANDS = {bands}; }};")
    call, _, _ = case.body.rpartition(",")
    case.body = call.replace("bb::conv2d_offchip<P>", "bb::conv2d_banded<P>") + f", {frames});"
    return case


def band_cases():
    rng = np.random.default_rng(4321)
    return [
        # 3x3 "same": one band a row (R = 1, two overlap rows) and three bands of two rows
        _banded("same", rng, 6, 6, 5, 4, 6, (3, 3), (1, 1), (1, 1), P1, 2, 3, frames=3),
        _banded("same", rng, 3, 6, 5, 4, 6, (3, 3), (1, 1), (1, 1), P1, 2, 3, off=2, uram=1),
        # 3x3 stride 2: bands of one and two rows, one overlap row; a tall asymmetric window
        # with two padding rows on top
        _banded("stride2", rng, 4, 7, 6, 4, 8, (3, 3), (2, 2), (1, 1), P1, 4, 4, frames=3),
        _banded("stride2", rng, 2, 7, 6, 4, 8, (3, 3), (2, 2), (1, 1), P1, 4, 4),
        _banded("stride_pads", rng, 2, 7, 6, 4, 6, (3, 2), (2, 2), (1, 1), (2, 0, 1, 1), 2, 3, off=1),
        # 1x1 stride 2: no overlap, the odd rows (the last one included) dropped; one band
        _banded("pw_s2", rng, 4, 8, 4, 8, 8, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 4, 8, frames=3),
        _banded("pw_s2", rng, 2, 8, 4, 8, 8, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 8, 4),
        _banded("pw_s2", rng, 1, 8, 4, 8, 8, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 8, 4),
        # dilation 2 (a window of 5 rows): four overlap rows
        _banded("dilated", rng, 4, 8, 5, 8, 8, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 8, 8, frames=3),
        _banded("dilated", rng, 2, 8, 5, 8, 8, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 8, 8),
        # one output frame slot (a band's output emitted before the next band computes), BRAM
        # and URAM, three frames
        _banded("same", rng, 3, 6, 5, 4, 6, (3, 3), (1, 1), (1, 1), P1, 2, 3, frames=3, oslots=1),
        _banded("stride2", rng, 2, 7, 6, 4, 8, (3, 3), (2, 2), (1, 1), P1, 4, 4, frames=3, off=1, uram=1,
                oslots=1),
    ]


def test_cases_cover_the_band_paths():
    """The cases replay rows, drop rows (between bands and below the last) and pad rows."""
    from bbgrap_hls.codegen.schedule import _conv_geometry

    geos = [(_conv_geometry(schedule._struct(c.decls)), schedule._struct(c.decls)["BANDS"]) for c in band_cases()]
    assert any(overlap_rows(g, b) >= 4 for g, b in geos)
    assert any(dropped_rows(g, b) >= 4 and overlap_rows(g, b) == 0 for g, b in geos)
    assert any(b == g.ho for g, b in geos) and any(1 < b < g.ho for g, b in geos)
    assert all(band_geometry(g, b).ho * b == g.ho for g, b in geos)


def test_one_output_slot_reaches_the_band_conv():
    """With ``OSLOTS = 1`` the band conv's bound (its BandView struct's `offchip_cycles`, the
    count the threaded test checks) is the one-slot one, above the two-slot one: compute and
    emit one stage."""
    out1 = [c for c in band_cases() if "OSLOTS = 1" in c.decls]
    assert out1 and all(c.frames >= 3 for c in out1)
    for c in out1:
        p = schedule._struct(c.decls)
        (_, _, one, _), (_, _, two, _) = (schedule.banded_cycles(q)[1] for q in (p, {**p, "OSLOTS": 2}))
        assert one > two, c.name


@pytest.fixture(scope="module")
def band_outputs(tmp_path_factory):
    return run_cases(band_cases(), tmp_path_factory.mktemp("band"), "banded kernel")


@pytest.mark.parametrize("name", [c.name for c in band_cases()])
def test_banded_kernel_bit_exact(band_outputs, name):
    assert_bit_exact(name, *band_outputs[name])


@pytest.fixture(scope="module")
def threaded_exe(tmp_path_factory):
    """One threaded C simulation binary of every case (`exe DIR CASE` runs one and prints the
    BB_CSIM_REPORT: a `proc` line with each process's counted cycles)."""
    d = tmp_path_factory.mktemp("band_threads")
    return threaded_binary(band_cases(), d)


@pytest.mark.parametrize("name", [c.name for c in band_cases()])
def test_banded_threaded_counts_match_the_bound(threaded_exe, name):
    """Threads and a band stream of two beats: bit-exact, no dataflow rule broken, and each
    process counts what `schedule.kernel_bounds` gives for the call, times the frames
    (band_split: `split_beats`; the conv: BANDS × its band struct's `offchip_cycles`)."""
    d, cases = threaded_exe
    r = subprocess.run([str(d / "t"), str(d), name], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    # (the testbench's own streams break the region rule: it feeds and drains them in its thread)
    assert not [ln for ln in r.stderr.splitlines() if "dataflow rule" in ln and "conv_band" in ln], r.stderr[-2000:]
    case = cases[name]
    assert_bit_exact(name, case, np.fromfile(d / f"{name}.bin", dtype=np.int8))
    counted = {f[2]: int(f[3]) for f in (ln.split("\t") for ln in r.stdout.splitlines()) if f[0] == "proc"}
    bounds = schedule.kernel_bounds(case.body.strip(), schedule._struct(case.decls))
    assert counted == {label: cyc * case.frames for _, label, cyc, _ in bounds}


def test_layer_bands_struct_and_errors(graphs):  # noqa: F811
    """bands > 1 on an off-chip conv adds BANDS to its struct and calls conv2d_banded (bands =
    1 is the off-chip layer byte for byte); refused on chip, on a dense layer, with one input
    slot and where the bands do not divide the output rows (8 here)."""
    from bbgrap_hls.codegen.layers import make_layer
    from bbgrap_hls.errors import BadInputError, UnsupportedError

    _, gq = graphs
    conv2 = next(n for n in gq.nodes if n.name == "conv2")
    base = make_layer(gq, conv2, "layer1", 2, 8, weights="ddr")
    one = make_layer(gq, conv2, "layer1", 2, 8, weights="ddr", bands=1)
    assert (one.struct, one.call, one.bands) == (base.struct, base.call, 1) and "BANDS" not in one.struct
    lay = make_layer(gq, conv2, "layer1", 2, 8, weights="ddr", bands=4)
    assert lay.struct.rstrip().endswith("ISLOTS = 2, BANDS = 4;\n};") and lay.bands == 4
    assert lay.call == base.call.replace("bb::conv2d_offchip<", "bb::conv2d_banded<")
    with pytest.raises(BadInputError, match="needs weights 'ddr'"):
        make_layer(gq, conv2, "layer1", 2, 8, bands=2)
    with pytest.raises(UnsupportedError, match="row bands"):
        make_layer(gq, conv2, "layer1", 2, 8, weights="ddr", bands=3)
    with pytest.raises(UnsupportedError, match="row bands"):
        make_layer(gq, conv2, "layer1", 2, 8, weights="ddr", in_slots=1, bands=2)
    fc = next(n for n in gq.nodes if n.op == "Dense")
    with pytest.raises(UnsupportedError, match="row bands"):
        make_layer(gq, fc, "layer9", 2, 2, weights="ddr", bands=2)


# ---- gen with a banded layer ---------------------------------------------------------------


@pytest.fixture(scope="module")
def banded_gen(tmp_path_factory):
    """``gen --offchip-weights`` of `offchip_cnn` on a 6-BRAM18, 12,000-LUT core (two convs
    off chip, both of 3 output rows) with the plan's first two-slot off-chip conv given
    ``bands = 3`` (`plan_graph` wrapped to set it), so that a banded layer and an unbanded
    off-chip one meet in one design. (Until stop 57 the second conv took one input slot and
    every two-slot conv was banded; 12 BRAM18 and 12,000 LUTs gave
    that mix until the requantisers' words went to 32 bits a channel; 10 and 10,000 gave it
    until the average pool's requantiser became module constants in stop 48.)"""
    from bbgrap_hls.cli import main
    from bbgrap_hls.commands import common
    from tests import models
    from tests.test_offchip_csim import board_yaml, offchip_cnn

    d = tmp_path_factory.mktemp("band_gen")
    plan_graph = common.plan_graph

    def banded_plan(graph, board, **options):
        plan = plan_graph(graph, board, **options)
        for n in plan.nodes:
            if n.weights == "ddr" and n.op == "Conv" and n.in_slots == 2 and not n.split:
                n.bands = graph.shape(graph.node(n.name).outputs[0])[2]
                break  # the first only: the other off-chip conv stays unbanded
        return plan

    model = models.save(offchip_cnn(), d / "m.onnx")
    (d / "tinymem.yaml").write_text(board_yaml(6, 12000))
    mp = pytest.MonkeyPatch()
    mp.setattr(common, "plan_graph", banded_plan)
    try:
        assert main(["gen", model, "--board", str(d / "tinymem.yaml"), "-o", str(d / "out"), "--offchip-weights",
                     "--no-ddr-stages"]) == 0
    finally:
        mp.undo()
    return d / "out"


def test_gen_banded_layers_csim_and_schedule(banded_gen):
    """plan.json carries ``bands``; its layers are P::BANDS structs called through
    bb::conv2d_banded; the threaded csim is bit-exact and counts each banded layer's two
    processes at their bound (`schedule.banded_cycles`)."""
    import json

    from bbgrap_hls.commands.csim import csim_design

    out = banded_gen
    plan = json.loads((out / "plan.json").read_text())
    banded = [n for n in plan["nodes"] if n.get("bands", 1) > 1]
    assert banded and any(n["weights"] == "ddr" and n.get("bands", 1) == 1 for n in plan["nodes"])
    heads = [h.read_text() for h in (out / "hls").glob("layer*.h")]
    assert sum("BANDS = 3;" in h and "read once per band" in h for h in heads) == len(banded)
    cpp = "".join(c.read_text() for c in (out / "hls").glob("core*.cpp"))
    assert cpp.count("bb::conv2d_banded<") == len(banded)
    res = csim_design(out, threads=True, schedule=True)
    assert res.match, res.message
    rows = [r for r in res.schedule if r["label"] in ("band_split<P>", "conv2d_offchip<BandView<P>>")]
    assert len(rows) == 2 * len(banded)
    for r in rows:
        assert r["counted"] == pytest.approx(r["bound"], rel=0.001), r
