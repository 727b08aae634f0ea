// bbgrap-hls kernel library: the layer engine's window unit (docs/engine.md, "Window unit"):
// max pool, average pool (a global one is a window of the whole map) and depthwise conv on
// feature maps in board memory, one layer a call.
//
// P gives G (channels a block, a power of two), BEAT (bytes of an m_axi beat, a power of two,
// a multiple of G, at least 8), WMAX (widest input row), KB (row slots: at least the tallest
// window) and KMAX (most depthwise taps KH·KW): the RTL's parameters (hw/rtl/engine_window.sv);
// optionally TAPS (window taps a cycle, 1 when P leaves it out): the taps of a window row go
// in groups of TAPS (kx .. kx + TAPS - 1, the row's last group partial), one group a loop
// iteration, as the RTL's TAPS. The result does not depend on TAPS (a max, or an exact sum).
//
// Descriptor: `WindowLayer` (codegen/engine_window.py WINDOW_FIELDS, int32 each). Memory
// layout (bbgrap_hls/codegen/engine_image.py `feature_bytes`, engine_window.py `weight_image`):
//   feature memory (fmem, read and written): the input map from IN_BASE and the output map
//     from OUT_BASE, both blocked by G channels, block b IN_STRIDE (OUT_STRIDE) bytes after
//     block b - 1: byte b·IN_STRIDE + p·G + j = channel b·G + j of pixel p; a stride is the
//     block's bytes (H·W·G, HO·WO·G: blocks contiguous) or a multiple of BEAT at least that.
//     The output is written as whole beats: the whole map as one run (blocks contiguous),
//     else each block as a run from its own base; a run's last beat zero-filled;
//   weight memory (wmem, read only; depthwise): block b's W_BEATS beats from W_BASE +
//     b·W_BEATS·BEAT: bytes 8j .. 8j+7 channel j's record (int32 bias' with -zp_in·Σw folded,
//     uint32 (m << 8) | s, little-endian), then tap t (ky·KW + kx) of the G channels at bytes
//     (8 + t)·G + j.
//
// Order (the RTL's, without its overlap: hw/rtl/engine_window.sv runs the row loads, the
// weight reads and the writes beside the compute): per block of G channels, the depthwise
// records and taps (one read of W_BEATS beats); per output row, the input rows its windows
// need that the row buffer (KB rows, slot = row mod KB) does not hold, read as the beats
// covering them (a block's rows are contiguous); then WO windows, one tap group a cycle
// (II = 1) for all G channels, padding read as PAD; each output pixel requantised (average:
// MULT/SHIFT of the layer; depthwise: the channel's record; max pool: the byte as it is) and
// packed into the output beat, written when full.
// Returns 0 when the layer ran; 1, without touching memory, when the descriptor does not fit P
// (C not a multiple of G, a row wider than WMAX, a window taller than KB, more than KMAX
// depthwise taps, W_BEATS too short, bases not beat-aligned, a stride neither the block's
// bytes nor a multiple of BEAT at least that, an unknown MODE).
//
// Not checked: Vitis HLS has not been run on this kernel (no synthesis, II or resource
// report). The top-level INTERFACE pragmas (fmem, wmem as m_axi bundles, the descriptor as
// s_axilite) are the caller's, as for conv_engine.h. C simulation
// (tests/test_hls_engine_window.py) checks the bytes, not the cycles (the RTL twin does).
#ifndef BBGRAP_ENGINE_WINDOW_H
#define BBGRAP_ENGINE_WINDOW_H

#include <cstdint>
#include <type_traits>

#include "bb_common.h"

namespace bb {

/// One window layer's descriptor: engine_window.WINDOW_FIELDS in order, one int32 each.
struct WindowLayer {
  int32_t MODE, H, W, C, HO, WO, KH, KW, SH, SW, PT, PL, PB, PR, PAD, BIAS, MULT, SHIFT, ZP_OUT, LO, HI,
      IN_BASE, OUT_BASE, W_BASE, W_BEATS, IN_STRIDE, OUT_STRIDE;
};
static_assert(sizeof(WindowLayer) == 27 * 4, "WindowLayer: the 27 words of engine_window.WINDOW_FIELDS");

constexpr int WINDOW_MAX = 0, WINDOW_AVG = 1, WINDOW_DW = 2;  // MODE values
constexpr int WINDOW_RECORD_WORDS = 8;                         // a block's records: 8·G bytes

/// P::TAPS when P gives it, else 1: window taps a cycle.
template <class P, class = void>
struct window_taps {
  static constexpr int value = 1;
};
template <class P>
struct window_taps<P, std::void_t<decltype(P::TAPS)>> {
  static constexpr int value = P::TAPS;
};

/// Whether descriptor `d` fits the unit P (see the header).
template <class P>
bool window_fits(const WindowLayer& d) {
  constexpr int G = P::G, B = P::BEAT;
  static_assert(G > 0 && (G & (G - 1)) == 0, "engine_window: G is a power of two");
  static_assert(B >= 8 && (B & (B - 1)) == 0 && B % G == 0, "engine_window: BEAT a power of two, >= 8, G | BEAT");
  if (d.MODE < WINDOW_MAX || d.MODE > WINDOW_DW) return false;
  if (d.H < 1 || d.W < 1 || d.C < G || d.C % G || d.W > P::WMAX || d.KH > P::KB) return false;
  if (d.KH < 1 || d.KW < 1 || d.SH < 1 || d.SW < 1 || d.PT < 0 || d.PL < 0 || d.PT >= d.KH || d.PL >= d.KW)
    return false;
  if (d.HO < 1 || d.WO < 1 || (d.HO - 1) * d.SH + d.KH > d.H + d.PT + d.PB || (d.WO - 1) * d.SW + d.KW > d.W + d.PL + d.PR)
    return false;
  if (d.IN_BASE < 0 || d.OUT_BASE < 0 || d.W_BASE < 0 || d.IN_BASE % B || d.OUT_BASE % B || d.W_BASE % B) return false;
  const long iblk = static_cast<long>(d.H) * d.W * G, oblk = static_cast<long>(d.HO) * d.WO * G;
  if (d.IN_STRIDE != iblk && (d.IN_STRIDE % B || d.IN_STRIDE < iblk)) return false;
  if (d.OUT_STRIDE != oblk && (d.OUT_STRIDE % B || d.OUT_STRIDE < oblk)) return false;
  if (d.MODE == WINDOW_DW && (d.KH * d.KW > P::KMAX || d.W_BEATS * B < (WINDOW_RECORD_WORDS + d.KH * d.KW) * G))
    return false;
  return true;
}

/// Block b's depthwise records and taps: W_BEATS beats from W_BASE + b·W_BEATS·BEAT.
template <class P>
void window_weights(const Word<P::BEAT>* wmem, const WindowLayer& d, int b, int32_t bias[P::G], int32_t mult[P::G],
                    int32_t shift[P::G], Word<P::G> taps[P::KMAX]) {
  constexpr int G = P::G, B = P::BEAT;
  const long first = d.W_BASE / B + static_cast<long>(b) * d.W_BEATS;
  const int ntap = d.KH * d.KW;
BB_LOOP(window_weights_beat)
  for (int i = 0; i < d.W_BEATS; ++i) {
    BB_PIPELINE(1)
    const Word<B> w = wmem[first + i];
    for (int k = 0; k < B; ++k) {
      const int byte = i * B + k;
      if (byte < 8 * G) {  // a record byte: little-endian words
        const int j = byte / 8, f = byte % 8;
        const uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(w.d[k])) << (8 * (f % 4));
        if (f < 4) bias[j] = static_cast<int32_t>((f == 0 ? 0u : static_cast<uint32_t>(bias[j])) | v);
        else mult[j] = static_cast<int32_t>((f == 4 ? 0u : static_cast<uint32_t>(mult[j])) | v);
      } else if (byte < (WINDOW_RECORD_WORDS + ntap) * G) {
        taps[byte / G - WINDOW_RECORD_WORDS].d[byte % G] = w.d[k];
      }
    }
  }
  for (int j = 0; j < G; ++j) {  // record word 2 is (m << 8) | s
    shift[j] = mult[j] & 0xFF;
    mult[j] = static_cast<int32_t>(static_cast<uint32_t>(mult[j]) >> 8);
  }
}

/// Rows `from` .. `to` of block b into their slots (row mod KB): the beats covering them.
template <class P>
void window_load(const Word<P::BEAT>* fmem, const WindowLayer& d, int b, int from, int to,
                 Word<P::G> rows[P::KB][P::WMAX]) {
  constexpr int G = P::G, B = P::BEAT, PPB = B / G;
  const long start = d.IN_BASE + static_cast<long>(b) * d.IN_STRIDE + static_cast<long>(from) * d.W * G;
  const long npix = static_cast<long>(to - from + 1) * d.W;
  const long first = start / B, beats = (start + npix * G + B - 1) / B - first;
  long pix = -(start % B) / G;  // pixel of lane 0 in the load
BB_LOOP(window_load_beat)
  for (long i = 0; i < beats; ++i) {
    BB_PIPELINE(1)
    const Word<B> w = fmem[first + i];
    for (int l = 0; l < PPB; ++l) {
      const long q = pix + l;
      if (q < 0 || q >= npix) continue;
      const int r = from + static_cast<int>(q / d.W), x = static_cast<int>(q % d.W);
      for (int j = 0; j < G; ++j) rows[r % P::KB][x].d[j] = w.d[l * G + j];
    }
    pix += PPB;
  }
}

/// The layer described by `d` (see the header); 0 when it ran, 1 when it does not fit P.
template <class P>
int engine_window(const WindowLayer& d, Word<P::BEAT>* fmem, const Word<P::BEAT>* wmem) {
  constexpr int G = P::G, B = P::BEAT, PPB = B / G, T = window_taps<P>::value;
  static_assert(T >= 1, "engine_window: TAPS >= 1");
  if (!window_fits<P>(d)) return 1;
  Word<P::G> rows[P::KB][P::WMAX];
  BB_HLS(ARRAY_PARTITION variable = rows dim = 1 complete)
  BB_HLS(ARRAY_PARTITION variable = rows dim = 2 cyclic factor = T)
  Word<P::G> taps[P::KMAX];
  BB_HLS(ARRAY_PARTITION variable = taps complete)
  const int groups = (d.KW + T - 1) / T;  // a window row's tap groups
  int32_t bias[G], mult[G], shift[G];
  Word<B> ob = {};
  int lane = 0;
  long out = d.OUT_BASE / B;
  const int blocks = d.C / G;
  const bool runs = d.OUT_STRIDE != d.HO * d.WO * G;  // a run a block (else one for the map)
BB_LOOP(window_block)
  for (int b = 0; b < blocks; ++b) {
    if (d.MODE == WINDOW_DW) window_weights<P>(wmem, d, b, bias, mult, shift, taps);
    int have = 0;  // rows below this one are in the buffer (or never needed)
BB_LOOP(window_row)
    for (int oy = 0; oy < d.HO; ++oy) {
      const int lo = oy * d.SH - d.PT;
      if (have < lo) have = lo < d.H ? lo : d.H;
      const int rend = lo + d.KH - 1 < d.H - 1 ? lo + d.KH - 1 : d.H - 1;
      if (have <= rend) {
        window_load<P>(fmem, d, b, have, rend, rows);
        have = rend + 1;
      }
BB_LOOP(window_pixel)
      for (int ox = 0; ox < d.WO; ++ox) {
        int32_t acc[G];
BB_LOOP(window_group)
        for (int q = 0; q < d.KH * groups; ++q) {
          BB_PIPELINE(1)
          const int ky = q / groups, kx0 = q % groups * T, iy = lo + ky;
          int32_t gmax[G], gsum[G];  // the group's largest byte, its sum of bytes or products
          for (int j = 0; j < G; ++j) {
            gmax[j] = -128;
            gsum[j] = 0;
          }
          for (int i = 0; i < T; ++i) {
            const int kx = kx0 + i, ix = ox * d.SW - d.PL + kx;
            if (kx >= d.KW) continue;  // past the window row (the last group)
            const bool in = iy >= 0 && iy < d.H && ix >= 0 && ix < d.W;
            for (int j = 0; j < G; ++j) {
              const int32_t v = in ? rows[iy % P::KB][ix].d[j] : static_cast<int8_t>(d.PAD);
              gmax[j] = v > gmax[j] ? v : gmax[j];
              gsum[j] += d.MODE == WINDOW_DW ? v * taps[ky * d.KW + kx].d[j] : v;
            }
          }
          for (int j = 0; j < G; ++j) {
            if (d.MODE == WINDOW_MAX) acc[j] = q == 0 || gmax[j] > acc[j] ? gmax[j] : acc[j];
            else acc[j] = (q == 0 ? (d.MODE == WINDOW_AVG ? d.BIAS : bias[j]) : acc[j]) + gsum[j];
          }
        }
        for (int j = 0; j < G; ++j) {
          int8_t y;
          if (d.MODE == WINDOW_MAX) y = static_cast<int8_t>(acc[j]);
          else if (d.MODE == WINDOW_AVG) y = requant(acc[j], d.MULT, d.SHIFT, d.ZP_OUT, d.LO, d.HI);
          else y = requant(acc[j], mult[j], shift[j], d.ZP_OUT, d.LO, d.HI);
          ob.d[lane * G + j] = y;
        }
        if (++lane == PPB) {
          fmem[out++] = ob;
          ob = {};
          lane = 0;
        }
      }
    }
    if (runs) {  // the block's run ends: its last beat zero-filled, the next from its base
      if (lane) fmem[out] = ob;
      ob = {};
      lane = 0;
      out = (d.OUT_BASE + static_cast<long>(b + 1) * d.OUT_STRIDE) / B;
    }
  }
  if (lane) fmem[out] = ob;  // the last beat, zero-filled
  return 0;
}

}  // namespace bb

#endif  // BBGRAP_ENGINE_WINDOW_H
