#include "dynet/training.h"

#include "core/device.h"
#include "train/device_rules.h"
#include "core/param_lock.h"
#include "kernels/cpu/clones.h"

#include <Eigen/Core>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace dynet {

namespace {

using Arr = Eigen::Map<Eigen::ArrayXf>;
using CArr = Eigen::Map<const Eigen::ArrayXf>;

// The i-th tensor of update_rule's values as an array (all have values[0]'s size).
Arr arr(const std::vector<Tensor*>& values, size_t i) {
  return Arr(values[i]->v, static_cast<Eigen::Index>(values[0]->d.size()));
}
CArr grad_of(const std::vector<Tensor*>& values) { return CArr(values[1]->v, values[1]->d.size()); }

void scale_tensor(Tensor& t, float a) { Arr(t.v, static_cast<Eigen::Index>(t.d.size())) *= a; }

// Σ v² in 16 float lanes, folded into a double every chunk so that large tables keep their precision.
// Inf when a square overflows the float lanes (see gradient_scale). The lanes are a GCC vector type:
// written as a float[16] array, GCC vectorized the loop across chunks instead, with permutes and scalar
// adds (0.5% of a hand-batched BiLSTM step, 0.2-0.27% as a vector pass).
typedef float Lanes16 __attribute__((vector_size(64)));
DYNET_CLONES double sum_of_squares(const float* v, size_t n) {
  constexpr size_t kLanes = 16, kChunk = 4096;
  double total = 0;
  for (size_t start = 0; start < n; start += kChunk) {
    const size_t end = std::min(n, start + kChunk);
    Lanes16 lanes = {};
    size_t k = start;
    for (; k + kLanes <= end; k += kLanes) {
      Lanes16 x;
      std::memcpy(&x, v + k, sizeof x);
      lanes += x * x;
    }
    for (; k < end; ++k) lanes[0] += v[k] * v[k];
    for (size_t l = 0; l < kLanes; ++l) total += lanes[l];
  }
  return total;
}

// Σ v² in double: finite for any finite floats.
double sum_of_squares_exact(const float* v, size_t n) {
  double total = 0;
  for (size_t k = 0; k < n; ++k) total += double(v[k]) * v[k];
  return total;
}

// Adam's step on n values: m = β1·m + c1·g, v = β2·v + c2·g², x -= m / (√v + ε) · scale. A plain loop
// in ISA clones (Eigen is built for SSE2 here; this file is compiled with -fno-math-errno so that the
// square root vectorizes): one pass over the four arrays.
DYNET_CLONES void adam_step(float* __restrict x, float* __restrict m, float* __restrict v, const float* __restrict g,
                            size_t n, float beta_1, float c1, float beta_2, float c2, float epsilon, float scale) {
  for (size_t k = 0; k < n; ++k) {
    m[k] = m[k] * beta_1 + g[k] * c1;
    v[k] = v[k] * beta_2 + g[k] * g[k] * c2;
    x[k] -= m[k] / (std::sqrt(v[k]) + epsilon) * scale;
  }
}

// The host update with subnormal numbers flushed: MXCSR's flush-to-zero (results) and denormals-are-zero
// (operands) bits for the scope; after it the caller's control bits are back and the status flags the
// update raised stay. Optimizer state decays geometrically (Adam's v by β2 each step, momentum by μ) and
// squares tiny gradients, so long runs fill it with subnormals; an Intel core takes a microcode assist for
// each subnormal result (scripts/demo on a Xeon: its Adam updates took twice as long, its tenth epoch a
// third longer).
class SubnormalsFlushed {
 public:
  explicit SubnormalsFlushed(bool on) {
#if defined(__SSE__)
    if (!on) return;
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
    active_ = true;
#else
    (void)on;
#endif
  }
  ~SubnormalsFlushed() {
#if defined(__SSE__)
    if (active_) _mm_setcsr(saved_ | (_mm_getcsr() & kStatusFlags));
#endif
  }
  SubnormalsFlushed(const SubnormalsFlushed&) = delete;
  SubnormalsFlushed& operator=(const SubnormalsFlushed&) = delete;

 private:
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040, kStatusFlags = 0x003F;
  unsigned saved_ = 0;
  bool active_ = false;
};

// The ε from which a rule's update is the same with subnormal state and gradients read as zero. Where ε
// is added to a state under the square root (Adagrad, RMSProp, Adadelta), a subnormal (< FLT_MIN) is
// below half an ulp of it from 2^24·FLT_MIN on; where ε is added to the root (Adam), a subnormal's root
// (< √FLT_MIN) is from 2^24·√FLT_MIN on. The numerators they flush (m, g) then move a value by less
// than FLT_MIN / ε: nothing, unless the value is itself that small. With ε = 0 a subnormal state can be
// the whole denominator, so those updates run with the default environment.
constexpr float kEpsilonInsideRoot = 2e-31f, kEpsilonOutsideRoot = 2e-12f;

bool all_finite(const float* v, size_t n) {
  return std::isfinite(sum_of_squares(v, n)) || std::isfinite(sum_of_squares_exact(v, n));
}

// Whether the gradient a parameter holds is finite everywhere (true without a gradient).
bool gradient_finite(const ParameterStorage& p) { return !p.nonzero_grad || all_finite(p.g.v, p.dim.size()); }
bool gradient_finite(const LookupParameterStorage& p) {
  if (!p.nonzero_grad) return true;
  if (p.all_updated) return all_finite(p.all_grads.v, p.all_dim.size());
  for (size_t r : p.non_zero_grads)
    if (!all_finite(p.grads[r].v, p.dim.size())) return false;
  return true;
}

// Trainers change values and gradients of the whole collection: they exclude every graph's forward
// and backward (core/param_lock.h).
using ExclusiveParameters = std::unique_lock<detail::ParameterLock>;
using SharedParameters = std::shared_lock<detail::ParameterLock>;

std::string str(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

void check_learning_rate(const char* where, real lr) {
  if (!(lr >= 0) || std::isinf(lr))
    throw std::invalid_argument(std::string(where) + ": the learning rate must be finite and >= 0, got " + str(lr));
}
void check_range(const char* where, const char* name, float x, float lo, float hi, bool hi_open) {
  if (!(x >= lo && (hi_open ? x < hi : x <= hi)))
    throw std::invalid_argument(std::string(where) + ": " + name + " must be in [" + str(lo) + ", " + str(hi) +
                                (hi_open ? ")" : "]") + ", got " + str(x));
}
void check_non_negative(const char* where, const char* name, float x) {
  if (!(x >= 0) || std::isinf(x))
    throw std::invalid_argument(std::string(where) + ": " + name + " must be finite and >= 0, got " + str(x));
}

// The cyclical schedule's settings besides learning_rate_min (checked as the trainer's learning rate).
void check_schedule(const char* where, float lr_max, float step_size, float gamma) {
  check_learning_rate(where, lr_max);
  if (!(step_size > 0) || std::isinf(step_size))
    throw std::invalid_argument(std::string(where) + ": step_size must be finite and > 0, got " + str(step_size));
  check_non_negative(where, "gamma", gamma);
}

// Position on the triangular cyclical schedule after `it` earlier steps (CyclicalSGDTrainer).
float cyclical_rate(float e_min, float e_max, float step_size, float gamma, unsigned it) {
  const float t = static_cast<float>(it);
  const float cycle = std::floor(1 + t / (2 * step_size));
  const float x = std::abs(t / step_size - 2 * cycle + 1);
  return e_min + (1 - x > 0 ? (e_max - e_min) * (1 - x) * static_cast<float>(std::pow(gamma, it)) : 0.f);
}

// ---- the trainer text format ----

[[noreturn]] void format_error(const std::string& msg) { throw std::runtime_error("Trainer::populate: " + msg); }

// Floats as DyNet writes them (scientific, sign, 8 decimals); restores the stream's format after.
class TextFormat {
 public:
  explicit TextFormat(std::ostream& os) : os_(os), flags_(os.flags()), precision_(os.precision()) {
    os.precision(8);
    os << std::scientific << std::showpos;
  }
  ~TextFormat() {
    os_.flags(flags_);
    os_.precision(precision_);
  }

 private:
  std::ostream& os_;
  std::ios::fmtflags flags_;
  std::streamsize precision_;
};

void write_record(std::ostream& os, const char* tag, const Tensor& t) {
  const size_t n = t.d.size();
  os << tag << ' ' << n << ' ';
  for (size_t k = 0; k < n; ++k) os << t.v[k] << ' ';
  os << '\n';
}

std::string next_line(std::istream& is, const std::string& what) {
  std::string line;
  if (!std::getline(is, line)) format_error("the input ends before " + what);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// All of w as a number (strtof for float, strtod for double); false when anything is left over.
template <class T>
bool parse_whole(const std::string& w, T* x) {
  char* end = nullptr;
  if constexpr (std::is_same_v<T, float>)
    *x = std::strtof(w.c_str(), &end);
  else
    *x = std::strtod(w.c_str(), &end);
  return end != w.c_str() && *end == '\0';
}

// Whitespace-separated tokens of one line, parsed strictly.
class Tokens {
 public:
  Tokens(std::string line, std::string what) : in_(std::move(line)), what_(std::move(what)) {}
  std::string word(const char* name) {
    std::string w;
    if (!(in_ >> w)) format_error(what_ + ": missing " + name);
    return w;
  }
  void expect(const std::string& tag) {
    const std::string w = word(tag.c_str());
    if (w != tag) format_error("expected " + tag + " in " + what_ + ", found '" + w + "'");
  }
  double number(const char* name) { return parsed<double>(name); }
  float real_number(const char* name) { return parsed<float>(name); }
  unsigned long count(const char* name) {
    const std::string w = word(name);
    char* end = nullptr;
    const long long x = std::strtoll(w.c_str(), &end, 10);
    if (end == w.c_str() || *end != '\0' || x < 0)
      format_error(what_ + ": " + name + " is not a non-negative integer: '" + w + "'");
    return static_cast<unsigned long>(x);
  }
  bool flag(const char* name) {
    const unsigned long x = count(name);
    if (x > 1) format_error(what_ + ": " + name + " must be 0 or 1, got " + std::to_string(x));
    return x == 1;
  }
  void end() {
    std::string extra;
    if (in_ >> extra) format_error(what_ + ": unexpected '" + extra + "' at the end of the line");
  }

 private:
  template <class T>
  T parsed(const char* name) {
    const std::string w = word(name);
    T x;
    if (!parse_whole(w, &x)) format_error(what_ + ": " + name + " is not a number: '" + w + "'");
    return x;
  }

  std::istringstream in_;
  std::string what_;
};

// "<tag> <n> v1 ... vn" into out[0..n).
void read_record(std::istream& is, const char* tag, size_t expected, const std::string& what, float* out) {
  Tokens t(next_line(is, what), what);
  t.expect(tag);
  const unsigned long n = t.count("the value count");
  if (n != expected)
    format_error(what + " has " + std::to_string(n) + " values, but the parameter has " + std::to_string(expected));
  for (size_t k = 0; k < n; ++k) out[k] = t.real_number("a value");
  t.end();
}

std::string param_what(const char* kind, size_t i, const std::string& name) {
  return std::string(kind) + " " + std::to_string(i) + " (" + name + ")";
}

// Parses "<tag> np nlp" and checks both fit the collection.
std::pair<size_t, size_t> parse_header(const std::string& line, const std::string& tag,
                                       const ParameterCollectionStorage& s) {
  Tokens t(line, "the " + tag + " header");
  t.expect(tag);
  const unsigned long np = t.count("the parameter count"), nlp = t.count("the lookup parameter count");
  t.end();
  if (np > s.params.size())
    format_error(tag + " covers " + std::to_string(np) + " parameters, but the collection has " +
                 std::to_string(s.params.size()));
  if (nlp > s.lookup_params.size())
    format_error(tag + " covers " + std::to_string(nlp) + " lookup parameters, but the collection has " +
                 std::to_string(s.lookup_params.size()));
  return {np, nlp};
}
std::pair<size_t, size_t> read_header(std::istream& is, const std::string& tag, const ParameterCollectionStorage& s) {
  return parse_header(next_line(is, "the " + tag + " header"), tag, s);
}

// A number of a trainer's settings line.
double setting(std::istream& is, const std::string& trainer, const char* name) {
  std::string w;
  if (!(is >> w)) format_error(trainer + " settings: missing " + name);
  double x;
  if (!parse_whole(w, &x)) format_error(trainer + " settings: " + name + " is not a number: '" + w + "'");
  return x;
}
void settings_end(std::istream& is, const std::string& trainer) {
  std::string extra;
  if (is >> extra) format_error(trainer + " settings: unexpected '" + extra + "'");
}
unsigned setting_count(std::istream& is, const std::string& trainer, const char* name) {
  const double x = setting(is, trainer, name);
  if (!(x >= 0 && x <= 4294967295.0) || x != std::floor(x))
    format_error(trainer + " settings: " + name + " must be a non-negative integer, got " + str(x));
  return static_cast<unsigned>(x);
}

}  // namespace

std::ostream& operator<<(std::ostream& os, MovingAverage m) {
  switch (m) {
    case MovingAverage::None: return os << "None";
    case MovingAverage::Cumulative: return os << "Cumulative";
    case MovingAverage::Exponential: return os << "Exponential";
  }
  return os;
}
std::istream& operator>>(std::istream& is, MovingAverage& m) {
  std::string w;
  if (!(is >> w)) return is;
  if (w == "None")
    m = MovingAverage::None;
  else if (w == "Cumulative")
    m = MovingAverage::Cumulative;
  else if (w == "Exponential")
    m = MovingAverage::Exponential;
  else
    is.setstate(std::ios::failbit);
  return is;
}

// ---------------- Trainer ----------------

Trainer::Trainer(ParameterCollection& m, real lr) : learning_rate(lr), model(&m) {
  check_learning_rate("Trainer", lr);
}

Trainer::~Trainer() {
  if (pending_check_.device) {
    double sq;
    try {
      pending_check_.device->collect(pending_check_.ticket, &sq, true);  // frees its slot
    } catch (const std::exception&) {  // (a destructor does not throw; the device reported its error before)
    }
  }
  for (const NormSum& s : norm_sums_) s.device->deallocate(s.sum);
}

// Parameters on devices: their gradients are complete once the devices' queued work is done, and rules
// without device kernels (EGTrainer, custom update_rule overrides) then read their managed memory.
// Once per update, for each device that holds parameters.
void Trainer::synchronize_parameter_devices() const {
  const ParameterCollectionStorage& s = model->get_storage();
  std::vector<Device*> done;
  auto sync = [&done](Device* d) {
    if (detail::host_addressable(d) || std::find(done.begin(), done.end(), d) != done.end()) return;
    d->synchronize();
    done.push_back(d);
  };
  for (const auto& p : s.params) sync(p->values.device);
  for (const auto& p : s.lookup_params) sync(p->all_values.device);
}

float Trainer::clip_gradients() {
  ExclusiveParameters lock(detail::parameter_lock());
  settle_gradient_check();
  synchronize_parameter_devices();
  return gradient_scale();
}

// Each parameter under its mutex: during asynchronous training, graphs on other threads may be
// adding to the gradients while this update holds only the shared side of the parameter lock.
double Trainer::queue_squared_norms(double (*sum)(const float*, size_t)) {
  double sq = 0;
  const ParameterCollectionStorage& s = model->get_storage();
  // A device sums its gradients in double with one kernel over all of them (lookup tables' rows apart) into
  // one double of its memory that is read once at the end: one wait per device, not one per parameter.
  for (NormSum& n : norm_sums_) n.used = false;
  auto device_sum = [this](Device* d) -> NormSum& {
    auto it = std::find_if(norm_sums_.begin(), norm_sums_.end(), [d](const NormSum& n) { return n.device == d; });
    if (it == norm_sums_.end())
      it = norm_sums_.insert(it, {d, static_cast<double*>(d->allocate(sizeof(double))), false, {}, {}});
    if (!it->used) {
      d->fill(reinterpret_cast<float*>(it->sum), 2, 0.f);  // (+0.f twice: the bits of +0.0)
      it->xs.clear();
      it->ns.clear();
    }
    it->used = true;
    return *it;
  };
  auto add = [&](const Tensor& t, const float* v, size_t n) {
    if (detail::host_addressable(t.device)) {
      sq += sum(v, n);
      return;
    }
    NormSum& s = device_sum(t.device);
    s.xs.push_back(v);
    s.ns.push_back(n);
  };
  for (const auto& p : s.params) {
    std::lock_guard<std::mutex> lock(p->grad_mutex);
    if (p->nonzero_grad) add(p->g, p->g.v, p->dim.size());
  }
  for (const auto& p : s.lookup_params) {
    std::lock_guard<std::mutex> lock(p->grad_mutex);
    if (!p->nonzero_grad) continue;
    if (p->all_updated) {
      add(p->all_grads, p->all_grads.v, p->all_dim.size());
    } else if (Device* d = p->all_grads.device; !detail::host_addressable(d)) {  // one kernel, not one per row
      const std::vector<unsigned> rows(p->non_zero_grads.begin(), p->non_zero_grads.end());
      d->add_squared_norm_rows(p->all_grads.v, rows.data(), rows.size(), p->dim.size(), device_sum(d).sum);
    } else {
      for (size_t r : p->non_zero_grads) add(p->all_grads, p->grads[r].v, p->dim.size());
    }
  }
  for (NormSum& n : norm_sums_)
    if (n.used) n.device->add_squared_norms(n.xs.data(), n.ns.data(), n.xs.size(), n.sum);
  return sq;
}

double Trainer::device_squared_norms() {
  double sq = 0;
  for (NormSum& n : norm_sums_) {
    if (!n.used) continue;
    double device_sq = 0;
    n.device->copy_to_host(&device_sq, n.sum, sizeof(double));
    sq += device_sq;
  }
  return sq;
}

double Trainer::squared_gradient_norm(double (*sum)(const float*, size_t)) {
  const double host_sq = queue_squared_norms(sum);
  return host_sq + device_squared_norms();
}

float Trainer::scale_for_norm(double squared_norm, bool clipping, float threshold) {
  const float norm = static_cast<float>(std::sqrt(squared_norm));
  if (!clipping || !(norm > threshold)) return 1.f;
  ++clips;
  ++clips_since_status;
  return threshold / norm;
}

float Trainer::gradient_scale(const double** deferred_norm) {
  // Computed whether or not clipping is on: a NaN or Inf gradient must never reach the values (a
  // finite sum of squares in double means every gradient value is finite).
  double sq = queue_squared_norms(sum_of_squares);
  if (deferred_norm) {  // every gradient is on one device: its sum is the whole norm
    const auto n = std::find_if(norm_sums_.begin(), norm_sums_.end(), [](const NormSum& n) { return n.used; });
    if (n == norm_sums_.end()) return 1.f;  // no gradient at all
    const unsigned ticket = n->device->read_later(n->sum, sizeof(double));
    if (ticket != Device::kNoTicket) {
      pending_check_ = {n->device, ticket, clipping_enabled, clip_threshold};
      *deferred_norm = n->sum;
      return 1.f;
    }
  }
  sq += device_squared_norms();
  if (!std::isfinite(sq)) sq = squared_gradient_norm(sum_of_squares_exact);  // float lanes overflowed?
  if (!std::isfinite(sq)) refuse_non_finite_gradients(sq);
  return scale_for_norm(sq, clipping_enabled, clip_threshold);
}

Device* Trainer::deferrable_device(bool asynchronous) const {
  if (asynchronous || reducer_ || !device_rules_only_ || ma_mode != MovingAverage::None) return nullptr;
  const ParameterCollectionStorage& s = model->get_storage();
  for (const auto& decay : s.weight_decays)
    if (decay->get_lambda() != 0) return nullptr;
  Device* d = nullptr;
  auto same = [&d](Device* p) { return (d ? d : d = p) == p; };
  for (const auto& p : s.params)
    if (!same(p->values.device)) return nullptr;
  for (const auto& p : s.lookup_params)
    if (!same(p->all_values.device)) return nullptr;
  return d && !detail::host_addressable(d) ? d : nullptr;
}

void Trainer::settle_gradient_check() {
  const PendingCheck check = pending_check_;
  if (!check.device) return;
  pending_check_ = {};
  double sq = 0;
  check.device->collect(check.ticket, &sq, true);
  if (std::isfinite(sq)) {
    scale_for_norm(sq, check.clipping, check.threshold);
    return;
  }
  --updates;  // its kernels changed nothing
  --updates_since_status;
  std::ostringstream msg;
  msg << "Magnitude of gradient is bad: " << std::sqrt(sq) << " (NaN or Inf in a gradient of the previous update, on "
      << check.device->name << ", whose norm the device checks and the host reads with the next update, so that "
      << "updates wait for nothing). That update changed no value or trainer state, nor did this one; all gradients "
         "were cleared, and the next backward() and update() start afresh.";
  deferred_refusal_ = msg.str();
}

void Trainer::clear_all_gradients() {
  for (const auto& p : model->get_storage().all_params) {
    std::lock_guard<std::mutex> lock(p->grad_mutex);
    p->clear_grad();
  }
}

void Trainer::refuse_non_finite_gradients(double squared_norm) {
  const ParameterCollectionStorage& s = model->get_storage();
  std::vector<std::string> bad;
  for (const auto& p : s.params) {
    std::lock_guard<std::mutex> lock(p->grad_mutex);
    if (!gradient_finite(*p)) bad.push_back(p->name);
  }
  for (const auto& p : s.lookup_params) {
    std::lock_guard<std::mutex> lock(p->grad_mutex);
    if (!gradient_finite(*p)) bad.push_back(p->name);
  }
  clear_all_gradients();
  std::ostringstream msg;
  msg << "Magnitude of gradient is bad: " << std::sqrt(squared_norm) << " (NaN or Inf in the gradient of ";
  for (size_t k = 0; k < bad.size() && k < 5; ++k) msg << (k ? ", " : "") << bad[k];
  if (bad.size() > 5) msg << " and " << bad.size() - 5 << " more";
  msg << "). Trainer::update changed no value or trainer state and cleared all gradients; the next "
         "backward() and update() start afresh.";
  throw std::runtime_error(msg.str());
}

// ---- DyNet's extension interface, implemented for the state shadow_state() lists ----

unsigned Trainer::alloc_impl() {
  for (const ShadowState& st : shadow_state()) allocate_shadow_parameters(*model, aux_allocated, *st.params);
  return static_cast<unsigned>(model->parameters_list().size());
}

unsigned Trainer::alloc_lookup_impl() {
  for (const ShadowState& st : shadow_state())
    allocate_shadow_lookup_parameters(*model, aux_allocated_lookup, *st.lookup_params);
  return static_cast<unsigned>(model->lookup_parameters_list().size());
}

void Trainer::update_rule(real, const std::vector<Tensor*>&) {
  throw std::logic_error(
      "Trainer::update_rule: this trainer overrides neither update_rule nor update_params/update_lookup_params");
}

void Trainer::update_params(real gscale, size_t idx) {
  ParameterStorage& p = *model->get_storage().params[idx];
  values_.assign({&p.values, &p.g});
  for (const ShadowState& st : state_) values_.push_back(&(*st.params)[idx].h);
  param_weight_decay = p.current_weight_decay();
  update_rule(gscale, values_);
}

void Trainer::update_lookup_params(real gscale, size_t idx, size_t lidx) {
  LookupParameterStorage& p = *model->get_storage().lookup_params[idx];
  values_.assign({&p.values[lidx], &p.grads[lidx]});
  for (const ShadowState& st : state_) values_.push_back(&(*st.lookup_params)[idx].h[lidx]);
  param_weight_decay = p.current_weight_decay();
  update_rule(gscale, values_);
}

void Trainer::update_lookup_params(real gscale, size_t idx) {
  LookupParameterStorage& p = *model->get_storage().lookup_params[idx];
  values_.assign({&p.all_values, &p.all_grads});
  for (const ShadowState& st : state_) values_.push_back(&(*st.lookup_params)[idx].all_h);
  param_weight_decay = p.current_weight_decay();
  update_rule(gscale, values_);
}

// ---- the update loop ----

void Trainer::allocate_state() {
  // The list refers to the trainer's own members, so it is fetched once (not per parameter or row).
  if (!state_known_) {
    state_ = shadow_state();
    state_known_ = true;
  }
  const ParameterCollectionStorage& s = model->get_storage();
  if (aux_allocated < s.params.size()) aux_allocated = alloc_impl();
  if (aux_allocated_lookup < s.lookup_params.size()) aux_allocated_lookup = alloc_lookup_impl();
}

// Both hold the parameter's mutex while they read its gradient and write its values and state: during
// asynchronous training, graphs on other threads may be adding gradients and copying the values, and
// other trainers updating the parameter. (Under the exclusive parameter lock it is never contended.)
// An asynchronous update checks the gradient again here, since a non-finite one may have arrived
// after gradient_scale() looked: the parameter is then left alone, its gradient cleared and its name
// added to *late.
unsigned Trainer::update_parameter(size_t index, float gscale, std::vector<std::string>* late) {
  ParameterStorage& p = *model->get_storage().params[index];
  std::lock_guard<std::mutex> lock(p.grad_mutex);
  unsigned ran = 0;
  if (late && !gradient_finite(p)) {
    late->push_back(p.name);
  } else if (p.nonzero_grad || !zero_gradient_is_noop()) {  // without a gradient g is all zero
    DeviceClearingUpdate clearing;
    update_params(gscale, index);
    if (clearing.done()) p.nonzero_grad = false;  // zeroed by the update's kernel
    ran = clearing.done() ? kRanOnDevice : kRanOnHost;
  }
  p.clear_grad();
  return ran;
}

unsigned Trainer::update_lookup_parameter(size_t index, float gscale, std::vector<std::string>* late) {
  LookupParameterStorage& p = *model->get_storage().lookup_params[index];
  std::lock_guard<std::mutex> lock(p.grad_mutex);
  DeviceClearingUpdate clearing;
  bool ran = false;
  if (late && !gradient_finite(p)) {
    late->push_back(p.name);
  } else if (!sparse_updates_enabled || p.all_updated) {
    ran = p.nonzero_grad || !zero_gradient_is_noop();
    if (ran) update_lookup_params(gscale, index);
  } else {
    ran = !p.non_zero_grads.empty();
    auto next = p.non_zero_grads.begin();
    if (next != p.non_zero_grads.end() && !detail::host_addressable(p.all_values.device)) {
      // On a device the built-in rules update all the rows with one kernel (see DeviceRowUpdate).
      DeviceRowUpdate all_rows({p.non_zero_grads.begin(), p.non_zero_grads.end()}, p.dim.size());
      update_lookup_params(gscale, index, *next);
      next = all_rows.done() ? p.non_zero_grads.end() : std::next(next);
    }
    for (; next != p.non_zero_grads.end(); ++next) update_lookup_params(gscale, index, *next);
  }
  if (clearing.done()) {  // the update's kernel zeroed every gradient row it read: all that are nonzero
    p.non_zero_grads.clear();
    p.nonzero_grad = false;
  }
  p.clear_grad();
  return !ran ? 0 : clearing.done() ? kRanOnDevice : kRanOnHost;
}

void Trainer::update() { update_listed(nullptr, nullptr); }

void Trainer::update(const std::vector<unsigned>& updated_params, const std::vector<unsigned>& updated_lookup_params) {
  const ParameterCollectionStorage& s = model->get_storage();
  for (size_t i : updated_params)
    if (i >= s.params.size())
      throw std::invalid_argument("Trainer::update: parameter index " + std::to_string(i) +
                                  " out of range (the collection has " + std::to_string(s.params.size()) +
                                  " parameters)");
  for (size_t i : updated_lookup_params)
    if (i >= s.lookup_params.size())
      throw std::invalid_argument("Trainer::update: lookup parameter index " + std::to_string(i) +
                                  " out of range (the collection has " + std::to_string(s.lookup_params.size()) +
                                  " lookup parameters)");
  update_listed(&updated_params, &updated_lookup_params);
}

void Trainer::update_listed(const std::vector<unsigned>* params, const std::vector<unsigned>* lookup_params) {
  const std::lock_guard<std::mutex> turn(update_turn_);
  if (!AsynchronousTraining::on_this_thread()) {
    ExclusiveParameters lock(detail::parameter_lock());
    apply_update(params, lookup_params, nullptr);
    return;
  }
  // Asynchronous (dynet/model.h): graphs and other updates go on meanwhile; the shared side still
  // keeps out exclusive updates and wholesale changes (loaders, set_value, reset_gradient...).
  SharedParameters lock(detail::parameter_lock());
  std::string refused;
  if (reducer_) refused = "a GradientReducer (MPI) is attached to the trainer";
  if (ma_params_swapped) refused = "the weights are swapped to their moving average";
  for (const auto& decay : model->get_storage().weight_decays)
    if (decay->get_lambda() != 0)
      refused = "the collection has L2 weight decay (lambda " + str(decay->get_lambda()) +
                "), whose one scale every parameter node reads";
  if (!refused.empty())
    throw std::runtime_error("Trainer::update: an asynchronous update (AsynchronousTraining on this thread) cannot "
                             "run while " + refused + "; nothing was changed");
  std::vector<std::string> late;
  apply_update(params, lookup_params, &late);
  if (late.empty()) return;
  std::ostringstream msg;
  msg << "Trainer::update: the gradient of ";
  for (size_t k = 0; k < late.size(); ++k) msg << (k ? ", " : "") << late[k];
  msg << " turned NaN or Inf during this asynchronous update (a backward on another thread); "
      << (late.size() > 1 ? "those parameters were left unchanged and their gradients"
                          : "that parameter was left unchanged and its gradient")
      << " cleared; the others were updated.";
  throw std::runtime_error(msg.str());
}

// The update under the parameter lock (either side; see update_listed): all parameters (params null:
// frozen ones only lose their gradients) or the listed ones.
void Trainer::apply_update(const std::vector<unsigned>* params, const std::vector<unsigned>* lookup_params,
                           std::vector<std::string>* late) {
  settle_gradient_check();
  if (!deferred_refusal_.empty()) {
    clear_all_gradients();
    throw std::runtime_error(std::exchange(deferred_refusal_, {}));
  }
  if (reducer_) {
    // The reducer reads and writes the gradients from the host (device parameters are in managed memory).
    synchronize_parameter_devices();
    reducer_->reduce(*model, sparse_updates_enabled);
  }
  const SubnormalsFlushed flushed(flushes_subnormals());
  Device* const defer_on = deferrable_device(late != nullptr);
  const double* deferred_norm = nullptr;
  const float gscale = gradient_scale(defer_on ? &deferred_norm : nullptr);
  std::optional<DeviceUpdateBatch> batch;  // (an asynchronous update holds each parameter's mutex only meanwhile)
  if (!late) batch.emplace();
  if (deferred_norm) batch->check_norm(defer_on, deferred_norm, clipping_enabled, clip_threshold);
  unswap_before_update();
  allocate_state();
  begin_update();
  unsigned ran = 0;  // kRanOnDevice | kRanOnHost
  const ParameterCollectionStorage& s = model->get_storage();
  if (params) {
    for (size_t i : *params) ran |= update_parameter(i, gscale, late);
    for (size_t i : *lookup_params) ran |= update_lookup_parameter(i, gscale, late);
  } else {
    // Frozen parameters' gradients are dropped too, so they do not pile up across updates (and
    // inflate the clipping norm of every later update).
    for (size_t i = 0; i < s.params.size(); ++i) {
      if (s.params[i]->updated) {
        ran |= update_parameter(i, gscale, late);
      } else {
        std::lock_guard<std::mutex> lock(s.params[i]->grad_mutex);
        s.params[i]->clear_grad();
      }
    }
    for (size_t i = 0; i < s.lookup_params.size(); ++i) {
      if (s.lookup_params[i]->updated) {
        ran |= update_lookup_parameter(i, gscale, late);
      } else {
        std::lock_guard<std::mutex> lock(s.lookup_params[i]->grad_mutex);
        s.lookup_params[i]->clear_grad();
      }
    }
  }
  if (batch) batch->flush();
  device_rules_only_ = ran == kRanOnDevice;
  finish_update();
}

void Trainer::finish_update() {
  // The average takes in the weights as the next forward sees them, i.e. after this update's
  // weight-decay step (DyNet averaged the stored values before it; the same without weight decay).
  const bool average_now =
      ma_mode != MovingAverage::None && static_cast<unsigned long long>(updates) % ma_update_freq == 0;
  ++updates;
  ++updates_since_status;
  step_weight_decay();
  if (average_now) update_moving_average();
  end_update();
}

// ---- weight decay ----

void Trainer::step_weight_decay() {
  for (const auto& decay : model->get_storage().weight_decays) {
    decay->update_weight_decay();
    if (decay->parameters_need_rescaled()) fold_weight_decay(*decay);
  }
}

void Trainer::fold_weight_decay(L2WeightDecay& decay) {
  const float scale = decay.current_weight_decay();
  const ParameterCollectionStorage& s = model->get_storage();
  // Frozen parameters too (DyNet skipped them, which changed their effective values).
  for (size_t i = 0; i < s.params.size(); ++i) {
    if (s.params[i]->weight_decay.get() != &decay) continue;
    s.params[i]->scale_parameters(scale);
    if (ma_params_swapped && i < ma_saved_p.size()) scale_tensor(ma_saved_p[i].h, scale);
  }
  for (size_t i = 0; i < s.lookup_params.size(); ++i) {
    if (s.lookup_params[i]->weight_decay.get() != &decay) continue;
    s.lookup_params[i]->scale_parameters(scale);
    if (ma_params_swapped && i < ma_saved_lp.size()) scale_tensor(ma_saved_lp[i].all_h, scale);
  }
  decay.reset_weight_decay();
}

void Trainer::rescale_and_reset_weight_decay() {
  ExclusiveParameters lock(detail::parameter_lock());
  for (const auto& decay : model->get_storage().weight_decays)
    if (decay->current_weight_decay() != 1.f) fold_weight_decay(*decay);
}

// ---- moving averages ----

void Trainer::exponential_moving_average(float beta, unsigned update_freq) {
  if (updates > 0)
    throw std::runtime_error("Trainer::exponential_moving_average must be called before the first update");
  check_range("Trainer::exponential_moving_average", "beta", beta, 0, 1, true);
  if (update_freq == 0)
    throw std::invalid_argument("Trainer::exponential_moving_average: update_freq must be > 0");
  ema_beta = beta;
  ma_update_freq = update_freq;
  ma_mode = MovingAverage::Exponential;
}

void Trainer::cumulative_moving_average(unsigned update_freq) {
  if (updates > 0)
    throw std::runtime_error("Trainer::cumulative_moving_average must be called before the first update");
  if (update_freq == 0) throw std::invalid_argument("Trainer::cumulative_moving_average: update_freq must be > 0");
  ma_update_freq = update_freq;
  ma_mode = MovingAverage::Cumulative;
}

namespace {
// ma ← the average with w = values × scale taken in (n weights averaged so far).
void average_in(MovingAverage mode, float beta, float n, Tensor& ma, const Tensor& values, float scale) {
  Arr avg(ma.v, static_cast<Eigen::Index>(ma.d.size()));
  CArr w(values.v, static_cast<Eigen::Index>(ma.d.size()));
  if (mode == MovingAverage::Cumulative)
    avg = (avg * n + w * scale) / (n + 1);
  else
    avg = avg * beta + w * ((1 - beta) * scale);
}
}  // namespace

void Trainer::update_moving_average() {
  // A parameter added since the last step starts from an average of 0 (as DyNet).
  allocate_shadow_parameters(*model, ma_aux_allocated, ma_p);
  allocate_shadow_lookup_parameters(*model, ma_aux_allocated_lookup, ma_lp);
  ma_aux_allocated = static_cast<unsigned>(ma_p.size());
  ma_aux_allocated_lookup = static_cast<unsigned>(ma_lp.size());
  const ParameterCollectionStorage& s = model->get_storage();
  const float n = static_cast<float>(ma_updates);
  // Under each parameter's mutex: other trainers may be updating it (asynchronous training).
  for (size_t i = 0; i < s.params.size(); ++i) {
    std::lock_guard<std::mutex> lock(s.params[i]->grad_mutex);
    average_in(ma_mode, ema_beta, n, ma_p[i].h, s.params[i]->values, s.params[i]->current_weight_decay());
  }
  for (size_t i = 0; i < s.lookup_params.size(); ++i) {
    std::lock_guard<std::mutex> lock(s.lookup_params[i]->grad_mutex);
    average_in(ma_mode, ema_beta, n, ma_lp[i].all_h, s.lookup_params[i]->all_values,
               s.lookup_params[i]->current_weight_decay());
  }
  ++ma_updates;
}

void Trainer::swap_params_to_moving_average(bool save_weights, bool bias_correction) {
  if (ma_mode == MovingAverage::None)
    throw std::runtime_error(
        "Trainer::swap_params_to_moving_average: no moving average is kept (call exponential_moving_average or "
        "cumulative_moving_average before training)");
  if (ma_updates == 0)
    throw std::runtime_error("Trainer::swap_params_to_moving_average: the moving average has no weights yet (no update)");
  if (ma_params_swapped) return;
  ExclusiveParameters lock(detail::parameter_lock());
  const float correction = (ma_mode == MovingAverage::Exponential && bias_correction)
                               ? 1.f / (1.f - std::pow(ema_beta, static_cast<float>(ma_updates)))
                               : 1.f;
  const ParameterCollectionStorage& s = model->get_storage();
  // values ← ma / scale, the weights first copied into `saved` when there is one.
  auto swap_in = [&](const Tensor& ma, Tensor* saved, Tensor& values, float scale) {
    const Eigen::Index n = static_cast<Eigen::Index>(ma.d.size());
    if (saved) Arr(saved->v, n) = CArr(values.v, n);
    Arr(values.v, n) = CArr(ma.v, n) * (correction / scale);
  };
  ma_saved_p.clear();
  ma_saved_lp.clear();
  for (size_t i = 0; i < ma_p.size(); ++i) {
    if (save_weights) ma_saved_p.emplace_back(*s.params[i]);
    swap_in(ma_p[i].h, save_weights ? &ma_saved_p[i].h : nullptr, s.params[i]->values,
            s.params[i]->current_weight_decay());
  }
  for (size_t i = 0; i < ma_lp.size(); ++i) {
    if (save_weights) ma_saved_lp.emplace_back(*s.lookup_params[i]);
    swap_in(ma_lp[i].all_h, save_weights ? &ma_saved_lp[i].all_h : nullptr, s.lookup_params[i]->all_values,
            s.lookup_params[i]->current_weight_decay());
  }
  ma_params_swapped = true;
  ma_params_saved = save_weights;
}

void Trainer::swap_params_to_weights() {
  if (!ma_params_swapped) return;
  ExclusiveParameters lock(detail::parameter_lock());
  restore_weights();
}

void Trainer::restore_weights() {
  if (!ma_params_saved)
    throw std::runtime_error(
        "Trainer::swap_params_to_weights: the weights were not saved (swap_params_to_moving_average was called "
        "with save_weights=false)");
  const ParameterCollectionStorage& s = model->get_storage();
  for (size_t i = 0; i < ma_saved_p.size(); ++i) TensorTools::copy_elements(s.params[i]->values, ma_saved_p[i].h);
  for (size_t i = 0; i < ma_saved_lp.size(); ++i)
    TensorTools::copy_elements(s.lookup_params[i]->all_values, ma_saved_lp[i].all_h);
  ma_saved_p.clear();
  ma_saved_lp.clear();
  ma_params_swapped = false;
  ma_params_saved = false;
}

// Training continues from the weights: put them back when saved; without saved weights the
// averages become the weights. (DyNet stepped the averaged values and then, on an averaging
// update, overwrote that step with the saved weights.)
void Trainer::unswap_before_update() {
  if (!ma_params_swapped) return;
  if (ma_params_saved) {
    restore_weights();
  } else {
    ma_params_swapped = false;
  }
}

// ---- misc ----

void Trainer::update(real scale) {
  if (!warned_update_scale_) {
    warned_update_scale_ = true;
    std::cerr << "[dynet] Trainer::update(scale) is deprecated (DyNet 2.0); "
                 "scale the loss instead (cg.backward(loss * scale)) and call update().\n";
  }
  if (scale != 1.f) {
    ExclusiveParameters lock(detail::parameter_lock());
    const ParameterCollectionStorage& s = model->get_storage();
    for (const auto& p : s.params)
      if (p->nonzero_grad) p->scale_gradient(scale);
    for (const auto& p : s.lookup_params)
      if (p->nonzero_grad) p->scale_gradient(scale);  // the rows without gradients are zero and stay so
  }
  update();
}

void Trainer::update_epoch(real) {
  if (warned_update_epoch_) return;
  warned_update_epoch_ = true;
  std::cerr << "[dynet] Trainer::update_epoch is deprecated and does nothing; "
               "change trainer.learning_rate directly to decay the learning rate.\n";
}

void Trainer::restart() {
  for (const ShadowState& st : shadow_state()) {
    for (ShadowParameters& sp : *st.params) TensorTools::zero(sp.h);
    for (ShadowLookupParameters& sp : *st.lookup_params) TensorTools::zero(sp.all_h);
  }
}

void Trainer::restart(real lr) {
  check_learning_rate("Trainer::restart", lr);
  learning_rate = lr;
  restart();
}

void Trainer::status() {
  settle_gradient_check();
  std::cerr << "[lr=" << learning_rate << " clips=" << clips_since_status << " updates=" << updates_since_status
            << "] ";
  clips_since_status = 0;
  updates_since_status = 0;
}

// ---- save / populate ----

void Trainer::save(std::ostream& os) {
  if (ma_params_swapped && ma_params_saved)
    throw std::runtime_error(
        "Trainer::save: the parameters are swapped to their moving average; call swap_params_to_weights() first");
  ExclusiveParameters lock(detail::parameter_lock());  // no update meanwhile (allocate_state may add state)
  settle_gradient_check();  // (the counters)
  allocate_state();  // parameters never updated yet are saved with their (zero) state
  const ParameterCollectionStorage& s = model->get_storage();
  const size_t np = s.params.size(), nlp = s.lookup_params.size();
  TextFormat format(os);
  os << "#Trainer# " << np << ' ' << nlp << '\n';
  // Swapped without saved weights counts as not swapped: the averages are the weights now.
  os << learning_rate << ' ' << clipping_enabled << ' ' << clip_threshold << ' ' << updates << ' ' << ema_beta << ' '
     << ma_mode << ' ' << false << ' ' << false << ' ' << ma_update_freq << ' ' << ma_updates << '\n';
  if (ma_mode != MovingAverage::None) {
    os << "[MA:TRUE]\n";
    os << "#MA# " << ma_p.size() << ' ' << ma_lp.size() << '\n';
    for (const auto& ma : ma_p) write_record(os, "#Parameter#", ma.h);
    for (const auto& ma : ma_lp) write_record(os, "#LookupParameter#", ma.all_h);
  } else {
    os << "[MA:FALSE]\n";
  }
  const char* section = section_name();
  if (!section) return;
  os << section << ' ' << np << ' ' << nlp << '\n';
  const std::vector<ShadowState> state = shadow_state();
  for (const ShadowState& st : state)
    for (size_t i = 0; i < np; ++i) write_record(os, "#Parameter#", (*st.params)[i].h);
  for (const ShadowState& st : state)
    for (size_t i = 0; i < nlp; ++i) write_record(os, "#LookupParameter#", (*st.lookup_params)[i].all_h);
  write_settings(os);
}

void Trainer::populate(std::istream& is, real lr) {
  check_learning_rate("Trainer::populate", lr);
  populate(is);
  learning_rate = lr;
}

void Trainer::populate(std::istream& is) {
  ExclusiveParameters lock(detail::parameter_lock());
  settle_gradient_check();  // (before the counters are replaced)
  const ParameterCollectionStorage& s = model->get_storage();
  // Everything is read into these first, so that a bad input changes nothing.
  read_header(is, "#Trainer#", s);  // the counts only need to fit: the sections carry their own
  Tokens t(next_line(is, "the trainer's counters"), "the trainer's counters");
  const float lr = t.real_number("learning_rate");
  const bool clipping = t.flag("clipping_enabled");
  const float threshold = t.real_number("clip_threshold");
  const double n_updates = t.number("updates");
  const float beta = t.real_number("ema_beta");
  MovingAverage mode;
  {
    const std::string w = t.word("the moving average mode");
    std::istringstream ws(w);
    if (!(ws >> mode)) format_error("unknown moving average mode '" + w + "' (None, Cumulative or Exponential)");
  }
  const bool swapped = t.flag("ma_params_swapped");
  (void)t.flag("ma_params_saved");
  const unsigned long freq = t.count("ma_update_freq");
  const unsigned long n_ma = t.count("ma_updates");
  t.end();
  check_learning_rate("Trainer::populate", lr);
  if (!(n_updates >= 0)) format_error("negative update count " + str(n_updates));
  if (freq == 0) format_error("ma_update_freq must be > 0");
  if (mode == MovingAverage::Exponential && !(beta >= 0 && beta < 1))
    format_error("ema_beta must be in [0, 1), got " + str(beta));

  std::vector<std::vector<float>> ma_params, ma_lookup;
  const std::string ma_status = next_line(is, "the moving average status");
  if (ma_status == "[MA:TRUE]") {
    if (mode == MovingAverage::None) format_error("moving average values saved without a moving average mode");
    const auto [ma_np, ma_nlp] = read_header(is, "#MA#", s);
    ma_params.resize(ma_np);
    ma_lookup.resize(ma_nlp);
    for (size_t i = 0; i < ma_np; ++i) {
      ma_params[i].resize(s.params[i]->dim.size());
      read_record(is, "#Parameter#", ma_params[i].size(),
                  "the moving average of " + param_what("parameter", i, s.params[i]->name), ma_params[i].data());
    }
    for (size_t i = 0; i < ma_nlp; ++i) {
      ma_lookup[i].resize(s.lookup_params[i]->all_dim.size());
      read_record(is, "#LookupParameter#", ma_lookup[i].size(),
                  "the moving average of " + param_what("lookup parameter", i, s.lookup_params[i]->name),
                  ma_lookup[i].data());
    }
  } else if (ma_status == "[MA:FALSE]") {
    if (mode != MovingAverage::None || swapped)
      format_error(
          "the trainer was saved while its parameters were swapped to their moving average, so the file lacks the "
          "averages");
  } else {
    format_error("expected [MA:TRUE] or [MA:FALSE], found '" + ma_status + "'");
  }

  // Shadow arrays as read: [array][parameter] values.
  const std::vector<ShadowState> state = shadow_state();
  std::vector<std::vector<std::vector<float>>> param_shadow, lookup_shadow;
  std::function<void()> apply_settings = [] {};
  if (const char* section = section_name()) {
    std::string header;
    bool present = true;
    if (section_optional()) {
      // Older files (DyNet's) end here; a line of something else saved after us is left unread.
      present = false;
      if (is.peek() == '#') {
        const std::streampos pos = is.tellg();
        std::getline(is, header);
        present = header.compare(0, std::string(section).size(), section) == 0;
        if (!present) {
          if (pos == std::streampos(-1))
            format_error("expected " + std::string(section) + " or the end of the input, found '" + header + "'");
          is.clear();
          is.seekg(pos);
        }
      }
    } else {
      header = next_line(is, std::string("the ") + section + " header");
    }
    if (present) {
      const auto [sec_np, sec_nlp] = parse_header(header, section, s);
      param_shadow.assign(state.size(), std::vector<std::vector<float>>(sec_np));
      lookup_shadow.assign(state.size(), std::vector<std::vector<float>>(sec_nlp));
      for (size_t a = 0; a < state.size(); ++a)
        for (size_t i = 0; i < sec_np; ++i) {
          param_shadow[a][i].resize(s.params[i]->dim.size());
          read_record(is, "#Parameter#", param_shadow[a][i].size(),
                      "shadow array " + std::to_string(a) + " of " + param_what("parameter", i, s.params[i]->name),
                      param_shadow[a][i].data());
        }
      for (size_t a = 0; a < state.size(); ++a)
        for (size_t i = 0; i < sec_nlp; ++i) {
          lookup_shadow[a][i].resize(s.lookup_params[i]->all_dim.size());
          read_record(is, "#LookupParameter#", lookup_shadow[a][i].size(),
                      "shadow array " + std::to_string(a) + " of " +
                          param_what("lookup parameter", i, s.lookup_params[i]->name),
                      lookup_shadow[a][i].data());
        }
      std::istringstream settings(next_line(is, std::string("the ") + section + " settings"));
      apply_settings = parse_settings(settings);
    }
  }

  // Commit.
  allocate_state();
  learning_rate = lr;
  clipping_enabled = clipping;
  clip_threshold = threshold;
  updates = n_updates;
  ema_beta = beta;
  ma_mode = mode;
  ma_update_freq = static_cast<unsigned>(freq);
  ma_updates = static_cast<unsigned>(n_ma);
  ma_params_swapped = ma_params_saved = false;
  ma_saved_p.clear();
  ma_saved_lp.clear();
  ma_p.clear();
  ma_lp.clear();
  ma_aux_allocated = ma_aux_allocated_lookup = 0;
  if (!ma_params.empty() || !ma_lookup.empty()) {
    allocate_shadow_parameters(*model, 0, ma_p);
    allocate_shadow_lookup_parameters(*model, 0, ma_lp);
    ma_p.resize(ma_params.size());
    ma_lp.resize(ma_lookup.size());
    ma_aux_allocated = static_cast<unsigned>(ma_p.size());
    ma_aux_allocated_lookup = static_cast<unsigned>(ma_lp.size());
    for (size_t i = 0; i < ma_p.size(); ++i) TensorTools::set_elements(ma_p[i].h, ma_params[i]);
    for (size_t i = 0; i < ma_lp.size(); ++i) TensorTools::set_elements(ma_lp[i].all_h, ma_lookup[i]);
  }
  // Parameters the file does not cover start with fresh (zero) state.
  if (section_name()) {
    Trainer::restart();
    for (size_t a = 0; a < param_shadow.size(); ++a) {
      for (size_t i = 0; i < param_shadow[a].size(); ++i)
        TensorTools::set_elements((*state[a].params)[i].h, param_shadow[a][i]);
      for (size_t i = 0; i < lookup_shadow[a].size(); ++i)
        TensorTools::set_elements((*state[a].lookup_params)[i].all_h, lookup_shadow[a][i]);
    }
  }
  apply_settings();
}

// ---------------- SimpleSGDTrainer ----------------

SimpleSGDTrainer::SimpleSGDTrainer(ParameterCollection& m, real lr) : Trainer(m, lr) {}

void SimpleSGDTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::SGD, learning_rate, gscale, param_weight_decay}, values)) return;
  arr(values, 0) -= grad_of(values) * (learning_rate * gscale / param_weight_decay);
}

// ---------------- CyclicalSGDTrainer ----------------

CyclicalSGDTrainer::CyclicalSGDTrainer(ParameterCollection& m, float lr_min, float lr_max, float step, float g, float)
    : Trainer(m, lr_min), e_min(lr_min), e_max(lr_max), step_size(step), gamma(g) {
  check_schedule("CyclicalSGDTrainer", lr_max, step, g);
}

void CyclicalSGDTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::SGD, learning_rate, gscale, param_weight_decay}, values)) return;
  arr(values, 0) -= grad_of(values) * (learning_rate * gscale / param_weight_decay);
}

void CyclicalSGDTrainer::end_update() { learning_rate = cyclical_rate(e_min, e_max, step_size, gamma, it++); }

void CyclicalSGDTrainer::write_settings(std::ostream& os) const {
  os << e_min << ' ' << e_max << ' ' << step_size << ' ' << gamma << ' ' << it << '\n';
}
std::function<void()> CyclicalSGDTrainer::parse_settings(std::istream& is) {
  const std::string who = "CyclicalSGDTrainer";
  const float lo = setting(is, who, "learning_rate_min"), hi = setting(is, who, "learning_rate_max");
  const float step = setting(is, who, "step_size"), g = setting(is, who, "gamma");
  const unsigned position = setting_count(is, who, "it");
  settings_end(is, who);
  if (!(step > 0)) format_error("CyclicalSGDTrainer settings: step_size must be > 0, got " + str(step));
  return [=, this] {
    e_min = lo;
    e_max = hi;
    step_size = step;
    gamma = g;
    it = position;
  };
}

// ---------------- MomentumSGDTrainer ----------------

MomentumSGDTrainer::MomentumSGDTrainer(ParameterCollection& m, real lr, real mom) : Trainer(m, lr), momentum(mom) {
  check_non_negative("MomentumSGDTrainer", "mom", mom);
}

void MomentumSGDTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::Momentum, learning_rate, gscale, param_weight_decay, momentum}, values)) return;
  Arr x = arr(values, 0), v = arr(values, 2);
  v = v * momentum - grad_of(values) * (learning_rate * gscale);
  x += v / param_weight_decay;
}

void MomentumSGDTrainer::write_settings(std::ostream& os) const { os << momentum << '\n'; }
std::function<void()> MomentumSGDTrainer::parse_settings(std::istream& is) {
  const float mom = setting(is, "MomentumSGDTrainer", "momentum");
  settings_end(is, "MomentumSGDTrainer");
  return [=, this] { momentum = mom; };
}

// ---------------- AdagradTrainer ----------------

AdagradTrainer::AdagradTrainer(ParameterCollection& m, real lr, real eps) : Trainer(m, lr), epsilon(eps) {
  check_non_negative("AdagradTrainer", "eps", eps);
}

bool AdagradTrainer::flushes_subnormals() const { return epsilon >= kEpsilonInsideRoot; }

void AdagradTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::Adagrad, learning_rate, gscale, param_weight_decay, 0.f, 0.f, epsilon}, values)) return;
  Arr x = arr(values, 0), sum_sq = arr(values, 2);
  const CArr grad = grad_of(values);
  sum_sq += (grad * gscale).square();
  x -= (grad * gscale) / (sum_sq + epsilon).sqrt() * (learning_rate / param_weight_decay);
}

void AdagradTrainer::write_settings(std::ostream& os) const { os << epsilon << '\n'; }
std::function<void()> AdagradTrainer::parse_settings(std::istream& is) {
  const float eps = setting(is, "AdagradTrainer", "epsilon");
  settings_end(is, "AdagradTrainer");
  return [=, this] { epsilon = eps; };
}

// ---------------- AdadeltaTrainer ----------------

AdadeltaTrainer::AdadeltaTrainer(ParameterCollection& m, real eps, real r) : Trainer(m, 1.0), epsilon(eps), rho(r) {
  check_non_negative("AdadeltaTrainer", "eps", eps);
  check_range("AdadeltaTrainer", "rho", r, 0, 1, false);
}

bool AdadeltaTrainer::flushes_subnormals() const { return epsilon >= kEpsilonInsideRoot; }

void AdadeltaTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::Adadelta, learning_rate, gscale, param_weight_decay, rho, 0.f, epsilon}, values)) return;
  Arr x = arr(values, 0), hist_g = arr(values, 2), hist_d = arr(values, 3);
  const CArr grad = grad_of(values);
  const float weight_decay = param_weight_decay;
  for (Eigen::Index k = 0; k < x.size(); ++k) {
    const float gk = grad[k] * gscale;
    hist_g[k] = hist_g[k] * rho + gk * gk * (1.f - rho);
    const float delta = -gk * std::sqrt(hist_d[k] + epsilon) / std::sqrt(hist_g[k] + epsilon);
    hist_d[k] = hist_d[k] * rho + delta * delta * (1.f - rho);
    x[k] += delta / weight_decay;
  }
}

void AdadeltaTrainer::write_settings(std::ostream& os) const { os << epsilon << ' ' << rho << '\n'; }
std::function<void()> AdadeltaTrainer::parse_settings(std::istream& is) {
  const float eps = setting(is, "AdadeltaTrainer", "epsilon"), r = setting(is, "AdadeltaTrainer", "rho");
  settings_end(is, "AdadeltaTrainer");
  return [=, this] {
    epsilon = eps;
    rho = r;
  };
}

// ---------------- RMSPropTrainer ----------------

RMSPropTrainer::RMSPropTrainer(ParameterCollection& m, real lr, real eps, real r)
    : Trainer(m, lr), epsilon(eps), rho(r) {
  check_non_negative("RMSPropTrainer", "eps", eps);
  check_range("RMSPropTrainer", "rho", r, 0, 1, false);
}

bool RMSPropTrainer::flushes_subnormals() const { return epsilon >= kEpsilonInsideRoot; }

void RMSPropTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::RMSProp, learning_rate, gscale, param_weight_decay, rho, 0.f, epsilon}, values)) return;
  Arr x = arr(values, 0), mean_sq = arr(values, 2);
  const CArr grad = grad_of(values);
  mean_sq = mean_sq * rho + (grad * gscale).square() * (1.f - rho);
  x -= (grad * gscale) / (mean_sq + epsilon).sqrt() * (learning_rate / param_weight_decay);
}

void RMSPropTrainer::write_settings(std::ostream& os) const { os << epsilon << ' ' << rho << '\n'; }
std::function<void()> RMSPropTrainer::parse_settings(std::istream& is) {
  const float eps = setting(is, "RMSPropTrainer", "epsilon"), r = setting(is, "RMSPropTrainer", "rho");
  settings_end(is, "RMSPropTrainer");
  return [=, this] {
    epsilon = eps;
    rho = r;
  };
}

// ---------------- AdamTrainer ----------------

AdamTrainer::AdamTrainer(ParameterCollection& m, float lr, float b1, float b2, float eps)
    : Trainer(m, lr), beta_1(b1), beta_2(b2), epsilon(eps) {
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
    throw std::invalid_argument("AdamTrainer: beta_1 and beta_2 must be in [0, 1), got " + str(b1) + " and " +
                                str(b2));
  check_non_negative("AdamTrainer", "eps", eps);
}

void AdamTrainer::begin_update() {
  const double t = updates + 1;
  step_size_ = static_cast<float>(learning_rate * std::sqrt(1.0 - std::pow(double(beta_2), t)) /
                                  (1.0 - std::pow(double(beta_1), t)));
}

bool AdamTrainer::flushes_subnormals() const { return epsilon >= kEpsilonOutsideRoot; }

void AdamTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::Adam, step_size_, gscale, param_weight_decay, beta_1, beta_2, epsilon}, values)) return;
  adam_step(values[0]->v, values[2]->v, values[3]->v, values[1]->v, values[0]->d.size(), beta_1,
            (1.f - beta_1) * gscale, beta_2, (1.f - beta_2) * gscale * gscale, epsilon, step_size_ / param_weight_decay);
}

void AdamTrainer::write_settings(std::ostream& os) const {
  os << beta_1 << ' ' << beta_2 << ' ' << epsilon << '\n';
}
std::function<void()> AdamTrainer::parse_settings(std::istream& is) {
  std::string who = section_name();
  who = who.substr(1, who.size() - 2);  // "#AdamTrainer#" -> "AdamTrainer"
  const float b1 = setting(is, who, "beta_1"), b2 = setting(is, who, "beta_2"), eps = setting(is, who, "epsilon");
  settings_end(is, who);
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
    format_error(who + " settings: beta_1 and beta_2 must be in [0, 1), got " + str(b1) + " and " +
                 str(b2));
  return [=, this] {
    beta_1 = b1;
    beta_2 = b2;
    epsilon = eps;
  };
}

// ---------------- AmsgradTrainer ----------------

AmsgradTrainer::AmsgradTrainer(ParameterCollection& m, float lr, float b1, float b2, float eps)
    : AdamTrainer(m, lr, b1, b2, eps) {}

void AmsgradTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  if (device_update({UpdateRule::Amsgrad, step_size_, gscale, param_weight_decay, beta_1, beta_2, epsilon}, values)) return;
  Arr x = arr(values, 0), mom = arr(values, 2), var = arr(values, 3), var_max = arr(values, 4);
  const CArr grad = grad_of(values);
  mom = mom * beta_1 + grad * ((1.f - beta_1) * gscale);
  var = var * beta_2 + grad.square() * ((1.f - beta_2) * gscale * gscale);
  var_max = var_max.max(var);
  x -= mom / (var_max.sqrt() + epsilon) * (step_size_ / param_weight_decay);
}

// ---------------- EGTrainer ----------------

EGTrainer::EGTrainer(ParameterCollection& m, real lr, real mom, real) : Trainer(m, lr), momentum(mom) {
  check_non_negative("EGTrainer", "mom", mom);
}

void EGTrainer::enableCyclicalLR(float lr_min, float lr_max, float step, float g) {
  check_learning_rate("EGTrainer::enableCyclicalLR", lr_min);
  check_schedule("EGTrainer::enableCyclicalLR", lr_max, step, g);
  isCyclical = true;
  e_min = lr_min;
  e_max = lr_max;
  step_size = step;
  gamma = g;
  it = 0;
}

void EGTrainer::end_update() {
  if (isCyclical) learning_rate = cyclical_rate(e_min, e_max, step_size, gamma, it++);
}

void EGTrainer::update_rule(real gscale, const std::vector<Tensor*>& values) {
  Arr x = arr(values, 0), v = arr(values, 2);
  const CArr grad = grad_of(values);
  const size_t n = values[0]->d.size();
  // log(0) = -inf stays 0 after the step; a negative value (or NaN) or no positive one would give NaN.
  if (!(x >= 0).all() || !(x.maxCoeff() > 0))
    throw std::runtime_error("EGTrainer: exponentiated gradient needs non-negative parameter values with at least "
                             "one positive, but a tensor of " + std::to_string(n) + " values has not");
  v = v * momentum - grad * (learning_rate * gscale);
  x = x.log() + v / param_weight_decay;
  const float max = x.maxCoeff();
  const float log_z = max + static_cast<float>(std::log((x - max).exp().cast<double>().sum()));
  x = (x - log_z).exp();
  meg_value_ = max;
  zeg_value_ = log_z;
}

void EGTrainer::write_settings(std::ostream& os) const {
  os << zeg_value_ << ' ' << meg_value_ << ' ' << momentum << ' ' << e_min << ' ' << e_max << ' ' << step_size << ' '
     << gamma << ' ' << it << ' ' << isCyclical << '\n';
}
std::function<void()> EGTrainer::parse_settings(std::istream& is) {
  const std::string who = "EGTrainer";
  const float log_z = setting(is, who, "zeg"), max = setting(is, who, "meg"), mom = setting(is, who, "momentum");
  const float lo = setting(is, who, "e_min"), hi = setting(is, who, "e_max"), step = setting(is, who, "step_size");
  const float g = setting(is, who, "gamma");
  const unsigned position = setting_count(is, who, "it"), cyclical = setting_count(is, who, "isCyclical");
  settings_end(is, who);
  if (cyclical > 1) format_error("EGTrainer settings: isCyclical must be 0 or 1, got " + std::to_string(cyclical));
  return [=, this] {
    zeg_value_ = log_z;
    meg_value_ = max;
    momentum = mom;
    e_min = lo;
    e_max = hi;
    step_size = step;
    gamma = g;
    it = position;
    isCyclical = cyclical == 1;
  };
}

}  // namespace dynet
