// bbgrap-hls: the layer engine as a Vitis kernel's body (docs/codegen.md, "Engine designs";
// copied into engine designs from templates/engine/). The generated top (hls/engine.cpp)
// declares the AXI interfaces and calls engine_kernel once per frame.
//
// Ports (all m_axi): `prog`, the program as engine/program.bin holds it (int32: the step
// count n, then n rows of 1 + ENGINE_STEP_WORDS words: the unit, the descriptor words);
// `fmem`, the feature memory (the maps, the frame's input written by the host at its region
// before the call, the output read back after it); `wmem`, the weight memory
// (engine/weights.bin, loaded once). Each call copies the n rows into an on-chip array of
// MAX_STEPS steps, runs bb::engine_run over them and writes its status to the first 4 bytes
// of beat `status_beat` of fmem (little-endian int32: 0 ok, 1 + the index of a step its unit
// refused, -1 a step count outside 1..MAX_STEPS; the rest of that beat zero), which the host
// reads back with the output.
#ifndef BBGRAP_ENGINE_KERNEL_H
#define BBGRAP_ENGINE_KERNEL_H

#include <cstring>

#include "engine_top.h"

namespace bb {

constexpr int ENGINE_ROW_WORDS = 1 + ENGINE_STEP_WORDS;  // int32 words of a program row

/// One frame of the program at `prog` (see the header); returns the status it writes.
template <class P, int MAX_STEPS>
int engine_kernel(const int32_t* prog, Word<EngineGeom<typename P::Conv>::B>* fmem,
                  const Word<EngineGeom<typename P::Conv>::B>* wmem, long status_beat) {
  static EngineStep steps[MAX_STEPS];
  const int n = prog[0];
  int status = -1;
  if (n >= 1 && n <= MAX_STEPS) {
BB_LOOP(engine_kernel_rows)
    for (int i = 0; i < n; ++i) {
      const int32_t* row = prog + 1 + static_cast<long>(i) * ENGINE_ROW_WORDS;
      steps[i].unit = row[0];
BB_LOOP(engine_kernel_words)
      for (int j = 0; j < ENGINE_STEP_WORDS; ++j) {
        BB_PIPELINE(1)
        steps[i].d[j] = row[1 + j];
      }
    }
    status = engine_run<P>(steps, n, fmem, wmem);
  }
  Word<EngineGeom<typename P::Conv>::B> w;
  std::memset(w.d, 0, sizeof w.d);
  std::memcpy(w.d, &status, sizeof status);
  fmem[status_beat] = w;
  return status;
}

}  // namespace bb

#endif  // BBGRAP_ENGINE_KERNEL_H
