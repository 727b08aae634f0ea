// bbgrap-hls kernel library: the row buffer behind every sliding-window block.
//
// A window block keeps the last span(KH, DH) padded rows of its input (Wp pixels of C
// channels each) in a circular buffer. Rows arrive in raster order; after padded row iy
// has arrived, every output row whose window ends at iy is computed. Padding positions
// hold `pad` (the input zero point for convolutions); pooling blocks test coordinates.
#ifndef BBGRAP_BB_WINDOW_H
#define BBGRAP_BB_WINDOW_H

#include "bb_common.h"

namespace bb {

/// Fill padded row `iy` of a (H, W, C) input with PT/PL/PR padding from `in` (L lanes).
template <int H, int W, int C, int L, int PT, int PL, int PR, int R>
void window_read_row(Stream<L>& in, int8_t rows[R][(W + PL + PR) * C], int iy, int8_t pad) {
  BB_HLS(INLINE)
  constexpr int WP = W + PL + PR;
  const int slot = iy % R;
  const bool pad_row = iy < PT || iy >= PT + H;
BB_LOOP(row_x)
  for (int x = 0; x < WP; ++x) {
    const bool pad_px = pad_row || x < PL || x >= PL + W;
  BB_LOOP(row_c)
    for (int cb = 0; cb < C / L; ++cb) {
      BB_HLS(PIPELINE II = 1)
      Beat<L> b;
      if (!pad_px) b = in.read();
      for (int i = 0; i < L; ++i) rows[slot][x * C + cb * L + i] = pad_px ? pad : b.d[i];
    }
  }
}

/// The first output row whose window ends at padded row iy, or -1 (none ends there).
template <int HO, int KH, int SH, int DH>
int window_out_row(int iy) {
  BB_HLS(INLINE)
  constexpr int KHE = span(KH, DH);
  if (iy < KHE - 1 || (iy - (KHE - 1)) % SH != 0) return -1;
  const int oy = (iy - (KHE - 1)) / SH;
  return oy < HO ? oy : -1;
}

}  // namespace bb

#endif  // BBGRAP_BB_WINDOW_H
