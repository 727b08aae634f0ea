// bbgrap-hls kernel library: LRN across channels (ops/lrn.py, docs/numerics.md "LRN").
#ifndef BBGRAP_LRN_H
#define BBGRAP_LRN_H

#include "bb_common.h"

namespace bb {

/// The table index of a sum of squares s (ops/lrn.py `code`): t = max(bitlen(s) - 1 - M, 0),
/// index = t * 2^M + (s >> t).
template <int M>
inline int lrn_code(uint32_t s) {
  BB_HLS(INLINE)
  int bl = 0;
  for (int b = 0; b < 32; ++b) {
    if ((s >> b) != 0) bl = b + 1;
  }
  const int t = bl - 1 - M > 0 ? bl - 1 - M : 0;
  return (t << M) + static_cast<int>(s >> t);
}

/// LRN of PIXELS pixels of C channels at L lanes (P gives PIXELS, C, L, BEFORE, AFTER, MBITS,
/// SHIFT, ZP_IN, ZP_OUT): with d = x - ZP_IN and S = sum of d^2 over the channels
/// [c - BEFORE, c + AFTER] of the pixel, y = clamp(ZP_OUT + ((d * tab[code(S)] + 2^(SHIFT-1))
/// >> SHIFT), -128, 127). As channel_shuffle: one pipelined loop of C/L iterations per pixel
/// plus one pixel at the end of the call; iteration (i, cb) stores beat cb of pixel i in bank
/// i mod 2 (its d values and the prefix sums pre[c + 1] = d_0^2 + ... + d_c^2) and emits beat
/// cb of pixel i - 1 from the other bank.
template <class P>
void lrn(Stream<P::L>& in, Stream<P::L>& out, const int32_t* tab, int frames) {
  constexpr int C = P::C, L = P::L, CB = C / L, F = P::SHIFT;
  static_assert(C % L == 0, "lrn: L | C");
  int16_t dv[2][C];
  uint32_t pre[2][C + 1];
  BB_HLS(ARRAY_PARTITION variable = dv complete dim = 0)
  BB_HLS(ARRAY_PARTITION variable = pre complete dim = 0)
  pre[0][0] = 0;
  pre[1][0] = 0;
  const long pixels = static_cast<long>(frames) * P::PIXELS;
  int cur = 0, cb = 0;
  long i = 0;  // the pixel being read
BB_LOOP(lrn_beat)
  for (long it = 0; it < (pixels + (pixels > 0 ? 1 : 0)) * CB; ++it) {
    BB_PIPELINE(1)
    if (i > 0) {
      const int o = 1 - cur;
      Beat<L> y;
      for (int l = 0; l < L; ++l) {
        const int c = cb * L + l;
        const int hi = c + P::AFTER + 1 < C ? c + P::AFTER + 1 : C;
        const int lo = c - P::BEFORE > 0 ? c - P::BEFORE : 0;
        const int64_t t = tab[lrn_code<P::MBITS>(pre[o][hi] - pre[o][lo])];
        int64_t v = static_cast<int64_t>(dv[o][c]) * t;
        if (F > 0) v += static_cast<int64_t>(1) << (F > 0 ? F - 1 : 0);
        y.d[l] = clamp8(P::ZP_OUT + (v >> F), -128, 127);
      }
      out.write(y);
    }
    if (i < pixels) {
      const Beat<L> b = in.read();
      uint32_t acc = pre[cur][cb * L];
      for (int l = 0; l < L; ++l) {
        const int16_t d = static_cast<int16_t>(b.d[l] - P::ZP_IN);
        dv[cur][cb * L + l] = d;
        acc += static_cast<uint32_t>(d * d);
        pre[cur][cb * L + l + 1] = acc;
      }
    }
    if (++cb == CB) {
      cb = 0;
      cur = 1 - cur;
      ++i;
    }
  }
}

}  // namespace bb

#endif  // BBGRAP_LRN_H
