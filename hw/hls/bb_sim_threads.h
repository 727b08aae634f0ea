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
  for (std::string& l : rule_lines(true)) rt.rules.push_back(std::move(l));
}

namespace {
std::string names(const std::vector<const Process*>& ps) {
  std::string out;
  for (const Process* p : ps) out += (out.empty() ? "" : "; ") + (p ? p->text() : std::string("(testbench)"));
  return out;
}
/// The process of `owner`'s region that runs `p` (p itself or an ancestor); none: outside it.
const Process* top_of(const Process* p, const Process* owner) {
  for (; p != nullptr; p = p->parent)
    if (p->parent == owner) return p;
  return nullptr;
}
bool under(const Process* p, const Process* q) {
  for (; p != nullptr; p = p->parent)
    if (p == q) return true;
  return false;
}
bool all_done(const std::vector<const Process*>& ps) {
  return !ps.empty() && std::all_of(ps.begin(), ps.end(), [](const Process* p) { return p && p->done; });
}
}  // namespace

bool FifoBase::others_done(const std::vector<const Process*>& ends) const {
  // no access from the other side yet: every process whose call names the stream, other
  // than those running `ends`, has returned (none left that could); unknown without any
  if (attached_.empty()) return false;
  for (const Process* q : attached_)
    if (!q->done && std::none_of(ends.begin(), ends.end(), [&](const Process* p) { return under(p, q); })) return false;
  return true;
}

std::vector<std::string> FifoBase::rule_lines(bool final) const {
  std::vector<std::string> out;
  const std::string head = "dataflow rule: stream " + name_ + " (producer " +
                           (writers_.empty() ? std::string("none") : names(writers_)) + ", consumer " +
                           (readers_.empty() ? std::string("none") : names(readers_)) + "): ";
  if (writers_.size() > 1)
    out.push_back(head + "written by " + std::to_string(writers_.size()) + " processes, Vitis allows one producer");
  if (readers_.size() > 1)
    out.push_back(head + "read by " + std::to_string(readers_.size()) + " processes, Vitis allows one consumer");
  // a stream of a body that runs sequentially here (no BB_PROCESS: conv2d_offchip's frame
  // loop) has no process structure to check; its counts are still checked
  const bool threaded = owner_ == nullptr || owner_->has_region;
  if (threaded && outside_) out.push_back(head + "accessed by its region's own code outside a process call");
  if (threaded && writers_.size() == 1 && readers_.size() == 1 && !outside_) {
    const Process* w = top_of(writers_[0], owner_);
    const Process* r = top_of(readers_[0], owner_);
    if (w == nullptr || r == nullptr)
      out.push_back(head + "an end outside the processes of the region that declares it");
    else if (w == r)
      out.push_back(head + "written and read inside one process of its region (" + w->text() + "), not a channel");
    else if (w->index > r->index)
      out.push_back(head + "its consumer comes before its producer in the region's process order (feedback)");
  }
  for (const Process* q : attached_) {
    const bool used = std::any_of(writers_.begin(), writers_.end(), [&](const Process* p) { return under(p, q); }) ||
                      std::any_of(readers_.begin(), readers_.end(), [&](const Process* p) { return under(p, q); });
    if (!used && (final || q->done))
      out.push_back(head + "process " + q->text() + " names it in its call but never accessed it " +
                    "(a conditionally executed process)");
  }
  if (!conflict_.empty()) out.push_back(head + "beats per frame " + conflict_);
  const std::string counts = "written " + std::to_string(writes_) + ", read " + std::to_string(reads_) + " times";
  const std::string want = expect_ < 0 ? std::string()
                                       : ", expected " + std::to_string(expect_) + " per frame x " +
                                             std::to_string(frames_) + " frame(s) = " +
                                             std::to_string(expect_ * frames_);
  const bool ends_done = all_done(writers_) && all_done(readers_);
  if (final || ends_done) {
    if (writes_ > 0 && readers_.empty()) out.push_back(head + "no consumer: " + counts + want);
    else if (reads_ > 0 && writers_.empty()) out.push_back(head + "no producer: " + counts + want);
    else if (final && writes_ == 0 && reads_ == 0 && expect_ != 0)
      out.push_back(head + "neither written nor read" + want);
    else if (expect_ >= 0 ? (writes_ != static_cast<std::size_t>(expect_ * frames_) ||
                             reads_ != static_cast<std::size_t>(expect_ * frames_))
                          : writes_ != reads_)
      out.push_back(head + counts + want);
  } else {  // at a deadlock: what can no longer change
    const long e = expect_ * frames_;
    if (expect_ >= 0 && (writes_ > static_cast<std::size_t>(e) || reads_ > static_cast<std::size_t>(e)))
      out.push_back(head + counts + " so far" + want);
    else if (readers_waiting_ > 0 && n_ == 0 && (writers_.empty() ? others_done(readers_) : all_done(writers_)))
      out.push_back(head + counts + want + ": the consumer waits for a beat no producer will write");
    else if (writers_waiting_ > 0 && is_full() && (readers_.empty() ? others_done(writers_) : all_done(readers_)))
      out.push_back(head + counts + want + ": the producer waits for room no consumer will make");
  }
  return out;
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

void wait_either(FifoBase* in, FifoBase* out) {
  auto ready = [&] {
    bool ok = false;
    if (in != nullptr) {
      std::lock_guard<std::mutex> g(in->m_);
      ok = ok || in->n_ > 0;
    }
    if (out != nullptr) {
      std::lock_guard<std::mutex> g(out->m_);
      ok = ok || !out->is_full();
    }
    return ok;
  };
  if (ready()) return;
  Watch w;
  for (FifoBase* f : {in, out}) {
    if (f == nullptr) continue;
    std::lock_guard<std::mutex> g(f->m_);
    f->watch_ = &w;
    (f == in ? f->readers_waiting_ : f->writers_waiting_)++;  // the deadlock rules see a waiting end
  }
  Runtime& rt = Runtime::get();
  {
    std::lock_guard<std::mutex> g(rt.mu);
    ++rt.blocked;
    if (self) {
      self->waiting_on = in != nullptr ? in : out;
      self->writing = in == nullptr;
      self->waiting_out = in != nullptr ? out : nullptr;
    }
  }
  for (;;) {
    unsigned long g0;
    {
      std::lock_guard<std::mutex> g(w.m);
      g0 = w.gen;
    }
    if (ready()) break;
    std::unique_lock<std::mutex> lk(w.m);
    w.cv.wait(lk, [&] { return w.gen != g0; });
  }
  {
    std::lock_guard<std::mutex> g(rt.mu);
    --rt.blocked;
    if (self) {
      self->waiting_on = nullptr;
      self->waiting_out = nullptr;
    }
  }
  for (FifoBase* f : {in, out}) {
    if (f == nullptr) continue;
    std::lock_guard<std::mutex> g(f->m_);
    f->watch_ = nullptr;
    (f == in ? f->readers_waiting_ : f->writers_waiting_)--;
  }
}

Region::Region() : scope_(self ? self->id : std::string()) {
  if (self) self->has_region = true;
  Runtime::get().start_watchdog();
}

void Region::spawn(const char* call, std::function<void()> fn) {
  std::string label(call);
  label = label.substr(0, label.find('('));
  if (label.compare(0, 4, "bb::") == 0) label = label.substr(4);
  auto* p = new Process();  // kept for the run: streams name their producer/consumer by it
  p->id = scope_.empty() ? label : scope_ + ".p" + std::to_string(procs_.size());
  p->label = label;
  p->parent = self;
  p->index = static_cast<int>(procs_.size());
  std::vector<Process*> wait_for;
  for (const std::string& d : deps_[p->id])
    for (Process* q : procs_)
      if (q->id == d) wait_for.push_back(q);
  Runtime& rt = Runtime::get();
  {
    std::lock_guard<std::mutex> lk(rt.mu);
    ++rt.live;
    rt.running.push_back(p);
    rt.procs.push_back(p);
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
    cycles = &p->cycles;
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
      if (p->waiting_on == nullptr) continue;  // joining or at a barrier
      // (wait_either: blocked on an empty input and a full output at once)
      for (int side = 0; side < 2 && sure; ++side) {
        FifoBase* f = side == 0 ? p->waiting_on : p->waiting_out;
        const bool writing = side == 0 ? p->writing : true;
        if (f == nullptr) continue;
        if (!f->m_.try_lock()) {
          sure = false;
          break;
        }
        const bool still = writing ? f->is_full() : f->n_ == 0;
        FifoStat s = f->stat();
        s.max_fill = f->n_;  // the fill now
        f->m_.unlock();
        if (!still) {
          sure = false;
          break;
        }
        if (std::none_of(lines.begin(), lines.end(), [&](const FifoStat& o) { return o.name == s.name; })) {
          lines.push_back(s);
          full.push_back(writing);
        }
      }
      if (!sure) break;
    }
    if (!sure) continue;
    std::vector<std::string> rule = rules;
    for (FifoBase* f : fifos) {
      if (!f->m_.try_lock()) continue;  // nobody runs: free unless a thread is between steps
      for (std::string& l : f->rule_lines(false)) rule.push_back(std::move(l));
      f->m_.unlock();
    }
    for (const std::string& l : rule) std::fprintf(stderr, "%s\n", l.c_str());
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
/// unbounded) <TAB> producer <TAB> consumer <TAB> writers <TAB> readers` (1, or 2 for several);
/// then one per finished process: `proc <TAB> id <TAB> label <TAB> cycles` (BB_PIPELINE).
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
  // the dataflow rules: the streams already destroyed and those still alive (the links)
  std::vector<std::string> rule = rules;
  for (FifoBase* x : fifos) {
    std::lock_guard<std::mutex> g(x->m_);
    for (std::string& l : x->rule_lines(true)) rule.push_back(std::move(l));
  }
  std::sort(rule.begin(), rule.end());
  for (const std::string& l : rule) std::fprintf(stderr, "%s\n", l.c_str());
  // the kernel schedules: every process's counted cycles (BB_PIPELINE), all frames of the run
  for (const Process* p : procs)
    if (p->done) std::fprintf(f, "proc\t%s\t%s\t%ld\n", p->id.c_str(), p->label.c_str(), p->cycles);
}

#endif  // BB_SIM_THREADS_IMPL

}  // namespace sim
}  // namespace bb

#endif  // BBGRAP_BB_SIM_THREADS_H
