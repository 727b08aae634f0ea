"""A generated design's data and its cores' ports: `Design`, `CoreDesign`, `Port`, the
arguments of a core's top function (`weight_ports`, `core_ports`) and the bytes of an
activation buffer (`mem_bytes`).

`bbgrap_hls.codegen.design.build_design` fills these in; emit.py, host.py, vitis.py and the
RTL twin (rtl.py, rtl_kernel_spec.py, vitis_rtl.py) read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bbgrap_hls.codegen.layers import Layer
from bbgrap_hls.codegen.weights import DDR_BEAT, ddr_image_bytes
from bbgrap_hls.model.stage import stage_beat_bytes, stage_region_bytes


@dataclass
class Port:
    """A port of a core's top function (``kind``: mem_in, mem_out, axis_in, axis_out; the
    weight ports of `weight_ports`: mem_w_ddr, mem_stage_w, mem_stage_r, mem_w, load)."""

    name: str
    kind: str
    lanes: int
    elems: int
    tensor: str
    link: str = ""  # design-level name of the buffer / link it attaches to


@dataclass
class DdrFifo:
    """A FIFO the plan put in board memory (a ``ddr_fifo`` channel; hw/hls/ddr_fifo.h): the
    call ``bb::ddr_fifo<F_<ident>>`` between a short stream from the producer's side and the
    reader's input, over a ring of ``regions`` regions of the core's board-memory image
    from byte ``offset`` (`bbgrap_hls.codegen.design.place_fifos`), a frame in ``chunks`` of
    them, written through the port ``fddr_w_<ident>`` and read through ``fddr_r_<ident>``.
    ``ident`` is the reading layer's input, ``<layer>_in<k>``."""

    ident: str
    lanes: int  # int8 lanes a beat (F::LANES)
    beats: int  # beats a region (F::BEATS): a frame's beats over ``chunks``
    regions: int  # the plan's ``regions`` (F::REGIONS)
    note: str  # the plan channel, for comments (model text through names.comment)
    offset: int = -1  # F::OFF, bytes; set by design.place_fifos
    chunks: int = 1  # the plan's ``chunks``, regions a frame (F::CHUNKS)

    @property
    def region(self) -> int:
        """Bytes of one region (F::REGION): as a DDR frame stage's, 4 KB multiples."""
        return stage_region_bytes(self.beats, self.lanes)

    @property
    def scratch(self) -> int:
        """Bytes of the ring (``regions`` regions)."""
        return self.regions * self.region

    def struct(self) -> str:
        """The kernel's parameter struct ``F_<ident>`` (core<k>.cpp)."""
        per = "a frame a region" if self.chunks == 1 else f"a frame in {self.chunks}"
        return (f"// FIFO in board memory ({self.note}): {self.regions} regions of {self.region} bytes ({per}) from "
                f"byte {self.offset} of the core's image\n"
                f"struct F_{self.ident} {{ static constexpr int LANES = {self.lanes}, REGIONS = {self.regions}, "
                f"CHUNKS = {self.chunks}; "
                f"static constexpr long BEATS = {self.beats}, OFF = {self.offset}, REGION = {self.region}; }};\n")


@dataclass
class CoreDesign:
    id: int
    name: str
    layers: list[Layer] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    streams: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (lanes, depth)
    ports: list[Port] = field(default_factory=list)
    consts: list[str] = field(default_factory=list)
    fifo_impl: dict[str, str] = field(default_factory=dict)  # FIFOs the plan put in URAM or LUTRAM
    #: elements per frame of each local stream (its beats: elems / lanes), which the threaded
    #: csim's dataflow rule check compares with the writes and reads it counts
    elems: dict[str, int] = field(default_factory=dict)
    #: a layer's kernel call (its text) -> the layer's ident: the region names the layer after
    #: the call (``// layer<n>``), so that tools can tell its processes (codegen/schedule.py)
    call_layer: dict[str, str] = field(default_factory=dict)
    #: the FIFOs the plan put in this core's board memory (``ddr_fifo`` channels)
    ddr_fifos: list[DdrFifo] = field(default_factory=list)


@dataclass
class Design:
    cores: list[CoreDesign]
    order: list[int]  # core ids in an order where producers come first
    inputs: list[tuple[str, str, int]]  # (tensor, design name, elems per frame)
    outputs: list[tuple[str, str, int]]
    buffers: dict[str, int]  # buffer name -> elems per frame
    links: dict[str, tuple[int, int, int, str, str]]  # name -> (lanes, src core, dst core, src port, dst port)
    frames: int
    alias: dict[str, str] = field(default_factory=dict)  # layout alias -> tensor that streams


def mem_bytes(elems: int, frames: int) -> int:
    """Bytes of an activation buffer (a graph input or output, an off-chip buffer) of
    ``frames`` frames of ``elems`` int8 elements: the frames back to back, NHWC, padded to
    whole ``DDR_BEAT``-byte words at the end. bb::mem_to_stream and bb::stream_to_mem move
    them through 512-bit m_axi ports a word at a time (hw/hls/streams.h, ``bb::mem_bytes``)."""
    return -(-elems * frames // DDR_BEAT) * DDR_BEAT


#: Kinds of the ports that all get the core's board-memory image (`weight_ports`).
DDR_IMAGE_KINDS = ("mem_w_ddr", "mem_stage_w", "mem_stage_r")


def weight_ports(core: CoreDesign) -> list[Port]:
    """The weight arguments of a core (codegen/weights.py): off-chip, then URAM ones.

    - One ``wddr_<layer>`` per layer whose weights stay in board memory (kind
      ``mem_w_ddr``, m_axi of ``DDR_BEAT``-byte beats, all in the core's bundle
      ``gmem_wddr``; ``elems`` = bytes of the core's off-chip image, ``link`` =
      ``wddr_<core>``): every one is given the same buffer, the core's image, and reads its
      own part (a DATAFLOW region allows one reading process per argument, hence one
      argument per layer rather than one per core).
    - Per layer behind a DDR frame stage (``Layer.in_stage``), after those: ``sddr_w_<layer>``
      (kind ``mem_stage_w``, written by the stage's writer) and ``sddr_r_<layer>`` (kind
      ``mem_stage_r``, read by its reader), m_axi of ``stage_beat_bytes(simd)``-byte words
      (``lanes``), each in a bundle of its own, given the same buffer as the ``wddr`` ports
      (same ``elems`` and ``link``): the layer's scratch area lies in that image.
    - Per FIFO in board memory (`DdrFifo`), after those: ``fddr_w_<fifo>`` and
      ``fddr_r_<fifo>``, of the same kinds, word sizes (``stage_beat_bytes(lanes)``), buffer
      and bundles of their own: a FIFO's ring is scratch of the image as a stage's is, so the
      host, the link config and the testbench treat both alike.
    - ``wts`` (kind ``mem_w``, m_axi, ``elems`` = bytes of the URAM weight image) and
      ``load_weights`` (kind ``load``, an s_axilite scalar: non-zero fills the URAM
      memories from ``wts`` before the call's frames), on a core with URAM weights.

    Not in ``core.ports``: the RTL twin keeps its weights in ROMs and has no such ports.
    """
    ddr = [lay for lay in core.layers if lay.wmem is not None and lay.wmem.ddr]
    size = ddr_image_bytes(core.layers, core.ddr_fifos)
    out = [Port(f"wddr_{lay.ident}", "mem_w_ddr", DDR_BEAT, size, "", f"wddr_{core.name}") for lay in ddr]
    for lay in core.layers:
        if lay.in_stage:
            sb = stage_beat_bytes(lay.in_lanes[0])
            out += [Port(f"sddr_w_{lay.ident}", "mem_stage_w", sb, size, "", f"wddr_{core.name}"),
                    Port(f"sddr_r_{lay.ident}", "mem_stage_r", sb, size, "", f"wddr_{core.name}")]
    for f in core.ddr_fifos:
        sb = stage_beat_bytes(f.lanes)
        out += [Port(f"fddr_w_{f.ident}", "mem_stage_w", sb, size, "", f"wddr_{core.name}"),
                Port(f"fddr_r_{f.ident}", "mem_stage_r", sb, size, "", f"wddr_{core.name}")]
    n = sum(lay.wmem.nbytes() for lay in core.layers if lay.wmem is not None and lay.wmem.uram)
    if n:
        out += [Port("wts", "mem_w", 1, n, "", f"wts_{core.name}"), Port("load_weights", "load", 0, 0, "", "")]
    return out


def core_ports(core: CoreDesign) -> list[Port]:
    """Arguments of a core's top function before ``frames``: its data ports, then `weight_ports`."""
    return core.ports + weight_ports(core)
