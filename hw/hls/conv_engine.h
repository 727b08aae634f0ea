// bbgrap-hls kernel library: the layer engine (docs/engine.md), one conv/dense unit of PE
// output channels x SIMD input elements time-shared over a program of layers, with the
// feature maps and the weights in board memory.
//
// P gives PE, SIMD (SIMD | PE), IBUF_WORDS (SIMD-byte words of the input buffer: the largest
// H·W·C/SIMD of a program's steps, a whole map or a band's rows), TILE_WORDS (PE·SIMD-byte words of the largest tile of a program,
// PW + SF, SF = KH·KW·C/SIMD: the RTL conv_engine's parameters of the same names) and
// optionally BEAT (bytes of an m_axi beat, a power of two; default DDR_BEAT, 512 bits).
// On chip: the input buffer (IBUF_WORDS words of SIMD bytes), the tile memory (two halves of
// TILE_WORDS - PW words of PE·SIMD bytes: the weights; the records of the two tiles in
// registers).
// DSP packing: the RTL conv_engine.sv packs (PACK = 1: output lanes 2i and 2i+1 share one
// DSP48E2 per input element, mac2.sv; the plan's engine counts PE·SIMD/2 product DSPs). This
// kernel writes one plain int8 product per lane and leaves the binding to Vitis HLS, which may
// or may not pack them (no pragma or bb_pack.h call here; not checked: no Vitis run).
//
// Program: `EngineLayer` rows (engine_image.FIELDS, int32 each), one per step: a layer, or a
// band of its output rows (engine_image.program with max_in_bytes: H the band's input rows,
// PT/PB the padding it has, IN_BASE/OUT_BASE its first input/output row), the steps of a
// layer after those of the layer whose map it reads. Memory layout
// (bbgrap_hls/codegen/engine_image.py, the one definition):
//   feature memory (fmem, read and written): maps blocked by PE channels, byte
//     b·STRIDE + p·PE + j = channel b·PE + j of pixel p, C and CO padded to multiples of PE,
//     each map from a beat-aligned byte offset; STRIDE (IN_STRIDE, OUT_STRIDE) the block's
//     own bytes (blocks abut) or a multiple of the beat (each block from a beat);
//   weight memory (wmem, read only): the layer's CO/PE fold tiles from byte W_BASE, tile n at
//     W_BASE + n·TILE_BEATS·BEAT: PW = ceil(8·PE / (PE·SIMD)) words of PE requantiser records
//     (int32 bias', then uint32 (m << 8) | s, little-endian), then SF weight words of PE·SIMD
//     bytes (lane i·SIMD + j: output channel n·PE + i, window element s·SIMD + j in
//     (ky, kx, c) order: conv_offchip's words), zero-padded to whole beats.
//
// Batched frames (FRAMES > 1, docs/engine.md): a step loads FRAMES inputs (frame f's from
// IN_BASE + f·FRAME_STRIDE, after frame f - 1's in x), computes each fold over every frame's
// pixels in turn with the fold's one tile, and writes (fold n, frame f) from OUT_BASE +
// n·OUT_STRIDE + f·FRAME_STRIDE: the weights are read once for FRAMES frames.
// Schedule: per call (one frame; FRAMES frames when batched), for each step in order:
//   engine_load     the step's input rows: engine_image.load_runs' runs (blocks that abut:
//                   one run of H·W·C bytes from IN_BASE; else a run of H·W·PE bytes per
//                   block from IN_BASE + b·IN_STRIDE), each one linear read burst from the
//                   beat holding its first byte (the leading IN_BASE mod BEAT bytes dropped),
//                   repacked into SIMD-byte words (one a cycle when SIMD <= BEAT) stored
//                   pixel-major in the input buffer x (word p·C/SIMD + cg, as
//                   conv_offchip's frame buffer);
//   then a DATAFLOW region of three processes joined by streams:
//     engine_fetch    tile after tile, TILE_BEATS beats each (one read burst a tile) repacked
//                     into PE·SIMD-byte words onto a word stream;
//     engine_compute  tile 0's PW + SF words, then fold n = 0 .. CO/PE - 1: Ho·Wo·SF cycles
//                     (II = 1) over every output pixel, window word s from x (padding ZP_IN,
//                     stride SH x SW, dilation 1) times weight word s of tile half n mod 2,
//                     the PE accumulators requantised (bb::requant) when s = SF - 1; meanwhile
//                     the words of tile n + 1 arrive into the other half (records decoded into
//                     registers, weights into the tile memory); a fold whose next tile has not
//                     all arrived waits for it at its end (the prefetch of conv_offchip);
//     engine_store    the PE-byte results, fold after fold, packed into beats: fold n lands
//                     at OUT_BASE + n·OUT_STRIDE. Blocks that abut (OUT_STRIDE = Ho·Wo·PE):
//                     one linear write of ceil(Ho·Wo·CO / BEAT) beats; else (OUT_STRIDE a
//                     multiple of the beat) one linear write a fold of ceil(Ho·Wo·PE / BEAT)
//                     beats. A write's last beat is zero-padded: the bytes land in the gap
//                     up to the next beat-aligned block or map, or in the next band's rows
//                     of the block (that band, later, writes them).
//   The next step's load starts once the region has returned, after the store's last write
//   (on hardware: assuming the m_axi adapter holds the region's done until the write
//   responses are back, not checked here), so it reads the whole map. Tile 0's fetch is not
//   overlapped with the load (the load is outside the region: one process per m_axi port in a
//   region), nor are consecutive layers or frames.
// Before running anything the kernel checks every descriptor against P (C, CO multiples of
// PE; the step's input rows within IBUF_WORDS; PW + SF within TILE_WORDS; TILE_BEATS large
// enough; OUT_BASE, W_BASE beat-aligned; the strides as above; a non-empty output) and returns
// 1 + the index of the first step that does not fit without touching memory; 0 when the frame
// ran.
//
// Not checked: Vitis HLS has not been run on this kernel (no synthesis, II, resource or
// burst report; the pragmas follow conv_offchip's; runtime loop bounds carry no
// LOOP_TRIPCOUNT, so latency reports would say "?"). The top-level
// INTERFACE pragmas (fmem, wmem as m_axi bundles; prog as s_axilite or a BRAM port) are the
// caller's, as for the other kernels. C simulation (tests/test_hls_engine.py) runs the
// DATAFLOW processes one after another with unbounded streams, so it checks the bytes, not
// the overlap of fetch and compute or the stream depths. A record's shift must be at most 62
// (bb::requant; engine_image writes 1..62); the kernel does not check the records.
#ifndef BBGRAP_CONV_ENGINE_H
#define BBGRAP_CONV_ENGINE_H

#include <type_traits>

#include "bb_weights.h"
#include "bb_dataflow.h"

namespace bb {

/// One step's descriptor (a layer or a row band of one): engine_image.FIELDS in order, one
/// int32 each.
struct EngineLayer {
  int32_t H, W, C, CO, KH, KW, SH, SW, PT, PL, PB, PR, ZP_IN, ZP_OUT, LO, HI, IN_BASE, OUT_BASE, W_BASE, TILE_BEATS,
      IN_STRIDE, OUT_STRIDE, FRAMES, FRAME_STRIDE;
};
static_assert(sizeof(EngineLayer) == 24 * 4, "EngineLayer: the 24 words of engine_image.FIELDS");

/// The engine's fixed geometry.
template <class P>
struct EngineGeom {
  static constexpr int PE = P::PE, SIMD = P::SIMD, N = PE * SIMD, B = EngineBeat<P>::value;
  static constexpr int QB = PE / SIMD;             // input words of a PE-channel block
  static constexpr int REC = 8 * PE;               // requantiser record bytes of a tile
  static constexpr int PW = (REC + N - 1) / N;     // record words of a tile
  static_assert(PE % SIMD == 0, "conv_engine: SIMD | PE");
  static_assert(B > 0 && (B & (B - 1)) == 0, "conv_engine: BEAT is a power of two");
  static constexpr int TW = P::TILE_WORDS - PW;  // weight words of a tile half
  static_assert(P::IBUF_WORDS > 0 && TW > 0, "conv_engine: IBUF_WORDS > 0, TILE_WORDS > PW");
};

/// Whether descriptor `d` fits the engine P (see the header).
template <class P>
bool engine_fits(const EngineLayer& d) {
  using G = EngineGeom<P>;
  if (d.H < 1 || d.W < 1 || d.C < G::PE || d.CO < G::PE || d.C % G::PE || d.CO % G::PE) return false;
  if (d.KH < 1 || d.KW < 1 || d.SH < 1 || d.SW < 1 || d.PT < 0 || d.PL < 0 || d.PB < 0 || d.PR < 0) return false;
  if (d.H + d.PT + d.PB < d.KH || d.W + d.PL + d.PR < d.KW) return false;
  if (d.IN_BASE < 0 || d.OUT_BASE < 0 || d.W_BASE < 0 || d.OUT_BASE % G::B || d.W_BASE % G::B) return false;
  const long blk = static_cast<long>(d.H) * d.W * G::PE;
  if (d.IN_STRIDE != blk && (d.IN_STRIDE % G::B || d.IN_STRIDE < blk)) return false;
  const long oblk = static_cast<long>((d.H + d.PT + d.PB - d.KH) / d.SH + 1) * ((d.W + d.PL + d.PR - d.KW) / d.SW + 1) * G::PE;
  if (d.OUT_STRIDE != oblk && (d.OUT_STRIDE % G::B || d.OUT_STRIDE < oblk)) return false;
  if (d.FRAMES < 1 || (d.FRAMES > 1 && (d.FRAME_STRIDE <= 0 || d.FRAME_STRIDE % G::B || d.OUT_STRIDE % G::B)))
    return false;
  const long sf = static_cast<long>(d.KH) * d.KW * (d.C / G::SIMD);
  if (static_cast<long>(d.H) * d.W * (d.C / G::SIMD) * d.FRAMES > P::IBUF_WORDS) return false;
  if (G::PW + sf > P::TILE_WORDS) return false;
  return static_cast<long>(d.TILE_BEATS) * G::B >= (G::PW + sf) * G::N;
}

/// One step of a byte repacker holding `have` bytes of a stream in `buf` (IN + OUT bytes,
/// those from `have` on zero): drop the OUT bytes at the front if `drop`, then, if `take`,
/// append the IN bytes of `w` after the `keep` bytes that are left.
template <int IN, int OUT>
inline void repack(int8_t buf[IN + OUT], bool drop, int keep, bool take, const Word<IN>& w) {
  BB_HLS(INLINE)
  constexpr int CAP = IN + OUT;
  for (int j = 0; j < CAP; ++j) {
    const int8_t old = drop ? (j + OUT < CAP ? buf[j + OUT] : static_cast<int8_t>(0)) : buf[j];
    buf[j] = take && j >= keep && j < keep + IN ? w.d[j - keep] : old;
  }
}

/// Frame f's input rows into x from word f·H·W·C/SIMD: engine_image.load_runs' runs (one of
/// the whole map where the blocks abut, else one a block, IN_STRIDE apart) from IN_BASE +
/// f·FRAME_STRIDE, each one linear burst from the beat holding its first byte, the leading
/// IN_BASE mod BEAT bytes dropped, repacked into SIMD-byte words; word (b·H·W + p)·PE/SIMD + q
/// of the runs' bytes is x word p·C/SIMD + b·PE/SIMD + q (after the earlier frames').
template <class P>
void engine_load(const Word<EngineGeom<P>::B>* fmem, const EngineLayer& d, int f, Word<P::SIMD> x[P::IBUF_WORDS]) {
  using G = EngineGeom<P>;
  constexpr int S = G::SIMD, B = G::B, QB = G::QB;
  const int hw = d.H * d.W, cb = d.C / S, skip = d.IN_BASE % B;
  const bool abut = d.IN_STRIDE == hw * G::PE;
  const int runs = abut ? 1 : d.C / G::PE;
  const long run_bytes = static_cast<long>(hw) * (abut ? d.C : G::PE), run_words = run_bytes / S;
  const long beats = (skip + run_bytes + B - 1) / B;
  const long first = static_cast<long>(f) * hw * cb;  // the frame's first word of x
  const long in_base = d.IN_BASE + static_cast<long>(f) * d.FRAME_STRIDE;
  int q = 0, p = 0, blk = 0;
  long a = first;  // a = first + p·cb + blk·QB + q
BB_LOOP(engine_runs)
  for (int r = 0; r < runs; ++r) {
    const long base = (in_base - skip + static_cast<long>(r) * d.IN_STRIDE) / B;
    int8_t buf[B + S] = {};
    BB_HLS(ARRAY_PARTITION variable = buf complete)
    int have = 0;
    long beat = 0, got = 0, left = run_bytes;  // left: the run's bytes not yet taken
  BB_LOOP(engine_load)
    while (got < run_words) {
      BB_PIPELINE(1)
      const bool emit = have >= S;
      if (emit) {
        Word<S> v;
        for (int j = 0; j < S; ++j) v.d[j] = buf[j];
        x[a] = v;
        ++got;
        if (q < QB - 1) {
          ++q;
          ++a;
        } else if (p < hw - 1) {
          q = 0;
          ++p;
          a += cb - (QB - 1);
        } else {
          q = p = 0;
          ++blk;
          a = first + blk * QB;
        }
      }
      const int keep = emit ? have - S : have;
      const bool take = keep < S && beat < beats;
      const int drop = beat == 0 ? skip : 0;  // the run's first beat: the bytes before IN_BASE
      Word<B> bt = {}, sh = {};
      if (take) bt = fmem[base + beat];  // sequential addresses: one read burst a run
      for (int j = 0; j < B; ++j) sh.d[j] = j + drop < B ? bt.d[j + drop] : static_cast<int8_t>(0);
      repack<B, S>(buf, emit, keep, take, sh);
      const int valid = take ? static_cast<int>(left < B - drop ? left : B - drop) : 0;
      if (take) ++beat;
      left -= valid;
      have = keep + valid;
    }
  }
}

/// Process 1: the layer's nf tiles, each one burst of tbeats beats from beat wbase + n·tbeats,
/// repacked into PE·SIMD-byte words (the first `words` of each; the tile's padding dropped).
template <class P>
void engine_fetch(const Word<EngineGeom<P>::B>* wmem, long wbase, int tbeats, int nf, int words,
                  Stream<EngineGeom<P>::N>& wq) {
  using G = EngineGeom<P>;
  constexpr int N = G::N, B = G::B;
BB_LOOP(engine_tiles)
  for (int n = 0; n < nf; ++n) {
    const long base = wbase + static_cast<long>(n) * tbeats;
    int8_t buf[B + N] = {};
    BB_HLS(ARRAY_PARTITION variable = buf complete)
    int have = 0, sent = 0;
    long beat = 0;
  BB_LOOP(engine_fetch)
    while (sent < words) {
      BB_PIPELINE(1)
      const bool emit = have >= N;
      if (emit) {
        Beat<N> o;
        for (int j = 0; j < N; ++j) o.d[j] = buf[j];
        wq.write(o);
        ++sent;
      }
      const int keep = emit ? have - N : have;
      const bool take = keep < N && beat < tbeats;
      Word<B> bt = {};
      if (take) bt = wmem[base + beat];  // sequential addresses: one read burst a tile
      repack<B, N>(buf, emit, keep, take, bt);
      if (take) ++beat;
      have = take ? keep + B : keep;
    }
  }
}

/// Word k of a tile into half h: a record word (k < PW) into the record bytes `rec[h]`, a
/// weight word into the tile memory.
template <class P>
inline void engine_take(const Beat<EngineGeom<P>::N>& b, int h, int k, Word<EngineGeom<P>::N>* tile,
                        int8_t rec[2][EngineGeom<P>::REC]) {
  BB_HLS(INLINE)
  using G = EngineGeom<P>;
  if (k < G::PW) {
    for (int g = 0; g < G::REC; ++g) {
      if (g / G::N == k) rec[h][g] = b.d[g % G::N];
    }
  } else {
    Word<G::N> v;
    for (int j = 0; j < G::N; ++j) v.d[j] = b.d[j];
    tile[h * G::TW + k - G::PW] = v;
  }
}

/// The little-endian 32-bit word at byte 4·i of a record half.
template <int R>
inline uint32_t engine_u32(const int8_t rec[R], int i) {
  BB_HLS(INLINE)
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(static_cast<uint8_t>(rec[4 * i + k])) << (8 * k);
  return v;
}

/// Process 2: every output pixel's PE channels fold by fold, tiles double-buffered (see the
/// header); the PE-byte results pixel by pixel (frame after frame within a fold: FRAMES),
/// fold after fold, onto yq.
template <class P>
void engine_compute(const Word<P::SIMD> x[P::IBUF_WORDS], const EngineLayer d, int ho, int wo,
                    Stream<EngineGeom<P>::N>& wq, Stream<P::PE>& yq) {
  using G = EngineGeom<P>;
  constexpr int PE = G::PE, S = G::SIMD, N = G::N, TW = G::TW;
  const int cb = d.C / S, sf = d.KH * d.KW * cb, nf = d.CO / PE, words = G::PW + sf;
  Word<N> tile[2 * TW];  // half h: the SF weight words of a fold at h·TW
  BB_HLS(AGGREGATE variable = tile compact = bit)
  BB_HLS(BIND_STORAGE variable = tile type = ram_2p)
  int8_t rec[2][G::REC];  // half h: the fold's PE records, byte for byte
  BB_HLS(ARRAY_PARTITION variable = rec type = complete dim = 0)
  int32_t acc[PE] = {}, bias[PE], mult[PE], shift[PE];
  BB_HLS(ARRAY_PARTITION variable = acc complete)
  BB_HLS(ARRAY_PARTITION variable = bias complete)
  BB_HLS(ARRAY_PARTITION variable = mult complete)
  BB_HLS(ARRAY_PARTITION variable = shift complete)
BB_LOOP(engine_first)  // tile 0 before fold 0's first product
  for (int k = 0; k < words; ++k) {
    BB_PIPELINE(1)
    engine_take<P>(wq.read(), 0, k, tile, rec);
  }
BB_LOOP(engine_fold)
  for (int n = 0; n < nf; ++n) {
    const int cur = n % 2, nxt = 1 - cur, wcur = cur * TW;
    for (int i = 0; i < PE; ++i) {
      bias[i] = static_cast<int32_t>(engine_u32<G::REC>(rec[cur], 2 * i));
      const uint32_t ms = engine_u32<G::REC>(rec[cur], 2 * i + 1);
      mult[i] = static_cast<int32_t>(ms >> 8);
      shift[i] = static_cast<int32_t>(ms & 0xFF);
    }
    const int want = n + 1 < nf ? words : 0;  // words of tile n + 1 to take during this fold
    int got = 0;
    int oy = 0, ox = 0, ky = 0, kx = 0, c = 0, s = 0;
    long xf = 0;  // the frame's first word of x
  BB_LOOP(engine_mac)  // step (frame, pixel, word s), s = (ky·KW + kx)·C/SIMD + c
    for (long i = 0; i < static_cast<long>(d.FRAMES) * ho * wo * sf; ++i) {
      BB_PIPELINE(1)
      BB_HLS(DEPENDENCE variable = tile type = inter dependent = false)  // writes go to the other half
      if (got < want) {
        Beat<N> b;
        if (wq.read_nb(b)) {
          engine_take<P>(b, nxt, got, tile, rec);
          ++got;
        }
      }
      const int iy = oy * d.SH + ky - d.PT, ix = ox * d.SW + kx - d.PL;
      Word<S> xv;
      if (iy >= 0 && iy < d.H && ix >= 0 && ix < d.W) {
        xv = x[xf + (iy * d.W + ix) * cb + c];
      } else {
        for (int t = 0; t < S; ++t) xv.d[t] = static_cast<int8_t>(d.ZP_IN);
      }
      int8_t wv[PE][S];
      BB_HLS(ARRAY_PARTITION variable = wv type = complete dim = 0)
      weight_word<PE, S>(tile, wcur + s, wv);
      Beat<PE> o;
      for (int pe = 0; pe < PE; ++pe) {
        int32_t a = s == 0 ? bias[pe] : acc[pe];
        for (int t = 0; t < S; ++t) a += static_cast<int32_t>(xv.d[t]) * static_cast<int32_t>(wv[pe][t]);
        acc[pe] = a;
        o.d[pe] = requant(a, mult[pe], shift[pe], d.ZP_OUT, d.LO, d.HI);
      }
      if (s == sf - 1) yq.write(o);
      // next step: word s + 1 of this pixel, or word 0 of the next pixel
      if (s < sf - 1) {
        ++s;
        if (++c == cb) {
          c = 0;
          if (++kx == d.KW) {
            kx = 0;
            ++ky;
          }
        }
      } else {
        s = c = kx = ky = 0;
        if (++ox == wo) {
          ox = 0;
          if (++oy == ho) {
            oy = 0;
            xf += static_cast<long>(d.H) * d.W * cb;
          }
        }
      }
    }
  BB_LOOP(engine_rest)  // words of tile n + 1 that did not arrive during fold n
    for (int k = got; k < want; ++k) {
      BB_PIPELINE(1)
      engine_take<P>(wq.read(), nxt, k, tile, rec);
    }
  }
}

/// Process 3: the PE-byte results (`runs` runs of `words` each, for each of `frames` frames)
/// packed into beats, run r of frame f written from beat obase + r·ostride + f·fstride in one
/// linear burst, its last beat zero-padded; fold-major (run r's frames, then run r + 1's).
template <class P>
void engine_store(Stream<P::PE>& yq, int runs, int frames, long words, long obase, long ostride, long fstride,
                  Word<EngineGeom<P>::B>* fmem) {
  using G = EngineGeom<P>;
  constexpr int PE = G::PE, B = G::B;
  const long beats = (words * PE + B - 1) / B;
BB_LOOP(engine_store_runs)
  for (int rf = 0; rf < runs * frames; ++rf) {
    const long rbase = obase + (rf / frames) * ostride + (rf % frames) * fstride;
    int8_t buf[PE + B] = {};
    BB_HLS(ARRAY_PARTITION variable = buf complete)
    int have = 0;
    long got = 0, beat = 0;
  BB_LOOP(engine_store)
    while (beat < beats) {
      BB_PIPELINE(1)
      const bool emit = have >= B || (got == words && have > 0);
      if (emit) {
        Word<B> o;
        for (int j = 0; j < B; ++j) o.d[j] = buf[j];
        fmem[rbase + beat] = o;  // sequential addresses: one write burst a run
        ++beat;
      }
      const int keep = emit ? (have > B ? have - B : 0) : have;
      const bool take = keep < B && got < words;
      Word<PE> w = {};
      if (take) {
        const Beat<PE> y = yq.read();
        for (int j = 0; j < PE; ++j) w.d[j] = y.d[j];
        ++got;
      }
      repack<PE, B>(buf, emit, keep, take, w);
      have = take ? keep + PE : keep;
    }
  }
}

/// One step's folds: fetch, compute and store as a DATAFLOW region over the filled x (the
/// scalars derived from `d` by the caller: the region is its streams and process calls).
/// ho, wo: the output rows and columns; nf: folds; words: PW + SF; wbase, obase: the first
/// weight and output beats; the output as `runs` runs of `results` PE-byte results, ostride
/// beats apart, for each of d.FRAMES frames (fstride beats apart).
template <class P>
void engine_layer(const Word<P::SIMD> x[P::IBUF_WORDS], const EngineLayer d, int ho, int wo, int nf, int words,
                  long wbase, long obase, int runs, long results, long ostride, long fstride,
                  Word<EngineGeom<P>::B>* fmem, const Word<EngineGeom<P>::B>* wmem) {
  BB_HLS(DATAFLOW)
  Stream<EngineGeom<P>::N> wq("engine_w");
  BB_HLS(STREAM variable = wq depth = 2)
  Stream<P::PE> yq("engine_y");
  BB_HLS(STREAM variable = yq depth = 2)
  engine_fetch<P>(wmem, wbase, d.TILE_BEATS, nf, words, wq);
  engine_compute<P>(x, d, ho, wo, wq, yq);
  engine_store<P>(yq, runs, d.FRAMES, results, obase, ostride, fstride, fmem);
}

template <class P>
int conv_engine_with(Word<P::SIMD> x[P::IBUF_WORDS], const EngineLayer* prog, int layers,
                     Word<EngineGeom<P>::B>* fmem, const Word<EngineGeom<P>::B>* wmem);

/// The layer engine (see the header): one frame of the program's `layers` layers. Returns 0,
/// or 1 + the index of the first step that does not fit P (then nothing has run). The input
/// buffer is bound to UltraRAM when P::IBUF_URAM says so (the plan's ibuf_uram, the RTL's
/// IBUF_URAM), else to block RAM. (The tile memory is left to the tool: the RTL's TMEM_URAM
/// puts only the low bits of its rows in UltraRAM; not mirrored here.)
template <class P>
int conv_engine(const EngineLayer* prog, int layers, Word<EngineGeom<P>::B>* fmem,
                const Word<EngineGeom<P>::B>* wmem) {
  if constexpr (EngineIbufUram<P>::value != 0) {
    static Word<P::SIMD> x[P::IBUF_WORDS];  // the input buffer: one step's input rows
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
    return conv_engine_with<P>(x, prog, layers, fmem, wmem);
  } else {
    static Word<P::SIMD> x[P::IBUF_WORDS];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
    return conv_engine_with<P>(x, prog, layers, fmem, wmem);
  }
}

/// `conv_engine` over the input buffer ``x``.
template <class P>
int conv_engine_with(Word<P::SIMD> x[P::IBUF_WORDS], const EngineLayer* prog, int layers,
                     Word<EngineGeom<P>::B>* fmem, const Word<EngineGeom<P>::B>* wmem) {
  BB_HLS(INLINE)
  using G = EngineGeom<P>;
BB_LOOP(engine_check)
  for (int l = 0; l < layers; ++l) {
    if (!engine_fits<P>(prog[l])) return l + 1;
  }
BB_LOOP(engine_layers)
  for (int l = 0; l < layers; ++l) {
    const EngineLayer d = prog[l];
    const int ho = (d.H + d.PT + d.PB - d.KH) / d.SH + 1, wo = (d.W + d.PL + d.PR - d.KW) / d.SW + 1;
    const int nf = d.CO / G::PE, words = G::PW + d.KH * d.KW * (d.C / G::SIMD);
    const bool abut = d.OUT_STRIDE == ho * wo * G::PE && d.FRAMES == 1;  // else a run per fold (and frame)
    const long per = static_cast<long>(ho) * wo * (abut ? nf : 1);
  BB_LOOP(engine_frames)
    for (int f = 0; f < d.FRAMES; ++f) engine_load<P>(fmem, d, f, x);
    engine_layer<P>(x, d, ho, wo, nf, words, d.W_BASE / G::B, d.OUT_BASE / G::B, abut ? 1 : nf, per,
                    d.OUT_STRIDE / G::B, d.FRAME_STRIDE / G::B, fmem, wmem);
  }
  return 0;
}

}  // namespace bb

#endif  // BBGRAP_CONV_ENGINE_H
