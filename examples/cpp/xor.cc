// Learns XOR with a one-hidden-layer network, DyNet style: one graph built once, inputs updated in place
// between forward passes. Usage: xor [iterations] [--dynet-* flags]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dynet/dynet.h"
#include "dynet/expr.h"
#include "dynet/init.h"
#include "dynet/training.h"

using namespace dynet;

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf(
          "usage: xor [iterations] [--dynet-* flags]\n"
          "Trains a 2-8-1 tanh network on XOR with plain SGD, one graph built once and its inputs updated in\n"
          "place, printing the mean loss of every iteration and the predictions at the end.\n\n"
          "  iterations      passes over the four examples [30]\n"
          "  --dynet-seed N  random seed of the parameters (0: a fresh one) [0]\n"
          "  --help          this text\n");
      return 0;
    }
  }
  dynet::initialize(argc, argv);
  unsigned iterations = 30;
  if (argc > 1) {
    const int requested = std::atoi(argv[1]);
    if (requested <= 0) {
      std::fprintf(stderr, "xor: iterations must be a positive integer, got '%s' (xor --help)\n", argv[1]);
      return 1;
    }
    iterations = static_cast<unsigned>(requested);
  }

  const unsigned hidden_size = 8;
  ParameterCollection model;
  SimpleSGDTrainer trainer(model);
  Parameter p_W = model.add_parameters({hidden_size, 2});
  Parameter p_b = model.add_parameters({hidden_size});
  Parameter p_V = model.add_parameters({1, hidden_size});
  Parameter p_a = model.add_parameters({1});

  ComputationGraph cg;
  Expression W = parameter(cg, p_W);
  Expression b = parameter(cg, p_b);
  Expression V = parameter(cg, p_V);
  Expression a = parameter(cg, p_a);

  // The graph reads these at every forward pass, so one graph serves all four examples.
  std::vector<real> x_values(2);
  real y_value = 0;
  Expression x = input(cg, {2}, &x_values);
  Expression y = input(cg, &y_value);

  Expression h = tanh(W * x + b);
  Expression y_pred = V * h + a;
  Expression loss_expr = squared_distance(y_pred, y);

  for (unsigned iter = 0; iter < iterations; ++iter) {
    double loss = 0;
    for (unsigned example = 0; example < 4; ++example) {
      const bool x1 = example & 1, x2 = (example >> 1) & 1;
      x_values[0] = x1 ? 1.f : -1.f;
      x_values[1] = x2 ? 1.f : -1.f;
      y_value = (x1 != x2) ? 1.f : -1.f;
      loss += as_scalar(cg.forward(loss_expr));
      cg.backward(loss_expr);
      trainer.update();
    }
    std::printf("iteration %u: loss %.6f\n", iter + 1, loss / 4);
  }

  std::printf("predictions after training:\n");
  for (unsigned example = 0; example < 4; ++example) {
    const bool x1 = example & 1, x2 = (example >> 1) & 1;
    x_values[0] = x1 ? 1.f : -1.f;
    x_values[1] = x2 ? 1.f : -1.f;
    std::printf("  %d xor %d -> %+.4f\n", x1, x2, as_scalar(cg.forward(y_pred)));
  }
  return 0;
}
