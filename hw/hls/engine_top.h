// bbgrap-hls kernel library: the layer engine's sequencer (docs/engine.md, "Whole network
// (program)"): a network's steps run one after the other on the engine's three units, the
// feature maps and the weights in board memory.
//
// Program: `EngineStep` rows (bbgrap_hls/codegen/engine_program.py `build`, one per step):
// `unit` (ENGINE_CONV, ENGINE_WINDOW, ENGINE_ELTWISE: engine_program.UNITS' indices) and the
// unit's descriptor words in its own field order (conv: engine_image.FIELDS as
// bb::EngineLayer holds them; window: engine_window.WINDOW_FIELDS = bb::WindowLayer; eltwise:
// engine_eltwise.ELTWISE_FIELDS = bb::EltwiseDesc), zero after the last field. Every step
// reads the maps earlier steps (or the host: the frame's input) wrote in the feature memory
// and writes its output map there; the bases in the descriptors place each map
// (engine_program's regions: a Concat's inputs written at channel offsets of its region).
//
// P gives Conv (bb::conv_engine's parameters: PE, SIMD, IBUF_WORDS, TILE_WORDS, BEAT),
// Window (bb::engine_window's: G, BEAT, WMAX, KB, KMAX) and Eltwise (bb::engine_eltwise's: G,
// BURST, CMAX, BEAT), all on one beat (BEAT bytes, default DDR_BEAT; the same for all three). The conv
// unit runs one layer a call (its input buffer is a static of conv_engine).
//
// engine_run checks every step against its unit before running anything (conv:
// bb::engine_fits; window: bb::window_fits; eltwise: a known mode, C a positive multiple of
// G, MULV's vector within CMAX, bases multiples of the beat) and returns 1 + the index of the
// first step that does not fit, having run nothing; else it runs the steps in order and
// returns 0 (or 1 + the index of a step whose unit refused it, should one still do).
//
// Not checked: Vitis HLS has not been run on it (one top calling three units' code, each
// with its own m_axi accesses on the same two ports); C simulation
// (tests/test_engine_program.py) checks the bytes of whole networks, not cycles.
#ifndef BBGRAP_ENGINE_TOP_H
#define BBGRAP_ENGINE_TOP_H

#include <cstring>

#include "conv_engine.h"
#include "engine_eltwise.h"
#include "engine_window.h"

namespace bb {

constexpr int ENGINE_CONV = 0, ENGINE_WINDOW = 1, ENGINE_ELTWISE = 2;  // EngineStep::unit
constexpr int ENGINE_STEP_WORDS = 32;                                  // descriptor words a step holds

/// One step: the unit and its descriptor's words.
struct EngineStep {
  int32_t unit;
  int32_t d[ENGINE_STEP_WORDS];
};

/// The descriptor of type D held by a step (its first sizeof(D) / 4 words).
template <class D>
D engine_desc(const EngineStep& s) {
  static_assert(sizeof(D) <= sizeof(s.d), "engine_top: a descriptor longer than ENGINE_STEP_WORDS");
  D d;
  std::memcpy(&d, s.d, sizeof d);
  return d;
}

/// Whether an element-wise descriptor fits the unit E (the kernel itself checks nothing).
template <class E>
bool eltwise_fits(const EltwiseDesc& d) {
  constexpr int B = EngineBeat<E>::value;
  if (d.mode < ELT_ADD || d.mode > ELT_TABLE || d.h < 1 || d.w < 1 || d.c < E::G || d.c % E::G) return false;
  if (d.mode == ELT_MULV && d.c > E::CMAX) return false;
  return d.a_base >= 0 && d.b_base >= 0 && d.out_base >= 0 && d.t_base >= 0 && d.a_base % B == 0 &&
         d.b_base % B == 0 && d.out_base % B == 0 && d.t_base % B == 0;
}

/// Whether step s fits its unit in P.
template <class P>
bool engine_step_fits(const EngineStep& s) {
  switch (s.unit) {
    case ENGINE_CONV:
      return engine_fits<typename P::Conv>(engine_desc<EngineLayer>(s));
    case ENGINE_WINDOW:
      return window_fits<typename P::Window>(engine_desc<WindowLayer>(s));
    case ENGINE_ELTWISE:
      return eltwise_fits<typename P::Eltwise>(engine_desc<EltwiseDesc>(s));
    default:
      return false;
  }
}

/// One frame of the program's n steps (see the header): 0, or 1 + the first step that does
/// not fit its unit (then nothing has run).
template <class P>
int engine_run(const EngineStep* steps, int n, Word<EngineGeom<typename P::Conv>::B>* fmem,
               const Word<EngineGeom<typename P::Conv>::B>* wmem) {
  constexpr int B = EngineGeom<typename P::Conv>::B;
  static_assert(P::Window::BEAT == B, "engine_top: the window unit on the words of the conv unit");
  static_assert(EngineBeat<typename P::Eltwise>::value == B, "engine_top: the element-wise unit on the words of the conv unit");
BB_LOOP(engine_top_check)
  for (int i = 0; i < n; ++i) {
    if (!engine_step_fits<P>(steps[i])) return i + 1;
  }
BB_LOOP(engine_top_steps)
  for (int i = 0; i < n; ++i) {
    const EngineStep& s = steps[i];
    int r = 0;
    if (s.unit == ENGINE_CONV) {
      const EngineLayer d = engine_desc<EngineLayer>(s);
      r = conv_engine<typename P::Conv>(&d, 1, fmem, wmem);
    } else if (s.unit == ENGINE_WINDOW) {
      r = engine_window<typename P::Window>(engine_desc<WindowLayer>(s), fmem, wmem);
    } else {
      engine_eltwise<typename P::Eltwise>(engine_desc<EltwiseDesc>(s), fmem, wmem);
    }
    if (r) return i + 1;
  }
  return 0;
}

}  // namespace bb

#endif  // BBGRAP_ENGINE_TOP_H
