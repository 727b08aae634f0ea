"""The host side of a design: buffers, kernel arguments, the run schedule and host ops.

`host_spec` turns a `Design` into a `HostSpec` that both host drivers follow: the C++
one on the XRT native API (``host/host.cpp``) and the Python one (``host/driver.py``,
which reads ``host/design.json``). The schedule starts every core as soon as the off-chip
buffers it reads are complete and waits on a producer core only where a consumer needs
its buffer (the barrier of docs/hardware.md); cores joined by streams run together.

On a board of several cards (codegen/vitis.py ``board_cards``), ``HostSpec.cards`` names the
kernels of each card and its xclbin (``design_card<d>.xclbin``): the drivers open one device
per card, and every buffer lives on the card of the kernel it was allocated for. An off-chip
buffer whose two cores sit on different cards becomes two buffer objects, one per card, and
a ``copy`` step of the schedule moves the frames through the host after the producer's run.
On a single-card board ``design.json`` has neither ``cards`` nor ``copies``.

A core with URAM weights (codegen/weights.py) has a ``weights`` buffer (its weight image
``hls/weights_core<k>.bin``, not per frame) on its ``wts`` argument and a ``load`` scalar
argument (``load_weights``): the drivers pass 1 on the first run after programming the
device, which fills the URAM memories, and may pass 0 afterwards.

A core with off-chip weights (plan ``weights == "ddr"``) has a ``ddr_weights`` buffer (its
off-chip image ``hls/ddr_weights_core<k>.bin``, allocated on the group of its first
``wddr_<layer>`` argument, i.e. the bank link.cfg gives the plan core's ``memory``), written
once at start-up and set on every ``wddr_<layer>`` argument of every run: the kernels read
it on every frame. A layer behind a DDR frame stage also gets it on its ``sddr_w_<layer>``
and ``sddr_r_<layer>`` arguments (its scratch area lies in that image, after the weights).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

from bbgrap_hls.codegen.emit import mem_pointer
from bbgrap_hls.codegen.ports import DDR_IMAGE_KINDS, Design, core_ports, mem_bytes
from bbgrap_hls.codegen.weights import ddr_image_file, image_file
from bbgrap_hls.errors import UnsupportedError
from bbgrap_hls.ir import Graph

#: Host ops the generated drivers implement (others: the drivers stop with a message).
HOST_OPS = frozenset({"Softmax"})


@dataclass
class HostBuffer:
    """A buffer object: a graph input or output of the fabric, an off-chip buffer, a
    core's URAM weight image or its off-chip weight image."""

    name: str  # C++ identifier (bo_<ident>)
    role: str  # "input", "output", "buffer", "weights" (URAM image) or "ddr_weights" (off-chip image)
    ident: str  # design-level name (file names in_<ident>.bin / out_<ident>.bin)
    tensor: str
    elems: int  # per frame (roles "weights", "ddr_weights": bytes of the image, once)
    kernel: str  # the core whose argument gives the memory group
    arg: int
    #: bytes of the buffer object: an image's bytes; else the spec's frames back to back,
    #: padded to whole 64-byte words (ports.mem_bytes, what the 512-bit movers read and write)
    bytes: int = 0
    shape: list[int] = field(default_factory=list)  # NCHW (inputs, outputs): the model's shape
    #: an input the plan holds as block x block pixel blocks (passes/stem.py): the host
    #: writes block (Y, X) as its (dy, dx, c) codes; 1: NHWC
    block: int = 1
    scale: float = 0.0
    zp: int = 0
    file: str = ""  # role "weights": the image's file name in hls/


@dataclass
class KernelArg:
    index: int
    name: str
    kind: str  # "bo", "stream", "scalar" (frames) or "load" (load_weights)
    buffer: str = ""  # HostBuffer.name for kind "bo"


@dataclass
class HostKernel:
    name: str
    args: list[KernelArg]


@dataclass
class HostOp:
    op: str
    inputs: list[str]
    outputs: list[str]
    shape: list[int]
    axis: int
    flatten: bool


def graph_host_ops(g, key=lambda t: t) -> list[HostOp]:
    """The host ops of graph ``g`` (its nodes marked ``host``) in graph order, their inputs
    renamed by ``key``. Ops outside `HOST_OPS` are listed too: the drivers stop with a message
    naming the op."""
    return [HostOp(n.op, [key(i) for i in g.act_inputs(n)], list(n.outputs), list(g.shape(n.inputs[0])),
                   int(n.attrs.get("axis", -1)), bool(n.attrs.get("flatten", False))) for n in g.nodes if n.host]


@dataclass
class HostSpec:
    frames: int
    buffers: list[HostBuffer]
    kernels: list[HostKernel]
    schedule: list[tuple[str, str]]  # ("start" | "wait", core name)
    host_ops: list[HostOp]
    graph_outputs: list[dict]  # {"tensor", "shape", "from": "fabric" | "host", "ident"}
    cards: list[dict] = field(default_factory=list)  # multi-card: {"card", "xclbin", "kernels"}
    copies: list[dict] = field(default_factory=list)  # {"src", "dst"}: buffer names, ("copy", dst) steps

    def to_json(self) -> str:
        d = asdict(self)
        if not self.cards:  # a single-card design.json stays as it was
            del d["cards"], d["copies"]
        return json.dumps(d, indent=2, sort_keys=True) + "\n"

    def card_of(self) -> dict[str, int]:
        """Kernel and buffer name -> card index ({} on a single-card board)."""
        out = {k: c["card"] for c in self.cards for k in c["kernels"]}
        if out:
            out.update({b.name: out[b.kernel] for b in self.buffers})
        return out


def _schedule(design: Design, producer_of: dict[str, str]) -> list[tuple[str, str]]:
    """Start cores in dataflow order; before a core that reads a buffer, wait its producer.

    A core starts once the cores that stream into it have started and the cores whose
    buffers it reads have completed (waited). Cores joined only by streams run together.
    """
    bufs = {c.name: sorted({producer_of[p.link] for p in c.ports if p.kind == "mem_in" and p.link in producer_of})
            for c in design.cores}
    name = {c.id: c.name for c in design.cores}
    streams = {c.name: sorted({name[src] for _, (_, src, dst, _, _) in design.links.items() if name.get(dst) == c.name})
               for c in design.cores}
    pending = [c.name for c in design.cores]
    started: list[str] = []
    done: set[str] = set()
    steps: list[tuple[str, str]] = []
    while pending:
        ready = next((k for k in pending if all(d in done for d in bufs[k]) and all(d in started for d in streams[k])),
                     None)
        if ready is not None:
            steps.append(("start", ready))
            started.append(ready)
            pending.remove(ready)
            continue
        # The first pending core comes after all its producers in dataflow order, so they
        # have started: wait on those whose buffers it reads (the barrier).
        for d in bufs[pending[0]]:
            if d not in done:
                steps.append(("wait", d))
                done.add(d)
    steps += [("wait", k) for k in started if k not in done]
    return steps


def host_spec(design: Design, g: Graph, card_of: dict[str, int] | None = None) -> HostSpec:
    """The host driver's view of ``design`` on the int8 graph ``g``.

    ``card_of`` (core name -> card, codegen/vitis.py ``core_cards``) is given for a board of
    several cards: the spec then lists the cards and the host copies of buffers between cards.
    """
    card_of = card_of or {}
    copies: list[dict] = []
    ins = {ident: (t, n) for t, ident, n in design.inputs}
    outs = {ident: (t, n) for t, ident, n in design.outputs}
    buffers: dict[str, HostBuffer] = {}
    kernels: list[HostKernel] = []
    producer_of: dict[str, str] = {}
    for c in design.cores:
        args = []
        ports = core_ports(c)
        for k, p in enumerate(ports):
            if p.kind.startswith("axis"):
                args.append(KernelArg(k, p.name, "stream"))
                continue
            if p.kind == "load":
                args.append(KernelArg(k, p.name, "load"))
                continue
            if p.kind == "mem_w":
                name = f"bo_{p.link}"
                buffers[name] = HostBuffer(name, "weights", p.link, "", p.elems, c.name, k, p.elems,
                                           file=image_file(c.name))
                args.append(KernelArg(k, p.name, "bo", name))
                continue
            if p.kind in DDR_IMAGE_KINDS:  # one buffer per core, given to each of its off-chip layers
                name = f"bo_{p.link}"
                buffers.setdefault(name, HostBuffer(name, "ddr_weights", p.link, "", p.elems, c.name, k, p.elems,
                                                    file=ddr_image_file(c.name)))
                args.append(KernelArg(k, p.name, "bo", name))
                continue
            role = "input" if p.link in ins else "output" if p.link in outs else "buffer"
            if role == "buffer" and p.kind == "mem_out":
                producer_of[p.link] = c.name
            name = f"bo_{p.link}"
            if name in buffers and card_of and card_of[buffers[name].kernel] != card_of[c.name]:
                # the other end is on another card: a buffer object of this card, copied by the host
                src, name = name, f"bo_{p.link}_card{card_of[c.name]}"
                copies.append({"src": src, "dst": name} if p.kind == "mem_in" else {"src": name, "dst": src})
            if name not in buffers:
                t, n = ins.get(p.link) or outs.get(p.link) or (p.tensor, design.buffers[p.link])
                hb = HostBuffer(name, role, p.link, t, n, c.name, k, mem_bytes(n, design.frames))
                if role != "buffer":
                    q = g.tensors[t].quant
                    hb.shape, hb.scale, hb.zp = list(g.model_input_shape(t) if role == "input" else g.shape(t)), \
                        float(np.float32(q.scale)), int(q.zp)
                    hb.block = g.input_blocks.get(t, 1) if role == "input" else 1
                buffers[name] = hb
            args.append(KernelArg(k, p.name, "bo", name))
        args.append(KernelArg(len(ports), "frames", "scalar"))
        kernels.append(HostKernel(c.name, args))
    def key(t: str) -> str:
        return design.alias.get(t, t)

    host_ops = graph_host_ops(g, key)
    fabric = {t: ident for t, ident, _ in design.outputs}
    host_made = {o for h in host_ops for o in h.outputs}
    gouts = []
    for t in map(key, g.outputs):
        if t in host_made:
            gouts.append({"tensor": t, "shape": list(g.shape(t)), "from": "host", "ident": ""})
        elif t in fabric:
            gouts.append({"tensor": t, "shape": list(g.shape(t)), "from": "fabric", "ident": fabric[t]})
        else:
            raise UnsupportedError(f"graph output '{t}' is neither made by the fabric nor by a host op")
    order = {"ddr_weights": 0, "weights": 0, "input": 1, "buffer": 2, "output": 3}
    bufs = sorted(buffers.values(), key=lambda b: (order[b.role], b.ident))
    steps = _schedule(design, producer_of)
    for cp in copies:  # right after the producer's run completed (its barrier wait)
        producer = buffers[cp["src"]].kernel
        steps.insert(steps.index(("wait", producer)) + 1, ("copy", cp["dst"]))
    cards = [{"card": d, "xclbin": f"design_card{d}.xclbin",
              "kernels": [k.name for k in kernels if card_of[k.name] == d]} for d in sorted(set(card_of.values()))]
    return HostSpec(design.frames, bufs, kernels, steps, host_ops, gouts, cards, copies)


def _hw_c(shape: list[int]) -> tuple[int, int]:
    """(channels, pixels per frame) of an NCHW or (N, C) tensor."""
    return shape[1], int(np.prod(shape[2:], dtype=np.int64)) if len(shape) > 2 else 1


def _softmax_dims(h: HostOp) -> tuple[int, int, int]:
    s, a = h.shape, h.axis
    outer = int(np.prod(s[:a], dtype=np.int64))
    if h.flatten:
        return outer, int(np.prod(s[a:], dtype=np.int64)), 1
    return outer, s[a], int(np.prod(s[a + 1:], dtype=np.int64))


def render_host(spec: HostSpec, design: Design) -> dict[str, str]:
    """``{relative path: text}`` of host/host.cpp, host/sim_kernels.cpp, host/design.json."""
    from bbgrap_hls.codegen.emit import environment

    env = environment()
    var = {b.tensor: f"f_{b.ident}" for b in spec.buffers if b.role == "output"}
    ops = []
    for k, h in enumerate(spec.host_ops):
        missing = [i for i in h.inputs if i not in var]
        if missing:
            raise UnsupportedError(f"host op {h.op}: input '{missing[0]}' does not come from the fabric")
        outer, n, inner = _softmax_dims(h) if h.op in HOST_OPS else (0, 0, 0)
        ops.append({"op": h.op, "inp": var[h.inputs[0]], "out": f"h{k}", "outer": outer, "len": n, "inner": inner})
        var[h.outputs[0]] = f"h{k}"
        if h.op not in HOST_OPS:
            break
    complete = all(h.op in HOST_OPS for h in spec.host_ops)
    outputs = [var[o["tensor"]] for o in spec.graph_outputs] if complete else []

    def c_of(b: HostBuffer) -> int:
        return _hw_c(b.shape)[0]

    def hw_of(b: HostBuffer) -> int:
        return _hw_c(b.shape)[1]

    def h_of(b: HostBuffer) -> int:
        return b.shape[2] if len(b.shape) > 2 else 1

    files = {"host/host.cpp": env.get_template("host/host.cpp.j2").render(
        spec=spec, host_ops=ops, outputs=outputs, c_of=c_of, hw_of=hw_of, h_of=h_of, hexf=lambda x: float(x).hex() + "f",
        card_of=spec.card_of(), copy_src={cp["dst"]: cp["src"] for cp in spec.copies})}
    sim_args = {}
    nargs = {}
    for c in design.cores:
        args = []
        ports = core_ports(c)
        for k, p in enumerate(ports):
            ptr = mem_pointer(p)
            if ptr is not None:
                args.append(f"static_cast<{ptr}>(ptrs[{k}])")
            elif p.kind == "load":
                args.append(f"static_cast<int>(scalars[{k}])")
            else:
                args.append(p.link)
        args.append(f"static_cast<int>(scalars[{len(ports)}])")
        sim_args[c.name] = ", ".join(args)
        nargs[c.name] = len(ports) + 1
    files["host/sim_kernels.cpp"] = env.get_template("host/sim_kernels.cpp.j2").render(
        design=design, links=sorted(design.links.items()), sim_args=sim_args, nargs=nargs, card_of=spec.card_of())
    files["host/design.json"] = spec.to_json()
    return files
