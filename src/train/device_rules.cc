// The built-in trainers' update rules over device memory (the host rules are in trainer.cc, over Eigen
// arrays; these must give the same steps).
#include "train/device_rules.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "kernels/device/prims.h"

namespace dynet {
namespace {

// Element i of one tensor's step: x values, g gradient, s1..s3 the rule's state.
DYNET_HD inline void rule_step(const RuleArgs& a, float* x, float* g, float* s1, float* s2, float* s3, size_t i) {
  float gscale = a.gscale;
  if (a.norm_sq) {  // as Trainer::gradient_scale computes it from the same double
    const double sq = *a.norm_sq;
    if (!(sq <= 1.7976931348623157e308)) {  // NaN or Inf: this update changes nothing
      if (a.clear_gradient) g[i] = 0.f;
      return;
    }
    const float norm = static_cast<float>(::sqrt(sq));
    if (a.clipping && norm > a.clip_threshold) gscale = a.clip_threshold / norm;
  }
  const float gi = g[i] * gscale;
  switch (a.rule) {
    case UpdateRule::SGD:
      x[i] -= g[i] * (a.lr * gscale / a.weight_decay);
      break;
    case UpdateRule::Momentum:
      s1[i] = s1[i] * a.a - g[i] * (a.lr * gscale);
      x[i] += s1[i] / a.weight_decay;
      break;
    case UpdateRule::Adagrad:
      s1[i] += gi * gi;
      x[i] -= gi / fn::sqrt(s1[i] + a.eps) * (a.lr / a.weight_decay);
      break;
    case UpdateRule::Adadelta: {
      s1[i] = s1[i] * a.a + gi * gi * (1.f - a.a);
      const float delta = -gi * fn::sqrt(s2[i] + a.eps) / fn::sqrt(s1[i] + a.eps);
      s2[i] = s2[i] * a.a + delta * delta * (1.f - a.a);
      x[i] += delta / a.weight_decay;
      break;
    }
    case UpdateRule::RMSProp:
      s1[i] = s1[i] * a.a + gi * gi * (1.f - a.a);
      x[i] -= gi / fn::sqrt(s1[i] + a.eps) * (a.lr / a.weight_decay);
      break;
    case UpdateRule::Adam:
    case UpdateRule::Amsgrad: {
      s1[i] = s1[i] * a.a + g[i] * ((1.f - a.a) * gscale);
      s2[i] = s2[i] * a.b + g[i] * g[i] * ((1.f - a.b) * gscale * gscale);
      float v = s2[i];
      if (a.rule == UpdateRule::Amsgrad) v = s3[i] = fn::max(s3[i], v);
      x[i] -= s1[i] / (fn::sqrt(v) + a.eps) * (a.lr / a.weight_decay);
      break;
    }
  }
  if (a.clear_gradient) g[i] = 0.f;
}

template <class P>
void rule_kernel(Device* dev, const RuleArgs& r, float* const* t, size_t n, const unsigned* rows, size_t row) {
  float *x = t[0], *g = t[1], *s1 = t[2], *s2 = t[3], *s3 = t[4];
  const RuleArgs a = r;
  P::for_each(dev, n, [=] DYNET_LAMBDA(size_t k) {
    rule_step(a, x, g, s1, s2, s3, rows ? size_t(rows[k / row]) * row + k % row : k);
  });
}

// lists: the count segments' tensors (kRuleTensors · count pointers, tensor by tensor), then where each segment
// starts among all the total values (count + 1 offsets).
template <class P>
void rule_segments_kernel(Device* dev, const RuleArgs& r, const uintptr_t* lists, size_t count, size_t total) {
  const RuleArgs a = r;
  P::for_each(dev, total, [=] DYNET_LAMBDA(size_t i) {
    const uintptr_t* start = lists + kRuleTensors * count;
    const size_t k = dev::segment_of(start, 0, count, i);
    auto t = [&](unsigned q) { return reinterpret_cast<float*>(lists[q * count + k]); };
    rule_step(a, t(0), t(1), t(2), t(3), t(4), i - start[k]);
  });
}
const bool kRegistered = (register_rule_kernel(DYNET_DEVICE_PRIMS::kBackend, rule_kernel<DYNET_DEVICE_PRIMS>,
                                               rule_segments_kernel<DYNET_DEVICE_PRIMS>),
                          true);

}  // namespace

#ifndef DYNET_CUDA_PASS
namespace {
RuleKernel g_rule_kernels[kNumBackends] = {};  // zero-initialised before any registration runs
RuleSegmentsKernel g_segments_kernels[kNumBackends] = {};


// Copies `bytes` from the host to device memory kept for lists of this kind (per device and kind, grown when
// short: allocating it per update cost a cudaMalloc, and freeing it a wait for the device), unless it holds
// them already (a trainer's segments are the same every update), then launch(it). The next copy there follows
// that launch on the device's stream.
enum class ListKind { kRows, kSegments };
template <class Launch>
void with_list_on(Device* dev, ListKind kind, const void* host, size_t bytes, Launch launch) {
  struct ListMemory {
    Device* device;
    ListKind kind;
    void* p = nullptr;
    size_t capacity = 0;
    std::vector<unsigned char> held;  // what p holds
  };
  static std::mutex mutex;
  static auto& lists = *new std::vector<ListMemory>;  // kept as long as the devices: until the process ends
  std::lock_guard<std::mutex> lock(mutex);
  auto it = std::find_if(lists.begin(), lists.end(),
                         [&](const ListMemory& l) { return l.device == dev && l.kind == kind; });
  if (it == lists.end()) it = lists.insert(lists.end(), ListMemory{dev, kind, nullptr, 0, {}});
  const auto* bytes_at = static_cast<const unsigned char*>(host);
  if (!std::equal(bytes_at, bytes_at + bytes, it->held.begin(), it->held.end())) {
    if (it->capacity < bytes) {
      it->held.clear();
      dev->deallocate(it->p);
      it->p = nullptr;
      it->capacity = 0;
      it->p = dev->allocate(2 * bytes);
      it->capacity = 2 * bytes;
    }
    dev->copy_from_host(it->p, host, bytes);
    it->held.assign(bytes_at, bytes_at + bytes);
  }
  launch(it->p);
}

}  // namespace

void register_rule_kernel(Backend backend, RuleKernel k, RuleSegmentsKernel segments) {
  g_rule_kernels[backend] = k;
  g_segments_kernels[backend] = segments;
}

DeviceUpdateBatch::~DeviceUpdateBatch() {
  try {
    flush();
  } catch (const std::exception&) {  // (unwinding already: the device reports its error again at its next use)
  }
}

void DeviceUpdateBatch::check_norm(Device* device, const double* norm_sq, bool clipping, float clip_threshold) {
  checked_ = device;
  norm_sq_ = norm_sq;
  clipping_ = clipping;
  clip_threshold_ = clip_threshold;
}

void DeviceUpdateBatch::flush() {
  const std::vector<Queued> queued = std::move(queued_);
  queued_.clear();
  std::vector<bool> taken(queued.size());
  std::vector<size_t> group;
  thread_local std::vector<uintptr_t> lists;
  for (size_t i = 0; i < queued.size(); ++i) {
    if (taken[i]) continue;
    const Queued& q = queued[i];
    group.clear();
    for (size_t j = i; j < queued.size(); ++j)
      if (!taken[j] && queued[j].device == q.device && queued[j].args == q.args) {
        taken[j] = true;
        group.push_back(j);
      }
    if (group.size() == 1) {
      g_rule_kernels[q.device->backend](q.device, q.args, q.t, q.n, nullptr, 0);
      continue;
    }
    const size_t count = group.size();
    lists.assign(kRuleTensors * count + count + 1, 0);
    size_t total = 0;
    for (size_t k = 0; k < count; ++k) {
      const Queued& m = queued[group[k]];
      for (unsigned t = 0; t < kRuleTensors; ++t) lists[t * count + k] = reinterpret_cast<uintptr_t>(m.t[t]);
      lists[kRuleTensors * count + k] = total;
      total += m.n;
    }
    lists[kRuleTensors * count + count] = total;
    with_list_on(q.device, ListKind::kSegments, lists.data(), lists.size() * sizeof(uintptr_t), [&](void* d) {
      g_segments_kernels[q.device->backend](q.device, q.args, static_cast<const uintptr_t*>(d), count, total);
    });
  }
}

bool device_update(const RuleArgs& r, const std::vector<Tensor*>& values) {
  Device* dev = values[0]->device;
  if (detail::host_addressable(dev)) return false;
  const RuleKernel k = g_rule_kernels[dev->backend];
  if (!k) throw std::runtime_error("Trainer: no update kernels for " + dev->name + " in this build");
  float* t[kRuleTensors] = {};
  RuleArgs a = r;
  DeviceClearingUpdate* const clearing = DeviceClearingUpdate::current();
  DeviceUpdateBatch* const batch = DeviceUpdateBatch::current();
  a.clear_gradient = clearing != nullptr;
  if (batch && batch->checked_) {
    if (batch->checked_ != dev)
      throw std::logic_error("Trainer: a parameter on " + dev->name + " in an update checked on " +
                             batch->checked_->name);
    a.norm_sq = batch->norm_sq_;
    a.clipping = batch->clipping_;
    a.clip_threshold = batch->clip_threshold_;
  }
  DeviceRowUpdate* rows = DeviceRowUpdate::current();
  if (!rows || rows->done_ || rows->rows_.empty() || values[0]->d.size() != rows->row_) {
    for (size_t i = 0; i < values.size() && i < kRuleTensors; ++i) t[i] = values[i]->v;
    if (batch)
      batch->queued_.push_back({dev, a, {t[0], t[1], t[2], t[3], t[4]}, values[0]->d.size()});
    else
      k(dev, a, t, values[0]->d.size(), nullptr, 0);
  } else {
    // values[i] is row rows[0] of its table: the table starts that many rows before it.
    const size_t first = size_t(rows->rows_[0]) * rows->row_;
    for (size_t i = 0; i < values.size() && i < kRuleTensors; ++i) t[i] = values[i]->v - first;
    with_list_on(dev, ListKind::kRows, rows->rows_.data(), rows->rows_.size() * sizeof(unsigned), [&](void* d) {
      k(dev, a, t, rows->rows_.size() * rows->row_, static_cast<const unsigned*>(d), rows->row_);
    });
    rows->done_ = true;
  }
  if (clearing) clearing->done_ = true;
  return true;
}
#endif

}  // namespace dynet
