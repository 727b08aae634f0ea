"""ONNX frontend: model file -> `Graph` with static shapes and folded constants."""

from bbgrap_hls.frontend.onnx_loader import load_model, load_partial, parse_input_shapes, unsupported_message

__all__ = ["load_model", "load_partial", "parse_input_shapes", "unsupported_message"]
