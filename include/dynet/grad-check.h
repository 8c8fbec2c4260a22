// Finite-difference gradient check of a whole model (DyNet's dynet/grad-check.h).
#pragma once

#include "dynet/expr.h"

namespace dynet {

class ParameterCollection;

// Runs forward and backward on the scalar `expr` (after clearing the model's gradients), then
// compares every element's gradient, of every parameter and lookup parameter of m, with the central
// difference (E(x+a) - E(x-a)) / 2a, a = 5e-3, x being the effective value (values x the
// weight-decay scale, which the gradients refer to). An element fails when the two differ by more than
// 0.01 both absolutely and relative to the larger magnitude. Returns true when no element fails.
// verbosity: 0 silent, 1 prints the failing elements and a failure line, 2 prints everything (to
// std::cerr). The model's values are restored; its gradients are left as computed by the backward pass.
bool check_grad(ParameterCollection& m, const Expression& expr, int verbosity = 1);

}  // namespace dynet
