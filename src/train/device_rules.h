// Trainer update rules as device kernels (device_rules.cc, compiled for the emulated device and, in CUDA
// builds, again by nvcc): parameters on a device other than the CPU are updated there.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device.h"

namespace dynet {

enum class UpdateRule : uint8_t { SGD, Momentum, Adagrad, Adadelta, RMSProp, Adam, Amsgrad };

// One step of a rule: the learning rate (Adam: the bias-corrected step size), the gradient scale
// (clipping), the lazy weight-decay scale, and the rule's settings (a: momentum, rho or beta_1; b: beta_2).
struct RuleArgs {
  UpdateRule rule;
  float lr, gscale, weight_decay, a = 0.f, b = 0.f, eps = 0.f;
};
// t = {values, gradient, state...} of n floats each, in the trainer's shadow_state order.
using RuleKernel = void (*)(Device* dev, const RuleArgs& r, float* const* t, size_t n);
void register_rule_kernel(Backend backend, RuleKernel k);

// Runs the rule on values[0]'s device when that is not the CPU and returns true; false (nothing done)
// for host memory, where the trainer's own rule runs.
bool device_update(const RuleArgs& r, const std::vector<Tensor*>& values);

}  // namespace dynet
