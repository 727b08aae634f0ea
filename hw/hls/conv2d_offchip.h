// bbgrap-hls kernel library: convolution / dense with its weights in board memory, read
// once per frame ("weights reloading"; docs/cost-model.md, "Off-chip weights").
//
// P is conv2d's parameter struct (H, W, C, CO, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, SIMD,
// PE, ZP_IN, ZP_OUT, LO, HI) with SIMD | C (no parallel window, no pixel copies), plus
//   OFF   the layer's first beat in the weight port (its image part starts OFF·DDR_BEAT bytes in),
//   URAM  1: the frame buffers in URAM, 0: in BRAM,
//   ISLOTS (optional, default 2) 2: two input frame slots (ping-pong), 1: one (below),
//   OSLOTS (optional, default 2) 2: two output frame slots (ping-pong), 1: one (below),
//   STAGE (optional, default 0) 1: ISLOTS = 1 with a DDR frame stage (below), then also
//   SOFF  byte offset of the stage's scratch area (region 0) in the core's board-memory
//         image, SREGION bytes per region (a multiple of 4,096).
// dense_offchip takes dense's struct (C, CO, SIMD, PE, ZP_OUT, LO, HI) plus OFF, URAM and
// optionally ISLOTS, OSLOTS, STAGE, SOFF, SREGION.
//
// Weight image (codegen/weights.py, hls/ddr_weights_core<k>.bin): the layer's NF·SF words of
// N = PE·SIMD bytes in address order, word a = nf·SF + sf at byte OFF·DDR_BEAT + a·N, lane
// pe·SIMD + s of a word = the weight of output channel nf·PE + pe, window element
// sf·SIMD + s ((ky, kx, c) order, c innermost): the on-chip ROM's words, back to back. Each
// layer's part is padded to whole beats. The port is read in DDR_BEAT-byte beats (512 bits,
// the width of the Alveo memory controllers' AXI ports).
//
// Per frame, four processes (offchip_procs.h) of a DATAFLOW region inside the frame loop (Vitis HLS "dataflow
// in a loop": the frame buffers are ping-pong channels, so three consecutive frames overlap):
//   offchip_store    H·W·C/SIMD cycles: the input stream into the input frame buffer x;
//   offchip_fetch    the frame's NF·SF weight words from the m_axi port, one burst of
//                    ceil(NF·SF·N / DDR_BEAT) beats, repacked into words (max(1, N/DDR_BEAT)
//                    cycles a word) onto a word stream;
//   offchip_compute  SF cycles: fold 0's words into tile half 0; then fold nf = 0..NF-1:
//                    HO·WO·SF cycles (II = 1) over every output pixel, each window read
//                    from x (SIMD elements a cycle, padding = ZP_IN), weights from tile half
//                    nf mod 2, while the words of fold nf+1 arrive in the other half (one a
//                    cycle when the fetch has one); PE requantised channels a pixel into y;
//                    a fold whose next words have not all arrived waits for them at its end;
//   offchip_emit     HO·WO·CO/PE cycles: y pixel-major onto the output stream (PE lanes).
// Bias, multiplier and shift are conv2d's [PE][NF] constants (bias' with -zp_in·Σw folded).
// With ISLOTS = 1 the input frame buffer is one array that offchip_store_compute keeps (a
// static of that process): it stores a frame, then computes it, then stores the next (the
// RTL conv_offchip's ISLOTS = 1 order), beside the fetch and the emit; the producer must hold
// the next frame meanwhile (the planner puts such a block after an off-chip block only:
// docs/cost-model.md, "One input slot").
// With OSLOTS = 1 the output frame buffer is one array, half the output memory, that
// offchip_compute_emit keeps (a static of that process): it computes a frame into it, then
// emits it, then computes the next, so a frame's fold 0 waits until the previous frame's
// output has left (the RTL conv_offchip's OSLOTS = 1 order); the store (x ping-pong) and the
// fetch stay processes of their own. With ISLOTS = OSLOTS = 1 one process,
// offchip_store_compute_emit, keeps both buffers and stores, computes and emits each frame
// in turn, beside the fetch. A consumer slower than the emit then holds back the next
// frame's compute.
// With STAGE = 1 (and ISLOTS = 1) the input passes through a DDR frame stage: offchip_stage.h
// (either OSLOTS).
// C simulation runs the DATAFLOW stages one after another in the kernel's thread; the threaded
// build counts a frame at its slowest stage (BB_STAGE, bb_dataflow.h; codegen/schedule.py
// `offchip_cycles` is the bound).
#ifndef BBGRAP_CONV2D_OFFCHIP_H
#define BBGRAP_CONV2D_OFFCHIP_H

#include <type_traits>

#include "bb_weights.h"
#include "bb_dataflow.h"
#include "offchip_procs.h"

namespace bb {

// The frame loop, one per frame-buffer memory (a BIND_STORAGE impl is a literal): DATAFLOW
// inside the loop body makes x and y ping-pong buffers (two frame slots each).
template <class P>
void offchip_frames(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames, std::false_type /* BRAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute<P>(x, wq, y, bias, mult, shift);)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

template <class P>
void offchip_frames(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames, std::true_type /* URAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
    Word<P::PE> y[OffchipGeom<P>::YW];
    BB_HLS(AGGREGATE variable = y compact = bit)
    BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute<P>(x, wq, y, bias, mult, shift);)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

/// Input slots of P: P::ISLOTS where the struct has it, else 2.
template <class P, class = void>
struct OffchipInSlots : std::integral_constant<int, 2> {};
template <class P>
struct OffchipInSlots<P, std::void_t<decltype(P::ISLOTS)>> : std::integral_constant<int, P::ISLOTS> {};

/// Output slots of P: P::OSLOTS where the struct has it, else 2.
template <class P, class = void>
struct OffchipOutSlots : std::integral_constant<int, 2> {};
template <class P>
struct OffchipOutSlots<P, std::void_t<decltype(P::OSLOTS)>> : std::integral_constant<int, P::OSLOTS> {};

/// ISLOTS = 1: the input frame into the one input slot ``x``, then the frame's folds over it.
template <class P>
void offchip_store_compute(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Word<P::SIMD> x[OffchipGeom<P>::XW],
                           Word<P::PE> y[OffchipGeom<P>::YW], const int32_t bias[P::PE][P::CO / P::PE],
                           const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE]) {
  offchip_store<P>(in, x);
  offchip_compute<P>(x, wq, y, bias, mult, shift);
}

template <class P>
void offchip_store_compute(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Word<P::PE> y[OffchipGeom<P>::YW],
                           const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                           const int32_t shift[P::PE][P::CO / P::PE], std::false_type /* BRAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
}

template <class P>
void offchip_store_compute(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Word<P::PE> y[OffchipGeom<P>::YW],
                           const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                           const int32_t shift[P::PE][P::CO / P::PE], std::true_type /* URAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
}

// ISLOTS = 1: three processes a frame (fetch, store-then-compute, emit); only y is ping-pong.
template <class P>
void offchip_frames_in1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
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
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_store_compute<P>(in, wq, y, bias, mult, shift, std::false_type());)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

template <class P>
void offchip_frames_in1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
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
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_store_compute<P>(in, wq, y, bias, mult, shift, std::true_type());)
    BB_STAGE(offchip_emit<P>(y, out);)
    BB_STAGES_END()
  }
}

/// OSLOTS = 1: the frame's folds into the one output slot ``y``, then ``y`` onto the output.
template <class P>
void offchip_compute_emit(const Word<P::SIMD> x[OffchipGeom<P>::XW], Stream<OffchipGeom<P>::N>& wq,
                          Word<P::PE> y[OffchipGeom<P>::YW], Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                          const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE]) {
  offchip_compute<P>(x, wq, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

template <class P>
void offchip_compute_emit(const Word<P::SIMD> x[OffchipGeom<P>::XW], Stream<OffchipGeom<P>::N>& wq,
                          Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                          const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                          std::false_type /* BRAM */) {
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
  offchip_compute_emit<P>(x, wq, y, out, bias, mult, shift);
}

template <class P>
void offchip_compute_emit(const Word<P::SIMD> x[OffchipGeom<P>::XW], Stream<OffchipGeom<P>::N>& wq,
                          Stream<P::PE>& out, const int32_t bias[P::PE][P::CO / P::PE],
                          const int32_t mult[P::PE][P::CO / P::PE], const int32_t shift[P::PE][P::CO / P::PE],
                          std::true_type /* URAM */) {
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
  offchip_compute_emit<P>(x, wq, y, out, bias, mult, shift);
}

// OSLOTS = 1 (ISLOTS = 2): three processes a frame (store, fetch, compute-then-emit); only x
// is ping-pong.
template <class P>
void offchip_frames_out1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                         const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                         const int32_t shift[P::PE][P::CO / P::PE], int frames, std::false_type /* BRAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute_emit<P>(x, wq, out, bias, mult, shift, std::false_type());)
    BB_STAGES_END()
  }
}

template <class P>
void offchip_frames_out1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                         const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                         const int32_t shift[P::PE][P::CO / P::PE], int frames, std::true_type /* URAM */) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Word<P::SIMD> x[OffchipGeom<P>::XW];
    BB_HLS(AGGREGATE variable = x compact = bit)
    BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_store<P>(in, x);)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_compute_emit<P>(x, wq, out, bias, mult, shift, std::true_type());)
    BB_STAGES_END()
  }
}

/// ISLOTS = OSLOTS = 1: the input frame into the one input slot, its folds into the one
/// output slot, then the output slot onto the output stream; both slots statics of this
/// process.
template <class P>
void offchip_store_compute_emit(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Stream<P::PE>& out,
                                const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                                const int32_t shift[P::PE][P::CO / P::PE], std::false_type /* BRAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = bram)
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = bram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

template <class P>
void offchip_store_compute_emit(Stream<P::SIMD>& in, Stream<OffchipGeom<P>::N>& wq, Stream<P::PE>& out,
                                const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                                const int32_t shift[P::PE][P::CO / P::PE], std::true_type /* URAM */) {
  static Word<P::SIMD> x[OffchipGeom<P>::XW];
  BB_HLS(AGGREGATE variable = x compact = bit)
  BB_HLS(BIND_STORAGE variable = x type = ram_2p impl = uram)
  static Word<P::PE> y[OffchipGeom<P>::YW];
  BB_HLS(AGGREGATE variable = y compact = bit)
  BB_HLS(BIND_STORAGE variable = y type = ram_2p impl = uram)
  offchip_store_compute<P>(in, wq, x, y, bias, mult, shift);
  offchip_emit<P>(y, out);
}

// ISLOTS = OSLOTS = 1: two processes a frame (fetch, store-then-compute-then-emit); no frame
// buffer is a channel. U: std::false_type (BRAM) or std::true_type (URAM), the process's.
template <class P, class U>
void offchip_frames_in1_out1(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                             const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                             const int32_t shift[P::PE][P::CO / P::PE], int frames, U uram) {
BB_LOOP(offchip_frame)
  for (int f = 0; f < frames; ++f) {
    BB_HLS(DATAFLOW)
    Stream<OffchipGeom<P>::N> wq("offchip_w");
    BB_HLS(STREAM variable = wq depth = 2)
    BB_STAGES()  // csim --threads: the frame counted at its slowest stage (bb_dataflow.h)
    BB_STAGE(offchip_fetch<P>(wddr, wq);)
    BB_STAGE(offchip_store_compute_emit<P>(in, wq, out, bias, mult, shift, uram);)
    BB_STAGES_END()
  }
}

/// STAGE, SOFF and SREGION of P where the struct has STAGE, else 0 (no stage; the DDR frame
/// stage's kernels are in offchip_stage.h).
template <class P, class = void>
struct OffchipStage {
  static constexpr int STAGE = 0;
  static constexpr long SOFF = 0, SREGION = 0;
};
template <class P>
struct OffchipStage<P, std::void_t<decltype(P::STAGE)>> {
  static constexpr int STAGE = P::STAGE;
  static constexpr long SOFF = P::SOFF, SREGION = P::SREGION;
};

/// Convolution whose weights stream from board memory once per frame (see the header).
/// `wddr` is the core's weight port; the layer reads from beat P::OFF on.
template <class P>
void conv2d_offchip(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                    const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                    const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  constexpr int islots = OffchipInSlots<P>::value, oslots = OffchipOutSlots<P>::value;
  static_assert(islots == 1 || islots == 2, "conv_offchip: ISLOTS is 1 or 2");
  static_assert(oslots == 1 || oslots == 2, "conv_offchip: OSLOTS is 1 or 2");
  static_assert(OffchipStage<P>::STAGE == 0, "conv_offchip: STAGE = 1 takes the scratch pointers sddr_w, sddr_r");
  using U = std::integral_constant<bool, P::URAM != 0>;
  if constexpr (islots == 1 && oslots == 1) {
    offchip_frames_in1_out1<P>(in, out, wddr, bias, mult, shift, frames, U());
  } else if constexpr (islots == 1) {
    offchip_frames_in1<P>(in, out, wddr, bias, mult, shift, frames, U());
  } else if constexpr (oslots == 1) {
    offchip_frames_out1<P>(in, out, wddr, bias, mult, shift, frames, U());
  } else {
    offchip_frames<P>(in, out, wddr, bias, mult, shift, frames, U());
  }
}

/// A dense layer's struct as a 1×1 convolution over one pixel of C channels.
template <class D>
struct DenseAsConv {
  static constexpr int H = 1, W = 1, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1, PT = 0, PL = 0, PB = 0,
                       PR = 0, ZP_IN = 0;
  static constexpr int C = D::C, CO = D::CO, SIMD = D::SIMD, PE = D::PE, ZP_OUT = D::ZP_OUT, LO = D::LO,
                       HI = D::HI, OFF = D::OFF, URAM = D::URAM, ISLOTS = OffchipInSlots<D>::value,
                       OSLOTS = OffchipOutSlots<D>::value, STAGE = OffchipStage<D>::STAGE;
  static constexpr long SOFF = OffchipStage<D>::SOFF, SREGION = OffchipStage<D>::SREGION;
};

/// Dense layer whose weights stream from board memory once per frame: conv2d_offchip on
/// one pixel (the fold loop runs SF = C/SIMD steps per fold).
template <class P>
void dense_offchip(Stream<P::SIMD>& in, Stream<P::PE>& out, const Word<DDR_BEAT>* wddr,
                   const int32_t bias[P::PE][P::CO / P::PE], const int32_t mult[P::PE][P::CO / P::PE],
                   const int32_t shift[P::PE][P::CO / P::PE], int frames) {
  conv2d_offchip<DenseAsConv<P>>(in, out, wddr, bias, mult, shift, frames);
}

}  // namespace bb

#endif  // BBGRAP_CONV2D_OFFCHIP_H
