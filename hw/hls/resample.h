// bbgrap-hls kernel library: crop (Slice), global max pooling, nearest upsampling, zero
// insertion (ConvTranspose), DepthToSpace and bilinear upsampling.
//
// Values only move or are compared (bilinear: a convex combination of the codes): input and
// output share one scale (docs/numerics.md).
#ifndef BBGRAP_RESAMPLE_H
#define BBGRAP_RESAMPLE_H

#include "bb_common.h"
#include "bb_dataflow.h"

namespace bb {

/// Crop of an (H, W, C) frame at L lanes (P gives H, W, C, L, Y0, X0, HO, WO, C0, CO): rows [Y0, Y0 + HO), columns [X0, X0 + WO),
/// channels [C0, C0 + CO). Every input beat is read; a kept pixel's CO/L output beats are
/// written with its last CO/L input beats (hw/rtl/slice.sv does the same), so C0 need not
/// be a multiple of L.
template <class P>
void slice2d(Stream<P::L>& in, Stream<P::L>& out, int frames) {
  constexpr int H = P::H, W = P::W, C = P::C, L = P::L, Y0 = P::Y0, X0 = P::X0, HO = P::HO, WO = P::WO;
  constexpr int C0 = P::C0, CO = P::CO;
  static_assert(C % L == 0 && CO % L == 0, "slice2d: L | C and L | CO");
  static_assert(C0 >= 0 && C0 + CO <= C && Y0 >= 0 && Y0 + HO <= H && X0 >= 0 && X0 + WO <= W,
                "slice2d: the box lies inside the frame");
  constexpr int N = C / L, NO = CO / L;
  int8_t px[C];
BB_LOOP(slice_frame)
  for (int f = 0; f < frames; ++f) {
    for (int y = 0; y < H; ++y) {
      for (int x = 0; x < W; ++x) {
        const bool keep = y >= Y0 && y < Y0 + HO && x >= X0 && x < X0 + WO;
        for (int cb = 0; cb < N; ++cb) {
          BB_PIPELINE(1)
          const Beat<L> b = in.read();
          for (int l = 0; l < L; ++l) px[cb * L + l] = b.d[l];
          if (keep && cb >= N - NO) {
            const int j = cb - (N - NO);
            Beat<L> o;
            for (int l = 0; l < L; ++l) o.d[l] = px[C0 + j * L + l];
            out.write(o);
          }
        }
      }
    }
  }
}

/// Global max pooling of an (H, W, C) frame at L lanes (P gives H, W, C, L): one pixel of C channels per frame.
template <class P>
void global_maxpool(Stream<P::L>& in, Stream<P::L>& out, int frames) {
  constexpr int H = P::H, W = P::W, C = P::C, L = P::L;
  static_assert(C % L == 0, "global_maxpool: L | C");
  constexpr int CF = C / L;
  int8_t mx[CF][L];
  BB_HLS(ARRAY_PARTITION variable = mx complete dim = 2)
BB_LOOP(gmp_frame)
  for (int f = 0; f < frames; ++f) {
  BB_LOOP(gmp_px)
    for (int i = 0; i < H * W; ++i) {
      for (int cf = 0; cf < CF; ++cf) {
        BB_PIPELINE(1)
        const Beat<L> b = in.read();
        for (int l = 0; l < L; ++l) mx[cf][l] = (i == 0 || b.d[l] > mx[cf][l]) ? b.d[l] : mx[cf][l];
      }
    }
  BB_LOOP(gmp_out)
    for (int cf = 0; cf < CF; ++cf) {
      BB_PIPELINE(1)
      Beat<L> o;
      for (int l = 0; l < L; ++l) o.d[l] = mx[cf][l];
      out.write(o);
    }
  }
}

/// Nearest upsampling of an (H, W, C) frame at L lanes by SH x SW (P gives H, W, C, L, SH, SW):
/// every pixel repeated SW times along its row and every row SH times; one output beat per
/// iteration. Two row buffers as hw/rtl/upsample.sv: a row's beats are read when its first
/// copy needs them (blocking), and once the row is complete the next row is taken ahead
/// into the other buffer whenever a beat is there (non-blocking), so a slow producer paces
/// the output without stalling it row by row. Rows run on across frames.
template <class P>
void upsample2d(Stream<P::L>& in, Stream<P::L>& out, int frames) {
  constexpr int H = P::H, W = P::W, C = P::C, L = P::L, SH = P::SH, SW = P::SW;
  static_assert(C % L == 0 && SH >= 1 && SW >= 1, "upsample2d: L | C, scales >= 1");
  constexpr int N = C / L, RB = W * N;
  Beat<L> row[2][RB];
  const long rows = static_cast<long>(frames) * H;
  int got = 0;  // beats of the current row in its buffer
  int pre = 0;  // beats of the next row taken ahead
BB_LOOP(ups_row)
  for (long g = 0; g < rows; ++g) {
    const int cur = static_cast<int>(g % 2), nxt = 1 - cur;
  BB_LOOP(ups_beat)
    for (int i = 0; i < SH * SW * RB; ++i) {
      BB_PIPELINE(1)
      const int cb = i % N, x = (i / (N * SW)) % W;
      const int a = x * N + cb;  // a <= got: the first copy asks for the beats in order
      if (got <= a) row[cur][got++] = in.read();
      if (got == RB && g + 1 < rows && pre < RB) {
        Beat<L> b;
        if (in.read_nb(b)) row[nxt][pre++] = b;
      }
      out.write(row[cur][a]);
    }
    got = pre;
    pre = 0;
  }
}

/// Zero insertion of an (H, W, C) frame at L lanes, the upsampling half of a lowered
/// ConvTranspose (P gives H, W, C, L, SH, SW, PT, PL, PB, PR, ZP): SH-1 zero-point rows
/// between input rows, SW-1 zero-point pixels between the pixels of a row, and PT/PL/PB/PR
/// zero-point rows/columns around them; one output beat per iteration, an input beat read
/// where an input pixel lands (hw/rtl/zeroinsert.sv does the same).
template <class P>
void zeroinsert2d(Stream<P::L>& in, Stream<P::L>& out, int frames) {
  constexpr int H = P::H, W = P::W, C = P::C, L = P::L, SH = P::SH, SW = P::SW;
  constexpr int PT = P::PT, PL = P::PL, HI = (H - 1) * SH + 1, WI = (W - 1) * SW + 1;
  constexpr int HO = PT + HI + P::PB, WO = PL + WI + P::PR, N = C / L;
  static_assert(C % L == 0 && SH >= 1 && SW >= 1 && PT >= 0 && PL >= 0 && P::PB >= 0 && P::PR >= 0,
                "zeroinsert2d: L | C, factors >= 1, pads >= 0");
  Beat<L> zero;
  for (int l = 0; l < L; ++l) zero.d[l] = static_cast<int8_t>(P::ZP);
BB_LOOP(zins_frame)
  for (int f = 0; f < frames; ++f) {
    for (int y = 0; y < HO; ++y) {
      const bool row_in = y >= PT && y < PT + HI && (y - PT) % SH == 0;
      for (int x = 0; x < WO; ++x) {
        const bool in_px = row_in && x >= PL && x < PL + WI && (x - PL) % SW == 0;
        for (int cb = 0; cb < N; ++cb) {
          BB_PIPELINE(1)
          out.write(in_px ? in.read() : zero);
        }
      }
    }
  }
}

/// DepthToSpace in DCR mode of an (H, W, C) frame at L lanes, block B (P gives H, W, C, L, B):
/// channel (i*B + j)*M + m of input pixel (y, x) is channel m of output pixel (y*B + i, x*B + j),
/// M = C/(B*B), L | M. Two row buffers as hw/rtl/depth2space.sv, and its writer and reader as
/// the two sides of one pipelined loop (as the window blocks, bb_window.h): an iteration reads
/// the next input beat into its row's buffer when one is free (at most one row ahead of the
/// row being emitted) and emits the next output beat when its input beat is in (output row
/// (y, i): for each x the B*M/L beats at x*N + i*N/B), non-blocking both ways. The loop takes
/// max(reads, emits) = H*W*C/L iterations a frame once the first row's phase 0 has caught up;
/// the beat written last is forwarded (an emit may need it in the next iteration).
template <class P>
void depth2space(Stream<P::L>& in, Stream<P::L>& out, int frames) {
  constexpr int H = P::H, W = P::W, C = P::C, L = P::L, B = P::B;
  static_assert(B >= 1 && C % (B * B) == 0 && (C / (B * B)) % L == 0, "depth2space: B*B | C, L | C/(B*B)");
  constexpr int N = C / L, NB = N / B, RB = W * N, E = W * NB;
  Beat<L> row[2][RB];
  const long n = static_cast<long>(frames) * H * RB;  // beats in = beats out
  long nr = 0, nw = 0;                                 // beats read, emitted
  int e = 0;                                           // beats emitted of the row being emitted
  Beat<L> lastb{};
BB_LOOP(d2s_beat)
  while (nr < n || nw < n) {
    BB_PIPELINE_OVERLAP(1)
    BB_HLS(DEPENDENCE variable = row type = inter dependent = false)  // the last write is forwarded
    const long gw = nw / RB;                                           // the row being emitted
    const int t = (e % E) / NB * N + e / E * NB + e % NB;              // its beat to emit next
    const bool rd_due = nr < n && nr < (gw + 2) * RB, wr_due = nw < n && nr > gw * RB + t;
    const bool rd = rd_due && !in.empty(), wr = wr_due && !out.full();
    if (!rd && !wr) {
      BB_IDLE(rd_due ? &in : nullptr, wr_due ? &out : nullptr)
    }
    if (wr) {
      out.write(gw * RB + t == nr - 1 ? lastb : row[gw % 2][t]);
      ++nw;
      if (++e == RB) e = 0;
    }
    if (rd) {
      lastb = in.read();
      row[(nr / RB) % 2][nr % RB] = lastb;
      ++nr;
    }
  }
  BB_COUNT_OVERLAP(1, nr, nw)
}

/// Bilinear upsampling of an (H, W, C) frame at L lanes by integer SH x SW (P gives H, W, C, L,
/// HO, WO, FRAC): TY[4*oy .. 4*oy+3] = (y0, y1, wy0, wy1) per output row and TX likewise per
/// output column (ops/resize_linear.py `taps`: weights sum to 2^FRAC, y1 = y0 where wy1 = 0).
/// y = (wx0*(wy0*a00 + wy1*a10) + wx1*(wy0*a01 + wy1*a11) + 2^(2*FRAC-1)) >> 2*FRAC on the codes
/// (one shared scale, docs/numerics.md). A ring of three input rows (global row g in buffer
/// g % 3): output row oy waits (blocking reads) until its row y1 is complete, then emits one
/// beat per iteration while row y1 + 1 is taken ahead (non-blocking) into the third buffer,
/// never further, so the rows y0, y1 it reads are never overwritten. Rows run on across frames.
template <class P>
void bilinear2d(Stream<P::L>& in, Stream<P::L>& out, const int32_t* ty, const int32_t* tx, int frames) {
  constexpr int H = P::H, W = P::W, C = P::C, L = P::L, HO = P::HO, WO = P::WO, F2 = 2 * P::FRAC;
  static_assert(C % L == 0 && HO >= H && WO >= W, "bilinear2d: L | C, upsampling");
  constexpr int N = C / L, RB = W * N;
  Beat<L> row[3][RB];
  const long rows = static_cast<long>(frames) * H;
  long done = 0;  // complete rows read (global index)
  int part = 0;   // beats of row `done` read so far
BB_LOOP(bil_frame)
  for (int f = 0; f < frames; ++f) {
  BB_LOOP(bil_row)
    for (int oy = 0; oy < HO; ++oy) {
      const long r0 = static_cast<long>(f) * H + ty[4 * oy], need = static_cast<long>(f) * H + ty[4 * oy + 1];
      const int wy0 = ty[4 * oy + 2], wy1 = ty[4 * oy + 3];
      const int b0 = static_cast<int>(r0 % 3), b1 = static_cast<int>(need % 3);
    BB_LOOP(bil_wait)
      while (done <= need) {
        BB_PIPELINE(1)
        row[done % 3][part++] = in.read();
        if (part == RB) {
          part = 0;
          ++done;
        }
      }
    BB_LOOP(bil_beat)
      for (int i = 0; i < WO * N; ++i) {
        BB_PIPELINE(1)
        const int ox = i / N, cb = i % N;
        if (done == need + 1 && done < rows) {  // take row y1 + 1 ahead, never further
          Beat<L> b;
          if (in.read_nb(b)) {
            row[done % 3][part++] = b;
            if (part == RB) {
              part = 0;
              ++done;
            }
          }
        }
        const int a0 = tx[4 * ox] * N + cb, a1 = tx[4 * ox + 1] * N + cb;
        const int wx0 = tx[4 * ox + 2], wx1 = tx[4 * ox + 3];
        Beat<L> o;
        for (int l = 0; l < L; ++l) {
          const int32_t v0 = wy0 * row[b0][a0].d[l] + wy1 * row[b1][a0].d[l];
          const int32_t v1 = wy0 * row[b0][a1].d[l] + wy1 * row[b1][a1].d[l];
          o.d[l] = static_cast<int8_t>((wx0 * v0 + wx1 * v1 + (1 << (F2 - 1))) >> F2);
        }
        out.write(o);
      }
    }
  }
}

}  // namespace bb

#endif  // BBGRAP_RESAMPLE_H
