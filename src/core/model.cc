#include "dynet/model.h"

#include "core/device.h"
#include "core/param_lock.h"

#include "dynet/globals.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <new>
#include <stdexcept>

namespace dynet {

namespace {
// n values and n gradients, zeroed, each 64-byte aligned, owned by p.memory. Two calloc blocks rather
// than one: large ones come from fresh mmap'd pages, so memory is only committed where it is written
// (a big embedding table's gradient only for the rows that get gradients), and each half passes the
// kernel's overcommit check on its own. `what` and `d` name the parameter when memory cannot be had.
// On a device other than the CPU: the device's parameter memory.
std::pair<float*, float*> allocate_values_and_grads(ParameterStorageBase& p, size_t n, const char* what,
                                                   const Dim& d, Device* device) {
  if (detail::device_at(device->index) != device)
    throw std::invalid_argument(std::string(what) + ": device " + device->name +
                                " is not one of this process's devices (see get_device_manager())");
  if (!detail::host_addressable(device)) {
    const size_t bytes = std::max<size_t>(n, 1) * sizeof(float);
    float* values = nullptr;
    float* grads = nullptr;
    try {
      values = static_cast<float*>(device->allocate_parameters(bytes));
      grads = static_cast<float*>(device->allocate_parameters(bytes));
    } catch (const std::exception& e) {
      if (values) device->deallocate_parameters(values);
      throw std::runtime_error(std::string(what) + ": cannot allocate " + std::to_string(2 * bytes) + " bytes on " +
                               device->name + " for " + (p.name.empty() ? std::string("a parameter") : "'" + p.name + "'") +
                               " of shape " + d.str() + " (" + e.what() + ")");
    }
    p.memory = std::shared_ptr<float>(values, [device, values, grads](float*) {
      device->deallocate_parameters(values);
      device->deallocate_parameters(grads);
    });
    return {values, grads};
  }
  constexpr size_t kAlign = 64;
  const size_t bytes = std::max<size_t>(n, 1) * sizeof(float) + kAlign;  // n <= Dim::kMaxElements: no overflow
  void* v = std::calloc(bytes, 1);
  void* g = v ? std::calloc(bytes, 1) : nullptr;
  if (!g) {
    std::free(v);
    throw std::runtime_error(std::string(what) + ": cannot allocate " + std::to_string(2 * bytes) +
                             " bytes for the values and gradients of " +
                             (p.name.empty() ? std::string("a parameter") : "'" + p.name + "'") + " of shape " +
                             d.str());
  }
  auto align = [](void* q) {
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(q) + kAlign - 1) & ~uintptr_t(kAlign - 1));
  };
  float* values = align(v);
  float* grads = align(g);
  p.memory = std::shared_ptr<float>(values, [v, g](float*) {
    std::free(v);
    std::free(g);
  });
  return {values, grads};
}

// Parameter memory is its device's: the storage's operations go through the device (host loops for the
// CPU, kernels on GPUs).
Device& dev(const Tensor& t) { return t.device ? *t.device : *cpu_device(); }
float sqnorm(const Tensor& t, const float* v, size_t n) { return static_cast<float>(dev(t).squared_norm(v, n)); }

// Runs an initialiser on the host; parameters on another device get a copy.
void initialize_on(const ParameterInit& init, Tensor& t) {
  if (detail::host_addressable(t.device)) return init.initialize_params(t);
  std::vector<float> host(t.d.size());
  Tensor h(t.d, host.data(), cpu_device(), t.mem_pool);
  init.initialize_params(h);
  t.device->copy_from_host(t.v, host.data(), host.size() * sizeof(float));
}

// dst ← src (equal sizes), wherever each lives.
void copy_values(Tensor& dst, const Tensor& src) {
  const size_t bytes = dst.d.size() * sizeof(float);
  if (dst.device == src.device || (detail::host_addressable(dst.device) && detail::host_addressable(src.device)))
    return dev(dst).copy(dst.v, src.v, bytes);
  std::vector<float> buf;
  dev(dst).copy_from_host(dst.v, host_values(src, &buf), bytes);
}

void check_lambda(const char* where, float lambda) {
  if (!(lambda < 1) || std::isnan(lambda))
    throw std::invalid_argument(std::string(where) + ": the weight decay lambda must be in [0, 1), got " +
                                std::to_string(lambda));
}

void check_name(const std::string& name, const char* what) {
  if (name.find('/') != std::string::npos || name.find('_') != std::string::npos)
    throw std::invalid_argument(std::string(what) + ": name '" + name + "' may not contain '/' or '_'");
}
}  // namespace

// ---- the parameter lock ----
namespace detail {
ParameterLock::ParameterLock() {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
#ifdef __GLIBC__
  // glibc prefers readers by default, which lets overlapping forwards of other threads starve update().
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
  pthread_rwlock_init(&rw_, &attr);
  pthread_rwlockattr_destroy(&attr);
}
ParameterLock::~ParameterLock() { pthread_rwlock_destroy(&rw_); }
void ParameterLock::fail(int status) {
  throw std::logic_error("dynet: the parameter lock failed (" + std::string(std::strerror(status)) +
                         "): a thread took it while holding it");
}
ParameterLock& parameter_lock() {
  static ParameterLock lock;
  return lock;
}
}  // namespace detail

// ---- AsynchronousTraining ----
namespace {
thread_local int async_training_here = 0;
}
AsynchronousTraining::AsynchronousTraining() {
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());  // no forward is running
  ++detail::asynchronous_sessions;
  ++async_training_here;
}
AsynchronousTraining::~AsynchronousTraining() {
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());
  --detail::asynchronous_sessions;
  --async_training_here;
}
bool AsynchronousTraining::on_this_thread() { return async_training_here > 0; }

// ---- L2WeightDecay ----
L2WeightDecay::L2WeightDecay(float lambda, std::shared_ptr<const L2WeightDecay> parent) : parent_(std::move(parent)) {
  set_lambda(lambda);
}
void L2WeightDecay::set_lambda(float lambda) {
  check_lambda("L2WeightDecay::set_lambda", lambda);
  own_lambda_ = lambda < 0 ? -1.f : lambda;
}
float L2WeightDecay::get_lambda() const {
  if (own_lambda_ >= 0) return own_lambda_;
  return parent_ ? parent_->get_lambda() : 0.f;
}
void L2WeightDecay::update_weight_decay(unsigned num_updates) {
  const float lambda = get_lambda();
  if (num_updates == 0 || lambda == 0) return;
  if (num_updates == 1)
    scale_ -= scale_ * lambda;
  else
    scale_ *= std::pow(1.f - lambda, static_cast<float>(num_updates));
}
void L2WeightDecay::reset_weight_decay() {
  std::cerr << "RESCALE WEIGHT DECAY FROM " << scale_ << " to 1.0\n";
  scale_ = 1.f;
}

// ---- ParameterStorage ----
void ParameterStorage::scale_parameters(float a) { dev(values).scale(values.v, dim.size(), a); }
void ParameterStorage::scale_gradient(float a) { dev(g).scale(g.v, dim.size(), a); }
void ParameterStorage::zero() {
  dev(values).fill(values.v, dim.size(), 0.f);
  clear_grad();
}
void ParameterStorage::squared_l2norm(float* s) const { *s = sqnorm(values, values.v, dim.size()); }
void ParameterStorage::g_squared_l2norm(float* s) const { *s = nonzero_grad ? sqnorm(g, g.v, dim.size()) : 0.f; }
void ParameterStorage::clear_grad() {
  if (nonzero_grad) dev(g).fill(g.v, dim.size(), 0.f);
  nonzero_grad = false;
}
void ParameterStorage::copy(const ParameterStorage& val) {
  if (val.dim != dim)
    throw std::invalid_argument("ParameterStorage::copy: dims differ: " + dim.str() + " vs " + val.dim.str());
  copy_values(values, val.values);
}
void ParameterStorage::accumulate_grad(const Tensor& d) {
  if (detail::HeldGradients* held = detail::HeldGradients::current(); held && !detail::host_addressable(g.device))
    return held->hold(this, d);
  std::lock_guard<std::mutex> lock(grad_mutex);
  const size_t n = dim.size();
  if (!nonzero_grad && d.d.bd == 1) {  // g is all zero (clear_grad): a copy reads half as much memory
    dev(g).copy(g.v, d.v, n * sizeof(float));
  } else {
    for (size_t b = 0; b < d.d.bd; ++b) dev(g).axpy(1.f, d.v + b * n, g.v, n);  // a batched gradient: summed
  }
  nonzero_grad = true;
}
void ParameterStorage::clip(float left, float right) {
  if (!detail::host_addressable(values.device)) values.device->synchronize();  // then the host may write it
  for (size_t i = 0; i < dim.size(); ++i) values.v[i] = std::min(right, std::max(left, values.v[i]));
}
void ParameterStorage::set_value(const std::vector<float>& val) {
  if (val.size() != dim.size())
    throw std::invalid_argument("Parameter::set_value: got " + std::to_string(val.size()) + " values for " +
                                name + " " + dim.str());
  dev(values).copy_from_host(values.v, val.data(), val.size() * sizeof(float));
}

namespace detail {
void HeldGradients::hold(ParameterStorage* p, const Tensor& g) {
  const size_t n = p->dim.size();
  for (size_t b = 0; b < g.d.bd; ++b) held_.push_back({p, g.v + b * n});  // a batched gradient: summed
}
void HeldGradients::push() {
  auto key = [](const Held& h) { return std::pair(h.p->g.device, h.p); };  // by device, then address
  std::stable_sort(held_.begin(), held_.end(), [&](const Held& a, const Held& b) { return key(a) < key(b); });
  std::vector<std::unique_lock<std::mutex>> locks;
  for (size_t k = 0; k < held_.size(); ++k)
    if (k == 0 || held_[k].p != held_[k - 1].p) locks.emplace_back(held_[k].p->grad_mutex);
  // Adding into a gradient that is all zero (nonzero_grad false: cleared) is as right as copying.
  std::vector<float*> dsts;
  std::vector<const float*> srcs;
  std::vector<size_t> ns;
  for (size_t k = 0; k < held_.size(); ++k) {
    ParameterStorage* p = held_[k].p;
    dsts.push_back(p->g.v), srcs.push_back(held_[k].g), ns.push_back(p->dim.size());
    p->nonzero_grad = true;
    if (k + 1 == held_.size() || held_[k + 1].p->g.device != p->g.device) {
      p->g.device->add_segments(dsts.data(), srcs.data(), ns.data(), dsts.size());
      dsts.clear(), srcs.clear(), ns.clear();
    }
  }
  held_.clear();
}
}  // namespace detail

// ---- LookupParameterStorage ----
void LookupParameterStorage::scale_parameters(float a) { dev(all_values).scale(all_values.v, all_dim.size(), a); }
void LookupParameterStorage::scale_gradient(float a) { dev(all_grads).scale(all_grads.v, all_dim.size(), a); }
void LookupParameterStorage::zero() {
  dev(all_values).fill(all_values.v, all_dim.size(), 0.f);
  clear_grad();
}
void LookupParameterStorage::squared_l2norm(float* s) const { *s = sqnorm(all_values, all_values.v, all_dim.size()); }
void LookupParameterStorage::g_squared_l2norm(float* s) const {
  if (!nonzero_grad) {
    *s = 0;
    return;
  }
  if (all_updated) {
    *s = sqnorm(all_grads, all_grads.v, all_dim.size());
    return;
  }
  double t = 0;
  for (size_t r : non_zero_grads) t += sqnorm(all_grads, grads[r].v, dim.size());
  *s = static_cast<float>(t);
}
void LookupParameterStorage::clear_grad() {
  if (!nonzero_grad) return;
  // On a device one fill of the table costs less than a kernel launch per row.
  if (all_updated || non_zero_grads.size() * 4 > values.size() || !detail::host_addressable(all_grads.device)) {
    dev(all_grads).fill(all_grads.v, all_dim.size(), 0.f);
  } else {
    for (size_t r : non_zero_grads) dev(all_grads).fill(grads[r].v, dim.size(), 0.f);
  }
  non_zero_grads.clear();
  nonzero_grad = false;
}
void LookupParameterStorage::initialize(unsigned index, const std::vector<float>& val) {
  if (index >= values.size())
    throw std::invalid_argument("LookupParameter::initialize: index " + std::to_string(index) + " out of range for " +
                                name + " with " + std::to_string(values.size()) + " rows");
  if (val.size() != dim.size())
    throw std::invalid_argument("LookupParameter::initialize: got " + std::to_string(val.size()) +
                                " values for a row of " + dim.str());
  dev(all_values).copy_from_host(values[index].v, val.data(), val.size() * sizeof(float));
}
void LookupParameterStorage::copy(const LookupParameterStorage& val) {
  if (val.all_dim != all_dim)
    throw std::invalid_argument("LookupParameterStorage::copy: dims differ: " + all_dim.str() + " vs " +
                                val.all_dim.str());
  copy_values(all_values, val.all_values);
}
void LookupParameterStorage::accumulate_grad(unsigned index, const float* d) {
  std::lock_guard<std::mutex> lock(grad_mutex);
  dev(all_grads).axpy(1.f, d, grads[index].v, dim.size());  // d is on the table's device too
  non_zero_grads.insert(index);
  nonzero_grad = true;
}

void LookupParameterStorage::accumulate_grad(const Tensor& g) {
  if (g.d.batch_size() != all_dim.size())
    throw std::invalid_argument("LookupParameterStorage::accumulate_grad: gradient " + g.d.str() + " for " + name +
                                " of " + all_dim.str());
  if (!detail::host_addressable(all_grads.device)) {  // on a device: the whole table at once
    std::lock_guard<std::mutex> lock(grad_mutex);
    for (size_t b = 0; b < g.d.bd; ++b) all_grads.device->axpy(1.f, g.batch_ptr(b), all_grads.v, all_dim.size());
    for (unsigned r = 0; r < values.size(); ++r) non_zero_grads.insert(r);
    nonzero_grad = true;
    return;
  }
  const size_t rs = dim.size();
  for (size_t b = 0; b < g.d.bd; ++b)
    for (size_t r = 0; r < values.size(); ++r) accumulate_grad(static_cast<unsigned>(r), g.batch_ptr(b) + r * rs);
}
void LookupParameterStorage::accumulate_grads(unsigned n, const unsigned* ids_host, const unsigned*, float* g) {
  for (unsigned k = 0; k < n; ++k) {
    if (ids_host[k] >= values.size())
      throw std::invalid_argument("LookupParameterStorage::accumulate_grads: row " + std::to_string(ids_host[k]) +
                                  " of " + name + " with " + std::to_string(values.size()) + " rows");
    accumulate_grad(ids_host[k], g + size_t(k) * dim.size());
  }
}
void LookupParameterStorage::initialize_lookups() {
  const size_t n = all_dim[all_dim.nd - 1], rs = dim.size();
  values.clear();
  grads.clear();
  values.reserve(n);
  grads.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    values.emplace_back(dim, all_values.v + i * rs, all_values.device, DeviceMempool::PS);
    grads.emplace_back(dim, all_grads.v + i * rs, all_grads.device, DeviceMempool::PS);
  }
}

// ---- Parameter / LookupParameter ----
namespace {
template <class P>
auto& storage_of(const P& p, const char* what) {
  if (!p.p) throw std::runtime_error(std::string(what) + ": the parameter is not initialised");
  return *p.p;
}
// Changes of values or gradients made outside a trainer exclude graph evaluation and updates.
template <class F>
void exclusively(F&& f) {
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());
  f();
}
}  // namespace

ParameterStorage& Parameter::get_storage() const { return storage_of(*this, "Parameter"); }
std::string Parameter::get_fullname() const { return get_storage().name; }
void Parameter::zero() { exclusively([&] { get_storage().zero(); }); }
Dim Parameter::dim() const { return get_storage().dim; }
Tensor* Parameter::values() { return &get_storage().values; }
Tensor* Parameter::gradients() { return &get_storage().g; }
float Parameter::current_weight_decay() const { return get_storage().current_weight_decay(); }
void Parameter::set_updated(bool b) { get_storage().updated = b; }
bool Parameter::is_updated() const { return get_storage().updated; }
void Parameter::scale(float s) { exclusively([&] { get_storage().scale_parameters(s); }); }
void Parameter::scale_gradient(float s) { exclusively([&] { get_storage().scale_gradient(s); }); }
void Parameter::clip_inplace(float left, float right) { exclusively([&] { get_storage().clip(left, right); }); }
void Parameter::set_value(const std::vector<float>& val) { exclusively([&] { get_storage().set_value(val); }); }

LookupParameterStorage& LookupParameter::get_storage() const { return storage_of(*this, "LookupParameter"); }
void LookupParameter::initialize(unsigned index, const std::vector<float>& val) const {
  exclusively([&] { get_storage().initialize(index, val); });
}
void LookupParameter::zero() { exclusively([&] { get_storage().zero(); }); }
std::string LookupParameter::get_fullname() const { return get_storage().name; }
Dim LookupParameter::dim() const { return get_storage().dim; }
std::vector<Tensor>* LookupParameter::values() { return &get_storage().values; }
float LookupParameter::current_weight_decay() const { return get_storage().current_weight_decay(); }
void LookupParameter::set_updated(bool b) { get_storage().updated = b; }
bool LookupParameter::is_updated() const { return get_storage().updated; }
void LookupParameter::scale(float s) { exclusively([&] { get_storage().scale_parameters(s); }); }
void LookupParameter::scale_gradient(float s) { exclusively([&] { get_storage().scale_gradient(s); }); }

// ---- ParameterCollection ----
ParameterCollection::ParameterCollection() : ParameterCollection("/", {}, default_weight_decay_lambda, nullptr) {}
ParameterCollection::ParameterCollection(float weight_decay_lambda)
    : ParameterCollection("/", {}, weight_decay_lambda, nullptr) {}
ParameterCollection::ParameterCollection(const std::string& name,
                                         std::vector<std::shared_ptr<ParameterCollectionStorage>> ancestors,
                                         float weight_decay_lambda, std::shared_ptr<const L2WeightDecay> parent_decay)
    : name_(name),
      storage_(std::make_shared<ParameterCollectionStorage>()),
      ancestors_(std::move(ancestors)),
      name_counts_(std::make_shared<std::unordered_map<std::string, int>>()) {
  check_lambda("ParameterCollection", weight_decay_lambda);
  storage_->weight_decay = std::make_shared<L2WeightDecay>(weight_decay_lambda, std::move(parent_decay));
  storage_->weight_decays.push_back(storage_->weight_decay);
  for (auto& a : ancestors_) a->weight_decays.push_back(storage_->weight_decay);
}
ParameterCollection::~ParameterCollection() = default;

std::string ParameterCollection::unique_name(const std::string& name) {
  // Unnamed -> _<k> (k counts unnamed items); a repeated name gets _<k> for its k-th repeat.
  const std::string base = name.empty() ? "_" : name;
  const int k = (*name_counts_)[base]++;
  if (k == 0 && !name.empty()) return name;
  std::string r = name;
  r += '_';
  r += std::to_string(k);
  return r;
}

void ParameterCollection::register_storage(const std::shared_ptr<ParameterStorageBase>& p) {
  p->weight_decay = storage_->weight_decay;
  auto add = [&](ParameterCollectionStorage& s) {
    s.all_params.push_back(p);
    if (auto lp = std::dynamic_pointer_cast<LookupParameterStorage>(p))
      s.lookup_params.push_back(lp);
    else
      s.params.push_back(std::static_pointer_cast<ParameterStorage>(p));
  };
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());  // trainers iterate the lists
  add(*storage_);
  for (auto& a : ancestors_) add(*a);
}

Parameter ParameterCollection::add_parameters(const Dim& d, float scale, const std::string& name, Device* device) {
  if (scale == 0.f) return add_parameters(d, ParameterInitGlorot(), name, device);
  return add_parameters(d, ParameterInitUniform(scale), name, device);
}
Parameter ParameterCollection::add_parameters(const Dim& d, Device* device) { return add_parameters(d, 0.f, "", device); }
Parameter ParameterCollection::add_parameters(const Dim& d, const std::string& name, Device* device) {
  return add_parameters(d, 0.f, name, device);
}
Parameter ParameterCollection::add_parameters(const Dim& d, const ParameterInit& init, const std::string& name,
                                              Device* device) {
  check_name(name, "add_parameters");
  if (d.bd != 1) throw std::invalid_argument("add_parameters: parameters cannot be batched, got " + d.str());
  const size_t n = d.checked_size("add_parameters");  // 0 too: DyNet programs make {0} parameters they never use
  auto p = std::make_shared<ParameterStorage>();
  p->name = name;  // the unique name is taken once nothing can fail any more
  p->dim = d;
  Device* dev = device ? device : default_device ? default_device : cpu_device();
  const auto [values, grads] = allocate_values_and_grads(*p, n, "add_parameters", d, dev);
  p->values = Tensor(d, values, dev, DeviceMempool::PS);
  p->g = Tensor(d, grads, dev, DeviceMempool::PS);
  initialize_on(init, p->values);
  p->name = name_ + unique_name(name);
  register_storage(p);
  return Parameter(p);
}

LookupParameter ParameterCollection::add_lookup_parameters(unsigned n, const Dim& d, const std::string& name,
                                                           Device* device) {
  return add_lookup_parameters(n, d, ParameterInitGlorot(true), name, device);
}
LookupParameter ParameterCollection::add_lookup_parameters(unsigned n, const Dim& d, const ParameterInit& init,
                                                           const std::string& name, Device* device) {
  check_name(name, "add_lookup_parameters");
  if (d.bd != 1) throw std::invalid_argument("add_lookup_parameters: rows cannot be batched, got " + d.str());
  // Empty tables too: DyNet programs make them for features they turn off (uuparser's POS embeddings of
  // size 0) and never look them up.
  Dim all_dim = d;
  all_dim.add_dim(n);
  const size_t total = all_dim.checked_size("add_lookup_parameters");
  auto p = std::make_shared<LookupParameterStorage>();
  p->name = name;  // the unique name is taken once nothing can fail any more
  p->dim = d;
  p->all_dim = all_dim;
  Device* dev = device ? device : default_device ? default_device : cpu_device();
  const auto [values, grads] = allocate_values_and_grads(*p, total, "add_lookup_parameters", all_dim, dev);
  p->all_values = Tensor(p->all_dim, values, dev, DeviceMempool::PS);
  p->all_grads = Tensor(p->all_dim, grads, dev, DeviceMempool::PS);
  p->initialize_lookups();
  initialize_on(init, p->all_values);
  p->name = name_ + unique_name(name);
  register_storage(p);
  return LookupParameter(p);
}

ParameterCollection ParameterCollection::add_subcollection(const std::string& name, float weight_decay_lambda) {
  check_name(name, "add_subcollection");
  std::vector<std::shared_ptr<ParameterCollectionStorage>> anc = ancestors_;
  anc.push_back(storage_);
  return ParameterCollection(name_ + unique_name(name) + "/", std::move(anc), weight_decay_lambda,
                             storage_->weight_decay);
}

namespace {
template <class Storage>
std::shared_ptr<Storage> find_by_name(const std::vector<std::shared_ptr<Storage>>& list, const std::string& name,
                                      const char* what, const std::string& collection) {
  for (const auto& p : list)
    if (p->name == name) return p;
  throw std::runtime_error(std::string("No existing ") + what + " " + name + " found in " + collection);
}
}  // namespace
std::shared_ptr<ParameterStorage> ParameterCollection::get_parameter_storage(const std::string& name) const {
  return find_by_name(storage_->params, name, "parameter", name_);
}
std::shared_ptr<LookupParameterStorage> ParameterCollection::get_lookup_parameter_storage(
    const std::string& name) const {
  return find_by_name(storage_->lookup_params, name, "lookup parameter", name_);
}
ParameterCollectionStorage& ParameterCollection::get_storage() { return *storage_; }
const ParameterCollectionStorage& ParameterCollection::get_storage() const { return *storage_; }

size_t ParameterCollection::parameter_count() const {
  size_t c = 0;
  for (auto& p : storage_->all_params) c += p->size();
  return c;
}
size_t ParameterCollection::updated_parameter_count() const {
  size_t c = 0;
  for (auto& p : storage_->all_params)
    if (p->updated) c += p->size();
  return c;
}
void ParameterCollection::set_updated_param(const Parameter* p, bool status) { p->get_storage().updated = status; }
void ParameterCollection::set_updated_lookup_param(const LookupParameter* p, bool status) {
  p->get_storage().updated = status;
}
bool ParameterCollection::is_updated_param(const Parameter* p) { return p->get_storage().updated; }
bool ParameterCollection::is_updated_lookup_param(const LookupParameter* p) { return p->get_storage().updated; }

float ParameterCollection::gradient_l2_norm() const {
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());
  double s = 0;
  for (auto& p : storage_->all_params) {
    float x;
    p->g_squared_l2norm(&x);
    s += x;
  }
  return static_cast<float>(std::sqrt(s));
}
void ParameterCollection::reset_gradient() {
  exclusively([&] {
    for (auto& p : storage_->all_params) p->clear_grad();
  });
}
void ParameterCollection::project_weights(float radius) {
  std::unique_lock<detail::ParameterLock> lock(detail::parameter_lock());
  for (auto& p : storage_->params) {
    float s;
    p->squared_l2norm(&s);
    if (s > radius * radius) p->scale_parameters(radius / std::sqrt(s));
  }
}
void ParameterCollection::set_weight_decay_lambda(float lambda) {
  if (lambda < 0 || !(lambda < 1))
    throw std::invalid_argument("set_weight_decay_lambda: lambda must be in [0, 1), got " + std::to_string(lambda));
  storage_->weight_decay->set_lambda(lambda);
}
float ParameterCollection::get_weight_decay_lambda() const { return storage_->weight_decay->get_lambda(); }
L2WeightDecay& ParameterCollection::get_weight_decay() { return *storage_->weight_decay; }
}  // namespace dynet
