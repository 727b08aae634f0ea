"""int8 quantisation and the bit-exact integer reference (docs/numerics.md).

``quantize(graph, calib=None, *, observer="minmax", seed=0) -> Graph`` returns a NEW int8
graph (the input is not changed); ``run_int8(graph, feeds)`` runs it. The int8 graph:

Tensors
    Every activation tensor that the fabric produces or reads has
    ``Tensor.quant = QuantParams(scale, zp)`` (per tensor, ``scale`` float32 shape (),
    ``zp`` int32 shape ()) and ``dtype == "int8"``. Outputs of host ops (``node.host``,
    e.g. a final Softmax) stay float. Constants keep their float values; a node's integer
    constants are in its ``attrs["q"]``.

Nodes
    A Relu/Relu6 that is the only reader of a Conv/Dense/ChannelAffine/Add/Sub output is
    removed; its producer gets ``attrs["act"] = "Relu" | "Relu6"`` and writes the
    activation's output tensor. Every fabric node has ``attrs["q"]``, a dict of ints and
    numpy integer arrays, by kernel family (`build.category`):

    - ``mac`` (Conv, Dense): ``w`` int8 (Conv OIHW, Dense (Co, C)), symmetric per output
      channel; ``w_scale`` float32 (Co,);
      ``bias`` int64 (Co,) holding int32 values ``round(b / (s_x·s_w)) - zp_in·Σw``;
      ``mult`` int64 (Co,) in [2^23, 2^24); ``shift`` int64 (Co,) in [1, 62]; ``zp_in``,
      ``zp_out``, ``lo``, ``hi`` ints (``lo``/``hi``: clamp, with a fused Relu/Relu6).
      y = clamp(zp_out + ((acc·mult + 2^(shift-1)) >> shift), lo, hi), acc = bias + Σ x·w
      (Conv pads with ``zp_in``).
    - ``affine`` (ChannelAffine ``a[c]·x + b[c]``): ``mult`` int64 (C,) SIGNED (|mult| < 2^24),
      ``shift`` int64 (C,), ``bias`` int64 (C,) at the product's scale, ``zp_in``, ``zp_out``,
      ``lo``, ``hi``: y = clamp(zp_out + (((x-zp_in)·mult + bias + 2^(shift-1)) >> shift), lo, hi).
    - ``lut`` (Relu, Relu6, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu, ... not
      fused): ``lut`` int8 (256,) indexed by ``x + 128``; ``zp_in``, ``zp_out``.
    - ``add`` (Add, Sub of two tensors): ``mult_a``, ``mult_b`` (negative for Sub), one
      ``shift``, ``zp_a``, ``zp_b``, ``zp_out``, ``lo``, ``hi``, ``consts``:
      y = clamp(zp_out + (((a-zp_a)·mult_a + (b-zp_b)·mult_b + 2^(shift-1)) >> shift), lo, hi).
    - ``mul`` (Mul): ``mult``, ``shift``, ``zp_a``, ``zp_b``, ``zp_out``, ``lo``, ``hi``,
      ``consts``: acc = (a-zp_a)·(b-zp_b), requantised once.
      ``consts`` ({input index: int8 array}) holds a constant operand quantised per tensor.
    - ``avgpool`` (AveragePool): ``mult``, ``shift`` int64 (kh·kw,), entry n-1 for a window
      of n counted elements; ``zp_in``, ``zp_out``: acc = Σ (x - zp_in).
    - ``gap`` (GlobalAveragePool): ``mult``, ``shift`` ints, ``count`` = H·W, ``zp_in``,
      ``zp_out``.
    - ``lrn`` (LRN): ``table`` int64 (code → factor word < 2^16), ``shift`` F, ``mbits`` M,
      ``before``, ``after`` (the window), ``zp_in``, ``zp_out`` (`bbgrap_hls.ops.lrn`):
      y = clamp(zp_out + ((d·table[code(S)] + 2^(F-1)) >> F)), d = x - zp_in, S = Σ_window d².
    - ``move`` (MaxPool, Concat, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Pad,
      Identity, Dropout): ``{}``, or ``pad_value`` (int) for Pad. Inputs and output share one
      scale: the quantiser makes every such group one scale (Concat: the union of its
      inputs' ranges; producers of Concat inputs requantise straight onto it).

QDQ models (QuantizeLinear/DequantizeLinear pairs) keep their scales: see `qdq`.
"""

from bbgrap_hls.quant.arith import (
    build_lut,
    dequantize,
    quantize_multiplier,
    requantize,
)
from bbgrap_hls.quant.calib import (
    DEFAULT_OBSERVER,
    OBSERVERS,
    load_calibration,
    synthetic_calibration,
)
from bbgrap_hls.quant.execute import compare, dequantize_outputs, quantize_inputs, run_int8
from bbgrap_hls.quant.qdq import check_qdq_model, is_qdq
from bbgrap_hls.quant.quantizer import quantize

__all__ = [
    "DEFAULT_OBSERVER", "OBSERVERS", "build_lut", "check_qdq_model", "compare", "dequantize",
    "dequantize_outputs", "is_qdq", "load_calibration", "quantize", "quantize_inputs",
    "quantize_multiplier", "requantize", "run_int8", "synthetic_calibration",
]
