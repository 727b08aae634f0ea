// bbgrap-hls: stand-in for XRT's xrt::bo (see xrt_device.h). A buffer object has a host
// side and a device side; write/read/map touch the host side, kernels the device side,
// and only sync() moves data between them, as on a board: a missing sync shows in tests.
#ifndef BBGRAP_XRT_SIM_BO_H
#define BBGRAP_XRT_SIM_BO_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "xrt/xrt_device.h"

enum xclBOSyncDirection { XCL_BO_SYNC_BO_TO_DEVICE = 0, XCL_BO_SYNC_BO_FROM_DEVICE = 1 };

namespace xrt {

using memory_group = uint32_t;

class bo {
 public:
  enum class flags : uint32_t { normal = 0, cacheable = 1, device_only = 2, host_only = 3, p2p = 4, svm = 5 };

  bo() = default;
  bo(const device& dev, size_t size, flags f, memory_group grp) : p_(std::make_shared<Impl>()) {
    (void)f;
    p_->device = dev.bb_index();
    p_->host.assign(size, 0);
    p_->dev.assign(size, static_cast<char>(0x5a));  // device memory starts as garbage
    p_->grp = grp;
  }
  bo(const device& dev, size_t size, memory_group grp) : bo(dev, size, flags::normal, grp) {}

  size_t size() const { return p_ ? p_->host.size() : 0; }
  memory_group get_memory_group() const { return p_->grp; }
  explicit operator bool() const { return static_cast<bool>(p_); }

  void write(const void* src, size_t size, size_t seek) {
    check(size, seek);
    std::memcpy(p_->host.data() + seek, src, size);
  }
  void write(const void* src) { write(src, size(), 0); }
  void read(void* dst, size_t size, size_t skip) {
    check(size, skip);
    std::memcpy(dst, p_->host.data() + skip, size);
  }
  void read(void* dst) { read(dst, size(), 0); }

  void sync(xclBOSyncDirection dir, size_t size, size_t offset) {
    check(size, offset);
    if (dir == XCL_BO_SYNC_BO_TO_DEVICE) {
      std::memcpy(p_->dev.data() + offset, p_->host.data() + offset, size);
    } else {
      std::memcpy(p_->host.data() + offset, p_->dev.data() + offset, size);
    }
  }
  void sync(xclBOSyncDirection dir) { sync(dir, size(), 0); }

  template <typename T>
  T map() {
    return reinterpret_cast<T>(p_->host.data());
  }

  // Stand-in only: the device side that simulated kernels read and write.
  std::vector<char>& bb_device() const { return p_->dev; }
  // Stand-in only: index of the device the buffer was allocated on.
  unsigned int bb_device_index() const { return p_ ? p_->device : 0; }

 private:
  struct Impl {
    std::vector<char> host, dev;
    memory_group grp = 0;
    unsigned int device = 0;
  };
  void check(size_t size, size_t off) const {
    if (!p_ || off + size > p_->host.size()) throw std::out_of_range("xrt::bo: access outside the buffer");
  }
  std::shared_ptr<Impl> p_;
};

}  // namespace xrt

#endif  // BBGRAP_XRT_SIM_BO_H
