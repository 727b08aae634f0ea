// bbgrap-hls kernel library: the row buffer and schedule behind every sliding-window block.
//
// A window block (conv_swg, dwconv2d, the pools) is one pipelined loop (II = 1) whose
// iteration does two independent things, as the RTL swg's writer and reader do in one cycle:
//  - read: when fewer than ROWS padded rows are buffered ahead of the current output row's
//    first row, take the next input beat (a padding position takes `pad` instead of a beat)
//    and write it into the circular buffer of ROWS padded rows;
//  - emit: when the current output row's KHE = span(KH, DH) rows are all complete, produce
//    the next of that output row's beats (the kernel's own order: windows, folds, taps).
// ROWS = KHE + SH, or TAIL + KHE when the rows left after a frame's last output row (TAIL)
// exceed SH (the RTL swg's default): the next frame's first window fills while the last
// output row is emitted, so the loop takes max(Hp·Wp·C/L, Ho·(beats per output row))
// iterations per frame in steady state, the cost model's ii (docs/cost-model.md).
// A layer whose struct declares ROWS (the plan's short_ring: KHE + SH) keeps that many rows
// instead: fewer words, and at a frame boundary the reads wait for the last output row.
//
// The buffer is `WORDS` words of L lanes (word (slot·Wp + x)·CB + cb, CB = C/L), stored as
// `int8_t rows[COPIES][WORDS][L]` with dims 1 and 3 partitioned: every (copy, lane) is one
// memory with one write (the input beat, written to every copy) and one read (lane block j
// of an emitted beat reads copy j) per iteration, within a dual-port BRAM's two ports.
// A layer whose struct declares RING_URAM = R > 0 (a power of two dividing CB; one pixel a
// beat only) keeps the ring in UltraRAM instead, R consecutive ring words a memory word:
// `Word<R·L> ring[COPIES][WORDS/R]` (AGGREGATE, dim 1 partitioned, ram_s2p in URAM; a pool's
// `ring[WORDS/R]`; the planner's R = 8/L for L <= 8, 64-bit words, else 1). Ring word n is
// lanes [(n%R)·L, (n%R+1)·L) of memory word n/R. Writes are whole memory words (no byte
// enables, as the RTL swg): a register gathers a group's first R-1 ring words and the
// iteration taking its last writes the word, so every copy still sees one write and one read
// per iteration, a URAM's two ports (II = 1). A row's last word completes its last group
// (R | CB) and reads take only complete rows, so the schedule, the results and the
// iteration counts are those of R = 0 (`RingPort`).
#ifndef BBGRAP_BB_WINDOW_H
#define BBGRAP_BB_WINDOW_H

#include "bb_dataflow.h"
#include "bb_pack.h"

namespace bb {

/// Rows of a window block's circular buffer (the RTL swg's ROWS; see above).
constexpr int window_rows(int hp, int khe, int sh) {
  return (hp - khe) % sh + khe > sh ? (hp - khe) % sh + 2 * khe : khe + sh;
}

/// P::ROWS when the layer's struct declares it (a short ring), else 0 (the default rows).
template <class P, class = void>
struct RingOf {
  static constexpr int value = 0;
};
template <class P>
struct RingOf<P, typename VoidOf<decltype(P::ROWS)>::type> {
  static constexpr int value = P::ROWS;
};
template <class P>
constexpr int ring_of() {
  return RingOf<P>::value;
}

/// P::RING_URAM when the layer's struct declares it (the ring in URAM, see above), else 0.
template <class P, class = void>
struct RingUramOf {
  static constexpr int value = 0;
};
template <class P>
struct RingUramOf<P, typename VoidOf<decltype(P::RING_URAM)>::type> {
  static constexpr int value = P::RING_URAM;
};
template <class P>
constexpr int ring_uram() {
  return RingUramOf<P>::value;
}

/// The read/emit schedule of a window block over padded (H+PT+PB, W+PL+PR) frames of C
/// channels in L-lane beats; see the file comment. The kernel calls `pad_beat`/`word` and
/// `wrote()` for a read, `slot(dy)` to address rows of the current output row's window, and
/// `row_done()` after the last beat of an output row.
template <int H, int W, int C, int L, int PT, int PL, int PB, int PR, int KH, int DH, int SH, int RING = 0>
struct WindowRows {
  static_assert(C % L == 0, "window: L | C");
  static constexpr int HP = H + PT + PB, WP = W + PL + PR, CB = C / L;
  static constexpr int KHE = span(KH, DH);
  static constexpr int HO = (HP - KHE) / SH + 1;
  static constexpr int TAIL = HP - (HO - 1) * SH;  // rows released after a frame's last output row
  static constexpr int LANES = L;
  static constexpr int ROWS = RING > 0 ? RING : window_rows(HP, KHE, SH);
  static_assert(ROWS > KHE, "window: the ring's rows must exceed the window height");
  static constexpr int WORDS = ROWS * WP * CB;
  static constexpr long IN_BEATS = static_cast<long>(HP) * WP * CB;  // per frame, padding included

  int r = 0, x = 0, g = 0, wslot = 0;  // input side: padded row, column, block; the row's slot
  int oy = 0, bslot = 0;                // output side: output row, the slot of its first row
  int ahead = 0;                        // complete rows from the output row's first row on

  bool can_read() const { return ahead < ROWS; }
  bool can_emit() const { return ahead >= KHE; }
  bool pad_beat() const { return r < PT || r >= PT + H || x < PL || x >= PL + W; }
  int word() const { return (wslot * WP + x) * CB + g; }

  /// The input beat at (r, x, g) is written: advance the input side.
  void wrote() {
    if (++g < CB) return;
    g = 0;
    if (++x < WP) return;
    x = 0;
    ++ahead;
    wslot = wslot + 1 == ROWS ? 0 : wslot + 1;
    r = r + 1 == HP ? 0 : r + 1;
  }

  /// The slot of padded row oy·SH + dy (dy < KHE).
  int slot(int dy) const { return bslot + dy >= ROWS ? bslot + dy - ROWS : bslot + dy; }

  /// The output row's last beat is out: release its first SH rows (TAIL after a frame's last).
  void row_done() {
    const int step = oy + 1 == HO ? TAIL : SH;
    oy = oy + 1 == HO ? 0 : oy + 1;
    ahead -= step;
    bslot = bslot + step >= ROWS ? bslot + step - ROWS : bslot + step;
  }
};

/// A depthwise conv's or pool's emit cursor past one emitted beat: tap group kf of KF, channel
/// block cf of CF, output column ox of WO (col0 its first padded column, SW apart); after an
/// output row's last beat, `s.row_done()`.
template <int KF, int CF, int WO, int SW, class S>
void next_tap(int& kf, int& cf, int& ox, int& col0, S& s) {
  BB_HLS(INLINE)
  if (++kf < KF) return;
  kf = 0;
  if (++cf < CF) return;
  cf = 0;
  col0 += SW;
  if (++ox < WO) return;
  ox = 0;
  col0 = 0;
  s.row_done();
}

/// Ring access of a window block with schedule S (L = S::LANES lanes a ring word) and
/// RING_URAM = R, on the ring its kernel declares (with the pragmas) and passes by reference:
/// `write(ring, word, b)` stores input beat b as ring word `word` of every copy, `read(ring,
/// j, word)` returns ring word `word` of copy j (J copies: one a window tap of a cycle's J). R = 0:
/// `int8_t rows[J][WORDS][L]`, one lane a memory.
template <class S, int R>
struct RingPort {
  static constexpr int L = S::LANES, N = R * L;
  static_assert(R > 0 && (R & (R - 1)) == 0, "window: RING_URAM is a power of two");
  static_assert(S::CB % R == 0, "window: RING_URAM must divide C/L (a URAM word never straddles two pixels)");
  Word<N> held = {};  // the gather register: the group's ring words before its last, at their lanes

  /// The memory word of ring word `word` = b: the group's gathered words and b (b is kept
  /// in the register unless it is the group's last).
  Word<N> gather(int word, const Beat<L>& b) {
    BB_HLS(INLINE)
    Word<N> m = held;
    for (int q = 0; q < R; ++q)
      for (int i = 0; i < L; ++i)
        if (q == word % R) m.d[q * L + i] = b.d[i];
    if (word % R < R - 1) held = m;
    return m;
  }
  /// Ring word `word` = b: the memory word is written with the group's last ring word.
  template <int D>
  void write(Word<N> (&ring)[D], int word, const Beat<L>& b) {
    BB_HLS(INLINE)
    const Word<N> m = gather(word, b);
    if (word % R == R - 1) ring[word / R] = m;
  }
  template <int J, int D>
  void write(Word<N> (&ring)[J][D], int word, const Beat<L>& b) {
    BB_HLS(INLINE)
    const Word<N> m = gather(word, b);
    if (word % R == R - 1)
      for (int j = 0; j < J; ++j) ring[j][word / R] = m;
  }
  template <int D>
  static Beat<L> read(Word<N> (&ring)[D], int word) {
    BB_HLS(INLINE)
    const Word<N> m = ring[word / R];
    Beat<L> b;
    for (int i = 0; i < L; ++i) b.d[i] = m.d[(word % R) * L + i];
    return b;
  }
  template <int J, int D>
  static Beat<L> read(Word<N> (&ring)[J][D], int j, int word) {
    BB_HLS(INLINE)
    return read(ring[j], word);
  }
};

template <class S>
struct RingPort<S, 0> {
  static constexpr int L = S::LANES;
  template <int D>
  void write(int8_t (&rows)[D][L], int word, const Beat<L>& b) {
    BB_HLS(INLINE)
    for (int i = 0; i < L; ++i) rows[word][i] = b.d[i];
  }
  template <int J, int D>
  void write(int8_t (&rows)[J][D][L], int word, const Beat<L>& b) {
    BB_HLS(INLINE)
    for (int j = 0; j < J; ++j)
      for (int i = 0; i < L; ++i) rows[j][word][i] = b.d[i];
  }
  template <int D>
  static Beat<L> read(int8_t (&rows)[D][L], int word) {
    BB_HLS(INLINE)
    Beat<L> b;
    for (int i = 0; i < L; ++i) b.d[i] = rows[word][i];
    return b;
  }
  template <int J, int D>
  static Beat<L> read(int8_t (&rows)[J][D][L], int j, int word) {
    BB_HLS(INLINE)
    return read(rows[j], word);
  }
};

}  // namespace bb

#endif  // BBGRAP_BB_WINDOW_H
