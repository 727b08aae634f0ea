// bbgrap-hls kernel library: common types and the requantisation step.
//
// Activations stream in NHWC order with L int8 lanes per beat (docs/hardware.md): lane i
// of a beat holds channel c0 + i. Every kernel processes `frames` frames back to back.
// Arithmetic follows the int8 contract of docs/numerics.md exactly (int32 accumulators,
// 64-bit requantisation product, arithmetic shift, round half up via 2^(S-1)).
#ifndef BBGRAP_BB_COMMON_H
#define BBGRAP_BB_COMMON_H

#include <cstdint>
#include <type_traits>

#if __has_include(<hls_stream.h>)
#include <hls_stream.h>
#else
#include "hls_stream_shim.h"
#endif

// HLS pragmas go through BB_HLS so that plain g++ (-Wall: -Wunknown-pragmas) stays quiet;
// Vitis HLS (csim and synthesis) sees them as written. Loop labels (names in HLS
// reports) go through BB_LOOP for the same reason (-Wunused-label).
#if defined(__SYNTHESIS__) || defined(__VITIS_HLS__) || defined(BB_FORCE_HLS_PRAGMAS)
#define BB_PRAGMA_(x) _Pragma(#x)
#define BB_HLS(x) BB_PRAGMA_(HLS x)
#define BB_LOOP(name) name:
#else
#define BB_HLS(x)
#define BB_LOOP(name)
#endif

// BB_PIPELINE(n), the first statement of a pipelined loop's body: the PIPELINE II = n pragma
// for Vitis HLS; in the threaded C simulation (bb_dataflow.h) the iteration also adds n
// cycles to the counter of the process that runs it (bb_sim_threads.h: `csim --json`
// reports them per process and frame next to the plan's ii, docs/codegen.md "Kernel
// schedules"). Every pipelined loop of the kernels uses it, so a process's count is its
// schedule at the declared II (stalls on empty or full streams are not counted).
#if defined(BB_CSIM_THREADS) && defined(BBGRAP_HLS_STREAM_SHIM_H) && !defined(__SYNTHESIS__)
// (bb::sim::cycles, the running process's counter, is in bb_sim_threads.h, which the
// stand-in hls_stream_shim.h includes in this build)
#define BB_PIPELINE(n) BB_HLS(PIPELINE II = n) if (::bb::sim::cycles != nullptr) *::bb::sim::cycles += (n);
#elif !defined(BB_PIPELINE)  // (a test may count these loops' iterations: tests/test_hls_schedule.py)
#define BB_PIPELINE(n) BB_HLS(PIPELINE II = n)
#endif
#ifndef BB_PIPELINE_OVERLAP  // (a test may count these loops' iterations: tests/test_hls_schedule.py)
#define BB_PIPELINE_OVERLAP(n) BB_HLS(PIPELINE II = n)  // counted by BB_COUNT_OVERLAP (bb_dataflow.h)
#endif

namespace bb {

/// One stream beat: L int8 lanes (8·L bits on an AXI-Stream link).
template <int L>
struct Beat {
  int8_t d[L];
};

template <int L>
using Stream = hls::stream<Beat<L>>;

/// A packed word: N int8 lanes read or written together (a weight memory's word once the
/// array holding it is AGGREGATEd, a memory port's beat; lane i sits in bits [8i, 8i+8)).
template <int N>
struct Word {
  int8_t d[N];
};

/// Bytes per beat of a memory port (512-bit AXI4 m_axi: the width of the Alveo memory
/// controllers' ports, full-width bursts): off-chip weights and the activation movers.
constexpr int DDR_BEAT = 64;

/// P::BEAT where the parameter struct P has it, else DDR_BEAT (the layer engine's units).
template <class P, class = void>
struct EngineBeat : std::integral_constant<int, DDR_BEAT> {};
template <class P>
struct EngineBeat<P, std::void_t<decltype(P::BEAT)>> : std::integral_constant<int, P::BEAT> {};

/// Whether the conv unit keeps its input buffer in UltraRAM (`P::IBUF_URAM`), as the plan
/// counted it (EnginePlan ibuf_uram) and the RTL twin builds it (conv_engine.sv IBUF_URAM);
/// 0 when P does not say.
template <class P, class = void>
struct EngineIbufUram : std::integral_constant<int, 0> {};
template <class P>
struct EngineIbufUram<P, std::void_t<decltype(P::IBUF_URAM)>> : std::integral_constant<int, P::IBUF_URAM != 0> {};

/// Bytes of an activation buffer of `frames` frames of n bytes: the frames back to back,
/// padded to whole DDR_BEAT-byte words at the end (mem_to_stream, stream_to_mem).
constexpr long mem_bytes(long n, long frames) { return (n * frames + DDR_BEAT - 1) / DDR_BEAT * DDR_BEAT; }

/// Clamp a wide value to [lo, hi] and narrow it to int8.
inline int8_t clamp8(int64_t v, int32_t lo, int32_t hi) {
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return static_cast<int8_t>(v);
}

/// acc·mult for a requantisation multiplier 0 <= mult < 2^24 (quant/arith.py MULT_BITS):
/// mult (25 bits with its sign) on a DSP48E2's 27-bit A port times each half of acc on its
/// 18-bit B port, acc = (acc >> 17)·2^17 + (acc & 0x1FFFF): two 25 x 18-bit products (two
/// DSP48E2s, as rq_lane.sv), exact for every int32 acc.
inline int64_t rq_mul(int32_t acc, int32_t mult) {
  BB_HLS(INLINE)
  const int64_t m = static_cast<int64_t>(mult & 0xFFFFFF);
  const int64_t lo = static_cast<int64_t>(acc & 0x1FFFF) * m;
  const int64_t hi = static_cast<int64_t>(acc >> 17) * m;
  return hi * (static_cast<int64_t>(1) << 17) + lo;
}

/// y = clamp(zp + ((acc·mult + 2^(shift-1)) >> shift), lo, hi); shift in [0, 62],
/// 0 <= mult < 2^24 (`rq_mul`).
inline int8_t requant(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi) {
  BB_HLS(INLINE)
  int64_t p = rq_mul(acc, mult);
  if (shift > 0) p += static_cast<int64_t>(1) << (shift - 1);
  return clamp8(static_cast<int64_t>(zp) + (p >> shift), lo, hi);
}

/// Integer ceil/compile-time helpers.
constexpr int padded(int n, int a, int b) { return n + a + b; }
constexpr int span(int k, int d) { return (k - 1) * d + 1; }
constexpr int out_len(int np, int k, int s, int d) { return (np - span(k, d)) / s + 1; }

}  // namespace bb

#endif  // BBGRAP_BB_COMMON_H
