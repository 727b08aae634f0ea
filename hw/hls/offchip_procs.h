// bbgrap-hls kernel library: the four processes of an off-chip-weight convolution / dense
// (conv2d_offchip.h has the frame loops that run them for each choice of frame slots, the
// weight image and the parameter struct): the input frame's store, the weight fetch from the
// m_axi port, the compute fold by fold over the stored frame, and the output frame's emit.
#ifndef BBGRAP_OFFCHIP_PROCS_H
#define BBGRAP_OFFCHIP_PROCS_H

#include "bb_weights.h"
#include "bb_dataflow.h"
#include "bb_pack.h"

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
      int32_t a[P::PE];
      BB_HLS(ARRAY_PARTITION variable = a complete)
      for (int pe = 0; pe < P::PE; ++pe) a[pe] = s == 0 ? bias[pe][nf] : acc[pe];
      mac_lanes<pack_of<P>(), P::PE, P::SIMD>(xv.d, wv, a);  // P::PACK = 2: two products a DSP48E2
      for (int pe = 0; pe < P::PE; ++pe) {
        acc[pe] = a[pe];
        o.d[pe] = requant(a[pe], mult[pe][nf], shift[pe][nf], P::ZP_OUT, P::LO, P::HI);
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

}  // namespace bb

#endif  // BBGRAP_OFFCHIP_PROCS_H
