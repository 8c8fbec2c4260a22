// The hook through which data-parallel training combines gradients before a trainer reads them.
#pragma once

namespace dynet {

class ParameterCollection;

// Trainer::update() (both overloads) calls reduce() first, before clipping or any rule reads a
// gradient. A reducer replaces the gradients every worker accumulated locally by the global ones, so
// that every decision the trainer then takes from them (the clipping norm, skipping a parameter
// without a gradient, which lookup rows to update) is the same on every worker. On return, for every
// parameter of `model`: the gradient values, `nonzero_grad`, and for lookup parameters
// `non_zero_grads` and `all_updated` must hold the global result, identically everywhere.
// `sparse_updates` is the trainer's sparse_updates_enabled: with it, lookup parameters not
// all_updated are exchanged as the rows that have gradients; otherwise as whole tables.
// The MPI implementation is dynet::mpi::DistributedTrainer (dynet/mpi.h). Gradients live in host
// memory today; a device reducer (NCCL) would gather device gradients the same way.
class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  virtual void reduce(ParameterCollection& model, bool sparse_updates) = 0;
};

}  // namespace dynet
