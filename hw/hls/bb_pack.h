// bbgrap-hls kernel library: DSP packing, two int8 products of one operand in one DSP48E2.
//
// A matrix-vector unit multiplies each input element x by the weights of every output
// lane. Output lanes 2i (w_lo) and 2i+1 (w_hi) share one 27 × 18 multiply:
//
//   A = w_hi·2^18 + w_lo           (27-bit signed)
//   P = A·x = (w_hi·x)·2^18 + w_lo·x   (35-bit signed)
//
// Every int8 product lies in [−16256, 16384] ⊂ [−2^17, 2^17), so the low 18 bits of P,
// read as a signed number, are w_lo·x exactly, and P >> 18 (arithmetic) is
// w_hi·x + floor(w_lo·x / 2^18) = w_hi·x − [w_lo·x < 0]; the correction adds back bit 17
// of P (the lower field's sign):
//
//   p_lo = P[17:0] (signed; its low 16 bits suffice)      p_hi = (P >> 18) + P[17]
//
// the formula of hw/rtl/mac2.sv. The fields are separated after every product (bound 1);
// up to 7 products could accumulate in the lower field before separation (7·16384 < 2^17).
// Written as one int64 product of an int32 and an int8 so that Vitis HLS maps it to one
// DSP48E2 (A: 27 bits, B: 8 of 18); tests/test_dsp_packing.py checks all 2^24 triples.
// A layer opts in with `static constexpr int PACK = 2;` in its parameter struct
// (`pack_of<P>()`: 1 when absent); `PACK = 0` puts every product in LUTs instead (BIND_OP
// impl = fabric; the RTL's lut_mul.sv), for the LUT budget a plan spends on MACs.
// `static constexpr int RQ_LUT = 1;` (`rq_lut_of<P>()`: 0 when absent) builds the
// requantisers' 32 × 25-bit products (and an add's or mul's rescaling products) in LUTs
// too (`requant_with`, `wide_mul`; the RTL's rq_lane.sv / eltwise.sv RQ_LUT = 1,
// lut_mulw.sv): a block with no DSP48E2 at all, for cores without DSPs.
#ifndef BBGRAP_BB_PACK_H
#define BBGRAP_BB_PACK_H

#include "bb_common.h"

namespace bb {

template <class...>
struct VoidOf {
  using type = void;
};

/// P::PACK when the struct declares it, else 1 (C++14: no std::void_t).
template <class P, class = void>
struct PackOf {
  static constexpr int value = 1;
};
template <class P>
struct PackOf<P, typename VoidOf<decltype(P::PACK)>::type> {
  static constexpr int value = P::PACK;
};
template <class P>
constexpr int pack_of() {
  return PackOf<P>::value;
}

/// P::RQ_LUT when the struct declares it, else 0.
template <class P, class = void>
struct RqLutOf {
  static constexpr int value = 0;
};
template <class P>
struct RqLutOf<P, typename VoidOf<decltype(P::RQ_LUT)>::type> {
  static constexpr int value = P::RQ_LUT;
};
template <class P>
constexpr int rq_lut_of() {
  return RqLutOf<P>::value;
}

/// a·b in 64 bits: RQ_LUT = 0 as the tool maps it (DSP48E2s), 1 in the fabric (BIND_OP
/// impl = fabric; the RTL's lut_mulw.sv). Same value either way.
template <int RQ_LUT>
inline int64_t wide_mul(int64_t a, int64_t b) {
  BB_HLS(INLINE)
  static_assert(RQ_LUT == 0, "wide_mul: RQ_LUT is 0 (DSP) or 1 (LUT)");
  return a * b;
}
template <>
inline int64_t wide_mul<1>(int64_t a, int64_t b) {
  BB_HLS(INLINE)
  int64_t p = a * b;
  BB_HLS(BIND_OP variable = p op = mul impl = fabric)
  return p;
}

/// `requant` with its acc·mult product bound as RQ_LUT says (0: `rq_mul`'s two DSP48E2s,
/// 1: `wide_mul` in the fabric, the multiplier's 24 bits as rq_lane.sv): bit-exact with it.
template <int RQ_LUT>
inline int8_t requant_with(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi) {
  BB_HLS(INLINE)
  int64_t p = RQ_LUT ? wide_mul<RQ_LUT>(acc, mult & 0xFFFFFF) : rq_mul(acc, mult);
  if (shift > 0) p += static_cast<int64_t>(1) << (shift - 1);
  return clamp8(static_cast<int64_t>(zp) + (p >> shift), lo, hi);
}

/// The packed operand w_hi·2^18 + w_lo (27-bit signed).
inline int32_t pack_weights(int8_t w_hi, int8_t w_lo) {
  return static_cast<int32_t>(w_hi) * (1 << 18) + static_cast<int32_t>(w_lo);
}

/// w_hi·x and w_lo·x from one 27 × 8-bit product (one DSP48E2), separated and corrected.
inline void mul2(int8_t x, int8_t w_hi, int8_t w_lo, int32_t& p_hi, int32_t& p_lo) {
  BB_HLS(INLINE)
  const int64_t p = static_cast<int64_t>(pack_weights(w_hi, w_lo)) * static_cast<int64_t>(x);
  p_lo = static_cast<int32_t>(((p & 0x3FFFF) ^ 0x20000) - 0x20000);  // P[17:0] as signed
  p_hi = static_cast<int32_t>((p >> 18) + ((p >> 17) & 1));
}

/// One int8 product x·w: PACK = 1 a plain product (a DSP48E2), PACK = 0 in LUTs (BIND_OP
/// impl = fabric; the RTL's lut_mul.sv). The depthwise conv's lanes (dwconv2d.h) have no
/// shared operand to pack, so 2 is not offered there.
template <int PACK>
inline int32_t mul_lane(int8_t x, int8_t w) {
  BB_HLS(INLINE)
  static_assert(PACK == 0 || PACK == 1, "mul_lane: PACK is 0 (LUT) or 1 (DSP)");
  if (PACK == 0) {
    int16_t p = static_cast<int16_t>(x * w);
    BB_HLS(BIND_OP variable = p op = mul impl = fabric)
    return p;
  }
  return static_cast<int32_t>(x) * static_cast<int32_t>(w);
}

/// a[pe] += Σ_s x[s]·w[pe][s] over PE output lanes; PACK = 2: lanes 2i and 2i+1 take their
/// products from one `mul2` per s (an odd PE's last lane alone).
template <int PACK, int PE, int SIMD>
inline void mac_lanes(const int8_t* x, const int8_t w[PE][SIMD], int32_t a[PE]) {
  BB_HLS(INLINE)
  static_assert(PACK >= 0 && PACK <= 2, "PACK is 0 (LUT), 1 or 2");
  constexpr int PAIRS = PACK == 2 ? PE / 2 : 0;
  if (PACK == 0) {  // every product in the fabric (hw/rtl/lut_mul.sv), no DSP48E2
    for (int pe = 0; pe < PE; ++pe) {
      for (int s = 0; s < SIMD; ++s) {
        int16_t p = static_cast<int16_t>(x[s] * w[pe][s]);
        BB_HLS(BIND_OP variable = p op = mul impl = fabric)
        a[pe] += p;
      }
    }
    return;
  }
  for (int i = 0; i < PAIRS; ++i) {
    for (int s = 0; s < SIMD; ++s) {
      int32_t hi, lo;
      mul2(x[s], w[2 * i + 1][s], w[2 * i][s], hi, lo);
      a[2 * i] += lo;
      a[2 * i + 1] += hi;
    }
  }
  for (int pe = 2 * PAIRS; pe < PE; ++pe) {
    for (int s = 0; s < SIMD; ++s) a[pe] += static_cast<int32_t>(x[s]) * static_cast<int32_t>(w[pe][s]);
  }
}

}  // namespace bb

#endif  // BBGRAP_BB_PACK_H
