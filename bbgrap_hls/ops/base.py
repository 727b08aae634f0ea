"""The operator interface and its registry.

Each operator kind lives in one file of this package and is the single home of its
semantics: ONNX attribute parsing, shape inference, float reference, int8 reference,
MAC/parameter counts, analytic cost and the names of its HLS kernel and RTL module.
Stages look an op up with `get_op(node.op)` and never switch on op names themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from bbgrap_hls.errors import BadInputError

if TYPE_CHECKING:
    import onnx

    from bbgrap_hls.ir import Graph, Node

Shape = tuple[int, ...]


class Op:
    """Base class of an operator kind.

    Class attributes:
        kind: registry key, the value of ``Node.op`` (e.g. ``"Conv"``, ``"Dense"``).
        onnx_types: ONNX ``op_type``s that the frontend turns into this kind.
        host_only: True when the fabric never runs it (e.g. Softmax): always a host op.
        hls_kernel: name of the HLS kernel template in ``hw/hls`` (None: no kernel).
        rtl_module: name of the SystemVerilog module in ``hw/rtl`` (None: no module).
    """

    kind: ClassVar[str] = ""
    onnx_types: ClassVar[tuple[str, ...]] = ()
    host_only: ClassVar[bool] = False
    hls_kernel: ClassVar[str | None] = None
    rtl_module: ClassVar[str | None] = None

    # -- frontend ----------------------------------------------------------------
    def parse(self, onnx_node: onnx.NodeProto, attrs: dict[str, Any], graph: Graph) -> dict[str, Any]:
        """Validate ONNX attributes and fill defaults; returns ``Node.attrs``.

        Args:
            onnx_node: the ONNX node (for its name in messages).
            attrs: its attributes as Python values (``onnx.helper.get_attribute_value``).
            graph: the graph built so far (input shapes and constants are known).
        """
        return dict(attrs)

    def infer(self, node: Node, graph: Graph) -> list[Shape]:
        """Output shapes from the input shapes in ``graph``."""
        raise NotImplementedError(f"{self.kind}: shape inference")

    # -- references ----------------------------------------------------------------
    def run(self, node: Node, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Float reference: numpy arrays in (constants included, ONNX order), out."""
        raise NotImplementedError(f"{self.kind}: float reference")

    def run_int8(self, node: Node, inputs: list[np.ndarray], graph: Graph) -> list[np.ndarray]:
        """Integer reference on quantised tensors (see docs/numerics.md)."""
        raise NotImplementedError(f"{self.kind}: int8 reference")

    # -- counts ------------------------------------------------------------------
    def macs(self, node: Node, graph: Graph) -> int:
        """Multiply-accumulates per frame (0 for ops that do no MACs)."""
        return 0

    def params(self, node: Node, graph: Graph) -> int:
        """Number of constant parameters (weights, biases) the node holds."""
        return sum(graph.tensors[i].size for i in node.inputs if i and graph.tensors[i].is_const)

    # -- helpers -------------------------------------------------------------------
    def fail(self, node: Node | Any, what: str) -> BadInputError:
        """A BadInputError that names the node and op."""
        return BadInputError(f"node '{node.name}' ({self.kind}): {what}")


REGISTRY: dict[str, Op] = {}
ONNX_TYPES: dict[str, Op] = {}


def register(cls: type[Op]) -> type[Op]:
    """Class decorator: add an op kind to the registry."""
    op = cls()
    if op.kind in REGISTRY:
        raise RuntimeError(f"op kind {op.kind} registered twice")
    REGISTRY[op.kind] = op
    for t in cls.onnx_types:
        if t in ONNX_TYPES:
            raise RuntimeError(f"ONNX type {t} claimed by {ONNX_TYPES[t].kind} and {op.kind}")
        ONNX_TYPES[t] = op
    return cls


def get_op(kind: str) -> Op:
    """The op of a registry key; KeyError is a bug (the frontend refuses unknown ops)."""
    return REGISTRY[kind]
