// Frame FIFO in board memory: the delay line of a reconvergent (skip) path whose lag is
// several frames, too many to hold on chip.
//
// bb::ddr_fifo<F> passes a stream through a ring of F::REGIONS regions in a scratch area of
// the core's board memory, a frame in F::CHUNKS of them (one region a frame for a lag of a
// frame or more; a frame in several equal chunks for a FIFO shorter than a frame, so that its
// reader finds a chunk written back long before it needs the next: below, "frame" is a chunk,
// the processes take frames x CHUNKS of them): a writer process takes chunk f's
// F::BEATS beats from `in` and writes them into region f mod REGIONS, one memory word of
// SB = stage_beat(LANES) bytes per beat (lanes in order in the low LANES bytes, the rest
// zero; region r's word i at byte OFF + r·REGION + i·SB; sequential addresses, one write
// burst a frame), then pushes the region on a token stream; a reader process pops a token,
// reads that region's BEATS words back (one read burst) and writes them as beats to `out`.
// The layout is the DDR frame stage's (offchip_stage.h: `stage_beat`, 4 KB aligned
// regions), but the stage's writer and reader share one frame of a per-frame DATAFLOW loop
// (depth-1 token, three regions), while here both processes loop over all frames on their
// own (as conv2d's), so the writer runs up to REGIONS - 1 frames ahead of the reader: the
// FIFO holds up to REGIONS frames, the one being written, REGIONS - 2 waiting (their tokens
// queued) and the one being read. The scratch has two m_axi arguments, `fddr_w` (written by
// the writer) and `fddr_r` (read by the reader), each meant for a bundle of its own and both
// given the same buffer: Vitis HLS tracks no dependency through memory between DATAFLOW
// processes, the token orders them (a frame's token is pushed after its write burst, whose
// write responses the writer waits for, as offchip_stage_write's).
//
// C simulation: the threaded one (bb_dataflow.h, BB_CSIM_THREADS) runs the two processes as
// threads around a token stream of its synthesised depth. The sequential one (g++ without
// it, and Vitis HLS C simulation) runs a DATAFLOW region's processes one after another, so
// the writer would wrap the ring over frames not yet read back; there the kernel alternates
// the two instead, the writer REGIONS - 1 frames ahead (the most the ring allows, so a frame
// is still overwritten exactly when the hardware could overwrite it).
#ifndef BBGRAP_DDR_FIFO_H
#define BBGRAP_DDR_FIFO_H

#include "bb_common.h"
#include "bb_dataflow.h"
#include "offchip_stage.h"  // stage_beat

// The two processes run concurrently: synthesis, and the threaded C simulation (the
// condition of bb_dataflow.h's threaded macros); otherwise one after another (see above).
#if defined(__SYNTHESIS__) || (defined(BB_CSIM_THREADS) && defined(BBGRAP_HLS_STREAM_SHIM_H))
#define BB_DDR_FIFO_CONCURRENT 1
#else
#define BB_DDR_FIFO_CONCURRENT 0
#endif

namespace bb {

/// Writer: chunks [f0, f0 + n) from `in` into their regions, BEATS words each
/// (`stage_frame_write`: one write burst), each followed by its region on `tok`.
template <class F>
void ddr_fifo_write(Stream<F::LANES>& in, Word<stage_beat(F::LANES)>* fddr_w, Stream<1>& tok, int f0, int n) {
  int r = f0 % F::REGIONS;
BB_LOOP(ddr_fifo_write_frame)
  for (int f = 0; f < n; ++f) {
    stage_frame_write<F::LANES>(in, fddr_w, (F::OFF + r * F::REGION) / stage_beat(F::LANES), F::BEATS);
    Beat<1> t;
    t.d[0] = static_cast<int8_t>(r);
    tok.write(t);
    r = r + 1 == F::REGIONS ? 0 : r + 1;
  }
}

/// Reader: `n` chunks, each the region of the next token read back (one read burst) to `out`.
template <class F>
void ddr_fifo_read(const Word<stage_beat(F::LANES)>* fddr_r, Stream<1>& tok, Stream<F::LANES>& out, int n) {
  constexpr int SB = stage_beat(F::LANES);
BB_LOOP(ddr_fifo_read_frame)
  for (int f = 0; f < n; ++f) {
    const Beat<1> t = tok.read();
    const long base = (F::OFF + t.d[0] * F::REGION) / SB;
BB_LOOP(ddr_fifo_read_beat)
    for (long i = 0; i < F::BEATS; ++i) {
      BB_PIPELINE(1)
      const Word<SB> v = fddr_r[base + i];  // sequential addresses: one read burst per frame
      Beat<F::LANES> b;
      for (int s = 0; s < F::LANES; ++s) b.d[s] = v.d[s];
      out.write(b);
    }
  }
}

/// A FIFO of F::REGIONS regions in board memory (see the header): `frames` frames of
/// F::CHUNKS·F::BEATS beats of F::LANES lanes from `in` to `out`, in order and unchanged. `fddr_w` and
/// `fddr_r` both point to the board-memory image whose scratch area starts at byte F::OFF.
///
/// F: static constexpr int LANES (1..128), REGIONS (3..128), CHUNKS (regions a frame, at
/// least 1); static constexpr long BEATS (stream beats per region: a frame's over CHUNKS), OFF
/// (byte offset of region 0, 4 KB aligned), REGION (bytes per region, a 4 KB multiple, at
/// least BEATS·stage_beat(LANES)).
///
/// The token stream has depth T = REGIONS - 2, which keeps the writer from overwriting a
/// region the reader has not finished: the writer starts frame f (into region f mod REGIONS)
/// only after its push of token f - 1 returned, which needs room in the stream, i.e. the
/// reader to have popped token f - 1 - T; the reader pops a frame's token only once it has
/// read back the frame before, so frame f - 2 - T = f - REGIONS, the previous frame of region
/// f mod REGIONS, is read back by then, and the frame the reader may be reading, f - 1 - T or
/// later, is in another region. So REGIONS >= T + 2; T >= 1 (a stream of depth 0 is none)
/// makes REGIONS >= 3. The reader never reads a region before it holds its frame: it is
/// named by a token pushed after the frame's last word.
template <class F>
void ddr_fifo(Stream<F::LANES>& in, Stream<F::LANES>& out, Word<stage_beat(F::LANES)>* fddr_w,
              const Word<stage_beat(F::LANES)>* fddr_r, int frames) {
  constexpr long SB = stage_beat(F::LANES);
  static_assert(F::LANES >= 1 && F::LANES <= 128, "ddr_fifo: 1 <= LANES <= 128 (a beat in one memory word of at "
                "most 1,024 bits)");
  static_assert(F::BEATS >= 1, "ddr_fifo: BEATS >= 1");
  static_assert(F::CHUNKS >= 1, "ddr_fifo: CHUNKS >= 1");
  static_assert(F::REGIONS >= 3, "ddr_fifo: REGIONS >= 3 (the token stream has depth REGIONS - 2 >= 1)");
  static_assert(F::REGIONS <= 128, "ddr_fifo: REGIONS <= 128 (a region index in an int8 token)");
  static_assert(F::OFF >= 0 && F::OFF % 4096 == 0, "ddr_fifo: OFF is 4 KB aligned");
  static_assert(F::REGION % 4096 == 0, "ddr_fifo: REGION is a multiple of 4 KB");
  static_assert(F::REGION >= F::BEATS * SB, "ddr_fifo: REGION holds a frame (BEATS * stage_beat(LANES) bytes)");
  [[maybe_unused]] constexpr int TOK = F::REGIONS - 2;
  const int chunks = frames * F::CHUNKS;  // the regions written and read back
#if BB_DDR_FIFO_CONCURRENT
  BB_HLS(DATAFLOW)
  Stream<1> tok("ddr_fifo_token");
  BB_HLS(STREAM variable = tok depth = TOK)
  BB_FIFO_DEPTH(tok, TOK)
  BB_DATAFLOW_REGION()  // threaded C simulation: the two processes as threads (bb_dataflow.h)
  BB_PROCESS(ddr_fifo_write<F>(in, fddr_w, tok, 0, chunks);)
  BB_PROCESS(ddr_fifo_read<F>(fddr_r, tok, out, chunks);)
#else
  // sequential C simulation: step g writes chunk g and reads back chunk g - (REGIONS - 1)
  Stream<1> tok("ddr_fifo_token");
  for (int g = 0; g < chunks + F::REGIONS - 1; ++g) {
    if (g < chunks) ddr_fifo_write<F>(in, fddr_w, tok, g, 1);
    if (g >= F::REGIONS - 1) ddr_fifo_read<F>(fddr_r, tok, out, 1);
  }
#endif
}

}  // namespace bb

#endif  // BBGRAP_DDR_FIFO_H
