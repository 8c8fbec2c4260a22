// The op harness's test cases (OpDef::samples): every op file lists its own, and tests/test_ops.cc and
// tests/test_devices.cc run them all.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/model.h"

namespace dynet {

// A test case for the generic op harness: random inputs of the given dims (values in [lo, hi])
// enter as updatable inputs; `build` applies the op. The harness checks the shape rule against
// the computed value, finite-difference gradients of every input and of every parameter in
// `params` (with accumulation), and for `bad` samples that building throws std::invalid_argument
// naming the op. For a batchable op it also builds several instances of each good sample into one
// graph (each with its own input values) and checks the autobatched values and gradients against the
// unbatched ones; `instance` (when set) builds instance k instead of `build`, so that per-instance
// attributes (indices, values) differ between the members of a batch. With a `reference` (the op's math
// in double), the harness also checks the values against it and the gradients against its finite
// differences taken in double, to a tolerance float kernels can meet but a wrong formula cannot.
struct OpSample {
  using Build = std::function<Expression(ComputationGraph&, const std::vector<Expression>&)>;
  using Instance = std::function<Expression(ComputationGraph&, const std::vector<Expression>&, unsigned k)>;
  std::string name;
  std::vector<Dim> inputs = {};
  Build build;
  float lo = -1.f, hi = 1.f;
  bool bad = false;
  std::vector<bool> no_grad = {};  // inputs whose gradient is not checked (e.g. integer-valued)
  std::shared_ptr<ParameterCollection> params = nullptr;
  Instance instance = nullptr;
  // The values in double from the inputs' values (each column-major, batch elements last).
  using Reference = std::function<std::vector<double>(const std::vector<std::vector<double>>& xs)>;
  Reference reference = nullptr;
};

// A Reference applying f to each value of the first input.
template <class F>
OpSample::Reference elementwise_reference(F f) {
  return [f](const std::vector<std::vector<double>>& xs) {
    std::vector<double> y(xs[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = f(xs[0][i]);
    return y;
  };
}

// A Reference applying f to two inputs of dims a and b broadcast against each other (a dim, or the batch,
// of size 1 repeats against the other's size), as the binary elementwise ops broadcast.
template <class F>
OpSample::Reference broadcast_reference(const Dim& a, const Dim& b, F f) {
  return [=](const std::vector<std::vector<double>>& xs) {
    auto size = [](const Dim& d, unsigned k) { return k < d.nd ? d.d[k] : 1u; };
    const unsigned nd = std::max(a.nd, b.nd), bd = std::max(a.bd, b.bd);
    size_t n = 1;
    for (unsigned k = 0; k < nd; ++k) n *= std::max(size(a, k), size(b, k));
    std::vector<double> y(n * bd);
    for (size_t i = 0; i < y.size(); ++i) {
      size_t rest = i % n, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
      for (unsigned k = 0; k < nd; ++k) {
        const size_t out = std::max(size(a, k), size(b, k)), c = rest % out;
        rest /= out;
        ia += size(a, k) > 1 ? c * stride_a : 0;
        ib += size(b, k) > 1 ? c * stride_b : 0;
        stride_a *= size(a, k);
        stride_b *= size(b, k);
      }
      ia += a.bd > 1 ? i / n * stride_a : 0;
      ib += b.bd > 1 ? i / n * stride_b : 0;
      y[i] = f(xs[0][ia], xs[1][ib]);
    }
    return y;
  };
}

}  // namespace dynet
