// bbgrap-hls kernel library: DATAFLOW regions that C simulation can run as threads.
//
// A region's code reads, for Vitis HLS (and for plain g++ without BB_CSIM_THREADS), exactly
// as the plain DATAFLOW region it is: the macros expand to their argument or to nothing.
//
//   bb::Stream<16> s3("s3");
//   BB_HLS(STREAM variable = s3 depth = 55)
//   BB_FIFO_DEPTH(s3, 55)          // the same depth for the threaded C simulation
//   BB_DATAFLOW_REGION()           // after the streams: its threads end before they do
//   BB_PROCESS(bb::fanout<1024, 16>(s2, frames, f56, f57);)
//
// With BB_CSIM_THREADS (`bbgrap-hls csim --threads`: g++ and the stand-in hls::stream of
// hls_stream_shim.h) each BB_PROCESS is a thread and each stream a bounded FIFO of its
// BB_FIFO_DEPTH (bb_sim_threads.h); the region waits for its processes at its end.
// BB_AFTER(p, q): process p (a core the testbench starts) waits until q returned, the
// host's barrier on an off-chip buffer. BB_CSIM_REPORT() prints every stream's highest
// fill against its depth (testbench, at the end) and the dataflow rule violations.
// BB_FIFO_BEATS(s, beats, frames): stream s carries `beats` beats per frame (the rule check).
// BB_IDLE(in, out): a loop iteration of a kernel that moves beats with non-blocking accesses
// (the window blocks, bb_window.h) could do nothing: the threaded C simulation blocks the
// thread until the stream `in` has a beat or `out` has room (either may be nullptr); nothing
// for Vitis or the sequential C simulation (where it never happens). Such a loop's pipelined
// iterations are timing-dependent in the threaded run (its reads and emits need not meet in
// one iteration), so it is declared BB_PIPELINE_OVERLAP(n) (the pragma, no count) and
// counted after it by BB_COUNT_OVERLAP(n, reads, emits): n·max(reads, emits), its cycles when
// the two sides overlap (bb_window.h; the static bound checks that its row buffer lets them).
// BB_STAGES() / BB_STAGE(call;) ... / BB_STAGES_END(): the processes of a DATAFLOW region in
// a frame loop's body that C simulation runs one after another in the thread of the kernel
// (conv2d_offchip.h): the threaded build counts each stage's cycles apart and adds the
// slowest stage's to the kernel's count, the frame's cycles once consecutive frames overlap
// (Vitis' dataflow in a loop, ping-pong buffers between the stages); otherwise the calls as
// written.
#ifndef BBGRAP_BB_DATAFLOW_H
#define BBGRAP_BB_DATAFLOW_H

#include "bb_common.h"

#if defined(BB_CSIM_THREADS) && defined(BBGRAP_HLS_STREAM_SHIM_H) && !defined(__SYNTHESIS__)
#include "bb_sim_threads.h"
#define BB_DATAFLOW_REGION() ::bb::sim::Region bb_region_;
#define BB_PROCESS(...) bb_region_.spawn(#__VA_ARGS__, [&] { __VA_ARGS__ });
#define BB_FIFO_DEPTH(var, depth) (var).set_depth(depth);
#define BB_FIFO_BEATS(var, beats, frames) (var).expect(beats, frames);
#define BB_AFTER(proc, dep) bb_region_.after(#proc, #dep);
#define BB_CSIM_REPORT() ::bb::sim::Runtime::get().report(stdout);
#define BB_IDLE(in, out) ::bb::sim::wait_either(in, out);
#define BB_COUNT_OVERLAP(n, r, e) if (::bb::sim::cycles != nullptr) *::bb::sim::cycles += (n) * ((r) > (e) ? (r) : (e));
#define BB_STAGES() long* const bb_stage_outer_ = ::bb::sim::cycles; long bb_stage_max_ = 0;
#define BB_STAGE(...) { long bb_stage_ = 0; ::bb::sim::cycles = bb_stage_outer_ != nullptr ? &bb_stage_ : nullptr; \
    __VA_ARGS__ ::bb::sim::cycles = bb_stage_outer_; if (bb_stage_ > bb_stage_max_) bb_stage_max_ = bb_stage_; }
#define BB_STAGES_END() if (bb_stage_outer_ != nullptr) *bb_stage_outer_ += bb_stage_max_;
#else
#define BB_DATAFLOW_REGION()
#define BB_PROCESS(...) __VA_ARGS__
#define BB_FIFO_DEPTH(var, depth)
#define BB_FIFO_BEATS(var, beats, frames)
#define BB_AFTER(proc, dep)
#define BB_CSIM_REPORT()
#define BB_IDLE(in, out)
#define BB_COUNT_OVERLAP(n, reads, emits)
#define BB_STAGES()
#define BB_STAGE(...) __VA_ARGS__
#define BB_STAGES_END()
#endif

#endif  // BBGRAP_BB_DATAFLOW_H
