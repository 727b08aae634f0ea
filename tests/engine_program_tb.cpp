// Testbench of the layer engine's sequencer (hw/hls/engine_top.h) running a whole network,
// built and run by tests/test_engine_program.py. The units' parameters come as -D macros:
// PE, SIMD, IBUF_WORDS, TILE_WORDS (conv), WMAX, KB, KMAX (window), CMAX, BURST (eltwise);
// every unit works on DDR_BEAT-byte words.
//
//   tb sizes           prints the descriptor words of each unit's struct ("conv 20 window 25 ...")
//   tb DIR FRAMES      runs the program
//
// DIR/prog.bin: int32 little-endian, the step count, then per step its unit and
// ENGINE_STEP_WORDS descriptor words; DIR/w.bin: the weight memory; DIR/mem.txt:
// "FEATURE_BYTES IN_BASE"; DIR/in<f>.bin: frame f's input region. The feature memory starts
// filled with a pattern (a byte read before any step wrote it shows); per frame the input is
// written at IN_BASE, engine_run runs once and the whole feature memory goes to
// DIR/mem<f>.bin. Prints "status <s>" per frame (engine_run's return value); exits 0
// unless a file or an argument is wrong.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine_top.h"

namespace {

struct ConvP {
  static constexpr int PE = PE_, SIMD = SIMD_, IBUF_WORDS = IBUF_WORDS_, TILE_WORDS = TILE_WORDS_;
  static constexpr int BEAT = bb::DDR_BEAT;
};
struct WindowP {
  static constexpr int G = PE_, BEAT = bb::DDR_BEAT, WMAX = WMAX_, KB = KB_, KMAX = KMAX_;
};
struct EltwiseP {
  static constexpr int G = PE_, BURST = BURST_, CMAX = CMAX_;
};
struct Engine {
  using Conv = ConvP;
  using Window = WindowP;
  using Eltwise = EltwiseP;
};

std::vector<char> slurp(const std::string& path) {
  std::vector<char> v;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return v;
  char b[4096];
  for (size_t n; (n = std::fread(b, 1, sizeof b, f)) > 0;) v.insert(v.end(), b, b + n);
  std::fclose(f);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr int B = bb::DDR_BEAT;
  using Beat = bb::Word<B>;
  if (argc == 2 && std::string(argv[1]) == "sizes") {
    std::printf("conv %zu window %zu eltwise %zu\n", sizeof(bb::EngineLayer) / 4, sizeof(bb::WindowLayer) / 4,
                sizeof(bb::EltwiseDesc) / 4);
    return 0;
  }
  if (argc != 3) return 2;
  const std::string dir = argv[1];
  const int frames = std::atoi(argv[2]);
  const std::vector<char> prog_raw = slurp(dir + "/prog.bin"), w_raw = slurp(dir + "/w.bin");
  long fbytes = 0, in_base = 0;
  FILE* m = std::fopen((dir + "/mem.txt").c_str(), "r");
  if (!m) return 2;
  const int got = std::fscanf(m, "%ld %ld", &fbytes, &in_base);
  std::fclose(m);
  if (got != 2 || fbytes % B || prog_raw.size() < 4) return 2;
  int32_t n = 0;
  std::memcpy(&n, prog_raw.data(), 4);
  if (prog_raw.size() != 4 + static_cast<size_t>(n) * sizeof(bb::EngineStep)) return 2;
  std::vector<bb::EngineStep> steps(n);
  std::memcpy(steps.data(), prog_raw.data() + 4, steps.size() * sizeof(bb::EngineStep));
  std::vector<Beat> w((w_raw.size() + B - 1) / B + 1), f(fbytes / B);
  std::memcpy(w.data(), w_raw.data(), w_raw.size());
  std::memset(f.data(), 0x5A, f.size() * B);
  for (int fr = 0; fr < frames; ++fr) {
    const std::vector<char> x = slurp(dir + "/in" + std::to_string(fr) + ".bin");
    if (x.empty() || in_base + static_cast<long>(x.size()) > fbytes) return 2;
    std::memcpy(reinterpret_cast<char*>(f.data()) + in_base, x.data(), x.size());
    const int s = bb::engine_run<Engine>(steps.data(), n, f.data(), w.data());
    std::printf("status %d\n", s);
    FILE* o = std::fopen((dir + "/mem" + std::to_string(fr) + ".bin").c_str(), "wb");
    if (!o) return 2;
    std::fwrite(f.data(), 1, f.size() * B, o);
    std::fclose(o);
  }
  return 0;
}
