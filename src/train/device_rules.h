// Trainer update rules as device kernels (device_rules.cc, compiled for the emulated device and, in CUDA
// builds, again by nvcc): parameters on a device other than the CPU are updated there.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/thread_scope.h"

namespace dynet {

enum class UpdateRule : uint8_t { SGD, Momentum, Adagrad, Adadelta, RMSProp, Adam, Amsgrad };

// One step of a rule: the learning rate (Adam: the bias-corrected step size), the gradient scale
// (clipping), the lazy weight-decay scale, and the rule's settings (a: momentum, rho or beta_1; b: beta_2).
struct RuleArgs {
  UpdateRule rule;
  float lr, gscale, weight_decay, a = 0.f, b = 0.f, eps = 0.f;
  bool clear_gradient = false;  // the kernel zeroes each gradient value once it has used it
  // Set by DeviceUpdateBatch::check_norm: the kernel takes gscale from the squared norm there (device memory).
  const double* norm_sq = nullptr;
  bool clipping = false;
  float clip_threshold = 0.f;
  bool operator==(const RuleArgs&) const = default;
};
// t = {values, gradient, state...} in the trainer's shadow_state order: n floats each (rows == nullptr),
// or the first n floats of the rows listed (rows of `row` floats; rows[] in the device's memory).
using RuleKernel = void (*)(Device* dev, const RuleArgs& r, float* const* t, size_t n, const unsigned* rows,
                            size_t row);
// The same step for `count` tensors of `total` floats in all, with one kernel: lists (device memory) holds
// tensor q of segment k at [q · count + k], q < kRuleTensors, then the count + 1 offsets where each starts.
constexpr unsigned kRuleTensors = 5;
using RuleSegmentsKernel = void (*)(Device* dev, const RuleArgs& r, const uintptr_t* lists, size_t count, size_t total);
void register_rule_kernel(Backend backend, RuleKernel k, RuleSegmentsKernel segments);

// Runs the rule on values[0]'s device when that is not the CPU and returns true; false (nothing done)
// for host memory, where the trainer's own rule runs.
bool device_update(const RuleArgs& r, const std::vector<Tensor*>& values);

// While one is alive on its thread, a device_update given the tensors of row rows[0] of lookup tables
// updates all the rows listed, of the same tables, with one kernel, and done() says so. Sparse updates of
// a table on a device are one kernel, not one per row. A rule that runs on the host never calls
// device_update: it updates rows[0] alone and done() stays false, so the caller goes on row by row.
class DeviceRowUpdate : public detail::ThreadScope<DeviceRowUpdate> {
 public:
  DeviceRowUpdate(std::vector<unsigned> rows, size_t row) : rows_(std::move(rows)), row_(row) {}
  bool done() const { return done_; }

 private:
  friend bool device_update(const RuleArgs& r, const std::vector<Tensor*>& values);
  std::vector<unsigned> rows_;
  size_t row_;
  bool done_ = false;
};

// While one is alive on its thread, a device_update of a whole tensor also zeroes its gradient in the same
// kernel, and done() says so: the trainer's clearing of the gradient then needs no launch of its own.
class DeviceClearingUpdate : public detail::ThreadScope<DeviceClearingUpdate> {
 public:
  bool done() const { return done_; }

 private:
  friend bool device_update(const RuleArgs& r, const std::vector<Tensor*>& values);
  bool done_ = false;
};

// While one is alive on its thread, device_update queues whole-tensor updates, and flush() (or the
// destructor) runs them with one kernel per device and rule settings: a trainer's update is a few launches,
// not one per parameter. The caller keeps the tensors and state unread until then.
class DeviceUpdateBatch : public detail::ThreadScope<DeviceUpdateBatch> {
 public:
  ~DeviceUpdateBatch();
  // From now on the updates on `device` take their gradient scale from the squared gradient norm at norm_sq
  // (a double in the device's memory that the host has not read) instead of from RuleArgs::gscale:
  // clip_threshold / ‖g‖ when clipping and ‖g‖ > clip_threshold, else 1. A NaN or Inf norm changes no value
  // and no state (a clearing update still zeroes the gradient). The trainer reads the norm later
  // (Device::read_later), so the update waits for nothing.
  void check_norm(Device* device, const double* norm_sq, bool clipping, float clip_threshold);
  void flush();

 private:
  friend bool device_update(const RuleArgs& r, const std::vector<Tensor*>& values);
  struct Queued {
    Device* device;
    RuleArgs args;
    float* t[kRuleTensors];
    size_t n;
  };
  std::vector<Queued> queued_;
  Device* checked_ = nullptr;  // check_norm's
  const double* norm_sq_ = nullptr;
  bool clipping_ = false;
  float clip_threshold_ = 0.f;
};

}  // namespace dynet
