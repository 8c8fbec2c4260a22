// Trainers: update a ParameterCollection's values from the gradients accumulated by backward().
#pragma once

#include <functional>
#include <iosfwd>
#include <mutex>
#include <string>
#include <vector>

#include "dynet/gradient-reducer.h"
#include "dynet/model.h"
#include "dynet/shadow-params.h"

// DyNet's declaration block for a trainer's hooks; the trainer then defines update_rule (and
// update_rule_dev, if it keeps DyNet's per-device split) itself.
#define DYNET_TRAINER_DEFINE_DEV_IMPL()                                                             \
  void update_params(real gscale, size_t idx) override;                                            \
  void update_lookup_params(real gscale, size_t idx, size_t lidx) override;                        \
  void update_lookup_params(real gscale, size_t idx) override;                                     \
  template <class MyDevice>                                                                        \
  void update_rule_dev(const MyDevice& dev, real gscale, const std::vector<Tensor*>& values);      \
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;

namespace dynet {

// Which average of the weights a trainer keeps alongside them (see Trainer::exponential_moving_average).
enum class MovingAverage { None, Cumulative, Exponential };
// Written and read as None / Cumulative / Exponential (the trainer text format).
std::ostream& operator<<(std::ostream& os, MovingAverage m);
std::istream& operator>>(std::istream& is, MovingAverage& m);

// The common update loop: gradient clipping, dense updates of parameters, sparse updates of lookup
// parameters (only the rows that received gradients), lazily allocated per-parameter shadow state
// (e.g. Adam's moments, as ShadowParameters), lazy L2 weight decay, moving averages of the weights,
// and the trainer's state as text (save / populate).
//
// Extending it works as in DyNet: a custom trainer derives from Trainer, keeps its state in
// std::vector<ShadowParameters> / std::vector<ShadowLookupParameters> members allocated by
// alloc_impl() / alloc_lookup_impl(), and overrides update_params (one parameter),
// update_lookup_params (one row, or a whole table), update_rule (the arithmetic on a list of tensors:
// values, gradient, state...) and restart(). The built-in trainers instead list their state in
// shadow_state(), which lets the defaults of all of these (and save/populate) handle it.
class Trainer {
 public:
  Trainer(ParameterCollection& m, real learning_rate);
  virtual ~Trainer();
  // The shadow_state() pointers refer to the trainer's own members.
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Applies the rule to every parameter with `updated` set (a parameter without a gradient too: a
  // rule with momentum keeps moving it, as in DyNet), then clears all gradients (frozen parameters'
  // too). Lookup parameters: only the rows that received gradients when sparse_updates_enabled,
  // else the whole table. Then the moving average, the update counter and the weight-decay step.
  // A gradient holding NaN or Inf (clipping on or off) refuses the whole update before anything
  // changes: it throws std::runtime_error naming the parameters and clears all gradients, so the
  // model stays usable and the next step starts afresh (DyNet threw only with clipping on and kept
  // the bad gradients, so every later update threw again). With every parameter on one GPU the check
  // runs in the update's kernels instead, so that the update waits for nothing: an update with a bad
  // gradient changes nothing and returns, and the next update() throws (not naming the parameters),
  // changes nothing either and clears the gradients. `clips` and `updates` (which leaves out a refused
  // update) are then settled by the next update(), status() or save().
  //
  // Threads: any number of graphs may run forward and backward at once while other threads call
  // update() (on this trainer or another over the same parameters). An update excludes every graph's
  // forward and backward while it runs (the process-wide parameter lock, writer-preferring): it
  // applies exactly the gradients accumulated before it, each once, and never a half-written one;
  // values never tear. save, populate, the moving-average swaps and clip_gradients take the same
  // lock. The trainer's own settings (learning_rate, restart(), ...) are plain members: change them
  // from one thread, not while another thread is in update().
  // On a thread with an AsynchronousTraining object (dynet/model.h; dynet/mp.h's workers) the update
  // is asynchronous instead: it holds each parameter's own mutex while it updates that parameter, so
  // other threads' graphs and updates go on; a gradient that turns non-finite while it runs leaves its
  // parameter unchanged (the update then throws, naming it, after updating the others).
  virtual void update();
  // Updates only the given parameters (indices into m.parameters_list() / m.lookup_parameters_list())
  // and clears only their gradients; the clipping norm still covers every gradient.
  void update(const std::vector<unsigned>& updated_params, const std::vector<unsigned>& updated_lookup_params);
  // DyNet 2.0's update(scale) (2.0.1 removed it; deprecated here, a warning once): multiplies the
  // gradients by `scale`, then update(). Clipping therefore sees the scaled gradients, as in DyNet 2.0.
  // Newer code scales the loss instead: cg.backward(loss * scale); trainer.update().
  void update(real scale);
  // Deprecated no-op (prints a warning once): change `learning_rate` directly instead.
  void update_epoch(real r = 1);
  // Forgets the shadow state (momenta); the learning rate, counters and moving averages are kept.
  // (Pure in DyNet; here it zeroes what shadow_state() lists.)
  virtual void restart();
  void restart(real lr);

  // The factor gradients are multiplied by in this update: clip_threshold / ||g|| when the global L2
  // norm of all gradients exceeds clip_threshold, else 1. When a gradient holds NaN or Inf (clipping
  // on or off) it throws std::runtime_error naming the parameters and clears all gradients.
  float clip_gradients();
  // Folds every pending weight-decay scale of the collection into the parameter values and resets
  // the scales to 1 (done automatically once a scale falls below 0.25).
  void rescale_and_reset_weight_decay();
  // Prints "[lr=.. clips=.. updates=..] " to std::cerr and resets the *_since_status counters.
  void status();
  void set_sparse_updates(bool enabled) { sparse_updates_enabled = enabled; }
  // Data parallelism: update() first lets `reducer` replace the local gradients by the global ones
  // (dynet/gradient-reducer.h). Not owned; nullptr (the default) detaches.
  void set_gradient_reducer(GradientReducer* reducer) { reducer_ = reducer; }
  GradientReducer* gradient_reducer() const { return reducer_; }

  // ---- moving averages of the weights (of their effective values, weight decay included) ----
  // Both must be called before the first update; update_freq > 0: the average takes in the weights
  // after every update_freq-th update (the first one included).
  // Exponential: ma = beta·ma + (1-beta)·w, starting from ma = 0.
  void exponential_moving_average(float beta, unsigned update_freq = 1);
  // Cumulative: the plain mean of the weights taken in so far.
  void cumulative_moving_average(unsigned update_freq = 1);
  MovingAverage moving_average() const { return ma_mode; }
  // Replaces the weights by their average (divided by 1-beta^n with bias_correction, exponential
  // only); with save_weights the weights are kept to be put back by swap_params_to_weights().
  // Parameters added after the last averaging step keep their values. No-op when already swapped.
  void swap_params_to_moving_average(bool save_weights = true, bool bias_correction = false);
  // Puts back the weights saved by swap_params_to_moving_average (no-op when not swapped).
  void swap_params_to_weights();

  // ---- the trainer's state as text (DyNet's format) ----
  // Counters, settings, moving averages and shadow state. Throws std::runtime_error while the
  // parameters are swapped to their average with the weights saved (swap back first).
  virtual void save(std::ostream& os);
  // Reads what save() wrote (for a collection with at least as many parameters, of the same sizes;
  // later parameters get fresh state). Throws std::runtime_error naming what does not match and
  // leaves the trainer unchanged.
  virtual void populate(std::istream& is);
  void populate(std::istream& is, real lr);

  real learning_rate;
  bool clipping_enabled = true;
  real clip_threshold = 5;
  // Counters (DyNet: real; double here so that counts stay exact past 2^24).
  double clips = 0;
  double updates = 0;
  double clips_since_status = 0;
  double updates_since_status = 0;
  bool sparse_updates_enabled = true;
  // How many parameters (resp. lookup parameters) have shadow state, i.e. the count alloc_impl()
  // (resp. alloc_lookup_impl()) returned last.
  unsigned aux_allocated = 0;
  unsigned aux_allocated_lookup = 0;
  ParameterCollection* model;

 protected:
  // ---- DyNet's extension interface ----
  // Allocate state for the parameters from index aux_allocated on (those added since the last call)
  // and return how many now have state; update() calls them when parameters were added.
  virtual unsigned alloc_impl();
  virtual unsigned alloc_lookup_impl();
  // The arithmetic of one step on `values` = {parameter values, gradient, then the state tensors in
  // shadow_state() order}, all of one shape (a whole parameter, a lookup row or a whole table).
  // The gradient is still to be multiplied by gscale (clipping); values are stored divided by
  // param_weight_decay, so a step is divided by it. The built-in trainers implement it.
  virtual void update_rule(real gscale, const std::vector<Tensor*>& values);
  // One parameter (index into the collection's parameters_list()); by default update_rule on its
  // values, gradient and state.
  virtual void update_params(real gscale, size_t idx);
  // Row lidx of lookup parameter idx (sparse updates); by default update_rule on the row.
  virtual void update_lookup_params(real gscale, size_t idx, size_t lidx);
  // The whole table of lookup parameter idx (dense updates); by default update_rule on it.
  virtual void update_lookup_params(real gscale, size_t idx);

  // The shadow state of the built-in rules, in the order update_rule receives it and the text format
  // lists it (e.g. Adam: {m, lm}, {v, lv}). The defaults of alloc_impl, the update functions,
  // restart, save and populate handle exactly these.
  struct ShadowState {
    std::vector<ShadowParameters>* params;
    std::vector<ShadowLookupParameters>* lookup_params;
  };
  virtual std::vector<ShadowState> shadow_state() { return {}; }
  // The lazy weight-decay scale of the parameter being updated, set by the default update_params /
  // update_lookup_params before they call update_rule. (DyNet's rules read the collection's,
  // model->get_weight_decay().current_weight_decay(), which is the same unless a subcollection
  // keeps its own decay.)
  float param_weight_decay = 1.f;

  // ---- moving average state (DyNet's names) ----
  real ema_beta = 0;
  MovingAverage ma_mode = MovingAverage::None;
  bool ma_params_swapped = false;  // the parameters hold their averages
  bool ma_params_saved = false;    // ... and ma_saved_p / ma_saved_lp hold the weights
  unsigned ma_update_freq = 1;
  unsigned ma_updates = 0;  // weights taken into the average so far
  unsigned ma_aux_allocated = 0;
  unsigned ma_aux_allocated_lookup = 0;
  std::vector<ShadowParameters> ma_p;  // averages of the effective values (values × weight decay)
  std::vector<ShadowLookupParameters> ma_lp;
  std::vector<ShadowParameters> ma_saved_p;
  std::vector<ShadowLookupParameters> ma_saved_lp;

  // ---- the text format ----
  // The trainer's section in the text format ("#AdamTrainer#"), or nullptr when it has none.
  virtual const char* section_name() const { return nullptr; }
  // A section that older files may lack (read when present).
  virtual bool section_optional() const { return false; }
  // The settings line closing the section; parse_settings reads it and returns what applies it
  // (called only once the whole input has been read, so that a failed populate changes nothing).
  virtual void write_settings(std::ostream&) const {}
  virtual std::function<void()> parse_settings(std::istream&) { return [] {}; }
  // True when a zero gradient leaves the values and shadow state unchanged (parameters without a
  // gradient are then skipped).
  virtual bool zero_gradient_is_noop() const { return false; }
  // True when the rule's update is the same with subnormal numbers read and written as zero (the host
  // update then runs so: its state decays into them, and each costs an x86 core a microcode assist).
  virtual bool flushes_subnormals() const { return false; }
  // Called once per update, before any rule runs (e.g. Adam's bias-corrected step size).
  virtual void begin_update() {}
  // Called once per update after the counters advanced (e.g. a learning-rate schedule).
  virtual void end_update() {}

 private:
  void synchronize_parameter_devices() const;
  void update_listed(const std::vector<unsigned>* params, const std::vector<unsigned>* lookup_params);
  void apply_update(const std::vector<unsigned>* params, const std::vector<unsigned>* lookup_params,
                    std::vector<std::string>* late);
  static constexpr unsigned kRanOnDevice = 1, kRanOnHost = 2;  // where the next two ran the rule (0: nowhere)
  unsigned update_parameter(size_t index, float gscale, std::vector<std::string>* late);
  unsigned update_lookup_parameter(size_t index, float gscale, std::vector<std::string>* late);
  void allocate_state();
  void finish_update();
  void update_moving_average();
  void step_weight_decay();
  void fold_weight_decay(L2WeightDecay& decay);
  void unswap_before_update();
  void restore_weights();  // swap_params_to_weights() without taking the parameter lock
  // clip_gradients() without taking the parameter lock; throws (see refuse_non_finite_gradients)
  // when a gradient value is NaN or Inf, whether or not clipping is enabled. With deferred_norm, it may
  // instead leave the check to the update's kernels (DeviceUpdateBatch::check_norm): it then sets
  // *deferred_norm to the squared norm in device memory, read later (settle_gradient_check), and returns 1.
  float gradient_scale(const double** deferred_norm = nullptr);
  // The squared gradient norm: the host's part, with the devices' sums queued (norm_sums_); those read back.
  double queue_squared_norms(double (*sum)(const float*, size_t));
  double device_squared_norms();
  double squared_gradient_norm(double (*sum)(const float*, size_t));
  float scale_for_norm(double squared_norm, bool clipping, float threshold);  // counts the clips
  // The one device every parameter is on, when an update may leave its gradient check to the device: the
  // last update ran every rule as a device kernel, and nothing on the host needs the norm before the next
  // update (no reducer, moving average or weight decay; not asynchronous). Else nullptr.
  Device* deferrable_device(bool asynchronous) const;
  // Reads the norm an earlier update left to the device (waiting only if no wait since has brought it):
  // counts its clip, or, when it was NaN or Inf, takes back that update's count and keeps the refusal that
  // the next update throws.
  void settle_gradient_check();
  // Clears every gradient of the collection and throws std::runtime_error naming the parameters
  // whose gradients are not finite.
  [[noreturn]] void refuse_non_finite_gradients(double squared_norm);
  void clear_all_gradients();

  std::vector<Tensor*> values_;  // update_rule's argument, reused across calls
  // Per device other than the CPU: a double in its memory that squared_gradient_norm sums into, read once.
  struct NormSum {
    Device* device;
    double* sum;
    bool used;
    std::vector<const float*> xs;  // the gradients summed in one kernel, and their sizes
    std::vector<size_t> ns;
  };
  std::vector<NormSum> norm_sums_;
  struct PendingCheck {  // an update's gradient norm, read later (Device::read_later)
    Device* device = nullptr;
    unsigned ticket = 0;
    bool clipping = false;
    float threshold = 0.f;
  };
  PendingCheck pending_check_;
  std::string deferred_refusal_;  // a later-read norm was NaN or Inf: the next update throws this
  bool device_rules_only_ = false;  // the last update ran rules, all of them as device kernels
  std::vector<ShadowState> state_;  // shadow_state(), fetched by the first update
  bool state_known_ = false;
  bool warned_update_epoch_ = false;
  bool warned_update_scale_ = false;
  GradientReducer* reducer_ = nullptr;
  std::mutex update_turn_;  // updates of this trainer from several threads take turns (its state is plain members)
};

// p -= lr · g / wd
class SimpleSGDTrainer : public Trainer {
 public:
  explicit SimpleSGDTrainer(ParameterCollection& m, real learning_rate = 0.1);

 protected:
  bool zero_gradient_is_noop() const override { return true; }
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;
  bool flushes_subnormals() const override { return true; }
};

// SGD with a cyclical (triangular) learning rate (Smith 2015). The first update uses
// learning_rate_min; after the k-th update (it = k-1 = 0, 1, ...) the rate becomes
//   cycle = floor(1 + it / (2·step_size)),  x = |it / step_size - 2·cycle + 1|,
//   lr = lr_min + max(0, 1-x) · (lr_max - lr_min) · gamma^it.
// `edecay` is accepted for DyNet compatibility and unused (as in DyNet); restart() keeps the schedule.
class CyclicalSGDTrainer : public Trainer {
 public:
  explicit CyclicalSGDTrainer(ParameterCollection& m, float learning_rate_min = 0.01, float learning_rate_max = 0.1,
                              float step_size = 2000, float gamma = 1.0, float edecay = 0);

  float e_min, e_max, step_size, gamma;
  unsigned it = 0;  // updates taken so far, the schedule's position

 protected:
  const char* section_name() const override { return "#CyclicalSGDTrainer#"; }
  bool section_optional() const override { return true; }  // DyNet does not save the schedule
  void write_settings(std::ostream& os) const override;
  std::function<void()> parse_settings(std::istream& is) override;
  bool zero_gradient_is_noop() const override { return true; }
  void end_update() override;
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;
  bool flushes_subnormals() const override { return true; }
};

// v = mom·v - lr·g;  p += v / wd
class MomentumSGDTrainer : public Trainer {
 public:
  explicit MomentumSGDTrainer(ParameterCollection& m, real learning_rate = 0.01, real mom = 0.9);

  real momentum;
  // The velocities (public, as in DyNet).
  std::vector<ShadowParameters> vp;
  std::vector<ShadowLookupParameters> vlp;

 protected:
  const char* section_name() const override { return "#MomentumSGDTrainer#"; }
  void write_settings(std::ostream& os) const override;
  std::function<void()> parse_settings(std::istream& is) override;
  std::vector<ShadowState> shadow_state() override { return {{&vp, &vlp}}; }
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;
  bool flushes_subnormals() const override { return true; }
};

// G += g²;  p -= lr · g / √(G + eps) / wd
class AdagradTrainer : public Trainer {
 public:
  explicit AdagradTrainer(ParameterCollection& m, real learning_rate = 0.1, real eps = 1e-20);

  real epsilon;

 protected:
  const char* section_name() const override { return "#AdagradTrainer#"; }
  void write_settings(std::ostream& os) const override;
  std::function<void()> parse_settings(std::istream& is) override;
  std::vector<ShadowState> shadow_state() override { return {{&vp, &vlp}}; }
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;
  bool flushes_subnormals() const override;

  std::vector<ShadowParameters> vp;  // G
  std::vector<ShadowLookupParameters> vlp;
};

// hg = ρ·hg + (1-ρ)·g²;  d = -g · √(hd + eps) / √(hg + eps);  hd = ρ·hd + (1-ρ)·d²;  p += d / wd
// (no learning rate: `learning_rate` is 1 and unused).
class AdadeltaTrainer : public Trainer {
 public:
  explicit AdadeltaTrainer(ParameterCollection& m, real eps = 1e-6, real rho = 0.95);

  real epsilon, rho;

 protected:
  const char* section_name() const override { return "#AdadeltaTrainer#"; }
  void write_settings(std::ostream& os) const override;
  std::function<void()> parse_settings(std::istream& is) override;
  std::vector<ShadowState> shadow_state() override { return {{&hg, &hlg}, {&hd, &hld}}; }
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;
  bool flushes_subnormals() const override;

  std::vector<ShadowParameters> hg;  // history of squared gradients
  std::vector<ShadowLookupParameters> hlg;
  std::vector<ShadowParameters> hd;  // history of squared steps
  std::vector<ShadowLookupParameters> hld;
};

// h = ρ·h + (1-ρ)·g²;  p -= lr · g / √(h + eps) / wd   (C++ defaults; Python's differ)
class RMSPropTrainer : public Trainer {
 public:
  explicit RMSPropTrainer(ParameterCollection& m, real learning_rate = 0.1, real eps = 1e-20, real rho = 0.95);

  real epsilon, rho;

 protected:
  const char* section_name() const override { return "#RMSPropTrainer#"; }
  void write_settings(std::ostream& os) const override;
  std::function<void()> parse_settings(std::istream& is) override;
  std::vector<ShadowState> shadow_state() override { return {{&hmsg, &hlmsg}}; }
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;
  bool flushes_subnormals() const override;

  std::vector<ShadowParameters> hmsg;  // mean squared gradient
  std::vector<ShadowLookupParameters> hlmsg;
};

// Adam (Kingma & Ba 2014): m = β1·m + (1-β1)·g, v = β2·v + (1-β2)·g²,
// p -= lr·√(1-β2^t)/(1-β1^t) · m / (√v + eps) / wd with t the 1-based update count (every update
// counts, also for lookup rows updated sparsely).
class AdamTrainer : public Trainer {
 public:
  explicit AdamTrainer(ParameterCollection& m, float learning_rate = 0.001, float beta_1 = 0.9,
                       float beta_2 = 0.999, float eps = 1e-8);

  float beta_1, beta_2, epsilon;

 protected:
  const char* section_name() const override { return "#AdamTrainer#"; }
  void write_settings(std::ostream& os) const override;
  std::function<void()> parse_settings(std::istream& is) override;
  std::vector<ShadowState> shadow_state() override { return {{&m, &lm}, {&v, &lv}}; }
  void begin_update() override;
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;
  bool flushes_subnormals() const override;

  std::vector<ShadowParameters> m;  // first moments
  std::vector<ShadowLookupParameters> lm;
  std::vector<ShadowParameters> v;  // second moments
  std::vector<ShadowLookupParameters> lv;
  float step_size_ = 0;  // bias-corrected learning rate of the current update
};

// AMSGrad (Reddi et al. 2018): Adam with v̂ = max(v̂, v) in place of v in the step.
class AmsgradTrainer : public AdamTrainer {
 public:
  explicit AmsgradTrainer(ParameterCollection& m, float learning_rate = 0.001, float beta_1 = 0.9,
                          float beta_2 = 0.999, float eps = 1e-8);

 protected:
  const char* section_name() const override { return "#AmsgradTrainer#"; }
  std::vector<ShadowState> shadow_state() override { return {{&m, &lm}, {&v, &lv}, {&vhat, &lvhat}}; }
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;

  std::vector<ShadowParameters> vhat;  // running maxima of v
  std::vector<ShadowLookupParameters> lvhat;
};

// Exponentiated gradient with momentum, for parameters whose values are a positive distribution.
// Per parameter tensor (per row of a lookup parameter updated sparsely, the whole table when
// dense):  v = mom·v - lr·g;  y = log(p) + v / wd;  p = exp(y - logsumexp(y))  (p stays positive
// and sums to 1). Values must be >= 0 with one > 0: otherwise update() throws std::runtime_error
// before that tensor changes. `ne` is accepted for DyNet compatibility and unused.
// enableCyclicalLR switches on CyclicalSGDTrainer's learning-rate schedule.
class EGTrainer : public Trainer {
 public:
  explicit EGTrainer(ParameterCollection& m, real learning_rate = 0.1, real mom = 0.9, real ne = 0);
  void enableCyclicalLR(float learning_rate_min = 0.01, float learning_rate_max = 0.1, float step_size = 2000,
                        float gamma = 1.0);

  real momentum;
  float e_min = 0, e_max = 0, step_size = 0, gamma = 0;
  unsigned it = 0;
  bool isCyclical = false;

 protected:
  const char* section_name() const override { return "#EGTrainer#"; }
  void write_settings(std::ostream& os) const override;
  std::function<void()> parse_settings(std::istream& is) override;
  std::vector<ShadowState> shadow_state() override { return {{&hp, &hlp}}; }
  void end_update() override;
  void update_rule(real gscale, const std::vector<Tensor*>& values) override;

  std::vector<ShadowParameters> hp;  // momentum
  std::vector<ShadowLookupParameters> hlp;
  // The last tensor's log-normaliser and maximum (one value each), kept because DyNet's text format
  // stores them.
  float zeg_value_ = 0, meg_value_ = 0;
  Tensor zeg{Dim({1}), &zeg_value_}, meg{Dim({1}), &meg_value_};
};

}  // namespace dynet
