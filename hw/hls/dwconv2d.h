// bbgrap-hls kernel library: depthwise convolution (vector unit, one filter per channel).
//
// P gives H, W, C, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, LANES (lanes in = lanes out: the
// plan's pe), SIMD (products per cycle: LANES, or LANES·J with J | KH·KW window positions per
// cycle, the parallel window), ZP_IN, ZP_OUT, LO, HI. Weights: a weight memory of
// bb_weights.h with SIMD one-lane banks and CF·K/J words (CF = C/LANES, K = KH·KW): one wide
// memory `Word<SIMD> w[CF·K/J]` (what gen declares) or SIMD banks `const Word<1> w[SIMD][CF·K/J]`. Bank
// p·J + j at address cf·K/J + kf holds the weight of channel cf·LANES + p at window
// position k = kf·J + j, k = ky·KW + kx. Constants [LANES][CF] as in conv2d.
#ifndef BBGRAP_DWCONV2D_H
#define BBGRAP_DWCONV2D_H

#include "bb_weights.h"
#include "bb_window.h"

namespace bb {

template <class P, class W>
void dwconv2d(Stream<P::LANES>& in, Stream<P::LANES>& out, const W* w,
              const int32_t bias[P::LANES][P::C / P::LANES], const int32_t mult[P::LANES][P::C / P::LANES],
              const int32_t shift[P::LANES][P::C / P::LANES], int frames) {
  static_assert(P::C % P::LANES == 0, "dwconv2d: P | C");
  constexpr int K = P::KH * P::KW, CF = P::C / P::LANES, J = P::SIMD / P::LANES;
  static_assert(P::SIMD % P::LANES == 0 && K % J == 0, "dwconv2d: SIMD = LANES*J with J | KH*KW");
  constexpr int KF = K / J;
  constexpr int HP = P::H + P::PT + P::PB, WP = P::W + P::PL + P::PR;
  constexpr int R = span(P::KH, P::DH);
  constexpr int HO = out_len(HP, P::KH, P::SH, P::DH), WO = out_len(WP, P::KW, P::SW, P::DW);
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  static int8_t rows[R][WP * P::C];
  BB_HLS(ARRAY_PARTITION variable = rows complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = rows cyclic factor = P::LANES dim = 2)
BB_LOOP(dw_frame)
  for (int f = 0; f < frames; ++f) {
  BB_LOOP(dw_row)
    for (int iy = 0; iy < HP; ++iy) {
      window_read_row<P::H, P::W, P::C, P::LANES, P::PT, P::PL, P::PR, R>(in, rows, iy, static_cast<int8_t>(P::ZP_IN));
      const int oy = window_out_row<HO, P::KH, P::SH, P::DH>(iy);
      if (oy < 0) continue;
    BB_LOOP(dw_px)
      for (int ox = 0; ox < WO; ++ox) {
      BB_LOOP(dw_cf)
        for (int cf = 0; cf < CF; ++cf) {
          int32_t acc[P::LANES];
          BB_HLS(ARRAY_PARTITION variable = acc complete)
          for (int p = 0; p < P::LANES; ++p) acc[p] = bias[p][cf];
        BB_LOOP(dw_k)  // J window positions per cycle
          for (int kf = 0; kf < KF; ++kf) {
            BB_HLS(PIPELINE II = 1)
            int8_t wv[P::SIMD][1];
            BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
            weight_word<P::SIMD, 1>(w, cf * KF + kf, wv);
            for (int j = 0; j < J; ++j) {
              const int k = kf * J + j;
              const int ky = k / P::KW, kx = k % P::KW;
              const int8_t* px = &rows[(oy * P::SH + ky * P::DH) % R][(ox * P::SW + kx * P::DW) * P::C + cf * P::LANES];
              for (int p = 0; p < P::LANES; ++p) {
                acc[p] += static_cast<int32_t>(px[p]) * static_cast<int32_t>(wv[p * J + j][0]);
              }
            }
          }
          Beat<P::LANES> o;
          for (int p = 0; p < P::LANES; ++p) {
            o.d[p] = requant(acc[p], mult[p][cf], shift[p][cf], P::ZP_OUT, P::LO, P::HI);
          }
          out.write(o);
        }
      }
    }
  }
}

}  // namespace bb

#endif  // BBGRAP_DWCONV2D_H
