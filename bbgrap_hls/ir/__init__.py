"""Graph IR: typed dataclasses with static shapes, NCHW as in ONNX."""

from bbgrap_hls.ir.graph import Graph, Node, QuantParams, Tensor

__all__ = ["Graph", "Node", "QuantParams", "Tensor"]
