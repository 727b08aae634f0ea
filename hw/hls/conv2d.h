// bbgrap-hls kernel library: convolution = sliding window + matrix-vector unit (MVU).
//
// P (a layer's parameter struct) gives H, W, C, CO, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR,
// SIMD (window elements per cycle), PE (output lanes), ZP_IN, ZP_OUT, LO, HI. SIMD either
// divides C or is C·j with j | KH·KW (FINN's parallel window: j window positions per
// cycle); the input streams at conv_in_lanes(SIMD, C) = min(SIMD, C) lanes. Weights are a
// weight memory of bb_weights.h with NF·SF words, NF = CO/PE neuron folds and SF =
// KH·KW·C/SIMD synapse folds: one wide memory `Word<PE·SIMD> w[NF·SF]` (what gen declares) or
// PE banks `const Word<SIMD> w[PE][NF·SF]`. Lane s of bank pe at address nf·SF + sf is the weight of output
// channel nf·PE + pe and window element k = sf·SIMD + s, where k runs over (ky, kx, c) with
// c innermost (NHWC window order). The caller (the core top) shapes and binds the memory.
// Per-channel constants are [PE][NF] (bias' with -zp_in·Σw folded, mult, shift). Grouped
// convolutions arrive block-diagonal (zeros outside the groups). conv2d_mmv is the same
// convolution with P::M copies of the MVU ("pixel copies") and one CO-lane beat per pixel.
// P::PACK = 2 (optional; bb_pack.h) computes output lanes 2i and 2i+1 with one 27 × 18-bit
// product per input element (DSP packing), bit-exact with the plain products.
#ifndef BBGRAP_CONV2D_H
#define BBGRAP_CONV2D_H

#include "bb_dataflow.h"
#include "bb_pack.h"
#include "bb_weights.h"
#include "bb_window.h"

namespace bb {

/// Input lanes of a conv block: SIMD, or C with a parallel window (SIMD = C·j).
constexpr int conv_in_lanes(int simd, int c) { return simd < c ? simd : c; }

/// P::GROUPS when the layer's struct declares it (a grouped conv), else 1.
template <class P, class = void>
struct GroupsOf {
  static constexpr int value = 1;
};
template <class P>
struct GroupsOf<P, typename VoidOf<decltype(P::GROUPS)>::type> {
  static constexpr int value = P::GROUPS;
};
template <class P>
constexpr int groups_of() {
  return GroupsOf<P>::value;
}

/// P::WIDE when the layer's struct declares it (a grouped conv's window generator taking whole
/// pixels, each group a slice of the word it reads), else 0.
template <class P, class = void>
struct WideOf {
  static constexpr int value = 0;
};
template <class P>
struct WideOf<P, typename VoidOf<decltype(P::WIDE)>::type> {
  static constexpr int value = P::WIDE;
};

/// The geometry of a conv layer P, shared by its DATAFLOW processes. A grouped conv
/// (P::GROUPS = GR > 1, not depthwise) computes its groups in turn: each output channel over
/// its own group's window of CG = C/GR channels (K = KH·KW·CG weights a row), the window
/// emitted group by group; NG = NF/GR folds a group, the group's first fold reading the
/// group's window from the stream and the others reusing it. With P::WIDE (SIMD a multiple of
/// CG) the window generator takes whole pixels (IN = C lanes) and emits each tap's group
/// channels as the CG-lane slice gr·CG of the word it reads (OL = CG lanes a tap).
template <class P>
struct ConvGeom {
  static constexpr int GR = groups_of<P>(), CG = P::C / GR;
  static_assert(P::C % GR == 0 && P::CO % (GR * P::PE) == 0, "conv: GROUPS | C, PE·GROUPS | CO");
  static_assert(CG % P::SIMD == 0 || P::SIMD % CG == 0, "conv: SIMD | C/GROUPS, or SIMD = C/GROUPS*j (parallel window)");
  static_assert((P::KH * P::KW * CG) % P::SIMD == 0, "conv: SIMD | KH*KW*C/GROUPS (parallel window: j | KH*KW)");
  static constexpr bool WIDE = WideOf<P>::value != 0;
  static_assert(!WIDE || (GR > 1 && P::SIMD % CG == 0), "conv: WIDE needs GROUPS > 1 and C/GROUPS | SIMD");
  static constexpr int IN = WIDE ? P::C : conv_in_lanes(P::SIMD, CG);
  static constexpr int OL = WIDE ? CG : IN;  // lanes of a tap in a window beat
  static constexpr int K = P::KH * P::KW * CG, SF = K / P::SIMD, NF = P::CO / P::PE, NG = NF / GR;
  static constexpr int HP = P::H + P::PT + P::PB, WP = P::W + P::PL + P::PR;
  static constexpr int R = span(P::KH, P::DH);
  static constexpr int HO = out_len(HP, P::KH, P::SH, P::DH), WO = out_len(WP, P::KW, P::SW, P::DW);
};

/// conv_swg's loop over the ring `rows` that conv_swg declares (see conv_swg).
template <class P, class Ring>
void conv_swg_loop(Ring& rows, Stream<ConvGeom<P>::IN>& in, Stream<P::SIMD>& win, int frames) {
  BB_HLS(INLINE)
  using G = ConvGeom<P>;
  constexpr int IN = G::IN, OL = G::OL, J = P::SIMD / OL, K = P::KH * P::KW, WO = G::WO;
  using S = WindowRows<P::H, P::W, P::C, IN, P::PT, P::PL, P::PB, P::PR, P::KH, P::DH, P::SH, ring_of<P>()>;
  constexpr int CB = S::CB;
  RingPort<S, ring_uram<P>()> port;
  const long n_in = static_cast<long>(frames) * S::IN_BEATS;
  constexpr int GR = G::GR, CBG = G::WIDE ? 1 : CB / GR;  // channel blocks of a group
  const long n_out = static_cast<long>(frames) * G::HO * WO * G::SF * GR;
  S s;
  int ox = 0, col0 = 0, tb = 0, cb = 0, gr = 0;  // window ox (column ox·SW), its first tap, channel block, group
  long nr = 0, nw = 0;
BB_LOOP(swg_beat)
  while (nr < n_in || nw < n_out) {
    BB_PIPELINE_OVERLAP(1)
    BB_HLS(DEPENDENCE variable = rows type = inter dependent = false)  // reads only complete rows
    BB_HLS(DEPENDENCE variable = rows type = intra dependent = false)  // the written row is not one of them
    // non-blocking both ways, as the RTL swg's writer and reader: an empty input never holds
    // back a window that is ready, a full output never holds back the rows
    const bool rd_due = nr < n_in && s.can_read(), wr_due = nw < n_out && s.can_emit();
    const bool pad = s.pad_beat();
    const bool rd = rd_due && (pad || !in.empty()), wr = wr_due && !win.full();
    if (!rd && !wr) {
      BB_IDLE(rd_due && !pad ? &in : nullptr, wr_due ? &win : nullptr)
    }
    if (wr) {
      Beat<P::SIMD> b;
      for (int j = 0; j < J; ++j) {
        const int t = tb + j, ky = t / P::KW, kx = t % P::KW;
        const int word = (s.slot(ky * P::DH) * S::WP + col0 + kx * P::DW) * CB + (G::WIDE ? 0 : gr * CBG + cb);
        const int lane0 = G::WIDE ? gr * OL : 0;  // the group's slice of a whole pixel
        const Beat<IN> x = port.read(rows, j, word);
        for (int i = 0; i < OL; ++i) b.d[j * OL + i] = x.d[lane0 + i];
      }
      win.write(b);
      ++nw;
      if (++cb == CBG) {
        cb = 0;
        tb += J;
        if (tb == K && ++gr < GR) tb = 0;  // the next group's taps
        if (tb == K) {
          tb = 0;
          gr = 0;
          col0 += P::SW;
          if (++ox == WO) {
            ox = 0;
            col0 = 0;
            s.row_done();
          }
        }
      }
    }
    if (rd) {
      Beat<IN> b;
      if (pad) {
        for (int i = 0; i < IN; ++i) b.d[i] = static_cast<int8_t>(P::ZP_IN);
      } else {
        b = in.read();
      }
      port.write(rows, s.word(), b);
      s.wrote();
      ++nr;
    }
  }
  BB_COUNT_OVERLAP(1, nr, nw)
}

/// Sliding-window generator of conv2d and conv2d_mmv (DATAFLOW process 1): one pipelined
/// loop (bb_window.h's schedule) that takes the next input beat into the row buffer while
/// rows are due and emits the next window beat while the current output row's rows are
/// complete; windows in raster order, each as SF beats of SIMD elements in (ky, kx, c)
/// order (a grouped conv: GR·SF beats, group by group, each over the group's CG channels).
/// A beat holds J = SIMD/IN taps (the parallel window; else one tap's SIMD channels):
/// lane block j reads buffer copy j, so every memory sees one read and one write per cycle.
/// The ring: one memory a (copy, lane), or with P::RING_URAM (bb_window.h) one URAM a copy
/// of RING_URAM·IN-lane words; the loop is conv_swg_loop's.
template <class P>
void conv_swg(Stream<ConvGeom<P>::IN>& in, Stream<P::SIMD>& win, int frames) {
  using G = ConvGeom<P>;
  constexpr int IN = G::IN, J = P::SIMD / G::OL, RU = ring_uram<P>();
  using S = WindowRows<P::H, P::W, P::C, IN, P::PT, P::PL, P::PB, P::PR, P::KH, P::DH, P::SH, ring_of<P>()>;
  if constexpr (RU == 0) {
    static int8_t rows[J][S::WORDS][IN];
    BB_HLS(ARRAY_PARTITION variable = rows complete dim = 1)
    BB_HLS(ARRAY_PARTITION variable = rows complete dim = 3)
    conv_swg_loop<P>(rows, in, win, frames);
  } else {
    static Word<RU * IN> ring[J][S::WORDS / RU];
    BB_HLS(AGGREGATE variable = ring compact = bit)
    BB_HLS(ARRAY_PARTITION variable = ring complete dim = 1)
    BB_HLS(BIND_STORAGE variable = ring type = ram_s2p impl = uram)
    conv_swg_loop<P>(ring, in, win, frames);
  }
}

/// conv2d's matrix-vector unit (DATAFLOW process 2): per output pixel one flattened loop
/// over the NF·SF weight words; during fold 0 (nf = 0) it takes the window's beat sf from
/// the stream and keeps it in `win` for folds 1..NF-1 (a grouped conv: at each group's first
/// fold, nf mod NG = 0, the group's window, kept for the group's other folds).
template <class P, class W>
void conv_mvu(Stream<P::SIMD>& in, Stream<P::PE>& out, const W* w, const int32_t bias[P::PE][P::CO / P::PE],
              const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
              int frames) {
  using G = ConvGeom<P>;
  constexpr int K = G::K, SF = G::SF, NF = G::NF, NG = G::NG;
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  int8_t win[K];  // the current window (the RTL mvu's input vector memory)
  BB_HLS(ARRAY_PARTITION variable = win cyclic factor = P::SIMD)
  int32_t acc[P::PE] = {};  // (set at sf = 0; initialised for g++ -Wmaybe-uninitialized)
  BB_HLS(ARRAY_PARTITION variable = acc complete)
BB_LOOP(mvu_px)
  for (long p = 0; p < static_cast<long>(frames) * G::HO * G::WO; ++p) {
  BB_LOOP(mvu_word)  // weight word i = nf·SF + sf
    for (int i = 0; i < NF * SF; ++i) {
      BB_PIPELINE(1)
      const int nf = i / SF, sf = i % SF;
      int8_t x[P::SIMD];
      BB_HLS(ARRAY_PARTITION variable = x complete)
      if (nf % NG == 0) {  // the (group's) first fold: the window from the stream
        const Beat<P::SIMD> b = in.read();
        for (int s = 0; s < P::SIMD; ++s) {
          x[s] = b.d[s];
          win[sf * P::SIMD + s] = b.d[s];
        }
      } else {
        for (int s = 0; s < P::SIMD; ++s) x[s] = win[sf * P::SIMD + s];
      }
      int8_t wv[P::PE][P::SIMD];
      BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
      weight_word<P::PE, P::SIMD>(w, i, wv);
      Beat<P::PE> o;
      int32_t a[P::PE];
      BB_HLS(ARRAY_PARTITION variable = a complete)
      for (int pe = 0; pe < P::PE; ++pe) a[pe] = sf == 0 ? bias[pe][nf] : acc[pe];
      mac_lanes<pack_of<P>(), P::PE, P::SIMD>(x, wv, a);
      for (int pe = 0; pe < P::PE; ++pe) {
        acc[pe] = a[pe];
        o.d[pe] = requant_with<rq_lut_of<P>()>(a[pe], mult[pe][nf], shift[pe][nf], P::ZP_OUT, P::LO, P::HI);
      }
      if (sf == SF - 1) out.write(o);
    }
  }
}

/// Convolution: a DATAFLOW region of the window generator (conv_swg) and the MVU
/// (conv_mvu) joined by a stream of SIMD-element window beats; each process loops over
/// the frames itself (the row buffer is conv_swg's, the window buffer conv_mvu's).
///
/// Schedule (docs/codegen.md "Kernel schedules"), both processes at II = 1, per frame:
///   conv_swg   max(HP·WP·C/IN, HO·WO·SF) cycles: input rows read in the same iterations as
///              windows are emitted (bb_window.h), a window as SF beats;
///   conv_mvu   HO·WO·NF·SF cycles: fold 0 reads the window (SF beats) as it multiplies,
///              folds 1..NF-1 reuse it; one PE-lane beat out per fold.
/// The processes overlap, so a frame costs the larger of the two, the cost model's conv ii
/// (the RTL's swg ∥ mvu). The window stream (`conv_win`) is set to two windows, 2·SF beats:
/// conv_swg builds window n+1 while conv_mvu folds window n.
/// Sequential C simulation runs conv_swg to the end before conv_mvu: the stream (unbounded
/// there, see hls_stream_shim.h) then holds all frames' windows, frames·HO·WO·SF beats; the
/// threaded one (bb_dataflow.h) runs both as threads over a stream of WIN_DEPTH beats.
template <class P, class W>
void conv2d(Stream<ConvGeom<P>::IN>& in, Stream<P::PE>& out, const W* w,
            const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
            const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  [[maybe_unused]] constexpr int WIN_DEPTH = 2 * ConvGeom<P>::SF;
  BB_HLS(DATAFLOW)
  Stream<P::SIMD> win("conv_win");
  BB_HLS(STREAM variable = win depth = WIN_DEPTH)
  BB_FIFO_DEPTH(win, WIN_DEPTH)
  BB_DATAFLOW_REGION()  // threaded C simulation: the two processes as threads (bb_dataflow.h)
  BB_PROCESS(conv_swg<P>(in, win, frames);)
  BB_PROCESS(conv_mvu<P>(win, out, w, bias, mult, shift, frames);)
}

/// Pixels in group t of M consecutive pixels of `pixels` (M, or fewer for the last group).
inline int mmv_group(long pixels, long t, int m) {
  BB_HLS(INLINE)
  return static_cast<int>(pixels - t * m < m ? pixels - t * m : m);
}

/// The matrix-vector units of conv2d_mmv (H = 1) and conv2d_pairs with PO = 2 (H = 2), the
/// body of conv_mvu_mmv and conv_mvu_pairs: P::M copies in H halves of Q = M/H, half h
/// folding output columns ≡ h (mod H). A unit is H horizontally adjacent output pixels (a
/// pixel, or a pixel pair: even pixel in half 0); units come in groups of Q consecutive units
/// in raster order over all rows and frames (the last group of the call may hold fewer),
/// groups t = 0, 1, ...: the cost model's round robin of pixels over the copies. A unit's
/// window arrives as SF beats of H·SIMD lanes (half h's in lanes [h·SIMD, (h+1)·SIMD)), its
/// pixels leave as one beat of H·CO lanes (half h's in [h·CO, (h+1)·CO)). One loop over
/// groups × NF·SF weight words, each read once and shared by the M copies. Window buffers
/// ping-pong: while the copies fold group t from buffer t mod 2, the fold's first iterations
/// write group t-1's units (<= Q <= NF·SF beats) from the other pixel buffer and its last
/// ones take group t+1's beats (<= Q·SF <= NF·SF) into the other window buffer (so a unit
/// never waits for windows two groups on); group 0 is read before the first fold and the
/// last group's units written after the last. Inlined: the wrapper is the DATAFLOW process.
template <class P, int H, class W>
void conv_mvu_group(Stream<H * P::SIMD>& in, Stream<H * P::CO>& out, const W* w,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  BB_HLS(INLINE)
  static_assert(H >= 1 && P::M % H == 0, "conv_mvu_group: H | M");
  using G = ConvGeom<P>;
  constexpr int K = G::K, SF = G::SF, NF = G::NF, Q = P::M / H, S = P::SIMD, CO = P::CO;
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  static int8_t win[2][H][Q][K];  // [buffer][half][copy m's window]
  BB_HLS(ARRAY_PARTITION variable = win complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = win complete dim = 2)
  BB_HLS(ARRAY_PARTITION variable = win complete dim = 3)
  BB_HLS(ARRAY_PARTITION variable = win cyclic factor = P::SIMD dim = 4)
  int32_t acc[H][Q][P::PE];  // [half][copy]
  BB_HLS(ARRAY_PARTITION variable = acc complete dim = 0)
  int8_t px[2][Q][H * CO];  // [buffer][the group's units: half 0's CO, half 1's CO, ...]
  BB_HLS(ARRAY_PARTITION variable = px complete dim = 0)
  const long units = static_cast<long>(frames) * G::HO * (G::WO / H);
  const long groups = (units + Q - 1) / Q;
  const int first = groups > 0 ? mmv_group(units, 0, Q) * SF : 0;  // group 0's beats
BB_LOOP(group_first)  // group 0's windows
  for (int i = 0; i < first; ++i) {
    BB_PIPELINE(1)
    const Beat<H * S> b = in.read();
    for (int h = 0; h < H; ++h)
      for (int s = 0; s < S; ++s) win[0][h][i / SF][(i % SF) * S + s] = b.d[h * S + s];
  }
  long t = 0;
  int i = 0, nf = 0, sf = 0;  // weight word i = nf·SF + sf of group t
  int next = groups > 1 ? mmv_group(units, 1, Q) * SF : 0, prev = 0;  // group t+1's beats, group t-1's units
BB_LOOP(group_fold)  // groups × NF·SF words, each shared by the M copies
  for (long it = 0; it < groups * (NF * SF); ++it) {
    BB_PIPELINE(1)
    BB_HLS(DEPENDENCE variable = win type = inter dependent = false)  // writes go to the other buffer
    BB_HLS(DEPENDENCE variable = px type = inter dependent = false)   // reads come from the other buffer
    const int cur = static_cast<int>(t % 2);
    if (i >= NF * SF - next) {  // at the end of the fold: group t's units never wait for them
      const int k = i - (NF * SF - next);
      const Beat<H * S> b = in.read();
      for (int h = 0; h < H; ++h)
        for (int s = 0; s < S; ++s) win[1 - cur][h][k / SF][(k % SF) * S + s] = b.d[h * S + s];
    }
    if (i < prev) {
      Beat<H * CO> o;
      for (int co = 0; co < H * CO; ++co) o.d[co] = px[1 - cur][i][co];
      out.write(o);
    }
    int8_t wv[P::PE][P::SIMD];
    BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
    weight_word<P::PE, P::SIMD>(w, i, wv);
    for (int h = 0; h < H; ++h) {
      for (int m = 0; m < Q; ++m) {
        int32_t a[P::PE];
        BB_HLS(ARRAY_PARTITION variable = a complete)
        for (int pe = 0; pe < P::PE; ++pe) a[pe] = sf == 0 ? bias[pe][nf] : acc[h][m][pe];
        mac_lanes<pack_of<P>(), P::PE, P::SIMD>(&win[cur][h][m][sf * S], wv, a);
        for (int pe = 0; pe < P::PE; ++pe) {
          acc[h][m][pe] = a[pe];
          if (sf == SF - 1) {
            px[cur][m][h * CO + nf * P::PE + pe] =
                requant_with<rq_lut_of<P>()>(a[pe], mult[pe][nf], shift[pe][nf], P::ZP_OUT, P::LO, P::HI);
          }
        }
      }
    }
    ++i;
    if (++sf == SF) {
      sf = 0;
      ++nf;
    }
    if (i == NF * SF) {  // group t is folded
      i = 0;
      nf = 0;
      prev = mmv_group(units, t, Q);
      ++t;
      next = t + 1 < groups ? mmv_group(units, t + 1, Q) * SF : 0;
    }
  }
  const int last = groups > 0 ? mmv_group(units, groups - 1, Q) : 0, lb = static_cast<int>((groups + 1) % 2);
BB_LOOP(group_last)  // the last group's units
  for (int m = 0; m < last; ++m) {
    BB_PIPELINE(1)
    Beat<H * CO> o;
    for (int co = 0; co < H * CO; ++co) o.d[co] = px[lb][m][co];
    out.write(o);
  }
}

/// conv2d_mmv's M matrix-vector units (DATAFLOW process 2): conv_mvu_group with one half,
/// groups of M consecutive output pixels (one CO-lane beat each) folded by the M copies.
template <class P, class W>
void conv_mvu_mmv(Stream<P::SIMD>& in, Stream<P::CO>& out, const W* w, const int32_t bias[P::PE][P::CO / P::PE],
                  const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                  int frames) {
  conv_mvu_group<P, 1>(in, out, w, bias, mult, shift, frames);
}

/// Convolution with M copies of the matrix-vector unit ("pixel copies", P::M = M with
/// 2 <= M <= NF) behind one window generator: copy m computes output pixels ox ≡ m (mod M)
/// of each output row. P is conv2d's struct plus M; weights and constants are conv2d's
/// (one memory, each word read once per cycle and shared by the M copies). The output
/// streams one whole pixel per beat (CO lanes), pixels in raster order.
///
/// A DATAFLOW region like conv2d: conv_swg (the same window stream, a group's M windows
/// one after the other) and conv_mvu_mmv. Schedule, per group of M consecutive output
/// pixels (raster order across rows and frames):
///   conv_swg       M·SF window beats (its loop as in conv2d);
///   conv_mvu_mmv   NF·SF cycles (mmv_fold, II = 1): weight word nf·SF + sf read once,
///                  M·PE·SIMD products per cycle (copy m's PE accumulators and its window
///                  partitioned, a DSP/LUT array per copy); in the same iterations the
///                  previous group's M pixels leave (one Beat<CO> each) and the next group's
///                  windows arrive in the other buffer; at sf = SF-1 the M·PE sums
///                  requantise into the pixel buffer.
/// So per frame HO·WO·NF·SF/M cycles, the cost model's ceil(Ho·Wo·sf·nf/M) (a group never
/// stops at a row's end). The window stream is set to 2·M·SF beats (two groups); C
/// simulation holds all frames' windows in it, as for conv2d.
template <class P, class W>
void conv2d_mmv(Stream<conv_in_lanes(P::SIMD, P::C)>& in, Stream<P::CO>& out, const W* w,
                const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  static_assert(P::M >= 2 && P::M <= P::CO / P::PE, "conv2d_mmv: 2 <= M <= CO/PE");
  [[maybe_unused]] constexpr int WIN_DEPTH = 2 * P::M * ConvGeom<P>::SF;
  BB_HLS(DATAFLOW)
  Stream<P::SIMD> win("conv_mmv_win");
  BB_HLS(STREAM variable = win depth = WIN_DEPTH)
  BB_FIFO_DEPTH(win, WIN_DEPTH)
  BB_DATAFLOW_REGION()
  BB_PROCESS(conv_swg<P>(in, win, frames);)
  BB_PROCESS(conv_mvu_mmv<P>(win, out, w, bias, mult, shift, frames);)
}

/// conv2d_pairs' window generator (DATAFLOW process 1): conv_swg for an input of two
/// horizontally adjacent pixels a beat (Stream<2·C>: pixel (y, 2u) in lanes [0, C),
/// (y, 2u+1) in [C, 2C)) and SIMD = C·J. The row buffer holds each padded row as even and
/// odd column banks (`rows[j][bank][word][c]`, word slot·WQ + x/2, WQ = ceil(Wp/2)): a read
/// iteration writes padded column pair q (columns 2q, 2q+1) into both banks at once, so a
/// frame takes Hp·WQ read iterations. With PL even a pair is one input beat (or padding);
/// with PL odd column 2q holds the odd pixel of the beat read at pair q-1 (kept in `last`)
/// and column 2q+1 the even pixel of the beat read now. Windows as conv_swg's (raster
/// order, SF beats of J taps each, lane block j from buffer copy j); with PO = 2 a beat holds
/// the same taps of two windows, output columns 2v (lanes [0, SIMD)) and 2v+1 ([SIMD,
/// 2·SIMD)): stride 1 puts a tap of the two in adjacent columns, one in each bank, so every
/// (copy, bank, lane) memory still sees one read and one write per iteration.
template <class P, int PO>
void conv_swg_pairs(Stream<2 * P::C>& in, Stream<PO * P::SIMD>& win, int frames) {
  using G = ConvGeom<P>;
  constexpr int C = P::C, J = P::SIMD / C, K = P::KH * P::KW, WQ = (G::WP + 1) / 2;
  constexpr int BE = P::PL % 2;       // the bank of an input beat's even pixel
  constexpr int WOB = G::WO / PO;     // window beats' columns per output row: pixels or pixel pairs
  using S = WindowRows<P::H, WQ, 1, 1, P::PT, 0, P::PB, 0, P::KH, P::DH, P::SH>;  // x: the column pair
  static_assert(ring_uram<P>() == 0, "conv2d_pairs: RING_URAM is for one pixel a beat (conv_swg), not a pixel pair");
  static int8_t rows[J][2][S::WORDS][C];
  BB_HLS(ARRAY_PARTITION variable = rows complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = rows complete dim = 2)
  BB_HLS(ARRAY_PARTITION variable = rows complete dim = 4)
  Beat<2 * C> last = {};  // the last input beat read
  const long n_in = static_cast<long>(frames) * S::IN_BEATS;  // Hp·WQ a frame
  const long n_out = static_cast<long>(frames) * G::HO * WOB * G::SF;
  S s;
  int ox = 0, col0 = 0, tb = 0;  // window (pair) ox, its first column, its first tap
  long nr = 0, nw = 0;
BB_LOOP(swg_pairs_beat)
  while (nr < n_in || nw < n_out) {
    BB_PIPELINE_OVERLAP(1)
    BB_HLS(DEPENDENCE variable = rows type = inter dependent = false)  // reads only complete rows
    BB_HLS(DEPENDENCE variable = rows type = intra dependent = false)  // the written row is not one of them
    const int x0 = 2 * s.x;  // the pair's even column
    const bool row_pad = s.pad_beat();
    const bool real0 = !row_pad && x0 >= P::PL && x0 < P::PL + P::W;
    const bool real1 = !row_pad && x0 + 1 >= P::PL && x0 + 1 < P::PL + P::W;
    const bool take = BE == 0 ? real0 : real1;  // an even input column in the pair: a new beat
    const bool rd_due = nr < n_in && s.can_read(), wr_due = nw < n_out && s.can_emit();
    const bool rd = rd_due && (!take || !in.empty()), wr = wr_due && !win.full();
    if (!rd && !wr) {
      BB_IDLE(rd_due && take ? &in : nullptr, wr_due ? &win : nullptr)
    }
    if (wr) {
      Beat<PO * P::SIMD> b;
      for (int j = 0; j < J; ++j) {
        const int t = tb + j, ky = t / P::KW, kx = t % P::KW;
        const int base = s.slot(ky * P::DH) * WQ, c0 = col0 + kx * P::DW;  // the tap's column (window 0)
        if constexpr (PO == 2) {  // columns c0 and c0+1: one even, one odd
          const int odd = c0 % 2, a0 = base + (c0 + 1) / 2, a1 = base + c0 / 2;
          for (int i = 0; i < C; ++i) {
            const int8_t v0 = rows[j][0][a0][i], v1 = rows[j][1][a1][i];
            b.d[j * C + i] = odd ? v1 : v0;
            b.d[P::SIMD + j * C + i] = odd ? v0 : v1;
          }
        } else {
          const int bank = c0 % 2, a = base + c0 / 2;
          for (int i = 0; i < C; ++i) b.d[j * C + i] = rows[j][bank][a][i];
        }
      }
      win.write(b);
      ++nw;
      tb += J;
      if (tb == K) {
        tb = 0;
        col0 += PO * P::SW;
        if (++ox == WOB) {
          ox = 0;
          col0 = 0;
          s.row_done();
        }
      }
    }
    if (rd) {
      const Beat<2 * C> nb = take ? in.read() : last;
      const int word = s.word();
      for (int i = 0; i < C; ++i) {
        // the pair's pixel from the even input column (this beat's first) and from the odd one
        // (this beat's second with PL even, the last beat's with PL odd)
        const int8_t ev = nb.d[i], od = BE == 0 ? nb.d[C + i] : last.d[C + i];
        const int8_t v0 = real0 ? (BE == 0 ? ev : od) : static_cast<int8_t>(P::ZP_IN);
        const int8_t v1 = real1 ? (BE == 0 ? od : ev) : static_cast<int8_t>(P::ZP_IN);
        for (int j = 0; j < J; ++j) {
          rows[j][0][word][i] = v0;
          rows[j][1][word][i] = v1;
        }
      }
      last = nb;
      s.wrote();
      ++nr;
    }
  }
  BB_COUNT_OVERLAP(1, nr, nw)
}

/// conv2d_pairs' matrix-vector units with PO = 2 (DATAFLOW process 2): conv_mvu_group with
/// its M copies as two halves of Q = M/2, half 0 folding even output columns and half 1 odd
/// ones. A group is Q consecutive pixel pairs (raster order across rows and frames, the
/// call's last group may hold fewer); its windows arrive as Q·SF beats of both halves'
/// SIMD lanes, its pixels leave as Q beats of 2·CO lanes (even pixel first); the first Q
/// iterations of group t's fold write group t-1's pairs, its last Q·SF (<= NF·SF, Q <= NF)
/// take group t+1's windows.
template <class P, class W>
void conv_mvu_pairs(Stream<2 * P::SIMD>& in, Stream<2 * P::CO>& out, const W* w,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  conv_mvu_group<P, 2>(in, out, w, bias, mult, shift, frames);
}

/// Output lanes of conv2d_pairs: a pixel pair (2·CO) with PO = 2; with PO = 1 a whole pixel
/// (CO, as conv2d_mmv) when M > 1, PE lanes (as conv2d) when M = 1.
template <class P>
constexpr int pairs_out_lanes() {
  return P::PO == 2 ? 2 * P::CO : P::M > 1 ? P::CO : P::PE;
}

/// conv2d_pairs' MVU with PO = 1 (DATAFLOW process 2): conv_mvu_mmv (M > 1) or conv_mvu (M = 1).
template <class P, class W>
void conv_pairs_mvu1(Stream<P::SIMD>& in, Stream<pairs_out_lanes<P>()>& out, const W* w,
                     const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                     const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  if constexpr (P::M > 1) {
    conv_mvu_mmv<P>(in, out, w, bias, mult, shift, frames);
  } else {
    conv_mvu<P>(in, out, w, bias, mult, shift, frames);
  }
}

/// conv2d_pairs with PO = 1: conv_swg_pairs → Stream<SIMD> → conv_mvu_mmv or conv_mvu.
template <class P, class W>
void conv2d_pairs_po1(Stream<2 * P::C>& in, Stream<pairs_out_lanes<P>()>& out, const W* w,
                      const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                      const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  [[maybe_unused]] constexpr int WIN_DEPTH = 2 * P::M * ConvGeom<P>::SF;
  BB_HLS(DATAFLOW)
  Stream<P::SIMD> win("conv_pairs_win");
  BB_HLS(STREAM variable = win depth = WIN_DEPTH)
  BB_FIFO_DEPTH(win, WIN_DEPTH)
  BB_DATAFLOW_REGION()
  BB_PROCESS(conv_swg_pairs<P, 1>(in, win, frames);)
  BB_PROCESS(conv_pairs_mvu1<P>(win, out, w, bias, mult, shift, frames);)
}

/// conv2d_pairs with PO = 2: conv_swg_pairs → Stream<2·SIMD> (both windows' beat) → conv_mvu_pairs.
template <class P, class W>
void conv2d_pairs_po2(Stream<2 * P::C>& in, Stream<2 * P::CO>& out, const W* w,
                      const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                      const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  [[maybe_unused]] constexpr int WIN_DEPTH = 2 * (P::M / 2) * ConvGeom<P>::SF;  // two groups
  BB_HLS(DATAFLOW)
  Stream<2 * P::SIMD> win("conv_pairs_win");
  BB_HLS(STREAM variable = win depth = WIN_DEPTH)
  BB_FIFO_DEPTH(win, WIN_DEPTH)
  BB_DATAFLOW_REGION()
  BB_PROCESS(conv_swg_pairs<P, 2>(in, win, frames);)
  BB_PROCESS(conv_mvu_pairs<P>(win, out, w, bias, mult, shift, frames);)
}

/// Convolution over a paired pixel stream: conv2d_mmv's struct plus PX and PO. PX = 2: the
/// input carries two horizontally adjacent pixels a beat (the NHWC byte stream at 2·C
/// lanes); needs W even and SIMD = C·J (J | KH·KW, J = 1 allowed). The window generator
/// (conv_swg_pairs) writes both pixels of a beat in one iteration, Hp·ceil(Wp/2) a frame.
///  - PO = 2 (SW = 1, Wo even, M even, 2 <= M, M/2 <= CO/PE): two output pixels a beat
///    (2·CO lanes, output column 2v in [0, CO), 2v+1 in [CO, 2·CO)); M copies of the MVU in
///    two halves of M/2, even and odd output columns, in one pipelined loop
///    (conv_mvu_pairs). Per frame max(Hp·ceil(Wp/2), Ho·Wo·SF·NF/M) iterations: the
///    generator's reads, or the MVU's Ho·Wo/M groups of NF·SF (the generator's Ho·Wo·SF/2
///    window beats are never more, M/2 <= NF).
///  - PO = 1 (any stride, e.g. a stride-2 conv after a paired stream): the output is
///    conv2d_mmv's, one whole pixel a beat (CO lanes), when M > 1 (M <= CO/PE), and conv2d's,
///    PE lanes a beat, when M = 1; per frame max(Hp·ceil(Wp/2), Ho·Wo·SF·NF/M).
/// Weights, constants, DSP packing (P::PACK = 2) and the requantisation are conv2d's.
template <class P, class W>
void conv2d_pairs(Stream<2 * P::C>& in, Stream<pairs_out_lanes<P>()>& out, const W* w,
                  const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                  const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  BB_HLS(INLINE)
  using G = ConvGeom<P>;
  static_assert(P::PX == 2, "conv2d_pairs: PX = 2 (one pixel a beat is conv2d / conv2d_mmv)");
  static_assert(P::W % 2 == 0, "conv2d_pairs: W even (a beat holds input columns 2u and 2u+1)");
  static_assert(P::SIMD % P::C == 0, "conv2d_pairs: SIMD = C*J (a window beat holds whole pixels)");
  static_assert(P::PO == 1 || P::PO == 2, "conv2d_pairs: PO = 1 or 2");
  static_assert(P::PO == 1 || P::SW == 1, "conv2d_pairs: PO = 2 needs stride 1 along W");
  static_assert(P::PO == 1 || G::WO % 2 == 0, "conv2d_pairs: PO = 2 needs Wo even");
  static_assert(P::PO == 1 || (P::M % 2 == 0 && P::M >= 2), "conv2d_pairs: PO = 2 needs M even and >= 2");
  static_assert(P::PO == 1 || P::M / 2 <= G::NF, "conv2d_pairs: PO = 2 needs M/2 <= CO/PE");
  static_assert(P::PO == 2 || (P::M >= 1 && P::M <= G::NF), "conv2d_pairs: PO = 1 needs 1 <= M <= CO/PE");
  if constexpr (P::PO == 2) {
    conv2d_pairs_po2<P>(in, out, w, bias, mult, shift, frames);
  } else {
    conv2d_pairs_po1<P>(in, out, w, bias, mult, shift, frames);
  }
}

/// Dense (fully connected) layer: a matrix-vector unit over a C-element input vector.
/// P gives C, CO, SIMD, PE, ZP_OUT, LO, HI; weights (NF·C/SIMD words) and constants as in
/// conv2d (K = C). One pipelined loop of NF·SF iterations per frame, as conv_mvu: fold 0
/// takes the vector's beat sf as it multiplies and keeps it for folds 1..NF-1.
template <class P, class W>
void dense(Stream<P::SIMD>& in, Stream<P::PE>& out, const W* w, const int32_t bias[P::PE][P::CO / P::PE],
           const int32_t mult[P::PE][P::CO / P::PE],
           const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  static_assert(P::C % P::SIMD == 0 && P::CO % P::PE == 0, "dense: SIMD | C and PE | CO");
  constexpr int SF = P::C / P::SIMD, NF = P::CO / P::PE;
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  static int8_t vec[P::C];
  BB_HLS(ARRAY_PARTITION variable = vec cyclic factor = P::SIMD)
  int32_t acc[P::PE] = {};
  BB_HLS(ARRAY_PARTITION variable = acc complete)
  int nf = 0, sf = 0;
BB_LOOP(dense_word)  // weight word nf·SF + sf of the current frame
  for (long i = 0; i < static_cast<long>(frames) * (NF * SF); ++i) {
    BB_PIPELINE(1)
    int8_t x[P::SIMD];
    BB_HLS(ARRAY_PARTITION variable = x complete)
    if (nf == 0) {
      const Beat<P::SIMD> b = in.read();
      for (int s = 0; s < P::SIMD; ++s) {
        x[s] = b.d[s];
        vec[sf * P::SIMD + s] = b.d[s];
      }
    } else {
      for (int s = 0; s < P::SIMD; ++s) x[s] = vec[sf * P::SIMD + s];
    }
    int8_t wv[P::PE][P::SIMD];
    BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
    weight_word<P::PE, P::SIMD>(w, nf * SF + sf, wv);
    int32_t a[P::PE];
    BB_HLS(ARRAY_PARTITION variable = a complete)
    for (int pe = 0; pe < P::PE; ++pe) a[pe] = sf == 0 ? bias[pe][nf] : acc[pe];
    mac_lanes<pack_of<P>(), P::PE, P::SIMD>(x, wv, a);
    Beat<P::PE> o;
    for (int pe = 0; pe < P::PE; ++pe) {
      acc[pe] = a[pe];
      o.d[pe] = requant_with<rq_lut_of<P>()>(a[pe], mult[pe][nf], shift[pe][nf], P::ZP_OUT, P::LO, P::HI);
    }
    if (sf == SF - 1) out.write(o);
    if (++sf == SF) {
      sf = 0;
      nf = nf + 1 == NF ? 0 : nf + 1;
    }
  }
}

}  // namespace bb

#endif  // BBGRAP_CONV2D_H
