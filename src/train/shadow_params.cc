#include "dynet/shadow-params.h"

#include "core/device.h"
#include "dynet/model.h"

namespace dynet {

namespace {
// n zeros on `device` (trainer state lives where its parameter does).
std::shared_ptr<float> zeros(size_t n, Device* device) {
  if (detail::host_addressable(device)) return std::shared_ptr<float>(new float[n](), std::default_delete<float[]>());
  float* p = static_cast<float*>(device->allocate_parameters(n * sizeof(float)));
  return std::shared_ptr<float>(p, [device](float* q) { device->deallocate_parameters(q); });
}
}  // namespace

ShadowParameters::ShadowParameters(const ParameterStorage& p) : memory(zeros(p.dim.size(), p.values.device)) {
  h = Tensor(p.dim, memory.get(), p.values.device, DeviceMempool::PS);
}

ShadowLookupParameters::ShadowLookupParameters(const LookupParameterStorage& lp)
    : memory(zeros(lp.all_dim.size(), lp.all_values.device)) {
  all_h = Tensor(lp.all_dim, memory.get(), lp.all_values.device, DeviceMempool::PS);
  const size_t rows = lp.values.size(), row = lp.dim.size();
  h.reserve(rows);
  for (size_t i = 0; i < rows; ++i) h.emplace_back(lp.dim, memory.get() + i * row, all_h.device, DeviceMempool::PS);
}

void allocate_shadow_parameters(const ParameterCollection& model, unsigned allocated,
                                std::vector<ShadowParameters>& target) {
  const auto& params = model.parameters_list();
  for (size_t i = allocated; i < params.size(); ++i) target.emplace_back(*params[i]);
}

void allocate_shadow_lookup_parameters(const ParameterCollection& model, unsigned allocated,
                                       std::vector<ShadowLookupParameters>& target) {
  const auto& params = model.lookup_parameters_list();
  for (size_t i = allocated; i < params.size(); ++i) target.emplace_back(*params[i]);
}

std::vector<ShadowParameters> allocate_shadow_parameters(const ParameterCollection& model) {
  std::vector<ShadowParameters> v;
  allocate_shadow_parameters(model, 0, v);
  return v;
}

std::vector<ShadowLookupParameters> allocate_shadow_lookup_parameters(const ParameterCollection& model) {
  std::vector<ShadowLookupParameters> v;
  allocate_shadow_lookup_parameters(model, 0, v);
  return v;
}

}  // namespace dynet
