"""The lookup-table activations end to end: every op the LUT kernel runs (`LUT_KINDS`, from
the op registry) goes through plan, gen and g++ C simulation bit-exact, so a new activation
cannot be added to the reference alone."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from bbgrap_hls.codegen.layers import LUT_KINDS
from tests.test_properties import _Net, check_example

# Ops that need operands or attributes `_Net.act` does not give (Clip needs its bounds;
# Relu6 is a Clip): covered elsewhere (tests/test_csim.py, tests/test_properties.py).
_ELSEWHERE = {"Clip", "Relu6"}


def _chain(ops: list[str]) -> onnx.ModelProto:
    net = _Net(np.random.default_rng(3))
    net.shapes["x"] = (1, 4, 6, 6)
    y = net.conv("x", 8, 3, 1, 1)
    for op in ops:
        y = net.act(y, op)
    y = net.conv(y, 4, 1, 1, 0)
    g = helper.make_graph(net.nodes, "lut_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, list(net.shapes[y]))], net.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)])  # Swish: 24
    m.ir_version = 10
    return m


def test_every_lut_op_is_in_the_chain():
    assert {"Elu", "Selu", "Celu", "Gelu", "Softplus", "Softsign", "Mish", "ThresholdedRelu",
            "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Relu"} <= set(LUT_KINDS)


@pytest.mark.csim
def test_lut_chain_csim_bit_exact(tmp_path):
    ops = sorted(LUT_KINDS - _ELSEWHERE)
    model = _chain(ops)
    assert [n.op_type for n in model.graph.node if n.op_type in LUT_KINDS] == ops
    out = check_example(model, "u250", "search", tmp_path, csim=True)  # asserts csim bit-exact
    assert "csim" in out
