// Shadow parameters: one extra tensor per parameter (or per lookup table, with a view per row), zeroed
// and shaped like it. Trainers keep their state in them (momentum, Adam's moments, moving averages);
// a custom trainer can do the same (DyNet's dynet/shadow-params.h).
#pragma once

#include <memory>
#include <vector>

#include "dynet/tensor.h"

namespace dynet {

class ParameterCollection;
struct ParameterStorage;
struct LookupParameterStorage;

struct ShadowParameters {
  ShadowParameters() = default;
  // Zeros shaped like p's values.
  explicit ShadowParameters(const ParameterStorage& p);
  Tensor h;
  // Owns h's floats; copies share them (as DyNet's copies shared pool memory).
  std::shared_ptr<float> memory;
};

struct ShadowLookupParameters {
  ShadowLookupParameters() = default;
  // Zeros shaped like lp's whole table (all_h) with one view per row (h[i]).
  explicit ShadowLookupParameters(const LookupParameterStorage& lp);
  Tensor all_h;
  std::vector<Tensor> h;
  std::shared_ptr<float> memory;
};

// Appends shadows for the parameters of `model` from index `allocated` on (those added since the
// last call), so that target[i] belongs to model.parameters_list()[i].
void allocate_shadow_parameters(const ParameterCollection& model, unsigned allocated,
                                std::vector<ShadowParameters>& target);
void allocate_shadow_lookup_parameters(const ParameterCollection& model, unsigned allocated,
                                       std::vector<ShadowLookupParameters>& target);
// One per parameter (resp. lookup parameter) of the model (DyNet 2.0's form).
std::vector<ShadowParameters> allocate_shadow_parameters(const ParameterCollection& model);
std::vector<ShadowLookupParameters> allocate_shadow_lookup_parameters(const ParameterCollection& model);

}  // namespace dynet
