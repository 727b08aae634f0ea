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
// barrier do not count). It checks each blocked thread's stream under that stream's lock
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
  bool done = false;
  std::string text() const { return label.empty() || label == id ? id : id + " " + label; }
};

/// Highest fill of a stream against its depth (0: unbounded), for `csim --json`.
struct FifoStat {
  std::string name, producer, consumer;
  std::size_t max_fill, depth;
  bool several_producers, several_consumers;
};

inline thread_local Process* self = nullptr;

/// Process-wide state: live/blocked process counts, every stream, the watchdog.
class Runtime {
 public:
  static Runtime& get();

  std::mutex mu;
  std::condition_variable cv;  // a process finished (joins and barriers wait on it)
  int live = 0;                // process threads not waiting for a join or a barrier
  int blocked = 0;             // of those, blocked on a stream
  std::vector<Process*> running;
  std::vector<FifoBase*> fifos;
  std::vector<FifoStat> stats;  // of streams already destroyed

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
  }
  void note_reader() {
    if (consumer_ == nullptr) consumer_ = self;
    else if (consumer_ != self) several_consumers_ = true;
  }

  /// Wait (lock `lk` held) until the stream has room (`writing`) or a beat.
  void wait(std::unique_lock<std::mutex>& lk, bool writing);

  void pushed() {
    ++n_;
    if (n_ > max_) max_ = n_;
    if (readers_waiting_) not_empty_.notify_all();
  }
  void popped() {
    --n_;
    if (writers_waiting_) not_full_.notify_all();
  }

  mutable std::mutex m_;
  std::condition_variable not_empty_, not_full_;
  int readers_waiting_ = 0, writers_waiting_ = 0;
  std::string name_;
  std::size_t depth_ = 0, n_ = 0, max_ = 0;
  const Process* producer_ = nullptr;
  const Process* consumer_ = nullptr;
  bool several_producers_ = false, several_consumers_ = false;
  std::vector<const Process*> attached_;  // under the runtime lock
};

/// A bounded blocking FIFO with the interface of hls::stream (what the kernels use).
template <typename T>
class Fifo : public FifoBase {
 public:
  Fifo() : FifoBase("stream") {}
  explicit Fifo(const char* name) : FifoBase(name) {}

  void write(const T& v) {
    std::unique_lock<std::mutex> lk(m_);
    note_writer();
    if (is_full()) wait(lk, true);
    q_.push_back(v);
    pushed();
  }
  T read() {
    std::unique_lock<std::mutex> lk(m_);
    note_reader();
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
    v = q_.front();
    q_.pop_front();
    popped();
    return true;
  }
  bool write_nb(const T& v) {
    std::unique_lock<std::mutex> lk(m_);
    note_writer();
    if (is_full()) return false;
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

// The functions below are compiled once, in the translation unit that defines
// BB_SIM_THREADS_IMPL before its includes (the testbench, tb.cpp).
#ifdef BB_SIM_THREADS_IMPL

Runtime& Runtime::get() {
  static Runtime* r = new Runtime();  // never destroyed: the detached watchdog may still look
  return *r;
}

void Runtime::start_watchdog() {
  std::lock_guard<std::mutex> lk(mu);
  if (watchdog_) return;
  watchdog_ = true;
  std::thread([this] { watch(); }).detach();
}

FifoBase::FifoBase(const char* name) : name_(self ? self->id + "." + name : std::string(name)) {
  Runtime& rt = Runtime::get();
  std::lock_guard<std::mutex> lk(rt.mu);
  rt.fifos.push_back(this);
}

FifoBase::~FifoBase() {
  Runtime& rt = Runtime::get();
  std::lock_guard<std::mutex> lk(rt.mu);
  rt.fifos.erase(std::find(rt.fifos.begin(), rt.fifos.end(), this));
  rt.stats.push_back(stat());
}

void FifoBase::wait(std::unique_lock<std::mutex>& lk, bool writing) {
  Runtime& rt = Runtime::get();
  {
    std::lock_guard<std::mutex> g(rt.mu);
    ++rt.blocked;
    if (self) {
      self->waiting_on = this;
      self->writing = writing;
    }
  }
  (writing ? ++writers_waiting_ : ++readers_waiting_);
  (writing ? not_full_ : not_empty_).wait(lk, [&] { return writing ? !is_full() : n_ > 0; });
  (writing ? --writers_waiting_ : --readers_waiting_);
  std::lock_guard<std::mutex> g(rt.mu);
  --rt.blocked;
  if (self) self->waiting_on = nullptr;
}

Region::Region() : scope_(self ? self->id : std::string()) { Runtime::get().start_watchdog(); }

void Region::spawn(const char* call, std::function<void()> fn) {
  std::string label(call);
  label = label.substr(0, label.find('('));
  if (label.compare(0, 4, "bb::") == 0) label = label.substr(4);
  auto* p = new Process();  // kept for the run: streams name their producer/consumer by it
  p->id = scope_.empty() ? label : scope_ + ".p" + std::to_string(procs_.size());
  p->label = label;
  std::vector<Process*> wait_for;
  for (const std::string& d : deps_[p->id])
    for (Process* q : procs_)
      if (q->id == d) wait_for.push_back(q);
  Runtime& rt = Runtime::get();
  {
    std::lock_guard<std::mutex> lk(rt.mu);
    ++rt.live;
    rt.running.push_back(p);
    // the streams among the call's arguments: the process is one of their two ends
    std::string word;
    const std::string prefix = scope_.empty() ? std::string() : scope_ + ".";
    const char* args = std::strchr(call, '(');
    for (const char* c = args ? args : call; *c; ++c) {
      if (std::isalnum(static_cast<unsigned char>(*c)) || *c == '_') {
        word += *c;
        continue;
      }
      if (!word.empty())
        for (FifoBase* f : rt.fifos)
          if (f->name() == prefix + word) f->attach(p);
      word.clear();
    }
  }
  procs_.push_back(p);
  threads_.emplace_back([p, wait_for, fn = std::move(fn)] {
    self = p;
    Runtime& r = Runtime::get();
    if (!wait_for.empty()) {
      std::unique_lock<std::mutex> lk(r.mu);
      r.suspend();
      r.cv.wait(lk, [&] { return std::all_of(wait_for.begin(), wait_for.end(), [](Process* q) { return q->done; }); });
      r.resume();
    }
    fn();
    std::lock_guard<std::mutex> lk(r.mu);
    --r.live;
    p->done = true;
    r.running.erase(std::find(r.running.begin(), r.running.end(), p));
    r.cv.notify_all();
  });
}

Region::~Region() {
  Runtime& rt = Runtime::get();
  {
    std::lock_guard<std::mutex> lk(rt.mu);
    rt.suspend();
  }
  for (std::thread& t : threads_) t.join();
  std::lock_guard<std::mutex> lk(rt.mu);
  rt.resume();
}

void Runtime::watch() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lk(mu);
    if (live == 0 || blocked < live) continue;
    // Every live process waits on a stream. A lock we cannot take belongs to a running
    // thread (or one about to block or to wake): look again later.
    std::vector<FifoStat> lines;
    std::vector<bool> full;
    bool sure = true;
    for (Process* p : running) {
      FifoBase* f = p->waiting_on;
      if (f == nullptr) continue;  // joining or at a barrier
      if (!f->m_.try_lock()) {
        sure = false;
        break;
      }
      const bool still = p->writing ? f->is_full() : f->n_ == 0;
      FifoStat s = f->stat();
      s.max_fill = f->n_;  // the fill now
      f->m_.unlock();
      if (!still) {
        sure = false;
        break;
      }
      if (std::none_of(lines.begin(), lines.end(), [&](const FifoStat& o) { return o.name == s.name; })) {
        lines.push_back(s);
        full.push_back(p->writing);
      }
    }
    if (!sure) continue;
    std::fprintf(stderr, "deadlock: all %d running processes are blocked on streams (%zu full, %zu empty):\n", live,
                 static_cast<std::size_t>(std::count(full.begin(), full.end(), true)),
                 static_cast<std::size_t>(std::count(full.begin(), full.end(), false)));
    for (const bool want_full : {true, false}) {  // the full streams first: a too shallow FIFO is one
      for (std::size_t i = 0; i < lines.size(); ++i) {
        const FifoStat& s = lines[i];
        if (full[i] != want_full) continue;
        std::fprintf(stderr, "deadlock: stream %s: producer %s, consumer %s, fill %zu of depth %zu (%s)\n",
                     s.name.c_str(), s.producer.c_str(), s.consumer.c_str(), s.max_fill, s.depth,
                     full[i] ? "full: the producer waits" : "empty: the consumer waits");
      }
    }
    std::fflush(stderr);
    std::_Exit(1);
  }
}

/// One line per stream of the run: `fifo <TAB> name <TAB> highest fill <TAB> depth (0:
/// unbounded) <TAB> producer <TAB> consumer <TAB> writers <TAB> readers` (1, or 2 for several).
void Runtime::report(std::FILE* f) {
  std::lock_guard<std::mutex> lk(mu);
  std::vector<FifoStat> all = stats;
  for (FifoBase* x : fifos) {
    std::lock_guard<std::mutex> g(x->m_);
    all.push_back(x->stat());
  }
  std::sort(all.begin(), all.end(), [](const FifoStat& a, const FifoStat& b) { return a.name < b.name; });
  for (const FifoStat& s : all)
    std::fprintf(f, "fifo\t%s\t%zu\t%zu\t%s\t%s\t%d\t%d\n", s.name.c_str(), s.max_fill, s.depth, s.producer.c_str(),
                 s.consumer.c_str(), s.several_producers ? 2 : 1, s.several_consumers ? 2 : 1);
}

#endif  // BB_SIM_THREADS_IMPL

}  // namespace sim
}  // namespace bb

#endif  // BBGRAP_BB_SIM_THREADS_H
