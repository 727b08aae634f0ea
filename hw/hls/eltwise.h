// bbgrap-hls kernel library: pixel-wise blocks (P lanes in, P lanes out).
//
// add / mul of two streams, lookup-table activation, channel affine, requantisation.
// P gives N (elements per frame = H·W·C), LANES (lanes) and the block's constants.
#ifndef BBGRAP_ELTWISE_H
#define BBGRAP_ELTWISE_H

#include "bb_common.h"
#include "bb_pack.h"

namespace bb {

/// y = clamp(ZP_OUT + (((a - ZA)·MA + (b - ZB)·MB + 2^(SHIFT-1)) >> SHIFT), LO, HI):
/// each operand is brought onto the output scale with one rounding (64-bit sum).
template <class P>
void add2(Stream<P::LANES>& a, Stream<P::LANES>& b, Stream<P::LANES>& out, int frames) {
  static_assert(P::N % P::LANES == 0, "add2: P | N");
BB_LOOP(add_beat)
  for (long i = 0; i < static_cast<long>(frames) * (P::N / P::LANES); ++i) {
    BB_PIPELINE(1)
    const Beat<P::LANES> x = a.read(), y = b.read();
    Beat<P::LANES> o;
    for (int p = 0; p < P::LANES; ++p) {
      // (RQ_LUT = 1: both products in the fabric, `wide_mul`)
      int64_t acc = wide_mul<rq_lut_of<P>()>(x.d[p] - P::ZA, P::MA) + wide_mul<rq_lut_of<P>()>(y.d[p] - P::ZB, P::MB);
      if (P::SHIFT > 0) acc += static_cast<int64_t>(1) << (P::SHIFT - 1);
      o.d[p] = clamp8(P::ZP_OUT + (acc >> P::SHIFT), P::LO, P::HI);
    }
    out.write(o);
  }
}

/// y = requant((a - ZA)·(b - ZB), MULT, SHIFT, ZP_OUT, LO, HI).
template <class P>
void mul2(Stream<P::LANES>& a, Stream<P::LANES>& b, Stream<P::LANES>& out, int frames) {
  static_assert(P::N % P::LANES == 0, "mul2: P | N");
BB_LOOP(mul_beat)
  for (long i = 0; i < static_cast<long>(frames) * (P::N / P::LANES); ++i) {
    BB_PIPELINE(1)
    const Beat<P::LANES> x = a.read(), y = b.read();
    Beat<P::LANES> o;
    for (int p = 0; p < P::LANES; ++p) {
      const int32_t acc = static_cast<int32_t>(
          wide_mul<rq_lut_of<P>()>(static_cast<int32_t>(x.d[p]) - P::ZA, static_cast<int32_t>(y.d[p]) - P::ZB));
      o.d[p] = requant_with<rq_lut_of<P>()>(acc, P::MULT, P::SHIFT, P::ZP_OUT, P::LO, P::HI);
    }
    out.write(o);
  }
}

/// y = lut[x + 128]: any unary activation as a 256-entry int8 table.
template <class P>
void lut_act(Stream<P::LANES>& in, Stream<P::LANES>& out, const int8_t lut[256], int frames) {
  BB_HLS(ARRAY_PARTITION variable = lut complete)
BB_LOOP(lut_beat)
  for (long i = 0; i < static_cast<long>(frames) * (P::N / P::LANES); ++i) {
    BB_PIPELINE(1)
    const Beat<P::LANES> x = in.read();
    Beat<P::LANES> o;
    for (int p = 0; p < P::LANES; ++p) o.d[p] = lut[static_cast<int>(x.d[p]) + 128];
    out.write(o);
  }
}

/// Per-channel affine (BatchNormalization that no Conv/Dense absorbed, Mul/Add by a
/// per-channel constant): y = clamp(ZP_OUT + (((x - ZP_IN)·mult[c] + bias[c] + 2^(shift[c]-1))
/// >> shift[c]), LO, HI) with a SIGNED mult (|mult| < 2^24, quant/arith.py MULT_BITS) and a 64-bit bias at the product's scale
/// (docs/numerics.md). P gives N, C, LANES, ZP_IN, ZP_OUT, LO, HI; constants are [P][C/P]
/// (channel cf·P + p at [p][cf]).
template <class P>
void channel_affine(Stream<P::LANES>& in, Stream<P::LANES>& out, const int32_t mult[P::LANES][P::C / P::LANES],
                    const int64_t bias[P::LANES][P::C / P::LANES], const int32_t shift[P::LANES][P::C / P::LANES],
                    int frames) {
  static_assert(P::C % P::LANES == 0 && P::N % P::C == 0, "channel_affine: P | C | N");
  BB_HLS(ARRAY_PARTITION variable = mult complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = bias complete dim = 1)
  BB_HLS(ARRAY_PARTITION variable = shift complete dim = 1)
  constexpr int CF = P::C / P::LANES;
BB_LOOP(aff_beat)
  for (long i = 0; i < static_cast<long>(frames) * (P::N / P::LANES); ++i) {
    BB_PIPELINE(1)
    const int cf = static_cast<int>(i % CF);
    const Beat<P::LANES> x = in.read();
    Beat<P::LANES> o;
    for (int p = 0; p < P::LANES; ++p) {
      const int32_t s = shift[p][cf];
      // the multiplier's 25 bits (|mult| < 2^24): a 9 x 25-bit product, one DSP48E2
      const int32_t m = static_cast<int32_t>(static_cast<uint32_t>(mult[p][cf]) << 7) >> 7;
      int64_t acc = static_cast<int64_t>(static_cast<int32_t>(x.d[p]) - P::ZP_IN) * m + bias[p][cf];
      if (s > 0) acc += static_cast<int64_t>(1) << (s - 1);
      o.d[p] = clamp8(static_cast<int64_t>(P::ZP_OUT) + (acc >> s), P::LO, P::HI);
    }
    out.write(o);
  }
}

/// Move a tensor to another scale: y = requant(x - ZP_IN, MULT, SHIFT, ZP_OUT, LO, HI).
template <class P>
void requantize(Stream<P::LANES>& in, Stream<P::LANES>& out, int frames) {
BB_LOOP(rq_beat)
  for (long i = 0; i < static_cast<long>(frames) * (P::N / P::LANES); ++i) {
    BB_PIPELINE(1)
    const Beat<P::LANES> x = in.read();
    Beat<P::LANES> o;
    for (int p = 0; p < P::LANES; ++p) {
      o.d[p] = requant(static_cast<int32_t>(x.d[p]) - P::ZP_IN, P::MULT, P::SHIFT, P::ZP_OUT, P::LO, P::HI);
    }
    out.write(o);
  }
}

}  // namespace bb

#endif  // BBGRAP_ELTWISE_H
