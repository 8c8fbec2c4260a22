// The engine's side of devices (include/dynet/devices.h is the public face): which kernels run on a
// device, the per-op device kernel table, and the hook through which the CUDA backend (src/kernels/cuda)
// makes GPU devices without the core depending on it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/op.h"
#include "dynet/devices.h"

namespace dynet {

// Which kernels run on a device. The CPU runs OpDef::forward/backward. The other backends run the
// device-neutral kernels an op's file defines (src/kernels/device/prims.h): compiled by nvcc for CUDA, and
// by the host compiler for the emulated device, a GPU stand-in in host memory that runs the same kernel
// code on the CPU so that the device path is tested on machines without a GPU.
enum Backend : uint8_t { kCpuBackend = 0, kCudaBackend = 1, kEmulatedBackend = 2, kNumBackends = 3 };

struct DeviceKernels {
  void (*forward)(const ForwardArgs&) = nullptr;
  void (*backward)(const BackwardArgs&) = nullptr;  // null: the op has no gradient
};
// Called from static initialisers (the op's files, both passes), before or after the op registers: the
// kernels reach the op of that name whenever both are known.
void register_device_kernels(const char* op, Backend backend, DeviceKernels k);
// For a registered op (leaves and to_device, whose host functions serve every backend).
void register_device_kernels(OpId op, Backend backend, DeviceKernels k);
// Null when the op has no kernels for the backend.
const DeviceKernels* device_kernels(OpId op, Backend backend);
// Whether nodes of `op` can run on device d (DyNet's supports_multidevice, per device).
bool op_supports(OpId op, const Device& d);

// The kernels node n runs with: the op's own on the CPU, its device kernels elsewhere (add_node made sure
// they exist).
using ForwardFn = void (*)(const ForwardArgs&);
using BackwardFn = void (*)(const BackwardArgs&);
inline Backend backend_of(uint8_t device);
inline ForwardFn forward_kernel(const NodeRec& n, const OpDef& def) {
  return n.device == 0 ? def.forward : device_kernels(n.op, backend_of(n.device))->forward;
}
inline BackwardFn backward_kernel(const NodeRec& n, const OpDef& def) {
  return n.device == 0 ? def.backward : device_kernels(n.op, backend_of(n.device))->backward;
}

namespace detail {
// register_op hands its new op the device kernels registered before it.
void claim_device_kernels(OpId op);
// Names of device kernels whose op never registered (a misspelt name): empty once every op file is loaded.
std::vector<std::string> unclaimed_device_kernels();
// Devices by index (Device::index), for the executors: no bounds check, no lock.
extern Device* g_devices[256];
inline Device* device_at(unsigned index) { return g_devices[index]; }
// Whether host code may read and write the memory of tensors on this device directly.
inline bool host_addressable(const Device* d) { return d == nullptr || d->backend == kCpuBackend; }
// The Device calls' pointer lists of at most this many bytes reach a GPU's kernel in its parameters (well
// under CUDA's 4 KB); longer ones are staged (Device::stage).
constexpr size_t kListBytesByValue = 2048;
// Whether devices stage host data for kernels to read in place (Device::stage): unless the environment says
// DYNET_GPU_STAGING=copy, which the emulated device follows as GPUs do, so that their counts still agree.
bool stage_in_place();
// Whether a device other than the CPU stages `bytes` of host data rather than copying them.
inline bool stages(size_t bytes) { return bytes <= Device::kStageBytes && stage_in_place(); }
// A Device::SegmentLists as a kernel reads it: the pointers, then per list its block, n, first pointer and
// first float (where it starts among all the floats), then the total; and that total.
inline size_t segment_list_words(const Device::SegmentLists& l) {
  size_t pointers = 0;
  for (size_t q = 0; q < l.nlists; ++q) pointers += l.counts[q];
  return pointers + 4 * l.nlists + 1;
}
inline size_t segment_list_floats(const Device::SegmentLists& l) {
  size_t floats = 0;
  for (size_t q = 0; q < l.nlists; ++q) floats += l.counts[q] * l.ns[q];
  return floats;
}
// Set once a device other than the CPU exists: until then every node is on the CPU and graph
// construction skips the device bookkeeping.
extern bool g_multi_device;
}  // namespace detail

inline Backend backend_of(uint8_t device) { return Backend(detail::device_at(device)->backend); }

// At least n ones in dev's memory, kept for the process's life: a sum over columns as a product with them (a
// bias's gradient deferred with the weights', LowRankSink).
const float* device_ones(Device* dev, size_t n);

// The values of t in host memory: t.v itself when the host can read it, else a copy in *buf.
const float* host_values(const Tensor& t, std::vector<float>* buf);

// The GPU runtime, registered by the CUDA backend when the library is built with it.
struct GpuRuntime {
  // Usable CUDA devices; 0 with the reason (no driver, no device, ...) in *why.
  int (*count)(std::string* why);
  // GPU:ordinal (throws std::runtime_error when it cannot be set up).
  std::unique_ptr<Device> (*create)(int ordinal);
};
void set_gpu_runtime(const GpuRuntime* rt);
const GpuRuntime* gpu_runtime();  // null: built without CUDA
// Usable GPUs (0 without CUDA, with the reason in *why when given).
int gpu_count(std::string* why = nullptr);
// The device GPU:ordinal, set up on first use (throws std::runtime_error naming the reason when this
// build or machine has no such GPU).
Device* gpu_device(int ordinal);

}  // namespace dynet
