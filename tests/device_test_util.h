// Helpers shared by the tests that run graphs on devices other than the CPU (test_devices.cc, the op
// harness's batching mode, the autobatched models); not a test source.
#pragma once

#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/op.h"
#include "dynet/globals.h"
#include "dynet/model.h"
#include "dynet/tensor.h"
#include "kernels/device/emulated.h"
#include "ops/sample.h"

namespace dynet::test {

// default_device for the scope (leaves made without a device, and parameters, go there).
struct DefaultDevice {
  explicit DefaultDevice(Device* d) : saved(default_device) { default_device = d; }
  ~DefaultDevice() { default_device = saved; }
  DefaultDevice(const DefaultDevice&) = delete;
  DefaultDevice& operator=(const DefaultDevice&) = delete;
  Device* saved;
};

inline std::vector<Device*> gpus() {
  std::vector<Device*> r;
  for (int i = 0; i < gpu_count(); ++i) r.push_back(gpu_device(i));
  return r;
}

// The devices other than the CPU that device tests compare with it: the emulated one and any GPU.
inline std::vector<Device*> test_devices() {
  std::vector<Device*> r = {emulated_device()};
  for (Device* g : gpus()) r.push_back(g);
  return r;
}

// Gives `to`'s parameters and lookup tables the values of `from`'s (the same model made on another
// device: parameters are listed in the order they were added).
inline void copy_parameter_values(ParameterCollection& to, ParameterCollection& from) {
  auto a = to.parameters_list();
  auto b = from.parameters_list();
  auto la = to.lookup_parameters_list();
  auto lb = from.lookup_parameters_list();
  if (a.size() != b.size() || la.size() != lb.size())
    throw std::logic_error("copy_parameter_values: the collections hold different parameters");
  for (size_t i = 0; i < a.size(); ++i) a[i]->set_value(as_vector(b[i]->values));
  for (size_t i = 0; i < la.size(); ++i) {
    const std::vector<float> v = as_vector(lb[i]->all_values);
    const size_t row = la[i]->dim.size();
    for (unsigned j = 0; j < la[i]->values.size(); ++j)
      la[i]->initialize(j, std::vector<float>(v.begin() + j * row, v.begin() + (j + 1) * row));
  }
}

// The same sample made again with its parameters on `dev` (samples() put them on default_device),
// holding the values of `like`'s parameters.
inline OpSample sample_on(Device* dev, OpId op, const OpSample& like) {
  DefaultDevice on(dev);
  for (OpSample& s : op_def(op).samples()) {
    if (s.name != like.name) continue;
    if (s.params) copy_parameter_values(*s.params, *like.params);
    return std::move(s);
  }
  throw std::logic_error("sample_on: no sample " + like.name);
}

// One sample of one op (the harnesses' test parameter).
struct Case {
  OpId op;
  OpSample sample;
};
inline void PrintTo(const Case& c, std::ostream* os) { *os << op_def(c.op).name << "/" << c.sample.name; }

// d.size() values drawn uniformly from [lo, hi].
inline std::vector<float> random_values(const Dim& d, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(d.size());
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace dynet::test
