// Parameters, lookup parameters and the collections that own them.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dynet/dim.h"
#include "dynet/param-init.h"
#include "dynet/tensor.h"

namespace dynet {

struct Device;
class ParameterCollection;
struct ParameterCollectionStorage;

// Lazy L2 weight decay of one collection (DyNet's L2WeightDecay). Parameter nodes output
// values × current_weight_decay(); instead of shrinking every value after each update, a trainer
// multiplies the scale by (1 - lambda), and rules divide their steps by it. When the scale falls
// below 0.25 the trainer folds it into the values and resets it to 1.
// A collection made without its own lambda (add_subcollection(name) or lambda < 0) follows its
// parent's lambda, including later set_weight_decay_lambda calls on the parent; its scale is its own.
class L2WeightDecay {
 public:
  explicit L2WeightDecay(float lambda, std::shared_ptr<const L2WeightDecay> parent = nullptr);
  // lambda in [0, 1); a negative lambda follows the parent's (0 without a parent).
  void set_lambda(float lambda);
  float get_lambda() const;
  // scale *= (1 - lambda) (num_updates times).
  void update_weight_decay(unsigned num_updates = 1);
  float current_weight_decay() const { return scale_; }
  bool parameters_need_rescaled() const { return scale_ < 0.25f; }
  // Called once the scale has been folded into the values (prints DyNet's RESCALE message).
  void reset_weight_decay();

 private:
  float own_lambda_;  // < 0: follow parent_
  float scale_ = 1.f;
  std::shared_ptr<const L2WeightDecay> parent_;
};

struct ParameterStorageBase {
  virtual ~ParameterStorageBase() = default;
  virtual void scale_parameters(float a) = 0;
  virtual void scale_gradient(float a) = 0;
  virtual void zero() = 0;
  virtual void squared_l2norm(float* sqnorm) const = 0;
  virtual void g_squared_l2norm(float* sqnorm) const = 0;
  virtual size_t size() const = 0;
  virtual void clear_grad() = 0;
  void clear() { clear_grad(); }  // DyNet's name
  bool is_updated() const { return updated; }
  bool has_grad() const { return nonzero_grad; }
  std::string name;
  bool updated = true;
  bool nonzero_grad = false;
  // The parameter's lock: held to accumulate a gradient into it (several graphs may at once), by
  // trainers while they read its gradient and write its values and state, and, during asynchronous
  // training, by graphs while they copy its values (see AsynchronousTraining).
  std::mutex grad_mutex;
  std::shared_ptr<float> memory;  // owns the values and the gradients (64-byte aligned)
  // The decay of the collection that created the parameter: its effective value is values × scale.
  std::shared_ptr<L2WeightDecay> weight_decay;
  float current_weight_decay() const { return weight_decay ? weight_decay->current_weight_decay() : 1.f; }
};

struct ParameterStorage : ParameterStorageBase {
  void scale_parameters(float a) override;
  void scale_gradient(float a) override;
  void zero() override;
  void squared_l2norm(float* sqnorm) const override;
  void g_squared_l2norm(float* sqnorm) const override;
  size_t size() const override { return dim.size(); }
  void clear_grad() override;
  void copy(const ParameterStorage& val);
  // this->g += the given gradient (a batched one summed over its batch elements); thread-safe
  void accumulate_grad(const Tensor& g);
  void clip(float left, float right);
  void set_value(const std::vector<float>& val);

  Dim dim;
  Tensor values, g;
};

struct LookupParameterStorage : ParameterStorageBase {
  void scale_parameters(float a) override;
  void scale_gradient(float a) override;
  void zero() override;
  void squared_l2norm(float* sqnorm) const override;
  void g_squared_l2norm(float* sqnorm) const override;
  size_t size() const override { return all_dim.size(); }
  void clear_grad() override;
  void initialize(unsigned index, const std::vector<float>& val);
  void copy(const LookupParameterStorage& val);
  // grads[index] += g and remember index for sparse updates (thread-safe)
  void accumulate_grad(unsigned index, const float* g);
  void accumulate_grad(unsigned index, const Tensor& g) { accumulate_grad(index, g.v); }
  // The whole table's gradient += g (all_dim's values; a batched g adds every batch element), every
  // row remembered (thread-safe). Throws std::invalid_argument when g has another size.
  void accumulate_grad(const Tensor& g);
  // grads[ids_host[k]] += the k-th row of g for k < n (ids_dev: DyNet's device copy, unused here).
  void accumulate_grads(unsigned n, const unsigned* ids_host, const unsigned* ids_dev, float* g);
  // values[i] and grads[i] ← views of row i of all_values and all_grads.
  void initialize_lookups();

  Dim all_dim;  // row dim + number of rows as last dim, e.g. 1000 x {50} -> {50,1000}
  Tensor all_values, all_grads;
  Dim dim;  // one row
  std::vector<Tensor> values, grads;
  std::unordered_set<unsigned> non_zero_grads;
  bool all_updated = false;
};

class Parameter {
 public:
  Parameter() = default;
  Parameter(std::nullptr_t) {}  // DyNet 2.0's handles were pointers: `Parameter p = nullptr;` compiled there
  Parameter(std::shared_ptr<ParameterStorage> p) : p(std::move(p)) {}
  ParameterStorage& get_storage() const;
  std::string get_fullname() const;
  void zero();
  Dim dim() const;
  Tensor* values();
  Tensor* gradients();
  float current_weight_decay() const;
  void set_updated(bool b);
  bool is_updated() const;
  void scale(float s);
  void scale_gradient(float s);
  void clip_inplace(float left, float right);
  void set_value(const std::vector<float>& val);
  bool is_valid() const { return p != nullptr; }

  std::shared_ptr<ParameterStorage> p;
};

class LookupParameter {
 public:
  LookupParameter() = default;
  LookupParameter(std::nullptr_t) {}  // as Parameter's
  LookupParameter(std::shared_ptr<LookupParameterStorage> p) : p(std::move(p)) {}
  LookupParameterStorage& get_storage() const;
  void initialize(unsigned index, const std::vector<float>& val) const;
  void zero();
  std::string get_fullname() const;
  Dim dim() const;  // one row
  std::vector<Tensor>* values();
  float current_weight_decay() const;
  void set_updated(bool b);
  bool is_updated() const;
  void scale(float s);
  void scale_gradient(float s);
  bool is_valid() const { return p != nullptr; }

  std::shared_ptr<LookupParameterStorage> p;
};

struct ParameterCollectionStorage {
  std::vector<std::shared_ptr<ParameterStorageBase>> all_params;
  std::vector<std::shared_ptr<ParameterStorage>> params;
  std::vector<std::shared_ptr<LookupParameterStorage>> lookup_params;
  // This collection's decay, then those of its subcollections (a trainer steps each once per update).
  std::shared_ptr<L2WeightDecay> weight_decay;
  std::vector<std::shared_ptr<L2WeightDecay>> weight_decays;
};

class ParameterCollection {
 public:
  ParameterCollection();
  explicit ParameterCollection(float weight_decay_lambda);
  ~ParameterCollection();

  // scale == 0: Glorot; otherwise U(-scale, scale).
  Parameter add_parameters(const Dim& d, float scale = 0.f, const std::string& name = "", Device* device = nullptr);
  Parameter add_parameters(const Dim& d, Device* device);
  Parameter add_parameters(const Dim& d, const std::string& name, Device* device = nullptr);
  Parameter add_parameters(const Dim& d, const ParameterInit& init, const std::string& name = "",
                           Device* device = nullptr);
  LookupParameter add_lookup_parameters(unsigned n, const Dim& d, const std::string& name = "",
                                        Device* device = nullptr);
  LookupParameter add_lookup_parameters(unsigned n, const Dim& d, const ParameterInit& init,
                                        const std::string& name = "", Device* device = nullptr);
  ParameterCollection add_subcollection(const std::string& name = "", float weight_decay_lambda = -1.f);

  // This collection's parameters and those of its subcollections, in creation order.
  const std::vector<std::shared_ptr<ParameterStorage>>& parameters_list() const { return storage_->params; }
  const std::vector<std::shared_ptr<LookupParameterStorage>>& lookup_parameters_list() const {
    return storage_->lookup_params;
  }
  // The same as copies (DyNet's get_*_storages), and both kinds in creation order.
  std::vector<std::shared_ptr<ParameterStorage>> get_parameter_storages() const { return storage_->params; }
  std::vector<std::shared_ptr<LookupParameterStorage>> get_lookup_parameter_storages() const {
    return storage_->lookup_params;
  }
  std::vector<std::shared_ptr<ParameterStorageBase>> get_parameter_storages_base() const {
    return storage_->all_params;
  }
  // The parameter of this collection (or a subcollection) with the given full name, e.g. "/W_1";
  // throws std::runtime_error naming it when there is none.
  std::shared_ptr<ParameterStorage> get_parameter_storage(const std::string& name) const;
  std::shared_ptr<LookupParameterStorage> get_lookup_parameter_storage(const std::string& name) const;
  ParameterCollectionStorage& get_storage();
  const ParameterCollectionStorage& get_storage() const;
  size_t parameter_count() const;
  size_t updated_parameter_count() const;
  void set_updated_param(const Parameter* p, bool status);
  void set_updated_lookup_param(const LookupParameter* p, bool status);
  bool is_updated_param(const Parameter* p);
  bool is_updated_lookup_param(const LookupParameter* p);
  float gradient_l2_norm() const;
  void reset_gradient();
  void project_weights(float radius = 1.0f);
  // lambda in [0, 1): this collection and the subcollections that follow its lambda.
  void set_weight_decay_lambda(float lambda);
  float get_weight_decay_lambda() const;
  L2WeightDecay& get_weight_decay();
  std::string get_fullname() const { return name_; }
  std::string get_namespace() const { return name_; }  // DyNet's name for the same prefix ("/", "/sub/")
  // The number of parameters (Parameter objects, not lookup parameters; DyNet's meaning): use
  // parameter_count() for the number of values.
  size_t size() const { return storage_->params.size(); }

 private:
  ParameterCollection(const std::string& name, std::vector<std::shared_ptr<ParameterCollectionStorage>> ancestors,
                      float weight_decay_lambda, std::shared_ptr<const L2WeightDecay> parent_decay);
  std::string unique_name(const std::string& name);
  void register_storage(const std::shared_ptr<ParameterStorageBase>& p);

  std::string name_;
  std::shared_ptr<ParameterCollectionStorage> storage_;  // this collection's (and its descendants') params
  std::vector<std::shared_ptr<ParameterCollectionStorage>> ancestors_;  // storages that also list our params
  std::shared_ptr<std::unordered_map<std::string, int>> name_counts_;
};

// Asynchronous (Hogwild-style) training: several threads each run their own graphs and update the
// shared parameters whenever they like, without waiting for one another (dynet/mp.h's workers live
// inside one). Make one on each such thread for as long as it trains; then:
// - Trainer::update() on that thread does not take the parameter lock exclusively (which would stop
//   every other thread's forward and backward, as updates elsewhere do) but only its shared side, and
//   each parameter's own mutex while it reads that parameter's gradient and writes its values and the
//   trainer's state for it. Updates of different parameters, by different trainers, and graphs on
//   other threads run meanwhile. The updates of one trainer object take turns (its per-update state
//   is plain members); give each thread its own trainer for updates that run at once.
// - While any AsynchronousTraining object lives in the process, parameter and lookup nodes (of every
//   thread's graphs) copy the values under each parameter's mutex instead of aliasing them, so a graph
//   sees every parameter and lookup row whole, as it was before or after any one update, never
//   half-written. A graph that already read parameters before the first object was made keeps
//   aliases; finish it first.
// - Such an update refuses (std::runtime_error, nothing changed) what it cannot do without stopping the
//   other threads: lazy L2 weight decay (one scale per collection, read by every parameter node), a
//   GradientReducer (MPI), or weights swapped to their moving average.
// Making and destroying one takes the parameter lock exclusively: not while this thread runs a graph.
class AsynchronousTraining {
 public:
  AsynchronousTraining();
  ~AsynchronousTraining();
  AsynchronousTraining(const AsynchronousTraining&) = delete;
  AsynchronousTraining& operator=(const AsynchronousTraining&) = delete;
  // True on a thread where an AsynchronousTraining object lives.
  static bool on_this_thread();
};

// Deprecated alias kept for DyNet 1.x code.
class Model : public ParameterCollection {
 public:
  using ParameterCollection::ParameterCollection;
};

// DyNet's one-call model files, declared here as in DyNet: TextFileSaver(filename).save(*model) and
// TextFileLoader(filename).populate(*model) (dynet/io.h).
void save_dynet_model(const std::string& filename, ParameterCollection* model);
void load_dynet_model(const std::string& filename, ParameterCollection* model);

}  // namespace dynet
