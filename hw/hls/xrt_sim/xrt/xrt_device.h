// bbgrap-hls: a small stand-in for the XRT native API (xrt::device, xrt::uuid), written
// for this project so that the generated host driver (out/host/host.cpp) compiles and runs
// without XRT: kernel runs dispatch to the C-simulated cores (out/host/sim_kernels.cpp).
// Only the calls host.cpp makes exist, with the signatures of XRT's <xrt/xrt_device.h>.
// The real XRT is used when building for a board (see out/vitis/README.md).
#ifndef BBGRAP_XRT_SIM_DEVICE_H
#define BBGRAP_XRT_SIM_DEVICE_H

#include <string>
#include <utility>

namespace xrt {

/// Identifier of a loaded xclbin (the stand-in keeps the file name).
class uuid {
 public:
  uuid() = default;
  explicit uuid(std::string s) : s_(std::move(s)) {}
  std::string to_string() const { return s_; }
  explicit operator bool() const { return !s_.empty(); }

 private:
  std::string s_;
};

/// A device by index; load_xclbin records the file (nothing is programmed). Buffers and
/// kernels remember the index of their device: a run refuses a buffer of another device.
class device {
 public:
  device() = default;
  explicit device(unsigned int index) : index_(index) {}
  uuid load_xclbin(const std::string& path) { return uuid("sim:" + path); }
  unsigned int bb_index() const { return index_; }

 private:
  unsigned int index_ = 0;
};

}  // namespace xrt

#endif  // BBGRAP_XRT_SIM_DEVICE_H
