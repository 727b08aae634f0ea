"""Analytic core model: cycles and resources of every block, link and buffer.

Formulas: docs/cost-model.md. Block behaviour: docs/hardware.md.
"""

from bbgrap_hls.model import resample as _resample  # noqa: F401  (registers its blocks in BLOCKS)
from bbgrap_hls.model.blocks import BLOCKS, OFFCHIP_CAPABLE, URAM_CAPABLE, BlockCost
from bbgrap_hls.model.geometry import Geometry, geometry
from bbgrap_hls.model.kinds import (
    FUSABLE_ACTS,
    MAX_COPIES,
    OP_BLOCKS,
    WEIGHTED,
    block_cost,
    block_kind,
    divisors,
    foldings,
    in_lanes,
    lut_capable,
    lut_requant_capable,
    node_geometry,
    packs,
    pair_modes,
    pairable,
    pixel_copies,
)
from bbgrap_hls.model.links import (
    BufferCost,
    LinkCost,
    buffer_cost,
    fifo_cost,
    fifo_profile,
    link_cost,
    stream_endpoint_lut,
    width_converter_ii,
    width_converter_lut,
)
from bbgrap_hls.model.memory import MemCost, memory, uram_memory
from bbgrap_hls.model.timing import FIFO_DEPTH, RTL_DEPTH, out_profile, window_rows

__all__ = [
    "BLOCKS", "FUSABLE_ACTS", "OP_BLOCKS", "WEIGHTED", "BlockCost", "BufferCost", "Geometry",
    "LinkCost", "MemCost", "block_cost", "block_kind", "buffer_cost", "divisors", "fifo_cost",
    "OFFCHIP_CAPABLE", "URAM_CAPABLE", "foldings", "geometry", "in_lanes", "link_cost", "memory", "node_geometry",
    "stream_endpoint_lut", "uram_memory", "width_converter_lut",
    "FIFO_DEPTH", "RTL_DEPTH", "fifo_profile", "out_profile", "width_converter_ii", "window_rows",
    "MAX_COPIES", "lut_capable", "lut_requant_capable", "packs", "pair_modes", "pairable", "pixel_copies",
]
