"""Every op kind of the registry against onnxruntime, plus its refusals and counts.

Each case is a one-node model (tests/models.py `node_model`) loaded by our frontend and
run by the float reference; tolerance rtol 1e-4, atol 1e-5 (float32 against float32).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from bbgrap_hls.errors import BadInputError
from bbgrap_hls.frontend import load_model
from bbgrap_hls.ops import REGISTRY, get_op
from bbgrap_hls.reference import run_float
from tests.model_builder import node_model
from tests.models import save

R = np.random.default_rng(1234)


def w(*shape, lo=None):
    """Seeded constant; ``lo`` shifts it away from zero (divisors)."""
    v = R.standard_normal(shape).astype(np.float32)
    return v if lo is None else (np.sign(v) * (np.abs(v) + lo)).astype(np.float32)


def i64(*v):
    return np.array(v, np.int64)


def f32(v):
    return np.array(v, np.float32)


X4 = (2, 4, 9, 9)
# (case id, op type, inputs, attrs, opset)
CASES = [
    ("conv", "Conv", [X4, w(6, 4, 3, 3), w(6)], {"pads": [1, 1, 1, 1]}, 13),
    ("conv_group", "Conv", [X4, w(6, 2, 3, 3), w(6)], {"group": 2, "strides": [2, 2]}, 13),
    ("conv_depthwise", "Conv", [X4, w(4, 1, 3, 3)], {"group": 4, "pads": [0, 1, 2, 1]}, 11),
    ("conv_same_upper", "Conv", [X4, w(5, 4, 4, 4), w(5)], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, 13),
    ("conv_same_lower", "Conv", [X4, w(5, 4, 4, 4)], {"auto_pad": "SAME_LOWER", "strides": [2, 1]}, 9),
    ("conv_valid", "Conv", [X4, w(3, 4, 2, 3)], {"auto_pad": "VALID"}, 13),
    ("conv_dilated", "Conv", [X4, w(3, 4, 3, 3), w(3)], {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, 13),
    ("gemm_transb", "Gemm", [(3, 8), w(5, 8), w(5)], {"transB": 1, "alpha": 0.5, "beta": 2.0}, 13),
    ("gemm_plain", "Gemm", [(3, 8), w(8, 5)], {}, 11),
    ("gemm_c_matrix", "Gemm", [(3, 8), w(8, 5), w(3, 5)], {"beta": -1.0}, 11),
    ("matmul_2d", "MatMul", [(3, 8), w(8, 5)], {}, 13),
    ("matmul_3d", "MatMul", [(1, 7, 8), w(8, 5)], {}, 13),
    ("batchnorm", "BatchNormalization", [X4, w(4), w(4), w(4), np.abs(w(4)) + 0.1], {"epsilon": 1e-3}, 9),
    ("batchnorm_2d", "BatchNormalization", [(3, 4), w(4), w(4), w(4), np.abs(w(4)) + 0.1], {}, 15),
    ("relu", "Relu", [X4], {}, 13),
    ("clip_attr", "Clip", [X4], {"min": -0.5, "max": 0.7}, 9),
    ("clip_inputs", "Clip", [X4, f32(0.0), f32(6.0)], {}, 13),
    ("clip_max_only", "Clip", [X4, "", f32(0.3)], {}, 12),
    ("clip_none", "Clip", [X4], {}, 11),
    ("leaky_relu", "LeakyRelu", [X4], {"alpha": 0.2}, 13),
    ("sigmoid", "Sigmoid", [X4], {}, 13),
    ("tanh", "Tanh", [X4], {}, 13),
    ("hard_sigmoid", "HardSigmoid", [X4], {"alpha": 0.3, "beta": 0.4}, 13),
    ("hard_swish", "HardSwish", [X4], {}, 14),
    ("elu", "Elu", [X4], {"alpha": 0.7}, 13),
    ("selu", "Selu", [X4], {}, 13),
    ("selu_attrs", "Selu", [X4], {"alpha": 2.0, "gamma": 0.5}, 11),
    ("celu", "Celu", [X4], {"alpha": 1.5}, 13),
    ("gelu", "Gelu", [X4], {}, 20),
    ("gelu_tanh", "Gelu", [X4], {"approximate": "tanh"}, 20),
    ("softplus", "Softplus", [X4], {}, 13),
    ("softsign", "Softsign", [X4], {}, 13),
    ("mish", "Mish", [X4], {}, 18),
    ("swish", "Swish", [X4], {}, 24),
    ("swish_alpha", "Swish", [X4], {"alpha": 1.702}, 24),
    ("thresholded_relu", "ThresholdedRelu", [X4], {"alpha": 0.4}, 13),
    ("add_broadcast", "Add", [X4, (1, 4, 1, 1)], {}, 13),
    ("add_const_first", "Add", [w(4, 1, 1), X4], {}, 13),
    ("sub_const", "Sub", [X4, w(1, 4, 1, 1)], {}, 9),
    ("mul_two", "Mul", [X4, X4], {}, 13),
    ("mul_scalar", "Mul", [X4, f32(0.25)], {}, 13),
    ("div_const", "Div", [X4, w(4, 1, 1, lo=0.5)], {}, 13),
    ("sum3", "Sum", [X4, (1, 4, 1, 1), X4], {}, 13),
    ("sum1", "Sum", [X4], {}, 8),
    ("concat", "Concat", [X4, (2, 3, 9, 9)], {"axis": 1}, 13),
    ("concat_const_neg", "Concat", [(2, 5), w(2, 3)], {"axis": -1}, 11),
    ("maxpool", "MaxPool", [X4], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 13),
    ("maxpool_ceil", "MaxPool", [X4], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, 13),
    ("maxpool_ceil_pad", "MaxPool", [(1, 2, 10, 10)],
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}, 13),
    ("maxpool_same", "MaxPool", [X4], {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, 9),
    ("maxpool_dilated", "MaxPool", [X4], {"kernel_shape": [2, 2], "dilations": [2, 2]}, 12),
    ("avgpool", "AveragePool", [X4], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 13),
    ("avgpool_incl_pad", "AveragePool", [X4],
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1}, 13),
    ("avgpool_ceil", "AveragePool", [(1, 2, 10, 10)],
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 0], "ceil_mode": 1}, 13),
    ("avgpool_ceil_incl", "AveragePool", [(1, 2, 10, 10)],
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1}, 13),
    ("avgpool_same_lower", "AveragePool", [X4], {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}, 11),
    ("gap", "GlobalAveragePool", [X4], {}, 13),
    ("reduce_mean_attr", "ReduceMean", [X4], {"axes": [2, 3]}, 13),
    ("reduce_mean_flat", "ReduceMean", [X4], {"axes": [-1, -2], "keepdims": 0}, 11),
    ("reduce_mean_input", "ReduceMean", [X4, i64(2, 3)], {"keepdims": 1}, 18),
    ("reduce_mean_all", "ReduceMean", [X4], {"keepdims": 0}, 13),
    ("flatten", "Flatten", [X4], {}, 13),
    ("flatten_axis0", "Flatten", [X4], {"axis": 0}, 9),
    ("flatten_neg", "Flatten", [X4], {"axis": -1}, 13),
    ("reshape", "Reshape", [X4, i64(0, -1, 9)], {}, 13),
    ("reshape_5d", "Reshape", [X4, i64(2, 2, 2, 9, 9)], {}, 9),
    ("squeeze_attr", "Squeeze", [(2, 1, 4, 1)], {"axes": [1]}, 11),
    ("squeeze_input", "Squeeze", [(2, 1, 4, 1), i64(-1, 1)], {}, 13),
    ("squeeze_all", "Squeeze", [(2, 1, 4, 1)], {}, 13),
    ("unsqueeze_attr", "Unsqueeze", [(2, 4)], {"axes": [0, 3]}, 11),
    ("unsqueeze_input", "Unsqueeze", [(2, 4), i64(-1, 1)], {}, 13),
    ("transpose", "Transpose", [X4], {"perm": [0, 2, 3, 1]}, 13),
    ("transpose_default", "Transpose", [(2, 3, 5)], {}, 13),
    ("pad_attr", "Pad", [X4], {"pads": [0, 0, 1, 2, 0, 0, 3, 0], "value": 1.5}, 9),
    ("pad_input", "Pad", [X4, i64(0, 0, 1, 1, 0, 0, 1, 1), f32(-2.0)], {"mode": "constant"}, 13),
    ("pad_crop", "Pad", [X4, i64(0, 0, -1, 2, 0, 0, 1, -2)], {}, 11),
    ("pad_axes", "Pad", [X4, i64(1, 2, 3, 0), "", i64(2, -1)], {}, 18),
    ("identity", "Identity", [X4], {}, 13),
    ("dropout_attr", "Dropout", [X4], {"ratio": 0.3}, 9),
    ("dropout_input", "Dropout", [X4, f32(0.4)], {}, 13),
    ("softmax_legacy", "Softmax", [X4], {"axis": 1}, 11),
    ("softmax_axis", "Softmax", [X4], {"axis": 1}, 13),
    ("softmax_default", "Softmax", [(3, 10)], {}, 13),
    ("lrn", "LRN", [X4], {"size": 3, "alpha": 1e-2, "beta": 0.75, "bias": 2.0}, 9),
    ("lrn_5", "LRN", [X4], {"size": 5}, 13),
    ("slice", "Slice", [X4, i64(1, 2), i64(3, -1), i64(1, 3)], {}, 13),
    ("slice_steps", "Slice", [X4, i64(-1, 8), i64(-100, 0), i64(1, 3), i64(-2, -3)], {}, 13),
    ("slice_attr", "Slice", [X4], {"starts": [0, 1], "ends": [1, 100], "axes": [0, 2]}, 9),
    ("split_whole", "Split", [X4], {"axis": 1}, 13),
    ("global_max_pool", "GlobalMaxPool", [X4], {}, 13),
    ("resize_nearest", "Resize", [X4, "", f32([1, 1, 2, 3])], {"mode": "nearest"}, 13),
    ("resize_linear", "Resize", [X4, "", f32([1, 1, 2, 3])], {"mode": "linear"}, 13),
    ("resize_sizes", "Resize", [X4, "", "", i64(2, 4, 27, 18)],
     {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, 13),
    ("upsample", "Upsample", [X4, f32([1, 1, 2, 2])], {"mode": "nearest"}, 9),
    ("conv_transpose", "ConvTranspose", [X4, w(4, 3, 2, 2), w(3)], {"strides": [2, 2]}, 13),
    ("depth_to_space", "DepthToSpace", [(2, 8, 3, 4)], {"blocksize": 2}, 13),
    ("depth_to_space_crd", "DepthToSpace", [(1, 18, 2, 3)], {"blocksize": 3, "mode": "CRD"}, 13),
    ("conv_transpose_group_outpad", "ConvTranspose", [X4, w(4, 3, 3, 3)],
     {"strides": [3, 2], "group": 2, "pads": [1, 0, 0, 1], "output_padding": [2, 1]}, 11),
    ("conv_transpose_output_shape", "ConvTranspose", [X4, w(4, 2, 4, 4)], {"strides": [4, 4], "output_shape": [36, 35]}, 13),
    ("conv_transpose_same_lower", "ConvTranspose", [X4, w(4, 2, 2, 3)],
     {"strides": [2, 2], "auto_pad": "SAME_LOWER", "dilations": [1, 2]}, 13),
]
#: ONNX types the loader holds as another kind
LOWERED = {"Split": "Slice", "Upsample": "Resize", "resize_linear": "ResizeBilinear"}  # by op type or case id
IDS = [c[0] for c in CASES]


def _feeds(model) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_op_matches_onnxruntime(case, tmp_path):
    case_id, op_type, inputs, attrs, opset = case
    model = node_model(op_type, inputs, attrs, opset)
    path = save(model, tmp_path / "m.onnx")
    graph = load_model(path)
    feeds = _feeds(model)
    ours = run_float(graph, feeds)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert [n.op for n in graph.nodes] == [LOWERED.get(case_id, LOWERED.get(op_type, op_type))]
    # every output of the model, in order: a dropped output must not shorten the comparison
    assert list(graph.outputs) == [o.name for o in model.graph.output] and len(want) == len(graph.outputs) >= 1
    assert set(ours) >= set(graph.outputs)
    for name, ref in zip(graph.outputs, want, strict=True):
        assert ours[name].shape == ref.shape == graph.shape(name)
        np.testing.assert_allclose(ours[name], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [13, 21])
def test_qdq_pair_matches_onnxruntime(opset, tmp_path):
    """QuantizeLinear → DequantizeLinear (ops of the quantisation engineer, checked here
    so that every registered kind meets onnxruntime); exact up to float32 rounding."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(f32([0.02, 0.05, 0.1, 0.03]), "s"),
             numpy_helper.from_array(np.array([0, 3, -5, 1], np.int8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q", axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq", axis=1)]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X4))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(X4))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = save(m, tmp_path / "m.onnx")
    graph = load_model(path)
    feeds = _feeds(m)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert [n.op for n in graph.nodes] == ["QuantizeLinear", "DequantizeLinear"]
    np.testing.assert_allclose(run_float(graph, feeds)["y"], want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("kind", sorted(k for k, op in REGISTRY.items() if op.onnx_types))
def test_every_onnx_kind_has_a_case(kind):
    assert kind in {c[1] for c in CASES} | {"QuantizeLinear", "DequantizeLinear"}


def test_host_ops_have_no_kernel():
    for op in REGISTRY.values():
        if op.host_only:
            assert op.hls_kernel is None and op.rtl_module is None, op.kind


# (case id, op type, inputs, attrs, opset, outputs, words the message must hold)
REFUSALS = [
    ("gemm_transa", "Gemm", [(8, 3), w(8, 5)], {"transA": 1}, 13, 1, "transA"),
    ("gemm_weights_act", "Gemm", [(3, 8), (8, 5)], {}, 13, 1, "constant"),
    ("matmul_weights_act", "MatMul", [(3, 8), (8, 5)], {}, 13, 1, "constant"),
    ("matmul_batch", "MatMul", [(2, 3, 8), w(8, 5)], {}, 13, 1, "batch"),
    ("clip_bound_act", "Clip", [X4, (1,)], {}, 13, 1, "min"),
    ("maxpool_indices", "MaxPool", [X4], {"kernel_shape": [2, 2]}, 13, 2, "Indices"),
    ("dropout_mask", "Dropout", [X4], {}, 13, 2, "mask"),
    ("dropout_training", "Dropout", [X4, f32(0.5), np.array(True)], {}, 13, 1, "training_mode"),
    ("pad_reflect", "Pad", [X4, i64(0, 0, 1, 1, 0, 0, 1, 1)], {"mode": "reflect"}, 13, 1, "reflect"),
    ("reshape_bad", "Reshape", [X4, i64(7, -1)], {}, 13, 1, "cannot reshape"),
    ("reshape_dynamic", "Reshape", [X4, (4,)], {}, 13, 1, "constant"),
    ("batchnorm_training", "BatchNormalization", [X4, w(4), w(4), w(4), w(4)], {"training_mode": 1}, 15, 1,
     "training_mode"),
    ("conv_kernel_mismatch", "Conv", [X4, w(2, 4, 3, 3)], {"kernel_shape": [2, 2]}, 13, 1, "kernel_shape"),
    ("conv_group_mismatch", "Conv", [X4, w(6, 4, 3, 3)], {"group": 2}, 13, 1, "group"),
    ("conv_3d", "Conv", [(1, 2, 4, 4, 4), w(2, 2, 3, 3, 3)], {}, 13, 1, "2-D"),
    ("pool_no_kernel", "AveragePool", [X4], {}, 13, 1, "kernel_shape"),
    ("concat_mismatch", "Concat", [X4, (2, 3, 8, 9)], {"axis": 1}, 13, 1, "differ"),
    ("transpose_perm", "Transpose", [X4], {"perm": [0, 1, 1, 2]}, 13, 1, "permutation"),
    ("squeeze_non_one", "Squeeze", [X4, i64(1)], {}, 13, 1, "squeeze"),
    ("add_shapes", "Add", [(2, 3), (2, 4)], {}, 13, 1, "broadcast"),
    ("resize_linear_fraction", "Resize", [X4, "", f32([1, 1, 1.5, 2])], {"mode": "linear"}, 13, 1,
     "axis 2: 1.5"),
    ("resize_cubic", "Resize", [X4, "", f32([1, 1, 2, 2])], {"mode": "cubic"}, 13, 1, "mode = 'cubic'"),
    ("resize_fraction", "Resize", [X4, "", f32([1, 1, 1.5, 2])], {"mode": "nearest"}, 13, 1,
     "scales = [1, 1, 1.5, 2]"),
    ("resize_channels", "Resize", [X4, "", f32([1, 2, 2, 2])], {"mode": "nearest"}, 13, 1, "spatial"),
    ("resize_not_repeat", "Resize", [X4, "", f32([1, 1, 3, 3])],
     {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}, 13, 1,
     "coordinate_transformation_mode = 'asymmetric'"),
    ("slice_zero_step", "Slice", [X4, i64(0), i64(2), i64(1), i64(0)], {}, 13, 1, "steps"),
    ("split_bad_sizes", "Split", [X4, i64(1, 2)], {"axis": 1}, 13, 2, "split"),
    ("conv_transpose_crop", "ConvTranspose", [X4, w(4, 3, 2, 2)], {"strides": [2, 2], "pads": [2, 0, 0, 0]}, 13, 1,
     "pads = [2, 0, 0, 0]"),
    ("conv_transpose_outpad", "ConvTranspose", [X4, w(4, 3, 2, 2)], {"strides": [2, 2], "output_padding": [2, 0]},
     13, 1, "output_padding = [2, 0]"),
    ("conv_transpose_same_bigger", "ConvTranspose", [X4, w(4, 3, 2, 2)], {"strides": [4, 4], "auto_pad": "SAME_UPPER"},
     13, 1, "auto_pad = 'SAME_UPPER'"),
    ("depth_to_space_block", "DepthToSpace", [(1, 6, 2, 2)], {"blocksize": 2}, 13, 1, "attribute blocksize = 2"),
    ("conv_transpose_3d", "ConvTranspose", [(1, 4, 3, 3, 3), w(4, 2, 2, 2, 2)], {}, 13, 1, "2-D"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_op_refuses(case, tmp_path):
    _, op_type, inputs, attrs, opset, outputs, words = case
    model = node_model(op_type, inputs, attrs, opset, outputs)
    path = save(model, tmp_path / "m.onnx")
    with pytest.raises(BadInputError) as e:
        load_model(path)
    msg = str(e.value)
    assert words in msg and "\n" not in msg
    if "ONNX checker" not in msg:
        assert f"'{op_type.lower()}_node'" in msg and op_type in msg


@pytest.mark.parametrize("case", [
    ("Conv", [X4, w(6, 2, 3, 3), w(6)], {"group": 2, "strides": [2, 2]}, 2 * 6 * 4 * 4 * 2 * 3 * 3, 6 * 2 * 9 + 6),
    ("Conv", [X4, w(4, 1, 3, 3)], {"group": 4, "pads": [1, 1, 1, 1]}, 2 * 4 * 9 * 9 * 9, 36),
    ("Gemm", [(3, 8), w(5, 8), w(5)], {"transB": 1}, 3 * 8 * 5, 45),
    ("MatMul", [(1, 7, 8), w(8, 5)], {}, 7 * 8 * 5, 40),
    ("Relu", [X4], {}, 0, 0),
    ("Reshape", [X4, i64(0, -1)], {}, 0, 0),
    ("Clip", [X4, f32(0.0), f32(6.0)], {}, 0, 0),
    ("Mul", [X4, w(4, 1, 1)], {}, 0, 4),
    # useful MACs: every input pixel times every tap (the lowered Conv does 4x as many)
    ("ConvTranspose", [X4, w(4, 3, 2, 2), w(3)], {"strides": [2, 2]}, 2 * 4 * 9 * 9 * 3 * 2 * 2, 48 + 3),
], ids=lambda c: c[0])
def test_macs_and_params(case, tmp_path):
    op_type, inputs, attrs, macs, params = case
    graph = load_model(save(node_model(op_type, inputs, attrs), tmp_path / "m.onnx"))
    node = graph.nodes[0]
    assert get_op(node.op).macs(node, graph) == macs
    assert get_op(node.op).params(node, graph) == params


LUT_NEW = ["elu", "selu", "celu", "gelu", "gelu_tanh", "softplus", "softsign", "mish", "thresholded_relu"]


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in LUT_NEW], ids=LUT_NEW)
def test_lut_activation_int8(case, tmp_path):
    """The table activations quantise to the ``lut`` kernel: y = lut[x + 128] exactly, and
    within one output step of the float op on the dequantised input."""
    from bbgrap_hls.quant import quantize, run_int8
    from bbgrap_hls.quant.arith import apply_lut, dequantize
    from bbgrap_hls.quant.arith import quantize as q8
    from bbgrap_hls.quant.build import category

    _, op_type, inputs, attrs, opset = case
    model = node_model(op_type, inputs, attrs, opset)
    graph = load_model(save(model, tmp_path / "m.onnx"))
    x = _feeds(model)[graph.inputs[0]]
    gq = quantize(graph, {graph.inputs[0]: np.stack([x, -x])})
    (node,) = gq.nodes
    assert category(node.op) == "lut"
    sx, zx = (gq.tensors[graph.inputs[0]].quant.scale, gq.tensors[graph.inputs[0]].quant.zp)
    sy, zy = (gq.tensors[graph.outputs[0]].quant.scale, gq.tensors[graph.outputs[0]].quant.zp)
    xq = q8(x, sx, zx)
    yq = run_int8(gq, {graph.inputs[0]: xq})[graph.outputs[0]]
    np.testing.assert_array_equal(yq, apply_lut(xq, node.attrs["q"]["lut"]))
    want = run_float(graph, {graph.inputs[0]: dequantize(xq, sx, zx)})[graph.outputs[0]]
    # half a step of rounding; up to one step at the range's ends, which the rounded zero
    # point trims (the calibrated extremes may clamp)
    assert np.max(np.abs(dequantize(yq, sy, zy) - want)) <= sy + 1e-6
