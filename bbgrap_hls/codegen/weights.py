"""Weight memories of the HLS design: their C++ shape, storage pragmas and URAM images.

A layer's weights are ``banks`` banks of ``depth`` words of ``lanes`` int8, all read at
one address per cycle (``fold.fold_mvu``: ``pe`` banks of ``simd`` lanes;
``fold.fold_dw``: ``simd`` banks of one lane). The cost model (``model/blocks.py``,
``_weights``) counts them as ONE memory of ``depth`` words of ``banks·lanes·8`` bits (the
banks side by side in a word, as the RTL twin declares it) in BRAM, LUTRAM or URAM; the
generated C++ declares exactly that memory, ``bb::Word<banks·lanes> layer<n>_w[depth]``,
AGGREGATEd so that one struct is one memory word. Where the plan put it:

- ``bram`` / ``lut`` (or no placement): a ROM in the layer header initialised from the
  integer reference's weights, bound ``rom_2p`` to ``bram`` or ``lutram``.
- ``uram``: UltraRAM on UltraScale+ has no bitstream initialisation, so the memory is a
  RAM in the core top bound ``ram_1p`` to ``uram``, filled through the core's ``wts``
  m_axi port when its ``load_weights`` argument is non-zero. Gen writes the bytes as
  ``hls/weights_core<k>.bin`` (`image`): each URAM memory's words in layer order, word
  ``a`` at ``offset + a·banks·lanes``. Where the cost model counts the memory as
  half-words read through both URAM ports (``model/memory.py``, `uram_halves`: wide,
  shallow memories), it is ``bb::Half<banks·lanes/2> layer<n>_w[2·depth]`` bound
  ``ram_t2p``: the same bytes, word ``a``'s halves at ``2a`` and ``2a+1``.

- ``ddr`` (the plan keeps the weights in the core's board memory, read once per frame by
  ``bb::conv2d_offchip``): no on-chip memory; gen writes ``hls/ddr_weights_core<k>.bin``
  (`ddr_image`): the core's off-chip layers in layer order, each as its words back to back
  (word ``a`` at ``offset + a·banks·lanes``), each part padded to whole ``DDR_BEAT``-byte
  beats so that every layer starts on a beat (the kernel's ``OFF``, in beats). A layer
  behind a DDR frame stage (plan ``in_stage``) adds its scratch area after all the weights:
  ``STAGE_REGIONS`` regions of ``Layer.stage_region`` bytes from ``Layer.stage_offset``
  (4 KB aligned, zeros in the file; design.py places them, `ddr_image_bytes` is the total).
  After those, each FIFO the plan put in board memory (``ports.DdrFifo``, a ``ddr_fifo``
  channel) adds its ring: ``regions`` regions of ``DdrFifo.region`` bytes from its 4 KB
  aligned ``offset``, zeros too.

The kernels also accept the per-bank layout ``const bb::Word<lanes> w[banks][depth]``
(``hw/hls/bb_weights.h``), for a cost model that counts the banks as separate memories.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bbgrap_hls.codegen.carray import c_words
from bbgrap_hls.codegen.fold import wide_words
from bbgrap_hls.model.memory import uram_halves
from bbgrap_hls.model.stage import STAGE_REGIONS

#: The plan's ``weights`` placement -> Vitis HLS ``bind_storage`` impl.
STORAGE_IMPL = {"bram": "bram", "uram": "uram", "lut": "lutram"}

#: Bytes per beat of an off-chip weight port (``bb::DDR_BEAT``, hw/hls/conv2d_offchip.h).
DDR_BEAT = 64


@dataclass
class WeightMem:
    """A layer's weight memory: ``data`` is ``(banks, depth, lanes)`` int8.

    ``storage`` is the BIND_STORAGE impl (``bram``, ``lutram``, ``uram``) or None (the
    tool's choice).
    """

    data: np.ndarray
    storage: str | None = None

    @property
    def banks(self) -> int:
        return int(self.data.shape[0])

    @property
    def depth(self) -> int:
        return int(self.data.shape[1])

    @property
    def lanes(self) -> int:
        return int(self.data.shape[2])

    @property
    def uram(self) -> bool:
        return self.storage == "uram"

    @property
    def ddr(self) -> bool:
        """Kept in the core's board memory (plan ``weights == "ddr"``), not on chip."""
        return self.storage == "ddr"

    @property
    def halves(self) -> bool:
        """A URAM memory the cost model counts as half-words read through both ports."""
        return self.uram and uram_halves(8 * self.banks * self.lanes, self.depth)

    def ctype(self) -> tuple[str, int]:
        """The C++ word type and the array length of the memory (`bb_weights.h`)."""
        n = self.banks * self.lanes
        return (f"bb::Half<{n // 2}>", 2 * self.depth) if self.halves else (f"bb::Word<{n}>", self.depth)

    def nbytes(self) -> int:
        return int(self.data.size)

    def words(self) -> np.ndarray:
        """The memory's contents: ``(depth, banks·lanes)`` int8, bank ``b`` in lanes
        ``[b·lanes, (b+1)·lanes)`` of every word."""
        return wide_words(self.data.astype(np.int8))


@dataclass(frozen=True)
class ImagePart:
    """One URAM memory in a core's weight image."""

    ident: str  # the layer (array ``<ident>_w``)
    offset: int  # first byte in the image
    lanes: int  # bytes per word (banks·lanes)
    depth: int  # words


def rom_array(ident: str, wm: WeightMem) -> str:
    """The ROM definition of a non-URAM weight memory (layer header)."""
    return c_words(f"{ident}_w", wm.words())


def uram_decl(ident: str, wm: WeightMem) -> str:
    """The static RAM of a URAM weight memory (inside the core top)."""
    word, n = wm.ctype()
    return f"static {word} {ident}_w[{n}];"


def pragmas(ident: str, wm: WeightMem) -> list[str]:
    """HLS pragmas (inside ``BB_HLS(...)``) that give the memory the cost model's shape."""
    v = f"{ident}_w"
    out = [f"AGGREGATE variable = {v} compact = bit"]  # one struct = one memory word
    if wm.uram:
        # A RAM: URAM cannot be a ROM on UltraScale+; one port (load, then read) suffices,
        # two (both read each cycle) for half-words.
        return out + [f"BIND_STORAGE variable = {v} type = {'ram_t2p' if wm.halves else 'ram_1p'} impl = uram"]
    if wm.storage is not None:
        out.append(f"BIND_STORAGE variable = {v} type = rom_2p impl = {wm.storage}")
    return out


def image(layers) -> tuple[bytes, list[ImagePart]]:
    """The weight image of a core's URAM memories (``layers``: its `Layer` list)."""
    parts, chunks, off = [], [], 0
    for lay in layers:
        wm = lay.wmem
        if wm is None or not wm.uram:
            continue
        words = wm.words()
        parts.append(ImagePart(lay.ident, off, int(words.shape[1]), int(words.shape[0])))
        chunks.append(words.tobytes())
        off += words.size
    return b"".join(chunks), parts


def image_file(core_name: str) -> str:
    """File name (in ``hls/``) of a core's weight image."""
    return f"weights_{core_name}.bin"


def ddr_beats(wm: WeightMem) -> int:
    """Beats of ``DDR_BEAT`` bytes that an off-chip weight memory takes in its core's image."""
    return -(-wm.nbytes() // DDR_BEAT)


def ddr_weight_bytes(layers) -> int:
    """Bytes of the weights in a core's off-chip image (``layers``: its `Layer` list)."""
    return sum(ddr_beats(lay.wmem) for lay in layers if lay.wmem is not None and lay.wmem.ddr) * DDR_BEAT


def ddr_image_bytes(layers, fifos=()) -> int:
    """Bytes of a core's off-chip image: its weights, then the scratch areas of its DDR frame
    stages (where design.py put them: ``stage_offset``, ``STAGE_REGIONS·stage_region`` bytes),
    then the rings of its FIFOs in board memory (``fifos``: ``ports.DdrFifo``, from ``offset``,
    ``scratch`` bytes)."""
    ends = [lay.stage_offset + STAGE_REGIONS * lay.stage_region for lay in layers if lay.in_stage]
    ends += [f.offset + f.scratch for f in fifos]
    return max([ddr_weight_bytes(layers), *ends])


def ddr_image(layers, fifos=()) -> tuple[bytes, list[ImagePart]]:
    """The off-chip weight image of a core (``layers``: its `Layer` list; ``fifos``: its
    ``ports.DdrFifo`` list): each ``ddr`` memory's words in layer order, padded with zeros to
    whole beats, then zeros up to `ddr_image_bytes` (the stages' scratch areas and the FIFOs'
    rings); ``offset`` in bytes."""
    parts, chunks, off = [], [], 0
    for lay in layers:
        wm = lay.wmem
        if wm is None or not wm.ddr:
            continue
        words = wm.words()
        parts.append(ImagePart(lay.ident, off, int(words.shape[1]), int(words.shape[0])))
        size = ddr_beats(wm) * DDR_BEAT
        chunks.append(words.tobytes() + bytes(size - words.size))
        off += size
    chunks.append(bytes(ddr_image_bytes(layers, fifos) - off))  # the stages' scratch areas, the FIFOs' rings
    return b"".join(chunks), parts


def ddr_image_file(core_name: str) -> str:
    """File name (in ``hls/``) of a core's off-chip weight image."""
    return f"ddr_weights_{core_name}.bin"
