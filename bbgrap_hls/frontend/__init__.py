"""ONNX frontend: model file -> `Graph` with static shapes and folded constants."""

from bbgrap_hls.frontend.onnx_loader import load_model, parse_input_shapes

__all__ = ["load_model", "parse_input_shapes"]
