// bbgrap-hls kernel library: max, average and global average pooling.
//
// Window pools take P with H, W, C, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, LANES (lanes),
// optionally SIMD = LANES·J (the parallel window: J | KH·KW taps of the LANES channels a
// cycle, as dwconv2d.h; the RTL vvu's J), and for average pooling ZP_IN, ZP_OUT, LO, HI. Padded positions never enter a max. An
// average sums (x - ZP_IN) over the window's n counted positions (all KH·KW with
// COUNT_PAD, else only those inside the input) in int32 and requantises with the pair
// mult[n], shift[n] (tables of KH·KW + 1 entries, so border windows divide by their n).
// P::ROWS (a short ring) and P::RING_URAM (the ring in URAM) are optional: bb_window.h.
#ifndef BBGRAP_POOL2D_H
#define BBGRAP_POOL2D_H

#include "bb_pack.h"
#include "bb_window.h"

namespace bb {

/// P::SIMD / P::LANES when the layer's struct declares SIMD (the parallel window), else 1.
template <class P, class = void>
struct PoolTaps {
  static constexpr int value = 1;
};
template <class P>
struct PoolTaps<P, typename VoidOf<decltype(P::SIMD)>::type> {
  static constexpr int value = P::SIMD / P::LANES;
};

/// A window pool as one pipelined loop (bb_window.h's schedule): each emitted iteration
/// folds window taps kf·J .. kf·J + J − 1 of channel block cf of output pixel ox into LANES
/// accumulators (J = 1 but for a parallel window: J reads of the ring's J copies) and writes
/// the beat at the last taps. Padding holds -128 for a max (never above a real value, as
/// skipping it) and ZP_IN for an average (adds x - ZP_IN = 0); an average counts its
/// window's n positions from their coordinates.
template <class P, bool AVG, class Ring>
void pool2d_loop(Ring& rows, Stream<P::LANES>& in, Stream<P::LANES>& out, const int32_t* mult, const int32_t* shift,
                 int frames) {
  BB_HLS(INLINE)
  constexpr int K = P::KH * P::KW, CF = P::C / P::LANES, L = P::LANES, J = PoolTaps<P>::value, KF = K / J;
  using S = WindowRows<P::H, P::W, P::C, L, P::PT, P::PL, P::PB, P::PR, P::KH, P::DH, P::SH, ring_of<P>()>;
  constexpr int WO = out_len(S::WP, P::KW, P::SW, P::DW);
  constexpr int8_t PAD = static_cast<int8_t>(AVG ? P::ZP_IN : -128);
  RingPort<S, ring_uram<P>()> port;
  int32_t acc[L];
  BB_HLS(ARRAY_PARTITION variable = acc complete)
  for (int p = 0; p < L; ++p) acc[p] = 0;
  const long n_in = static_cast<long>(frames) * S::IN_BEATS;
  const long n_out = static_cast<long>(frames) * S::HO * WO * CF * KF;
  S s;
  int ox = 0, col0 = 0, cf = 0, kf = 0, n = 0;  // taps kf·J.. of block cf of pixel ox; counted taps
  long nr = 0, nw = 0;
BB_LOOP(pool_beat)
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
      int32_t a[L];
      BB_HLS(ARRAY_PARTITION variable = a complete)
      for (int p = 0; p < L; ++p) a[p] = kf == 0 ? (AVG ? 0 : -128) : acc[p];
      int cnt = kf == 0 ? 0 : n;
      for (int j = 0; j < J; ++j) {
        const int k = kf * J + j, ky = k / P::KW, kx = k % P::KW;
        const int y = s.oy * P::SH + ky * P::DH, x = col0 + kx * P::DW;
        const bool inside = y >= P::PT && y < P::PT + P::H && x >= P::PL && x < P::PL + P::W;
        if (inside || (AVG && P::COUNT_PAD)) ++cnt;
        const int word = (s.slot(ky * P::DH) * S::WP + x) * CF + cf;
        const Beat<L> t = port.read(rows, j, word);
        for (int p = 0; p < L; ++p) {
          const int32_t v = t.d[p];
          a[p] = AVG ? a[p] + v - P::ZP_IN : (v > a[p] ? v : a[p]);
        }
      }
      Beat<L> o;
      for (int p = 0; p < L; ++p) {
        acc[p] = a[p];
        o.d[p] = AVG ? requant_with<rq_lut_of<P>()>(a[p], mult[cnt], shift[cnt], P::ZP_OUT, P::LO, P::HI)
                     : static_cast<int8_t>(a[p]);
      }
      n = cnt;
      if (kf == KF - 1) out.write(o);
      ++nw;
      next_tap<KF, CF, WO, P::SW>(kf, cf, ox, col0, s);
    }
    if (rd) {
      Beat<L> b;
      if (pad) {
        for (int p = 0; p < L; ++p) b.d[p] = PAD;
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

/// pool2d_loop over the ring it declares: one memory a lane, or URAM words (bb_window.h);
/// J copies of it for a parallel window (copy j serves tap j of a cycle's J: one read and
/// one write per memory, as dwconv2d).
template <class P, bool AVG>
void pool2d_impl(Stream<P::LANES>& in, Stream<P::LANES>& out, const int32_t* mult, const int32_t* shift, int frames) {
  BB_HLS(INLINE)
  static_assert(P::C % P::LANES == 0, "pool2d: P | C");
  constexpr int L = P::LANES, RU = ring_uram<P>(), J = PoolTaps<P>::value;
  static_assert(J >= 1 && (P::KH * P::KW) % J == 0, "pool2d: SIMD = LANES*J with J | KH*KW");
  using S = WindowRows<P::H, P::W, P::C, L, P::PT, P::PL, P::PB, P::PR, P::KH, P::DH, P::SH, ring_of<P>()>;
  if constexpr (RU == 0) {
    static int8_t rows[J][S::WORDS][L];
    BB_HLS(ARRAY_PARTITION variable = rows complete dim = 1)
    BB_HLS(ARRAY_PARTITION variable = rows complete dim = 3)
    pool2d_loop<P, AVG>(rows, in, out, mult, shift, frames);
  } else {
    static Word<RU * L> ring[J][S::WORDS / RU];
    BB_HLS(AGGREGATE variable = ring compact = bit)
    BB_HLS(ARRAY_PARTITION variable = ring complete dim = 1)
    BB_HLS(BIND_STORAGE variable = ring type = ram_s2p impl = uram)
    pool2d_loop<P, AVG>(ring, in, out, mult, shift, frames);
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
/// One output pixel of C channels per frame: one pipelined loop of H·W·C/LANES iterations
/// per frame; the last pixel's iterations write the sums they complete.
template <class P>
void global_avgpool(Stream<P::LANES>& in, Stream<P::LANES>& out, int frames) {
  static_assert(P::C % P::LANES == 0, "global_avgpool: P | C");
  constexpr int CF = P::C / P::LANES, HW = P::H * P::W;
  static int32_t acc[CF][P::LANES];
  BB_HLS(ARRAY_PARTITION variable = acc complete dim = 2)
  int cf = 0, i = 0;  // block cf of pixel i
BB_LOOP(gap_beat)
  for (long it = 0; it < static_cast<long>(frames) * HW * CF; ++it) {
    BB_PIPELINE(1)
    const Beat<P::LANES> b = in.read();
    Beat<P::LANES> o;
    for (int p = 0; p < P::LANES; ++p) {
      const int32_t a = (i == 0 ? 0 : acc[cf][p]) + static_cast<int32_t>(b.d[p]) - P::ZP_IN;
      acc[cf][p] = a;
      o.d[p] = requant_with<rq_lut_of<P>()>(a, P::MULT, P::SHIFT, P::ZP_OUT, P::LO, P::HI);
    }
    if (i == HW - 1) out.write(o);
    if (++cf == CF) {
      cf = 0;
      i = i + 1 == HW ? 0 : i + 1;
    }
  }
}

}  // namespace bb

#endif  // BBGRAP_POOL2D_H
