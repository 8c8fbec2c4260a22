// Trainers: update a ParameterCollection's values from the gradients accumulated by backward().
#pragma once

#include <vector>

#include "dynet/model.h"

namespace dynet {

typedef float real;

// The common update loop: gradient clipping, dense updates of parameters, sparse updates of lookup
// parameters (only the rows that received gradients), and lazily allocated per-parameter shadow
// state (e.g. Adam's moments). A concrete trainer supplies an elementwise rule.
class Trainer {
 public:
  Trainer(ParameterCollection& m, real learning_rate);
  virtual ~Trainer();

  // Updates every parameter with `updated` set that received a gradient, then clears all gradients
  // (frozen parameters' too).
  virtual void update();
  // Updates only the given parameters (indices into m.parameters_list() / m.lookup_parameters_list())
  // and clears only their gradients; the clipping norm still covers every gradient.
  void update(const std::vector<unsigned>& updated_params, const std::vector<unsigned>& updated_lookup_params);
  // Deprecated no-op (prints a warning once): change `learning_rate` directly instead.
  void update_epoch(real r = 1);
  // Forgets the shadow state (momenta); the learning rate and counters are kept.
  virtual void restart();
  void restart(real lr);

  // The factor gradients are multiplied by in this update: clip_threshold / ||g|| when the global L2
  // norm of all gradients exceeds clip_threshold, else 1. Throws std::runtime_error on NaN/Inf.
  float clip_gradients();
  // Prints "[lr=.. clips=.. updates=..] " to std::cerr and resets the *_since_status counters.
  void status();

  real learning_rate;
  bool clipping_enabled = true;
  real clip_threshold = 5;
  double clips = 0;
  double updates = 0;
  double clips_since_status = 0;
  double updates_since_status = 0;
  bool sparse_updates_enabled = true;
  ParameterCollection* model;

 protected:
  // How many shadow floats the rule keeps per parameter value (Adam: 2, plain SGD: 0).
  virtual unsigned shadow_count() const = 0;
  // Called once per update, before any rule runs (e.g. Adam's bias-corrected step size).
  virtual void begin_update() {}
  // Applies the rule to n consecutive values: p[k] and its gradient g[k] (to be multiplied by
  // gscale), with shadow[s][k] the k-th value of shadow array s. `weight_decay` is the lazy L2
  // weight-decay scale folded into the values: rules divide their step by it.
  virtual void update_rule(float gscale, float weight_decay, float* p, const float* g, float* const* shadow,
                           size_t n) = 0;

 private:
  void update_parameter(size_t index, float gscale);
  void update_lookup_parameter(size_t index, float gscale);
  // The start of parameter `index`'s shadow arrays (shadow_count() arrays of `size` floats each).
  float* shadow_of(std::vector<std::vector<float>>& shadows, size_t index, size_t size);
  // Hook for weight decay: the scale every rule divides by, and the step after each update.
  // Weight decay is not implemented yet, so the scale stays 1.
  float current_weight_decay() const { return 1.f; }
  void after_update_weight_decay() {}

  // Shadow arrays per parameter, indexed like the collection's lists; allocated on first update,
  // so parameters added after the trainer was made get theirs too.
  std::vector<std::vector<float>> param_shadow_, lookup_shadow_;
  bool warned_update_epoch_ = false;
};

// p -= learning_rate · g
class SimpleSGDTrainer : public Trainer {
 public:
  explicit SimpleSGDTrainer(ParameterCollection& m, real learning_rate = 0.1);

 protected:
  unsigned shadow_count() const override { return 0; }
  void update_rule(float gscale, float weight_decay, float* p, const float* g, float* const* shadow,
                   size_t n) override;
};

// Adam (Kingma & Ba 2014): m = β1·m + (1-β1)·g, v = β2·v + (1-β2)·g²,
// p -= lr·√(1-β2^t)/(1-β1^t) · m / (√v + eps) with t the 1-based update count.
// Lookup parameters update only the rows that received gradients (and only their m, v).
class AdamTrainer : public Trainer {
 public:
  explicit AdamTrainer(ParameterCollection& m, float learning_rate = 0.001, float beta_1 = 0.9,
                       float beta_2 = 0.999, float eps = 1e-8);

  float beta_1, beta_2, epsilon;

 protected:
  unsigned shadow_count() const override { return 2; }
  void begin_update() override;
  void update_rule(float gscale, float weight_decay, float* p, const float* g, float* const* shadow,
                   size_t n) override;

 private:
  float step_size_ = 0;  // bias-corrected learning rate of the current update
};

}  // namespace dynet
