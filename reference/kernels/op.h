// An operation declared once, as an object: its signature, and one
// implementation per backend that the backend registers from its own file
// (cpu/, cuda/), the way PyTorch's DispatchStub works. A call goes to the
// backend of the device its tensors are on (every non-empty tensor argument
// must share it) or, for ops over raw pointers, of its core::Device argument.
//
//   // kernels/<family>.h, the declaration:
//   inline Op<void(const core::Tensor& x, const core::Tensor& y)> ReluForward{"ReluForward"};
//   // cpu/elementwise.cc and cuda/elementwise.cu, the implementations:
//   MLPERF_REGISTER_KERNEL(ReluForward, Cpu, ReluForward);   // cpu::ReluForward
//   MLPERF_REGISTER_KERNEL(ReluForward, Cuda, ReluForward);  // cuda::ReluForward
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "reference/core/tensor.h"

namespace mlperf::ops {

namespace detail {

[[noreturn]] void NoBackend(const char* op, core::Device device);
[[noreturn]] void MixedDevices(const char* op);
void Record(const char* op, core::Device device);

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

  // A full call: not a template, so braced arguments ({.lr = ...}) and
  // conversions (a vector to a span) work as for a plain function.
  void operator()(Args... args) const { Invoke(std::forward<Args>(args)...); }

  // Trailing arguments left out are value-initialised: a null pointer, false,
  // an empty tensor.
  template <typename... Given>
  requires(sizeof...(Given) < sizeof...(Args)) void operator()(Given&&... given) const {
    auto values = std::forward_as_tuple(std::forward<Given>(given)...);
    Expand(values, std::index_sequence_for<Args...>{});
  }

  // A backend's implementation (null when it has none; a build without CUDA
  // has no CUDA ones).
  Kernel backend(core::Device device) const { return kernels_[Index(device)]; }
  const char* name() const { return name_; }

  // At static initialisation, from the backend's file.
  bool Register(core::Device device, Kernel kernel) {
    kernels_[Index(device)] = kernel;
    detail::Record(name_, device);
    return true;
  }

 private:
  static constexpr int Index(core::Device device) { return device == core::Device::kCpu ? 0 : 1; }

  template <typename Tuple, size_t... I>
  void Expand(Tuple& values, std::index_sequence<I...>) const {
    Invoke(Pick<I>(values)...);
  }
  template <size_t I, typename Tuple>
  static decltype(auto) Pick(Tuple& values) {
    if constexpr (I < std::tuple_size_v<Tuple>) {
      return std::get<I>(values);
    } else {
      return std::remove_cvref_t<std::tuple_element_t<I, std::tuple<Args...>>>{};
    }
  }
  void Invoke(Args... args) const {
    detail::CallDevice device{name_};
    (device(args), ...);
    Kernel kernel = backend(device.device);
    if (kernel == nullptr) detail::NoBackend(name_, device.device);
    kernel(std::forward<Args>(args)...);
  }

  const char* name_;
  Kernel kernels_[2] = {nullptr, nullptr};
};

// Registers `kernel` as ops::`op`'s implementation on core::Device::k`device`
// (Cpu or Cuda), in that backend's file at namespace scope. The kernel
// libraries are linked whole (reference/CMakeLists.txt), so every
// registration runs.
#define MLPERF_REGISTER_KERNEL(op, device, kernel)            \
  [[maybe_unused]] static const bool mlperf_registered_##op = \
      ::mlperf::ops::op.Register(::mlperf::core::Device::k##device, kernel)

// What registered, by op name: its kernel's devices (for the test that every
// declared op has its CPU kernel and, in a CUDA build, its CUDA one).
std::map<std::string, std::set<core::Device>> RegisteredKernels();

}  // namespace mlperf::ops
