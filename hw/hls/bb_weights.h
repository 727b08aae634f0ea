// bbgrap-hls kernel library: weight memories (docs/codegen.md, "Weight memories").
//
// A matrix-vector unit reads PE·SIMD weights per cycle, all at one address: PE banks of
// SIMD int8 lanes. The kernels accept two layouts, told apart by type:
//
//   wide:   Word<PE·SIMD> w[DEPTH]           one memory, the banks side by side in a word
//   banks:  const Word<SIMD> w[PE][DEPTH]    PE memories (with ARRAY_PARTITION dim=1)
//
// Gen declares the wide layout for every placement, which is what the cost model counts
// (model/blocks.py: one memory of PE·SIMD·8-bit words in BRAM, LUTRAM or URAM), and
// AGGREGATEs the array so that one Word is one memory word: a ROM bound to BRAM/LUTRAM,
// or, in URAM, a RAM (URAM has no bitstream initialisation on UltraScale+) that
// `load_words` fills from an m_axi weight image at the start of a call. `weight_word`
// fetches the PE×SIMD weights of one address from either layout. A depthwise conv is the
// same with SIMD one-lane banks (Word<SIMD> w[DEPTH], or Word<1> w[SIMD][DEPTH]).
//
//   halves: Half<PE·SIMD/2> w[2·DEPTH]        a URAM memory of half-words, word a's lanes
//                                            [0, N/2) at 2a and [N/2, N) at 2a+1
//
// A wide, shallow weight memory in URAM (4,096 bits × 288 words) fills its 72-bit URAM
// columns to a few percent of their 4K depth; read as halves through the URAM's two ports
// in one cycle (ram_t2p) it needs half the columns (model/memory.py, `uram_halves`). The
// byte image is the same as the wide layout's.
#ifndef BBGRAP_BB_WEIGHTS_H
#define BBGRAP_BB_WEIGHTS_H

#include "bb_common.h"

namespace bb {

/// Half of a weight word (N int8 lanes): two of them, at 2a and 2a+1, make word a.
template <int N>
struct Half {
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

/// The PE×SIMD weights at address `a` of a memory of half-words (PE·SIMD/2 lanes): the
/// two reads of one cycle, one per port of a ram_t2p.
template <int PE, int SIMD>
inline void weight_word(const Half<PE * SIMD / 2>* w, int a, int8_t v[PE][SIMD]) {
  BB_HLS(INLINE)
  constexpr int H = PE * SIMD / 2;
  const Half<H> lo = w[2 * a];
  const Half<H> hi = w[2 * a + 1];
  for (int pe = 0; pe < PE; ++pe) {
    for (int s = 0; s < SIMD; ++s) {
      const int i = pe * SIMD + s;
      v[pe][s] = i < H ? lo.d[i] : hi.d[i - H];
    }
  }
}

/// Fill a wide weight memory (D words of N lanes) from `src`: byte i·N + j is lane j of
/// word i (the weight image written by gen). One byte per cycle, one write per word.
template <int N, int D>
void load_words(const int8_t* src, Word<N> w[D]) {
  Word<N> x = {};
  int lane = 0, addr = 0;
BB_LOOP(load_w)
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

/// Fill a memory of half-words (2·D words of N/2 lanes) from the same image as
/// `load_words`: byte i·N + j is lane j of word i, so half-word k holds bytes [k·N/2, (k+1)·N/2).
template <int N, int D>
void load_halves(const int8_t* src, Half<N / 2> w[2 * D]) {
  Half<N / 2> x = {};
  int lane = 0, addr = 0;
BB_LOOP(load_h)
  for (int k = 0; k < N * D; ++k) {
    BB_HLS(PIPELINE II = 1)
    x.d[lane] = src[k];
    if (lane == N / 2 - 1) {
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
