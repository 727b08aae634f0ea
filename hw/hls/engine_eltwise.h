// bbgrap-hls kernel library: the layer engine's element-wise unit (docs/engine.md,
// "Element-wise unit"; the RTL twin is hw/rtl/engine_eltwise.sv).
//
// One call runs one layer described by an EltwiseDesc (codegen/engine_eltwise.py
// ELTWISE_FIELDS, the same words in the same order) over int8 feature maps in board memory,
// in the engine's blocked layout (codegen/engine_image.py feature_bytes: G channels a block,
// C padded to G, block b of map X at x_base + b·x_stride):
//   ADD   y = clamp(zy + ((ma·(a − za) + mb·(b − zb) + 2^(s−1)) >> s), lo, hi)
//   MUL   y = clamp(zy + (((a − za)·(b − zb)·m + 2^(s−1)) >> s), lo, hi), b a map like a
//   MULV  the same, b a per-channel vector broadcast over the pixels (squeeze-excite): a 1 x 1
//         map at b_base, its blocks b_stride apart (G: the C bytes in channel order)
//   TABLE y = T[a + 128] (the 256-byte table at t_base of the weight port)
// lut = 1 passes ADD/MUL/MULV's result through the table too (a fused activation); s = 0 has
// no rounding term. Runs: a_stride = out_stride (= b_stride in ADD, MUL) = H·W·G (blocks
// contiguous): the map is one run of H·W·C bytes, byte i channel (i / (H·W·G))·G + i mod G
// (only MULV needs it); else (strides multiples of DDR_BEAT) a run of H·W·G bytes a block,
// from x_base + b·x_stride, all of block b's channels.
//
// P gives G (channels a block, a power of two dividing the beat), BURST (beats a chunk),
// CMAX (the most channels a MULV vector has) and optionally BEAT (bytes a memory word; default
// DDR_BEAT, 512-bit m_axi). Ports as conv2d_offchip.h's: fmem and wmem are BEAT-byte words
// (the top function declares the INTERFACE pragmas); every base is a byte address, a
// multiple of BEAT. Below, DDR_BEAT stands for BEAT. Per call: the table (if used) and
// MULV's vector into on-chip arrays, then per run, per chunk of BURST beats one burst of A,
// one of B (ADD, MUL; from fmem: wmem is the weight image, B is not in it; the RTL reads B on
// its weight port), BURST result beats (II = 1, DDR_BEAT lanes), one burst of the result. A run's last beat is read and written whole: its bytes past the run are the
// region's padding or the block's stride gap.
#ifndef BBGRAP_ENGINE_ELTWISE_H
#define BBGRAP_ENGINE_ELTWISE_H

#include "bb_common.h"

namespace bb {

enum : int32_t { ELT_ADD = 0, ELT_MUL = 1, ELT_MULV = 2, ELT_TABLE = 3 };

/// A layer's descriptor: ELTWISE_FIELDS in order (int8 values sign-extended).
struct EltwiseDesc {
  int32_t mode, h, w, c, za, zb, ma, mb, m, s, zy, lo, hi, lut, a_base, b_base, out_base, t_base, a_stride,
      b_stride, out_stride;
};

/// One byte lane: the op with its one rounding, then the table where it is on.
inline int8_t eltwise_lane(const EltwiseDesc& d, int8_t a, int8_t b, const int8_t tab[256], bool table) {
  BB_HLS(INLINE)
  int8_t y = a;
  if (d.mode != ELT_TABLE) {
    const int64_t da = static_cast<int64_t>(a) - d.za, db = static_cast<int64_t>(b) - d.zb;
    // ADD: two 9 x 25-bit products; MUL: 9 x 9 then 18 x 25 (|ma|, |mb|, m < 2^24)
    int64_t v = d.mode == ELT_ADD ? da * d.ma + db * d.mb : da * db * d.m;
    if (d.s > 0) v += static_cast<int64_t>(1) << (d.s - 1);
    y = clamp8(static_cast<int64_t>(d.zy) + (v >> d.s), d.lo, d.hi);
  }
  return table ? tab[static_cast<int>(y) + 128] : y;
}

template <class P>
void engine_eltwise(const EltwiseDesc& d, Word<EngineBeat<P>::value>* fmem, const Word<EngineBeat<P>::value>* wmem) {
  constexpr int B = EngineBeat<P>::value, G = P::G, NCH = B / G, BURST = P::BURST;
  static_assert(G > 0 && (G & (G - 1)) == 0 && B % G == 0, "engine_eltwise: G a power of two dividing the beat");
  static_assert(BURST > 0 && BURST <= 256 && P::CMAX % G == 0, "engine_eltwise: BURST in 1..256, G | CMAX");
  const bool table = d.mode == ELT_TABLE || d.lut != 0;
  const bool two = d.mode == ELT_ADD || d.mode == ELT_MUL;

  int8_t tab[256] = {};
  BB_HLS(ARRAY_PARTITION variable = tab complete)
  if (table) {
  BB_LOOP(eltwise_table)
    for (int k = 0; k < 256 / B; ++k) {
      BB_PIPELINE(1)
      const Word<B> t = wmem[d.t_base / B + k];
      for (int j = 0; j < B; ++j) tab[k * B + j] = t.d[j];
    }
  }
  // MULV's vector (a map's last beat may look past its last block: padding, read as 0)
  int8_t vec[P::CMAX] = {};
  BB_HLS(ARRAY_PARTITION variable = vec cyclic factor = B)
  if (d.mode == ELT_MULV && d.b_stride != G) {  // a strided vector: block k's G bytes
  BB_LOOP(eltwise_vector_block)
    for (int k = 0; k < d.c / G; ++k) {
      BB_PIPELINE(1)
      const Word<B> t = fmem[(d.b_base + static_cast<long>(k) * d.b_stride) / B];
      for (int j = 0; j < G; ++j) {
        if (k * G + j < P::CMAX) vec[k * G + j] = t.d[j];
      }
    }
  } else if (d.mode == ELT_MULV) {
  BB_LOOP(eltwise_vector)
    for (int k = 0; k < (d.c + B - 1) / B; ++k) {
      BB_PIPELINE(1)
      const Word<B> t = fmem[d.b_base / B + k];
      for (int j = 0; j < B; ++j) {
        if (k * B + j < P::CMAX) vec[k * B + j] = t.d[j];
      }
    }
  }

  const long hw = static_cast<long>(d.h) * d.w;
  const bool runs = d.a_stride != hw * G || d.out_stride != hw * G || (two && d.b_stride != hw * G);
  const int nrun = runs ? d.c / G : 1;
  const long nb = ((runs ? hw * G : hw * d.c) + B - 1) / B;  // beats a run
  long blk = 0, pix = 0;  // MULV: block and pixel of the next beat's first G-byte group
  Word<B> abuf[BURST], bbuf[BURST], obuf[BURST];
BB_LOOP(eltwise_run)
  for (int r = 0; r < nrun; ++r) {
  const long ar = (d.a_base + static_cast<long>(r) * d.a_stride) / B, br = (d.b_base + static_cast<long>(r) * d.b_stride) / B,
             orun = (d.out_base + static_cast<long>(r) * d.out_stride) / B;
  if (runs) {  // a run a block: every group of block r
    blk = r;
    pix = 0;
  }
BB_LOOP(eltwise_chunk)
  for (long p = 0; p < nb; p += BURST) {
    const int n = static_cast<int>(nb - p < BURST ? nb - p : BURST);
  BB_LOOP(eltwise_read_a)
    for (int k = 0; k < n; ++k) {
      BB_PIPELINE(1)
      abuf[k] = fmem[ar + p + k];
    }
    if (two) {
    BB_LOOP(eltwise_read_b)
      for (int k = 0; k < n; ++k) {
        BB_PIPELINE(1)
        bbuf[k] = fmem[br + p + k];
      }
    }
  BB_LOOP(eltwise_beat)
    for (int k = 0; k < n; ++k) {
      BB_PIPELINE(1)
      long gb = blk, gp = pix;  // group q's block and pixel, stepped group by group
      for (int q = 0; q < NCH; ++q) {
        for (int j = 0; j < G; ++j) {
          const int i = q * G + j;
          const long vi = gb * G + j;
          const int8_t v = vi < P::CMAX ? vec[vi] : static_cast<int8_t>(0);
          const int8_t b = two ? bbuf[k].d[i] : d.mode == ELT_MULV ? v : static_cast<int8_t>(0);
          obuf[k].d[i] = eltwise_lane(d, abuf[k].d[i], b, tab, table);
        }
        if (++gp == hw && !runs) {
          gp = 0;
          ++gb;
        }
      }
      blk = gb;
      pix = gp;
    }
  BB_LOOP(eltwise_write)
    for (int k = 0; k < n; ++k) {
      BB_PIPELINE(1)
      fmem[orun + p + k] = obuf[k];
    }
  }
  }
}

}  // namespace bb

#endif  // BBGRAP_ENGINE_ELTWISE_H
