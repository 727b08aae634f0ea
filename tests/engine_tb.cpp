// Testbench of the layer engine's HLS kernel (hw/hls/conv_engine.h), built and run by
// tests/test_hls_engine.py.
//
// engine_configs.h (written by the test next to this file's copy) defines
// BB_ENGINE_CONFIGS(X): X(name, PE, SIMD, BEAT, IBUF_WORDS, TILE_WORDS) for each engine.
//
//   tb DIR CONFIG FRAMES FEATURE_BYTES IN_BASE
//
// reads DIR/prog.bin (the descriptors, int32 little-endian, engine_image.FIELDS a row),
// DIR/w.bin (the weight memory) and DIR/in<f>.bin (frame f's input map, blocked at the
// program's block stride); fills the feature memory with a pattern (so that a byte the
// kernel should write but does not shows), then per frame writes the input at IN_BASE, runs the kernel once and writes the
// whole feature memory to DIR/mem<f>.bin. Prints "status <s>" per frame (the kernel's
// return value); exits 0 unless a file or an argument is wrong.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conv_engine.h"
#include "engine_configs.h"

namespace {

std::vector<char> slurp(const std::string& path) {
  std::vector<char> v;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return v;
  char b[4096];
  for (size_t n; (n = std::fread(b, 1, sizeof b, f)) > 0;) v.insert(v.end(), b, b + n);
  std::fclose(f);
  return v;
}

template <class P>
int run(const std::string& dir, int frames, long feature_bytes, long in_base) {
  constexpr int B = bb::EngineGeom<P>::B;
  using Beat = bb::Word<B>;
  const std::vector<char> prog_raw = slurp(dir + "/prog.bin"), w_raw = slurp(dir + "/w.bin");
  if (prog_raw.empty() || prog_raw.size() % sizeof(bb::EngineLayer) || w_raw.size() % B || feature_bytes % B) {
    std::fprintf(stderr, "tb: bad prog.bin, w.bin or feature size\n");
    return 2;
  }
  std::vector<bb::EngineLayer> prog(prog_raw.size() / sizeof(bb::EngineLayer));
  std::memcpy(prog.data(), prog_raw.data(), prog_raw.size());
  std::vector<Beat> wmem(w_raw.size() / B);
  std::memcpy(static_cast<void*>(wmem.data()), w_raw.data(), w_raw.size());
  std::vector<Beat> fmem(feature_bytes / B);
  std::memset(static_cast<void*>(fmem.data()), 0x5A, feature_bytes);
  for (int f = 0; f < frames; ++f) {
    const std::vector<char> in = slurp(dir + "/in" + std::to_string(f) + ".bin");
    if (in.empty() || in_base + static_cast<long>(in.size()) > feature_bytes) {
      std::fprintf(stderr, "tb: bad in%d.bin\n", f);
      return 2;
    }
    std::memcpy(reinterpret_cast<char*>(fmem.data()) + in_base, in.data(), in.size());
    const int status = bb::conv_engine<P>(prog.data(), static_cast<int>(prog.size()), fmem.data(), wmem.data());
    std::printf("status %d\n", status);
    FILE* o = std::fopen((dir + "/mem" + std::to_string(f) + ".bin").c_str(), "wb");
    if (!o) return 2;
    const size_t n = std::fwrite(fmem.data(), 1, feature_bytes, o);
    std::fclose(o);
    if (n != static_cast<size_t>(feature_bytes)) return 2;
  }
  return 0;
}

// IBUF_URAM: the input buffer bound to UltraRAM on the configs whose IBUF_WORDS / 8 is odd, so that
// both storage branches of bb::conv_engine compile and run (C simulation ignores the binding)
#define BB_ENGINE_STRUCT(name, pe, simd, beat, ibuf, tile) \
  struct name {                                            \
    static constexpr int PE = pe, SIMD = simd, BEAT = beat, IBUF_WORDS = ibuf, TILE_WORDS = tile; \
    static constexpr int IBUF_URAM = (ibuf) / 8 % 2;      \
  };
BB_ENGINE_CONFIGS(BB_ENGINE_STRUCT)

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: tb DIR CONFIG FRAMES FEATURE_BYTES IN_BASE\n");
    return 2;
  }
  const std::string dir(argv[1]), cfg(argv[2]);
  const int frames = std::atoi(argv[3]);
  const long feature_bytes = std::atol(argv[4]), in_base = std::atol(argv[5]);
#define BB_ENGINE_RUN(name, ...) \
  if (cfg == #name) return run<name>(dir, frames, feature_bytes, in_base);
  BB_ENGINE_CONFIGS(BB_ENGINE_RUN)
  std::fprintf(stderr, "tb: no config %s\n", cfg.c_str());
  return 2;
}
