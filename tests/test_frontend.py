"""The ONNX frontend: test models and the light model zoo against onnxruntime, constant
folding of exporter shape arithmetic, several inputs/outputs, --input-shape, bad files.

Float tolerance: rtol 1e-4, atol 1e-5 (float32 against float32). The two ImageNet-sized
models (50+ layers, outputs of order 100) use atol 1e-5 · max|y| instead (marked slow).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from bbgrap_hls.errors import BadInputError, UnsupportedError
from bbgrap_hls.frontend import load_model, parse_input_shapes
from bbgrap_hls.ops import get_op
from bbgrap_hls.reference import run_float
from tests import model_builder, models
from tests.conftest import LIGHT_MODELS, LIGHT_ZOO


def _ort(path: str, feeds: dict) -> list[np.ndarray]:
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def total_macs(graph) -> int:
    return sum(get_op(n.op).macs(n, graph) for n in graph.nodes)


# -- tests/models.py against onnxruntime -------------------------------------------------

SMALL = list(models.BLOCKS) + ["resnet8", "ds_cnn", "mobilenet_v1", "mlp_autoencoder"]


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("seed", [0, 1])
def test_model_matches_onnxruntime(name, seed, tmp_path):
    model = models.ALL[name](seed=seed)
    path = models.save(model, tmp_path / f"{name}.onnx")
    feeds = models.random_input(model, seed)
    ours = run_float(load_model(path), feeds)["y"]
    want = _ort(path, feeds)[0]
    assert ours.shape == want.shape
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["lenet", "residual_block", "channel_shuffle", "se_block"])
def test_model_opset9_matches_onnxruntime(name, tmp_path):
    model = models.ALL[name](opset=9)
    path = models.save(model, tmp_path / f"{name}.onnx")
    feeds = models.random_input(model)
    np.testing.assert_allclose(run_float(load_model(path), feeds)["y"], _ort(path, feeds)[0],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_imagenet_model_matches_onnxruntime(name, model_file):
    path = model_file(name)
    feeds = models.random_input(onnx.load(path))
    want = _ort(path, feeds)[0]
    np.testing.assert_allclose(run_float(load_model(path), feeds)["y"], want, rtol=1e-4,
                               atol=1e-5 * float(np.abs(want).max()))


# Published totals: ResNet-18 1.81 G multiply-accumulates (torchvision's model table,
# "GFLOPS 1.81"; He et al. 2016 Table 1: 1.8e9), MobileNetV2 1.0/224 300 M (Sandler et al.
# 2018, Table 6: "MAdds 300M"). Conv and dense layers only; within 1%.
@pytest.mark.parametrize(("name", "published"), [("resnet18", 1.81e9), ("mobilenet_v2", 300e6)])
def test_macs_match_published(name, published, model_file):
    macs = total_macs(load_model(model_file(name)))
    assert abs(macs - published) <= 0.01 * published, macs


def test_macs_independent_count(tmp_path):
    """Conv MACs = N·Co·Ho·Wo·(C/g)·kh·kw recomputed from the ONNX file by onnx shape inference."""
    model = onnx.shape_inference.infer_shapes(models.ds_cnn())
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(model.graph.value_info) + list(model.graph.output)}
    inits = {i.name: numpy_helper.to_array(i).shape for i in model.graph.initializer}
    want = 0
    for n in model.graph.node:
        if n.op_type == "Conv":
            want += int(np.prod(shapes[n.output[0]])) * int(np.prod(inits[n.input[1]][1:]))
        elif n.op_type == "Gemm":
            want += int(np.prod(inits[n.input[1]]))
    assert want > 0
    assert total_macs(load_model(models.save(model, tmp_path / "m.onnx"))) == want


# -- constant folding of exporter shape arithmetic ----------------------------------------

def test_channel_shuffle_folds_shape_arithmetic(model_file):
    graph = load_model(model_file("channel_shuffle"))
    assert [n.op for n in graph.nodes] == ["Conv", "Relu", "Reshape", "Transpose", "Reshape", "Conv"]
    r1, t, r2 = graph.nodes[2:5]
    assert graph.shape(r1.outputs[0]) == (1, 3, 4, 8, 8)
    assert t.attrs["perm"] == (0, 2, 1, 3, 4)
    assert graph.shape(r2.outputs[0]) == (1, 12, 8, 8)


def test_torch_flatten_folds_to_reshape(model_file):
    graph = load_model(model_file("lenet"))
    ops = [n.op for n in graph.nodes]
    assert "Shape" not in ops and "Gather" not in ops and ops.count("Reshape") == 1
    r = next(n for n in graph.nodes if n.op == "Reshape")
    assert graph.shape(r.outputs[0]) == (1, 400)


def test_fold_slice_cast_and_constant_of_shape(tmp_path):
    """Shape → Slice → Cast → Mul → Cast → ConstantOfShape as a weight; Constant nodes."""
    b = models.Builder(3)
    x = b.input("x", (1, 4, 6, 6))
    shp = b.node("Shape", [x], None)
    hw = b.node("Slice", [shp, b.const("s", np.array([2], np.int64)), b.const("e", np.array([4], np.int64))], None)
    f = b.node("Cast", [hw], None, to=TensorProto.FLOAT)
    half = b.node("Mul", [f, b.const("h", np.array([0.5], np.float32))], None)
    ints = b.node("Cast", [half], None, to=TensorProto.INT64)  # [3, 3]
    kshape = b.node("Concat", [b.const("co", np.array([2, 4], np.int64)), ints], None, axis=0)
    wt = b.node("ConstantOfShape", [kshape], None,
                value=numpy_helper.from_array(np.array([0.1], np.float32)))
    bias = b.name("bias")
    b.nodes.append(helper.make_node("Constant", [], [bias], name="bias_const",
                                    value=numpy_helper.from_array(np.array([0.5, -0.5], np.float32))))
    y = b.node("Conv", [x, wt, bias], (1, 2, 4, 4), kernel_shape=[3, 3])
    model = models._rename_output(b, y, "folding")
    path = models.save(model, tmp_path / "m.onnx")
    graph = load_model(path)
    assert [n.op for n in graph.nodes] == ["Conv"]
    assert graph.const(graph.nodes[0].inputs[1]).shape == (2, 4, 3, 3)
    feeds = models.random_input(model)
    np.testing.assert_allclose(run_float(graph, feeds)["y"], _ort(path, feeds)[0], rtol=1e-4, atol=1e-5)


# -- several inputs and outputs, --input-shape ---------------------------------------------

def _two_in_two_out(batch="N") -> onnx.ModelProto:
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [batch, 8])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, [batch, 8])
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), "w")
    nodes = [helper.make_node("Add", ["a", "c"], ["s"], name="add"),
             helper.make_node("MatMul", ["s", "w"], ["p"], name="mm"),
             helper.make_node("Relu", ["p"], ["r"], name="relu"),
             helper.make_node("Sigmoid", ["s"], ["q"], name="sig")]
    outs = [helper.make_tensor_value_info("r", TensorProto.FLOAT, [batch, 4]),
            helper.make_tensor_value_info("q", TensorProto.FLOAT, [batch, 8])]
    m = helper.make_model(helper.make_graph(nodes, "two", [a, c], outs, [w]),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_several_inputs_and_outputs_with_input_shape(tmp_path):
    path = models.save(_two_in_two_out(), tmp_path / "m.onnx")
    graph = load_model(path, parse_input_shapes(["a=3x8", "c=3x8"]))
    assert graph.inputs == ["a", "c"] and graph.outputs == ["r", "q"]
    rng = np.random.default_rng(5)
    feeds = {k: rng.standard_normal((3, 8)).astype(np.float32) for k in ("a", "c")}
    ours = run_float(graph, feeds)
    for name, want in zip(["r", "q"], _ort(path, feeds), strict=True):
        np.testing.assert_allclose(ours[name], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("shapes", "words"), [
    ([], "--input-shape a=Nx8"),
    (["a=3x8"], "input 'c' has dynamic"),
    (["a=3x8x1", "c=3x8"], "does not fit"),
    (["a=3x8", "c=3x8", "z=1x2"], "names no model input: z"),
    (["a=3xk"], "expected NAME=DxDx"),
    (["a=0x8"], "positive"),
])
def test_input_shape_errors(shapes, words, tmp_path):
    path = models.save(_two_in_two_out(), tmp_path / "m.onnx")
    with pytest.raises(BadInputError) as e:
        load_model(path, parse_input_shapes(shapes))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_unused_optional_outputs_are_ignored(tmp_path):
    """MaxPool's Indices and Dropout's mask are fine while nobody reads them."""
    m = model_builder.node_model("MaxPool", [(1, 2, 6, 6)], {"kernel_shape": [2, 2], "strides": [2, 2]}, 13,
                          ["y0", "idx"])
    m.graph.output.pop()  # Indices computed but unused
    graph = load_model(models.save(m, tmp_path / "m.onnx"))
    assert [n.outputs for n in graph.nodes] == [["y0"]]


# -- bad files -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["missing", "folder", "empty", "text", "truncated", "zeros"])
def test_bad_files(kind, tmp_path, model_file):
    data = open(model_file("lenet"), "rb").read()
    path = tmp_path / "bad.onnx"
    if kind == "folder":
        path.mkdir()
    elif kind != "missing":
        path.write_bytes({"empty": b"", "text": b"name: not an onnx model\n",
                          "truncated": data[: len(data) // 2], "zeros": bytes(64)}[kind])
    with pytest.raises(BadInputError) as e:
        load_model(path)
    msg = str(e.value)
    assert str(path) in msg and "\n" not in msg
    assert not isinstance(e.value, UnsupportedError)


def test_unsupported_ops_all_named(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Erf", ["x"], ["e1"], name="erf_a"),
             helper.make_node("Relu", ["e1"], ["r"], name="relu"),
             helper.make_node("Erf", ["r"], ["e2"], name="erf_b"),
             helper.make_node("Exp", ["e2"], ["n"], name="exp_a"),
             helper.make_node("Abs", ["n"], ["y"], name="abs_a")]
    m = helper.make_model(helper.make_graph(nodes, "u", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError) as e:
        load_model(models.save(m, tmp_path / "m.onnx"))
    msg = str(e.value)
    assert "Abs (first at node 'abs_a')" in msg and "Erf (first at node 'erf_a')" in msg
    assert "Exp (first at node 'exp_a')" in msg and "erf_b" not in msg and "\n" not in msg


# -- the light model zoo -------------------------------------------------------------------
# Its weights are not real: every large tensor is a ConstantOfShape filled with 0.02 (so all
# output channels of a layer are equal and the final Softmax is uniform); biases and
# batchnorm parameters are real values. The test therefore compares every intermediate
# tensor with onnxruntime, not only the output.

FAST_LIGHT = ["light_squeezenet", "light_shufflenet"]


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_zoo_loads(name):
    graph = load_model(LIGHT_ZOO / f"{name}.onnx")
    assert graph.nodes and all(graph.tensors[o].shape for o in graph.outputs)


def _check_light(name, tmp_path):
    model = onnx.load(str(LIGHT_ZOO / f"{name}.onnx"))
    graph = load_model(LIGHT_ZOO / f"{name}.onnx")
    names = [o for n in graph.nodes for o in n.outputs]
    have = {o.name for o in model.graph.output}
    model.graph.output.extend(helper.make_empty_tensor_value_info(o) for o in names if o not in have)
    for o in model.graph.output:
        o.type.tensor_type.elem_type = TensorProto.FLOAT
    path = models.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(0).standard_normal(graph.shape(graph.inputs[0])).astype(np.float32)
    ours = run_float(graph, {graph.inputs[0]: x}, keep=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = [o.name for o in sess.get_outputs()]
    for o, want in zip(outs, sess.run(None, {graph.inputs[0]: x}), strict=True):
        np.testing.assert_allclose(ours[o], want, rtol=1e-4, atol=1e-5, err_msg=o)


@pytest.mark.parametrize("name", FAST_LIGHT)
def test_light_zoo_matches_onnxruntime(name, tmp_path):
    _check_light(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(LIGHT_MODELS) - set(FAST_LIGHT)))
def test_light_zoo_matches_onnxruntime_slow(name, tmp_path):
    _check_light(name, tmp_path)


def test_light_zoo_unsupported_message(tmp_path):
    """AlexNet with its LRNs and Softmax retyped to ops we lack: one message names each."""
    model = onnx.load(str(LIGHT_ZOO / "light_bvlc_alexnet.onnx"))
    first = {}
    for n in model.graph.node:
        new = {"LRN": "LpNormalization", "Softmax": "Hardmax"}.get(n.op_type)
        if new:
            n.op_type = new
            del n.attribute[:]
            first.setdefault(new, n.name)
    with pytest.raises(UnsupportedError) as e:
        load_model(models.save(model, tmp_path / "m.onnx"))
    for t, node in first.items():
        assert f"{t} (first at node '{node}')" in str(e.value)


@pytest.mark.parametrize("name", list(models.BLOCKS) + ["ds_cnn", "mlp_autoencoder"])
def test_builders_are_seeded(name):
    a, b, c = (models.ALL[name](seed=s).SerializeToString() for s in (4, 4, 5))
    assert a == b and a != c
