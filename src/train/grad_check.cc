#include "dynet/grad-check.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <stdexcept>

#include "dynet/model.h"

namespace dynet {

namespace {
constexpr float kAlpha = 5e-3f;
constexpr double kTolerance = 0.01;

struct Checker {
  ComputationGraph& g;
  const Expression& expr;
  int verbosity;
  bool ok = true;

  double loss() { return as_scalar(g.forward(expr)); }

  // Checks n values against their analytic gradients (both column-major, same layout). Gradients
  // are with respect to the effective values (values x the weight-decay scale), so the stored
  // values move by alpha / scale.
  void check(const std::string& name, float* values, const float* grads, size_t n, float weight_decay) {
    const float step = kAlpha / weight_decay;
    if (verbosity > 1) std::cerr << "\nPARAMETERS " << name << '\n';
    for (size_t i = 0; i < n; ++i) {
      const float old = values[i];
      values[i] = old + step;
      const double right = loss();
      values[i] = old - step;
      const double left = loss();
      values[i] = old;
      const double numeric = (right - left) / (2.0 * double(step) * weight_decay);
      const double analytic = grads ? grads[i] : 0.0;
      const double diff = std::abs(numeric - analytic);
      const double scale = std::max(std::abs(numeric), std::abs(analytic));
      const bool bad = !std::isfinite(diff) || (diff > kTolerance && diff / scale > kTolerance);
      if (bad) ok = false;
      if (verbosity > 1 || (bad && verbosity > 0))
        std::cerr << (bad ? "*** " : "") << name << '[' << i << "] analytic " << analytic << " numeric " << numeric
                  << '\n';
    }
  }
};
}  // namespace

bool check_grad(ParameterCollection& m, const Expression& expr, int verbosity) {
  if (expr.is_stale()) throw std::invalid_argument("check_grad: the expression is stale (its graph was cleared)");
  ComputationGraph& g = *expr.pg;
  if (expr.dim().size() != 1)
    throw std::invalid_argument("check_grad: the expression must be a scalar, got " + expr.dim().str());
  m.reset_gradient();
  g.forward(expr);
  g.backward(expr);

  Checker c{g, expr, verbosity};
  const ParameterCollectionStorage& s = m.get_storage();
  for (const auto& p : s.params)
    c.check(p->name, p->values.v, p->nonzero_grad ? p->g.v : nullptr, p->dim.size(), p->current_weight_decay());
  for (const auto& p : s.lookup_params)
    c.check(p->name, p->all_values.v, p->nonzero_grad ? p->all_grads.v : nullptr, p->all_dim.size(),
            p->current_weight_decay());
  g.forward(expr);  // leave the graph's values at the unperturbed parameters

  if (!c.ok && verbosity > 0) std::cerr << "\n*** GRADIENT CHECK FAILED ***\n";
  if (c.ok && verbosity > 1) std::cerr << "\nGRADIENT CHECK PASSED\n";
  return c.ok;
}

}  // namespace dynet
