// DDR frame stage in front of an off-chip conv/dense with one input slot (P::STAGE = 1,
// P::ISLOTS = 1, P::OSLOTS 1 or 2; conv2d_offchip.h has the layer itself).
//
// With STAGE = 1 (and ISLOTS = 1) the input passes through a DDR frame stage, so that the
// producer need not hold the frame while the layer computes (docs/codegen.md, "DDR frame
// stage"): offchip_stage_write takes the input stream (H·W·C/SIMD cycles) and writes frame f
// into region f mod STAGE_REGIONS (3) of a scratch area in the core's board memory, one
// memory word of SB = stage_beat(SIMD) bytes per stream beat (lanes in order in the low SIMD
// bytes, the rest zero; region r's word i at byte SOFF + r·SREGION + i·SB), then passes the
// region on a token stream of depth 1; offchip_stage_compute pops the token, reads the frame
// back (one word a cycle, one burst) into its one slot and computes it. The scratch has two
// m_axi arguments, `sddr_w` (written by the writer) and `sddr_r` (read by the reader), each
// in its own bundle and both given the same buffer (the core's image): Vitis HLS tracks no
// dependency through memory between DATAFLOW processes, the token orders them.
// The output frame buffer has P::OSLOTS slots as in conv2d_offchip.h: two (default) between
// the reader and offchip_emit, a ping-pong channel; one, a static of the reader
// (offchip_stage_compute_emit), which reads a frame back, computes it and emits it before
// it pops the next token.

#ifndef BBGRAP_OFFCHIP_STAGE_H
#define BBGRAP_OFFCHIP_STAGE_H

#include "conv2d_offchip.h"

namespace bb {

// ---- DDR frame stage (STAGE = 1) ---------------------------------------------------------

/// Frame regions of a DDR frame stage's scratch area (bbgrap_hls.model.stage.STAGE_REGIONS).
constexpr int STAGE_REGIONS = 3;

/// Bytes of the memory word that holds one stream beat of `lanes` int8 lanes in a DDR frame
/// stage: the next power of two, at least 4 (a 32-bit port), at most 128 (1,024 bits;
/// bbgrap_hls.model.stage.stage_beat_bytes).
constexpr int stage_beat(int lanes) { return lanes <= 4 ? 4 : 2 * stage_beat((lanes + 1) / 2); }


/// One frame of `beats` stream beats from `in` into the memory words `mem[base ..]`, one word
/// of stage_beat(LANES) bytes a beat (the lanes in its low bytes, the rest zero; sequential
/// addresses: one write burst). The writer of a DDR frame stage and of bb::ddr_fifo.
template <int LANES>
void stage_frame_write(Stream<LANES>& in, Word<stage_beat(LANES)>* mem, long base, long beats) {
  constexpr int SB = stage_beat(LANES);
BB_LOOP(stage_frame_write)
  for (long i = 0; i < beats; ++i) {
    BB_PIPELINE(1)
    const Beat<LANES> b = in.read();
    Word<SB> v = {};
    for (int s = 0; s < LANES; ++s) v.d[s] = b.d[s];
    mem[base + i] = v;
  }
}

/// Stage process 1 (the writer): frame f's H·W·C/SIMD beats from the input stream into
/// region f mod STAGE_REGIONS of the scratch (`stage_frame_write`); then the region on the
/// token stream.
template <class P>
void offchip_stage_write(Stream<P::SIMD>& in, Word<stage_beat(P::SIMD)>* sddr_w, Stream<1>& tok, int f) {
  const int r = f % STAGE_REGIONS;
  stage_frame_write<P::SIMD>(in, sddr_w, (OffchipStage<P>::SOFF + r * OffchipStage<P>::SREGION) /
                             stage_beat(P::SIMD), OffchipGeom<P>::XW);
  Beat<1> t;
  t.d[0] = static_cast<int8_t>(r);
  tok.write(t);
}

/// The frame of the next token's region read back from the scratch into the one input slot
/// `x`, one word a cycle (one read burst).
template <class P>
void offchip_stage_read(const Word<stage_beat(P::SIMD)>* sddr_r, Stream<1>& tok, Word<P::SIMD> x[OffchipGeom<P>::XW]) {
  constexpr int SB = stage_beat(P::SIMD);
  const Beat<1> t = tok.read();
  const long base = (OffchipStage<P>::SOFF + t.d[0] * OffchipStage<P>::SREGION) / SB;
BB_LOOP(offchip_stage_read)
  for (int i = 0; i < OffchipGeom<P>::XW; ++i) {
    BB_PIPELINE(1)
    const Word<SB> v = sddr_r[base + i];
    Word<P::SIMD> w;
    for (int s = 0; s < P::SIMD; ++s) w.d[s] = v.d[s];
    x[i] = w;
  }
}

/// Stage process 2 (the reader): the frame read back into the one input slot (a static of
/// this process, as offchip_store_compute's), then its folds over it.
template <class P>
void offchip_stage_compute(const Word<stage_beat(P::SIMD)>* sddr_r, Stream<1>& tok, Stream<OffchipGeom<P>::N>& wq,
                           Word<P::PE> y[OffchipGeom<P>::YW], const int32_t bias[P::PE][P::CO / P::PE],
                           const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                           std::false_type /* BRAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
  offchip_stage_read<P>(sddr_r, tok, x);
  offchip_compute<P>(x, wq, y, bias, mult, shift);
}

template <class P>
void offchip_stage_compute(const Word<stage_beat(P::SIMD)>* sddr_r, Stream<1>& tok, Stream<OffchipGeom<P>::N>& wq,
                           Word<P::PE> y[OffchipGeom<P>::YW], const int32_t bias[P::PE][P::CO / P::PE],
                           const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                           std::true_type /* URAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
  offchip_stage_read<P>(sddr_r, tok, x);
  offchip_compute<P>(x, wq, y, bias, mult, shift);
}

// STAGE = 1: four processes a frame (stage writer, fetch, read-back-then-compute, emit); only
// y is ping-pong. The token stream `tok` carries each frame's region from the writer to the
// reader, depth 1: the writer pushes frame f+2's token only once the reader popped frame
// f+1's, which it does after it finished frame f (read back and computed); so the writer
// starts frame f+3, which goes to region f mod 3 again, only after frame f was read back from
// it. The three regions hold the frame being read back, the next one (its token waiting) and
// the one being written.
template <class P>
void offchip_frames_stage(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                          Word<stage_beat(P::SIMD)>* sddr_w, const Word<stage_beat(P::SIMD)>* sddr_r,
                          const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                          const int32_t shift[P::PE][P::CO / P::PE], int frames, std::false_type /* BRAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    Stream<1> tok("offchip_stage_token");
    BB_HLS(STREAM variable = tok depth = 1)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_stage_write<P>(in, sddr_w, tok, f);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_stage_compute<P>(sddr_r, tok, wq, y, bias, mult, shift, std::false_type());)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

template <class P>
void offchip_frames_stage(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                          Word<stage_beat(P::SIMD)>* sddr_w, const Word<stage_beat(P::SIMD)>* sddr_r,
                          const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                          const int32_t shift[P::PE][P::CO / P::PE], int frames, std::true_type /* URAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    Stream<1> tok("offchip_stage_token");  // depth 1: see the BRAM variant above
    BB_HLS(STREAM variable = tok depth = 1)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_stage_write<P>(in, sddr_w, tok, f);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_stage_compute<P>(sddr_r, tok, wq, y, bias, mult, shift, std::true_type());)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

/// Stage process 2 with OSLOTS = 1: the frame read back into the one input slot, its folds
/// into the one output slot, then the output slot onto the output stream (both slots
/// statics of this process).
template <class P>
void offchip_stage_compute_emit(const Word<stage_beat(P::SIMD)>* sddr_r, Stream<1>& tok, Stream<OffchipGeom<P>::N>& wq,
                                Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                                const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                                std::false_type /* BRAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
  offchip_stage_read<P>(sddr_r, tok, x);
  offchip_compute<P>(x, wq, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

template <class P>
void offchip_stage_compute_emit(const Word<stage_beat(P::SIMD)>* sddr_r, Stream<1>& tok, Stream<OffchipGeom<P>::N>& wq,
                                Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                                const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                                std::true_type /* URAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
  offchip_stage_read<P>(sddr_r, tok, x);
  offchip_compute<P>(x, wq, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

// STAGE = 1, OSLOTS = 1: three processes a frame (stage writer, fetch, read-back-then-compute-
// then-emit); no frame buffer is a channel. The token stream as above: the reader pops frame
// f+1's token only after it emitted frame f, so region reuse is ordered as with OSLOTS = 2.
// U: std::false_type (BRAM) or std::true_type (URAM), the reader's.
template <class P, class U>
void offchip_frames_stage_out1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                               Word<stage_beat(P::SIMD)>* sddr_w, const Word<stage_beat(P::SIMD)>* sddr_r,
                               const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                               const int32_t shift[P::PE][P::CO / P::PE], int frames, U uram) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    Stream<1> tok("offchip_stage_token");  // depth 1: see offchip_frames_stage
    BB_HLS(STREAM variable = tok depth = 1)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_stage_write<P>(in, sddr_w, tok, f);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_stage_compute_emit<P>(sddr_r, tok, wq, out, bias, mult, shift, uram);)
    BB_STAGES_END()
  }
}

/// Convolution with off-chip weights behind a DDR frame stage (P::STAGE = 1, P::ISLOTS = 1):
/// `sddr_w` (written) and `sddr_r` (read) both point to the core's board-memory image, whose
/// scratch area for this layer starts at byte P::SOFF (see the header).
template <class P>
void conv2d_offchip(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                    Word<stage_beat(P::SIMD)>* sddr_w, const Word<stage_beat(P::SIMD)>* sddr_r,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  using S = OffchipStage<P>;
  constexpr int SB = stage_beat(P::SIMD);
  static_assert(S::STAGE == 1 && OffchipInSlots<P>::value == 1, "conv_offchip: the frame stage needs STAGE = 1, "
                "ISLOTS = 1");
  static_assert(P::SIMD <= 128, "conv_offchip: a frame stage carries at most 128 lanes a beat");
  static_assert(S::SOFF >= 0 && S::SOFF % 4096 == 0 && S::SREGION % 4096 == 0, "conv_offchip: the stage's "
                "scratch is 4 KB aligned");
  static_assert(S::SREGION >= static_cast<long>(OffchipGeom<P>::XW) * SB, "conv_offchip: SREGION holds a frame");
  constexpr int oslots = OffchipOutSlots<P>::value;
  static_assert(oslots == 1 || oslots == 2, "conv_offchip: OSLOTS is 1 or 2");
  using U = std::integral_constant<bool, P::URAM != 0>;
  if constexpr (oslots == 1) {
    offchip_frames_stage_out1<P>(in, out, wddr, sddr_w, sddr_r, bias, mult, shift, frames, U());
  } else {
    offchip_frames_stage<P>(in, out, wddr, sddr_w, sddr_r, bias, mult, shift, frames, U());
  }
}

/// dense_offchip behind a DDR frame stage (P::STAGE = 1, P::ISLOTS = 1; conv2d_offchip's).
template <class P>
void dense_offchip(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                   Word<stage_beat(P::SIMD)>* sddr_w, const Word<stage_beat(P::SIMD)>* sddr_r,
                   const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                   const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  conv2d_offchip<DenseAsConv<P>>(in, out, wddr, sddr_w, sddr_r, bias, mult, shift, frames);
}

}  // namespace bb

#endif  // BBGRAP_OFFCHIP_STAGE_H
