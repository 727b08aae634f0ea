// bbgrap-hls kernel library: weight memories (docs/codegen.md, "Weight memories").
//
// A matrix-vector unit reads PE·SIMD weights per cycle, all at one address. The cost
// model (docs/cost-model.md) counts them as PE banks of SIMD·8-bit words (BRAM, LUTRAM)
// or as one memory whose PE·SIMD·8-bit word holds all banks side by side (URAM). The
// kernels accept both layouts, told apart by type:
//
//   banks:  const Word<SIMD> w[PE][DEPTH]   (the core top: AGGREGATE + ARRAY_PARTITION dim=1)
//   wide:   Word<PE·SIMD>    w[DEPTH]       (the core top: AGGREGATE + BIND_STORAGE ram_1p uram)
//
// `weight_word` fetches the PE×SIMD weights of one address from either. A depthwise conv
// is the same with PE = SIMD products and one lane per bank (Word<1>[SIMD][DEPTH]).
// URAM on UltraScale+ has no bitstream initialisation: a wide memory is a RAM that
// `load_words` fills from an m_axi weight image at the start of a call.
#ifndef BBGRAP_BB_WEIGHTS_H
#define BBGRAP_BB_WEIGHTS_H

#include "bb_common.h"

namespace bb {

/// A packed weight word: N int8 lanes read together (one memory word of 8·N bits once
/// the array holding it is AGGREGATEd; lane i sits in bits [8i, 8i+8)).
template <int N>
struct Word {
  int8_t d[N];
};

/// The PE×SIMD weights at address `a` of PE banks of SIMD-lane words.
template <int PE, int SIMD, int D>
inline void weight_word(const Word<SIMD> (*w)[D], int a, int8_t v[PE][SIMD]) {
  BB_HLS(INLINE)
  for (int pe = 0; pe < PE; ++pe) {
    const Word<SIMD> x = w[pe][a];
    for (int s = 0; s < SIMD; ++s) v[pe][s] = x.d[s];
  }
}

/// The PE×SIMD weights at address `a` of one memory of PE·SIMD-lane words (bank pe in
/// lanes [pe·SIMD, (pe+1)·SIMD)).
template <int PE, int SIMD>
inline void weight_word(const Word<PE * SIMD>* w, int a, int8_t v[PE][SIMD]) {
  BB_HLS(INLINE)
  const Word<PE * SIMD> x = w[a];
  for (int pe = 0; pe < PE; ++pe) {
    for (int s = 0; s < SIMD; ++s) v[pe][s] = x.d[pe * SIMD + s];
  }
}

/// Fill a wide weight memory (D words of N lanes) from `src`: byte i·N + j is lane j of
/// word i (the weight image written by gen). One byte per cycle, one write per word.
template <int N, int D>
void load_words(const int8_t* src, Word<N> w[D]) {
  Word<N> x = {};
  int lane = 0, addr = 0;
BB_LOOP(load_words)
  for (int k = 0; k < N * D; ++k) {
    BB_HLS(PIPELINE II = 1)
    x.d[lane] = src[k];
    if (lane == N - 1) {
      w[addr] = x;
      lane = 0;
      ++addr;
    } else {
      ++lane;
    }
  }
}

}  // namespace bb

#endif  // BBGRAP_BB_WEIGHTS_H
