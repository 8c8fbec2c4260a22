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

template <class P>
void rule_kernel(Device* dev, const RuleArgs& r, float* const* t, size_t n, const unsigned* rows, size_t row) {
  float *x = t[0], *g = t[1], *s1 = t[2], *s2 = t[3], *s3 = t[4];
  const RuleArgs a = r;
  P::for_each(dev, n, [=] DYNET_LAMBDA(size_t k) {
    const size_t i = rows ? size_t(rows[k / row]) * row + k % row : k;
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
  });
}
const bool kRegistered = (register_rule_kernel(DYNET_DEVICE_PRIMS::kBackend, rule_kernel<DYNET_DEVICE_PRIMS>), true);

}  // namespace

#ifndef DYNET_CUDA_PASS
namespace {
RuleKernel g_rule_kernels[kNumBackends] = {};  // zero-initialised before any registration runs

thread_local DeviceRowUpdate* t_row_update = nullptr;  // the innermost one alive on this thread
thread_local DeviceClearingUpdate* t_clearing = nullptr;
thread_local DeviceGradientCheck* t_check = nullptr;
}  // namespace

void register_rule_kernel(Backend backend, RuleKernel k) { g_rule_kernels[backend] = k; }

DeviceRowUpdate::DeviceRowUpdate(std::vector<unsigned> rows, size_t row)
    : rows_(std::move(rows)), row_(row), outer_(t_row_update) {
  t_row_update = this;
}
DeviceRowUpdate::~DeviceRowUpdate() { t_row_update = outer_; }
DeviceClearingUpdate::DeviceClearingUpdate() : outer_(t_clearing) { t_clearing = this; }
DeviceClearingUpdate::~DeviceClearingUpdate() { t_clearing = outer_; }
DeviceGradientCheck::DeviceGradientCheck(Device* device, const double* norm_sq, bool clipping, float clip_threshold)
    : device_(device), norm_sq_(norm_sq), clipping_(clipping), clip_threshold_(clip_threshold), outer_(t_check) {
  t_check = this;
}
DeviceGradientCheck::~DeviceGradientCheck() { t_check = outer_; }

bool device_update(const RuleArgs& r, const std::vector<Tensor*>& values) {
  Device* dev = values[0]->device;
  if (detail::host_addressable(dev)) return false;
  const RuleKernel k = g_rule_kernels[dev->backend];
  if (!k) throw std::runtime_error("Trainer: no update kernels for " + dev->name + " in this build");
  float* t[5] = {};
  RuleArgs a = r;
  a.clear_gradient = t_clearing != nullptr;
  if (t_check) {
    if (t_check->device_ != dev)
      throw std::logic_error("Trainer: a parameter on " + dev->name + " in an update checked on " +
                             t_check->device_->name);
    a.norm_sq = t_check->norm_sq_;
    a.clipping = t_check->clipping_;
    a.clip_threshold = t_check->clip_threshold_;
  }
  DeviceRowUpdate* rows = t_row_update;
  if (!rows || rows->done_ || rows->rows_.empty() || values[0]->d.size() != rows->row_) {
    for (size_t i = 0; i < values.size() && i < 5; ++i) t[i] = values[i]->v;
    k(dev, a, t, values[0]->d.size(), nullptr, 0);
  } else {
    // values[i] is row rows[0] of its table: the table starts that many rows before it.
    const size_t first = size_t(rows->rows_[0]) * rows->row_;
    for (size_t i = 0; i < values.size() && i < 5; ++i) t[i] = values[i]->v - first;
    const size_t bytes = rows->rows_.size() * sizeof(unsigned);
    // The row list goes to device memory kept for it (per device, grown when short): allocating it per
    // update cost a cudaMalloc, and freeing it a wait for the device. Held until the kernel is queued.
    struct RowList {
      Device* device;
      unsigned* rows;
      size_t bytes;
    };
    static std::mutex mutex;
    static auto& lists = *new std::vector<RowList>;  // kept as long as the devices: until the process ends
    std::lock_guard<std::mutex> lock(mutex);
    auto it = std::find_if(lists.begin(), lists.end(), [dev](const RowList& l) { return l.device == dev; });
    if (it == lists.end()) it = lists.insert(lists.end(), RowList{dev, nullptr, 0});
    if (it->bytes < bytes) {
      dev->deallocate(it->rows);
      it->rows = nullptr;
      it->bytes = 0;
      it->rows = static_cast<unsigned*>(dev->allocate(2 * bytes));
      it->bytes = 2 * bytes;
    }
    dev->copy_from_host(it->rows, rows->rows_.data(), bytes);
    k(dev, a, t, rows->rows_.size() * rows->row_, it->rows, rows->row_);
    rows->done_ = true;
  }
  if (t_clearing) t_clearing->done_ = true;
  return true;
}
#endif

}  // namespace dynet
