// An operation declared once, as an object: its signature, and one
// implementation per backend that the backend registers from its own file
// (cpu/, cuda/), the way PyTorch's DispatchStub works. A call goes to the
// backend of the device its tensors are on (every non-empty tensor argument
// must share it) or, for ops over raw pointers, of its core::Device argument.
//
//   // kernels/<family>.h, the declaration:
//   inline Op<void(const core::Tensor& x, const core::Tensor& y)> ReluForward{"ReluForward"};
//   // cpu/elementwise.cc and cuda/elementwise.cu, the implementations:
//   MLPERF_REGISTER_KERNEL(ReluForward, core::Device::kCpu, ReluForwardImpl);
#pragma once

#include <type_traits>
#include <utility>

#include "reference/core/tensor.h"

namespace mlperf::ops {

namespace detail {

[[noreturn]] void NoBackend(const char* op, core::Device device);
[[noreturn]] void MixedDevices(const char* op);

// The device of a call: of its tensors, or its core::Device argument.
struct CallDevice {
  const char* op;
  bool found = false;
  core::Device device = core::Device::kCpu;
  void See(core::Device d) {
    if (found && d != device) MixedDevices(op);
    found = true;
    device = d;
  }
  void operator()(const core::Tensor& t) {
    if (!t.empty()) See(t.device());
  }
  void operator()(core::Device d) { See(d); }
  template <typename T>
  void operator()(const T&) {}
};

}  // namespace detail

template <typename Signature>
class Op;

template <typename... Args>
class Op<void(Args...)> {
 public:
  using Kernel = void (*)(Args...);
  constexpr explicit Op(const char* name) : name_(name) {}
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  void operator()(Args... args) const {
    detail::CallDevice device{name_};
    (device(args), ...);
    Kernel kernel = backend(device.device);
    if (kernel == nullptr) detail::NoBackend(name_, device.device);
    kernel(std::forward<Args>(args)...);
  }

  // A backend's implementation (null when it has none; a build without CUDA
  // has no CUDA ones).
  Kernel backend(core::Device device) const { return kernels_[Index(device)]; }
  const char* name() const { return name_; }

  // At static initialisation, from the backend's file.
  bool Register(core::Device device, Kernel kernel) {
    kernels_[Index(device)] = kernel;
    return true;
  }

 private:
  static constexpr int Index(core::Device device) { return device == core::Device::kCpu ? 0 : 1; }

  const char* name_;
  Kernel kernels_[2] = {nullptr, nullptr};
};

// Registers `kernel` as `op`'s implementation on `device` (in a backend's
// file, at namespace scope).
#define MLPERF_REGISTER_KERNEL(op, device, kernel)                                      \
  [[maybe_unused]] static const bool mlperf_registered_##op##_##kernel =               \
      ::mlperf::ops::op.Register(device, kernel)

}  // namespace mlperf::ops
