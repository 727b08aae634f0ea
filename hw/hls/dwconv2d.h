// bbgrap-hls kernel library: depthwise convolution (vector unit, one filter per channel).
//
// P gives H, W, C, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, LANES (lanes in = lanes out: the
// plan's pe), SIMD (products per cycle: LANES, or LANES·J with J | KH·KW window positions per
// cycle, the parallel window), ZP_IN, ZP_OUT, LO, HI. Weights: a weight memory of
// bb_weights.h with SIMD one-lane banks and CF·K/J words (CF = C/LANES, K = KH·KW): one wide
// memory `Word<SIMD> w[CF·K/J]` (what gen declares) or SIMD banks `const Word<1> w[SIMD][CF·K/J]`. Bank
// p·J + j at address cf·K/J + kf holds the weight of channel cf·LANES + p at window
// position k = kf·J + j, k = ky·KW + kx. Constants [LANES][CF] as in conv2d.
// P::PACK = 0 (optional; bb_pack.h `mul_lane`) computes every product in LUTs (BIND_OP
// impl = fabric; the RTL vvu's PACK = 0, lut_mul.sv) instead of DSP48E2s, bit-exact.
// P::ROWS (a short ring) and P::RING_URAM (the ring in URAM) are optional: bb_window.h.
#ifndef BBGRAP_DWCONV2D_H
#define BBGRAP_DWCONV2D_H

#include "bb_pack.h"
#include "bb_weights.h"
#include "bb_window.h"

namespace bb {

/// dwconv2d's loop (bb_window.h's schedule) over the ring `rows` that dwconv2d declares.
template <class P, class W, class Ring>
void dwconv2d_loop(Ring& rows, Stream<P::LANES>& in, Stream<P::LANES>& out, const W* w,
                   const int32_t bias[P::LANES][P::C / P::LANES], const int32_t mult[P::LANES][P::C / P::LANES],
                   const int32_t shift[P::LANES][P::C / P::LANES], int frames) {
  BB_HLS(INLINE)
  constexpr int K = P::KH * P::KW, CF = P::C / P::LANES, J = P::SIMD / P::LANES, L = P::LANES;
  constexpr int KF = K / J;
  using S = WindowRows<P::H, P::W, P::C, L, P::PT, P::PL, P::PB, P::PR, P::KH, P::DH, P::SH, ring_of<P>()>;
  constexpr int WO = out_len(S::WP, P::KW, P::SW, P::DW);
  RingPort<S, ring_uram<P>()> port;
  int32_t acc[L];
  BB_HLS(ARRAY_PARTITION variable = acc complete)
  for (int p = 0; p < L; ++p) acc[p] = 0;
  const long n_in = static_cast<long>(frames) * S::IN_BEATS;
  const long n_out = static_cast<long>(frames) * S::HO * WO * CF * KF;
  S s;
  int ox = 0, col0 = 0, cf = 0, kf = 0;  // positions kf·J.. of block cf of output pixel ox
  long nr = 0, nw = 0;
BB_LOOP(dw_beat)
  while (nr < n_in || nw < n_out) {
    BB_PIPELINE_OVERLAP(1)
    BB_HLS(DEPENDENCE variable = rows type = inter dependent = false)  // reads only complete rows
    BB_HLS(DEPENDENCE variable = rows type = intra dependent = false)
    // non-blocking both ways, as the RTL swg's writer and reader: an empty input never holds
    // back a window that is ready, a full output never holds back the rows
    const bool rd_due = nr < n_in && s.can_read(), wr_due = nw < n_out && s.can_emit();
    const bool pad = s.pad_beat();
    const bool rd = rd_due && (pad || !in.empty()), wr = wr_due && !out.full();
    if (!rd && !wr) {
      BB_IDLE(rd_due && !pad ? &in : nullptr, wr_due ? &out : nullptr)
    }
    if (wr) {
      int8_t wv[P::SIMD][1];
      BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
      weight_word<P::SIMD, 1>(w, cf * KF + kf, wv);
      int32_t a[L];
      BB_HLS(ARRAY_PARTITION variable = a complete)
      for (int p = 0; p < L; ++p) a[p] = kf == 0 ? bias[p][cf] : acc[p];
      for (int j = 0; j < J; ++j) {
        const int k = kf * J + j, ky = k / P::KW, kx = k % P::KW;
        const int word = (s.slot(ky * P::DH) * S::WP + col0 + kx * P::DW) * CF + cf;
        const Beat<L> x = port.read(rows, j, word);
        for (int p = 0; p < L; ++p) {
          a[p] += mul_lane<pack_of<P>()>(x.d[p], wv[p * J + j][0]);
        }
      }
      Beat<L> o;
      for (int p = 0; p < L; ++p) {
        acc[p] = a[p];
        o.d[p] = requant_with<rq_lut_of<P>()>(a[p], mult[p][cf], shift[p][cf], P::ZP_OUT, P::LO, P::HI);
      }
      if (kf == KF - 1) out.write(o);
      ++nw;
      next_tap<KF, CF, WO, P::SW>(kf, cf, ox, col0, s);
    }
    if (rd) {
      Beat<L> b;
      if (pad) {
        for (int p = 0; p < L; ++p) b.d[p] = static_cast<int8_t>(P::ZP_IN);
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

template <class P, class W>
void dwconv2d(Stream<P::LANES>& in, Stream<P::LANES>& out, const W* w,
              const int32_t bias[P::LANES][P::C / P::LANES], const int32_t mult[P::LANES][P::C / P::LANES],
              const int32_t shift[P::LANES][P::C / P::LANES], int frames) {
  static_assert(P::C % P::LANES == 0, "dwconv2d: P | C");
  static_assert(pack_of<P>() == 0 || pack_of<P>() == 1, "dwconv2d: PACK is 0 (LUT) or 1 (DSP)");
  constexpr int K = P::KH * P::KW, J = P::SIMD / P::LANES, L = P::LANES, RU = ring_uram<P>();
  static_assert(P::SIMD % P::LANES == 0 && K % J == 0, "dwconv2d: SIMD = LANES*J with J | KH*KW");
  using S = WindowRows<P::H, P::W, P::C, L, P::PT, P::PL, P::PB, P::PR, P::KH, P::DH, P::SH, ring_of<P>()>;
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  // copy j serves window position j of a cycle's J: one read and one write per memory
  if constexpr (RU == 0) {
    static int8_t rows[J][S::WORDS][L];
    BB_HLS(ARRAY_PARTITION variable = rows complete dim = 1)
    BB_HLS(ARRAY_PARTITION variable = rows complete dim = 3)
    dwconv2d_loop<P>(rows, in, out, w, bias, mult, shift, frames);
  } else {
    static Word<RU * L> ring[J][S::WORDS / RU];
    BB_HLS(AGGREGATE variable = ring compact = bit)
    BB_HLS(ARRAY_PARTITION variable = ring complete dim = 1)
    BB_HLS(BIND_STORAGE variable = ring type = ram_s2p impl = uram)
    dwconv2d_loop<P>(ring, in, out, w, bias, mult, shift, frames);
  }
}

}  // namespace bb

#endif  // BBGRAP_DWCONV2D_H
