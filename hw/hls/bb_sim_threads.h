// bbgrap-hls: threaded C simulation runtime (g++ only, `bbgrap-hls csim --threads`).
//
// Vitis HLS runs the processes of a DATAFLOW region concurrently, joined by FIFOs of the
// depth the STREAM pragma gives; a FIFO too shallow for a reconvergent path deadlocks in
// hardware and in co-simulation, while a sequential C simulation over unbounded streams
// passes. Here every process of a region is a std::thread (bb_dataflow.h: BB_PROCESS), and
// every stream a bounded FIFO (`Fifo`, behind hls::stream's interface in
// hls_stream_shim.h) whose read blocks while it is empty and whose write blocks while it
// holds `depth` beats (BB_FIFO_DEPTH; a stream given no depth is unbounded).
//
// Deadlock detection: a watchdog thread looks, every few milliseconds, whether every live
// process thread is blocked on a stream (threads waiting to join their children or for a
// barrier do not count; the testbench's thread counts while it spawns a top-level region's
// processes, so a first process blocked before its stream's consumer exists is no deadlock). It checks each blocked thread's stream under that stream's lock
// (try_lock: a held lock means someone is running) while holding the runtime lock (no thread
// can block or unblock meanwhile), so a report is never a false alarm. It then prints one
// line per blocked stream (name, producer, consumer, fill, depth) on stderr and exits 1,
// as Vitis co-simulation's deadlock detection stops the run.
//
// Names: a thread runs a process with an id (`core0` for a core started by the testbench,
// `core0.p3` for the 4th process of core0's region, `core0.p3.p0` inside a kernel's own
// region) and a label (the callee, e.g. `conv2d<layer1_P>`). A stream's name is the id of
// the thread that constructs it plus the name it is given (`core0.s3`); its producer and
// consumer are the processes of its first write and first read.
//
// Dataflow rules (`config_dataflow -strict_mode`, UG1399 "Dataflow Optimization
// Limitations"): every stream counts its writes and reads and remembers every distinct
// process that wrote or read it. At its end (and, for the streams still alive, at a deadlock)
// it reports, as `dataflow rule: stream NAME ...` lines on stderr:
//  - a second producer or consumer process (single-producer-consumer violation);
//  - an access from outside the processes of the region that declares it, or a channel
//    whose consumer comes before its producer in the region's process order (a bypass of
//    the region's structure, feedback);
//  - a process whose call names the stream but which never accessed it (a conditionally
//    executed process or body), a stream written but never read or read but never written;
//  - writes and reads that differ from each other or from the beats per frame the generated
//    code registered (BB_FIFO_BEATS: tensor elements / lanes) times the frames.
#ifndef BBGRAP_BB_SIM_THREADS_H
#define BBGRAP_BB_SIM_THREADS_H

#include <algorithm>
#include <chrono>
#include <cctype>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bb {
namespace sim {

class FifoBase;

/// A process (one thread). Kept for the whole run: streams point at their producer/consumer.
struct Process {
  std::string id;     // core0.p3
  std::string label;  // conv2d<layer1_P>
  FifoBase* waiting_on = nullptr;  // the stream it is blocked on (runtime lock)
  bool writing = false;
  FifoBase* waiting_out = nullptr;  // wait_either: also waits for room in this stream
  bool done = false;
  const Process* parent = nullptr;  // the process whose region started it (none: the testbench's)
  int index = 0;                    // its place in that region's process order
  bool has_region = false;          // it started a threaded region (BB_DATAFLOW_REGION)
  long cycles = 0;                  // its pipelined-loop iterations x II (BB_PIPELINE)
  std::string text() const { return label.empty() || label == id ? id : id + " " + label; }
};

/// Highest fill of a stream against its depth (0: unbounded), for `csim --json`.
struct FifoStat {
  std::string name, producer, consumer;
  std::size_t max_fill, depth;
  bool several_producers, several_consumers;
};

inline thread_local Process* self = nullptr;
/// The cycle counter of the process this thread runs (none: not a process); BB_PIPELINE
/// (bb_common.h) adds each pipelined iteration's II to it.
inline thread_local long* cycles = nullptr;

/// Process-wide state: live/blocked process counts, every stream, the watchdog.
class Runtime {
 public:
  static Runtime& get();

  std::mutex mu;
  std::condition_variable cv;  // a process finished (joins and barriers wait on it)
  int live = 0;                // process threads not waiting for a join or a barrier
  int blocked = 0;             // of those, blocked on a stream
  std::vector<Process*> running;
  std::vector<Process*> procs;  // every process of the run, in start order (cycle report)
  std::vector<FifoBase*> fifos;
  std::vector<FifoStat> stats;  // of streams already destroyed
  std::vector<std::string> rules;  // dataflow rule violations of streams already destroyed

  void start_watchdog();

  /// The calling thread stops counting as live while it waits for others (join, barrier).
  void suspend() {
    if (self) --live;
  }
  void resume() {
    if (self) ++live;
  }

  void report(std::FILE* f);

 private:
  bool watchdog_ = false;
  void watch();
};

/// A process waiting for either of two streams (wait_either): the streams bump `gen`.
struct Watch {
  std::mutex m;
  std::condition_variable cv;
  unsigned long gen = 0;
};

/// Shared part of a bounded stream: lock, wait conditions, name, depth, statistics.
class FifoBase {
 public:
  explicit FifoBase(const char* name);
  FifoBase(const FifoBase&) = delete;
  FifoBase& operator=(const FifoBase&) = delete;
  virtual ~FifoBase();

  /// The STREAM depth of the generated code (BB_FIFO_DEPTH); before it, unbounded.
  const std::string& name() const { return name_; }

  void set_depth(std::size_t depth) {
    std::lock_guard<std::mutex> lk(m_);
    depth_ = depth;
  }

  FifoStat stat() const {
    return {name_, side(producer_, consumer_, "no write yet"), side(consumer_, producer_, "no read yet"), max_, depth_,
            several_producers_, several_consumers_};
  }

  /// A process started with this stream among its call's arguments (Region::spawn).
  void attach(const Process* p) { attached_.push_back(p); }

  /// The generated code's beats per frame for this stream, over `frames` frames
  /// (BB_FIFO_BEATS); a core that names a link stream registers it again (same values).
  void expect(long beats, int frames) {
    std::lock_guard<std::mutex> lk(m_);
    if (expect_ >= 0 && (expect_ != beats || frames_ != frames))
      conflict_ = "registered as " + std::to_string(expect_) + " beats x " + std::to_string(frames_) +
                  " frames and as " + std::to_string(beats) + " x " + std::to_string(frames);
    expect_ = beats;
    frames_ = frames;
  }

  /// The dataflow rule violations of this stream (`final`: it is at its end; else at a
  /// deadlock, where only what cannot change any more counts). Lock m_ and the runtime's held.
  std::vector<std::string> rule_lines(bool final) const;
  bool others_done(const std::vector<const Process*>& ends) const;

 protected:
  friend class Runtime;

  bool is_full() const { return depth_ != 0 && n_ >= depth_; }

  /// The producer (or consumer) `p`; before its first access, the one process other than
  /// `other` whose call names this stream, marked as not seen yet.
  std::string side(const Process* p, const Process* other, const char* none) const {
    if (p) return p->text();
    std::string out;
    for (const Process* q : attached_)
      if (q != other) out += (out.empty() ? "" : " or ") + q->text();
    return out.empty() ? std::string("(") + none + ")" : out + " (" + none + ")";
  }

  void note_writer() {
    if (producer_ == nullptr) producer_ = self;
    else if (producer_ != self) several_producers_ = true;
    note(writers_);
  }
  void note_reader() {
    if (consumer_ == nullptr) consumer_ = self;
    else if (consumer_ != self) several_consumers_ = true;
    note(readers_);
  }
  void note(std::vector<const Process*>& who) {
    if (self == owner_) outside_ = true;  // the declaring thread itself (checked if it runs a region)
    if (std::find(who.begin(), who.end(), self) == who.end()) who.push_back(self);
  }

  /// Wait (lock `lk` held) until the stream has room (`writing`) or a beat.
  void wait(std::unique_lock<std::mutex>& lk, bool writing);

  void pushed() {
    ++n_;
    if (n_ > max_) max_ = n_;
    if (readers_waiting_) not_empty_.notify_all();
    poke();
  }
  void popped() {
    --n_;
    if (writers_waiting_) not_full_.notify_all();
    poke();
  }
  void poke() {
    if (watch_ == nullptr) return;
    std::lock_guard<std::mutex> g(watch_->m);
    ++watch_->gen;
    watch_->cv.notify_all();
  }
  friend void wait_either(FifoBase* in, FifoBase* out);

  mutable std::mutex m_;
  std::condition_variable not_empty_, not_full_;
  int readers_waiting_ = 0, writers_waiting_ = 0;
  Watch* watch_ = nullptr;  // a process in wait_either on this stream (one end at a time)
  std::string name_;
  std::size_t depth_ = 0, n_ = 0, max_ = 0;
  const Process* producer_ = nullptr;
  const Process* consumer_ = nullptr;
  bool several_producers_ = false, several_consumers_ = false;
  std::vector<const Process*> attached_;  // under the runtime lock
  // dataflow rules: the process that declared it, every distinct writer/reader, the counts
  // (a blocking access counts when it starts: a read that waits forever is the one too many)
  const Process* owner_ = self;
  std::vector<const Process*> writers_, readers_;
  std::size_t writes_ = 0, reads_ = 0;
  long expect_ = -1;
  int frames_ = 0;
  bool outside_ = false;
  std::string conflict_;
};

/// Block until `in` holds a beat or `out` has room (either may be null): a kernel loop that
/// moves beats with non-blocking accesses waits here when it could do neither (in
/// hardware it spins); the watchdog sees it as blocked on both streams.
void wait_either(FifoBase* in, FifoBase* out);

/// A bounded blocking FIFO with the interface of hls::stream (what the kernels use).
template <typename T>
class Fifo : public FifoBase {
 public:
  Fifo() : FifoBase("stream") {}
  explicit Fifo(const char* name) : FifoBase(name) {}

  void write(const T& v) {
    std::unique_lock<std::mutex> lk(m_);
    note_writer();
    ++writes_;
    if (is_full()) wait(lk, true);
    q_.push_back(v);
    pushed();
  }
  T read() {
    std::unique_lock<std::mutex> lk(m_);
    note_reader();
    ++reads_;
    if (n_ == 0) wait(lk, false);
    T v = q_.front();
    q_.pop_front();
    popped();
    return v;
  }
  void read(T& v) { v = read(); }
  bool read_nb(T& v) {
    std::unique_lock<std::mutex> lk(m_);
    note_reader();
    if (n_ == 0) return false;
    ++reads_;
    v = q_.front();
    q_.pop_front();
    popped();
    return true;
  }
  bool write_nb(const T& v) {
    std::unique_lock<std::mutex> lk(m_);
    note_writer();
    if (is_full()) return false;
    ++writes_;
    q_.push_back(v);
    pushed();
    return true;
  }
  bool empty() const {
    std::lock_guard<std::mutex> lk(m_);
    return n_ == 0;
  }
  bool full() const {
    std::lock_guard<std::mutex> lk(m_);
    return is_full();
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lk(m_);
    return n_;
  }
  void operator<<(const T& v) { write(v); }
  void operator>>(T& v) { v = read(); }

 private:
  std::deque<T> q_;
};

/// A DATAFLOW region: its processes as threads; the destructor joins them. Declared after
/// the region's streams (BB_DATAFLOW_REGION), so the threads end before the streams do.
class Region {
 public:
  Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  /// Process `id` starts only after process `dep` of this region returned (a host barrier).
  void after(const char* id, const char* dep) { deps_[id].push_back(dep); }

  /// Start `fn` as the next process; `call` is its source text (the label is the callee).
  void spawn(const char* call, std::function<void()> fn);

  ~Region();

 private:
  std::string scope_;
  std::vector<Process*> procs_;
  std::vector<std::thread> threads_;
  std::map<std::string, std::vector<std::string>> deps_;
};

}  // namespace sim
}  // namespace bb

// The functions of the classes above are compiled once, in the translation unit that defines
// BB_SIM_THREADS_IMPL before its includes (the testbench, tb.cpp): bb_sim_threads_impl.h.
#ifdef BB_SIM_THREADS_IMPL
#include "bb_sim_threads_impl.h"
#endif

#endif  // BBGRAP_BB_SIM_THREADS_H
