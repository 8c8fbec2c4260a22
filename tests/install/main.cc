// Builds y = tanh(W x + b) with known values through the installed headers and library, and checks y.
#include <cmath>
#include <cstdio>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/param-init.h"

int main(int argc, char** argv) {
  dynet::initialize(argc, argv);

  dynet::ParameterCollection model;
  // W = [[0.5, -1], [2, 0.25]] stored column-major.
  const std::vector<float> w_values = {0.5f, 2.f, -1.f, 0.25f};
  const std::vector<float> b_values = {0.1f, -0.2f};
  dynet::Parameter p_w = model.add_parameters({2, 2}, dynet::ParameterInitFromVector(w_values));
  dynet::Parameter p_b = model.add_parameters({2}, dynet::ParameterInitFromVector(b_values));

  dynet::ComputationGraph cg;
  dynet::Expression w = dynet::parameter(cg, p_w);
  dynet::Expression b = dynet::parameter(cg, p_b);
  dynet::Expression x = dynet::input(cg, {2}, std::vector<float>{0.3f, -0.4f});
  dynet::Expression y = dynet::tanh(w * x + b);
  const std::vector<float> got = dynet::as_vector(y.value());

  const std::vector<double> expected = {std::tanh(0.5 * 0.3 + -1.0 * -0.4 + 0.1),
                                        std::tanh(2.0 * 0.3 + 0.25 * -0.4 - 0.2)};
  if (got.size() != expected.size()) {
    std::fprintf(stderr, "install check: expected %zu values, got %zu\n", expected.size(), got.size());
    return 1;
  }
  for (size_t k = 0; k < expected.size(); ++k) {
    if (std::fabs(got[k] - expected[k]) > 1e-5) {
      std::fprintf(stderr, "install check: y[%zu] = %.7f, expected %.7f\n", k, got[k], expected[k]);
      return 1;
    }
  }
  std::printf("install check: tanh(W x + b) = [%.6f, %.6f] as expected\n", got[0], got[1]);
  return 0;
}
