// bbgrap-hls kernel library: convolution / dense with its weights in board memory, read
// once per frame ("weights reloading"; docs/cost-model.md, "Off-chip weights").
//
// P is conv2d's parameter struct (H, W, C, CO, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, SIMD,
// PE, ZP_IN, ZP_OUT, LO, HI) with SIMD | C (no parallel window, no pixel copies), plus
//   OFF   the layer's first beat in the weight port (its image part starts OFF·DDR_BEAT bytes in),
//   URAM  1: the frame buffers in URAM, 0: in BRAM,
//   ISLOTS (optional, default 2) 2: two input frame slots (ping-pong), 1: one (below),
//   OSLOTS (optional, default 2) 2: two output frame slots (ping-pong), 1: one (below),
//   STAGE (optional, default 0) 1: ISLOTS = 1 with a DDR frame stage (below), then also
//   SOFF  byte offset of the stage's scratch area (region 0) in the core's board-memory
//         image, SREGION bytes per region (a multiple of 4,096).
// dense_offchip takes dense's struct (C, CO, SIMD, PE, ZP_OUT, LO, HI) plus OFF, URAM and
// optionally ISLOTS, OSLOTS, STAGE, SOFF, SREGION.
//
// Weight image (codegen/weights.py, hls/ddr_weights_core<k>.bin): the layer's NF·SF words of
// N = PE·SIMD bytes in address order, word a = nf·SF + sf at byte OFF·DDR_BEAT + a·N, lane
// pe·SIMD + s of a word = the weight of output channel nf·PE + pe, window element
// sf·SIMD + s ((ky, kx, c) order, c innermost): the on-chip ROM's words, back to back. Each
// layer's part is padded to whole beats. The port is read in DDR_BEAT-byte beats (512 bits,
// the width of the Alveo memory controllers' AXI ports).
//
// Per frame, four processes of a DATAFLOW region inside the frame loop (Vitis HLS "dataflow
// in a loop": the frame buffers are ping-pong channels, so three consecutive frames overlap):
//   offchip_store    H·W·C/SIMD cycles: the input stream into the input frame buffer x;
//   offchip_fetch    the frame's NF·SF weight words from the m_axi port, one burst of
//                    ceil(NF·SF·N / DDR_BEAT) beats, repacked into words (max(1, N/DDR_BEAT)
//                    cycles a word) onto a word stream;
//   offchip_compute  SF cycles: fold 0's words into tile half 0; then fold nf = 0..NF-1:
//                    HO·WO·SF cycles (II = 1) over every output pixel, each window read
//                    from x (SIMD elements a cycle, padding = ZP_IN), weights from tile half
//                    nf mod 2, while the words of fold nf+1 arrive in the other half (one a
//                    cycle when the fetch has one); PE requantised channels a pixel into y;
//                    a fold whose next words have not all arrived waits for them at its end;
//   offchip_emit     HO·WO·CO/PE cycles: y pixel-major onto the output stream (PE lanes).
// Bias, multiplier and shift are conv2d's [PE][NF] constants (bias' with -zp_in·Σw folded).
// With ISLOTS = 1 the input frame buffer is one array that offchip_store_compute keeps (a
// static of that process): it stores a frame, then computes it, then stores the next (the
// RTL conv_offchip's ISLOTS = 1 order), beside the fetch and the emit; the producer must hold
// the next frame meanwhile (the planner puts such a block after an off-chip block only:
// docs/cost-model.md, "One input slot").
// With OSLOTS = 1 the output frame buffer is one array, half the output memory, that
// offchip_compute_emit keeps (a static of that process): it computes a frame into it, then
// emits it, then computes the next, so a frame's fold 0 waits until the previous frame's
// output has left (the RTL conv_offchip's OSLOTS = 1 order); the store (x ping-pong) and the
// fetch stay processes of their own. With ISLOTS = OSLOTS = 1 one process,
// offchip_store_compute_emit, keeps both buffers and stores, computes and emits each frame
// in turn, beside the fetch. A consumer slower than the emit then holds back the next
// frame's compute.
// With STAGE = 1 (and ISLOTS = 1) the input passes through a DDR frame stage: offchip_stage.h
// (either OSLOTS).
// C simulation runs the DATAFLOW stages one after another in the kernel's thread; the threaded
// build counts a frame at its slowest stage (BB_STAGE, bb_dataflow.h; codegen/schedule.py
// `offchip_cycles` is the bound).
#ifndef BBGRAP_CONV2D_OFFCHIP_H
#define BBGRAP_CONV2D_OFFCHIP_H

#include <type_traits>

#include "bb_weights.h"
#include "bb_dataflow.h"

namespace bb {

/// The geometry of an off-chip-weight layer P.
template <class P>
struct OffchipGeom {
  static_assert(P::C % P::SIMD == 0, "conv_offchip: SIMD | C (no parallel window)");
  static_assert(P::CO % P::PE == 0, "conv_offchip: PE | CO");
  static constexpr int CB = P::C / P::SIMD;  // channel blocks of a pixel
  static constexpr int SF = P::KH * P::KW * CB, NF = P::CO / P::PE, N = P::PE * P::SIMD;
  static constexpr int HO = out_len(P::H + P::PT + P::PB, P::KH, P::SH, P::DH);
  static constexpr int WO = out_len(P::W + P::PL + P::PR, P::KW, P::SW, P::DW);
  static constexpr int XW = P::H * P::W * CB;  // input frame: words of SIMD elements
  static constexpr int YW = HO * WO * NF;      // output frame: words of PE channels
  static constexpr long WORDS = static_cast<long>(NF) * SF;  // weight words per frame
  static constexpr long BEATS = (WORDS * N + DDR_BEAT - 1) / DDR_BEAT;
};

/// Process 1: the input frame, one SIMD-element word per cycle, pixel-major.
template <class P>
void offchip_store(Stream<P::SIMD>& in, Word<P::SIMD> x[OffchipGeom<P>::XW]) {
BB_LOOP(offchip_store)
  for (int i = 0; i < OffchipGeom<P>::XW; ++i) {
    BB_PIPELINE(1)
    const Beat<P::SIMD> b = in.read();
    Word<P::SIMD> v;
    for (int s = 0; s < P::SIMD; ++s) v.d[s] = b.d[s];
    x[i] = v;
  }
}

/// Process 2: the frame's weight words, read as one sequential burst of beats and repacked
/// into N-byte words: a byte buffer of DDR_BEAT + N lanes emits a word whenever it holds
/// one and takes the next beat whenever less than a word is left, so a word leaves every
/// cycle (N <= DDR_BEAT) or a beat arrives every cycle (N > DDR_BEAT).
template <class P>
void offchip_fetch(const Word<DDR_BEAT>* wddr, Stream<OffchipGeom<P>::N>& wq) {
  using G = OffchipGeom<P>;
  constexpr int N = G::N, B = DDR_BEAT, CAP = DDR_BEAT + G::N;
  int8_t buf[CAP] = {};
  BB_HLS(ARRAY_PARTITION variable = buf complete)
  int have = 0;
  long beat = 0, sent = 0;
BB_LOOP(offchip_fetch)
  while (sent < G::WORDS) {
    BB_PIPELINE(1)
    const bool emit = have >= N;
    if (emit) {
      Beat<N> o;
      for (int j = 0; j < N; ++j) o.d[j] = buf[j];
      wq.write(o);
      ++sent;
    }
    const int keep = emit ? have - N : have;
    const bool take = keep < N && beat < G::BEATS;
    Word<B> bt = {};
    if (take) bt = wddr[P::OFF + beat];  // sequential addresses: one read burst per frame
    for (int j = 0; j < CAP; ++j) {
      const int8_t old = emit ? (j + N < CAP ? buf[j + N] : static_cast<int8_t>(0)) : buf[j];
      buf[j] = take && j >= keep && j < keep + B ? bt.d[j - keep] : old;
    }
    if (take) ++beat;
    have = take ? keep + B : keep;
  }
}

/// Process 3: every output pixel's PE channels fold by fold, weights double-buffered.
template <class P>
void offchip_compute(const Word<P::SIMD> x[OffchipGeom<P>::XW], Stream<OffchipGeom<P>::N>& wq,
                     Word<P::PE> y[OffchipGeom<P>::YW], const int32_t bias[P::PE][P::CO / P::PE],
                     const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE]) {
  using G = OffchipGeom<P>;
  constexpr int SF = G::SF, NF = G::NF, N = G::N, CB = G::CB;
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  Word<N> tile[2 * SF];  // half h holds the SF words of a fold: one memory of PE·SIMD-byte words
  BB_HLS(AGGREGATE variable = tile compact = bit)
  BB_HLS(BIND_STORAGE variable = tile type = ram_2p)
  int32_t acc[P::PE] = {};
  BB_HLS(ARRAY_PARTITION variable = acc complete)
BB_LOOP(offchip_first)  // fold 0's weights before its first product
  for (int s = 0; s < SF; ++s) {
    BB_PIPELINE(1)
    const Beat<N> b = wq.read();
    Word<N> v;
    for (int j = 0; j < N; ++j) v.d[j] = b.d[j];
    tile[s] = v;
  }
BB_LOOP(offchip_fold)
  for (int nf = 0; nf < NF; ++nf) {
    const int cur = (nf % 2) * SF, nxt = SF - cur;
    const int want = nf + 1 < NF ? SF : 0;  // words of fold nf+1 to take during this fold
    int got = 0;
    int oy = 0, ox = 0, ky = 0, kx = 0, cb = 0, s = 0, p = 0;
  BB_LOOP(offchip_mac)  // step (pixel p, word s), s = (ky·KW + kx)·CB + cb
    for (long i = 0; i < static_cast<long>(G::HO) * G::WO * SF; ++i) {
      BB_PIPELINE(1)
      BB_HLS(DEPENDENCE variable = tile type = inter dependent = false)  // writes go to the other half
      if (got < want) {
        Beat<N> b;
        if (wq.read_nb(b)) {
          Word<N> v;
          for (int j = 0; j < N; ++j) v.d[j] = b.d[j];
          tile[nxt + got] = v;
          ++got;
        }
      }
      const int iy = oy * P::SH + ky * P::DH - P::PT, ix = ox * P::SW + kx * P::DW - P::PL;
      const bool inside = iy >= 0 && iy < P::H && ix >= 0 && ix < P::W;
      Word<P::SIMD> xv;
      if (inside) {
        xv = x[(iy * P::W + ix) * CB + cb];
      } else {
        for (int t = 0; t < P::SIMD; ++t) xv.d[t] = static_cast<int8_t>(P::ZP_IN);
      }
      int8_t wv[P::PE][P::SIMD];
      BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
      weight_word<P::PE, P::SIMD>(tile, cur + s, wv);
      Word<P::PE> o;
      for (int pe = 0; pe < P::PE; ++pe) {
        int32_t a = s == 0 ? bias[pe][nf] : acc[pe];
        for (int t = 0; t < P::SIMD; ++t) a += static_cast<int32_t>(xv.d[t]) * static_cast<int32_t>(wv[pe][t]);
        acc[pe] = a;
        o.d[pe] = requant(a, mult[pe][nf], shift[pe][nf], P::ZP_OUT, P::LO, P::HI);
      }
      if (s == SF - 1) y[p * NF + nf] = o;
      // next step: word s+1 of this pixel, or word 0 of the next pixel
      if (s < SF - 1) {
        ++s;
        if (++cb == CB) {
          cb = 0;
          if (++kx == P::KW) {
            kx = 0;
            ++ky;
          }
        }
      } else {
        s = cb = kx = ky = 0;
        ++p;
        if (++ox == G::WO) {
          ox = 0;
          ++oy;
        }
      }
    }
  BB_LOOP(offchip_rest)  // words of fold nf+1 that did not arrive during fold nf
    for (int k = got; k < want; ++k) {
      BB_PIPELINE(1)
      const Beat<N> b = wq.read();
      Word<N> v;
      for (int j = 0; j < N; ++j) v.d[j] = b.d[j];
      tile[nxt + k] = v;
    }
  }
}

/// Process 4: the output frame, pixel-major, PE channels a beat.
template <class P>
void offchip_emit(const Word<P::PE> y[OffchipGeom<P>::YW], Stream<P::PE>& out) {
BB_LOOP(offchip_emit)
  for (int i = 0; i < OffchipGeom<P>::YW; ++i) {
    BB_PIPELINE(1)
    const Word<P::PE> v = y[i];
    Beat<P::PE> b;
    for (int pe = 0; pe < P::PE; ++pe) b.d[pe] = v.d[pe];
    out.write(b);
  }
}

// The frame loop, one per frame-buffer memory (a BIND_STORAGE impl is a literal): DATAFLOW
// inside the loop body makes x and y ping-pong buffers (two frame slots each).
template <class P>
void offchip_frames(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames, std::false_type /* BRAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute<P>(x, wq, y, bias, mult, shift);)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

template <class P>
void offchip_frames(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames, std::true_type /* URAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute<P>(x, wq, y, bias, mult, shift);)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

/// Input slots of P: P::ISLOTS where the struct has it, else 2.
template <class P, class = void>
struct OffchipInSlots : std::integral_constant<int, 2> {};
template <class P>
struct OffchipInSlots<P, std::void_t<decltype(P::ISLOTS)>> : std::integral_constant<int, P::ISLOTS> {};

/// Output slots of P: P::OSLOTS where the struct has it, else 2.
template <class P, class = void>
struct OffchipOutSlots : std::integral_constant<int, 2> {};
template <class P>
struct OffchipOutSlots<P, std::void_t<decltype(P::OSLOTS)>> : std::integral_constant<int, P::OSLOTS> {};

/// ISLOTS = 1: the input frame into the one input slot ``x``, then the frame's folds over it.
template <class P>
void offchip_store_compute(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Word<P::SIMD> x[OffchipGeom<P>::XW],
                           Word<P::PE> y[OffchipGeom<P>::YW], const int32_t bias[P::PE][P::CO / P::PE],
                           const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE]) {
  offchip_store<P>(in, x);
  offchip_compute<P>(x, wq, y, bias, mult, shift);
}

template <class P>
void offchip_store_compute(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Word<P::PE> y[OffchipGeom<P>::YW],
                           const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                           const int32_t shift[P::PE][P::CO / P::PE], std::false_type /* BRAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
}

template <class P>
void offchip_store_compute(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Word<P::PE> y[OffchipGeom<P>::YW],
                           const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                           const int32_t shift[P::PE][P::CO / P::PE], std::true_type /* URAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
}

// ISLOTS = 1: three processes a frame (fetch, store-then-compute, emit); only y is ping-pong.
template <class P>
void offchip_frames_in1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                        const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                        const int32_t shift[P::PE][P::CO / P::PE], int frames, std::false_type /* BRAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_store_compute<P>(in, wq, y, bias, mult, shift, std::false_type());)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

template <class P>
void offchip_frames_in1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                        const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                        const int32_t shift[P::PE][P::CO / P::PE], int frames, std::true_type /* URAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_store_compute<P>(in, wq, y, bias, mult, shift, std::true_type());)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

/// OSLOTS = 1: the frame's folds into the one output slot ``y``, then ``y`` onto the output.
template <class P>
void offchip_compute_emit(const Word<P::SIMD> x[OffchipGeom<P>::XW], Stream<OffchipGeom<P>::N>& wq,
                          Word<P::PE> y[OffchipGeom<P>::YW], Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                          const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE]) {
  offchip_compute<P>(x, wq, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

template <class P>
void offchip_compute_emit(const Word<P::SIMD> x[OffchipGeom<P>::XW], Stream<OffchipGeom<P>::N>& wq,
                          Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                          const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                          std::false_type /* BRAM */) {
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
  offchip_compute_emit<P>(x, wq, y, out, bias, mult, shift);
}

template <class P>
void offchip_compute_emit(const Word<P::SIMD> x[OffchipGeom<P>::XW], Stream<OffchipGeom<P>::N>& wq,
                          Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                          const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                          std::true_type /* URAM */) {
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
  offchip_compute_emit<P>(x, wq, y, out, bias, mult, shift);
}

// OSLOTS = 1 (ISLOTS = 2): three processes a frame (store, fetch, compute-then-emit); only x
// is ping-pong.
template <class P>
void offchip_frames_out1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                         const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                         const int32_t shift[P::PE][P::CO / P::PE], int frames, std::false_type /* BRAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute_emit<P>(x, wq, out, bias, mult, shift, std::false_type());)
    BB_STAGES_END()
  }
}

template <class P>
void offchip_frames_out1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                         const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                         const int32_t shift[P::PE][P::CO / P::PE], int frames, std::true_type /* URAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute_emit<P>(x, wq, out, bias, mult, shift, std::true_type());)
    BB_STAGES_END()
  }
}

/// ISLOTS = OSLOTS = 1: the input frame into the one input slot, its folds into the one
/// output slot, then the output slot onto the output stream; both slots statics of this
/// process.
template <class P>
void offchip_store_compute_emit(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Stream<P::PE>& out,
                                const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                                const int32_t shift[P::PE][P::CO / P::PE], std::false_type /* BRAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

template <class P>
void offchip_store_compute_emit(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Stream<P::PE>& out,
                                const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                                const int32_t shift[P::PE][P::CO / P::PE], std::true_type /* URAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

// ISLOTS = OSLOTS = 1: two processes a frame (fetch, store-then-compute-then-emit); no frame
// buffer is a channel. U: std::false_type (BRAM) or std::true_type (URAM), the process's.
template <class P, class U>
void offchip_frames_in1_out1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                             const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                             const int32_t shift[P::PE][P::CO / P::PE], int frames, U uram) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_store_compute_emit<P>(in, wq, out, bias, mult, shift, uram);)
    BB_STAGES_END()
  }
}

/// STAGE, SOFF and SREGION of P where the struct has STAGE, else 0 (no stage; the DDR frame
/// stage's kernels are in offchip_stage.h).
template <class P, class = void>
struct OffchipStage {
  static constexpr int STAGE = 0;
  static constexpr long SOFF = 0, SREGION = 0;
};
template <class P>
struct OffchipStage<P, std::void_t<decltype(P::STAGE)>> {
  static constexpr int STAGE = P::STAGE;
  static constexpr long SOFF = P::SOFF, SREGION = P::SREGION;
};

/// Convolution whose weights stream from board memory once per frame (see the header).
/// `wddr` is the core's weight port; the layer reads from beat P::OFF on.
template <class P>
void conv2d_offchip(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  constexpr int islots = OffchipInSlots<P>::value, oslots = OffchipOutSlots<P>::value;
  static_assert(islots == 1 || islots == 2, "conv_offchip: ISLOTS is 1 or 2");
  static_assert(oslots == 1 || oslots == 2, "conv_offchip: OSLOTS is 1 or 2");
  static_assert(OffchipStage<P>::STAGE == 0, "conv_offchip: STAGE = 1 takes the scratch pointers sddr_w, sddr_r");
  using U = std::integral_constant<bool, P::URAM != 0>;
  if constexpr (islots == 1 && oslots == 1) {
    offchip_frames_in1_out1<P>(in, out, wddr, bias, mult, shift, frames, U());
  } else if constexpr (islots == 1) {
    offchip_frames_in1<P>(in, out, wddr, bias, mult, shift, frames, U());
  } else if constexpr (oslots == 1) {
    offchip_frames_out1<P>(in, out, wddr, bias, mult, shift, frames, U());
  } else {
    offchip_frames<P>(in, out, wddr, bias, mult, shift, frames, U());
  }
}

/// A dense layer's struct as a 1×1 convolution over one pixel of C channels.
template <class D>
struct DenseAsConv {
  static constexpr int H = 1, W = 1, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1, PT = 0, PL = 0, PB = 0,
                       PR = 0, ZP_IN = 0;
  static constexpr int C = D::C, CO = D::CO, SIMD = D::SIMD, PE = D::PE, ZP_OUT = D::ZP_OUT, LO = D::LO,
                       HI = D::HI, OFF = D::OFF, URAM = D::URAM, ISLOTS = OffchipInSlots<D>::value,
                       OSLOTS = OffchipOutSlots<D>::value, STAGE = OffchipStage<D>::STAGE;
  static constexpr long SOFF = OffchipStage<D>::SOFF, SREGION = OffchipStage<D>::SREGION;
};

/// Dense layer whose weights stream from board memory once per frame: conv2d_offchip on
/// one pixel (the fold loop runs SF = C/SIMD steps per fold).
template <class P>
void dense_offchip(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                   const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                   const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  conv2d_offchip<DenseAsConv<P>>(in, out, wddr, bias, mult, shift, frames);
}

}  // namespace bb

#endif  // BBGRAP_CONV2D_OFFCHIP_H
