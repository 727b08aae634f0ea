// bbgrap-hls: a minimal stand-in for Vitis HLS <hls_stream.h>, used only when the
// real header is absent (plain g++ C simulation). A stream is an unbounded FIFO, as in
// Vitis HLS C simulation; reading an empty stream is a design error and aborts.
// With BB_CSIM_THREADS (threaded C simulation, bb_dataflow.h) a stream is instead the
// bounded blocking FIFO bb::sim::Fifo of bb_sim_threads.h, behind the same interface.
#ifndef BBGRAP_HLS_STREAM_SHIM_H
#define BBGRAP_HLS_STREAM_SHIM_H

#if defined(BB_CSIM_THREADS)
#include "bb_sim_threads.h"

namespace hls {

template <typename T>
class stream : public bb::sim::Fifo<T> {
 public:
  using bb::sim::Fifo<T>::Fifo;
};

}  // namespace hls

#else

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <utility>

namespace hls {

template <typename T>
class stream {
 public:
  stream() = default;
  explicit stream(const char* name) : name_(name) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  void write(const T& v) { q_.push_back(v); }
  T read() {
    if (q_.empty()) {
      std::fprintf(stderr, "hls::stream '%s': read from an empty stream\n", name_.c_str());
      std::abort();
    }
    T v = q_.front();
    q_.pop_front();
    return v;
  }
  void read(T& v) { v = read(); }
  bool read_nb(T& v) {
    if (q_.empty()) return false;
    v = read();
    return true;
  }
  bool write_nb(const T& v) {
    write(v);
    return true;
  }
  bool empty() const { return q_.empty(); }
  bool full() const { return false; }
  std::size_t size() const { return q_.size(); }
  void operator<<(const T& v) { write(v); }
  void operator>>(T& v) { v = read(); }

 private:
  std::deque<T> q_;
  std::string name_;
};

}  // namespace hls

#endif  // BB_CSIM_THREADS
#endif  // BBGRAP_HLS_STREAM_SHIM_H
