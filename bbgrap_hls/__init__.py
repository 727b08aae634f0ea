"""bbgrap-hls: ONNX networks to multicore FPGA designs, verified in open-source simulation."""

__version__ = "0.1.0"
