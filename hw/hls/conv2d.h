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
#ifndef BBGRAP_CONV2D_H
#define BBGRAP_CONV2D_H

#include "bb_weights.h"
#include "bb_window.h"

namespace bb {

/// Matrix-vector unit over one window held in `win` (KH·KW·C elements, NHWC order).
/// `W` is the weight memory's element type (see bb_weights.h).
template <class P, int K, class W>
void mvu_fold(const int8_t* win, Stream<P::PE>& out, const W* w, const int32_t bias[P::PE][P::CO / P::PE],
              const int32_t mult[P::PE][P::CO / P::PE],
              const int32_t shift[P::PE][P::CO / P::PE]) {
  BB_HLS(INLINE)
  constexpr int NF = P::CO / P::PE, SF = K / P::SIMD;
  int32_t acc[P::PE];
  BB_HLS(ARRAY_PARTITION variable = acc complete)
BB_LOOP(mvu_nf)
  for (int nf = 0; nf < NF; ++nf) {
    for (int pe = 0; pe < P::PE; ++pe) acc[pe] = bias[pe][nf];
  BB_LOOP(mvu_sf)
    for (int sf = 0; sf < SF; ++sf) {
      BB_HLS(PIPELINE II = 1)
      int8_t wv[P::PE][P::SIMD];
      BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
      weight_word<P::PE, P::SIMD>(w, nf * SF + sf, wv);
      for (int pe = 0; pe < P::PE; ++pe) {
        for (int s = 0; s < P::SIMD; ++s) {
          acc[pe] += static_cast<int32_t>(win[sf * P::SIMD + s]) * static_cast<int32_t>(wv[pe][s]);
        }
      }
    }
    Beat<P::PE> o;
    for (int pe = 0; pe < P::PE; ++pe) {
      o.d[pe] = requant(acc[pe], mult[pe][nf], shift[pe][nf], P::ZP_OUT, P::LO, P::HI);
    }
    out.write(o);
  }
}

/// Input lanes of a conv block: SIMD, or C with a parallel window (SIMD = C·j).
constexpr int conv_in_lanes(int simd, int c) { return simd < c ? simd : c; }

template <class P, class W>
void conv2d(Stream<conv_in_lanes(P::SIMD, P::C)>& in, Stream<P::PE>& out, const W* w,
            const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
            const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  constexpr int IN = conv_in_lanes(P::SIMD, P::C);
  static_assert(P::CO % P::PE == 0, "conv2d: PE | CO");
  static_assert(P::C % P::SIMD == 0 || P::SIMD % P::C == 0, "conv2d: SIMD | C, or SIMD = C*j (parallel window)");
  constexpr int K = P::KH * P::KW * P::C;
  static_assert(K % P::SIMD == 0, "conv2d: SIMD | KH*KW*C (parallel window: j | KH*KW)");
  constexpr int HP = P::H + P::PT + P::PB, WP = P::W + P::PL + P::PR;
  constexpr int R = span(P::KH, P::DH);
  constexpr int HO = out_len(HP, P::KH, P::SH, P::DH), WO = out_len(WP, P::KW, P::SW, P::DW);
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  static int8_t rows[R][WP * P::C];
  // A parallel window reads up to KH rows per cycle: one memory per row.
  BB_HLS(ARRAY_PARTITION variable = rows complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = rows cyclic factor = IN dim = 2)
  static int8_t win[K];
  BB_HLS(ARRAY_PARTITION variable = win cyclic factor = P::SIMD)
BB_LOOP(conv_frame)
  for (int f = 0; f < frames; ++f) {
  BB_LOOP(conv_row)
    for (int iy = 0; iy < HP; ++iy) {
      window_read_row<P::H, P::W, P::C, IN, P::PT, P::PL, P::PR, R>(in, rows, iy, static_cast<int8_t>(P::ZP_IN));
      const int oy = window_out_row<HO, P::KH, P::SH, P::DH>(iy);
      if (oy < 0) continue;
    BB_LOOP(conv_px)
      for (int ox = 0; ox < WO; ++ox) {
      BB_LOOP(conv_win)  // the window, SIMD elements per cycle in (ky, kx, c) order
        for (int sf = 0; sf < K / P::SIMD; ++sf) {
          BB_HLS(PIPELINE II = 1)
          for (int s = 0; s < P::SIMD; ++s) {
            const int k = sf * P::SIMD + s;
            const int c = k % P::C, kk = k / P::C;
            const int kx = kk % P::KW, ky = kk / P::KW;
            win[k] = rows[(oy * P::SH + ky * P::DH) % R][(ox * P::SW + kx * P::DW) * P::C + c];
          }
        }
        mvu_fold<P, K>(win, out, w, bias, mult, shift);
      }
    }
  }
}

/// Convolution with M copies of the matrix-vector unit ("pixel copies", P::M = M with
/// 2 <= M <= NF) behind one window generator: copy m computes output pixels ox ≡ m (mod M)
/// of each output row. P is conv2d's struct plus M; weights and constants are conv2d's
/// (one memory, each word read once per cycle and shared by the M copies). The output
/// streams one whole pixel per beat (CO lanes), pixels in raster order.
///
/// Intended schedule (Vitis HLS), per group of M consecutive output pixels of a row:
///   window build   M·SF cycles (conv_mwin, II = 1): SIMD window elements per cycle into
///                  copy m's window, the row-buffer bandwidth of conv2d;
///   fold           NF·SF cycles (conv_mfold, one flattened loop, II = 1): weight word
///                  nf·SF + sf read once, M·PE·SIMD products per cycle (copy m's PE
///                  accumulators and its window partitioned, a DSP/LUT array per copy);
///                  at sf = SF-1 the M·PE sums requantise into the pixel buffers;
///   write          n cycles (conv_mout, II = 1): n = M pixels, one Beat<CO> each.
/// Per pixel that is NF·SF/M fold cycles (conv2d: NF·SF) plus SF window cycles and one
/// write cycle, the same window overhead per pixel as conv2d. A row whose WO is not a
/// multiple of M ends with a partial group (n < M pixels; the idle copies' results are
/// dropped, the fold still takes NF·SF cycles).
template <class P, class W>
void conv2d_mmv(Stream<conv_in_lanes(P::SIMD, P::C)>& in, Stream<P::CO>& out, const W* w,
                const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  constexpr int IN = conv_in_lanes(P::SIMD, P::C), M = P::M, NF = P::CO / P::PE;
  static_assert(P::CO % P::PE == 0, "conv2d_mmv: PE | CO");
  static_assert(M >= 2 && M <= NF, "conv2d_mmv: 2 <= M <= CO/PE");
  static_assert(P::C % P::SIMD == 0 || P::SIMD % P::C == 0, "conv2d_mmv: SIMD | C, or SIMD = C*j");
  constexpr int K = P::KH * P::KW * P::C, SF = K / P::SIMD;
  static_assert(K % P::SIMD == 0, "conv2d_mmv: SIMD | KH*KW*C (parallel window: j | KH*KW)");
  constexpr int HP = P::H + P::PT + P::PB, WP = P::W + P::PL + P::PR;
  constexpr int R = span(P::KH, P::DH);
  constexpr int HO = out_len(HP, P::KH, P::SH, P::DH), WO = out_len(WP, P::KW, P::SW, P::DW);
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  static int8_t rows[R][WP * P::C];
  BB_HLS(ARRAY_PARTITION variable = rows complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = rows cyclic factor = IN dim = 2)
  static int8_t win[M][K];  // copy m's window
  BB_HLS(ARRAY_PARTITION variable = win complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = win cyclic factor = P::SIMD dim = 2)
  int32_t acc[M][P::PE];
  BB_HLS(ARRAY_PARTITION variable = acc complete dim = 0)
  int8_t px[M][P::CO];  // the group's output pixels
  BB_HLS(ARRAY_PARTITION variable = px complete dim = 0)
BB_LOOP(conv_frame)
  for (int f = 0; f < frames; ++f) {
  BB_LOOP(conv_row)
    for (int iy = 0; iy < HP; ++iy) {
      window_read_row<P::H, P::W, P::C, IN, P::PT, P::PL, P::PR, R>(in, rows, iy, static_cast<int8_t>(P::ZP_IN));
      const int oy = window_out_row<HO, P::KH, P::SH, P::DH>(iy);
      if (oy < 0) continue;
    BB_LOOP(conv_group)
      for (int ox0 = 0; ox0 < WO; ox0 += M) {
        const int n = WO - ox0 < M ? WO - ox0 : M;  // pixels in this group
      BB_LOOP(conv_mwin)  // copy m's window, SIMD elements per cycle in (ky, kx, c) order
        for (int i = 0; i < n * SF; ++i) {
          BB_HLS(PIPELINE II = 1)
          const int m = i / SF, sf = i % SF, ox = ox0 + m;
          for (int s = 0; s < P::SIMD; ++s) {
            const int k = sf * P::SIMD + s;
            const int c = k % P::C, kk = k / P::C;
            const int kx = kk % P::KW, ky = kk / P::KW;
            win[m][k] = rows[(oy * P::SH + ky * P::DH) % R][(ox * P::SW + kx * P::DW) * P::C + c];
          }
        }
      BB_LOOP(conv_mfold)  // weight word i = nf·SF + sf, shared by the M copies
        for (int i = 0; i < NF * SF; ++i) {
          BB_HLS(PIPELINE II = 1)
          const int nf = i / SF, sf = i % SF;
          int8_t wv[P::PE][P::SIMD];
          BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
          weight_word<P::PE, P::SIMD>(w, i, wv);
          for (int m = 0; m < M; ++m) {
            for (int pe = 0; pe < P::PE; ++pe) {
              int32_t a = sf == 0 ? bias[pe][nf] : acc[m][pe];
              for (int s = 0; s < P::SIMD; ++s) {
                a += static_cast<int32_t>(win[m][sf * P::SIMD + s]) * static_cast<int32_t>(wv[pe][s]);
              }
              acc[m][pe] = a;
              if (sf == SF - 1) {
                px[m][nf * P::PE + pe] = requant(a, mult[pe][nf], shift[pe][nf], P::ZP_OUT, P::LO, P::HI);
              }
            }
          }
        }
      BB_LOOP(conv_mout)
        for (int m = 0; m < n; ++m) {
          BB_HLS(PIPELINE II = 1)
          Beat<P::CO> o;
          for (int co = 0; co < P::CO; ++co) o.d[co] = px[m][co];
          out.write(o);
        }
      }
    }
  }
}

/// Dense (fully connected) layer: a matrix-vector unit over a C-element input vector.
/// P gives C, CO, SIMD, PE, ZP_OUT, LO, HI; weights (NF·C/SIMD words) and constants as in
/// conv2d (K = C).
template <class P, class W>
void dense(Stream<P::SIMD>& in, Stream<P::PE>& out, const W* w, const int32_t bias[P::PE][P::CO / P::PE],
           const int32_t mult[P::PE][P::CO / P::PE],
           const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  static_assert(P::C % P::SIMD == 0 && P::CO % P::PE == 0, "dense: SIMD | C and PE | CO");
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  static int8_t vec[P::C];
  BB_HLS(ARRAY_PARTITION variable = vec cyclic factor = P::SIMD)
BB_LOOP(dense_frame)
  for (int f = 0; f < frames; ++f) {
  BB_LOOP(dense_in)
    for (int i = 0; i < P::C / P::SIMD; ++i) {
      BB_HLS(PIPELINE II = 1)
      const Beat<P::SIMD> b = in.read();
      for (int s = 0; s < P::SIMD; ++s) vec[i * P::SIMD + s] = b.d[s];
    }
    mvu_fold<P, P::C>(vec, out, w, bias, mult, shift);
  }
}

}  // namespace bb

#endif  // BBGRAP_CONV2D_H
