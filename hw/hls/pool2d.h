// bbgrap-hls kernel library: max, average and global average pooling.
//
// Window pools take P with H, W, C, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, LANES (lanes),
// and for average pooling ZP_IN, ZP_OUT, LO, HI. Padded positions never enter a max. An
// average sums (x - ZP_IN) over the window's n counted positions (all KH·KW with
// COUNT_PAD, else only those inside the input) in int32 and requantises with the pair
// mult[n], shift[n] (tables of KH·KW + 1 entries, so border windows divide by their n).
#ifndef BBGRAP_POOL2D_H
#define BBGRAP_POOL2D_H

#include "bb_window.h"

namespace bb {

template <class P, bool AVG>
void pool2d_impl(Stream<P::LANES>& in, Stream<P::LANES>& out, const int32_t* mult, const int32_t* shift, int frames) {
  BB_HLS(INLINE)
  static_assert(P::C % P::LANES == 0, "pool2d: P | C");
  constexpr int K = P::KH * P::KW, CF = P::C / P::LANES;
  constexpr int HP = P::H + P::PT + P::PB, WP = P::W + P::PL + P::PR;
  constexpr int R = span(P::KH, P::DH);
  constexpr int HO = out_len(HP, P::KH, P::SH, P::DH), WO = out_len(WP, P::KW, P::SW, P::DW);
  static int8_t rows[R][WP * P::C];
BB_LOOP(pool_frame)
  for (int f = 0; f < frames; ++f) {
  BB_LOOP(pool_row)
    for (int iy = 0; iy < HP; ++iy) {
      window_read_row<P::H, P::W, P::C, P::LANES, P::PT, P::PL, P::PR, R>(in, rows, iy, 0);
      const int oy = window_out_row<HO, P::KH, P::SH, P::DH>(iy);
      if (oy < 0) continue;
    BB_LOOP(pool_px)
      for (int ox = 0; ox < WO; ++ox) {
      BB_LOOP(pool_cf)
        for (int cf = 0; cf < CF; ++cf) {
          int32_t acc[P::LANES];
          BB_HLS(ARRAY_PARTITION variable = acc complete)
          for (int p = 0; p < P::LANES; ++p) acc[p] = AVG ? 0 : -128;
          int n = 0;
        BB_LOOP(pool_k)
          for (int k = 0; k < K; ++k) {
            BB_HLS(PIPELINE II = 1)
            const int ky = k / P::KW, kx = k % P::KW;
            const int y = oy * P::SH + ky * P::DH, x = ox * P::SW + kx * P::DW;
            const bool inside = y >= P::PT && y < P::PT + P::H && x >= P::PL && x < P::PL + P::W;
            if (!inside && !(AVG && P::COUNT_PAD)) continue;
            ++n;
            if (!inside) continue;  // a counted pad adds x - ZP_IN = 0
            const int8_t* px = &rows[y % R][x * P::C + cf * P::LANES];
            for (int p = 0; p < P::LANES; ++p) {
              if (AVG) {
                acc[p] += static_cast<int32_t>(px[p]) - P::ZP_IN;
              } else if (px[p] > acc[p]) {
                acc[p] = px[p];
              }
            }
          }
          Beat<P::LANES> o;
          for (int p = 0; p < P::LANES; ++p) {
            o.d[p] = AVG ? requant(acc[p], mult[n], shift[n], P::ZP_OUT, P::LO, P::HI) : static_cast<int8_t>(acc[p]);
          }
          out.write(o);
        }
      }
    }
  }
}

/// A max pool's parameters plus the average-only constants (unused by a max).
template <class P>
struct MaxParams : P {
  static constexpr int ZP_IN = 0, ZP_OUT = 0, LO = -128, HI = 127, COUNT_PAD = 0;
};

/// Max pooling on int8 (pads are skipped, as -inf padding in ONNX).
template <class P>
void maxpool2d(Stream<P::LANES>& in, Stream<P::LANES>& out, int frames) {
  pool2d_impl<MaxParams<P>, false>(in, out, nullptr, nullptr, frames);
}

/// Average pooling: int32 sum of (x - ZP_IN), requantised by the window's count n.
template <class P>
void avgpool2d(Stream<P::LANES>& in, Stream<P::LANES>& out, const int32_t mult[P::KH * P::KW + 1],
               const int32_t shift[P::KH * P::KW + 1], int frames) {
  pool2d_impl<P, true>(in, out, mult, shift, frames);
}

/// Global average pooling: P gives H, W, C, LANES, ZP_IN, ZP_OUT, LO, HI, MULT, SHIFT.
/// One output pixel of C channels per frame.
template <class P>
void global_avgpool(Stream<P::LANES>& in, Stream<P::LANES>& out, int frames) {
  static_assert(P::C % P::LANES == 0, "global_avgpool: P | C");
  constexpr int CF = P::C / P::LANES;
  static int32_t acc[CF][P::LANES];
  BB_HLS(ARRAY_PARTITION variable = acc complete dim = 2)
BB_LOOP(gap_frame)
  for (int f = 0; f < frames; ++f) {
    for (int cf = 0; cf < CF; ++cf)
      for (int p = 0; p < P::LANES; ++p) acc[cf][p] = 0;
  BB_LOOP(gap_px)
    for (int i = 0; i < P::H * P::W; ++i) {
      for (int cf = 0; cf < CF; ++cf) {
        BB_HLS(PIPELINE II = 1)
        const Beat<P::LANES> b = in.read();
        for (int p = 0; p < P::LANES; ++p) acc[cf][p] += static_cast<int32_t>(b.d[p]) - P::ZP_IN;
      }
    }
  BB_LOOP(gap_out)
    for (int cf = 0; cf < CF; ++cf) {
      BB_HLS(PIPELINE II = 1)
      Beat<P::LANES> o;
      for (int p = 0; p < P::LANES; ++p) o.d[p] = requant(acc[cf][p], P::MULT, P::SHIFT, P::ZP_OUT, P::LO, P::HI);
      out.write(o);
    }
  }
}

}  // namespace bb

#endif  // BBGRAP_POOL2D_H
