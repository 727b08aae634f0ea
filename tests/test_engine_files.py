"""The engine program as gen-folder files (`bbgrap_hls.codegen.engine_files`): written and
read back, it places the input and reads the output as the built program does, times the
same frame and gives the HLS top the same step rows."""

from __future__ import annotations

import numpy as np
import pytest

from bbgrap_hls.codegen import engine_files as ef
from bbgrap_hls.codegen import engine_memory as em
from bbgrap_hls.codegen import engine_program as ep
from bbgrap_hls.model.engine_top import TopParams, frame_cycles
from tests.test_engine_program import frames, graphs  # noqa: F401  (the module fixture)

PARAMS = {"taps": 1, "lanes": 16, "pack": 1, "latency": 20, "period": 2, "in_buffer": 4096}


def _write(tmp_path, program):
    for name, data in ef.program_files(program, PARAMS).items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return ef.load_program(tmp_path)


@pytest.mark.parametrize("net,in_buffer", [("resnet_like", None), ("se_like", None), ("inception_like", None),
                                            ("se_like", 384)])
def test_round_trip(graphs, tmp_path, net, in_buffer):  # noqa: F811
    gq = graphs[net]
    program = ep.build(gq, 8, 4, 16, in_buffer=in_buffer)
    assert in_buffer is None or any(r.stride for r in program.regions.values())
    back = _write(tmp_path, program)
    assert ef.step_rows(back) == ef.step_rows(program)
    assert back.weights == program.weights and back.regions == program.regions
    tp = TopParams(latency=20, period=2, kb=16)
    assert frame_cycles(back, tp) == frame_cycles(program, tp)
    x = frames(gq, 1)[0]
    mem = em.run_memory(program, x)
    r = program.regions[program.input]
    assert ef.input_bytes(back, x) == bytes(mem[r.base:r.base + r.span(program.pe)])
    assert np.array_equal(ef.output_tensor(back, bytes(mem)), em.run_reference(program, x))
    doc = ef.load_doc(tmp_path)
    assert doc["params"] == PARAMS and doc["sizes"] == ef.unit_sizes(program)


def test_unknown_parameter_refused(graphs):  # noqa: F811
    with pytest.raises(ValueError, match="unknown"):
        ef.program_files(ep.build(graphs["resnet_like"], 4, 4, 16), {"speed": 1})
