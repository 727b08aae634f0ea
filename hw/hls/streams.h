// bbgrap-hls kernel library: stream plumbing (no arithmetic).
//
// width converter, channel shuffle, concat, fan-out, and the memory <-> stream movers
// that sit on m_axi ports (graph inputs and outputs, off-chip buffers).
#ifndef BBGRAP_STREAMS_H
#define BBGRAP_STREAMS_H

#include "bb_common.h"
#include "bb_dataflow.h"

namespace bb {

/// Repack A-lane beats into B-lane beats (N elements per frame; lcm(A, B) | N).
template <int N, int A, int B, int G>
void width_convert(Stream<A>& in, Stream<B>& out, int frames) {
  static_assert(N % G == 0 && G % A == 0 && G % B == 0, "width_convert: G = lcm(A, B) divides N");
  int8_t buf[G];
  BB_HLS(ARRAY_PARTITION variable = buf complete)
BB_LOOP(wc_group)
  for (long g = 0; g < static_cast<long>(frames) * (N / G); ++g) {
    for (int i = 0; i < G / A; ++i) {
      BB_HLS(PIPELINE II = 1)
      const Beat<A> b = in.read();
      for (int a = 0; a < A; ++a) buf[i * A + a] = b.d[a];
    }
    for (int j = 0; j < G / B; ++j) {
      BB_HLS(PIPELINE II = 1)
      Beat<B> o;
      for (int b = 0; b < B; ++b) o.d[b] = buf[j * B + b];
      out.write(o);
    }
  }
}

/// Permute the C channels of every pixel: out channel c = in channel perm[c] (P lanes).
template <int PIXELS, int C, int P>
void channel_shuffle(Stream<P>& in, Stream<P>& out, const int16_t perm[C], int frames) {
  static_assert(C % P == 0, "channel_shuffle: P | C");
  int8_t px[C];
BB_LOOP(cs_px)
  for (long i = 0; i < static_cast<long>(frames) * PIXELS; ++i) {
    for (int cb = 0; cb < C / P; ++cb) {
      BB_HLS(PIPELINE II = 1)
      const Beat<P> b = in.read();
      for (int p = 0; p < P; ++p) px[cb * P + p] = b.d[p];
    }
    for (int cb = 0; cb < C / P; ++cb) {
      BB_HLS(PIPELINE II = 1)
      Beat<P> o;
      for (int p = 0; p < P; ++p) o.d[p] = px[perm[cb * P + p]];
      out.write(o);
    }
  }
}

template <int P>
void concat_part(Stream<P>& in, Stream<P>& out, int beats) {
  BB_HLS(INLINE)
  for (int i = 0; i < beats; ++i) {
    BB_HLS(PIPELINE II = 1)
    out.write(in.read());
  }
}

/// Concatenate along channels: per pixel, Cs[0]/P beats of the first input, then of the
/// second... (inputs already share one scale).
template <int PIXELS, int P, int... Cs, class... S>
void concat(Stream<P>& out, int frames, S&... ins) {
  static_assert(sizeof...(Cs) == sizeof...(S), "concat: one channel count per input");
  static_assert(((Cs % P == 0) && ...), "concat: P | C_i");
BB_LOOP(cat_px)
  for (long i = 0; i < static_cast<long>(frames) * PIXELS; ++i) {
    (concat_part<P>(ins, out, Cs / P), ...);
  }
}

/// Copy one stream to several (a tensor read by several blocks or cores).
template <int BEATS, int P, class... S>
void fanout(Stream<P>& in, int frames, S&... outs) {
BB_LOOP(fan_beat)
  for (long i = 0; i < static_cast<long>(frames) * BEATS; ++i) {
    BB_HLS(PIPELINE II = 1)
    const Beat<P> b = in.read();
    (outs.write(b), ...);
  }
}

/// Spatial zero-point padding of an (H, W, C) frame (the Pad op): pad pixels hold `value`.
template <int H, int W, int C, int L, int PT, int PL, int PB, int PR>
void pad2d(Stream<L>& in, Stream<L>& out, int8_t value, int frames) {
  static_assert(C % L == 0, "pad2d: L | C");
  Beat<L> pad;
  for (int l = 0; l < L; ++l) pad.d[l] = value;
BB_LOOP(pad_frame)
  for (int f = 0; f < frames; ++f) {
    for (int y = 0; y < H + PT + PB; ++y) {
      for (int x = 0; x < W + PL + PR; ++x) {
        const bool inside = y >= PT && y < PT + H && x >= PL && x < PL + W;
        for (int cb = 0; cb < C / L; ++cb) {
          BB_HLS(PIPELINE II = 1)
          out.write(inside ? in.read() : pad);
        }
      }
    }
  }
}

/// Repeat one C-channel pixel PIXELS times (broadcast of an (N, C, 1, 1) operand).
template <int PIXELS, int C, int L>
void repeat_pixel(Stream<L>& in, Stream<L>& out, int frames) {
  static_assert(C % L == 0, "repeat_pixel: L | C");
  Beat<L> px[C / L];
BB_LOOP(rep_frame)
  for (int f = 0; f < frames; ++f) {
    for (int cb = 0; cb < C / L; ++cb) px[cb] = in.read();
    for (int i = 0; i < PIXELS; ++i) {
      for (int cb = 0; cb < C / L; ++cb) {
        BB_HLS(PIPELINE II = 1)
        out.write(px[cb]);
      }
    }
  }
}

/// Replay a constant frame of N elements `frames` times (a constant operand of add/mul).
template <int N, int L>
void const_stream(const int8_t data[N], Stream<L>& out, int frames) {
BB_LOOP(const_beat)
  for (long i = 0; i < static_cast<long>(frames) * (N / L); ++i) {
    BB_HLS(PIPELINE II = 1)
    const int base = static_cast<int>(i % (N / L)) * L;
    Beat<L> b;
    for (int l = 0; l < L; ++l) b.d[l] = data[base + l];
    out.write(b);
  }
}

/// Read `frames` frames of N int8 elements (NHWC) from memory into L-lane beats.
template <int N, int L>
void mem_to_stream(const int8_t* mem, Stream<L>& out, int frames) {
BB_LOOP(m2s_beat)
  for (long i = 0; i < static_cast<long>(frames) * (N / L); ++i) {
    BB_HLS(PIPELINE II = 1)
    Beat<L> b;
    for (int l = 0; l < L; ++l) b.d[l] = mem[i * L + l];
    out.write(b);
  }
}

/// Write `frames` frames of N int8 elements from L-lane beats to memory.
template <int N, int L>
void stream_to_mem(Stream<L>& in, int8_t* mem, int frames) {
BB_LOOP(s2m_beat)
  for (long i = 0; i < static_cast<long>(frames) * (N / L); ++i) {
    BB_HLS(PIPELINE II = 1)
    const Beat<L> b = in.read();
    for (int l = 0; l < L; ++l) mem[i * L + l] = b.d[l];
  }
}

}  // namespace bb

#endif  // BBGRAP_STREAMS_H
