// bbgrap-hls C simulation runtime: the out-of-line functions of bb_sim_threads.h (the
// runtime's watchdog and report, the FIFOs' blocking and accounting, the DATAFLOW regions'
// threads), compiled once, where the testbench (tb.cpp) defines BB_SIM_THREADS_IMPL before
// including the kernel library. See bb_sim_threads.h for what they do.
#ifndef BBGRAP_BB_SIM_THREADS_IMPL_H
#define BBGRAP_BB_SIM_THREADS_IMPL_H

#include "bb_sim_threads.h"

namespace bb {
namespace sim {

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
  Runtime& rt = Runtime::get();
  rt.start_watchdog();
  // A top-level region's opener (the testbench's thread, not a process) counts as live while
  // it spawns the processes: else a first process blocked on a stream whose other end is not
  // spawned yet would look like a deadlock to the watchdog. (A process opening a region is
  // live already.)
  if (!self) {
    std::lock_guard<std::mutex> lk(rt.mu);
    ++rt.live;
  }
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
    if (!self) --rt.live;  // (every process spawned: the opener only joins them now)
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

}  // namespace sim
}  // namespace bb

#endif  // BBGRAP_BB_SIM_THREADS_IMPL_H
