// bbgrap-hls: stand-in for XRT's xrt::kernel and xrt::run (see xrt_device.h).
//
// run::start() runs the C-simulated core at once (it must: its streams feed the next
// cores) on a private copy of its buffers' device memory; what it wrote becomes visible
// in device memory only at run::wait(), as on a board where a kernel's writes are only
// guaranteed once it has completed. A consumer started before its producer's wait (a
// missing barrier) therefore reads stale memory and the outputs differ.
#ifndef BBGRAP_XRT_SIM_KERNEL_H
#define BBGRAP_XRT_SIM_KERNEL_H

#include <chrono>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"

/// Provided by the generated out/host/sim_kernels.cpp: runs core `kernel` with the device
/// pointers (nullptr for stream and scalar arguments) and scalars of its `nargs` arguments.
extern "C" int bb_sim_run(const char* kernel, void* const* ptrs, const long long* scalars, int nargs);
/// Provided by sim_kernels.cpp of a design on several cards only: the card of `kernel`.
extern "C" int bb_sim_card(const char* kernel) __attribute__((weak));

enum ert_cmd_state {
  ERT_CMD_STATE_NEW = 1,
  ERT_CMD_STATE_QUEUED = 2,
  ERT_CMD_STATE_RUNNING = 3,
  ERT_CMD_STATE_COMPLETED = 4,
  ERT_CMD_STATE_ERROR = 5,
};

namespace xrt {

class kernel {
 public:
  kernel() = default;
  /// `name` is "core0" or "core0:{core0_1}" (a compute unit), as in XRT. On several cards
  /// the xclbin must be the kernel's card's ("design_card<d>.xclbin").
  kernel(const device& dev, const uuid& xclbin_id, const std::string& name)
      : name_(name.substr(0, name.find(':'))), device_(dev.bb_index()) {
    if (!xclbin_id) throw std::runtime_error("xrt::kernel: no xclbin loaded");
    if (bb_sim_card != nullptr) {
      const std::string x = xclbin_id.to_string();
      const std::string want = "design_card" + std::to_string(bb_sim_card(name_.c_str())) + ".xclbin";
      if (x.size() < want.size() || x.compare(x.size() - want.size(), want.size(), want) != 0)
        throw std::runtime_error("xrt::kernel: " + name_ + " is not in " + x + " (it is in " + want + ")");
    }
  }
  /// Memory group of argument `argno` (the stand-in has one bank per argument index).
  int group_id(int argno) const { return argno; }
  const std::string& bb_name() const { return name_; }
  unsigned int bb_device_index() const { return device_; }

 private:
  std::string name_;
  unsigned int device_ = 0;
};

class run {
 public:
  run() = default;
  explicit run(const kernel& k) : k_(k) {}

  void set_arg(int index, const bo& b) {
    if (b.bb_device_index() != k_.bb_device_index())
      throw std::runtime_error("xrt::run: " + k_.bb_name() + " (device " + std::to_string(k_.bb_device_index()) +
                               ") given a buffer of device " + std::to_string(b.bb_device_index()));
    bos_[index] = b;
  }
  void set_arg(int index, int v) { scalars_[index] = v; }
  void set_arg(int index, unsigned int v) { scalars_[index] = v; }
  void set_arg(int index, long long v) { scalars_[index] = v; }

  void start() {
    if (state_ == ERT_CMD_STATE_RUNNING) throw std::runtime_error("xrt::run: started twice without wait");
    int nargs = 0;
    for (const auto& kv : bos_) nargs = kv.first + 1 > nargs ? kv.first + 1 : nargs;
    for (const auto& kv : scalars_) nargs = kv.first + 1 > nargs ? kv.first + 1 : nargs;
    std::vector<void*> ptrs(nargs, nullptr);
    std::vector<long long> scal(nargs, 0);
    snap_.clear();
    work_.clear();
    // One working copy per buffer, shared by every argument given that buffer: a kernel's
    // arguments alias where the host gave them the same buffer (a DDR frame stage writes
    // its scratch through one argument and reads it back through another).
    for (const auto& kv : bos_) {
      std::vector<char>* dev = &kv.second.bb_device();
      if (work_.count(dev) == 0) {
        snap_[dev] = *dev;
        work_[dev] = *dev;
      }
      ptrs[kv.first] = work_[dev].data();
    }
    for (const auto& kv : scalars_) scal[kv.first] = kv.second;
    const int rc = bb_sim_run(k_.bb_name().c_str(), ptrs.data(), scal.data(), nargs);
    state_ = rc == 0 ? ERT_CMD_STATE_RUNNING : ERT_CMD_STATE_ERROR;
  }

  ert_cmd_state wait(const std::chrono::milliseconds& timeout = std::chrono::milliseconds(0)) {
    (void)timeout;
    if (state_ != ERT_CMD_STATE_RUNNING) return state_;
    for (auto& kv : work_) {  // commit the bytes this run changed
      std::vector<char>& dev = *kv.first;
      const std::vector<char>& before = snap_[kv.first];
      for (std::size_t i = 0; i < dev.size(); ++i) {
        if (kv.second[i] != before[i]) dev[i] = kv.second[i];
      }
    }
    state_ = ERT_CMD_STATE_COMPLETED;
    return state_;
  }
  ert_cmd_state state() const { return state_; }

 private:
  kernel k_;
  std::map<int, bo> bos_;
  std::map<int, long long> scalars_;
  std::map<std::vector<char>*, std::vector<char>> snap_, work_;  // by the buffer's device bytes
  ert_cmd_state state_ = ERT_CMD_STATE_NEW;
};

}  // namespace xrt

#endif  // BBGRAP_XRT_SIM_KERNEL_H
