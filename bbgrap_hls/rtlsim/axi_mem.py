"""A simulated board memory behind AXI4 read and write ports (cocotb): off-chip weights, DDR frame stages.

`AxiReadMemory` is the memory the cost model assumes (docs/cost-model.md, "Off-chip
weights"; `bbgrap_hls.model.offchip.offchip_mvu`): a burst's first beat ``latency`` cycles
after its address handshake, then one beat every ``beat_bytes / rate`` cycles, bursts in
order, ``arready`` always high. It checks the AXI rules ``hw/rtl/axi_read.sv`` promises
(INCR, full-width beats, at most 256 beats, no 4 KB crossing, inside the image, ``rready``
high). The design testbench (`bbgrap_hls.rtlsim.tb`) puts one on every off-chip weight
port of a generated top; ``sim/test_conv_offchip.py`` has the same model for the module.

Cycle ``c`` is sampled at its falling edge: an address handshake seen there gets its
first beat driven at the falling edge of ``c + latency`` (sampled by the design at the
rising edge that ends that cycle). `serve` steps every memory of a design from one
coroutine, once per cycle (Verilator's value-change callbacks on the ports cannot be
relied on to wake a sleeping model exactly, so the model does not sleep).

`AxiWriteMemory` is the write side (``hw/rtl/ddr_stage.sv``'s scratch area): W beats accepted
one per ``beat_bytes / rate`` cycles as the read side gives them, a burst's write response
``latency`` cycles after its last W beat, ``awready`` always high; it writes into a
``bytearray`` that an `AxiReadMemory` given the same ``bytearray`` reads (one port prefix for
both channels, as the stage's ``m_axi``).

Opt-in modes for a unit whose model assumes them (the engine's element-wise unit, its top;
the defaults are the memory above): ``paced`` spaces each beat ``period`` cycles after the one
before was *taken* (a master that takes a beat late does not catch up on a fixed grid);
``hold`` (read) lets ``rready`` be low, the beat driven again the next cycle; ``stall`` (a
tuple of 0/1, cycle mod its length) drops the address channel's ready on a pattern;
``aw_first`` (write) requires a W beat's address to have been taken. `retime` sets a new
latency and period and restarts the beat clock (a testbench that times layer after layer
from cycle 0).
"""

from __future__ import annotations

from cocotb.triggers import FallingEdge


def _period(beat_bytes: int, rate: float) -> float:
    period = max(1.0, beat_bytes / rate)
    return int(period) if period.is_integer() else period


def _check_burst(where: str, burst: int, size: int, beat: int, addr: int, beats: int, base: int, mem_bytes: int) -> None:
    """The AXI rules both memories check on an address handshake."""
    assert burst == 1, f"{where}: INCR bursts only"
    assert 1 << size == beat, f"{where}: full-width beats"
    assert 1 <= beats <= 256, f"{where}: burst of {beats} beats"
    assert addr % beat == 0, f"{where}: unaligned burst at {addr:#x}"
    assert addr // 4096 == (addr + beats * beat - 1) // 4096, f"{where}: burst at {addr:#x} crosses 4 KB"
    lo = addr - base
    assert 0 <= lo and lo + beats * beat <= mem_bytes, f"{where}: burst at {addr:#x} outside the image"


class _Slave:
    """What both memories keep: the port's signals, the memory and its timing, the requests
    seen on the address channel and the beats moved."""

    def __init__(self, dut, prefix: str, signals: tuple[str, ...], image: bytes | bytearray, base: int,
                 latency: int, rate: float, beat_bytes: int, paced: bool = False):
        assert latency >= 1, "latency >= 1"
        self.prefix, self.base, self.latency = prefix, base, latency
        self.period = _period(beat_bytes, rate)  # cycles per beat
        self.beat = beat_bytes
        self.mem = image if isinstance(image, bytearray) else bytes(image)
        self.requests: list[tuple[int, int, int]] = []  # (cycle, address, beats) seen on the address channel
        self.beats = 0
        self.paced = paced
        self.stall: tuple[int, ...] | None = None  # the address channel's ready pattern (None: always ready)
        self._addr = self._left = 0
        self._nxt = 0.0
        self._s = {n: getattr(dut, f"{prefix}_{n}") for n in signals}

    def retime(self, latency: int, period: float) -> None:
        """A new latency and period, the beat clock restarted at cycle 0."""
        self.latency, self.period, self._nxt = latency, period, 0.0

    def _advance(self, cycle: int) -> None:
        """A beat moved this cycle: the next one address and clock."""
        self._addr, self._left = self._addr + self.beat, self._left - 1
        self._nxt = (cycle if self.paced else self._nxt) + self.period
        self.beats += 1

    def _address_ready(self, cycle: int, ch: str) -> bool:
        """The address channel's ready this cycle (`stall`), driven."""
        ready = self.stall is None or bool(self.stall[cycle % len(self.stall)])
        self._s[f"{ch}ready"].value = int(ready)
        return ready

    def _request(self, cycle: int, ch: str) -> tuple[int, int]:
        """The burst on address channel ``ch`` ("ar" or "aw") this cycle, checked and recorded."""
        s = self._s
        a, n = int(s[f"{ch}addr"].value), int(s[f"{ch}len"].value) + 1
        _check_burst(self.prefix, int(s[f"{ch}burst"].value), int(s[f"{ch}size"].value), self.beat, a, n,
                     self.base, len(self.mem))
        self.requests.append((cycle, a, n))
        return a, n


_SIGNALS = ("araddr", "arlen", "arsize", "arburst", "arvalid", "arready", "rdata", "rresp", "rlast",
            "rvalid", "rready")


class AxiReadMemory(_Slave):
    """An AXI4 read slave with a fixed first-beat latency and a fixed rate (see module doc).

    Args:
        dut: the top (or module) handle.
        prefix: the port's signal prefix (``m_axi`` → ``m_axi_araddr`` ...).
        image: the memory's bytes from address ``base``; a ``bytearray`` is shared (not copied),
            so that an `AxiWriteMemory` on it writes what this memory reads.
        base: address of ``image[0]``.
        latency: cycles from an address handshake to the burst's first beat (>= 1).
        rate: bytes per cycle (a beat every ``beat_bytes / rate`` cycles, at least 1; with a
            fractional period a burst's beat ``k`` comes at ``ceil(k·period)``).
        beat_bytes: bytes of a beat (the port's data width / 8).
    """

    def __init__(self, dut, prefix: str, image: bytes | bytearray, base: int, latency: int, rate: float,
                 beat_bytes: int, paced: bool = False, hold: bool = False):
        super().__init__(dut, prefix, _SIGNALS, image, base, latency, rate, beat_bytes, paced)
        self.hold = hold  # rready may be low: the beat is driven again the next cycle
        self.bursts: list[tuple[int, int, int]] = []  # (first-beat cycle, address, beats)
        self._s["arready"].value = 1
        self._s["rvalid"].value = 0
        self._s["rlast"].value = 0
        self._s["rresp"].value = 0
        self._s["rdata"].value = 0

    def step(self, cycle: int) -> None:
        """Cycle ``cycle`` at its falling edge: take a request, drive this cycle's beat."""
        s = self._s
        if self._address_ready(cycle, "ar") and s["arvalid"].value:  # a handshake
            a, n = self._request(cycle, "ar")
            self.bursts.append((cycle + self.latency, a, n))
        if self._left == 0 and self.bursts and self.bursts[0][0] <= cycle:
            _, self._addr, self._left = self.bursts.pop(0)
            self._nxt = max(self._nxt, float(cycle))
        if self._left and cycle >= self._nxt - 1e-9:
            taken = bool(s["rready"].value)
            assert taken or self.hold, f"{self.prefix}: rready low"
            lo = self._addr - self.base
            s["rdata"].value = int.from_bytes(self.mem[lo:lo + self.beat], "little")
            s["rlast"].value = int(self._left == 1)
            s["rvalid"].value = 1
            if taken:
                self._advance(cycle)
        else:
            s["rvalid"].value = 0


_W_SIGNALS = ("awaddr", "awlen", "awsize", "awburst", "awvalid", "awready", "wdata", "wstrb", "wlast", "wvalid",
              "wready", "bresp", "bvalid", "bready")


class AxiWriteMemory(_Slave):
    """An AXI4 write slave: W beats at a fixed rate, a write response a fixed latency after a
    burst's last beat (see module doc), stepped like `AxiReadMemory`.

    Bursts are taken in order (``awready`` always high); a burst's W beats are accepted from
    the cycle its address is taken, beat ``k`` of a run of bursts at the first cycle ``>=
    start + k·period`` (``period = max(1, beat_bytes / rate)``; a master that is late within a
    burst catches up one beat a cycle). A burst's B is driven ``latency`` cycles after its last
    W beat (one a cycle, in order; ``bready`` must be high then). Checked: the AXI rules of
    `AxiReadMemory` on every AW, ``wlast`` exactly on a burst's last beat, all strobes set.

    Args:
        image: the memory (a ``bytearray`` from address ``base``, written in place).
    """

    def __init__(self, dut, prefix: str, image: bytearray, base: int, latency: int, rate: float, beat_bytes: int,
                 paced: bool = False, aw_first: bool = False):
        assert isinstance(image, bytearray), "a write memory writes into a bytearray"
        super().__init__(dut, prefix, _W_SIGNALS, image, base, latency, rate, beat_bytes, paced)
        self.aw_first = aw_first  # a W beat only after its address was taken
        self.responses: list[int] = []  # cycles of the B handshakes
        self._pending: list[tuple[int, int]] = []  # (address, beats) taken on AW, not yet written
        self._b: list[int] = []  # due cycles of the write responses
        self._s["awready"].value = 1
        self._s["wready"].value = 0
        self._s["bvalid"].value = 0
        self._s["bresp"].value = 0

    def step(self, cycle: int) -> None:
        """Cycle ``cycle`` at its falling edge: take an AW, accept this cycle's W beat, drive a B."""
        s, where = self._s, self.prefix
        if self._address_ready(cycle, "aw") and s["awvalid"].value:
            self._pending.append(self._request(cycle, "aw"))
        if self._left == 0 and self._pending:
            self._addr, self._left = self._pending.pop(0)
            self._nxt = max(self._nxt, float(cycle))
        ready = bool(self._left) and cycle >= self._nxt - 1e-9
        s["wready"].value = int(ready)
        if self.aw_first and s["wvalid"].value:
            assert self._left, f"{where}: a W beat without its address"
        if ready and s["wvalid"].value:
            assert int(s["wstrb"].value) == (1 << self.beat) - 1, f"{where}: partial strobes"
            assert bool(s["wlast"].value) == (self._left == 1), f"{where}: wlast on beat {self._left} before the end"
            lo = self._addr - self.base
            self.mem[lo:lo + self.beat] = int(s["wdata"].value).to_bytes(self.beat, "little")
            self._advance(cycle)
            if self._left == 0:
                self._b.append(cycle + self.latency)
        if self._b and self._b[0] <= cycle:
            assert s["bready"].value, f"{where}: bready low"
            self._b.pop(0)
            s["bvalid"].value = 1
            self.responses.append(cycle)
        else:
            s["bvalid"].value = 0


async def serve(mems: list[AxiReadMemory | AxiWriteMemory], clk, rst) -> None:
    """Step every memory once per cycle (at the falling edge), none while ``rst`` is high."""
    cycle = 0
    while True:
        await FallingEdge(clk)
        if not rst.value:
            for m in mems:
                m.step(cycle)
        cycle += 1
