"""A simulated board memory behind an AXI4 read port (cocotb), for off-chip weights.

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
"""

from __future__ import annotations

from cocotb.triggers import FallingEdge

_SIGNALS = ("araddr", "arlen", "arsize", "arburst", "arvalid", "arready", "rdata", "rresp", "rlast",
            "rvalid", "rready")


class AxiReadMemory:
    """An AXI4 read slave with a fixed first-beat latency and a fixed rate (see module doc).

    Args:
        dut: the top (or module) handle.
        prefix: the port's signal prefix (``m_axi`` → ``m_axi_araddr`` ...).
        image: the memory's bytes from address ``base``.
        base: address of ``image[0]``.
        latency: cycles from an address handshake to the burst's first beat (>= 1).
        rate: bytes per cycle (a beat every ``beat_bytes / rate`` cycles, at least 1; with a
            fractional period a burst's beat ``k`` comes at ``ceil(k·period)``).
        beat_bytes: bytes of a beat (the port's data width / 8).
    """

    def __init__(self, dut, prefix: str, image: bytes, base: int, latency: int, rate: float, beat_bytes: int):
        assert latency >= 1, "latency >= 1"
        self.prefix, self.base, self.latency = prefix, base, latency
        period = max(1.0, beat_bytes / rate)
        self.period = int(period) if period.is_integer() else period  # cycles per beat
        self.beat = beat_bytes
        self.mem = bytes(image)
        self.bursts: list[tuple[int, int, int]] = []  # (first-beat cycle, address, beats)
        self.requests: list[tuple[int, int, int]] = []  # (cycle, address, beats) seen on AR
        self.beats = 0
        self._addr = self._left = 0
        self._nxt = 0.0
        self._s = {n: getattr(dut, f"{prefix}_{n}") for n in _SIGNALS}
        self._s["arready"].value = 1
        self._s["rvalid"].value = 0
        self._s["rlast"].value = 0
        self._s["rresp"].value = 0
        self._s["rdata"].value = 0

    def _check(self, addr: int, beats: int) -> None:
        s, where = self._s, self.prefix
        assert int(s["arburst"].value) == 1, f"{where}: INCR bursts only"
        assert 1 << int(s["arsize"].value) == self.beat, f"{where}: full-width beats"
        assert 1 <= beats <= 256, f"{where}: burst of {beats} beats"
        assert addr % self.beat == 0, f"{where}: unaligned burst at {addr:#x}"
        assert addr // 4096 == (addr + beats * self.beat - 1) // 4096, f"{where}: burst at {addr:#x} crosses 4 KB"
        lo = addr - self.base
        assert 0 <= lo and lo + beats * self.beat <= len(self.mem), f"{where}: burst at {addr:#x} outside the image"

    def step(self, cycle: int) -> None:
        """Cycle ``cycle`` at its falling edge: take a request, drive this cycle's beat."""
        s = self._s
        if s["arvalid"].value:  # arready is always high: a handshake
            a, n = int(s["araddr"].value), int(s["arlen"].value) + 1
            self._check(a, n)
            self.requests.append((cycle, a, n))
            self.bursts.append((cycle + self.latency, a, n))
        if self._left == 0 and self.bursts and self.bursts[0][0] <= cycle:
            _, self._addr, self._left = self.bursts.pop(0)
            self._nxt = max(self._nxt, float(cycle))
        if self._left and cycle >= self._nxt - 1e-9:
            assert s["rready"].value, f"{self.prefix}: rready low"
            lo = self._addr - self.base
            s["rdata"].value = int.from_bytes(self.mem[lo:lo + self.beat], "little")
            s["rlast"].value = int(self._left == 1)
            s["rvalid"].value = 1
            self._addr, self._left, self._nxt = self._addr + self.beat, self._left - 1, self._nxt + self.period
            self.beats += 1
        else:
            s["rvalid"].value = 0


async def serve(mems: list[AxiReadMemory], clk, rst) -> None:
    """Step every memory once per cycle (at the falling edge), none while ``rst`` is high."""
    cycle = 0
    while True:
        await FallingEdge(clk)
        if not rst.value:
            for m in mems:
                m.step(cycle)
        cycle += 1
