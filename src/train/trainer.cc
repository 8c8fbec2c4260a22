#include "dynet/training.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace dynet {

namespace {

constexpr unsigned kMaxShadowArrays = 4;

// Σ v² with float lanes the compiler can vectorize, folded into a double every chunk so that large
// tables keep their precision.
double sum_of_squares(const float* v, size_t n) {
  constexpr size_t kLanes = 16, kChunk = 4096;
  double total = 0;
  for (size_t start = 0; start < n; start += kChunk) {
    const size_t end = std::min(n, start + kChunk);
    float lanes[kLanes] = {};
    size_t k = start;
    for (; k + kLanes <= end; k += kLanes)
      for (size_t l = 0; l < kLanes; ++l) lanes[l] += v[k + l] * v[k + l];
    for (; k < end; ++k) lanes[0] += v[k] * v[k];
    for (float x : lanes) total += x;
  }
  return total;
}

void check_learning_rate(const char* where, real lr) {
  if (!(lr >= 0) || std::isinf(lr))
    throw std::invalid_argument(std::string(where) + ": the learning rate must be finite and >= 0, got " +
                                std::to_string(lr));
}

}  // namespace

// ---------------- Trainer ----------------

Trainer::Trainer(ParameterCollection& m, real lr) : learning_rate(lr), model(&m) {
  check_learning_rate("Trainer", lr);
}

Trainer::~Trainer() = default;

float Trainer::clip_gradients() {
  if (!clipping_enabled) return 1.f;
  double sq = 0;
  const ParameterCollectionStorage& s = model->get_storage();
  for (const auto& p : s.params)
    if (p->nonzero_grad) sq += sum_of_squares(p->g.v, p->dim.size());
  for (const auto& p : s.lookup_params) {
    if (!p->nonzero_grad) continue;
    if (p->all_updated) {
      sq += sum_of_squares(p->all_grads.v, p->all_dim.size());
    } else {
      for (unsigned r : p->non_zero_grads) sq += sum_of_squares(p->grads[r].v, p->dim.size());
    }
  }
  const float norm = static_cast<float>(std::sqrt(sq));
  if (std::isnan(norm) || std::isinf(norm)) {
    std::ostringstream msg;
    msg << "Magnitude of gradient is bad: " << norm;
    throw std::runtime_error(msg.str());
  }
  if (norm > clip_threshold) {
    ++clips;
    ++clips_since_status;
    return clip_threshold / norm;
  }
  return 1.f;
}

float* Trainer::shadow_of(std::vector<std::vector<float>>& shadows, size_t index, size_t size) {
  const unsigned count = shadow_count();
  if (count == 0) return nullptr;
  if (shadows.size() <= index) shadows.resize(index + 1);
  std::vector<float>& sh = shadows[index];
  if (sh.size() != count * size) sh.assign(count * size, 0.f);
  return sh.data();
}

void Trainer::update_parameter(size_t index, float gscale) {
  ParameterStorage& p = *model->get_storage().params[index];
  if (!p.nonzero_grad) return;
  const size_t n = p.dim.size();
  float* shadow = shadow_of(param_shadow_, index, n);
  float* arrays[kMaxShadowArrays];
  for (unsigned s = 0; s < shadow_count(); ++s) arrays[s] = shadow + s * n;
  update_rule(gscale, current_weight_decay(), p.values.v, p.g.v, arrays, n);
  p.clear_grad();
}

void Trainer::update_lookup_parameter(size_t index, float gscale) {
  LookupParameterStorage& p = *model->get_storage().lookup_params[index];
  if (!p.nonzero_grad) return;
  const size_t total = p.all_dim.size();
  const size_t row = p.dim.size();
  float* shadow = shadow_of(lookup_shadow_, index, total);
  float* arrays[kMaxShadowArrays];
  const unsigned count = shadow_count();
  if (!sparse_updates_enabled || p.all_updated) {
    for (unsigned s = 0; s < count; ++s) arrays[s] = shadow + s * total;
    update_rule(gscale, current_weight_decay(), p.all_values.v, p.all_grads.v, arrays, total);
  } else {
    for (unsigned r : p.non_zero_grads) {
      for (unsigned s = 0; s < count; ++s) arrays[s] = shadow + s * total + size_t(r) * row;
      update_rule(gscale, current_weight_decay(), p.values[r].v, p.grads[r].v, arrays, row);
    }
  }
  p.clear_grad();
}

void Trainer::update() {
  if (shadow_count() > kMaxShadowArrays)
    throw std::logic_error("Trainer: a rule may keep at most 4 shadow arrays");
  const float gscale = clip_gradients();
  begin_update();
  const ParameterCollectionStorage& s = model->get_storage();
  // Frozen parameters' gradients are dropped too, so they do not pile up across updates (and
  // inflate the clipping norm of every later update).
  for (size_t i = 0; i < s.params.size(); ++i) {
    if (s.params[i]->updated)
      update_parameter(i, gscale);
    else
      s.params[i]->clear_grad();
  }
  for (size_t i = 0; i < s.lookup_params.size(); ++i) {
    if (s.lookup_params[i]->updated)
      update_lookup_parameter(i, gscale);
    else
      s.lookup_params[i]->clear_grad();
  }
  ++updates;
  ++updates_since_status;
  after_update_weight_decay();
}

void Trainer::update(const std::vector<unsigned>& updated_params, const std::vector<unsigned>& updated_lookup_params) {
  const ParameterCollectionStorage& s = model->get_storage();
  for (unsigned i : updated_params)
    if (i >= s.params.size())
      throw std::invalid_argument("Trainer::update: parameter index " + std::to_string(i) +
                                  " out of range (the collection has " + std::to_string(s.params.size()) +
                                  " parameters)");
  for (unsigned i : updated_lookup_params)
    if (i >= s.lookup_params.size())
      throw std::invalid_argument("Trainer::update: lookup parameter index " + std::to_string(i) +
                                  " out of range (the collection has " + std::to_string(s.lookup_params.size()) +
                                  " lookup parameters)");
  const float gscale = clip_gradients();
  begin_update();
  for (unsigned i : updated_params) update_parameter(i, gscale);
  for (unsigned i : updated_lookup_params) update_lookup_parameter(i, gscale);
  ++updates;
  ++updates_since_status;
  after_update_weight_decay();
}

void Trainer::update_epoch(real) {
  if (warned_update_epoch_) return;
  warned_update_epoch_ = true;
  std::cerr << "[dynet] Trainer::update_epoch is deprecated and does nothing; "
               "change trainer.learning_rate directly to decay the learning rate.\n";
}

void Trainer::restart() {
  for (auto& sh : param_shadow_) std::fill(sh.begin(), sh.end(), 0.f);
  for (auto& sh : lookup_shadow_) std::fill(sh.begin(), sh.end(), 0.f);
}

void Trainer::restart(real lr) {
  check_learning_rate("Trainer::restart", lr);
  learning_rate = lr;
  restart();
}

void Trainer::status() {
  std::cerr << "[lr=" << learning_rate << " clips=" << clips_since_status << " updates=" << updates_since_status
            << "] ";
  clips_since_status = 0;
  updates_since_status = 0;
}

// ---------------- SimpleSGDTrainer ----------------

SimpleSGDTrainer::SimpleSGDTrainer(ParameterCollection& m, real lr) : Trainer(m, lr) {}

void SimpleSGDTrainer::update_rule(float gscale, float weight_decay, float* p, const float* g, float* const*,
                                   size_t n) {
  const float step = learning_rate * gscale / weight_decay;
  for (size_t k = 0; k < n; ++k) p[k] -= step * g[k];
}

// ---------------- AdamTrainer ----------------

AdamTrainer::AdamTrainer(ParameterCollection& m, float lr, float b1, float b2, float eps)
    : Trainer(m, lr), beta_1(b1), beta_2(b2), epsilon(eps) {
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
    throw std::invalid_argument("AdamTrainer: beta_1 and beta_2 must be in [0, 1), got " + std::to_string(b1) +
                                " and " + std::to_string(b2));
  if (!(eps >= 0)) throw std::invalid_argument("AdamTrainer: eps must be >= 0, got " + std::to_string(eps));
}

void AdamTrainer::begin_update() {
  const double t = updates + 1;
  step_size_ = static_cast<float>(learning_rate * std::sqrt(1.0 - std::pow(double(beta_2), t)) /
                                  (1.0 - std::pow(double(beta_1), t)));
}

void AdamTrainer::update_rule(float gscale, float weight_decay, float* p, const float* g, float* const* shadow,
                              size_t n) {
  using Arr = Eigen::Map<Eigen::ArrayXf>;
  using CArr = Eigen::Map<const Eigen::ArrayXf>;
  const Eigen::Index len = static_cast<Eigen::Index>(n);
  Arr x(p, len), m(shadow[0], len), v(shadow[1], len);
  CArr grad(g, len);
  m = m * beta_1 + grad * ((1.f - beta_1) * gscale);
  v = v * beta_2 + grad.square() * ((1.f - beta_2) * gscale * gscale);
  x -= m / (v.sqrt() + epsilon) * (step_size_ / weight_decay);
}

}  // namespace dynet
