"""The generated design: per core, its kernel calls, local streams and ports.

`build_design` walks the int8 graph with the plan: every fabric node (every split part)
becomes a `Layer` on its core; every tensor a core reads comes from a block on that core,
a graph input (m_axi), an inter-core stream (axis port) or an off-chip buffer (m_axi),
as the plan's transfers say; fan-outs and width converters are inserted where a tensor
has several readers or the lanes differ (docs/hardware.md).

The design's data (`Design`, `CoreDesign`, `Port`) and its cores' top-function arguments are
in ports.py; the ordering of a core's calls and of the cores, in order.py.
"""

from __future__ import annotations

import math

import numpy as np

from bbgrap_hls.codegen.carray import c_array
from bbgrap_hls.codegen.layers import LAYOUT_KINDS, Layer, hwc, make_layer, set_stage_offset, shuffle_layer
from bbgrap_hls.codegen.names import Namer, comment
from bbgrap_hls.codegen.order import core_order, sort_calls
from bbgrap_hls.codegen.ports import CoreDesign, DdrFifo, Design, Port
from bbgrap_hls.codegen.weights import ddr_beats, ddr_image_bytes, ddr_weight_bytes
from bbgrap_hls.errors import BadInputError, UnsupportedError
from bbgrap_hls.ir import Graph, Node
from bbgrap_hls.model.stage import MAX_STAGE_LANES, STAGE_REGIONS
from bbgrap_hls.ops import get_op
from bbgrap_hls.plan import Plan


class _Builder:
    def __init__(self, g: Graph, plan: Plan) -> None:
        self.g, self.plan = g, plan
        self.names = Namer("t_")
        self.cores = {c.id: CoreDesign(c.id, f"core{c.id}") for c in plan.cores}
        # the plan's FIFOs in URAM or distributed RAM, by (tensor, reader): HLS storage
        self.fifo_impl = {(c.tensor, c.dst): "uram" if c.uram > 0 else "lutram" for c in plan.channels
                          if c.uram > 0 or c.lutram > 0}
        # the plan's FIFOs in board memory (kind ddr_fifo), by (tensor, reader); `_operand`
        # builds each and removes it here
        self.ddr_fifos = {(c.tensor, c.dst): c for c in plan.channels if c.kind == "ddr_fifo"}
        self.alias: dict[str, str] = {}
        # Tensors of a layout chain that do not stream (e.g. the rank-5 middle of a channel
        # shuffle): source tensor and, per element, its flat NCHW index in the source.
        self.virtual: dict[str, tuple[str, np.ndarray]] = {}
        self.source: dict[tuple[int, str], tuple[str, int]] = {}  # (core, key) -> (stream, lanes)
        self.requests: dict[tuple[int, str], list[tuple[str, int]]] = {}
        self.producer_core: dict[str, int] = {}
        self.elems: dict[str, int] = {}
        self.n = 0
        self.buffers: dict[str, int] = {}
        self.links: dict[str, tuple[int, int, int, str, str]] = {}
        self.stream_key: dict[tuple[int, str], str] = {}  # (core, stream) -> the tensor it carries

    def fresh(self, core: int, stem: str, lanes: int, depth: int = 2, elems: int | None = None) -> str:
        self.n += 1
        name = f"{stem}{self.n}"
        self.cores[core].streams[name] = (lanes, depth)
        if elems is not None:
            self.cores[core].elems[name] = elems
        return name

    def key(self, t: str) -> str:
        while t in self.alias:
            t = self.alias[t]
        return t

    def request(self, core: int, tensor: str, lanes: int, depth: int = 2) -> str:
        s = self.fresh(core, "s", lanes, depth)
        self.requests.setdefault((core, tensor), []).append((s, lanes))
        self.stream_key[(core, s)] = tensor  # its elements: known once the tensor is produced
        return s

    def produce(self, core: int, tensor: str, lanes: int, elems: int) -> str:
        s = self.fresh(core, "s", lanes, elems=elems)
        self.source[(core, tensor)] = (s, lanes)
        self.producer_core.setdefault(tensor, core)
        self.elems[tensor] = elems
        return s


def _depths(plan: Plan) -> dict[tuple[str, str], int]:
    """Each channel's planned FIFO size in *elements* (the plan counts beats of the
    producer's ``width_lanes``; the FIFO may sit after a width converter, see `_beats`)."""
    return {(c.tensor, c.dst): max(2, int(c.depth)) * max(1, int(c.width_lanes)) for c in plan.channels}


def _beats(depth: dict[tuple[str, str], int], t: str, node: str, lanes: int) -> int:
    """The FIFO depth in beats of ``lanes`` holding the planned elements (2 if unplanned)."""
    elems = depth.get((t, node))
    return 2 if elems is None else max(2, -(-elems // max(1, lanes)))


def build_design(g: Graph, plan: Plan, frames: int = 1) -> Design:
    """Lay the int8 graph ``g`` out on cores as ``plan`` says (see module docstring)."""
    b = _Builder(g, plan)
    depth = _depths(plan)
    layer_no = 0
    for node in g.nodes:
        if node.host:
            continue
        if node.op in LAYOUT_KINDS:
            perm = _layout(b, g, node)
            if perm is None:
                continue
            _shuffle(b, g, plan, node, perm, f"layer{layer_no}", depth)
            layer_no += 1
            continue
        try:
            np_ = plan.node(node.name)
        except KeyError:
            raise BadInputError(f"node '{node.name}' ({node.op}) is not in the plan") from None
        parts = ([(p.core, p.pe, p.simd, (p.co_begin, p.co_end), p.weights, p.mmv, p.uram, p.pack, p.requant, 2,
                   False, p.px, 1, 1, 2) for p in np_.split]
                 if np_.split else [(np_.core, np_.pe, np_.simd, None, np_.weights, np_.mmv, np_.uram, np_.pack,
                                     np_.requant, np_.in_slots, np_.in_stage, np_.px, np_.po, np_.bands,
                                     np_.out_slots)])
        ring = np_.short_ring and not np_.split  # (a split node's parts keep the default ring)
        part_keys = []
        for j, (core, pe, simd, rng, wmem, mmv, uram, pack, requant, in_slots, in_stage, px, po, bands,
                out_slots) in enumerate(parts):
            ident = f"layer{layer_no}" + (f"_p{j}" if np_.split else "")
            cd = b.cores[core]
            # off-chip weights: this layer's part of the core's image starts after the earlier ones
            ddr_offset = sum(ddr_beats(x.wmem) for x in cd.layers if x.wmem is not None and x.wmem.ddr)
            lay = make_layer(g, node, ident, pe, simd, rng, wmem, mmv, ddr_offset, frame_uram=uram > 0,
                             pack=pack, requant=requant, in_slots=in_slots, in_stage=in_stage, px=px, po=po,
                             bands=bands, short_ring=ring, out_slots=out_slots, dense_groups=np_.dense_groups,
                             wide_groups=np_.wide_groups, ring_uram=ring and np_.ring_uram)
            cd.layers.append(lay)
            fmt = {}
            for k, (t, lanes) in enumerate(zip(lay.inputs, lay.in_lanes, strict=True)):
                fmt[f"in{k}"] = _operand(b, g, node, core, k, t, lanes, lay, depth)
            out_key = node.outputs[0] if not np_.split else f"{node.outputs[0]}#part{j}"
            out = b.produce(core, out_key, lay.out_lanes, lay.out_elems)
            if lay.trim is not None:  # padded folds: the kernel's PE lanes, then the trimming converter
                pixels, nf, pe_, co_, lanes = lay.trim
                fmt["out"] = b.fresh(core, "t", pe_, elems=pixels * nf * pe_)
            else:
                fmt["out"] = out
            cd.calls.append(lay.call.format(**fmt))
            cd.call_layer[cd.calls[-1]] = lay.ident
            if lay.trim is not None:
                cd.calls.append(f"bb::trim_convert<{pixels}, {nf}, {pe_}, {co_}, {lanes}>({fmt['out']}, {out}, frames);")
            part_keys.append((out_key, lay.out_lanes, rng))
        if np_.split:  # concatenate the parts' channels on the last part's core
            core = parts[-1][0]
            ho, wo, _ = hwc(g.shape(node.outputs[0]))
            # The gather streams one beat a cycle at `gather_lanes` (search/build.py plans the
            # same lanes), each part through a FIFO of `turn_depth` beats.
            from bbgrap_hls.search.fifos import gather_lanes, turn_depth

            sizes = [r[1] - r[0] for _, _, r in part_keys]
            ii = max(max(1, q.ii_cycles) for n in plan.nodes for q in (n.split or [n]))
            lanes = gather_lanes(sizes, [lk for _, lk, _ in part_keys], ho * wo, ii)
            co = sum(sizes)
            ins = [b.request(core, k, lanes, turn_depth(sizes, i, ho * wo, lanes))
                   for i, (k, _, _) in enumerate(part_keys)]
            cs = ", ".join(str(c) for c in sizes)
            out = b.produce(core, node.outputs[0], lanes, ho * wo * co)
            b.cores[core].calls.append(f"bb::concat<{ho * wo}, {lanes}, {cs}>({out}, frames, {', '.join(ins)});")
        layer_no += 1
    if b.ddr_fifos:  # a ddr_fifo channel into something other than a layer's plain input
        c = next(iter(b.ddr_fifos.values()))
        raise UnsupportedError(f"the plan puts the FIFO {comment(c.src)} -> {comment(c.dst)} (tensor "
                               f"{comment(c.tensor)}) in board memory, but gen builds such FIFOs only on a layer's "
                               "input read whole (not a broadcast operand or a channel shuffle): plan without "
                               "--ddr-fifos")
    for cd in b.cores.values():
        place_stages(cd.layers)
        place_fifos(cd)
    return _finish(b, g, plan, frames)


def place_stages(layers: list[Layer]) -> None:
    """Place the scratch areas of a core's DDR frame stages (its layers with ``in_stage``) in
    its board-memory image: after all the off-chip weights (whose offsets `build_design`
    gives, ``ddr_offset``), in layer order, each from a 4 KB boundary and ``STAGE_REGIONS``
    regions of ``stage_region`` bytes long (`set_stage_offset`: ``Layer.stage_offset``,
    ``P::SOFF``). The one place these offsets are computed; weights.py's image and the
    ports' sizes read them from the layers."""
    off = -(-ddr_weight_bytes(layers) // 4096) * 4096
    for lay in layers:
        if lay.in_stage:
            set_stage_offset(lay, off)
            off += STAGE_REGIONS * lay.stage_region


def place_fifos(cd: CoreDesign) -> None:
    """Place the rings of a core's FIFOs in board memory (``cd.ddr_fifos``) in its image:
    after the weights and the stages' scratch areas (`place_stages`), in call order, each from
    a 4 KB boundary and ``regions`` regions of ``region`` bytes long (``DdrFifo.offset``,
    ``F::OFF``); then their parameter structs join the core's definitions."""
    off = -(-ddr_image_bytes(cd.layers) // 4096) * 4096
    for f in cd.ddr_fifos:
        f.offset = off
        off += f.scratch
        cd.consts.append(f.struct())


def _layout(b: _Builder, g: Graph, node: Node) -> np.ndarray | None:
    """Follow a layout op on element indices; returns a channel permutation to stream.

    None when the op keeps the NHWC stream order (an alias) or produces a tensor that does
    not stream (its indices are kept for the next layout op of the chain).
    """
    src = node.inputs[0]
    if src in b.virtual:
        base, idx = b.virtual[src]
    else:
        base = b.key(src)
        idx = np.arange(int(np.prod(g.shape(base))), dtype=np.int64).reshape(g.shape(base))
    consts = [g.const(i) if i else None for i in node.inputs[1:]]
    out_idx = np.asarray(get_op(node.op).run(node, [idx, *consts])[0])
    y = g.shape(node.outputs[0])
    if len(y) not in (2, 4):
        b.virtual[node.outputs[0]] = (base, out_idx)
        return None
    bs = g.shape(base)
    bh, bw, bc = hwc(bs)
    yh, yw, yc = hwc(y)
    if (bh, bw, bc) != (yh, yw, yc) or bs[0] != y[0]:
        raise UnsupportedError(f"node '{node.name}' ({node.op}): {bs} -> {y} reorders pixels, only "
                               "permutations of the channels inside a pixel stream")
    n_, c_, h_, w_ = np.unravel_index(out_idx.reshape(y[0], yc, yh, yw), (bs[0], bc, bh, bw))
    grid = np.indices((y[0], yc, yh, yw))
    perm = c_[0, :, 0, 0]
    if not ((n_ == grid[0]).all() and (h_ == grid[2]).all() and (w_ == grid[3]).all()
            and (c_ == perm.reshape(1, -1, 1, 1)).all()):
        raise UnsupportedError(f"node '{node.name}' ({node.op}): the layout chain from '{base}' "
                               "mixes pixels; only permutations of the channels inside a pixel stream")
    if (perm == np.arange(yc)).all():
        b.alias[node.outputs[0]] = base
        return None
    return perm


def _shuffle(b: _Builder, g: Graph, plan: Plan, node: Node, perm: np.ndarray, ident: str, depth) -> None:
    """A channel shuffle block on the core that the plan gives the chain's last node."""
    base = b.virtual[node.inputs[0]][0] if node.inputs[0] in b.virtual else b.key(node.inputs[0])
    try:
        np_ = plan.node(node.name)
    except KeyError:
        raise BadInputError(f"node '{node.name}' ({node.op}) is not in the plan") from None
    core = np_.core if np_.core is not None else b.producer_core.get(base, plan.cores[0].id)
    h, w, c = hwc(g.shape(node.outputs[0]))
    lanes = math.gcd(max(1, np_.pe), c)
    lay = shuffle_layer(node, ident, h * w, c, lanes, perm)
    b.cores[core].layers.append(lay)
    src = b.request(core, base, lanes, depth.get((base, node.name), 2))
    out = b.produce(core, node.outputs[0], lanes, h * w * c)
    b.cores[core].calls.append(lay.call.format(in0=src, out=out))
    b.cores[core].call_layer[b.cores[core].calls[-1]] = lay.ident


def _operand(b: _Builder, g: Graph, node, core: int, k: int, t: str, lanes: int, lay: Layer, depth) -> str:
    """The stream feeding input ``k`` of a layer: a request, a constant or a broadcast."""
    q = node.attrs.get("q", {})
    out_shape = g.shape(node.outputs[0])
    ho, wo, co = hwc(out_shape)
    if k in q.get("consts", {}):
        data = np.broadcast_to(np.asarray(q["consts"][k]), out_shape).astype(np.int8)
        flat = np.ascontiguousarray(data[:1].transpose(0, 2, 3, 1) if data.ndim == 4 else data[:1]).reshape(-1)
        name = f"{lay.ident}_c{k}"
        b.cores[core].consts.append(c_array(name, flat))
        s = b.fresh(core, "s", lanes, elems=flat.size)
        b.cores[core].calls.append(f"bb::const_stream<{flat.size}, {lanes}>({name}, {s}, frames);")
        return s
    t = b.key(t)
    shape = g.shape(t)
    if node.op in ("Add", "Sub", "Mul") and int(np.prod(shape[1:])) != ho * wo * co:
        sh, sw, sc = hwc(shape)  # an (N, C) stream is one pixel, as is (N, C, 1, 1)
        if (sh, sw, sc) != (1, 1, co):
            raise BadInputError(f"node '{node.name}' ({node.op}): broadcast of {shape} to {out_shape} "
                                "is not a per-pixel repeat")
        src = b.request(core, t, lanes, _beats(depth, t, node.name, lanes))
        s = b.fresh(core, "s", lanes, elems=ho * wo * co)
        b.cores[core].calls.append(f"bb::repeat_pixel<{ho * wo}, {co}, {lanes}>({src}, {s}, frames);")
        return s
    ch = b.ddr_fifos.pop((t, node.name), None)
    if ch is not None:  # the plan's FIFO in board memory
        return _ddr_fifo(b, g, core, k, t, lanes, lay, ch)
    s = b.request(core, t, lanes, _beats(depth, t, node.name, lanes))
    if (t, node.name) in b.fifo_impl:  # the plan's FIFO in URAM or distributed RAM
        b.cores[core].fifo_impl[s] = b.fifo_impl[t, node.name]
    return s


def _ddr_fifo(b: _Builder, g: Graph, core: int, k: int, t: str, lanes: int, lay: Layer, ch) -> str:
    """Input ``k`` of ``lay`` through the plan's FIFO in board memory ``ch`` (a ``ddr_fifo``
    channel): a short stream of the channel's ``width_lanes`` (the beats the plan costed)
    from the producer's side into ``bb::ddr_fifo<F_<layer>_in<k>>``, its output stream, then
    (when the layer reads other lanes) a width converter; returns the stream the layer reads.
    The ring's offset in the image is set later (`place_fifos`)."""
    h, w, c = hwc(g.shape(t))
    n = h * w * c
    fl = int(ch.width_lanes) if ch.width_lanes >= 1 and n % int(ch.width_lanes) == 0 else lanes
    chunks = int(ch.chunks)
    if fl > MAX_STAGE_LANES or not 3 <= ch.regions <= 128 or chunks < 1 or (n // fl) % chunks:
        raise UnsupportedError(f"the FIFO {comment(ch.src)} -> {comment(ch.dst)} in board memory: {fl} lanes, "
                               f"{ch.regions} regions, a frame of {n // fl} beats in {chunks} (bb::ddr_fifo takes at "
                               f"most {MAX_STAGE_LANES} lanes, 3 to 128 regions, a frame in equal regions)")
    cd = b.cores[core]
    f = DdrFifo(f"{lay.ident}_in{k}", fl, n // fl // chunks, int(ch.regions), f"plan channel {comment(ch.src)} -> "
                f"{comment(ch.dst)}, tensor {comment(ch.tensor)}, lag {ch.depth} beats", chunks=chunks)
    cd.ddr_fifos.append(f)
    src = b.request(core, t, fl)
    out = b.fresh(core, "s", fl, elems=n)
    cd.calls.append(f"bb::ddr_fifo<F_{f.ident}>({src}, {out}, fddr_w_{f.ident}, fddr_r_{f.ident}, frames);")
    if fl == lanes:
        return out
    s = b.fresh(core, "s", lanes, elems=n)
    _convert(b, core, out, fl, s, lanes, n)
    return s


def _convert(b: _Builder, core: int, src: str, a: int, dst: str, c: int, n: int) -> None:
    """Connect stream ``src`` (a lanes) to ``dst`` (c lanes), N elements per frame.

    A narrowing converter takes one input beat every ``a/c`` cycles: a planned deep FIFO
    after it would leave a burst of the producer (a pool's one output pixel) stalled behind
    a two-beat FIFO, so its elements move before the converter, and with them the plan's
    storage of that FIFO (``fifo_impl``)."""
    streams, impl = b.cores[core].streams, b.cores[core].fifo_impl
    if a > c and streams[dst][1] > 2 and src in streams:
        streams[src] = (a, max(streams[src][1], -(-streams[dst][1] * c // a) + 2))
        streams[dst] = (c, 2)
        if dst in impl:  # the plan's URAM or LUTRAM FIFO is the deep one
            impl[src] = impl.pop(dst)
    if a == c:
        b.cores[core].calls.append(f"bb::concat_part<{a}, {n // a}>({src}, {dst}, frames);")
        return
    lcm = a * c // math.gcd(a, c)
    if n % lcm == 0:
        b.cores[core].calls.append(f"bb::width_convert<{n}, {a}, {c}, {lcm}>({src}, {dst}, frames);")
        return
    m = math.gcd(a, c)
    mid = b.fresh(core, "w", m, elems=n)
    b.cores[core].calls.append(f"bb::width_convert<{n}, {a}, {m}, {a}>({src}, {mid}, frames);")
    b.cores[core].calls.append(f"bb::width_convert<{n}, {m}, {c}, {c}>({mid}, {dst}, frames);")


def _transfer(b: _Builder, plan: Plan, tensor: str, src: int, dst: int):
    """The plan's transfer of ``tensor`` from core ``src`` to ``dst``, or None.

    The plan names a transfer by the tensor it moved, which may be a layout alias of the
    stream's tensor (a Flatten output, the middle of a channel shuffle): every name of the
    same stream counts. A transfer routed through ``dst`` on its way elsewhere also counts.
    """
    base = tensor.split("#part")[0]
    names = {base} | {t for t in b.alias if b.key(t) == base} | {t for t, (s, _) in b.virtual.items() if s == base}
    cands = [t for t in plan.transfers if t.tensor in names and t.src_core == src]
    for t in cands:
        if t.dst_core == dst:
            return t
    for t in cands:
        if dst in t.route:
            return t
    return None


def _finish(b: _Builder, g: Graph, plan: Plan, frames: int) -> Design:
    inputs, outputs = [], []
    for t in g.inputs:
        h, w, c = hwc(g.shape(t))
        b.elems[t] = h * w * c
        inputs.append((t, b.names(t), h * w * c))
    needed = [b.key(o) for o in g.outputs]
    for n in g.nodes:
        if n.host:
            needed += [b.key(i) for i in g.act_inputs(n)]
    host_made = {o for n in g.nodes if n.host for o in n.outputs}
    # Remote readers: bring each (core, tensor) request from its producer's core.
    edges: set[tuple[int, int]] = set()
    for (core, key) in sorted(b.requests, key=lambda x: (x[0], x[1])):
        if (core, key) in b.source:
            continue
        if key in g.inputs:
            ident = dict((t, nm) for t, nm, _ in inputs)[key]
            s = b.fresh(core, "s", 1, elems=b.elems[key])
            port = f"in_{ident}"
            lanes = b.requests[(core, key)][0][1]
            b.cores[core].streams[s] = (lanes, 2)
            b.cores[core].ports.append(Port(port, "mem_in", lanes, b.elems[key], key, ident))
            b.cores[core].calls.append(f"bb::mem_to_stream<{b.elems[key]}, {lanes}>({port}, {s}, frames);")
            b.source[(core, key)] = (s, lanes)
            continue
        src_core = b.producer_core[key]
        src_s, lanes = b.source[(src_core, key)]
        tr = _transfer(b, plan, key, src_core, core)
        # Without a planned transfer (a split node's parts gathered on its last core, which
        # the plan costs as a stream along the core path), cores on the path stream; an
        # off-chip buffer there would hold a frame back while the local part's FIFO fills:
        # a deadlock.
        kind = tr.kind if tr else ("stream" if {src_core, core} <= set(plan.core_order) else "buffer")
        ident = b.names(f"{key}_{src_core}_{core}")
        n = b.elems[key]
        out_req = b.fresh(src_core, "s", lanes, elems=n)
        b.requests.setdefault((src_core, key), []).append((out_req, lanes))
        s = b.fresh(core, "s", lanes, elems=n)
        if kind == "stream":
            po, pi = f"o_{ident}", f"i_{ident}"
            b.cores[src_core].ports.append(Port(po, "axis_out", lanes, n, key, ident))
            b.cores[core].ports.append(Port(pi, "axis_in", lanes, n, key, ident))
            b.cores[src_core].calls.append(f"bb::concat_part<{lanes}, {n // lanes}>({out_req}, {po}, frames);")
            b.cores[core].calls.append(f"bb::concat_part<{lanes}, {n // lanes}>({pi}, {s}, frames);")
            b.links[ident] = (lanes, src_core, core, po, pi)
        else:
            po, pi = f"bo_{ident}", f"bi_{ident}"
            b.cores[src_core].ports.append(Port(po, "mem_out", lanes, n, key, ident))
            b.cores[core].ports.append(Port(pi, "mem_in", lanes, n, key, ident))
            b.cores[src_core].calls.append(f"bb::stream_to_mem<{n}, {lanes}>({out_req}, {po}, frames);")
            b.cores[core].calls.append(f"bb::mem_to_stream<{n}, {lanes}>({pi}, {s}, frames);")
            b.buffers[ident] = n
        b.source[(core, key)] = (s, lanes)
        edges.add((src_core, core))
    # Outputs of the fabric (graph outputs and host-op inputs): written to memory.
    for key in dict.fromkeys(needed):
        if key in host_made or key in g.inputs:
            continue
        core = b.producer_core[key]
        ident = b.names(key)
        lanes = b.source[(core, key)][1]
        s = b.fresh(core, "s", lanes, elems=b.elems[key])
        b.requests.setdefault((core, key), []).append((s, lanes))
        port = f"out_{ident}"
        b.cores[core].ports.append(Port(port, "mem_out", lanes, b.elems[key], key, ident))
        b.cores[core].calls.append(f"bb::stream_to_mem<{b.elems[key]}, {lanes}>({s}, {port}, frames);")
        outputs.append((key, ident, b.elems[key]))
    # Fan-outs and width converters from each source to its requests.
    for (core, key), reqs in sorted(b.requests.items()):
        src, a = b.source[(core, key)]
        n = b.elems[key]
        if len(reqs) > 1:
            branches = [b.fresh(core, "f", a, elems=n) for _ in reqs]
            b.cores[core].calls.append(f"bb::fanout<{n // a}, {a}>({src}, frames, {', '.join(branches)});")
        else:
            branches = [src]
        for br, (dst, c) in zip(branches, reqs, strict=True):
            _convert(b, core, br, a, dst, c, n)
    for (core, s), key in b.stream_key.items():
        if key in b.elems:
            b.cores[core].elems.setdefault(s, b.elems[key])
    for cd in b.cores.values():
        cd.calls = sort_calls(cd)
    order = core_order(sorted(b.cores), edges)
    used = [b.cores[k] for k in order if b.cores[k].calls]
    return Design(used, [c.id for c in used], inputs, outputs, b.buffers, b.links, frames,
                  {t: b.key(t) for t in b.alias})
