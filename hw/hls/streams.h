// bbgrap-hls kernel library: stream plumbing (no arithmetic).
//
// width converter, channel shuffle, concat, fan-out, and the memory <-> stream movers
// that sit on m_axi ports (graph inputs and outputs, off-chip buffers).
#ifndef BBGRAP_STREAMS_H
#define BBGRAP_STREAMS_H

#include "bb_common.h"
#include "bb_dataflow.h"

namespace bb {

/// Repack A-lane beats into B-lane beats (N elements per frame; G = lcm(A, B) | N), streaming:
/// one pipelined loop of max(G/A, G/B) iterations per G-element group, each iteration
/// reading an input beat when the group needs one and writing an output beat when one is
/// complete (N/min(A, B) cycles per frame; reading a group before writing it would take
/// N/A + N/B).
template <int N, int A, int B, int G>
void width_convert(Stream<A>& in, Stream<B>& out, int frames) {
  static_assert(N % G == 0 && G % A == 0 && G % B == 0, "width_convert: G = lcm(A, B) divides N");
  constexpr int T = G / A > G / B ? G / A : G / B;  // iterations per group
  int8_t buf[G];
  BB_HLS(ARRAY_PARTITION variable = buf complete)
  int j = 0, got = 0;  // iteration of the group, input beats of the group read so far
BB_LOOP(wc_beat)
  for (long i = 0; i < static_cast<long>(frames) * (N / G) * T; ++i) {
    BB_PIPELINE(1)
    if (A <= B) {  // widening: an input beat every iteration, an output beat when B are in
      const Beat<A> b = in.read();
      for (int a = 0; a < A; ++a) buf[j * A + a] = b.d[a];
      if (((j + 1) * A) / B > (j * A) / B) {
        const int k = ((j + 1) * A) / B - 1;
        Beat<B> o;
        for (int e = 0; e < B; ++e) o.d[e] = buf[k * B + e];
        out.write(o);
      }
    } else {  // narrowing: an output beat every iteration, an input beat when it needs one
      if ((j * B + B - 1) / A >= got) {
        const Beat<A> b = in.read();
        for (int a = 0; a < A; ++a) buf[got * A + a] = b.d[a];
        ++got;
      }
      Beat<B> o;
      for (int e = 0; e < B; ++e) o.d[e] = buf[j * B + e];
      out.write(o);
    }
    if (++j == T) {
      j = 0;
      got = 0;
    }
  }
}

/// Padded folds: a matrix-vector unit whose PE lanes do not divide its CO channels writes
/// NF = ceil(CO/PE) beats of PE lanes per pixel, the last one's lanes from CO - (NF-1)·PE on
/// padding. Drop those and repack the pixel's CO channels into B-lane beats (B | CO, B >= PE,
/// so at most one output beat per input beat): one pipelined loop of NF iterations per
/// pixel, each reading an input beat and writing an output beat when one is complete.
template <int PIXELS, int NF, int PE, int CO, int B>
void trim_convert(Stream<PE>& in, Stream<B>& out, int frames) {
  static_assert(CO % B == 0 && B >= PE && (NF - 1) * PE < CO && NF * PE >= CO,
                "trim_convert: B | CO, B >= PE, NF = ceil(CO / PE)");
  int8_t buf[NF * PE];
  BB_HLS(ARRAY_PARTITION variable = buf complete)
  int j = 0, done = 0;  // input beat of the pixel, output beats of the pixel written
BB_LOOP(trim_beat)
  for (long i = 0; i < static_cast<long>(frames) * PIXELS * NF; ++i) {
    BB_PIPELINE(1)
    const Beat<PE> b = in.read();
    for (int a = 0; a < PE; ++a) buf[j * PE + a] = b.d[a];
    const int have = (j + 1) * PE < CO ? (j + 1) * PE : CO;  // real channels in so far
    if ((done + 1) * B <= have) {
      Beat<B> o;
      for (int e = 0; e < B; ++e) o.d[e] = buf[done * B + e];
      out.write(o);
      ++done;
    }
    if (++j == NF) {
      j = 0;
      done = 0;
    }
  }
}

/// Permute the C channels of every pixel: out channel c = in channel perm[c] (P lanes).
/// Streaming: one pipelined loop of C/P iterations per pixel, plus one pixel at the end of
/// the call, each iteration reading beat cb of pixel i into buffer i mod 2 and writing beat
/// cb of pixel i-1 from the other buffer.
template <int PIXELS, int C, int P>
void channel_shuffle(Stream<P>& in, Stream<P>& out, const int16_t perm[C], int frames) {
  static_assert(C % P == 0, "channel_shuffle: P | C");
  constexpr int CB = C / P;
  int8_t px[2][C];
  BB_HLS(ARRAY_PARTITION variable = px complete dim = 0)
  const long pixels = static_cast<long>(frames) * PIXELS;
  int cur = 0, cb = 0;
  long i = 0;  // the pixel being read
BB_LOOP(cs_beat)
  for (long it = 0; it < (pixels + (pixels > 0 ? 1 : 0)) * CB; ++it) {
    BB_PIPELINE(1)
    if (i > 0) {
      Beat<P> o;
      for (int p = 0; p < P; ++p) o.d[p] = px[1 - cur][perm[cb * P + p]];
      out.write(o);
    }
    if (i < pixels) {
      const Beat<P> b = in.read();
      for (int p = 0; p < P; ++p) px[cur][cb * P + p] = b.d[p];
    }
    if (++cb == CB) {
      cb = 0;
      cur = 1 - cur;
      ++i;
    }
  }
}

/// Copy BEATS beats per frame from one stream to another: a DATAFLOW process of its own
/// (not inlined, its arguments the region's variables, as Vitis' canonical form wants).
template <int P, int BEATS>
void concat_part(Stream<P>& in, Stream<P>& out, int frames) {
  BB_HLS(INLINE off)
BB_LOOP(copy_beat)
  for (long i = 0; i < static_cast<long>(frames) * BEATS; ++i) {
    BB_PIPELINE(1)
    out.write(in.read());
  }
}

namespace detail {
/// Read beat `b` of a pixel from the input whose channel range holds it (one pipelined loop
/// over several input streams: input i holds the pixel's beats [Σ_{<i} C/P, Σ_{<=i} C/P)).
template <int P, int... Cs, class... S>
Beat<P> read_beat(int b, S&... ins) {
  BB_HLS(INLINE)
  Beat<P> out{};
  int lo = 0;
  (((b >= lo && b < lo + Cs / P ? static_cast<void>(out = ins.read()) : static_cast<void>(0)), lo += Cs / P), ...);
  return out;
}
}  // namespace detail

/// Concatenate along channels: per pixel, Cs[0]/P beats of the first input, then of the
/// second... (inputs already share one scale); one pipelined loop of ΣCs/P iterations per
/// pixel.
template <int PIXELS, int P, int... Cs, class... S>
void concat(Stream<P>& out, int frames, S&... ins) {
  static_assert(sizeof...(Cs) == sizeof...(S), "concat: one channel count per input");
  static_assert(((Cs % P == 0) && ...), "concat: P | C_i");
  constexpr int BEATS = ((Cs / P) + ...);
  int b = 0;  // beat b of the pixel
BB_LOOP(cat_beat)
  for (long i = 0; i < static_cast<long>(frames) * PIXELS * BEATS; ++i) {
    BB_PIPELINE(1)
    out.write(detail::read_beat<P, Cs...>(b, ins...));
    b = b + 1 == BEATS ? 0 : b + 1;
  }
}

/// Copy one stream to several (a tensor read by several blocks or cores).
template <int BEATS, int P, class... S>
void fanout(Stream<P>& in, int frames, S&... outs) {
BB_LOOP(fan_beat)
  for (long i = 0; i < static_cast<long>(frames) * BEATS; ++i) {
    BB_PIPELINE(1)
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
          BB_PIPELINE(1)
          out.write(inside ? in.read() : pad);
        }
      }
    }
  }
}

/// Repeat one C-channel pixel PIXELS times (broadcast of an (N, C, 1, 1) operand): one
/// pipelined loop of PIXELS·C/L iterations per frame; pixel 0's iterations read the beat
/// they write.
template <int PIXELS, int C, int L>
void repeat_pixel(Stream<L>& in, Stream<L>& out, int frames) {
  static_assert(C % L == 0, "repeat_pixel: L | C");
  constexpr int CB = C / L;
  Beat<L> px[CB];
  int cb = 0, i = 0;  // beat cb of pixel i
BB_LOOP(rep_beat)
  for (long it = 0; it < static_cast<long>(frames) * PIXELS * CB; ++it) {
    BB_PIPELINE(1)
    if (i == 0) px[cb] = in.read();
    out.write(px[cb]);
    if (++cb == CB) {
      cb = 0;
      i = i + 1 == PIXELS ? 0 : i + 1;
    }
  }
}

/// Replay a constant frame of N elements `frames` times (a constant operand of add/mul).
template <int N, int L>
void const_stream(const int8_t data[N], Stream<L>& out, int frames) {
BB_LOOP(const_beat)
  for (long i = 0; i < static_cast<long>(frames) * (N / L); ++i) {
    BB_PIPELINE(1)
    const int base = static_cast<int>(i % (N / L)) * L;
    Beat<L> b;
    for (int l = 0; l < L; ++l) b.d[l] = data[base + l];
    out.write(b);
  }
}

/// The movers' byte queue, one iteration's two steps: `cur` is `buf` with the IN bytes of
/// `src` placed after its `have` bytes when `take`; then `buf` is `cur` less its first OUT
/// bytes when `drop` (zeros shifted in).
template <int CAP, int IN>
inline void queue_insert(const int8_t (&buf)[CAP], int8_t (&cur)[CAP], const int8_t* src, int have, bool take) {
  BB_HLS(INLINE)
  for (int j = 0; j < CAP; ++j) cur[j] = take && j >= have && j < have + IN ? src[j - have] : buf[j];
}

template <int CAP, int OUT>
inline void queue_drop(int8_t (&buf)[CAP], const int8_t (&cur)[CAP], bool drop) {
  BB_HLS(INLINE)
  for (int j = 0; j < CAP; ++j) buf[j] = drop ? (j + OUT < CAP ? cur[j + OUT] : static_cast<int8_t>(0)) : cur[j];
}

/// Read `frames` frames of N int8 elements (NHWC) from memory into L-lane beats. The memory
/// holds the frames back to back in DDR_BEAT-byte words (a 512-bit m_axi port), padded to a
/// whole word at the end (mem_bytes). One pipelined loop of max(beats, words) iterations
/// for the call: an iteration reads the next word when fewer than L bytes are buffered and
/// writes a beat when L are, from a byte buffer of DDR_BEAT + L lanes; so a beat leaves
/// every iteration (L <= DDR_BEAT: a beat may straddle two words) or a word arrives every
/// iteration (L > DDR_BEAT). A frame need not start at a word boundary.
template <int N, int L>
void mem_to_stream(const Word<DDR_BEAT>* mem, Stream<L>& out, int frames) {
  static_assert(N % L == 0, "mem_to_stream: L | N");
  constexpr int B = DDR_BEAT, CAP = DDR_BEAT + L;
  const long beats = static_cast<long>(frames) * (N / L);
  const long words = mem_bytes(N, frames) / B;
  const long iters = beats > words ? beats : words;
  int8_t buf[CAP] = {};
  BB_HLS(ARRAY_PARTITION variable = buf complete)
  int have = 0;  // bytes buffered
  long rd = 0;   // words read
BB_LOOP(m2s_beat)
  for (long i = 0; i < iters; ++i) {
    BB_PIPELINE(1)
    const bool take = have < L && rd < words;
    Word<B> w = {};
    if (take) w = mem[rd];  // sequential addresses
    int8_t cur[CAP];  // the buffer with this iteration's input in place
    BB_HLS(ARRAY_PARTITION variable = cur complete)
    queue_insert<CAP, B>(buf, cur, w.d, have, take);
    const int got = take ? have + B : have;
    const bool emit = got >= L;
    if (emit) {
      Beat<L> o;
      for (int l = 0; l < L; ++l) o.d[l] = cur[l];
      out.write(o);
    }
    queue_drop<CAP, L>(buf, cur, emit);
    have = emit ? got - L : got;
    if (take) ++rd;
  }
}

/// Write `frames` frames of N int8 elements from L-lane beats to memory, laid out as
/// mem_to_stream reads them (frames back to back, the last word zero-padded). One pipelined
/// loop of max(beats, whole words) iterations: an iteration takes the next beat when fewer
/// than DDR_BEAT bytes are buffered and writes a word when DDR_BEAT are; the partial last
/// word (if any) after the loop, once per call.
template <int N, int L>
void stream_to_mem(Stream<L>& in, Word<DDR_BEAT>* mem, int frames) {
  static_assert(N % L == 0, "stream_to_mem: L | N");
  constexpr int B = DDR_BEAT, CAP = DDR_BEAT + L;
  const long beats = static_cast<long>(frames) * (N / L);
  const long full = static_cast<long>(frames) * N / B;  // whole words
  const long iters = beats > full ? beats : full;
  int8_t buf[CAP] = {};
  BB_HLS(ARRAY_PARTITION variable = buf complete)
  int have = 0;  // bytes buffered
  long got = 0, wr = 0;  // beats read, words written
BB_LOOP(s2m_beat)
  for (long i = 0; i < iters; ++i) {
    BB_PIPELINE(1)
    const bool take = have < B && got < beats;
    Beat<L> b = {};
    if (take) b = in.read();
    int8_t cur[CAP];  // the buffer with this iteration's input in place
    BB_HLS(ARRAY_PARTITION variable = cur complete)
    queue_insert<CAP, L>(buf, cur, b.d, have, take);
    const int n = take ? have + L : have;
    const bool put = n >= B;
    if (put) {
      Word<B> w;
      for (int j = 0; j < B; ++j) w.d[j] = cur[j];
      mem[wr] = w;  // sequential addresses
      ++wr;
    }
    queue_drop<CAP, B>(buf, cur, put);
    have = put ? n - B : n;
    if (take) ++got;
  }
  if (have > 0) {  // the last word: the call's last bytes, zero-padded
    Word<B> w;
    for (int j = 0; j < B; ++j) w.d[j] = j < have ? buf[j] : static_cast<int8_t>(0);
    mem[wr] = w;
  }
}

}  // namespace bb

#endif  // BBGRAP_STREAMS_H
